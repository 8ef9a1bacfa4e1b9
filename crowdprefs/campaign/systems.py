"""Rank the systems before the lists are finished: which open parts of a partly sorted campaign
can still change how two systems compare, how sure their order already is, and what to ask next.

The modified QuickSort (:mod:`crowdprefs.campaign.sorting`) leaves each query as a row of
*segments*; the closed ones are final groups, an open one holds members whose order is still
unknown. Whatever the crowd answers next, the finished list refines today's segments. So:

* **Completion** (:func:`complete`). A finished list is drawn by going on with the same
  QuickSort inside every open segment, each unknown verdict drawn from its posterior: ``more``,
  ``equal``, ``less`` with the shares the campaign's verdicts so far give (a Dirichlet(1, 1, 1)
  posterior mean, symmetric in ``more``/``less``: the pivot is a random member), or with the
  shares a machine prior gives the pair. Known verdicts are kept. Former pivots stay with the
  pivot they were judged equal to, as in the sort.
* **Scores** (:func:`scores`). Each system's ``ADR@k`` (the power-and-stability paper §3.4, eqs.
  5-6), ``AG@k`` (§3.1, eq. 1) or ``nDCG@k`` (§3.2, eqs. 2-3, b = 2) on every drawn list,
  computed from the groups alone (group ``g`` of ``G`` has the gain ``G − g + 1``, as
  :func:`crowdprefs.io.lists_to_levels`).
* **Order of two systems** (:func:`system_pairs`). Over ``M`` drawn lists, ΔM(s, t) = mean over
  queries of score(s) − score(t); the order of (s, t) is the likeliest of ``>``, ``=``, ``<``
  and ``P`` its share of the draws: the probability it holds once the lists are finished. The
  pair is *decided* when Laplace's rule of succession on the ``M`` draws, ``(M·P + 1)/(M + 2)``,
  reaches the confidence (so the draws' own noise cannot decide a pair: 100 draws need 94 of
  them); MTC stops the same way on P(ΔAG < 0) (the MTC-for-AMS paper §3).
* **What matters** (:func:`priorities`). An open segment *j* of query *q* can change the order
  of (s, t) only if s or t retrieves one of its members in its top k (for ADR@k also only when
  fewer than ``k`` candidates precede it: deeper, no allowed set ``A_i`` holds its members) and
  the drawn ΔM_q(s, t) varies. Its priority is MTC's *weight × uncertainty* taken per segment:

      priority(j) = Σ_{(s,t) undecided, j matters} (1 − P_st) · sd(ΔM_q(s, t)) / (Q · sd(ΔM(s, t)))

  the share of the pair's uncertainty its query carries, weighted by how unsure the pair is. A
  segment's pairs are asked together (a segment splits only when every comparison with its
  pivot is known), most informative segment first; a segment of priority 0 is left unsorted.

Everything works on arrays over the candidates of all queries (:class:`Partial`), so a batch
is chosen at once for a whole collection.
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import lazy_loader

from crowdprefs.campaign.sorting import SortState
from crowdprefs.errors import InputError

np = lazy_loader.load("numpy")  # imported on first use
pd = lazy_loader.load("pandas")  # imported on first use: status checks [systems] without it

MEASURES = ("ADR", "AG", "nDCG")
"""The measures a campaign can rank systems by (each with a cutoff ``@k``)."""
_SYNTAX = re.compile(r"^(?P<name>[A-Za-z]+)@(?P<k>\d+)$")
MAX_K = 1000
"""The largest cutoff (a TREC run ranks 1,000 documents)."""


@dataclass(frozen=True)
class RankMeasure:
    """The measure systems are ranked by: ``ADR``, ``AG`` or ``nDCG`` at cutoff ``k``."""

    name: str
    k: int

    def __str__(self) -> str:
        return f"{self.name}@{self.k}"


def parse_rank_measure(text: str) -> RankMeasure:
    """``ADR@5``, ``AG@10``, ``nDCG@5`` (any case) as a :class:`RankMeasure`; else InputError."""
    match = _SYNTAX.match(str(text).strip())
    names = {name.lower(): name for name in MEASURES}
    if not match or match["name"].lower() not in names:
        raise InputError(
            f"measure {text!r}: systems are ranked by ADR@k, AG@k or nDCG@k (e.g. ADR@5)"
        )
    k = int(match["k"])
    if not 1 <= k <= MAX_K:
        raise InputError(f"measure {text!r}: the cutoff must be in [1, {MAX_K}], got {k}")
    return RankMeasure(names[match["name"].lower()], k)


@dataclass(frozen=True)
class Partial:
    """A partly sorted campaign as arrays over its candidates, queries one after another.

    ``query``: each candidate's query code (non-decreasing); ``segment``: its segment, dense ids
    ordered left to right (queries in order); ``todo``: still to be placed; ``rank``: order of
    the todo members within their segment (the pivot is the todo member of highest rank)."""

    query: np.ndarray
    segment: np.ndarray
    todo: np.ndarray
    rank: np.ndarray

    @classmethod
    def start(cls, query: np.ndarray, position: np.ndarray) -> Partial:
        """Nothing sorted: one segment per query, todo in ``position`` order (the initial
        order; its last member the first pivot)."""
        query = np.asarray(query, dtype=np.int64)
        _, segment = np.unique(query, return_inverse=True)
        return cls(query, segment.astype(np.int64), np.ones(len(query), bool), np.asarray(position))

    @property
    def counts(self) -> np.ndarray:
        """Todo members per segment."""
        return np.bincount(self.segment, weights=self.todo, minlength=self.segments)

    @property
    def segments(self) -> int:
        return int(self.segment.max()) + 1 if len(self.segment) else 0

    def open(self) -> np.ndarray:
        """Whether each segment is open (two or more todo members)."""
        return self.counts >= 2

    def starts(self) -> np.ndarray:
        """Per segment, how many candidates of its query precede it."""
        sizes = np.bincount(self.segment, minlength=self.segments)
        before = np.cumsum(sizes) - sizes
        first = np.full(int(self.query.max()) + 1, np.iinfo(np.int64).max)
        np.minimum.at(first, self.query, self.segment)
        query_of = np.zeros(self.segments, dtype=np.int64)
        query_of[self.segment] = self.query
        return before - before[first[query_of]]

    def needed(self, chosen: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The pairs ``(x, pivot)`` (candidate indices) that split the open segments (those
        flagged in ``chosen`` only, when given), segment by segment."""
        is_open = self.open() if chosen is None else self.open() & chosen
        pivot = _pivots(self.segment, self.todo & is_open[self.segment], self.rank, self.segments)
        x = np.flatnonzero(self.todo & is_open[self.segment])
        x = x[pivot[self.segment[x]] != x]
        return x, pivot[self.segment[x]]

    def split(self, x: np.ndarray, pivot: np.ndarray, verdict: np.ndarray) -> Partial:
        """The segments once the verdicts (+1: x more similar, 0, −1) of all pairs of some
        segments (as :meth:`needed` gives them) are known (the preference-judgments paper §3.2)."""
        part = np.ones(len(self.segment), dtype=np.int64)
        part[x] = 1 - np.sign(verdict)
        todo = self.todo.copy()
        todo[np.unique(pivot)] = False
        key = self.segment * 3 + part
        present = np.bincount(key, minlength=3 * self.segments) > 0
        return Partial(self.query, (np.cumsum(present) - 1)[key], todo, self.rank)

    def groups(self) -> np.ndarray:
        """Each candidate's group within its query (1 = most similar), a segment per group."""
        first = np.full(int(self.query.max()) + 1, np.iinfo(np.int64).max)
        np.minimum.at(first, self.query, self.segment)
        return self.segment - first[self.query] + 1


