"""Aggregation: p-values identical to scipy, the margin rule, seed 002's inter-agreement."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.stats import mannwhitneyu

from crowdprefs.campaign.aggregate import (
    AggregationRule,
    count_answers,
    inter_agreement,
    mann_whitney,
    pair_verdicts,
    verdicts,
)
from crowdprefs.errors import InputError


def random_counts(rng, pairs, max_n=15):
    n = rng.integers(1, max_n + 1, pairs)
    shares = rng.dirichlet([1, 1, 1], pairs)
    return np.array([rng.multinomial(k, s) for k, s in zip(n, shares, strict=True)])


@pytest.mark.parametrize("method", ["asymptotic", "exact", "auto"])
@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("continuity", [True, False])
def test_matches_scipy_on_random_samples(method, alternative, continuity):
    rng = np.random.default_rng(hash((method, alternative, continuity)) % 2**32)
    counts = random_counts(rng, 150)
    u, p = mann_whitney(*counts.T, alternative=alternative, method=method, continuity=continuity)
    for (more, equal, less), u_i, p_i in zip(counts, u, p, strict=True):
        x = np.repeat([1, 0, -1], [more, equal, less])
        ref = mannwhitneyu(x, -x, alternative=alternative, method=method, use_continuity=continuity)
        assert u_i == ref.statistic
        assert p_i == pytest.approx(ref.pvalue, rel=1e-12, abs=1e-15, nan_ok=True)


def test_vectorised_over_a_million_pairs_without_loops():
    rng = np.random.default_rng(1)
    counts = rng.multinomial(10, [0.3, 0.5, 0.2], size=1_000_000)
    verdict, p = verdicts(*counts.T)
    assert verdict.shape == (1_000_000,) and np.isfinite(p).all()


def test_verdict_directions_and_levels():
    v, p = verdicts([3, 2, 0, 0], [7, 8, 10, 7], [0, 0, 0, 3])
    assert v.tolist() == [1, 0, 0, -1]
    assert p[0] == pytest.approx(0.019249987667581427)
    strict, _ = verdicts([3], [7], [0], AggregationRule(alpha=0.01))
    assert strict.tolist() == [0]
    one_sided, _ = verdicts([2], [8], [0], AggregationRule(sided="one-sided"))
    assert one_sided.tolist() == [1]  # p = 0.029 one-sided


def test_all_equal_answers_give_equal_with_p_one():
    v, p = verdicts([0], [10], [0])
    assert v.tolist() == [0] and p.tolist() == [1.0]


def test_margin_rule():
    rule = AggregationRule(rule="margin", margin=2)
    v, p = verdicts([5, 4, 3, 1, 0], [4, 5, 7, 8, 8], [1, 1, 0, 1, 2], rule)
    assert v.tolist() == [1, 1, 1, 0, -1]
    assert np.isnan(p).all()


def test_rule_validation():
    with pytest.raises(InputError, match=r"\[aggregation\] rule must be one of"):
        AggregationRule(rule="majority")
    with pytest.raises(InputError, match="alpha"):
        AggregationRule(alpha=1.5)
    with pytest.raises(
        InputError,
        match=r"\[aggregation\] ties must be one of 'davidson', 'rao-kupper', got 'ties'",
    ):
        AggregationRule(rule="bradley-terry", ties="ties")
    assert AggregationRule(rule="bradley-terry", ties="rao-kupper").ties == "rao-kupper"


def test_the_bradley_terry_rule_needs_the_answers_not_the_counts():
    with pytest.raises(InputError, match="every answer of its query"):
        verdicts([5], [0], [0], AggregationRule(rule="bradley-terry"))


def answer_rows(pair_id, iteration, x, y, scores, kind="sort", a_is_x=1):
    return [
        {
            "pair_id": pair_id, "iteration": iteration, "query": "q", "x": x, "y": y,
            "kind": kind, "pivot_known": kind == "sort", "status": "submitted",
            "choice": "A" if score == 1 else "equal" if score == 0 else "B",
            "score": score, "worker_id": f"w{k}", "a_is_x": a_is_x,
        }
        for k, score in enumerate(scores)
    ]  # fmt: skip


def three_candidates(checks: bool = True) -> pd.DataFrame:
    """Iteration 1: a beats the pivot c 8–0, c beats b 8–0 (one "equal" each); iteration 2:
    a beats b 2–0; an attention check q vs c answered for q 9–1."""
    rows = (
        answer_rows(1, 1, "a", "c", [1] * 8 + [0])
        + answer_rows(2, 1, "b", "c", [-1] * 8 + [0], a_is_x=0)
        + answer_rows(3, 2, "a", "b", [1, 1])
    )
    if checks:
        rows += answer_rows(4, 1, "q", "c", [1] * 9 + [-1], kind="check")
    return pd.DataFrame(rows)


@pytest.mark.parametrize("ties", ["davidson", "rao-kupper"])
def test_the_bradley_terry_rule_borrows_from_every_answer_of_the_query_so_far(ties):
    answers = three_candidates()
    mann_whitney_pairs = pair_verdicts(answers)
    assert mann_whitney_pairs["verdict"].to_dict() == {1: 1, 2: -1, 3: 0, 4: 1}  # 2–0: equal
    rule = AggregationRule(rule="bradley-terry", ties=ties)
    pairs = pair_verdicts(answers, rule)
    # a > c > b from iteration 1 decides a vs b though its own two answers cannot
    assert pairs["verdict"].to_dict() == {1: 1, 2: -1, 3: 1, 4: 1}
    assert pairs.loc[3, "p_value"] < 0.05 < mann_whitney_pairs.loc[3, "p_value"]
    # iteration 1 was decided from iteration 1's answers alone
    alone = pair_verdicts(answers[answers["iteration"] == 1], rule)
    assert np.allclose(pairs.loc[[1, 2], "p_value"], alone.loc[[1, 2], "p_value"])
    # the check is decided by the Mann-Whitney test of its own answers and stays out of the fit
    assert pairs.loc[4, "p_value"] == mann_whitney_pairs.loc[4, "p_value"]
    without = pair_verdicts(three_candidates(checks=False), rule)
    assert np.allclose(pairs.loc[[1, 2, 3], "p_value"], without["p_value"])


def test_inter_agreement_of_seed_002():
    # 10 answers all agreeing: 45 pairs × 2 points / 90.
    assert inter_agreement(10, 0, 0) == 1.0
    assert inter_agreement(0, 10, 0) == 1.0
    # 5 for A against 5 for B: only the 2 × C(5,2) = 20 agreeing pairs score: 40/90.
    assert inter_agreement(5, 0, 5) == pytest.approx(40 / 90)
    # 5 "equal" and 5 for A: 40 points of agreement + 25 partial.
    assert inter_agreement(5, 5, 0) == pytest.approx(65 / 90)
    # 3 A, 4 equal, 3 B: agree 2·(3+6+3) = 24, partial 4·6 = 24.
    assert inter_agreement(3, 4, 3) == pytest.approx(48 / 90)
    assert np.isnan(inter_agreement(1, 0, 0))


def test_count_answers():
    answers = pd.DataFrame({"pair_id": [1, 1, 1, 2, 2], "score": [1, 0, 1, -1, -1]})
    counts = count_answers(answers)
    assert counts.loc[1].tolist() == [2, 1, 0]
    assert counts.loc[2].tolist() == [0, 0, 2]
    with pytest.raises(InputError, match="scores"):
        count_answers(pd.DataFrame({"pair_id": [1], "score": [2]}))
