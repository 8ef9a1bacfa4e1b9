"""Effectiveness measures, computed at once for every system × query of a set of runs.

Measures are named, parameterised objects parsed from strings in the style of ir_measures:
``AG@5``, ``nDCG@5``, ``nDCG(b=3)@10``, ``ADR``, ``P(rel=50)@5``. :func:`score` evaluates a list
of them and returns the long tidy table ``[system, query, measure, score]``.

Conventions (the :func:`validate` step enforces them before any measure is computed):

* The ground truth is level judgments ``[query, document, gain]`` (gains >= 0) or ordered lists
  ``[query, document, group]``; lists are turned into levels by
  :func:`crowdprefs.io.lists_to_levels` (``G - g + 1`` for group ``g`` of ``G``), which keeps the
  order of the groups, so ADR and the relevance sets are exactly those of the list.
* The queries scored are those of the ground truth. Run rows of other queries are ignored
  (:func:`validate` returns how many), and a system without a result for a judged query scores 0
  on it. An empty run, a document listed twice for a (system, query) or a repeated rank is an error.
* Unjudged documents have gain 0 and are never relevant nor allowed (ADR).
* ``G@i`` is the gain of the document at rank ``i``; a run shorter than the cutoff ``k`` has gain
  0 at the missing ranks.
* Binary measures (P, R, F, BEP, Fmax, AP) call a document relevant when its gain is >= ``rel``
  (default 1, as trec_eval and ir_measures do).

Every measure returns a (systems × queries) array; the per-system mean over queries is the
usual summary (MAP is the mean of AP).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError
from crowdprefs.io import lists_to_levels

# --------------------------------------------------------------------------- validated input


@dataclass(frozen=True)
class Judged:
    """Runs matched to a ground truth as dense arrays over systems × queries × ranks.

    ``gain[s, q, i]`` is the gain of the document at rank ``i + 1`` (0 when unjudged or past the
    end of the run), ``judged`` whether it is judged, ``better[s, q, i]`` how many judged
    documents of the query have a strictly higher gain (used by ADR), ``ideal[q, :]`` the judged
    gains of query ``q`` in descending order (0-padded), ``n_judged[q]`` their number,
    ``length[s, q]`` the number of ranks held and ``ignored`` the run rows of unjudged queries.
    """

    systems: np.ndarray
    queries: np.ndarray
    gain: np.ndarray
    judged: np.ndarray
    better: np.ndarray
    ideal: np.ndarray
    n_judged: np.ndarray
    length: np.ndarray = field(repr=False)
    ignored: int = 0


def as_levels(truth: pd.DataFrame) -> pd.DataFrame:
    """The ground truth as levels ``[query, document, gain]`` (lists converted, see module doc)."""
    if "group" in truth.columns and "gain" not in truth.columns:
        truth = lists_to_levels(truth)
    missing = {"query", "document", "gain"} - set(truth.columns)
    if missing:
        raise InputError(f"ground truth lacks column(s) {', '.join(sorted(missing))}")
    return truth


def _codes(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Integer codes of ``values`` and their distinct string labels, sorted (one hash pass)."""
    codes, uniques = pd.factorize(values, use_na_sentinel=False)
    labels, remap = np.unique(np.asarray(uniques).astype(str), return_inverse=True)
    return remap[codes].astype(np.int64), labels


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


@dataclass(frozen=True)
class Checked:
    """Runs and ground truth after :func:`validate`, as integer codes.

    Run rows: ``system``/``query``/``document`` codes into ``systems``/``queries``/``documents``
    and ``position`` (0-based rank within its system and query); only rows of judged queries are
    kept, ``ignored`` counts the others. Truth rows: ``t_query``, ``t_document``, ``t_gain``.
    """

    systems: np.ndarray
    queries: np.ndarray
    documents: np.ndarray
    system: np.ndarray
    query: np.ndarray
    document: np.ndarray
    position: np.ndarray
    t_query: np.ndarray
    t_document: np.ndarray
    t_gain: np.ndarray
    ignored: int


