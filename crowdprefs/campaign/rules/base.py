"""What every aggregation rule is: one small interface, and the two kinds of rule behind it.

A :class:`PairRule` decides each pair from its own answer counts (``more``, ``equal``,
``less``: x preferred, "equally similar", y preferred); it gives only its ``verdicts``, and the
fewest deciding answers and the change costs follow from them (the search of
:meth:`PairRule.change_costs`). A :class:`QueryRule` decides the pairs of a query from every
answer of it (one model fitted on them all): it decides from the answers themselves
(``decide``), approximates its fragility from the fit and refuses the count functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Protocol

import lazy_loader

from crowdprefs.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

np = lazy_loader.load("numpy")  # imported on first use

Verdicts = tuple["np.ndarray", "np.ndarray"]
"""Per pair, the verdict (+1 x more similar, 0 equal, −1; int8) and the p-value used (NaN when
the rule has none)."""


class RuleSettings(Protocol):
    """The ``[aggregation]`` settings a rule reads, as
    :class:`~crowdprefs.campaign.aggregate.AggregationRule` holds them (a rule never imports
    the settings that name it)."""

    rule: str
    alpha: float
    sided: str
    method: str
    continuity: bool
    margin: int
    ties: str


class Rule(Protocol):
    """An aggregation rule: how answers become verdicts, under the ``[aggregation]`` settings
    given to each call (an :class:`~crowdprefs.campaign.aggregate.AggregationRule`)."""

    name: str
    """Its value of ``[aggregation] rule`` and ``--rule``."""
    whole_query: bool
    """Whether it decides a pair from every answer of its query (not from its own answers
    alone): the adaptive, fragility and prior rules, which judge each pair on its own answers,
    refuse such a rule."""
    keys: tuple[str, ...]
    """The ``[aggregation]`` keys it reads (its settings section)."""

    def title(self, settings: RuleSettings) -> str:
        """Its name and level in words, e.g. ``Mann-Whitney 0.05`` or ``margin 2``."""
        ...

    def strength(self, settings: RuleSettings) -> str:
        """What sets how easily it splits a pair, e.g. ``α = 0.05`` or ``margin 2``."""
        ...

    def verdicts(self, more, equal, less, settings: RuleSettings) -> Verdicts:
        """One verdict per pair from its answer counts."""
        ...

    def fewest_deciding(self, settings: RuleSettings, most: int = 50) -> int | None:
        """The fewest answers per pair that can give a verdict other than equal."""
        ...

    def change_costs(self, more, equal, less, settings: RuleSettings) -> tuple:
        """Per pair and verdict (+1, 0, −1), the fewest answers whose removal, resp. change,
        gives the pair that verdict."""
        ...


def counts_of(more, equal, less) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The three answer counts as broadcast int64 arrays; refused when one is negative."""
    arrays = [np.asarray(a, dtype=np.int64) for a in (more, equal, less)]
    if any((a < 0).any() for a in arrays):
        raise InputError("answer counts must be non-negative")
    return np.broadcast_arrays(*arrays)


class PairRule:
    """A rule that decides each pair from its own counts. A subclass sets ``name`` and ``keys``
    and gives :meth:`verdicts`; its verdict must move monotonically along a count (a "more"
    answer added, or a "less" answer taken away or turned "more", never takes a win of x away),
    which the exact search of :meth:`change_costs` relies on."""

    name: ClassVar[str]
    keys: ClassVar[tuple[str, ...]]
    whole_query: ClassVar[bool] = False

    def title(self, settings: RuleSettings) -> str:
        """``<name> <α>`` unless a subclass says otherwise."""
        return f"{self.name} {settings.alpha:g}"

    def strength(self, settings: RuleSettings) -> str:
        """``α = <alpha>`` unless a subclass says otherwise."""
        return f"α = {settings.alpha:g}"

    def verdicts(self, more, equal, less, settings: RuleSettings) -> Verdicts:
        """One verdict per pair from its counts (:data:`Verdicts`)."""
        raise NotImplementedError

    def fewest_deciding(self, settings: RuleSettings, most: int = 50) -> int | None:
        """The fewest answers, all preferring one side, with which a pair gets a verdict other
        than equal; ``None`` when not even ``most`` can."""
        for answers in range(1, most + 1):  # the exact test's table grows with the answers
            verdict, _ = self.verdicts([answers], [0], [0], settings)
            if verdict[0] != 0:
                return answers
        return None

    def change_costs(self, more, equal, less, settings: RuleSettings) -> tuple:
        """:func:`crowdprefs.campaign.aggregate.change_costs` (its docstring: a binary search
        per number of "equal" answers, exact for a monotone rule)."""
        counts = np.column_stack(counts_of(more, equal, less)).reshape(-1, 3)
        if not len(counts):
            return np.zeros((0, 3), np.int64), np.zeros((0, 3), np.int64)
        unique, inverse = np.unique(counts, axis=0, return_inverse=True)
        if (unique.sum(axis=1) == 0).any():
            raise InputError("every pair needs at least one answer to be aggregated")

        def decide(more, equal, less):
            return self.verdicts(more, equal, less, settings)

        own = 1 - decide(*unique.T)[0].astype(np.int64)  # +1, 0, −1 → column 0, 1, 2
        tables = []
        for table in (_removal_costs(unique, decide), _flip_costs(unique, decide)):
            table[np.arange(len(unique)), own] = -1
            tables.append(table[inverse.ravel()])
        return tables[0], tables[1]


