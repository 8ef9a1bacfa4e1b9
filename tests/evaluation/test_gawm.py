"""Tests of crowdprefs.evaluation.gawm: weighted means, GAWM fixed points, HITS, p(S_i > S_j),
LOTO."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats as sps

from crowdprefs.errors import InputError
from crowdprefs.evaluation.gawm import (
    MEANS,
    correlations,
    gawm,
    gawm_arrays,
    hits,
    kendall_tau_b,
    leave_one_topic_out,
    p_better,
    weighted_mean,
)


def _unit_scores(seed: int = 0, systems: int = 8, topics: int = 20) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    skill = np.linspace(0.2, 0.8, systems)[:, None]
    ease = rng.uniform(-0.2, 0.2, size=topics)
    values = np.clip(skill + ease + rng.normal(scale=0.15, size=(systems, topics)), 0.01, 1)
    return pd.DataFrame(
        values, index=[f"S{i}" for i in range(systems)], columns=[f"t{j}" for j in range(topics)]
    )


positive = arrays(
    np.float64, st.integers(2, 12), elements=st.floats(0.01, 1.0, allow_subnormal=False)
)


@settings(max_examples=50, deadline=None)
@given(x=positive, data=st.data())
def test_weighted_means_match_scipy(x, data):
    w = data.draw(arrays(np.float64, len(x), elements=st.floats(0.01, 5.0)))
    assert weighted_mean(x, w, "arithmetic") == pytest.approx(np.average(x, weights=w))
    assert weighted_mean(x, w, "geometric") == pytest.approx(sps.gmean(x, weights=w))
    assert weighted_mean(x, w, "harmonic") == pytest.approx(sps.hmean(x, weights=w))
    assert weighted_mean(x, w, "min") == x.min()
    assert weighted_mean(x, w, "max") == x.max()
    ordered = [weighted_mean(x, w, kind) for kind in MEANS]
    assert all(a <= b + 1e-12 for a, b in zip(ordered, ordered[1:], strict=False))


def test_zero_score_makes_harmonic_and_geometric_zero():
    x, w = np.array([0.0, 0.5, 1.0]), np.ones(3)
    assert weighted_mean(x, w, "harmonic") == 0.0
    assert weighted_mean(x, w, "geometric") == 0.0
    assert weighted_mean(x, np.array([0.0, 1.0, 1.0]), "geometric") == pytest.approx(np.sqrt(0.5))


@settings(max_examples=25, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(2, 6), st.integers(2, 8)), elements=st.floats(0, 1))
)
def test_uniform_weights_give_the_arithmetic_means(values):
    scores = pd.DataFrame(values)
    result = gawm(scores, axioms="uniform")
    # scores lie in [0, 1]: subnormal means (e.g. 5e-324) may underflow to 0
    np.testing.assert_allclose(result.systems.score, values.mean(axis=1), atol=1e-12)  # MAP
    np.testing.assert_allclose(result.topics.ease, values.mean(axis=0), atol=1e-12)  # AAP


@pytest.mark.parametrize("axioms", ["A", "B"])
def test_gawm_reaches_a_fixed_point_of_equations_7_to_9(axioms):
    scores = _unit_scores()
    result = gawm(scores, axioms=axioms, tol=1e-12)
    assert result.converged
    p = scores.to_numpy()
    e_s, e_t = result.systems.score.to_numpy(), result.topics.ease.to_numpy()
    w_t = np.sqrt(((p - e_t) ** 2).mean(axis=0))  # eq. 7
    if axioms == "A":
        w_s = 1 - np.sqrt(((p - e_t) ** 2).mean(axis=1))  # eq. 8
    else:
        w_s = np.sqrt(((p - e_s[:, None]) ** 2).mean(axis=1))  # eq. 9
    np.testing.assert_allclose(result.topics.weight, w_t / w_t.sum(), atol=1e-10)
    np.testing.assert_allclose(result.systems.weight, w_s / w_s.sum(), atol=1e-10)
    np.testing.assert_allclose(e_s, p @ (w_t / w_t.sum()), atol=1e-10)  # eq. 1
    np.testing.assert_allclose(e_t, (w_s / w_s.sum()) @ p, atol=1e-10)  # eq. 2
    assert np.corrcoef(e_s, p.mean(axis=1))[0, 1] > 0.95  # close to MAP, as in Table 2


def test_gawm_stack_equals_one_by_one():
    stack = np.stack([_unit_scores(seed).to_numpy() for seed in range(3)])
    together = gawm_arrays(stack, "A", "geometric", "harmonic")
    for k in range(3):
        alone = gawm_arrays(stack[k], "A", "geometric", "harmonic")
        np.testing.assert_allclose(together.system_score[k], alone.system_score, atol=1e-8)
        np.testing.assert_allclose(together.topic_weight[k], alone.topic_weight, atol=1e-8)


def test_max_iter_is_reported():
    result = gawm(_unit_scores(), axioms="A", tol=0.0, max_iter=3)
    assert result.iterations == 3 and not result.converged


def _power_iteration(matrix: np.ndarray, steps: int = 5000) -> tuple[np.ndarray, np.ndarray]:
    """Plain HITS: a ← Nᵀ h, h ← N a, normalised, from all-ones vectors."""
    hub = np.ones(matrix.shape[0])
    for _ in range(steps):
        authority = matrix.T @ hub
        authority /= np.linalg.norm(authority)
        hub = matrix @ authority
        hub /= np.linalg.norm(hub)
    return hub, authority


def test_hits_matches_power_iteration_on_the_bipartite_graph():
    scores = _unit_scores(seed=3)
    p = scores.to_numpy()
    m, n = p.shape
    adjacency = np.zeros((m + n, m + n))  # nodes: systems then topics
    adjacency[:m, m:] = p - p.mean(axis=1, keepdims=True)  # system → topic
    adjacency[m:, :m] = (p - p.mean(axis=0, keepdims=True)).T  # topic → system
    systems, topics = hits(scores)
    # The bipartite iteration splits into two chains; iterate each on its own block.
    system_hub, topic_authority = _power_iteration(adjacency[:m, m:])
    topic_hub, system_authority = _power_iteration(adjacency[m:, :m])
    for ours, reference in (
        (systems.hub, system_hub),
        (topics.authority, topic_authority),
        (topics.hub, topic_hub),
        (systems.authority, system_authority),
    ):
        assert abs(np.dot(ours, reference)) == pytest.approx(1.0, abs=1e-8)
    assert np.corrcoef(systems.authority, p.mean(axis=1))[0, 1] > 0.9
    assert np.corrcoef(topics.authority, p.mean(axis=0))[0, 1] > 0.9


def test_p_better_is_a_probability_matrix():
    scores = _unit_scores()
    probability = p_better(scores)
    np.testing.assert_allclose(probability + probability.T, 1.0)
    np.testing.assert_allclose(np.diag(probability), 0.5)
    p = scores.to_numpy()
    z = (p[7].mean() - p[0].mean()) / np.sqrt(p[7].var() + p[0].var())
    assert probability.loc["S7", "S0"] == pytest.approx(sps.norm.cdf(z))
    weights = gawm(scores).topics.weight
    assert p_better(scores, weights).loc["S7", "S0"] > 0.5


def test_correlations_table():
    scores = _unit_scores()
    table = correlations(scores, gawm(scores))
    assert list(table.index) == ["MAP~E_s", "MAP~A(s)", "AAP~E_t", "AAP~A(t)", "MAP~W_s", "AAP~W_t"]
    assert table["MAP~E_s"] > 0.95 and table["AAP~E_t"] > 0.95


def test_kendall_tau_b_matches_scipy():
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 4, size=(30, 9)), rng.integers(0, 4, size=(30, 9))
    expected = [sps.kendalltau(a, b).statistic for a, b in zip(x, y, strict=True)]
    np.testing.assert_allclose(kendall_tau_b(x, y), expected)


def test_leave_one_topic_out_equals_a_loop():
    scores = _unit_scores(topics=10)
    table = leave_one_topic_out(scores, axioms="B")
    p = scores.to_numpy()
    for j, row in table.iterrows():
        rest = scores.drop(columns=scores.columns[j])
        e_s = gawm(rest, axioms="B").systems.score
        assert row.tau_gawm == pytest.approx(sps.kendalltau(e_s, p[:, j]).statistic)
        assert row.tau_mean == pytest.approx(sps.kendalltau(rest.mean(axis=1), p[:, j]).statistic)


def test_input_errors():
    with pytest.raises(InputError, match=r"scores in \[0, 1\]"):
        gawm(_unit_scores() * 100)
    with pytest.raises(InputError, match="unknown mean"):
        gawm(_unit_scores(), system_mean="median")
    with pytest.raises(InputError, match="unknown axioms"):
        gawm(_unit_scores(), axioms="C")
