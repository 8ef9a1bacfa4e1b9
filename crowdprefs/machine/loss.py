"""What the machine verdicts may cost the lists: their expected ADR loss, by replaying the
sort with audited flips.

Each machine verdict is replaced, with the audit's probability, by a human verdict it would
differ from (:func:`flip_shares`); the sort is replayed from the same initial order and pivots
(:func:`crowdprefs.campaign.sorting.replay`), pairs it then needs that were never asked taking
the verdict the current lists imply; and the current lists are scored by ADR (the
power-and-stability paper §3.4) against the replayed ones. The loss is the mean drop of that ADR
from the lists scored against themselves (:func:`expected_adr_loss`): how far, in the measure
the lists serve, the machine's part is likely to have moved them from what the humans would
have made.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

import numpy as np
import pandas as pd

from crowdprefs.campaign.sorting import replay


def flip_shares(machine: np.ndarray, human: np.ndarray, share: float) -> np.ndarray:
    """(3, 3) probabilities of the human verdict (columns more, equal, less) given the machine
    verdict (rows, same order): 1 − ``share`` on the diagonal; ``share`` split over the two
    other verdicts in proportion to the audited disagreements (``machine`` → ``human``) plus
    one each (Laplace)."""
    counts = np.ones((3, 3))
    rows, columns = 1 - np.asarray(machine, dtype=int), 1 - np.asarray(human, dtype=int)
    np.add.at(counts, (rows, columns), 1.0)
    np.fill_diagonal(counts, 0.0)
    flips = share * counts / counts.sum(axis=1, keepdims=True)
    np.fill_diagonal(flips, 1.0 - share)
    return flips


def _completed(
    order: Sequence[Hashable],
    verdicts: dict,
    scores: Mapping[Hashable, float] | None,
    group: Mapping[Hashable, int],
) -> list[tuple[Hashable, ...]]:
    """The groups of the sort replayed on ``verdicts``, a pair it needs that was never asked
    taking the verdict the lists' ``group`` implies (+1: x in an earlier group than y)."""
    verdicts = dict(verdicts)
    while True:
        state = replay(order, verdicts, scores)
        if state.closed:
            return state.groups()
        for x, y in state.needed:
            verdicts[x, y] = int(np.sign(group[y] - group[x]))


def expected_adr_loss(
    lists: pd.DataFrame,
    orders: Mapping[str, Sequence[Hashable]],
    verdicts: Mapping[str, dict],
    scores: Mapping[str, Mapping[Hashable, float]] | None,
    machine: pd.DataFrame,
    flips: np.ndarray,
    replicates: int,
    seed: int,
) -> float:
    """Mean over ``replicates`` of ADR(``lists`` against themselves) − ADR(``lists`` against the
    lists replayed with the ``machine`` verdicts (``query, x, y, verdict``) drawn again from
    ``flips`` (:func:`flip_shares`)), averaged over the listed (closed) queries; NaN when no
    query is listed. ``orders``, ``verdicts`` and ``scores``: per query, the initial order,
    every verdict (human and machine) and the prior's scores, as the driver replays them."""
    from crowdprefs.quality.planning import list_adr

    if lists.empty:
        return float("nan")
    machine = machine[machine["query"].isin(set(lists["query"]))]
    if machine.empty:
        return 0.0
    rng = np.random.default_rng([seed, 0xAD71])
    groups = {
        q: dict(zip(g["document"], g["group"], strict=True)) for q, g in lists.groupby("query")
    }
    cumulative = np.cumsum(flips, axis=1)
    row = 1 - machine["verdict"].to_numpy(int)
    base = list_adr(lists, lists, seed).mean()
    losses = []
    for _ in range(replicates):
        drawn = 1 - (rng.random(len(machine))[:, None] >= cumulative[row]).sum(axis=1)
        changed = machine.assign(verdict=drawn)[drawn != machine["verdict"].to_numpy(int)]
        replayed = lists.copy()
        for query, flipped in changed.groupby("query"):
            known = dict(verdicts[query])
            pairs = zip(flipped["x"], flipped["y"], strict=True)
            known.update(zip(pairs, flipped["verdict"].tolist(), strict=True))
            made = _completed(orders[query], known, (scores or {}).get(query), groups[query])
            where = {d: g for g, members in enumerate(made, 1) for d in members}
            rows = replayed["query"] == query
            replayed.loc[rows, "group"] = replayed.loc[rows, "document"].map(where).to_numpy()
        losses.append(base - list_adr(lists, replayed, seed).mean())
    return float(np.mean(losses))
