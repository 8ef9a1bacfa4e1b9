"""Do the lists survive the crowd's noise? The crowd resampled, the sort replayed.

A campaign's lists come from one crowd. Another crowd drawn from the same population would have
answered otherwise; the bootstrap over workers (Efron & Tibshirani, *An introduction to the
bootstrap*, 1993, ch. 6; resampling the raters with all their ratings, as for inter-rater
statistics) shows how much. Resample *r* draws the campaign's W workers with replacement (a
multinomial count m_rw per worker, Σ_w m_rw = W, from its own stream (seed, r)), so a pair's
counts become

    more_r(x, y) = Σ_w m_rw · more_w(x, y)    (the same for equal and less),

one sparse product for every pair at once. Each pair gets its verdict under the campaign's rule
(a pair left without answers has none), and each query's list is the modified QuickSort's pure
replay of those verdicts from the campaign's initial order
(:func:`crowdprefs.campaign.sorting.replay`). Where a changed verdict sends the sort to a pair
the crowd was never asked, the segment stays open and counts as one group: a resample cannot
separate what nobody compared. Identical verdict vectors give identical lists, so each distinct
one is replayed once.

:func:`resample_groups` gives every resample's group of every document; :func:`stability`
summarises per query how often each published **group boundary** reappears (a boundary
reappears when the documents before it are exactly those before some boundary of the resampled
list: max g_r(before) < min g_r(after)), how often the whole list and the top group come back,
and the **expected ADR** of a resampled list against the published one (the
preference-judgments paper §5.4, ties broken at random as
:func:`crowdprefs.quality.planning.list_adr` does): 1 when the crowd's noise never moves the
list. ``evaluate --truth-resamples`` scores systems against the same resampled lists
(:mod:`crowdprefs.evaluation.truth_uncertainty`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import pandas as pd
from scipy import sparse

from crowdprefs.campaign.aggregate import AggregationRule, usable, verdicts
from crowdprefs.campaign.sorting import replay
from crowdprefs.errors import InputError
from crowdprefs.parallel import SERIAL, Runner

BOUNDARY_COLUMNS = ["query", "after_group", "before", "reappears"]
LIST_COLUMNS = [
    "query",
    "groups",
    "boundaries_kept",
    "same_list",
    "same_top",
    "expected_adr",
    "adr_low",
    "adr_high",
]
MAX_RESAMPLES = 100_000


@dataclass(frozen=True)
class Resampled:
    """Every resample's lists: ``documents`` (``query, document, group``: the published lists,
    queries in order) and ``groups`` (resamples × documents: each document's group in each
    resample, numbered within its query)."""

    documents: pd.DataFrame
    groups: np.ndarray

    def lists(self, resample: int) -> pd.DataFrame:
        """Resample ``resample``'s lists, ``query, document, group``."""
        return self.documents.assign(group=self.groups[resample])


@dataclass(frozen=True)
class _Shared:
    """What every resample needs: the answer counts per worker, the pairs and the sorts."""

    counts: sparse.csr_matrix  # workers × (pairs · 3): more, equal, less of each pair
    rule: AggregationRule
    seed: int
    queries: tuple[str, ...]
    orders: tuple[tuple[Hashable, ...], ...]
    pair_rows: tuple[np.ndarray, ...]  # per query, its pairs' columns
    keys: tuple[tuple[tuple[Hashable, Hashable], ...], ...]  # per query, its pairs' (x, y)
    positions: tuple[dict[Hashable, int], ...]  # per query, each document's column in groups
    scores: tuple[tuple[float, ...] | None, ...]  # per query, the prior's score of each in order


@lru_cache(maxsize=65536)
def _replayed(
    order: tuple, decided: tuple, scores: tuple[float, ...] | None
) -> tuple[tuple[Hashable, ...], ...]:
    """The groups the sort makes of ``order`` with the verdicts ``decided`` (``((x, y),
    verdict)`` items) and the prior's ``scores`` (aligned with ``order``); open segments count
    as groups."""
    prior = None if scores is None else dict(zip(order, scores, strict=True))
    return tuple(replay(order, dict(decided), prior).groups())


def _resample(shared: _Shared, resample: int) -> np.ndarray:
    """One resample's group of every document (module docstring)."""
    workers = shared.counts.shape[0]
    weights = np.random.default_rng([shared.seed, resample]).multinomial(
        workers, np.full(workers, 1 / workers)
    )
    counts = np.asarray(shared.counts.T @ weights).reshape(-1, 3)
    answered = counts.sum(axis=1) > 0
    verdict = np.full(len(counts), 2, np.int8)  # 2: no answer, no verdict
    verdict[answered] = verdicts(*counts[answered].T, shared.rule)[0]
    groups = np.empty(sum(len(p) for p in shared.positions), np.int64)
    for order, rows, keys, positions, scores in zip(
        shared.orders, shared.pair_rows, shared.keys, shared.positions, shared.scores, strict=True
    ):
        values = verdict[rows].tolist()
        decided = tuple((k, v) for k, v in zip(keys, values, strict=True) if v != 2)
        for number, members in enumerate(_replayed(order, decided, scores), start=1):
            groups[[positions[d] for d in members]] = number
    return groups


