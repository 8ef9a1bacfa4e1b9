"""The cost model: what a batch of answers costs, checked before anything is spent.

MTurk charges the requester the worker's reward plus a commission on it: ``rate`` (20%) for HITs
with fewer than 10 assignments, ``rate_10_or_more`` (40%) for HITs with 10 or more, and at least
``minimum`` ($0.01) per assignment. The preference-judgments paper (§4.1) paid $0.02 per answer plus
half a cent of fee (the 2010 terms); set the fee fields to reproduce other terms. The simulated and
web crowds report what the same answers would cost on MTurk, so a campaign can be planned before
paying.

Money already committed is priced at what each HIT was published at (its reward and fee terms
are stored with it, :data:`PRICE_COLUMNS`), never at today's settings: lowering the reward
between iterations must not make the past look cheaper.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import lazy_loader

from crowdprefs.campaign.settings import check_values
from crowdprefs.errors import BudgetError
from crowdprefs.moved import moved_names

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

np = lazy_loader.load("numpy")  # imported on first use

PRICE_COLUMNS = ("reward", "fee_rate", "fee_rate_10_or_more", "fee_minimum")
"""A HIT's price as stored when it was published: the reward and the :class:`FeeModel` terms."""


def assignment_price(reward, rate, rate_10_or_more, minimum, assignments_per_hit) -> np.ndarray:
    """Reward plus commission of one assignment: ``reward + max(minimum, reward × r)`` with
    ``r`` the rate of the HIT's size, and no commission on an unpaid assignment (a volunteer
    web campaign at reward 0 costs nothing). Vectorised over HITs and over prices."""
    sizes = np.asarray(assignments_per_hit)
    applied = np.where(sizes >= 10, rate_10_or_more, rate)
    reward = np.asarray(reward)
    return reward + np.where(reward > 0, np.maximum(minimum, reward * applied), 0.0)


@dataclass(frozen=True)
class FeeModel:
    """MTurk's commission: ``max(minimum, reward × rate)`` per assignment."""

    rate: float = 0.20
    rate_10_or_more: float = 0.40
    minimum: float = 0.01

    def __post_init__(self) -> None:
        check_values("fees", self)

    def per_assignment(self, reward: float, assignments_per_hit) -> np.ndarray:
        """Reward plus commission of one assignment, for HITs of the given sizes (vectorised)."""
        return assignment_price(
            reward, self.rate, self.rate_10_or_more, self.minimum, assignments_per_hit
        )


def batch_cost(reward: float, assignments_per_hit, fees: FeeModel = FeeModel()) -> float:
    """Total cost of HITs with the given numbers of assignments, rounded to cents."""
    sizes = np.asarray(assignments_per_hit)
    return round(float(np.sum(fees.per_assignment(reward, sizes) * sizes)), 2)


def hit_costs(
    prices: Mapping[str, ArrayLike], assignments_per_hit, reward: float, fees: FeeModel
) -> np.ndarray:
    """What HITs of the given sizes cost at the prices they were published at.

    ``prices`` has the :data:`PRICE_COLUMNS` (a DataFrame or a mapping of columns), one value
    per HIT; a missing price (a HIT published before prices were stored) is taken as today's
    ``reward`` and ``fees``.
    """
    values = (reward, fees.rate, fees.rate_10_or_more, fees.minimum)
    today = dict(zip(PRICE_COLUMNS, values, strict=True))
    columns = {c: np.asarray(prices[c], dtype=float) for c in PRICE_COLUMNS}
    price = {c: np.where(np.isnan(v), today[c], v) for c, v in columns.items()}
    sizes = np.asarray(assignments_per_hit, dtype=float)
    return sizes * assignment_price(
        price["reward"],
        price["fee_rate"],
        price["fee_rate_10_or_more"],
        price["fee_minimum"],
        sizes,
    )


def check_budget(cost: float, committed: float, budget: float | None) -> None:
    """Raise :class:`BudgetError` when ``cost`` on top of ``committed`` crosses ``budget``."""
    if budget is not None and cost > 0 and committed > budget + 1e-9:
        raise BudgetError(
            f"the budget of ${budget:.2f} is below the ${committed:.2f} already committed: "
            f"nothing more can be spent (raise [crowd] budget in crowdprefs.toml)"
        )
    if budget is not None and committed + cost > budget + 1e-9:
        raise BudgetError(
            f"this batch costs ${cost:.2f}; with ${committed:.2f} already committed it would cross "
            f"the budget of ${budget:.2f} (raise [crowd] budget in crowdprefs.toml)"
        )


BUDGET_KEY = "budget"
"""The state's ``meta`` key remembering the budget the project last spent under."""


MOVED = dict.fromkeys(
    ("project_budget", "remembered_budget", "remember_budget", "check_spending"),
    "crowdprefs.campaign.project_state",
)
"""Functions that take a project, moved to :mod:`crowdprefs.campaign.project_state` (a value
module imports no project): name → its module."""
__getattr__ = moved_names(__name__, MOVED)
