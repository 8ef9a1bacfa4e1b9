"""Adaptive answers per pair: curtailment, the group-sequential rule, and the driver hook."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from crowdprefs.campaign import driver
from crowdprefs.campaign.adaptive import (
    StoppingRule,
    answers_wanted,
    decide,
    nominal_level,
    operating,
    policy,
)
from crowdprefs.campaign.aggregate import AggregationRule, verdicts
from crowdprefs.crowds import get_crowd
from crowdprefs.demo import create_demo_project
from crowdprefs.errors import BudgetError, InputError
from crowdprefs.quality.crowd_model import CrowdModel, WorkerPool, simulate_answers

SMALL = StoppingRule(method="sequential", initial=3, step=1, maximum=8, alpha=0.1)


def _completions(remaining: int):
    for more in range(remaining + 1):
        for equal in range(remaining - more + 1):
            yield more, equal, remaining - more - equal


@pytest.mark.parametrize(
    "aggregation",
    [AggregationRule(), AggregationRule(rule="margin", margin=2)],
    ids=["mann-whitney", "margin-2"],
)
def test_curtailment_decides_only_what_no_remaining_answers_can_change(aggregation):
    rule = StoppingRule(method="curtail", initial=1, step=1, maximum=7, aggregation=aggregation)
    for m, e, q in itertools.product(range(8), repeat=3):
        n = m + e + q
        if n == 0 or n > 7:
            continue
        finals = {
            int(verdicts([m + a], [e + b], [q + c], aggregation)[0][0])
            for a, b, c in _completions(7 - n)
        }
        decided, verdict = decide([m], [e], [q], rule)
        assert bool(decided[0]) == (len(finals) == 1), (m, e, q, finals)
        if decided[0]:
            assert finals == {int(verdict[0])}


def _dirichlet_multinomial(counts, remaining, prior):
    """Probability of each completion (a, b, c) of ``remaining`` answers under the Pólya urn."""
    from scipy import special

    n = sum(counts)
    out = {}
    for a, b, c in _completions(remaining):
        log_p = (
            special.gammaln(remaining + 1)
            - sum(special.gammaln(k + 1) for k in (a, b, c))
            + special.gammaln(n + 3 * prior)
            - special.gammaln(n + remaining + 3 * prior)
            + sum(
                special.gammaln(k + d + prior) - special.gammaln(k + prior)
                for k, d in zip(counts, (a, b, c), strict=True)
            )
        )
        out[(a, b, c)] = float(np.exp(log_p))
    return out


@pytest.mark.parametrize("epsilon", [0.05, 0.15, 0.3])
def test_predictive_curtailment_stops_once_the_final_verdict_is_likely_enough(epsilon):
    """A state is decided exactly when one final verdict of the rule (margin 2 after 7 answers)
    has Pólya-urn predictive probability ≥ 1 − ε, and then gets that verdict."""
    aggregation = AggregationRule(rule="margin", margin=2)
    rule = StoppingRule(
        method="curtail", initial=1, step=1, maximum=7, epsilon=epsilon, aggregation=aggregation
    )
    for m, e, q in itertools.product(range(7), repeat=3):
        n = m + e + q
        if n == 0 or n >= 7:
            continue
        chance = {1: 0.0, 0: 0.0, -1: 0.0}
        for (a, b, c), p in _dirichlet_multinomial((m, e, q), 7 - n, rule.prior).items():
            chance[int(verdicts([m + a], [e + b], [q + c], aggregation)[0][0])] += p
        best = max(chance, key=chance.get)
        decided, verdict = decide([m], [e], [q], rule)
        likely = chance[best] >= 1 - epsilon + 1e-9
        assert bool(decided[0]) == likely or abs(chance[best] - (1 - epsilon)) < 1e-9, (m, e, q)
        if decided[0]:
            assert int(verdict[0]) == best


def test_larger_epsilon_stops_earlier_and_epsilon_is_checked():
    expected = []
    for epsilon in (0.0, 0.1, 0.3):
        rule = StoppingRule(method="curtail", initial=2, step=1, maximum=10, epsilon=epsilon)
        expected.append(operating(rule, 0.2, 0.6, 0.2).answers)
    assert expected[0] > expected[1] > expected[2]
    with pytest.raises(InputError, match="epsilon"):
        StoppingRule(method="curtail", epsilon=0.5)
    rule = StoppingRule.from_section({"method": "curtail", "epsilon": 0.15}, 10, AggregationRule())
    assert rule.epsilon == 0.15


def test_curtailed_campaign_gives_the_fixed_verdicts_with_fewer_answers():
    rng = np.random.default_rng(5)
    shares = rng.dirichlet([1, 2, 1], 400)
    sequences = np.stack([rng.choice([1, 0, -1], 10, p=p) for p in shares])
    fixed = verdicts(*[(sequences == s).sum(1) for s in (1, 0, -1)])[0]
    rule = StoppingRule(method="curtail", initial=4, step=1, maximum=10)
    used = np.full(len(sequences), 10)
    got = np.zeros(len(sequences), dtype=int)
    for look in rule.looks[::-1]:
        head = sequences[:, :look]
        decided, verdict = decide(*[(head == s).sum(1) for s in (1, 0, -1)], rule)
        used = np.where(decided, look, used)
        got = np.where(decided, verdict, got)
    np.testing.assert_array_equal(got, fixed)
    assert used.mean() < 10


def test_fixed_design_operating_matches_the_multinomial_sum():
    rule = StoppingRule(method="curtail", initial=10, maximum=10)
    shares = (0.3, 0.5, 0.2)
    expected = np.zeros(3)
    for m, e, q in _completions(10):
        v = int(verdicts([m], [e], [q])[0][0])
        expected[1 - v] += stats.multinomial.pmf([m, e, q], 10, shares)
    got = operating(rule, *shares)
    np.testing.assert_allclose([got.more, got.equal, got.less], expected, atol=1e-12)
    assert got.answers == pytest.approx(10) and got.rounds == pytest.approx(1)


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.2])
def test_sequential_false_different_rate_is_at_most_alpha_for_every_equal_share(alpha):
    rule = dataclasses.replace(SMALL, alpha=alpha)
    level, worst = nominal_level(rule)
    assert 0 < level < 1 and worst <= alpha
    for p_equal in np.linspace(0.5, 0.99, 15):
        side = (1 - p_equal) / 2
        result = operating(rule, side, p_equal, side)
        assert result.more + result.less <= alpha + 1e-12
        assert result.more == pytest.approx(result.less)


def test_equal_share_zero_bounds_the_rate_without_ties_too():
    rule = dataclasses.replace(SMALL, equal_share=0.0)
    assert operating(rule, 0.5, 0.0, 0.5).more * 2 <= rule.alpha + 1e-12


def test_operating_agrees_with_monte_carlo():
    rng = np.random.default_rng(11)
    shares = (0.35, 0.5, 0.15)
    sequences = rng.choice([1, 0, -1], (20_000, SMALL.maximum), p=shares)
    verdict = np.full(len(sequences), 9)
    used = np.zeros(len(sequences))
    for look in SMALL.looks:
        head = sequences[:, :look]
        decided, v = decide(*[(head == s).sum(1) for s in (1, 0, -1)], SMALL)
        new = decided & (verdict == 9)
        verdict[new], used[new] = v[new], look
    exact = operating(SMALL, *shares)
    assert (verdict == 1).mean() == pytest.approx(exact.more, abs=0.012)
    assert (verdict == 0).mean() == pytest.approx(exact.equal, abs=0.012)
    assert used.mean() == pytest.approx(exact.answers, abs=0.05)


def test_stated_error_rate_holds_with_the_simulated_crowd():
    """Truly equal pairs answered by the core simulated crowd (position bias, careless workers
    and bots included): measured false "different" verdicts stay within the stated rate."""
    rule = StoppingRule(initial=4, step=2, maximum=12, alpha=0.1)
    model = CrowdModel()
    n = 6000
    pairs = pd.DataFrame(
        {
            "pair_id": np.arange(n),
            "query": "q",
            "x": np.where(np.arange(n) % 2, "a", "b"),
            "y": np.where(np.arange(n) % 2, "b", "a"),
            "a_is_x": np.arange(n) // 2 % 2,
            "answers_wanted": rule.maximum,
        }
    )
    answers = simulate_answers(
        pairs, {("q", "a"): -1.0, ("q", "b"): -1.0}, WorkerPool.draw(model, 3), model, seed=3
    )
    order = answers["assignment_id"].str.rsplit("-", n=1).str[1].astype(int)
    score = np.zeros((n, rule.maximum), dtype=int)
    score[answers["pair_id"], order] = answers["score"]
    verdict = np.full(n, 9)
    for look in rule.looks:
        head = score[:, :look]
        decided, v = decide(*[(head == s).sum(1) for s in (1, 0, -1)], rule)
        new = decided & (verdict == 9)
        verdict[new] = v[new]
    false_different = (verdict != 0).mean()
    assert false_different <= rule.alpha


def test_answers_wanted_follows_the_schedule():
    rule = StoppingRule(method="curtail", initial=4, step=3, maximum=10)
    wanted = answers_wanted([0, 8, 0, 2, 5], [0, 0, 4, 2, 5], [0, 0, 0, 0, 0], rule)
    # nothing yet -> initial; 8-0-0 decided stays; 0-4-0 undecided -> +3; 2-2-0 -> +3; 10 -> done
    assert wanted.tolist() == [4, 8, 7, 7, 10]


def test_a_step_that_overshoots_the_maximum_stops_at_it():
    """Steps of 4 from 3 up to 9: looks at 3, 7 and 9, never 11."""
    rule = StoppingRule(method="curtail", initial=3, step=4, maximum=9)
    assert rule.looks == (3, 7, 9)
    undecided = np.zeros(4, dtype=bool)
    wanted = answers_wanted([0, 2, 4, 5], [0, 1, 3, 4], [0, 0, 0, 0], rule, undecided)
    assert wanted.tolist() == [3, 7, 9, 9]  # none yet; 3 -> 7; 7 -> 9 (not 11); 9 stays


def test_decision_table_is_decided_at_the_maximum():
    table = policy(SMALL).table
    m, e, q = np.indices(table.shape)
    assert (table[m + e + q == SMALL.maximum] != 2).all()
    decided, _ = decide([9], [3], [0], SMALL)  # beyond the maximum: still decided
    assert decided.all()


def test_from_section():
    agg = AggregationRule()
    assert StoppingRule.from_section({}, 10, agg) is None
    assert StoppingRule.from_section({"method": "off"}, 10, agg) is None
    rule = StoppingRule.from_section({"method": "curtail"}, 8, agg)
    assert rule.maximum == 8 and rule.initial == 4 and rule.method == "curtail"
    with pytest.raises(InputError, match="unknown"):
        StoppingRule.from_section({"method": "sequential", "speed": 3}, 10, agg)
    with pytest.raises(InputError, match=r"\[adaptive\] method"):
        StoppingRule.from_section({"method": "bayes"}, 10, agg)
    with pytest.raises(InputError, match="initial"):
        StoppingRule.from_section({"method": "curtail", "initial": 12}, 10, agg)


def _adaptive_project(tmp_path, section):
    project = create_demo_project(tmp_path / "demo")
    settings = project.settings
    project.save_settings(
        dataclasses.replace(settings, sections={**settings.sections, "adaptive": section})
    )
    return project


def test_driver_collects_until_every_pair_is_decided(tmp_path):
    section = {"method": "sequential", "initial": 4, "step": 2, "maximum": 10, "alpha": 0.1}
    with _adaptive_project(tmp_path, section) as project:
        rule = driver.stopping_rule(project)
        driver.run(project, get_crowd("simulated", project))
        assert driver.status(project)["totals"]["closed"] == 11
        pairs = project.store.pairs().set_index("pair_id")
        assert set(pairs["answers_wanted"]) <= set(rule.looks)
        assert pairs["answers_wanted"].nunique() > 1
        counts = (
            project.store.answers().pivot_table(
                index="pair_id", columns="score", aggfunc="size", fill_value=0
            )
        ).reindex(pairs.index, fill_value=0)
        assert (counts.sum(axis=1) == pairs["answers_wanted"]).all()
        decided, verdict = decide(counts[1], counts[0], counts[-1], rule)
        assert decided.all()
        np.testing.assert_array_equal(verdict, pairs["verdict"])
        hits = project.store.frame("SELECT pair_id, max_assignments FROM hits")
        assert (hits.set_index("pair_id")["max_assignments"] == pairs["answers_wanted"]).all()
        assert driver.status(project)["totals"]["answers"] < 10 * len(pairs)


def test_driver_fixed_design_is_unchanged_by_default(tmp_path):
    with create_demo_project(tmp_path / "demo") as project:
        assert driver.stopping_rule(project) is None
        driver.run(project, get_crowd("simulated", project), max_iterations=1)
        assert set(project.store.pairs()["answers_wanted"]) == {10}


def test_driver_extension_checks_the_budget(tmp_path):
    section = {"method": "sequential", "initial": 2, "step": 2, "maximum": 10}
    with _adaptive_project(tmp_path, section) as project:
        iteration = driver.next_batch(project)
        pairs = project.store.pairs(iteration)
        initial_cost = len(pairs) * 2 * 0.03
        project.save_settings(dataclasses.replace(project.settings, budget=initial_cost + 0.05))
        crowd = get_crowd("simulated", project)
        driver.publish(project, crowd)
        with pytest.raises(BudgetError, match="budget"):
            driver.collect(project, crowd)
        assert project.store.last_batch()["status"] == "published"


@settings(max_examples=200, deadline=None)
@given(
    counts=st.lists(
        st.tuples(st.integers(0, 12), st.integers(0, 12), st.integers(0, 12)),
        min_size=1,
        max_size=30,
    ),
    method=st.sampled_from(["curtail", "sequential"]),
    epsilon=st.sampled_from([0.0, 0.2]),
)
def test_decisions_and_schedule_are_consistent(counts, method, epsilon):
    """Any counts: a verdict never goes against the lead, decided pairs want no more answers,
    undecided ones want more, never beyond the maximum."""
    rule = StoppingRule(method=method, initial=4, step=2, maximum=10, epsilon=epsilon)
    more, equal, less = (np.array(c) for c in zip(*counts, strict=True))
    decided, verdict = decide(more, equal, less, rule)
    assert (verdict * np.sign(more - less) >= 0).all()
    n = more + equal + less
    wanted = answers_wanted(more, equal, less, rule)
    started = n >= rule.initial
    assert (wanted[started & decided] == n[started & decided]).all()
    grow = started & ~decided
    assert (wanted[grow] > n[grow]).all() and (wanted[grow] <= rule.maximum).all()
    assert decided[n >= rule.maximum].all()
