"""Measures: the seeds' worked examples, cross-checks with ir_measures, MIREX 2011 data."""

from __future__ import annotations

import ir_measures
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdprefs import io
from crowdprefs.errors import InputError
from crowdprefs.evaluation import measures as M


def one_run(documents, system="s", query="q"):
    documents = list(documents)
    return pd.DataFrame(
        {
            "system": system,
            "query": query,
            "document": [str(d) for d in documents],
            "rank": np.arange(1, len(documents) + 1),
        }
    )


def binary_truth(relevant, all_documents, query="q"):
    return pd.DataFrame(
        {
            "query": query,
            "document": [str(d) for d in all_documents],
            "gain": [1.0 if d in relevant else 0.0 for d in all_documents],
        }
    )


def scores(runs, truth, names, k=None):
    table = M.score(runs, truth, names, k=k)
    return dict(zip(table["measure"], table["score"], strict=True))


# --------------------------------------------------------------------------- seed 003


def test_seed_003_toy_example():
    """Seed 003, toy example: K = 10, relevant {2, 7, 8, 9}; BEP 0.75, F_max 0.75, AP 0.8125."""
    similarity = np.array([8, 52, 22, 10, 12, 34, 11, 27, 72, 18])
    ranked = np.argsort(-similarity) + 1
    runs = one_run(ranked)
    truth = binary_truth({2, 7, 8, 9}, range(1, 11))
    curve = M.pr_curve(M.judge(runs, truth))
    np.testing.assert_allclose(
        curve["precision"].round(2), [1, 1, 0.67, 0.75, 0.6, 0.5, 0.43, 0.5, 0.44, 0.4]
    )
    np.testing.assert_allclose(curve["recall"], [0.25, 0.5, 0.5, 0.75, 0.75, 0.75, 0.75, 1, 1, 1])
    f = [scores(runs, truth, [f"F@{r}"])[f"F@{r}"] for r in range(1, 11)]
    np.testing.assert_allclose(
        np.round(f, 2), [0.4, 0.67, 0.57, 0.75, 0.67, 0.6, 0.55, 0.67, 0.62, 0.57]
    )
    got = scores(runs, truth, ["BEP", "Fmax", "AP", "P@3", "R@3"])
    assert got["BEP"] == pytest.approx(0.75)
    assert got["Fmax"] == pytest.approx(0.75)
    assert got["AP"] == pytest.approx(0.8125)
    assert got["P@3"] == pytest.approx(2 / 3)
    assert got["R@3"] == pytest.approx(2 / 4)
    # swapping χ(8) and χ(9) leaves BEP and F_max, lowers AP to (1 + 1 + 0.75 + 4/9) / 4
    swapped = ranked.copy()
    swapped[[7, 8]] = swapped[[8, 7]]
    got = scores(one_run(swapped), truth, ["BEP", "Fmax", "AP"])
    assert (got["BEP"], got["Fmax"]) == pytest.approx((0.75, 0.75))
    assert got["AP"] == pytest.approx((1 + 1 + 0.75 + 4 / 9) / 4)


def test_seed_003_exercise_7_12():
    """Seed 003, Exercise 7.12: K = 8, relevant {2, 3, 4, 8}; BEP 0.50, F_max 0.80, AP 0.60833."""
    similarity = np.array([0.7, 2.6, 3.6, 3.5, 3.2, 3.7, 1.5, 3.1])
    runs = one_run(np.argsort(-similarity) + 1)
    truth = binary_truth({2, 3, 4, 8}, range(1, 9))
    got = scores(runs, truth, ["BEP", "Fmax", "AP"])
    assert got["BEP"] == pytest.approx(0.50)
    assert got["Fmax"] == pytest.approx(0.80)
    assert round(got["AP"], 5) == 0.60833


# --------------------------------------------------------------------------- seed 002 / 001