def _pivots(segment: np.ndarray, todo: np.ndarray, rank: np.ndarray, segments: int) -> np.ndarray:
    """Per segment, its todo member of highest rank (−1 when it has none; ranks are distinct
    within a segment)."""
    pivot = np.full(segments, -1, dtype=np.int64)
    members = np.flatnonzero(todo)
    if len(members):
        ranks = rank[members].astype(float)  # same dtype as ``best``: ufunc.at's fast path
        best = np.full(segments, -np.inf)
        np.maximum.at(best, segment[members], ranks)
        top = members[ranks == best[segment[members]]]
        pivot[segment[top]] = top
    return pivot


def from_states(
    states: Mapping[str, SortState], candidates: Mapping[str, Sequence[Hashable]]
) -> Partial:
    """The :class:`Partial` of the driver's sort states; ``candidates`` gives each query's
    candidates in the order of the candidate index (queries in the mapping's order)."""
    index = {}
    offset = 0
    for q, docs in candidates.items():
        index |= {(q, d): offset + i for i, d in enumerate(docs)}
        offset += len(docs)
    query = np.zeros(offset, dtype=np.int64)
    segment = np.zeros(offset, dtype=np.int64)
    todo = np.zeros(offset, dtype=bool)
    rank = np.zeros(offset, dtype=np.int64)
    next_segment = 0
    for code, q in enumerate(candidates):
        for seg in states[q].segments:
            for member in seg.done:
                i = index[q, member]
                query[i], segment[i] = code, next_segment
            for r, member in enumerate(seg.todo):
                i = index[q, member]
                query[i], segment[i], todo[i], rank[i] = code, next_segment, True, r
            next_segment += 1
    return Partial(query, segment, todo, rank)


