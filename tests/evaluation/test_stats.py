"""Tests of crowdprefs.evaluation.stats: pairwise tests, the scores reader."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import scikit_posthocs as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from crowdprefs.errors import InputError
from crowdprefs.evaluation.stats import (
    friedman,
    friedman_tukey,
    friedman_tukey_decisions,
    pairwise_pvalues,
    pairwise_tests,
    read_scores,
    sign_test,
    wilcoxon_signed_rank,
)


def _matrix(seed: int = 0, systems: int = 5, queries: int = 30, ties: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(systems, queries)) + 0.3 * np.arange(systems)[:, None]
    if ties:
        values = np.round(values, 0)
    return pd.DataFrame(
        values,
        index=[f"S{i}" for i in range(systems)],
        columns=[f"q{j}" for j in range(queries)],
    )


def _scipy_reference(x: np.ndarray, y: np.ndarray, test: str, alternative: str):
    if test == "wilcoxon":
        d = x - y
        nonzero = np.abs(d[d != 0])
        untied = len(np.unique(nonzero)) == len(d)
        method = "exact" if untied and len(d) <= 50 else "asymptotic"
        result = sps.wilcoxon(d, alternative=alternative, method=method, correction=False)
        r_plus = sps.rankdata(nonzero)[d[d != 0] > 0].sum()
        return r_plus, result.pvalue
    elif test == "t":
        result = sps.ttest_rel(x, y, alternative=alternative)
    elif test == "mann-whitney":
        result = sps.mannwhitneyu(x, y, alternative=alternative)
    else:
        d = x - y
        k, n = int((d > 0).sum()), int((d != 0).sum())
        return k, sps.binomtest(k, n, 0.5, alternative=alternative).pvalue
    return result.statistic, result.pvalue


@pytest.mark.parametrize("test", ["wilcoxon", "t", "sign", "mann-whitney"])
@pytest.mark.parametrize("one_sided", [False, True])
@pytest.mark.parametrize("ties", [False, True])
def test_pairwise_matches_scipy_pair_by_pair(test, one_sided, ties):
    scores = _matrix(seed=3, ties=ties)
    result = pairwise_tests(scores, test=test, one_sided=one_sided, alpha=0.05)
    assert len(result) == 10
    for row in result.itertuples():
        x, y = scores.loc[row.system_a].to_numpy(), scores.loc[row.system_b].to_numpy()
        assert row.difference == pytest.approx(x.mean() - y.mean())
        alternative = "two-sided"
        if one_sided:
            alternative = "greater" if row.difference >= 0 else "less"
        statistic, p = _scipy_reference(x, y, test, alternative)
        assert row.statistic == pytest.approx(statistic)
        assert row.p == pytest.approx(p)
        assert row.significant == (p < 0.05)


def test_pairwise_pairs_in_index_order():
    scores = _matrix(systems=4)
    result = pairwise_tests(scores)
    assert list(zip(result.system_a, result.system_b, strict=True)) == [
        ("S0", "S1"), ("S0", "S2"), ("S0", "S3"), ("S1", "S2"), ("S1", "S3"), ("S2", "S3")
    ]  # fmt: skip
    assert list(result.columns) == [
        "system_a", "system_b", "difference", "statistic", "p", "significant"
    ]  # fmt: skip


def test_one_sided_is_half_of_two_sided_for_t():
    scores = _matrix(seed=7)
    two = pairwise_tests(scores, test="t")
    one = pairwise_tests(scores, test="t", one_sided=True)
    np.testing.assert_allclose(one.p, two.p / 2)


@pytest.mark.parametrize("correction", ["holm", "bonferroni", "fdr_bh"])
def test_correction_matches_statsmodels(correction):
    scores = _matrix(seed=11, systems=6)
    raw = pairwise_tests(scores, test="wilcoxon", alpha=0.01)
    corrected = pairwise_tests(scores, test="wilcoxon", alpha=0.01, correction=correction)
    reject, adjusted, _, _ = multipletests(raw.p, alpha=0.01, method=correction)
    np.testing.assert_allclose(corrected.p, adjusted)
    np.testing.assert_array_equal(corrected.significant, reject)


def test_identical_systems_are_not_significant():
    scores = _matrix(systems=3)
    scores.loc["S1"] = scores.loc["S0"]
    result = pairwise_tests(scores, test="wilcoxon")
    row = result[(result.system_a == "S0") & (result.system_b == "S1")].iloc[0]
    assert row.p == 1.0 and not row.significant and row.difference == 0


def test_sign_test_matches_binomtest():
    d = np.array([[1, 2, -1, 0, 3, 4, 1, -2], [0, 0, 0, 0, 0, 0, 0, 0], [-1] * 8])
    k, p_greater, p_less = sign_test(d)
    assert p_greater[1] == p_less[1] == 1.0
    for row in (0, 2):
        n = int((d[row] != 0).sum())
        for alternative, p in (("greater", p_greater), ("less", p_less)):
            reference = sps.binomtest(int(k[row]), n, 0.5, alternative=alternative).pvalue
            assert p[row] == pytest.approx(reference)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda m: m.iloc[:1], "at least 2 systems"),
        (lambda m: m.assign(q3=np.nan), "no score for system 'S0' on query 'q3'"),
    ],
)
def test_invalid_scores_raise_input_error(change, message):
    with pytest.raises(InputError, match=message):
        pairwise_tests(change(_matrix()))


def test_unknown_test_and_correction():
    with pytest.raises(InputError, match="unknown test"):
        pairwise_tests(_matrix(), test="anova")
    with pytest.raises(InputError, match="unknown correction"):
        pairwise_tests(_matrix(), correction="nope")


def test_read_scores_long_wide_json(tmp_path):
    scores = _matrix(systems=3, queries=4)
    long = scores.rename_axis(index="system", columns="query").stack().rename("score")
    long = long.reset_index().assign(measure="AG@5")
    both = pd.concat([long, long.assign(measure="nDCG@5", score=long.score / 10)])
    both[["system", "query", "measure", "score"]].to_csv(tmp_path / "s.csv", index=False)
    matrices = read_scores(tmp_path / "s.csv")
    assert list(matrices) == ["AG@5", "nDCG@5"]
    pd.testing.assert_frame_equal(matrices["AG@5"], scores, check_names=False)
    pd.testing.assert_frame_equal(matrices["nDCG@5"], scores / 10, check_names=False)

    (tmp_path / "s.json").write_text(json.dumps(both.to_dict(orient="records")))
    pd.testing.assert_frame_equal(read_scores(tmp_path / "s.json")["AG@5"], matrices["AG@5"])
    evaluate_json = {"scores": both.to_dict(orient="records"), "summary": []}
    (tmp_path / "e.json").write_text(json.dumps(evaluate_json))  # crowdprefs evaluate --format json
    pd.testing.assert_frame_equal(read_scores(tmp_path / "e.json")["nDCG@5"], matrices["nDCG@5"])

    scores.rename_axis("system").to_csv(tmp_path / "ag5.csv")
    wide = read_scores(tmp_path / "ag5.csv")
    assert list(wide) == ["ag5"]
    pd.testing.assert_frame_equal(wide["ag5"], scores, check_names=False)


def test_read_scores_errors(tmp_path):
    with pytest.raises(InputError, match="no such scores file"):
        read_scores(tmp_path / "missing.csv")
    (tmp_path / "dup.csv").write_text("system,query,measure,score\nA,q,m,1\nA,q,m,2\n")
    with pytest.raises(InputError, match="more than once"):
        read_scores(tmp_path / "dup.csv")
    (tmp_path / "bad.csv").write_text("system,q1,q2\nA,1,x\nB,2,3\n")
    with pytest.raises(InputError, match="line 2: score 'x' is not a number"):
        read_scores(tmp_path / "bad.csv")
    (tmp_path / "hole.csv").write_text("system,query,measure,score\nA,q1,m,1\nB,q2,m,2\n")
    with pytest.raises(InputError, match="no score for system"):
        read_scores(tmp_path / "hole.csv")


@settings(max_examples=60, deadline=None)
@given(
    arrays(
        np.float64,
        st.tuples(st.integers(1, 6), st.integers(1, 60)),
        elements=st.sampled_from([-3.0, -2.0, -1.5, -1.0, 0.0, 0.5, 1.0, 2.0, 2.5, 4.0]),
    )
    | arrays(
        np.float64,
        st.tuples(st.integers(1, 6), st.integers(1, 60)),
        elements=st.floats(-10, 10, allow_nan=False).filter(lambda v: abs(v) > 1e-3),
        unique=True,
    )
)
def test_wilcoxon_rows_match_scipy(d):
    """Row by row equal to scipy with the exact/asymptotic choice made for that row."""
    t_plus, p_greater, p_less = wilcoxon_signed_rank(d)
    for row, values in enumerate(d):
        if not (values != 0).any():
            assert p_greater[row] == p_less[row] == 1.0
            continue
        for alternative, p in (("greater", p_greater), ("less", p_less)):
            statistic, reference = _scipy_reference(
                values, np.zeros_like(values), "wilcoxon", alternative
            )
            assert t_plus[row] == pytest.approx(statistic)
            assert p[row] == pytest.approx(reference, rel=1e-9, abs=1e-12)


def test_wilcoxon_exact_table_matches_scipy_distribution():
    rng = np.random.default_rng(5)
    d = rng.normal(size=(40, 20))
    _, p_greater, _ = wilcoxon_signed_rank(d)
    reference = sps.wilcoxon(d, axis=1, alternative="greater", method="exact").pvalue
    np.testing.assert_allclose(p_greater, reference, rtol=1e-12)


def test_friedman_matches_scipy():
    for ties in (False, True):
        scores = _matrix(seed=2, systems=6, queries=25, ties=ties)
        result = friedman(scores)
        reference = sps.friedmanchisquare(*scores.to_numpy())
        assert result.statistic == pytest.approx(reference.statistic)
        assert result.p == pytest.approx(reference.pvalue)
        assert result.mean_ranks.mean() == pytest.approx(3.5)
    assert friedman(_matrix(systems=4)).sigma2 == pytest.approx(4 * 5 / 12)  # no ties


def test_friedman_tukey_matches_scikit_posthocs_nemenyi():
    scores = _matrix(seed=4, systems=7, queries=40)
    result = friedman_tukey(scores, alpha=0.05)
    reference = sp.posthoc_nemenyi_friedman(scores.T.to_numpy())
    expected = [reference.iloc[a, b] for a, b in zip(*np.triu_indices(7, 1), strict=True)]
    np.testing.assert_allclose(result.p, expected, rtol=1e-6)
    np.testing.assert_array_equal(result.significant, result.p < 0.05)
    means = scores.to_numpy().mean(axis=1)
    assert result.difference.iloc[0] == pytest.approx(means[0] - means[1])


def test_friedman_tukey_all_tied_is_never_significant():
    scores = pd.DataFrame(np.ones((3, 5)), index=list("abc"))
    result = friedman_tukey(scores)
    assert not result.significant.any()
    assert friedman(scores).statistic == 0.0


def test_a_scores_file_without_query_columns_is_one_clear_error(tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text("garbage\nvalue\n")
    with pytest.raises(InputError, match="one column per query"):
        read_scores(path)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_identical_systems_rarely_significant(seed):
    """Under H0 (exchangeable systems) FT keeps its experiment-wide level α, and Wilcoxon
    rejects about α of the pairs. Fixed seeds: a level is a rate, so any tolerance is crossed
    by some seed; with 600 experiments ±0.02 is over four standard errors (0.0043)."""
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(600, 5, 30))  # 600 experiments, 5 identical systems
    _, _, significant = friedman_tukey_decisions(values, alpha=0.05)
    assert significant.any(axis=1).mean() < 0.05 + 0.05
    _, _, p = pairwise_pvalues(values, "wilcoxon")
    assert abs((p < 0.05).mean() - 0.05) < 0.02