def test_seed_002_adr_example():
    """Seed 002 §5.4: truth L1 = <(A,B,C),(D,E)>; L2 read as <A,B,D,E,C> -> 0.933; L3 -> 1."""
    truth = pd.DataFrame({"query": "q", "document": list("ABCDE"), "group": [1, 1, 1, 2, 2]})
    assert scores(one_run("ABDEC"), truth, ["ADR"])["ADR"] == pytest.approx(14 / 15)
    assert round(scores(one_run("ABDEC"), truth, ["ADR"])["ADR"], 3) == 0.933
    assert scores(one_run("ABCDE"), truth, ["ADR"])["ADR"] == 1
    assert scores(one_run("BACED"), truth, ["ADR"])["ADR"] == 1


def adr_by_definition(ranked, truth_gains, k):
    """Seed 001 eqs. (5)-(6) written literally, for one query."""
    ideal = sorted(truth_gains, key=lambda d: -truth_gains[d])
    k = min(k, len(ideal))
    total = 0.0
    for i in range(1, k + 1):
        allowed = set(ideal[:i]) | {
            d for d in ideal[i:] if truth_gains[d] == truth_gains[ideal[i - 1]]
        }
        total += len(allowed & set(ranked[:i])) / i
    return total / k


@settings(max_examples=60, deadline=None)
@given(
    gains=st.lists(st.integers(0, 3), min_size=1, max_size=9),
    extra=st.integers(0, 3),
    k=st.integers(1, 12),
    seed=st.integers(0, 2**16),
)
def test_adr_equals_its_definition(gains, extra, k, seed):
    rng = np.random.default_rng(seed)
    truth_gains = {f"d{i}": float(g) for i, g in enumerate(gains)}
    pool = list(truth_gains) + [f"u{i}" for i in range(extra)]
    ranked = list(rng.permutation(pool)[: rng.integers(1, len(pool) + 1)])
    truth = pd.DataFrame(
        {"query": "q", "document": list(truth_gains), "gain": list(truth_gains.values())}
    )
    got = scores(one_run(ranked), truth, [f"ADR@{k}"])[f"ADR@{k}"]
    assert got == pytest.approx(adr_by_definition(ranked, truth_gains, k))


def test_ag_and_seed_001_ndcg_by_hand():
    truth = pd.DataFrame({"query": "q", "document": list("abcd"), "gain": [3.0, 2.0, 1.0, 0.0]})
    runs = one_run("dcxa")  # gains 0, 1, 0 (unjudged), 3
    got = scores(runs, truth, ["AG@5", "nDCG@4", "nDCG(b=3)@4", "ANDCG@2"])
    assert got["AG@5"] == pytest.approx(4 / 5)
    dcg = 0 + 1 / np.log2(2) + 0 + 3 / np.log2(4)
    idcg = 3 + 2 / np.log2(2) + 1 / np.log2(3) + 0
    assert got["nDCG@4"] == pytest.approx(dcg / idcg)
    dcg3 = 0 + 1 + 0 + 3 / (np.log(4) / np.log(3))  # ranks 1, 2 < b = 3: undiscounted
    idcg3 = 3 + 2 + 1 / 1 + 0
    assert got["nDCG(b=3)@4"] == pytest.approx(dcg3 / idcg3)
    assert got["ANDCG@2"] == pytest.approx((0 / 3 + 1 / 5) / 2)


# --------------------------------------------------------------------------- ir_measures


def random_collection(seed, n_systems=4, n_queries=12, depth=15):
    rng = np.random.default_rng(seed)
    truth, runs = [], []
    for q in range(n_queries):
        pool = [f"d{i}" for i in range(rng.integers(3, 25))]
        judged = rng.choice(pool, size=rng.integers(1, len(pool) + 1), replace=False)
        truth += [(f"q{q}", d, float(rng.integers(0, 4))) for d in judged]
        for s in range(n_systems):
            ranked = rng.permutation(pool)[: rng.integers(1, min(depth, len(pool)) + 1)]
            runs += [(f"s{s}", f"q{q}", d, r + 1) for r, d in enumerate(ranked)]
    return (
        pd.DataFrame(runs, columns=io.RUN_COLUMNS),
        pd.DataFrame(truth, columns=io.LEVEL_COLUMNS),
    )