def resample_groups(
    answers: pd.DataFrame,
    pairs: pd.DataFrame,
    orders: Mapping[str, Sequence[Hashable]],
    rule: AggregationRule = AggregationRule(),
    *,
    resamples: int = 1000,
    seed: int = 0,
    runner: Runner = SERIAL,
    on_done=None,
    scores: Mapping[str, Mapping[Hashable, float]] | None = None,
) -> Resampled:
    """The lists of ``resamples`` bootstrap crowds (module docstring).

    ``answers``: the campaign's answers frame (``pair_id, worker_id, score, status, choice``);
    ``pairs``: its pairs indexed by ``pair_id`` (``query, x, y, kind, verdict``: the published
    verdicts); ``orders``: each query's initial order (the queries listed); ``scores``: the
    machine prior's, when the campaign had one (its pivots). The published lists are the replay
    of the published verdicts. Identical for any ``runner``.
    """
    if rule.decider.whole_query:
        raise InputError(
            f"resampling the crowd refits the {rule.rule} model once per resample: use the "
            "margin or mann-whitney rule for the resamples"
        )
    if not 1 <= resamples <= MAX_RESAMPLES:
        raise InputError(f"the resamples must lie between 1 and {MAX_RESAMPLES}, got {resamples}")
    sort = pairs[pairs["kind"] == "sort"]
    good = usable(answers)
    good = good[good["pair_id"].isin(sort.index)]
    if good.empty:
        raise InputError("there are no sorting answers to resample")
    workers, _ = pd.factorize(good["worker_id"])
    column = sort.index.get_indexer(good["pair_id"]) * 3 + (1 - good["score"].astype(int))
    counts = sparse.csr_matrix(
        (np.ones(len(good)), (workers, column.to_numpy())),
        shape=(workers.max() + 1, 3 * len(sort)),
    )
    rows, queries, keyed, places, published = [], [], [], [], []
    by_query = {query: group for query, group in sort.reset_index().groupby("query", sort=False)}
    start = 0
    for query, order in orders.items():
        own = by_query.get(query)
        rows.append(np.array([] if own is None else own.index, np.int64))
        keys = () if own is None else tuple(zip(own["x"], own["y"], strict=True))
        keyed.append(keys)
        queries.append(query)
        places.append({d: start + i for i, d in enumerate(order)})
        start += len(order)
        known = {} if own is None else dict(zip(keys, own["verdict"].astype(int), strict=True))
        prior = None if scores is None else scores.get(query)
        for number, members in enumerate(replay(order, known, prior).groups(), start=1):
            published.extend((query, d, number) for d in members)
    documents = pd.DataFrame(published, columns=["query", "document", "group"])
    index = {(q, d): places[i][d] for i, q in enumerate(queries) for d in orders[q]}
    pairs_of = zip(documents["query"], documents["document"], strict=True)
    at = np.array([index[(q, d)] for q, d in pairs_of])
    documents = documents.iloc[np.argsort(at, kind="stable")].reset_index(drop=True)
    aligned = tuple(
        None if scores is None or q not in scores else tuple(scores[q][d] for d in orders[q])
        for q in queries
    )
    shared = _Shared(
        counts, rule, seed, tuple(queries), tuple(tuple(orders[q]) for q in queries),
        tuple(rows), tuple(keyed), tuple(places), aligned,
    )  # fmt: skip
    groups = runner.map(_resample, shared, list(range(resamples)), on_done)
    return Resampled(documents, np.vstack(groups))


ADR_ROWS = 2_000_000
"""Rows of resampled lists scored at once (:func:`stability`): bounds the memory of the ADR."""


def _adr(resampled: Resampled, seed: int) -> np.ndarray:
    """ADR of every resampled list against the published one (resamples × queries, queries
    sorted), scored in chunks of resamples of at most :data:`ADR_ROWS` rows."""
    from crowdprefs.quality.planning import list_adr

    documents, groups = resampled.documents, resampled.groups
    step = max(1, ADR_ROWS // max(len(documents), 1))
    parts = []
    for start in range(0, len(groups), step):
        chunk = groups[start : start + step]
        produced = pd.DataFrame(
            {
                "campaign": np.repeat(np.arange(len(chunk)), len(documents)),
                "query": np.tile(documents["query"].to_numpy(), len(chunk)),
                "document": np.tile(documents["document"].to_numpy(), len(chunk)),
                "group": chunk.ravel(),
            }
        )
        parts.append(list_adr(produced, documents, seed))
    return np.vstack(parts)


def stability(resampled: Resampled, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(lists, boundaries)``: per published list (:data:`LIST_COLUMNS`) and per group
    boundary of it (:data:`BOUNDARY_COLUMNS`), how the resamples reproduce it (module
    docstring); ``adr_low``/``adr_high`` bound the middle 90% of the resamples' ADR."""
    documents, groups = resampled.documents, resampled.groups
    published = documents["group"].to_numpy()
    names = documents["document"].to_numpy(dtype=object)
    adr = _adr(resampled, seed)
    column = {query: i for i, query in enumerate(sorted(documents["query"].unique()))}
    low, high = np.quantile(adr, [0.05, 0.95], axis=0)
    lists, boundaries = [], []
    for query, rows in documents.groupby("query", sort=False).indices.items():
        mine, theirs = published[rows], groups[:, rows]
        top = int(mine.max())
        kept = []
        for after in range(1, top):
            before = mine <= after
            reappears = theirs[:, before].max(axis=1) < theirs[:, ~before].min(axis=1)
            kept.append(float(reappears.mean()))
            boundaries.append((query, after, " ".join(map(str, names[rows][before])), kept[-1]))
        first = mine == 1
        same_top = (theirs[:, first] == 1).all(axis=1) & (theirs[:, ~first] != 1).all(axis=1)
        at = column[query]
        lists.append(
            (
                query,
                top,
                float(np.mean(kept)) if kept else float("nan"),
                float((theirs == mine).all(axis=1).mean()),
                float(same_top.mean()),
                float(adr[:, at].mean()),
                float(low[at]),
                float(high[at]),
            )
        )
    return (
        pd.DataFrame(lists, columns=LIST_COLUMNS),
        pd.DataFrame(boundaries, columns=BOUNDARY_COLUMNS),
    )
