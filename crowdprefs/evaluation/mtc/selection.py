"""Which pairs to judge next (the MTC paper §3.4): the reference tool's static weight c·(S − c) and
an adaptive weight on the pairs still undecided, taken in the reference tool's batches."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from crowdprefs.errors import InputError
from crowdprefs.evaluation.mtc.collection import Collection
from crowdprefs.evaluation.mtc.statistics import Estimates, PairStatistics, unjudged_counts

SELECTIONS = ("reference", "adaptive")
Selector = Callable[[Estimates, PairStatistics], np.ndarray]


def reference_weights(col: Collection) -> np.ndarray:
    """The reference tool's static weight c·(S − c): system pairs where exactly one retrieved d."""
    c = col.retrieved_by
    return c * (col.n_systems - c)


def adaptive_weights(
    col: Collection, est: Estimates, stats: PairStatistics, target: float = 0.95
) -> np.ndarray:
    """Variance- and undecided-pair-aware weight of every unjudged pair.

    w_d = Σ_{A<B, C_AB < target, d ∈ A△B} V_d / Var[Δ_AB]: the share of each still undecided
    pair's variance that judging d would remove (the MTC paper's §3.4 variant that counts only
    pairs below the target). With binary X, Σ_{A<B} U_AB |X_Ad − X_Bd| = (U1)ᵀX_d − X_dᵀ U X_d.

    When the estimates learn the per-system errors from each judgment (``est.learning``), d
    also narrows them: the error part g_ABᵀ b of Δ_AB (g_AB = L_A − L_B, the loads of
    :func:`~crowdprefs.evaluation.mtc.statistics.pair_statistics`) loses
    (g_ABᵀ Σ z_d)² / (V_d + z_dᵀ Σ z_d), the variance explained by d's residual
    r_d = z_d·b + ε_d; that share of Var[Δ_AB] is added for every undecided pair.

    With a query error of variance η² (``est.query_var``), judging d of query j changes the
    part η² (U_Aj − U_Bj)² of Var[Δ_AB] (U: :func:`~.statistics.unjudged_counts`) by
    −η² (2 (U_Aj − U_Bj)(X_Ad − X_Bd) − |X_Ad − X_Bd|): judging a pair that balances two
    systems' unjudged pairs in a query narrows their difference, one that unbalances them
    widens it. That change, over Var[Δ_AB], is added for every undecided pair.
    """
    conf = stats.confidence()
    undecided = (conf < target) & (stats.diff_var > 0)
    with np.errstate(divide="ignore"):
        u = np.where(undecided, 1.0 / stats.diff_var, 0.0)
    np.fill_diagonal(u, 0.0)
    x = col.incidence
    spread = u.sum(axis=1) @ x - ((u @ x) * x).sum(axis=0)
    weights = spread * est.var
    if est.learning and est.system_cov is not None:
        a, b = np.nonzero(np.triu(undecided, k=1))
        load = col.gram(~est.judged / col.retrieved_by)  # n·L, so that units match V_d
        told = est.system_cov @ col.mean_over_systems  # Σ z_d for every d (S×P)
        explained = est.var + (col.mean_over_systems * told).sum(axis=0)
        gain = ((load[a] - load[b]) @ told) ** 2 / np.maximum(explained, 1e-12)
        weights = weights + (gain / stats.diff_var[a, b][:, None]).sum(axis=0)
    if est.query_var > 0:
        counts = unjudged_counts(col, est.judged)
        balance = counts * u.sum(axis=1)[:, None] - u @ counts
        cross = (x * balance[:, col.query_of]).sum(axis=0)
        weights = weights + est.query_var * (2 * cross - spread)
    return np.where(est.judged, 0.0, weights)


def take_batch(
    col: Collection, weights: np.ndarray, judged: np.ndarray, batches: int, size: int
) -> np.ndarray:
    """The pairs to judge next, batched as the reference tool does (MTC.md, "Selecting").

    Per query, the unjudged pairs sorted by weight (descending; ties in first-appearance order)
    are cut into chunks of ``size``; chunks are ranked by summed weight (descending, stable:
    ties in query order) and the first ``batches`` chunks are taken. The pairs come back in
    that order (best chunk first).
    """
    open_ = np.flatnonzero(~judged)
    if open_.size == 0:
        return open_
    if size == 1:  # one pair per chunk: a stable global sort (pairs are in query order)
        return open_[np.argsort(-weights[open_], kind="stable")[:batches]]
    q = col.query_of[open_]
    w = weights[open_]
    order = np.lexsort((-w, q))  # by query, then weight descending; stable
    open_, q, w = open_[order], q[order], w[order]
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    within = np.arange(q.size) - np.repeat(starts, np.diff(np.r_[starts, q.size]))
    chunk = np.unique(q * (q.size + 1) + within // size, return_inverse=True)[1]
    ranked = np.argsort(-np.bincount(chunk, w), kind="stable")[:batches]
    rank = np.full(chunk.max() + 1, ranked.size)
    rank[ranked] = np.arange(ranked.size)
    taken = np.flatnonzero(rank[chunk] < ranked.size)
    return open_[taken[np.argsort(rank[chunk[taken]], kind="stable")]]


def make_selector(
    name: str, col: Collection, batches: int, size: int, target: float = 0.95
) -> Selector:
    """Selection ``name`` (:data:`SELECTIONS`): ``batches`` chunks of ``size`` pairs per call."""
    if name not in SELECTIONS:
        raise InputError(f"unknown selection {name!r}; choose one of {', '.join(SELECTIONS)}")
    if batches < 1 or size < 1:
        raise InputError(f"batches and batch size must be at least 1 (got {batches}, {size})")
    if name == "reference":
        weights = reference_weights(col)
        return lambda est, stats: take_batch(col, weights, est.judged, batches, size)
    return lambda est, stats: take_batch(
        col, adaptive_weights(col, est, stats, target), est.judged, batches, size
    )