CROSS = {
    "P@5": "P@5",
    "P(rel=2)@10": "P(rel=2)@10",
    "R@5": "R@5",
    "R@10": "R@10",
    "AP": "AP",
    "AP@5": "AP@5",
    "AP(rel=2)": "AP(rel=2)",
    "BEP": "Rprec",
    "nDCG_trec@5": "nDCG@5",
    "nDCG_trec@20": "nDCG@20",
}


@pytest.mark.parametrize("seed", range(5))
def test_cross_check_with_ir_measures(seed):
    runs, truth = random_collection(seed)
    ours = M.score(runs, truth, list(CROSS)).set_index(["measure", "system", "query"])["score"]
    qrels = truth.rename(columns={"query": "query_id", "document": "doc_id", "gain": "relevance"})
    qrels["relevance"] = qrels["relevance"].astype(int)
    for system, run in runs.groupby("system"):
        trec_run = pd.DataFrame(
            {"query_id": run["query"], "doc_id": run["document"], "score": -run["rank"] * 1.0}
        )
        theirs = ir_measures.iter_calc(
            [ir_measures.parse_measure(m) for m in CROSS.values()], qrels, trec_run
        )
        back = {v: k for k, v in CROSS.items()}
        n = 0
        for metric in theirs:
            mine = ours[(back[str(metric.measure)], system, metric.query_id)]
            assert mine == pytest.approx(metric.value, abs=1e-9), (str(metric.measure), system)
            n += 1
        assert n == len(CROSS) * run["query"].nunique()


def test_interpolated_precision_matches_ir_measures():
    """At every recall level 0, 0.01, ..., 1: trec_eval counts ⌊x·R + 0.9⌋ relevant documents
    for level x (0.51 with R = 7 needs 4, not R(r) ≥ 0.51)."""
    runs, truth = random_collection(7, n_queries=30, depth=25)
    levels = [round(0.01 * i, 2) for i in range(101)]
    data = M.judge(runs, truth)
    ours = M.interpolated_precision(data, levels)
    qrels = truth.rename(columns={"query": "query_id", "document": "doc_id", "gain": "relevance"})
    qrels["relevance"] = qrels["relevance"].astype(int)
    run = runs.rename(columns={"query": "query_id", "document": "doc_id"})
    for s, system in enumerate(data.systems):
        part = run[run["system"] == system].assign(score=lambda f: -f["rank"] * 1.0)
        measures = [ir_measures.IPrec @ x for x in levels]
        for metric in ir_measures.iter_calc(measures, qrels, part[["query_id", "doc_id", "score"]]):
            q = int(np.flatnonzero(data.queries == metric.query_id)[0])
            assert ours[s, q, levels.index(metric.measure["recall"])] == pytest.approx(metric.value)
    # levels computed in floating point count as the decimals they denote (0.7000000000000001
    # × 3 relevant + 0.9 would need 3 documents at level 0.7, trec_eval's 0.7 needs 2)
    assert np.array_equal(
        M.interpolated_precision(data, np.linspace(0, 1, 11)),
        M.interpolated_precision(data, np.arange(11) / 10),
    )


# --------------------------------------------------------------------------- conventions


def test_missing_results_score_zero_and_unknown_queries_are_ignored():
    truth = pd.DataFrame({"query": ["q1", "q2"], "document": ["a", "b"], "gain": [1.0, 1.0]})
    runs = pd.concat([one_run("a", "s", "q1"), one_run("b", "t", "q2"), one_run("z", "t", "q9")])
    table = M.score(runs, truth, ["AG@1", "ADR"])
    assert table["query"].unique().tolist() == ["q1", "q2"]
    got = table.set_index(["measure", "system", "query"])["score"]
    assert got[("AG@1", "s", "q2")] == 0 and got[("AG@1", "t", "q2")] == 1
    assert M.validate(runs, truth).ignored == 1