# --------------------------------------------------------------------------- runs


@dataclass(frozen=True)
class Retrieved:
    """The systems' top ``k`` per query as candidate indices: ``top[s, q, i]`` is the candidate
    at rank ``i + 1`` of system ``s`` on query ``q`` (−1: not a candidate, or past the run's
    end); ``sizes[q]`` is the number of candidates of query ``q``."""

    systems: np.ndarray
    top: np.ndarray
    sizes: np.ndarray


def retrieved(
    runs: pd.DataFrame, queries: Sequence[str], documents: Sequence[str], query: np.ndarray, k: int
) -> Retrieved:
    """Match ``runs`` (``system, query, document, rank``) to the candidates (``documents[i]`` of
    query ``queries[query[i]]``); rows of other queries are ignored, a document listed twice in
    a system's run for a query is an error."""
    missing = {"system", "query", "document", "rank"} - set(runs.columns)
    if missing:
        raise InputError(f"runs lack column(s) {', '.join(sorted(missing))}")
    frame = runs[runs["query"].astype(str).isin(set(map(str, queries)))]
    if frame.empty:
        raise InputError("no run has a result for a query of the campaign")
    frame = frame.assign(
        system=frame["system"].astype(str),
        query=frame["query"].astype(str),
        document=frame["document"].astype(str),
    )
    twice = frame.duplicated(["system", "query", "document"])
    if twice.any():
        row = frame[twice].iloc[0]
        raise InputError(
            f"runs: system {row['system']!r}, query {row['query']!r}: document "
            f"{row['document']!r} is listed twice"
        )
    frame = frame.sort_values(["system", "query", "rank"], kind="stable")
    position = frame.groupby(["system", "query"]).cumcount().to_numpy()
    frame = frame[position < k]
    position = position[position < k]
    systems, s_code = np.unique(frame["system"].to_numpy(), return_inverse=True)
    q_index = {str(q): i for i, q in enumerate(queries)}
    q_code = frame["query"].map(q_index).to_numpy()
    where = pd.Series(
        np.arange(len(documents)),
        index=pd.MultiIndex.from_arrays(
            [np.asarray(queries, dtype=str)[query], np.asarray(documents, dtype=str)]
        ),
    )
    found = pd.MultiIndex.from_arrays([frame["query"], frame["document"]]).map(where)
    candidate = np.nan_to_num(np.asarray(found, dtype=float), nan=-1).astype(np.int64)
    top = np.full((len(systems), len(queries), k), -1, dtype=np.int64)
    top[s_code, q_code, position] = candidate
    sizes = np.bincount(query, minlength=len(queries))
    return Retrieved(systems, top, sizes)