class QueryRule:
    """A rule that decides the pairs of a query from every answer of it (one fit on them all).
    A subclass sets ``name`` and ``keys`` and gives :meth:`decide`, :meth:`fragility` and
    :meth:`coded_verdicts`."""

    name: ClassVar[str]
    keys: ClassVar[tuple[str, ...]]
    whole_query: ClassVar[bool] = True

    def title(self, settings: RuleSettings) -> str:
        """``<name> <α>`` unless a subclass says otherwise."""
        return f"{self.name} {settings.alpha:g}"

    def strength(self, settings: RuleSettings) -> str:
        """``α = <alpha>``."""
        return f"α = {settings.alpha:g}"

    def verdicts(self, more, equal, less, settings: RuleSettings) -> Verdicts:
        """Refused: the rule needs the answers themselves (:meth:`decide`)."""
        raise InputError(
            f"the {self.name} rule decides a pair from every answer of its query, "
            "not from the pair's own counts"
        )

    def fewest_deciding(self, settings: RuleSettings, most: int = 50) -> int | None:
        """1: the rule decides from every answer of the query."""
        return 1

    def change_costs(self, more, equal, less, settings: RuleSettings) -> tuple:
        """Refused: the fragility is approximated from the fit (:meth:`fragility`)."""
        raise InputError(
            f"the {self.name} rule decides a pair from every answer of its query: its "
            "fragility is approximated from the fit"
        )

    def decide(
        self, answers: pd.DataFrame, pairs: pd.DataFrame, decide, settings: RuleSettings
    ) -> Verdicts:
        """The verdicts of the pairs ``decide`` (pair ids) from the shown ``answers``
        (:func:`crowdprefs.campaign.aggregate.fitted_verdicts`)."""
        raise NotImplementedError

    def fragility(
        self, answers: pd.DataFrame, pairs: pd.DataFrame, settings: RuleSettings
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per sorting pair, the approximate fewest removals and changes that change its verdict
        and whether a refit confirmed both
        (:func:`crowdprefs.campaign.aggregate.fitted_fragility`)."""
        raise NotImplementedError

    def coded_verdicts(
        self, first, second, outcome, worker, block, x, y, *, n_items: int, n_workers: int,
        settings: RuleSettings,
    ) -> Verdicts:  # fmt: skip
        """The verdicts of item pairs ``(x, y)`` from answers already coded as items (as
        :func:`crowdprefs.campaign.bradley_terry.fit_bradley_terry` takes them): a simulated
        campaign's."""
        raise NotImplementedError


# --------------------------------------------------------------- the change costs' search


def _decided(rows: np.ndarray, decide) -> np.ndarray:
    """The verdicts of count rows (k × 3), 0 for a row without answers."""
    decided = np.zeros(len(rows), np.int8)
    answered = rows.sum(axis=1) > 0
    if answered.any():
        decided[answered] = decide(*rows[answered].T)[0]
    return decided


def _last(start: np.ndarray, step, stop: np.ndarray, holds, decide) -> np.ndarray:
    """Per line of count rows ``start + k·step`` (k = 0 … ``stop``), the last k whose verdict
    ``holds`` (−1 when none), for a ``holds`` true on a prefix of each line: a binary search
    run in lockstep over every line, about log₂(stop) calls of ``decide``."""
    step = np.asarray(step, np.int64)
    low, high = np.full(len(start), -1, np.int64), stop + 1  # holds at low, not at high
    while True:
        open_ = np.flatnonzero(high - low > 1)
        if not len(open_):
            return low
        middle = (low[open_] + high[open_]) // 2
        true = holds(_decided(start[open_] + middle[:, None] * step, decide))
        low[open_[true]] = middle[true]
        high[open_[~true]] = middle[~true]


def _lines(counts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per count row, ``lengths`` + 1 lines: the row's index (``owner``) and k = 0 … length."""
    owner = np.repeat(np.arange(len(counts)), lengths + 1)
    first = np.cumsum(lengths + 1) - (lengths + 1)
    return owner, np.arange(len(owner)) - first[owner]


def _removal_costs(unique: np.ndarray, decide) -> np.ndarray:
    """The change costs' removals of distinct count rows, each verdict searched for on every
    number b of "equal" answers kept. A verdict +1 keeps every "more" answer and the most
    "less" answers with which x still wins (a "more" answer never takes a win away, a "less"
    answer never gives one); −1 the mirror; "equal" keeps every answer of both sides when that
    is equal, else every answer of the losing side and the most of the winning side that leave
    it equal (the band of "equal" rows widens with the losing side)."""
    owner, b = _lines(unique, unique[:, 1])
    more, less = unique[owner, 0], unique[owner, 2]
    none = np.zeros_like(b)
    kept = np.full((len(unique), 3), -1, np.int64)

    def keep(column: int, rows: np.ndarray, where) -> None:
        where = where & (rows.sum(axis=1) > 0)
        np.maximum.at(kept[:, column], owner[where], rows[where].sum(axis=1))

    wins = np.column_stack([more, b, none])
    c = _last(wins, (0, 0, 1), less, lambda v: v == 1, decide)
    keep(0, wins + np.outer(np.maximum(c, 0), (0, 0, 1)), c >= 0)
    loses = np.column_stack([none, b, less])
    a = _last(loses, (1, 0, 0), more, lambda v: v == -1, decide)
    keep(2, loses + np.outer(np.maximum(a, 0), (1, 0, 0)), a >= 0)
    corner = np.column_stack([more, b, less])
    decided = _decided(corner, decide)
    keep(1, corner, decided == 0)
    for side, start, step, limit in ((1, loses, (1, 0, 0), more), (-1, wins, (0, 0, 1), less)):
        lines = np.flatnonzero(decided == side)
        k = _last(start[lines], step, limit[lines], lambda v, s=side: v != s, decide)
        rows = start[lines] + np.outer(k, step)
        keep_rows = np.zeros(len(owner), bool)
        keep_rows[lines] = _decided(rows, decide) == 0
        full = np.zeros_like(corner)
        full[lines] = rows
        keep(1, full, keep_rows)
    return np.where(kept > 0, unique.sum(axis=1)[:, None] - kept, -1)


def _flip_costs(unique: np.ndarray, decide) -> np.ndarray:
    """The change costs' changes of distinct count rows: for every number b of "equal" answers
    after the change, the rows (a, b, n − b − a) are decided −1, then equal, then +1 as a grows
    (a "less" answer turned "more" only strengthens x's case at a fixed number of answers and
    ties), so two searches find the verdicts' ranges of a and the cheapest a in each is the one
    nearest the pair's own ``more`` (the cost is convex in a)."""
    total = unique.sum(axis=1)
    owner, b = _lines(unique, total)
    rest = total[owner] - b
    start = np.column_stack([np.zeros_like(b), b, rest])
    step = (1, 0, -1)
    up = _last(start, step, rest, lambda v: v != 1, decide) + 1
    down = _last(start, step, rest, lambda v: v == -1, decide)
    best = np.full((len(unique), 3), np.iinfo(np.int64).max)
    more, equal, less = unique[owner].T
    for column, low, high in ((0, up, rest), (1, down + 1, up - 1), (2, 0 * rest, down)):
        a = np.clip(more, low, high)
        cost = np.maximum(a - more, 0) + np.maximum(b - equal, 0) + np.maximum(rest - a - less, 0)
        reached = low <= high
        np.minimum.at(best[:, column], owner[reached], cost[reached])
    return np.where(best == np.iinfo(np.int64).max, -1, best)
