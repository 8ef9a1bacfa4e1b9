"""Library side of `crowdprefs evaluate` and `compare-lists`: summaries, tests, lists."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from crowdprefs import io
from crowdprefs.errors import InputError
from crowdprefs.evaluation import evaluate as E
from crowdprefs.evaluation import measures as M
from crowdprefs.evaluation.stats import pairwise_tests


def collection(seed=0, n_systems=5, n_queries=20, depth=10):
    rng = np.random.default_rng(seed)
    truth, runs = [], []
    for q in range(n_queries):
        pool = [f"d{i}" for i in range(30)]
        truth += [(f"q{q}", d, float(rng.integers(0, 4))) for d in pool[:20]]
        for s in range(n_systems):
            # better systems (lower s) put judged, high-gain documents first more often
            ranked = sorted(pool, key=lambda d, s=s: rng.normal() + (s + 1) * 0.1 * int(d[1:]))
            runs += [(f"s{s}", f"q{q}", d, r + 1) for r, d in enumerate(ranked[:depth])]
    return (
        pd.DataFrame(runs, columns=io.RUN_COLUMNS),
        pd.DataFrame(truth, columns=io.LEVEL_COLUMNS),
    )


def test_summary_intervals_and_ranks_match_scipy():
    runs, truth = collection()
    result = E.evaluate(runs, truth, ["AG@5", "ADR@5"], test=None, confidence=0.9)
    assert result.tests.empty
    assert list(result.summary.columns) == E.SUMMARY_COLUMNS
    assert result.summary["measure"].unique().tolist() == ["AG@5", "ADR@5"]
    for row in result.summary.itertuples():
        values = E.matrix(result.scores, row.measure).loc[row.system].to_numpy()
        low, high = sps.t.interval(0.9, len(values) - 1, values.mean(), sps.sem(values))
        assert (row.mean, row.ci_low, row.ci_high, row.n) == pytest.approx(
            (values.mean(), low, high, 20)
        )
    ag = result.summary[result.summary["measure"] == "AG@5"]
    assert ag["rank"].tolist() == list(range(1, 6))
    assert ag["mean"].is_monotonic_decreasing


def test_pairwise_tests_are_those_of_stats_for_each_measure():
    runs, truth = collection(1)
    result = E.evaluate(runs, truth, ["nDCG@5", "AP"], test="t", one_sided=True, alpha=0.01)
    for measure in ("nDCG@5", "AP"):
        expected = pairwise_tests(E.matrix(result.scores, measure), "t", 0.01, True)
        got = result.tests[result.tests["measure"] == measure].drop(columns="measure")
        pd.testing.assert_frame_equal(got.reset_index(drop=True), expected.reset_index(drop=True))


def test_single_system_has_no_tests_and_a_point_interval_with_one_query():
    runs, truth = collection(2, n_systems=1, n_queries=1)
    result = E.evaluate(runs, truth, ["AG@5"])
    assert result.tests.empty
    row = result.summary.iloc[0]
    assert row["ci_low"] == row["mean"] == row["ci_high"]


def test_pr_curves_are_the_mean_interpolated_precision():
    runs, truth = collection(3)
    curves = E.pr_curves(runs, truth)
    data = M.judge(runs, truth)
    expected = M.interpolated_precision(data, E.RECALL_LEVELS).mean(axis=1)
    np.testing.assert_allclose(curves["precision"].to_numpy().reshape(expected.shape), expected)
    assert (curves.groupby("system")["precision"].diff().dropna() <= 1e-12).all()


def test_plot_writes_a_png(tmp_path):
    runs, truth = collection(4)
    result = E.evaluate(runs, truth, ["AG@5", "nDCG@5"], test=None)
    out = tmp_path / "fig.png"
    E.plot(result.summary, out, E.pr_curves(runs, truth))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fig.png"]


# --------------------------------------------------------------------------- comparing lists

L1 = pd.DataFrame({"query": "q", "document": list("ABCDE"), "group": [1, 1, 1, 2, 2]})
L2 = pd.DataFrame({"query": "q", "document": list("ABDEC"), "group": [1, 1, 2, 2, 2]})


def test_compare_lists_reproduces_seed_002_example():
    """Seed 002 §5.4: with L1 as truth, L2's group (D,E,C) gives 0.933 unless C comes first: 1."""
    table = E.compare_lists(L1, L2, permutations=3000, seed=1, names=("L1", "L2"))
    forward = table.iloc[0]
    assert (forward["truth"], forward["results"]) == ("L1", "L2")
    assert forward["min"] == pytest.approx(14 / 15)
    assert forward["max"] == pytest.approx(1.0)
    assert forward["mean"] == pytest.approx(14 / 15 + 1 / 15 / 3, abs=0.01)
    backward = table.iloc[1]
    # L1 read with C first: A_1 = {A, B} misses C (0), then 1/2, then all allowed -> 0.7
    assert backward["min"] == pytest.approx(0.7)
    assert backward["max"] == 1.0


def test_compare_lists_of_identical_lists_is_one_and_seed_changes_nothing_without_ties():
    strict = pd.DataFrame(
        {"query": ["q"] * 3 + ["r"] * 2, "document": list("abcab"), "group": [1, 2, 3, 1, 2]}
    )
    table = E.compare_lists(strict, strict, permutations=5, seed=None)
    assert (table[["min", "mean", "max"]].to_numpy() == 1).all()
    assert table["queries"].tolist() == [2, 2]
    with pytest.raises(InputError, match="at least 1"):
        E.compare_lists(strict, strict, permutations=0)


@settings(max_examples=30, deadline=None)
@given(groups=st.lists(st.integers(1, 4), min_size=1, max_size=12), seed=st.integers(0, 99))
def test_shuffled_runs_keep_group_order(groups, seed):
    lists = pd.DataFrame(
        {"query": "q", "document": [f"d{i}" for i in range(len(groups))], "group": groups}
    )
    runs = E.shuffled_runs(lists, permutations=4, seed=seed)
    group_of = dict(zip(lists["document"], lists["group"], strict=True))
    for _, run in runs.groupby("system"):
        assert run["rank"].tolist() == list(range(1, len(groups) + 1))
        assert sorted(run["document"]) == sorted(lists["document"])
        assert run["document"].map(group_of).is_monotonic_increasing
