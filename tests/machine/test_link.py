"""The machine prior's link: normal scores, the ordinal logistic fit and its calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special, stats

from crowdprefs.errors import InputError
from crowdprefs.machine.link import Link, _outcome_probabilities, normal_scores

BETA, GAMMA, THETA = 1.2, 0.3, 0.8


def simulate(n: int, beta: float, gamma: float, theta: float, seed: int, answers: int = 1):
    """Pairs (d, s) and their outcome counts drawn from the link itself."""
    rng = np.random.default_rng(seed)
    d = rng.normal(size=n) * math.sqrt(2)
    s = rng.choice([-1.0, 1.0], size=n)
    p = _outcome_probabilities(beta * d + gamma * s, np.full(n, theta))
    cumulative = np.cumsum(p, axis=1)[:, None, :]
    draws = (rng.random((n, answers))[:, :, None] > cumulative[:, :, :2]).sum(axis=2)
    counts = np.stack([(draws == j).sum(axis=1) for j in range(3)], axis=1)
    return d, s, counts


def test_normal_scores_are_per_query_hazen_quantiles_with_average_ranks() -> None:
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 7, size=400)
    score = rng.integers(0, 15, size=400).astype(float)  # many ties
    z = normal_scores(codes, score)
    for code in np.unique(codes):
        mine = codes == code
        rank = stats.rankdata(score[mine])
        np.testing.assert_allclose(z[mine], special.ndtri((rank - 0.5) / mine.sum()))


def test_normal_scores_ignore_the_model_scale() -> None:
    rng = np.random.default_rng(1)
    codes = np.repeat(np.arange(5), 30)
    score = rng.normal(size=150)
    np.testing.assert_array_equal(
        normal_scores(codes, score), normal_scores(codes, np.exp(3 * score) + 100)
    )
    assert normal_scores(np.array([4]), np.array([2.5]))[0] == 0.0
    assert normal_scores(np.array([], dtype=int), np.array([])).size == 0
    with pytest.raises(InputError):
        normal_scores(codes, np.r_[score[:-1], np.nan])
    with pytest.raises(InputError):
        normal_scores(codes[:-1], score)


def test_fit_recovers_the_parameters_within_their_intervals() -> None:
    d, s, counts = simulate(5000, BETA, GAMMA, THETA, seed=2)
    link = Link.fit(d, s, counts)
    assert link.n == 5000
    sd = np.sqrt(np.diag(link.covariance))
    z = stats.norm.ppf(0.995)
    estimate = np.array([link.beta, link.gamma, math.log(link.theta)])
    truth = np.array([BETA, GAMMA, math.log(THETA)])
    assert (np.abs(estimate - truth) <= z * sd).all(), (estimate, truth, sd)
    low, high = link.slope_interval(0.99)
    assert low < BETA < high
    assert 0 < sd[0] < 0.1


def test_fit_on_answer_counts_equals_the_fit_on_the_same_answers_one_per_row() -> None:
    d, s, counts = simulate(200, BETA, GAMMA, THETA, seed=3, answers=5)
    rows = np.repeat(np.arange(200), 3)
    one_hot = np.zeros((600, 3))
    one_hot[np.arange(600), np.tile(np.arange(3), 200)] = counts.ravel()
    a, b = Link.fit(d, s, counts), Link.fit(d[rows], s[rows], one_hot)
    assert a.beta == pytest.approx(b.beta, abs=1e-7)
    assert a.theta == pytest.approx(b.theta, abs=1e-7)


def test_a_useless_model_earns_no_trust() -> None:
    rng = np.random.default_rng(4)
    d, s, counts = simulate(3000, 0.0, 0.0, 0.5, seed=4)
    d = rng.normal(size=3000) * math.sqrt(2)  # scores unrelated to the outcomes
    link = Link.fit(d, s, counts)
    low, high = link.slope_interval()
    assert low < 0 < high and abs(link.beta) < 0.1
    base = counts.sum(axis=0) / counts.sum()
    p = link.probabilities(np.array([-3.0, -1.0, 0.0, 1.0, 3.0]), 1.0)
    assert np.abs(p - base).max() < 0.06


def test_a_reversed_model_is_learnt_and_stays_calibrated() -> None:
    d, s, counts = simulate(3000, BETA, 0.0, THETA, seed=5)
    link = Link.fit(-d, s, counts)
    assert link.slope_interval()[1] < 0
    p = link.probabilities(-d, s)
    for part in (d > 1, np.abs(d) <= 1, d < -1):
        observed = counts[part].sum(axis=0) / counts[part].sum()
        assert np.abs(p[part].mean(axis=0) - observed).max() < 0.04


def test_degenerate_data_stay_finite() -> None:
    prior = Link.fit(np.zeros(0), 1.0, np.zeros((0, 3)))
    assert (prior.beta, prior.gamma, prior.n) == (0.0, 0.0, 0)
    np.testing.assert_allclose(prior.probabilities([0.0], [0.0], integrate=False), 1 / 3)
    d = np.linspace(-2, 2, 40)
    assert Link.fit(d, 1.0, np.zeros((40, 3))).beta == 0.0  # rows without outcomes
    equal = np.zeros((40, 3))
    equal[:, 1] = 5
    link = Link.fit(d, 1.0, equal)
    assert np.isfinite(link.theta) and abs(link.beta) < 1e-6
    assert link.probabilities([0.0], [1.0])[0, 1] > 0.9
    separated = np.zeros((40, 3))
    separated[d > 0, 0] = 5
    separated[d < 0, 2] = 5
    link = Link.fit(d, 0.0, separated)
    assert 0 < link.beta < 20 and np.isfinite(link.covariance).all()
    assert link.probabilities([1.5], [0.0])[0, 0] > 0.9


def test_integrating_the_posterior_tempers_a_fit_on_little_data() -> None:
    d, s, counts = simulate(15, BETA, GAMMA, THETA, seed=6)
    small = Link.fit(d, s, counts)
    grid = np.array([2.5, 3.0, -3.0])
    integrated = small.probabilities(grid, 0.0).max(axis=1)
    plug_in = small.probabilities(grid, 0.0, integrate=False).max(axis=1)
    assert (integrated < plug_in - 0.01).all()
    d, s, counts = simulate(20000, BETA, GAMMA, THETA, seed=7)
    large = Link.fit(d, s, counts)
    both = large.probabilities(grid, 1.0), large.probabilities(grid, 1.0, integrate=False)
    assert np.abs(both[0] - both[1]).max() < 0.01
    np.testing.assert_allclose(both[0].sum(axis=1), 1.0)


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(InputError):
        Link.fit(np.zeros(3), 1.0, np.zeros((2, 3)))
    with pytest.raises(InputError):
        Link.fit(np.zeros(2), 1.0, -np.ones((2, 3)))
    with pytest.raises(InputError):
        Link.prior().probabilities([np.inf], 1.0)
    with pytest.raises(InputError):
        Link.prior().slope_interval(1.5)
