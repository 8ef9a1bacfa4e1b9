"""MTC, AG@k and differences as random variables, confidences, accuracy, calibration."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mtc_data import make_runs
from scipy.stats import kendalltau, norm

from crowdprefs.evaluation import mtc


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), systems=st.integers(2, 5), k=st.integers(1, 4))
def test_pair_statistics_equal_a_direct_computation(seed, systems, k):
    """E[Δ] and Var[Δ] = Σ_{d ∈ A△B} V_d / (QkM)² against loops over documents (seed §3.2)."""
    runs = make_runs(systems, 3, k, 6, seed)
    col = mtc.build_collection(runs)
    rng = np.random.default_rng(seed)
    est = mtc.Estimates(
        rng.uniform(0, 100, col.n_pairs),
        rng.uniform(0, 900, col.n_pairs),
        np.zeros(col.n_pairs, dtype=bool),
    )
    stats = mtc.pair_statistics(col, est, "fine")
    n = col.n_queries * col.k * 100
    docs = {s: set(zip(g["query"], g["document"], strict=True)) for s, g in runs.groupby("system")}
    index = {
        key: i for i, key in enumerate(zip(col.pairs["query"], col.pairs["document"], strict=True))
    }
    for a, sa in enumerate(col.systems):
        assert stats.mean[a] == pytest.approx(sum(est.mean[index[d]] for d in docs[sa]) / n)
        for b, sb in enumerate(col.systems):
            expected = sum(est.var[index[d]] for d in docs[sa] ^ docs[sb]) / n**2
            assert stats.diff_var[a, b] == pytest.approx(expected, abs=1e-15)
    conf = stats.confidence()
    a, b = 0, 1
    if stats.diff_var[a, b] > 0:
        z = abs(stats.diff[a, b]) / np.sqrt(stats.diff_var[a, b])
        assert conf[a, b] == pytest.approx(norm.cdf(z))
        margin = 0.01
        assert stats.confidence(margin)[a, b] == pytest.approx(
            norm.cdf((abs(stats.diff[a, b]) - margin) / np.sqrt(stats.diff_var[a, b]))
        )


def test_confidence_with_zero_variance():
    stats = mtc.PairStatistics(
        np.array([0.5, 0.4, 0.5]),
        np.zeros(3),
        np.array([[0, 0.1, 0], [-0.1, 0, -0.1], [0, 0.1, 0]]),
        np.zeros((3, 3)),
    )
    conf = stats.confidence()
    assert conf[0, 1] == 1.0 and conf[0, 2] == 0.5
    assert mtc.ranking_confidence(stats) == pytest.approx(2.5 / 3)
    assert mtc.ranking_confidence(stats, rule="min") == 0.5


def test_system_covariance_adds_the_load_variance(small):
    _, col, truth = small
    judged = np.zeros(col.n_pairs, dtype=bool)
    judged[::3] = True
    v = np.where(judged, 0.0, 100.0)
    cov = np.diag(np.linspace(1, 4, col.n_systems))
    plain = mtc.pair_statistics(col, mtc.Estimates(truth, v, judged), "fine")
    with_cov = mtc.pair_statistics(col, mtc.Estimates(truth, v, judged, cov), "fine")
    n = col.n_queries * col.k * 100
    load = (col.incidence * (~judged / col.retrieved_by)) @ col.incidence.T / n
    gap = load[0] - load[1]
    assert with_cov.diff_var[0, 1] - plain.diff_var[0, 1] == pytest.approx(gap @ cov @ gap)
    assert np.allclose(with_cov.mean, plain.mean)


def test_sign_accuracy_tau_equals_scipy(small):
    _, col, truth = small
    rng = np.random.default_rng(5)
    for _ in range(5):
        mean = rng.normal(size=col.n_systems)
        stats = mtc.PairStatistics(mean, mean * 0, mean[:, None] - mean[None, :], np.zeros((6, 6)))
        true = rng.normal(size=col.n_systems)
        accuracy, tau = mtc.sign_accuracy(stats, true)
        assert tau == pytest.approx(kendalltau(mean, true).statistic)
        assert accuracy == pytest.approx((tau + 1) / 2)


def test_calibration_table_bins():
    conf = np.array([0.55, 0.58, 0.97, 0.995, 1.0])
    correct = np.array([True, False, True, True, False])
    table = mtc.calibration_table(conf, correct)
    assert table["pairs"].tolist() == [2, 0, 0, 0, 0, 1, 2]
    assert table.loc[0, "accuracy"] == 0.5 and table.loc[6, "accuracy"] == 0.5
    assert table.loc[6, "stated"] == pytest.approx(0.9975)


def test_a_tied_estimate_counts_half(small):
    """Uniform estimates without judgments tie every system: accuracy ½ (a coin toss), not 0."""
    _, col, truth = small
    est = mtc.UniformEstimator(col)(np.full(col.n_pairs, np.nan))
    stats = mtc.pair_statistics(col, est, "fine")
    assert mtc.sign_accuracy(stats, col.incidence @ truth)[0] == 0.5
    agreement = mtc.sign_agreement(np.array([1.0, -2.0, 0.0, 3.0, 0.0]), np.array([2, 1, 5, 0, 0]))
    assert agreement.tolist() == [1.0, 0.0, 0.5, 0.5, 1.0]
    sim = mtc.simulate(
        col, truth, mtc.UniformEstimator(col), mtc.make_selector("reference", col, 3, 2), "fine"
    )
    assert sim.log["accuracy"].iloc[0] == 0.5 and sim.correct[0].tolist() == [0.5] * 15


def test_a_query_error_widens_differences_by_unbalanced_unjudged_pairs(small):
    """η² Σ_j (U_Aj − U_Bj)² / n² on every difference and η² Σ_j U_Aj² / n² on every AG@k,
    against a loop over queries; nothing with nothing judged (U_Aj = k for all)."""
    _, col, truth = small
    judged = np.zeros(col.n_pairs, dtype=bool)
    judged[::3] = True
    v = np.where(judged, 0.0, 100.0)
    plain = mtc.pair_statistics(col, mtc.Estimates(truth, v, judged), "fine")
    shared = mtc.pair_statistics(col, mtc.Estimates(truth, v, judged, query_var=49.0), "fine")
    n = col.n_queries * col.k * 100
    counts = np.array(
        [[(col.incidence[s] * ~judged)[col.query_of == j].sum() for j in range(col.n_queries)]
         for s in range(col.n_systems)]
    )  # fmt: skip
    assert np.array_equal(mtc.unjudged_counts(col, judged), counts)
    expected = 49.0 * ((counts[:, None, :] - counts[None, :, :]) ** 2).sum(axis=2) / n**2
    assert np.allclose(shared.diff_var - plain.diff_var, expected)
    assert np.allclose(shared.var - plain.var, 49.0 * (counts**2).sum(axis=1) / n**2)
    assert expected.max() > 0 and np.allclose(shared.mean, plain.mean)
    none = np.zeros(col.n_pairs, dtype=bool)
    empty = [mtc.Estimates(truth, np.full(col.n_pairs, 100.0), none, query_var=q) for q in (0, 49)]
    a, b = (mtc.pair_statistics(col, e, "fine") for e in empty)
    assert np.allclose(a.diff_var, b.diff_var)
