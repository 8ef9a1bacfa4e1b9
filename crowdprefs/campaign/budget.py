"""The cost model: what a batch of answers costs, checked before anything is spent.

MTurk charges the requester the worker's reward plus a commission on it: ``rate`` (20%) for
HITs with fewer than 10 assignments, ``rate_10_or_more`` (40%) for HITs with 10 or more, and at
least ``minimum`` ($0.01) per assignment. Seed 002 (§4.1) paid $0.02 per answer plus half a cent
of fee (the 2010 terms); set the fee fields to reproduce other terms. The simulated and web crowds
report what the same answers would cost on MTurk, so a campaign can be planned before paying.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crowdprefs.errors import BudgetError, InputError


@dataclass(frozen=True)
class FeeModel:
    """MTurk's commission: ``max(minimum, reward × rate)`` per assignment."""

    rate: float = 0.20
    rate_10_or_more: float = 0.40
    minimum: float = 0.01

    def __post_init__(self) -> None:
        if min(self.rate, self.rate_10_or_more, self.minimum) < 0:
            raise InputError("fees must not be negative")

    def per_assignment(self, reward: float, assignments_per_hit) -> np.ndarray:
        """Reward plus commission of one assignment, for HITs of the given sizes (vectorised)."""
        sizes = np.asarray(assignments_per_hit)
        rate = np.where(sizes >= 10, self.rate_10_or_more, self.rate)
        return reward + np.maximum(self.minimum, reward * rate)


def batch_cost(reward: float, assignments_per_hit, fees: FeeModel = FeeModel()) -> float:
    """Total cost of HITs with the given numbers of assignments, rounded to cents."""
    sizes = np.asarray(assignments_per_hit)
    return round(float(np.sum(fees.per_assignment(reward, sizes) * sizes)), 2)


def check_budget(cost: float, committed: float, budget: float | None) -> None:
    """Raise :class:`BudgetError` when ``cost`` on top of ``committed`` crosses ``budget``."""
    if budget is not None and committed + cost > budget + 1e-9:
        raise BudgetError(
            f"this batch costs ${cost:.2f}; with ${committed:.2f} already committed it would cross "
            f"the budget of ${budget:.2f} (raise [crowd] budget in crowdprefs.toml)"
        )