def validate(runs: pd.DataFrame, truth: pd.DataFrame) -> Checked:
    """Check runs and ground truth (levels or lists) and encode them (:class:`Checked`).

    Raises :class:`InputError` for: missing columns, an empty run or ground truth, a negative or
    non-finite gain, a document judged twice for a query, a document listed twice in a run, a
    repeated or non-positive rank, no run result for a judged query. Run rows whose query is not
    judged are dropped and counted.
    """
    missing = {"system", "query", "document", "rank"} - set(runs.columns)
    if missing:
        raise InputError(f"runs lack column(s) {', '.join(sorted(missing))}")
    truth = as_levels(truth)
    if runs.empty:
        raise InputError("the runs are empty")
    if truth.empty:
        raise InputError("the ground truth is empty")
    t_gain = pd.to_numeric(truth["gain"], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(t_gain) | (t_gain < 0)
    if bad.any():
        row = truth.iloc[_first(bad)]
        raise InputError(
            f"ground truth: gain {row['gain']!r} of query {row['query']!r}, document "
            f"{row['document']!r} is not a number >= 0"
        )
    t_query, queries = _codes(truth["query"])
    t_doc, t_docs = _codes(truth["document"])
    twice = pd.Series(t_query * len(t_docs) + t_doc).duplicated().to_numpy()
    if twice.any():
        i = _first(twice)
        raise InputError(
            f"ground truth: document {str(t_docs[t_doc[i]])!r} judged twice for query "
            f"{str(queries[t_query[i]])!r}"
        )
    rank = pd.to_numeric(runs["rank"], errors="coerce").to_numpy(dtype=float)
    if not (np.isfinite(rank) & (rank >= 1)).all():
        raise InputError("runs: every rank must be a number >= 1")

    r_query, r_queries = _codes(runs["query"])
    known = np.searchsorted(queries, r_queries)
    known[known == len(queries)] = 0
    found = queries[known] == r_queries if len(r_queries) else np.zeros(0, bool)
    keep = found[r_query]
    ignored = int((~keep).sum())
    if not keep.any():
        raise InputError("no run has a result for a query of the ground truth")
    system, systems = _codes(runs["system"][keep] if ignored else runs["system"])
    r_doc, r_docs = _codes(runs["document"][keep] if ignored else runs["document"])
    query = known[r_query[keep]]
    rank = rank[keep]

    cell = system * len(queries) + query
    twice = pd.Series(cell * len(r_docs) + r_doc).duplicated().to_numpy()
    order = np.lexsort((rank, cell))
    cell_sorted, rank_sorted = cell[order], rank[order]
    same = (cell_sorted[1:] == cell_sorted[:-1]) & (rank_sorted[1:] == rank_sorted[:-1])
    if twice.any():
        i = _first(twice)
        raise InputError(
            f"runs: system {str(systems[system[i]])!r}, query {str(queries[query[i]])!r}: "
            f"document {str(r_docs[r_doc[i]])!r} is listed twice"
        )
    if same.any():
        i = order[_first(same) + 1]
        raise InputError(
            f"runs: system {str(systems[system[i]])!r}, query {str(queries[query[i]])!r}: rank "
            f"{rank[i]:g} is repeated"
        )
    start = np.flatnonzero(np.r_[True, cell_sorted[1:] != cell_sorted[:-1]])
    position = np.empty(len(cell), dtype=np.int64)
    position[order] = np.arange(len(cell)) - np.repeat(start, np.diff(np.r_[start, len(cell)]))

    # one document vocabulary: the run's, then judged documents no run retrieved
    t_in_runs = np.searchsorted(r_docs, t_docs)
    t_in_runs[t_in_runs == len(r_docs)] = 0
    seen = r_docs[t_in_runs] == t_docs if len(r_docs) else np.zeros(len(t_docs), bool)
    extra = np.cumsum(~seen) - 1 + len(r_docs)
    t_code = np.where(seen, t_in_runs, extra)
    documents = np.concatenate([r_docs, t_docs[~seen]])
    return Checked(
        systems=systems,
        queries=queries,
        documents=documents,
        system=system,
        query=query,
        document=r_doc,
        position=position,
        t_query=t_query,
        t_document=t_code[t_doc],
        t_gain=t_gain,
        ignored=ignored,
    )


def judge(runs: pd.DataFrame, truth: pd.DataFrame, depth: int | None = None) -> Judged:
    """Validate, then match ``runs`` to ``truth`` (levels or lists) as a :class:`Judged`.

    ``depth`` keeps only the top ``depth`` ranks of each run (all when ``None``).
    """
    c = validate(runs, truth)
    n_s, n_q, n_d = len(c.systems), len(c.queries), len(c.documents)
    width = int(c.position.max()) + 1 if depth is None else depth
    keep = c.position < width
    cell = c.system * n_q + c.query
    length = np.bincount(cell, minlength=n_s * n_q).reshape(n_s, n_q)

    # per judged (query, document): gain and the number of strictly better judged documents
    better = (
        pd.Series(c.t_gain).groupby(c.t_query).rank(method="min", ascending=False).to_numpy() - 1
    ).astype(np.int64)
    t_key = c.t_query * n_d + c.t_document
    t_order = np.argsort(t_key)
    t_sorted = t_key[t_order]
    r_key = (c.query * n_d + c.document)[keep]
    found = np.minimum(np.searchsorted(t_sorted, r_key), len(t_sorted) - 1)
    hit = t_sorted[found] == r_key
    row = t_order[found[hit]]

    shape = (n_s, n_q, width)
    flat = (cell * width + c.position)[keep][hit]
    gain = np.zeros(n_s * n_q * width)
    judged = np.zeros(n_s * n_q * width, dtype=bool)
    best = np.full(n_s * n_q * width, -1, dtype=np.int64)
    gain[flat] = c.t_gain[row]
    judged[flat] = True
    best[flat] = better[row]

    n_judged = np.bincount(c.t_query, minlength=n_q)
    ideal = np.zeros((n_q, int(n_judged.max())))
    by_gain = np.lexsort((-c.t_gain, c.t_query))
    first = np.r_[0, np.cumsum(n_judged)[:-1]]
    slot = np.arange(len(by_gain)) - np.repeat(first, n_judged)
    ideal[c.t_query[by_gain], slot] = c.t_gain[by_gain]
    return Judged(
        systems=c.systems,
        queries=c.queries,
        gain=gain.reshape(shape),
        judged=judged.reshape(shape),
        better=best.reshape(shape),
        ideal=ideal,
        n_judged=n_judged,
        length=np.minimum(length, width),
        ignored=c.ignored,
    )


# --------------------------------------------------------------------------- helpers


def _top(matrix: np.ndarray, k: int) -> np.ndarray:
    """The first ``k`` positions of the last axis, 0-padded when ``k`` exceeds the depth."""
    if matrix.shape[-1] >= k:
        return matrix[..., :k]
    pad = [(0, 0)] * (matrix.ndim - 1) + [(0, k - matrix.shape[-1])]
    return np.pad(matrix, pad)


def _divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """``numerator / denominator``, 0 where the denominator is 0."""
    denominator = np.broadcast_to(
        denominator, np.broadcast_shapes(numerator.shape, denominator.shape)
    )
    out = np.zeros(np.broadcast_shapes(numerator.shape, denominator.shape))
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def _relevant(data: Judged, rel: float, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Relevance ``χ`` (S, Q, k) of the retrieved documents and the number relevant per query."""
    chi = data.judged & (data.gain >= rel)
    padding = np.arange(data.ideal.shape[1]) >= data.n_judged[:, None]
    n_relevant = ((data.ideal >= rel) & ~padding).sum(axis=1).astype(float)
    return (chi if k is None else _top(chi, k)), n_relevant


def _precision_recall(data: Judged, rel: float, k: int | None):
    chi, n_relevant = _relevant(data, rel, k)
    hits = np.cumsum(chi, axis=2)
    ranks = np.arange(1, chi.shape[2] + 1)
    return chi, hits / ranks, _divide(hits, n_relevant[None, :, None]), n_relevant


def _f(p: np.ndarray, r: np.ndarray) -> np.ndarray:
    return _divide(2 * p * r, p + r)


def _discounts(depth: int, b: float | None) -> np.ndarray:
    """``1 / discount`` per rank: the power-and-stability paper eq. (2) for base ``b``, trec_eval's
    when ``None``."""
    i = np.arange(1, depth + 1, dtype=float)
    if b is None:
        return 1.0 / np.log2(i + 1)
    return np.where(i < b, 1.0, 1.0 / np.maximum(np.log(i) / np.log(b), 1e-300))


def _ndcg_curve(data: Judged, k: int, b: float | None) -> np.ndarray:
    """nDCG@i for i = 1..k, shape (S, Q, k)."""
    weights = _discounts(k, b)
    dcg = np.cumsum(_top(data.gain, k) * weights, axis=2)
    idcg = np.cumsum(_top(data.ideal, k) * weights, axis=1)
    return _divide(dcg, idcg[None, :, :])


# --------------------------------------------------------------------------- the measures


def average_gain(data: Judged, k: int) -> np.ndarray:
    """AG@k = CG@k / k = (1/k) Σ_{i=1..k} G@i (the power-and-stability paper §3.1, eq. 1).

    The official MIREX AMS measure ("Sum"; PSum with Broad judgments, FINE with Fine ones).
    """
    return _top(data.gain, k).sum(axis=2) / k


def ndcg(data: Judged, k: int, b: float = 2) -> np.ndarray:
    """nDCG@k = DCG@k / IDCG@k with the power-and-stability paper's DCG (§3.2, eqs. 2-3).

    DCG@k = Σ_{i<b} G@i + Σ_{b<=i<=k} G@i / log_b(i): gains at ranks below ``b`` are not
    discounted. IDCG@k is the DCG@k of the judged documents in descending gain order. 0 when
    IDCG@k = 0.
    """
    return _ndcg_curve(data, k, b)[:, :, -1]


def ndcg_trec(data: Judged, k: int) -> np.ndarray:
    """trec_eval's ndcg_cut.k (ir_measures ``nDCG@k``): DCG@k = Σ_{i=1..k} G@i / log2(i + 1).

    Linear gains; IDCG@k from all judged documents in descending gain order; 0 when IDCG@k = 0.
    """
    return _ndcg_curve(data, k, None)[:, :, -1]


def andcg(data: Judged, k: int, b: float = 2) -> np.ndarray:
    """ANDCG@k = (1/k) Σ_{i=1..k} nDCG@i, with the power-and-stability paper's nDCG (§3.3, eq.
    4)."""
    return _ndcg_curve(data, k, b).mean(axis=2)


def average_dynamic_recall(data: Judged, k: int | None = None) -> np.ndarray:
    """ADR@k = (1/k') Σ_{i=1..k'} |A_i ∩ {R_1..R_i}| / i (the power-and-stability paper §3.4, eqs.
    5-6).

    ``I = <I_1..I_n>`` are the ``n`` judged documents in descending gain order and
    ``A_i = {I_1.. I_i} ∪ {I_j : j > i, G(I_j) = G(I_i)}`` the documents allowed at rank ``i``:
    those whose gain is at least ``G(I_i)``, so ties in the ground truth (a group of a partially
    ordered list) may come in any order. ``k' = min(k, n)``; without ``k`` (plain ``ADR``),
    ``k' = n``: the whole ground-truth list, as the preference-judgments paper §5.4 and MIREX SMS
    use it. The preference-judgments paper's example: truth ⟨(A,B,C),(D,E)⟩, results ⟨A,B,D,E,C⟩
    give 0.933.

    Vectorised: the document at rank ``j`` with ``m`` judged documents strictly better than it is
    allowed from rank ``max(j, m + 1)`` on, so the counts are a cumulative sum.
    """
    cut = data.n_judged if k is None else np.minimum(k, data.n_judged)
    width = int(cut.max())
    better = _top(data.better + 1, width) - 1  # padding -> -1 (not judged)
    judged = _top(data.judged, width)
    n_s, n_q = judged.shape[:2]
    start = np.where(judged, np.maximum(np.arange(width), better), width)  # counts from there
    start = np.minimum(start, width)
    cells = np.arange(n_s * n_q).reshape(n_s, n_q, 1) * (width + 1)
    counts = np.bincount((cells + start).reshape(-1), minlength=n_s * n_q * (width + 1))
    counts = counts.reshape(n_s, n_q, width + 1)[:, :, :width]
    ratios = np.cumsum(counts, axis=2) / np.arange(1, width + 1)
    ratios *= np.arange(width) < cut[None, :, None]
    return _divide(ratios.sum(axis=2), np.broadcast_to(cut, (n_s, n_q)))


def precision(data: Judged, k: int, rel: float = 1) -> np.ndarray:
    """P@k = (1/k) Σ_{r=1..k} χ(r) (the FMP evaluation notebook, precision at rank r; trec_eval
    P_k)."""
    return _precision_recall(data, rel, k)[1][:, :, -1]


def recall(data: Judged, k: int, rel: float = 1) -> np.ndarray:
    """R@k = (1/|I_Q|) Σ_{r=1..k} χ(r), I_Q the relevant judged documents (the FMP evaluation
    notebook); 0 if none."""
    return _precision_recall(data, rel, k)[2][:, :, -1]


def f_measure(data: Judged, k: int, rel: float = 1) -> np.ndarray:
    """F@k = 2 P@k R@k / (P@k + R@k), 0 when P@k = R@k = 0 (the FMP evaluation notebook)."""
    _, p, r, _ = _precision_recall(data, rel, k)
    return _f(p[:, :, -1], r[:, :, -1])


def break_even_point(data: Judged, rel: float = 1) -> np.ndarray:
    """BEP = P(|I_Q|) = R(|I_Q|), the precision at rank |I_Q| (the FMP evaluation notebook;
    R-precision, Rprec).

    Ranks past the end of the run retrieve nothing; 0 when the query has no relevant document.
    """
    chi, n_relevant = _relevant(data, rel, None)
    width = max(int(n_relevant.max()), 1)
    hits = np.cumsum(_top(chi, width), axis=2)
    at = np.maximum(n_relevant.astype(np.int64), 1) - 1
    return _divide(hits[:, np.arange(len(at)), at], n_relevant[None, :])


def f_max(data: Judged, rel: float = 1) -> np.ndarray:
    """F_max = max_{r=1..K} F(r) over the ranks K of the run (the FMP evaluation notebook, maximal
    F-measure)."""
    _, p, r, _ = _precision_recall(data, rel, None)
    return _f(p, r).max(axis=2)


def average_precision(data: Judged, k: int | None = None, rel: float = 1) -> np.ndarray:
    """AP = (1/|I_Q|) Σ_r P(r) χ(r) (the FMP evaluation notebook, average precision; trec_eval map,
    map_cut_k).

    With ``k`` only ranks up to ``k`` contribute (still divided by |I_Q|). 0 when |I_Q| = 0. The
    mean over queries is MAP.
    """
    chi, p, _, n_relevant = _precision_recall(data, rel, k)
    return _divide((p * chi).sum(axis=2), n_relevant[None, :])


def pr_curve(data: Judged, rel: float = 1) -> pd.DataFrame:
    """Precision and recall per rank: ``[system, query, rank, precision, recall]`` (the FMP
    evaluation notebook)."""
    _, p, r, _ = _precision_recall(data, rel, None)
    s, q, i = np.nonzero(np.arange(p.shape[2]) < data.length[:, :, None])
    return pd.DataFrame(
        {
            "system": data.systems[s],
            "query": data.queries[q],
            "rank": i + 1,
            "precision": p[s, q, i],
            "recall": r[s, q, i],
        }
    )


def interpolated_precision(data: Judged, levels: Iterable[float], rel: float = 1) -> np.ndarray:
    """IPrec at each recall level ``x``: the highest precision P(r) at a rank r by which at
    least ⌊x·|I_Q| + 0.9⌋ relevant documents are retrieved, 0 if none; shape (S, Q, levels).

    The interpolated PR curve averaged over queries, with trec_eval's count of relevant
    documents for a level (``iprec_at_recall``; ir_measures ``IPrec``): it differs from
    R(r) ≥ x when x·|I_Q| lies less than 0.1 above a whole number. Levels are taken as the
    decimals they denote (rounded to 12 places, as trec_eval reads them from text), so that
    ``np.linspace(0, 1, 11)[7]`` = 0.7000000000000001 counts as 0.7.
    """
    chi, p, _, n_relevant = _precision_recall(data, rel, None)
    p = np.where(np.arange(p.shape[2]) < data.length[:, :, None], p, 0.0)
    hits = np.cumsum(chi, axis=2)
    levels = np.round(np.asarray(list(levels), dtype=float), 12)
    needed = np.floor(levels[None, :] * n_relevant[:, None] + 0.9)  # Q × levels
    reached = hits[:, :, :, None] >= needed[None, :, None, :]
    return np.where(reached, p[:, :, :, None], 0.0).max(axis=2)


# --------------------------------------------------------------------------- named measures


@dataclass(frozen=True)
class _Kind:
    function: Callable[..., np.ndarray]
    cutoff: str  # "required", "optional" or "none"
    params: dict[str, float | None]


MEASURES: dict[str, _Kind] = {
    "AG": _Kind(average_gain, "required", {}),
    "nDCG": _Kind(ndcg, "required", {"b": 2.0}),
    "nDCG_trec": _Kind(ndcg_trec, "required", {}),
    "ANDCG": _Kind(andcg, "required", {"b": 2.0}),
    "ADR": _Kind(average_dynamic_recall, "optional", {}),
    "P": _Kind(precision, "required", {"rel": 1.0}),
    "R": _Kind(recall, "required", {"rel": 1.0}),
    "F": _Kind(f_measure, "required", {"rel": 1.0}),
    "BEP": _Kind(break_even_point, "none", {"rel": 1.0}),
    "Fmax": _Kind(f_max, "none", {"rel": 1.0}),
    "AP": _Kind(average_precision, "optional", {"rel": 1.0}),
}

MAX_CUTOFF = 10_000
"""The largest cutoff: the scores are (systems × queries × cutoff) arrays, and no run of the
field ranks more documents per query (TREC runs rank 1,000)."""
MAX_BASE = 1e6
"""The largest logarithm base of nDCG's discount (at b = 1e6 nothing is discounted)."""

_SYNTAX = re.compile(r"^(?P<name>[A-Za-z_]+)(?:\((?P<params>[^)]*)\))?(?:@(?P<cutoff>\d+))?$")

ALIASES = {"MAP": "AP", "Prec": "P", "Recall": "R", "NDCG": "nDCG"}
"""Names other tools give the measures of :data:`MEASURES` (scores are means over the queries:
mean average precision is ``AP``). Any name is also accepted in any case (``ndcg@10``)."""
_NAMES = {name.lower(): name for name in MEASURES} | {
    alias.lower(): name for alias, name in ALIASES.items()
}
ELSEWHERE = {
    "MRR": ("RR", "mean reciprocal rank of the first relevant document"),
    "RR": ("RR", "reciprocal rank of the first relevant document"),
    "ERR": ("ERR", "expected reciprocal rank, a cascade model of graded relevance"),
}
"""Measures of other tools not computed here, with their ``ir_measures`` name:
:func:`parse_measure` says what to use."""


def _canonical(text: str) -> str:
    """``text`` with its measure name spelt as in :data:`MEASURES` (aliases and any case
    accepted); a measure computed only elsewhere raises :class:`InputError` saying what to use."""
    match = _SYNTAX.match(text.strip())
    if not match:
        return text
    name = match["name"]
    if name.upper() in ELSEWHERE:
        other, meaning = ELSEWHERE[name.upper()]
        raise InputError(
            f"measure {text!r} ({meaning}) is not computed here: AP also rewards early relevant "
            f"documents, and ir_measures computes {other} on the lists written as graded qrels "
            "(crowdprefs.io.write_preference_qrels)"
        )
    return _NAMES.get(name.lower(), name) + text.strip()[len(name) :]


@dataclass(frozen=True)
class Measure:
    """A named measure with its parameters and cutoff, e.g. ``Measure("nDCG", 5, (("b", 3.0),))``.

    ``str(measure)`` is its canonical name (``nDCG(b=3)@5``); parameters equal to their default
    are left out. Calling it on a :class:`Judged` gives the (systems × queries) scores.
    """

    name: str
    cutoff: int | None = None
    params: tuple[tuple[str, float], ...] = ()

    def __str__(self) -> str:
        params = ",".join(f"{key}={value:g}" for key, value in self.params)
        return (
            self.name
            + (f"({params})" if params else "")
            + (f"@{self.cutoff}" if self.cutoff else "")
        )

    @property
    def depth(self) -> int | None:
        """Ranks of a run the measure reads: its cutoff, or ``None`` (all) without one."""
        return None if self.name in ("BEP", "Fmax") else self.cutoff

    def __call__(self, data: Judged) -> np.ndarray:
        kind = MEASURES[self.name]
        args = {"k": self.cutoff} if kind.cutoff != "none" else {}
        return kind.function(data, **args, **dict(self.params))


def parse_measure(text: str, k: int | None = None) -> Measure:
    """Parse ``Name[(param=value,...)][@cutoff]``; ``k`` is the cutoff when the text has none.
    The name may be an alias (:data:`ALIASES`, e.g. ``MAP`` for ``AP``) in any case.

    Raises :class:`InputError` naming the measure for an unknown name or parameter, a missing
    cutoff, or a cutoff given to a measure without one.
    """
    text = _canonical(text)
    match = _SYNTAX.match(text.strip())
    if match and match["name"].upper() == "MTC":
        raise InputError(
            f"{text!r} is not a measure: Minimal Test Collections rank systems with few level "
            "judgments in 'crowdprefs mtc' (mtc next, mtc estimate, mtc simulate)"
        )
    if not match or match["name"] not in MEASURES:
        names = ", ".join(MEASURES)
        raise InputError(
            f"unknown measure {text!r}; known: {names}, in any case (MAP for AP; e.g. AG@5, "
            "nDCG(b=2)@10)"
        )
    kind = MEASURES[match["name"]]
    cutoff = int(match["cutoff"]) if match["cutoff"] else None
    if cutoff is None and kind.cutoff == "required":
        cutoff = k
    if kind.cutoff == "none" and cutoff is not None and match["cutoff"]:
        raise InputError(f"measure {text!r}: {match['name']} takes no cutoff")
    if kind.cutoff == "none":
        cutoff = None
    if cutoff is None and kind.cutoff == "required":
        raise InputError(
            f"measure {text!r} needs a cutoff (e.g. {match['name']}@5, or a default cutoff k)"
        )
    if cutoff is not None and not 1 <= cutoff <= MAX_CUTOFF:
        raise InputError(
            f"measure {text!r}: the cutoff must be at least 1 and at most {MAX_CUTOFF}, "
            f"got {cutoff}"
        )
    params = dict(kind.params)
    for item in filter(None, (match["params"] or "").split(",")):
        key, _, value = item.partition("=")
        key = key.strip()
        if key not in params:
            raise InputError(f"measure {text!r}: unknown parameter {key!r}")
        try:
            params[key] = float(value)
        except ValueError:
            raise InputError(f"measure {text!r}: {key}={value.strip()!r} is not a number") from None
        if not math.isfinite(params[key]):
            raise InputError(f"measure {text!r}: {key}={value.strip()!r} is not a finite number")
    if not 1 < params.get("b", 2.0) <= MAX_BASE:
        raise InputError(
            f"measure {text!r}: the logarithm base b={params['b']:g} must be in (1, {MAX_BASE:g}]"
        )
    changed = tuple((key, v) for key, v in params.items() if v != kind.params[key])
    return Measure(match["name"], cutoff, changed)


def parse_measures(measures: Iterable[str | Measure], k: int | None = None) -> list[Measure]:
    """:func:`parse_measure` over a list (``Measure`` objects pass through); at least one."""
    parsed = [m if isinstance(m, Measure) else parse_measure(m, k) for m in measures]
    if not parsed:
        raise InputError("no measure to compute")
    return parsed


def depth_needed(measures: Iterable[Measure]) -> int | None:
    """The ranks of each run that ``measures`` read (``None``: all), for :func:`judge`."""
    depths = [m.depth for m in measures]
    return None if None in depths else max(depths)


def tabulate(data: Judged, measures: list[Measure]) -> pd.DataFrame:
    """The long table ``[system, query, measure, score]`` of ``measures`` on ``data``.

    Rows are ordered by measure (as given), system, query.
    """
    n_s, n_q = len(data.systems), len(data.queries)
    return pd.DataFrame(
        {
            "system": np.tile(np.repeat(data.systems, n_q), len(measures)),
            "query": np.tile(data.queries, n_s * len(measures)),
            "measure": np.repeat([str(m) for m in measures], n_s * n_q),
            "score": np.concatenate([m(data).reshape(-1) for m in measures]),
        }
    )


def score(
    runs: pd.DataFrame,
    truth: pd.DataFrame,
    measures: Iterable[str | Measure],
    k: int | None = None,
) -> pd.DataFrame:
    """Score every system on every judged query: the long table ``[system, query, measure, score]``.

    ``measures`` are :class:`Measure` objects or strings for :func:`parse_measure` (``k`` being
    the cutoff of those given without one). Rows are ordered by measure (as given), system, query.
    """
    parsed = parse_measures(measures, k)
    return tabulate(judge(runs, truth, depth=depth_needed(parsed)), parsed)