# --------------------------------------------------------------------------- completion


@dataclass(frozen=True)
class VerdictModel:
    """How an unknown verdict of x against y is drawn: an ordered logit on the difference
    ``d = f(x) − f(y)`` of a score per candidate (the systems' consensus, :func:`consensus`, or
    a machine prior), ``P(less) = σ(−c − βd)``, ``P(more) = σ(βd − c)``, ``P(equal)`` the rest.
    With ``β = 0`` (no score) it is the campaign's share of equal verdicts, symmetric in
    more/less. :meth:`fit` estimates ``β, c`` from the verdicts known so far."""

    slope: float = 0.0
    cut: float = math.log(2.0)  # P(equal) = 1/3 at β = 0

    def shares(self, d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``P(less)`` and ``P(less) + P(equal)`` at the differences ``d``."""
        less = _sigmoid(-self.cut - self.slope * d)
        return less, 1 - _sigmoid(self.slope * d - self.cut)

    @classmethod
    def fit(cls, d: np.ndarray, verdict: np.ndarray) -> VerdictModel:
        """Maximum a posteriori ``β, c`` on the verdicts known so far (normal priors of s.d. 10,
        so a few verdicts give a model near the symmetric one)."""
        from scipy import optimize

        d = np.asarray(d, dtype=float)
        v = np.asarray(verdict)
        if not len(v):
            return cls()

        def loss(params: np.ndarray) -> float:
            less, upto = cls(params[0], params[1]).shares(d)
            chance = np.where(v < 0, less, np.where(v == 0, upto - less, 1 - upto))
            return -float(np.log(np.maximum(chance, 1e-300)).sum()) + float(params @ params) / 200

        start = np.array([0.0, np.log(2.0)])
        best = optimize.minimize(
            loss, start, method="L-BFGS-B", bounds=[(None, None), (1e-3, None)]
        )
        return cls(float(best.x[0]), float(best.x[1]))


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1 + np.tanh(np.asarray(x, dtype=float) / 2))


def consensus(runs: Retrieved, candidates: int) -> np.ndarray:
    """Each candidate's share of the systems' reciprocal-rank votes, ``(1/S) Σ_s 1/rank_s``
    (0 when no system retrieves it in its top k): what the systems agree is similar."""
    score = np.zeros(candidates)
    s, _, i = np.nonzero(runs.top >= 0)
    np.add.at(score, runs.top[runs.top >= 0], 1.0 / (i + 1))
    return score / max(len(runs.systems), 1)


def first_pivots(query: np.ndarray, score: np.ndarray, k: int, position: np.ndarray) -> np.ndarray:
    """Each query's first pivot (a candidate index per query code): its candidate at place
    ``min(k, ⌈n/2⌉)`` of ``n`` by descending ``score`` (the systems' :func:`consensus`; ties by
    descending initial ``position``). Hoare's quickselect pivot: one round splits the candidates
    the systems put in their top k from the rest, and a part that starts past the first k places
    is never sorted for ADR@k; never below the median, so a short list still splits evenly."""
    query = np.asarray(query, dtype=np.int64)
    order = np.lexsort((-np.asarray(position, dtype=float), -score, query))
    sizes = np.bincount(query)
    starts = np.cumsum(sizes) - sizes
    place = np.minimum(k, (sizes + 1) // 2)
    return order[starts + np.maximum(place, 1) - 1]


def complete(
    partial: Partial,
    samples: int,
    rng: np.random.Generator,
    model: VerdictModel = VerdictModel(),
    depth: int | None = None,
    known: tuple[np.ndarray, np.ndarray] | None = None,
    score: np.ndarray | None = None,
) -> np.ndarray:
    """``samples`` finished lists drawn from the posterior (module doc): each candidate's group
    per draw, shape (samples, candidates).

    ``depth``: only the first ``depth`` places of a query matter (ADR@k): a segment starting
    after them is left whole. ``known``: sorted keys ``x · n + y`` of known verdicts and their
    values, used instead of a draw. ``score``: each candidate's score for the ``model``.
    """
    n = len(partial.segment)
    known_slots = _key_filter(known[0]) if known is not None and len(known[0]) else None
    is_open = partial.open()
    starts = partial.starts()
    if depth is not None:
        is_open &= starts < depth
    chosen = np.flatnonzero(is_open[partial.segment])
    m = len(chosen)
    sub = np.zeros((samples, n), dtype=np.int64)
    if m:
        local = np.unique(partial.segment[chosen], return_inverse=True)[1]
        count = int(local.max()) + 1
        item = np.tile(chosen, samples)
        seg = (np.repeat(np.arange(samples), m) * count + np.tile(local, samples)).astype(np.int64)
        origin = seg.copy()
        todo = partial.todo[item].copy()
        rank = partial.rank[item]
        base = starts[partial.segment[item]]
        while True:
            segs = int(seg.max()) + 1
            counts = np.bincount(seg[todo], minlength=segs)
            live = todo & (counts[seg] >= 2)
            if not live.any():
                break
            pivot = _pivots(seg, live, rank, segs)
            x = np.flatnonzero(live)
            x = x[pivot[seg[x]] != x]
            y = pivot[seg[x]]
            u = rng.random(len(x))
            d = 0.0 if score is None else score[item[x]] - score[item[y]]
            less, upto = model.shares(np.broadcast_to(d, u.shape))
            verdict = np.where(u < less, -1, np.where(u < upto, 0, 1))
            if known_slots is not None:  # (y, x) known overrides (x, y) known
                _use_known(verdict, item[x] * n + item[y], 1, known, known_slots)
                _use_known(verdict, item[y] * n + item[x], -1, known, known_slots)
            part = np.ones(len(seg), dtype=np.int64)
            part[x] = 1 - verdict
            todo[pivot[pivot >= 0]] = False
            key = seg * 3 + part
            present = np.bincount(key, minlength=3 * segs) > 0
            seg = (np.cumsum(present) - 1)[key]
            if depth is not None:  # quickselect: parts starting past the depth stay whole
                sizes = np.bincount(seg)
                before = np.cumsum(sizes) - sizes
                first = _first_of(seg, origin, count * samples)
                todo &= base + before[seg] - before[first[origin]] < depth
        first = _first_of(seg, origin, count * samples)
        sub[np.repeat(np.arange(samples), m), item] = seg - first[origin]
    key = partial.segment[None, :] * (n + 1) + sub
    return _dense_within(key, partial.query)


def _key_filter(keys: np.ndarray) -> np.ndarray:
    """A table of at least eight slots per key marking the slots ``key mod size`` of the
    ``keys``: a key whose slot is unmarked is surely not among them (a one-hash Bloom filter)."""
    size = 1 << max((8 * len(keys)).bit_length(), 10)
    present = np.zeros(size, dtype=bool)
    present[keys & (size - 1)] = True
    return present


def _use_known(
    verdict: np.ndarray,
    key: np.ndarray,
    sign: int,
    known: tuple[np.ndarray, np.ndarray],
    present: np.ndarray,
) -> None:
    """Set ``verdict`` to ``sign`` × the known verdict where ``key`` is known (in place); only
    the keys :func:`_key_filter` lets through are searched for."""
    maybe = np.flatnonzero(present[key & (len(present) - 1)])
    at = np.minimum(np.searchsorted(known[0], key[maybe]), len(known[0]) - 1)
    found = known[0][at] == key[maybe]
    verdict[maybe[found]] = sign * known[1][at[found]]


def _first_of(seg: np.ndarray, origin: np.ndarray, origins: int) -> np.ndarray:
    """Per origin, its first segment (segments are dense and ordered by origin)."""
    seg_origin = np.empty(int(seg.max()) + 1, dtype=np.int64)
    seg_origin[seg] = origin
    return np.searchsorted(seg_origin, np.arange(origins))


def _dense_within(key: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Per row, the dense rank (from 1) of ``key`` within each query (keys ordered by query)."""
    order = np.argsort(key, axis=1, kind="stable")
    ranked = np.take_along_axis(key, order, axis=1)
    q = query[order]
    new = np.ones_like(ranked, dtype=np.int64)
    new[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
    dense = np.cumsum(new, axis=1)
    starts = np.ones_like(new, dtype=bool)
    starts[:, 1:] = q[:, 1:] != q[:, :-1]
    base = np.maximum.accumulate(np.where(starts, dense, 0), axis=1)
    out = np.empty_like(dense)
    np.put_along_axis(out, order, dense - base + 1, axis=1)
    return out


# --------------------------------------------------------------------------- scores


def scores(groups: np.ndarray, query: np.ndarray, runs: Retrieved, measure: RankMeasure):
    """Each system's score per drawn list and query, shape (draws, systems, queries), from the
    candidates' groups (draws × candidates; module doc)."""
    groups = np.atleast_2d(groups)
    draws = groups.shape[0]
    k = measure.k
    sizes = runs.sizes
    n_q = len(sizes)
    starts = np.cumsum(sizes) - sizes
    slot = np.arange(len(query)) - starts[query]
    width = max(int(sizes.max()), k)
    padded = np.full((draws, n_q, width), np.iinfo(np.int64).max, dtype=np.int64)
    padded[:, query, slot] = groups
    ideal = np.sort(padded, axis=2)[:, :, :k]  # the k best groups of each query (τ_i)
    last = np.where(padded == np.iinfo(np.int64).max, 0, padded).max(axis=2)  # G per query
    top = runs.top
    judged = top >= 0
    got = np.where(judged[None], groups[:, np.maximum(top, 0)], np.iinfo(np.int64).max)
    if measure.name == "ADR":
        cut = np.minimum(k, sizes)  # k' = min(k, n)
        lower = np.tril(np.ones((k, k), dtype=bool))  # [i, j]: rank j <= rank i
        allowed = got[:, :, :, None, :] <= ideal[:, None, :, :, None]  # (d, s, q, i, j)
        counts = (allowed & lower).sum(axis=4)
        ratio = counts / np.arange(1, k + 1)
        ratio = ratio * (np.arange(k) < cut[:, None])[None, None]
        return ratio.sum(axis=3) / np.maximum(cut, 1)[None, None, :]
    gain = np.where(judged[None], last[:, None, :, None] + 1 - got, 0).astype(float)
    if measure.name == "AG":
        return gain.sum(axis=3) / k
    i = np.arange(1, k + 1, dtype=float)
    weight = np.where(i < 2, 1.0, 1.0 / np.log2(np.maximum(i, 2)))
    best = np.where(ideal == np.iinfo(np.int64).max, 0, last[:, :, None] + 1 - ideal)
    idcg = (best * weight).sum(axis=2)
    dcg = (gain * weight).sum(axis=3)
    out = np.zeros_like(dcg)
    np.divide(dcg, idcg[:, None, :], out=out, where=idcg[:, None, :] > 0)
    return out


# --------------------------------------------------------------------------- system pairs


@dataclass(frozen=True)
class SystemPairs:
    """Every pair of systems (``first < second``, indices into the systems) over the draws:
    ``order`` +1 (first ahead), 0 (tied), −1; ``holds`` the probability that order holds once
    the lists are finished; ``decided`` whether it reaches ``confidence`` (module doc);
    ``delta`` the drawn ΔM (draws × pairs)."""

    first: np.ndarray
    second: np.ndarray
    order: np.ndarray
    holds: np.ndarray
    decided: np.ndarray
    delta: np.ndarray


def system_pairs(score: np.ndarray, confidence: float) -> SystemPairs:
    """Order and probability of every pair of systems from drawn scores (draws × systems ×
    queries; module doc)."""
    mean = score.mean(axis=2)  # draws × systems
    first, second = np.triu_indices(score.shape[1], k=1)
    delta = mean[:, first] - mean[:, second]
    tol = 1e-12
    shares = np.stack(
        [(delta > tol).mean(axis=0), (np.abs(delta) <= tol).mean(axis=0), (delta < -tol).mean(0)]
    )
    likeliest = shares.argmax(axis=0)
    holds = shares.max(axis=0)
    draws = len(delta)
    decided = (holds * draws + 1) / (draws + 2) >= confidence  # rule of succession
    return SystemPairs(first, second, 1 - likeliest, holds, decided, delta)


def priorities(
    partial: Partial,
    runs: Retrieved,
    measure: RankMeasure,
    score: np.ndarray,
    pairs: SystemPairs,
) -> np.ndarray:
    """Each segment's priority (0: closed, or its order cannot change an undecided pair of
    systems; module doc)."""
    segments = partial.segments
    priority = np.zeros(segments)
    undecided = np.flatnonzero(~pairs.decided)
    is_open = partial.open()
    if measure.name == "ADR":
        is_open &= partial.starts() < np.minimum(measure.k, runs.sizes)[_query_of(partial)]
    if not len(undecided) or not is_open.any():
        return priority
    s, t = pairs.first[undecided], pairs.second[undecided]
    per_query = score[:, s, :] - score[:, t, :]  # draws × pairs × queries
    spread = per_query.std(axis=0)
    overall = pairs.delta[:, undecided].std(axis=0)
    n_q = score.shape[2]
    weight = (
        (1 - pairs.holds[undecided])[:, None] * spread / (n_q * np.maximum(overall, 1e-12))[:, None]
    )  # pairs × queries
    open_segments = np.flatnonzero(is_open)
    query_of = _query_of(partial)
    # touch[system, segment]: the system retrieves a member of the open segment in its top k
    top = runs.top
    sys_i, q_i, _ = np.nonzero(top >= 0)
    seg_hit = partial.segment[top[top >= 0]]
    touch = np.zeros((len(runs.systems), segments), dtype=bool)
    touch[sys_i, seg_hit] = True
    if measure.name != "ADR":  # a split also renumbers the groups after it, and G
        has = np.zeros((len(runs.systems), n_q), dtype=bool)
        has[sys_i, q_i] = True
        touch = has[:, query_of]
    matters = (touch[s][:, open_segments] | touch[t][:, open_segments]) & (
        spread[:, query_of[open_segments]] > 1e-12
    )
    priority[open_segments] = (matters * weight[:, query_of[open_segments]]).sum(axis=0)
    return priority


def _query_of(partial: Partial) -> np.ndarray:
    query_of = np.zeros(partial.segments, dtype=np.int64)
    query_of[partial.segment] = partial.query
    return query_of


def choose(partial: Partial, priority: np.ndarray, max_pairs: int | None = None) -> np.ndarray:
    """The segments to ask next (a mask): those of positive priority, the highest first, as
    many as fit in ``max_pairs`` pairs (at least one segment)."""
    chosen = np.zeros(len(priority), dtype=bool)
    candidates = np.flatnonzero(priority > 0)
    if not len(candidates):
        return chosen
    candidates = candidates[np.argsort(-priority[candidates], kind="stable")]
    if max_pairs is None:
        chosen[candidates] = True
        return chosen
    cost = partial.counts[candidates] - 1
    fits = np.cumsum(cost) <= max_pairs
    fits[0] = True
    chosen[candidates[fits]] = True
    return chosen