@pytest.mark.parametrize(
    ("runs", "truth", "message"),
    [
        (one_run("aa"), None, r"document 'a' is listed twice"),
        (one_run("ab").assign(rank=1), None, r"rank 1 is repeated"),
        (one_run("")[["system"]], None, r"runs lack column"),
        (one_run(""), None, r"the runs are empty"),
        (one_run("a"), pd.DataFrame({"query": ["q"], "document": ["a"], "gain": [-1.0]}), ">= 0"),
        (one_run("a", query="x"), None, "no run has a result"),
    ],
)
def test_validation_errors(runs, truth, message):
    truth = (
        pd.DataFrame({"query": ["q"], "document": ["a"], "gain": [1.0]}) if truth is None else truth
    )
    with pytest.raises(InputError, match=message):
        M.score(runs, truth, ["AG@5"])


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("AG@5", "AG@5"),
        ("nDCG(b=2)@5", "nDCG@5"),
        ("nDCG(b=3)@10", "nDCG(b=3)@10"),
        ("ADR", "ADR"),
        ("P(rel=50)@5", "P(rel=50)@5"),
        ("BEP", "BEP"),
    ],
)
def test_parse_measure(text, canonical):
    assert str(M.parse_measure(text)) == canonical


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("XYZ@5", "unknown measure"),
        ("AG", "needs a cutoff"),
        ("BEP@5", "takes no cutoff"),
        ("nDCG(c=1)@5", "unknown parameter"),
        ("nDCG(b=1)@5", "base b"),
        ("AG@0", "at least 1"),
    ],
)
def test_parse_measure_errors(text, message):
    with pytest.raises(InputError, match=message):
        M.parse_measure(text)


def test_default_cutoff():
    assert str(M.parse_measure("AG", k=5)) == "AG@5"
    assert str(M.parse_measure("ADR", k=5)) == "ADR"


# --------------------------------------------------------------------------- MIREX 2011


def test_mirex2011_ag5_is_the_mean_judged_gain_of_the_top_5(mirex2011):
    runs = io.read_runs(mirex2011 / "runs.txt")
    truth = io.read_levels(mirex2011 / "judgments.txt")
    ag = M.score(runs, truth, ["AG@5"]).groupby("system")["score"].mean()
    top5 = runs[runs["rank"] <= 5].merge(truth, on=["query", "document"], how="left")
    assert top5["gain"].notna().all()  # every top-5 document was judged
    expected = top5.groupby(["system", "query"])["gain"].sum().groupby("system").mean() / 5
    pd.testing.assert_series_equal(ag, expected, check_names=False)
    assert len(ag) == 18


@settings(max_examples=40, deadline=None)
@given(
    gains=st.lists(st.integers(0, 3), min_size=1, max_size=12),
    k=st.integers(1, 15),
    seed=st.integers(0, 2**16),
)
def test_ideal_ranking_scores_one_and_any_ranking_stays_in_0_1(gains, k, seed):
    truth = pd.DataFrame(
        {"query": "q", "document": [f"d{i}" for i in range(len(gains))], "gain": gains}
    ).astype({"gain": float})
    ideal = truth.sort_values("gain", ascending=False, kind="stable")["document"]
    names = [f"nDCG@{k}", f"nDCG_trec@{k}", f"ANDCG@{k}", f"ADR@{k}", "ADR", "AP", "BEP", "Fmax"]
    normalised = scores(one_run(ideal), truth, names)
    has_relevant = max(gains) >= 1
    for name, value in normalised.items():
        expected = 1.0 if has_relevant or name.startswith("ADR") else 0.0
        assert value == pytest.approx(expected), name
    shuffled = np.random.default_rng(seed).permutation(list(ideal) + ["u1", "u2"])
    got = scores(one_run(shuffled), truth, [*names, f"P@{k}", f"R@{k}", f"F@{k}"])
    assert all(0 <= v <= 1 + 1e-12 for v in got.values())


@pytest.mark.parametrize("measure", ["MTC", "mtc@5", "AG@5,MTC"])
def test_evaluate_with_mtc_points_to_the_mtc_commands(tmp_path, measure):
    """Minimal Test Collections are a procedure, not a measure of evaluate: asking for one
    says where it lives, in one line, before any file is read."""
    from console_script import crowdprefs

    run = crowdprefs("evaluate", "--truth", tmp_path / "t", "--runs", tmp_path / "r", "-m", measure)
    assert run.returncode != 0 and "Traceback" not in run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert "is not a measure" in line and "'crowdprefs mtc'" in line
