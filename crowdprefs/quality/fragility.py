"""How many answers would have to change for a verdict, or a list, to change.

A published ground truth is only as firm as its most fragile verdicts. For every pair of a
campaign, :func:`pair_fragility` gives the fewest of its answers whose **removal**, and
separately whose **change** to another choice ("flip"), gives the pair another verdict under the
campaign's rule (:func:`crowdprefs.campaign.aggregate.change_costs`: exact for the margin and
Mann-Whitney rules, which decide a pair from its own counts; for the Bradley–Terry rule the
first-order approximation of :func:`crowdprefs.campaign.bradley_terry.verdict_fragility`, with
an upper bound confirmed by refitting). This is the fragility index of clinical trials (Walsh et
al., J. Clin. Epidemiol. 2014) for three outcomes, and the "how many votes must go" question
asked of pairwise leaderboards by the approximate maximum influence perturbation (Broderick,
Giordano & Meager, 2020).

For every closed list, :func:`list_fragility` gives the fewest answers whose removal (flip)
changes a **group boundary**, and the fewest that change the **top group**: the list is the
modified QuickSort's pure replay of the verdicts (:func:`crowdprefs.campaign.sorting.replay`)
from the campaign's initial order, so a change is tried by replaying the query with one
pair's verdict changed, in order of cost, until the list (the top group) differs or is left
undetermined (the changed sort would need a pair the crowd was never asked). Answers of
different pairs never decide each other's verdicts under the count rules, so the cheapest
single-pair change is the list's fragility: changing several pairs costs the sum of their costs,
and the replay splits a segment on its first changed verdict exactly as that change alone
would (a test compares with brute force over every subset of answers on small campaigns).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from crowdprefs.campaign.aggregate import (
    VERDICTS,
    AggregationRule,
    change_costs,
    cheapest,
    fitted_fragility,
    usable,
)
from crowdprefs.campaign.sorting import replay
from crowdprefs.errors import InputError

PAIR_COLUMNS = ["removals", "flips", "exact", "confirmed"]
"""What :func:`pair_fragility` adds to a pairs table."""

LIST_COLUMNS = [
    "query",
    "groups",
    "removals",
    "flips",
    "top_removals",
    "top_flips",
    "weakest_x",
    "weakest_y",
]
"""One row per closed list (:func:`list_fragility`); a fragility is missing (NA) when no change
of one pair can reach it."""

NONE = -1
"""A cost no change reaches."""


def _nullable(costs: np.ndarray) -> pd.array:
    return pd.array(np.where(costs < 0, pd.NA, costs), dtype="Int64")


@dataclass(frozen=True)
class Costs:
    """Per pair and per verdict of :data:`VERDICTS`, the fewest answers whose ``removal``, and
    whose change (``flip``), gives the pair that verdict (−1: none); ``confirmed`` per pair:
    exact, or for the ``bradley-terry`` rule confirmed by a refit (an upper bound)."""

    removal: np.ndarray
    flip: np.ndarray
    exact: np.ndarray
    confirmed: np.ndarray


def verdict_costs(
    pairs: pd.DataFrame, rule: AggregationRule = AggregationRule(), answers=None
) -> Costs:
    """The :class:`Costs` of every pair of ``pairs`` (``kind, more, equal, less, verdict``).

    Exact for the count rules (:func:`crowdprefs.campaign.aggregate.change_costs`). For the
    ``bradley-terry`` rule, which needs the ``answers``, the sorting pairs' approximate counts
    (:func:`crowdprefs.campaign.aggregate.fitted_fragility`) stand for a move to the next
    verdict (from a side to "equal", from "equal" to either side); the attention checks, which
    the rule decides by the Mann-Whitney test of their own answers, get that test's figures.
    """
    if not rule.decider.whole_query:
        removal, flip = change_costs(pairs["more"], pairs["equal"], pairs["less"], rule)
        every = np.ones(len(pairs), bool)
        return Costs(removal, flip, every, every)
    if answers is None:
        raise InputError(f"the {rule.rule} rule's fragility needs the answers")
    removal, flip = change_costs(
        pairs["more"], pairs["equal"], pairs["less"], AggregationRule(alpha=rule.alpha)
    )
    sort = (pairs["kind"] == "sort").to_numpy()
    removals, flips, confirmed = fitted_fragility(usable(answers), pairs, rule)
    side = pairs["verdict"].to_numpy(np.int64)[sort] != 0
    for table, counts in ((removal, removals), (flip, flips)):
        moves = np.full((int(sort.sum()), 3), NONE, np.int64)
        moves[side, 1] = counts[side]
        moves[~side, 0] = moves[~side, 2] = counts[~side]
        table[sort] = moves
    sure = np.ones(len(pairs), bool)
    sure[sort] = confirmed
    return Costs(removal, flip, ~sort, sure)


def pair_fragility(
    pairs: pd.DataFrame,
    rule: AggregationRule = AggregationRule(),
    answers: pd.DataFrame | None = None,
    costs: Costs | None = None,
) -> pd.DataFrame:
    """``pairs`` (with ``more, equal, less``) with ``removals``, ``flips`` (nullable integers:
    NA when no change can change the verdict), ``exact`` and ``confirmed``
    (:func:`verdict_costs`, computed here when not given). Removing every answer of a pair
    leaves it without a verdict, so ``removals`` is at most its answers."""
    costs = costs if costs is not None else verdict_costs(pairs, rule, answers)
    removal, flip = _with_unknown(costs.removal, costs.flip, pairs)
    table = pairs.copy()
    table["removals"] = _nullable(cheapest(removal))
    table["flips"] = _nullable(cheapest(flip))
    table["exact"], table["confirmed"] = costs.exact, costs.confirmed
    return table


def _with_unknown(
    removal: np.ndarray, flip: np.ndarray, pairs: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray]:
    """The costs with a fourth target, no verdict: removing every answer of the pair (no
    change of choices leaves a pair unanswered)."""
    answers = (pairs["more"] + pairs["equal"] + pairs["less"]).to_numpy(np.int64)
    return (
        np.column_stack([removal, answers]),
        np.column_stack([flip, np.full(len(flip), NONE)]),
    )


def _query_verdicts(
    columns: tuple[np.ndarray, np.ndarray, np.ndarray], rows
) -> tuple[dict[tuple[Hashable, Hashable], int], np.ndarray]:
    """One query's verdicts as the sort reads them (the last row of a pair asked twice) and
    the row of each, from the sorting pairs' ``x, y, verdict`` arrays and the query's ``rows``."""
    rows = np.asarray(rows, np.int64)
    x, y, verdict = (column[rows] for column in columns)
    verdicts, at = {}, {}
    keys = zip(x.tolist(), y.tolist(), strict=True)
    for row, key, value in zip(rows.tolist(), keys, verdict.tolist(), strict=True):
        verdicts[key], at[key] = value, row
    return verdicts, np.array([at[key] for key in verdicts], np.int64)


def sorted_groups(
    order: Sequence[Hashable],
    verdicts: Mapping[tuple[Hashable, Hashable], int],
    scores: Mapping[Hashable, float] | None = None,
) -> tuple[frozenset, ...] | None:
    """The closed list the sort makes of ``order`` with ``verdicts`` (and the machine prior's
    ``scores``), as member sets (group 1 first); ``None`` while a segment waits for a pair
    never decided."""
    state = replay(order, verdicts, scores)
    if not state.closed:
        return None
    return tuple(frozenset(group) for group in state.groups())


def list_fragility(
    pairs: pd.DataFrame,
    orders: Mapping[str, Sequence[Hashable]],
    rule: AggregationRule = AggregationRule(),
    answers: pd.DataFrame | None = None,
    costs: Costs | None = None,
    scores: Mapping[str, Mapping[Hashable, float]] | None = None,
) -> pd.DataFrame:
    """One row per query of ``orders`` whose list is closed (:data:`LIST_COLUMNS`): the fewest
    answers whose removal (``removals``), resp. change (``flips``), changes one of its group
    boundaries, the same for its top group, and the pair whose change is the cheapest
    (module docstring).

    ``pairs``: the campaign's pairs (``query, x, y, kind, more, equal, less, verdict``);
    ``orders``: each query's initial order; ``scores``: the machine prior's, when the campaign
    had one (its pivots); ``costs``: :func:`verdict_costs` of ``pairs``
    (computed here when not given, with the ``answers`` for the ``bradley-terry`` rule, whose
    list figures also ignore that the answers of one pair move the other pairs' scores).
    """
    costs = costs if costs is not None else verdict_costs(pairs, rule, answers)
    keep = (pairs["kind"] == "sort").to_numpy()
    sort = pairs[keep]
    removal, flip = _with_unknown(costs.removal[keep], costs.flip[keep], sort)
    by_query = sort.groupby("query", sort=False).indices
    columns = (
        sort["x"].to_numpy(object),
        sort["y"].to_numpy(object),
        sort["verdict"].to_numpy(np.int64),
    )
    rows = []
    for query, order in orders.items():
        verdicts, at = _query_verdicts(columns, by_query.get(query, ()))
        prior = None if scores is None else scores.get(query)
        published = sorted_groups(order, verdicts, prior)
        if published is None:
            continue
        keys = list(verdicts)
        found = {}
        for name, table in (("removals", removal), ("flips", flip)):
            found[name] = _cheapest_changes(verdicts, keys, table[at], order, published, prior)
        (list_cost, weakest), top_cost = found["removals"][0], found["removals"][1]
        (flip_cost, flip_weakest), top_flip = found["flips"][0], found["flips"][1]
        weakest = weakest if weakest is not None else flip_weakest
        rows.append(
            (
                query,
                len(published),
                list_cost,
                flip_cost,
                top_cost,
                top_flip,
                None if weakest is None else weakest[0],
                None if weakest is None else weakest[1],
            )
        )
    table = pd.DataFrame(rows, columns=LIST_COLUMNS)
    for column in ("removals", "flips", "top_removals", "top_flips"):
        table[column] = _nullable(table[column].fillna(NONE).to_numpy(np.int64))
    return table


def _cheapest_changes(
    verdicts: Mapping[tuple[Hashable, Hashable], int],
    keys: list[tuple[Hashable, Hashable]],
    costs: np.ndarray,
    order: Sequence[Hashable],
    published: tuple[frozenset, ...],
    scores: Mapping[Hashable, float] | None = None,
) -> tuple[tuple[int, tuple | None], int]:
    """``((list cost, its pair), top cost)``: the cheapest single-pair verdict changes (costs:
    pairs × (:data:`VERDICTS`, no verdict)) that change the list, resp. its top group, tried in
    order of cost by replaying the query (:data:`NONE` when none does)."""
    pair, column = np.nonzero(costs >= 0)
    by_cost = np.argsort(costs[pair, column], kind="stable")
    list_found: tuple[int, tuple | None] = (NONE, None)
    for i in by_cost:
        key, cost = keys[pair[i]], int(costs[pair[i], column[i]])
        changed = dict(verdicts)
        if column[i] < len(VERDICTS):
            changed[key] = VERDICTS[column[i]]
        else:  # every answer removed: the pair has no verdict
            del changed[key]
        groups = sorted_groups(order, changed, scores)
        if groups == published:
            continue
        if list_found[0] == NONE:
            list_found = (cost, key)
        if groups is None or groups[0] != published[0]:
            return list_found, cost
    return list_found, NONE


def summary(pairs: pd.DataFrame, lists: pd.DataFrame, most: int = 3) -> dict:
    """How many verdicts (and lists) 1 … ``most`` answers can change, by removal and by flip."""

    def within(column: pd.Series) -> dict[str, int]:
        values = column.dropna().astype(int)
        return {str(k): int((values <= k).sum()) for k in range(1, most + 1)}

    sort = pairs[pairs["kind"] == "sort"] if "kind" in pairs else pairs
    return {
        "pairs": len(sort),
        "pairs_removals_within": within(sort["removals"]),
        "pairs_flips_within": within(sort["flips"]),
        "lists": len(lists),
        "lists_removals_within": within(lists["removals"]),
        "lists_flips_within": within(lists["flips"]),
        "top_groups_flips_within": within(lists["top_flips"]),
    }
