"""MTC, the reference and adaptive selection."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crowdprefs.evaluation import mtc


def test_reference_batches_chunk_per_query_and_rank_by_summed_weight():
    runs = pd.DataFrame(
        [
            ("A", "q1", "a"),
            ("A", "q1", "b"),
            ("A", "q2", "c"),
            ("A", "q2", "d"),
            ("B", "q1", "a"),
            ("B", "q2", "e"),
            ("B", "q2", "c"),
        ],
        columns=["system", "query", "document"],
    )
    col = mtc.build_collection(runs)  # pairs: q1a q1b q2c q2d q2e
    weights = np.array([1.0, 5.0, 4.0, 3.0, 3.0])
    none = np.zeros(5, dtype=bool)
    # chunks of 2: q1 -> (b, a) = 6; q2 -> (c, d) = 7, (e) = 3
    assert sorted(mtc.take_batch(col, weights, none, 1, 2)) == [2, 3]
    assert sorted(mtc.take_batch(col, weights, none, 2, 2)) == [0, 1, 2, 3]
    # size 1: global order by weight; ties (d, e) in first-appearance order
    assert list(mtc.take_batch(col, weights, none, 3, 1)) == [1, 2, 3]
    judged = np.array([False, True, False, False, False])
    assert list(mtc.take_batch(col, weights, judged, 1, 1)) == [2]
    assert mtc.reference_weights(col).tolist() == [0, 1, 0, 1, 1]


def test_adaptive_weights_equal_a_loop_over_undecided_pairs(small):
    _, col, truth = small
    est = mtc.UniformEstimator(col)(np.where(np.arange(col.n_pairs) % 4 == 0, truth, np.nan))
    stats = mtc.pair_statistics(col, est, "fine")
    weights = mtc.adaptive_weights(col, est, stats, target=0.99)
    conf = stats.confidence()
    expected = np.zeros(col.n_pairs)
    for a in range(col.n_systems):
        for b in range(a + 1, col.n_systems):
            if conf[a, b] < 0.99:
                differ = col.incidence[a] != col.incidence[b]
                expected += differ * est.var / stats.diff_var[a, b]
    assert np.allclose(weights, expected)


def test_learning_estimates_also_weigh_what_a_judgment_tells_of_the_systems(small):
    """With ``learning``, each undecided pair also counts the share of its variance that
    judging d removes from the per-system errors: the pair's error variance gᵀΣg minus the
    same under Σ updated by d's residual (loads held), against a loop over pairs and d."""
    _, col, truth = small
    gains = np.where(np.arange(col.n_pairs) % 4 == 0, truth, np.nan)
    plain = mtc.UniformEstimator(col)(gains)
    cov = mtc.system_error_covariance(2.0, 4.0, np.arange(col.n_systems, dtype=float))
    est = mtc.Estimates(plain.mean, plain.var, plain.judged, cov, learning=True)
    stats = mtc.pair_statistics(col, est, "fine")
    weights = mtc.adaptive_weights(col, est, stats, target=0.99)
    n = col.n_queries * col.k * 100
    load = col.gram(~est.judged / col.retrieved_by) / n
    z = col.mean_over_systems
    conf = stats.confidence()
    expected = np.zeros(col.n_pairs)
    for d in np.flatnonzero(~est.judged):
        told = cov @ z[:, d]
        updated = cov - np.outer(told, told) / (est.var[d] + z[:, d] @ told)
        for a in range(col.n_systems):
            for b in range(a + 1, col.n_systems):
                if conf[a, b] < 0.99:
                    g = load[a] - load[b]
                    removed = (col.incidence[a, d] != col.incidence[b, d]) * est.var[d] / n**2
                    removed += g @ cov @ g - g @ updated @ g
                    expected[d] += removed * n**2 / stats.diff_var[a, b]
    assert np.allclose(weights, expected)
    # without learning, the weights are the variance shares alone
    fixed = mtc.Estimates(est.mean, est.var, est.judged, cov)
    assert (mtc.adaptive_weights(col, fixed, stats, 0.99) <= weights + 1e-12).all()


def test_a_query_error_weighs_how_a_judgment_balances_the_unjudged_pairs(small):
    """With a query error η², judging d changes each undecided pair's variance by
    η² ((U_Aj − U_Bj)² − (U_Aj − U_Bj − (X_Ad − X_Bd))²) / n², counted as a share of Var[Δ_AB]
    (negative when d unbalances the two systems further), against a loop over pairs and d."""
    _, col, truth = small
    gains = np.where(np.arange(col.n_pairs) % 3 == 0, truth, np.nan)
    plain = mtc.UniformEstimator(col)(gains)
    est = mtc.Estimates(plain.mean, plain.var, plain.judged, query_var=64.0)
    stats = mtc.pair_statistics(col, est, "fine")
    weights = mtc.adaptive_weights(col, est, stats, target=0.99)
    counts = mtc.unjudged_counts(col, est.judged)
    conf = stats.confidence()
    expected = np.zeros(col.n_pairs)
    for d in np.flatnonzero(~est.judged):
        j = col.query_of[d]
        for a in range(col.n_systems):
            for b in range(a + 1, col.n_systems):
                if conf[a, b] < 0.99:
                    step = col.incidence[a, d] - col.incidence[b, d]
                    gap = counts[a, j] - counts[b, j]
                    removed = abs(step) * est.var[d] + 64.0 * (gap**2 - (gap - step) ** 2)
                    expected[d] += removed / stats.diff_var[a, b]
    assert np.allclose(weights, expected)
    alone = mtc.adaptive_weights(col, plain, stats, target=0.99)  # the variance shares alone
    assert ((weights - alone)[~est.judged] < 0).any()  # some judgments unbalance a query
