"""The machine prior inside the adaptive stopping rule (a Pólya urn per pair)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from crowdprefs.campaign.adaptive import StoppingRule, decide, policy
from crowdprefs.campaign.aggregate import AggregationRule, verdicts
from crowdprefs.errors import InputError
from crowdprefs.machine import stopping
from crowdprefs.machine.stopping import decide_with_prior

RULES = [
    StoppingRule("curtail"),
    StoppingRule("curtail", epsilon=0.1),
    StoppingRule("curtail", epsilon=0.2, prior=0.3, initial=2, maximum=12),
    StoppingRule("curtail", epsilon=0.05, prior=0.5, aggregation=AggregationRule("margin")),
    StoppingRule("sequential"),
    StoppingRule("sequential", initial=2, maximum=8, futility=0.3, prior=0.5),
]


def cube(rule: StoppingRule) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every state with at most ``maximum + 2`` answers (those beyond the cube included)."""
    m, e, q = (a.ravel() for a in np.indices((rule.maximum + 3,) * 3))
    keep = m + e + q <= rule.maximum + 2
    return m[keep], e[keep], q[keep]


@pytest.mark.parametrize("rule", RULES)
def test_the_rule_prior_for_every_pair_is_decide(rule: StoppingRule) -> None:
    m, e, q = cube(rule)
    expected = decide(m, e, q, rule)
    got = decide_with_prior(m, e, q, np.full((m.size, 3), rule.prior), rule)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])


def test_exact_curtailment_ignores_any_prior() -> None:
    rule = StoppingRule("curtail")
    m, e, q = cube(rule)
    pseudo = np.random.default_rng(0).uniform(0.01, 50, size=(m.size, 3))
    expected = decide(m, e, q, rule)
    got = decide_with_prior(m, e, q, pseudo, rule)
    np.testing.assert_array_equal(got[0], expected[0])
    np.testing.assert_array_equal(got[1], expected[1])


def dirichlet_multinomial_chances(state, pseudo, rule: StoppingRule) -> np.ndarray:
    """P(final verdict more, equal, less) by summing the Dirichlet-multinomial over completions."""
    final = policy(rule).table
    left = rule.maximum - sum(state)
    alpha = np.asarray(state) + pseudo
    out = np.zeros(3)
    for i in range(left + 1):
        for j in range(left + 1 - i):
            k = np.array([i, j, left - i - j])
            log_p = (
                special.gammaln(left + 1)
                - special.gammaln(k + 1).sum()
                + special.gammaln(alpha.sum())
                - special.gammaln(alpha.sum() + left)
                + (special.gammaln(alpha + k) - special.gammaln(alpha)).sum()
            )
            verdict = final[tuple(np.asarray(state) + k)]
            out[1 - verdict] += np.exp(log_p)
    return out


def test_the_walk_back_is_the_dirichlet_multinomial_predictive() -> None:
    rule = StoppingRule("curtail", epsilon=0.1)
    table = policy(rule).table
    layers = np.stack([table == v for v in (1, 0, -1)]).astype(float)
    rng = np.random.default_rng(1)
    states = np.array([[0, 0, 0], [2, 1, 0], [1, 3, 2], [0, 0, 9], [4, 4, 1]])
    pseudo = rng.uniform(0.2, 8, size=(len(states), 3))
    chance = stopping._walk_back(layers, None, states, pseudo)
    for i, state in enumerate(states):
        expected = dirichlet_multinomial_chances(state, pseudo[i], rule)
        np.testing.assert_allclose(chance[:, i], expected, rtol=1e-10, atol=1e-14)


def test_chunks_do_not_change_the_decisions(monkeypatch: pytest.MonkeyPatch) -> None:
    rule = StoppingRule("sequential")
    m, e, q = cube(rule)
    pseudo = np.random.default_rng(2).uniform(0.1, 20, size=(m.size, 3))
    whole = decide_with_prior(m, e, q, pseudo, rule)
    monkeypatch.setattr(stopping, "CHUNK", 7)
    pieces = decide_with_prior(m, e, q, pseudo, rule)
    np.testing.assert_array_equal(whole[0], pieces[0])
    np.testing.assert_array_equal(whole[1], pieces[1])


def test_sequential_keeps_its_boundary_and_moves_its_futility() -> None:
    rule = StoppingRule("sequential")
    m, e, q = cube(rule)
    early = m + e + q < rule.maximum
    m, e, q = m[early], e[early], q[early]
    table = policy(rule).table[m, e, q]
    crossed = np.isin(table, (1, -1))
    uniform = decide(m, e, q, rule)[0]
    say_equal = decide_with_prior(m, e, q, np.tile([0.5, 30.0, 0.5], (m.size, 1)), rule)
    say_different = decide_with_prior(m, e, q, np.tile([50.0, 1.0, 50.0], (m.size, 1)), rule)
    for decided, verdict in (say_equal, say_different):
        assert decided[crossed].all()
        np.testing.assert_array_equal(verdict[crossed], table[crossed])
        assert (verdict[~crossed] == 0).all()
    free = ~crossed
    assert say_equal[0][free].sum() > uniform[free].sum() > say_different[0][free].sum()


def simulate(rule: StoppingRule, shares: np.ndarray, pseudo: np.ndarray, answers: np.ndarray):
    """Answers used and verdicts of a campaign looking at ``rule.looks`` with ``pseudo``."""
    used = np.full(len(shares), rule.maximum)
    verdict = np.zeros(len(shares), dtype=np.int8)
    done = np.zeros(len(shares), dtype=bool)
    for look in rule.looks:
        counts = [(answers[:, :look] == j).sum(axis=1) for j in range(3)]
        decided, value = decide_with_prior(*counts, pseudo, rule)
        new = decided & ~done
        used[new], verdict[new] = look, value[new]
        done |= decided
    return used, verdict


def test_a_strong_correct_prior_curtails_earlier() -> None:
    rule = StoppingRule("curtail", epsilon=0.1)
    rng = np.random.default_rng(3)
    shares = rng.dirichlet([1.0, 1.0, 1.0], size=3000)
    answers = (rng.random((3000, rule.maximum, 1)) > np.cumsum(shares, 1)[:, None, :2]).sum(2)
    fixed = verdicts(*[(answers == j).sum(axis=1) for j in range(3)], rule.aggregation)[0]
    used_flat, verdict_flat = simulate(rule, shares, np.full((3000, 3), rule.prior), answers)
    used_prior, verdict_prior = simulate(rule, shares, 20 * shares, answers)
    assert used_prior.mean() < used_flat.mean() - 0.5
    assert (verdict_prior == fixed).mean() > 0.95
    assert (verdict_flat == fixed).mean() > 0.95


def test_bad_pseudo_answers_are_refused() -> None:
    rule = StoppingRule("curtail")
    with pytest.raises(InputError):
        decide_with_prior([1, 2], [0, 0], [0, 1], np.ones((3, 3)), rule)
    with pytest.raises(InputError):
        decide_with_prior([1, 2], [0, 0], [0, 1], np.zeros((2, 3)), rule)
    with pytest.raises(InputError):
        decide_with_prior([-1, 2], [0, 0], [0, 1], np.ones((2, 3)), rule)
