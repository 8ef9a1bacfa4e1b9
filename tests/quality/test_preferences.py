"""The library surface for answers without a project: verdicts, lists, agreement, flags."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.errors import InputError
from crowdprefs.exchange import preference_frame
from crowdprefs.quality import preferences as cp
from crowdprefs.quality.crowd_model import CrowdModel
from crowdprefs.quality.flags import flag_quality

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from preference_crowd import all_pairs, crowd_answers, truth_lists  # noqa: E402

# The paper's Table 1: "x < y" reads "x is more similar than y" (verdict +1 for (x, y)).
TABLE_1 = [
    ("C", "F", 1),
    ("D", "F", 1),
    ("E", "F", 1),
    ("A", "F", 1),
    ("G", "F", 0),
    ("B", "F", 1),
    ("C", "B", 0),
    ("D", "B", -1),
    ("E", "B", -1),
    ("A", "B", 0),
    ("C", "A", 0),
    ("D", "E", 0),
]
LABEL = {1: "left", 0: "equal", -1: "right"}


def unanimous(verdicts, workers: int = 5, query: str = "q") -> pd.DataFrame:
    """Every worker answers every pair ``(left, right, verdict)`` the same way."""
    return pd.DataFrame(
        [
            (f"w{k}", query, left, right, LABEL[verdict])
            for left, right, verdict in verdicts
            for k in range(workers)
        ],
        columns=["worker", "query", "left", "right", "label"],
    )


def groups_of(lists: pd.DataFrame, query: str = "q") -> list[set]:
    chosen = lists[lists["query"] == query]
    return [set(frame["document"]) for _, frame in chosen.groupby("group", sort=True)]


PERFECT = CrowdModel(
    workers=20,
    careless_share=0.0,
    bots=0,
    noise=0.05,
    noise_spread=0.0,
    equal_band=0.5,
    equal_spread=0.0,
    position_bias=0.0,
    bias_spread=0.0,
)
TRUTH = truth_lists(
    {
        "q1": [["a", "b"], ["c"], ["d", "e", "f"], ["g"]],
        "q2": [["h"], ["i", "j", "k"], ["l", "m"]],
    }
)


@pytest.mark.parametrize(
    "rule", [AggregationRule(), AggregationRule("margin"), AggregationRule("bradley-terry")]
)
def test_the_papers_table_1_answers_sort_into_its_three_groups(rule):
    lists = cp.sort_lists(unanimous(TABLE_1), rule)
    assert groups_of(lists) == [{"A", "B", "C"}, {"D", "E"}, {"F", "G"}]
    assert list(lists.columns) == ["query", "document", "group"]


def test_verdicts_count_answers_whichever_side_the_pair_was_shown_on():
    answers = pd.DataFrame(
        [
            ("w1", "q", "a", "b", "left"),
            ("w2", "q", "a", "b", "a"),  # crowd-kit's convention: the preferred item
            ("w3", "q", "b", "a", "right"),  # a preferred, shown second
            ("w4", "q", "b", "a", "EQUAL"),
            ("w5", "q", "b", "a", "b"),
        ],
        columns=["worker", "query", "left", "right", "label"],
    )
    pairs = cp.verdicts(answers, AggregationRule("margin", margin=2))
    row = pairs.iloc[0]
    assert (row["left"], row["right"]) == ("a", "b")
    assert (row["more"], row["equal"], row["less"], row["verdict"]) == (3, 1, 1, 1)
    # 2 points for each of the 3 agreeing couples, 1 for each of the 4 equal-vs-side couples,
    # over n(n−1) = 20
    assert row["agreement"] == pytest.approx((3 * 2 + 4 * 1) / 20)
    assert np.isnan(row["p_value"])
    x = np.array([1, 1, 1, 0, -1])
    expected = stats.mannwhitneyu(x, -x, method="asymptotic").pvalue
    assert cp.verdicts(answers).iloc[0]["p_value"] == pytest.approx(expected)


def test_a_perfect_crowd_gives_the_truth_by_sorting_and_by_the_model():
    answers, _ = crowd_answers(TRUTH, all_pairs(TRUTH), answers=5, model=PERFECT)
    expected = {q: groups_of(TRUTH, q) for q in ("q1", "q2")}
    lists = cp.sort_lists(answers, AggregationRule("margin"))
    assert {q: groups_of(lists, q) for q in ("q1", "q2")} == expected
    model = cp.TieBradleyTerry().fit(answers)
    assert {q: groups_of(model.lists_, q) for q in ("q1", "q2")} == expected
    scores = model.fit_predict(answers)
    assert scores.index.names == ["query", "document"]
    assert scores.loc[("q1", "a")] > scores.loc[("q1", "c")] > scores.loc[("q1", "g")]
    assert model.converged_ and model.tie_ > 0
    assert set(model.reliabilities_.index) == set(answers["worker"])
    assert model.noise_.sum(axis=1).to_numpy() == pytest.approx(1.0)


def test_the_bradley_terry_rule_decides_a_pair_from_the_query_s_other_answers():
    # a beats b and b beats c unanimously; a vs c has a single answer
    answers = unanimous([("a", "b", 1), ("b", "c", 1)])
    answers.loc[len(answers)] = ("w0", "q", "c", "a", "right")
    mann_whitney = cp.verdicts(answers).set_index(["left", "right"])
    fitted = cp.verdicts(answers, AggregationRule("bradley-terry")).set_index(["left", "right"])
    assert mann_whitney.loc[("c", "a"), "verdict"] == 0
    assert fitted.loc[("c", "a"), "verdict"] == -1 and fitted.loc[("c", "a"), "p_value"] < 0.05
    assert fitted["verdict"].tolist() == [1, 1, -1]
    counts = ["more", "equal", "less"]
    assert (fitted[counts] == mann_whitney[counts]).all(axis=None)


def test_sorting_names_the_comparison_the_answers_lack():
    answers = unanimous([("a", "b", 1), ("c", "d", 0)])
    with pytest.raises(InputError, match=r"query 'q': no answer compares '.' with '.'.*Bradley"):
        cp.sort_lists(answers)
    lists = cp.TieBradleyTerry().fit(answers).lists_
    assert set(lists["document"]) == {"a", "b", "c", "d"}


def test_agreement_over_all_answers_and_per_query():
    answers = pd.concat(
        [
            unanimous([("a", "b", 1), ("b", "c", 1)], workers=4, query="q1"),
            pd.DataFrame(
                [("w1", "q2", "x", "y", "left"), ("w2", "q2", "x", "y", "left")]
                + [("w3", "q2", "x", "y", "equal")],
                columns=["worker", "query", "left", "right", "label"],
            ),
        ]
    )
    per_query = cp.agreement(answers, by_query=True)
    assert per_query.loc["q1", "agreement"] == 1.0
    assert per_query.loc["q2", "agreement"] == pytest.approx(4 / 6)
    assert per_query.loc["q1", "pairs"] == 2 and per_query.loc["q2", "answers"] == 3
    overall = cp.agreement(answers)
    assert overall["pairs"] == 3 and overall["answers"] == 11
    assert overall["agreement"] == pytest.approx((1 + 1 + 4 / 6) / 3)
    assert overall["alpha"] < 1 and overall["kappa"] < 1


def test_worker_flags_find_the_planted_robots_and_careless_workers():
    model = CrowdModel(workers=25, bots=2, careless_share=0.15)
    answers, pool = crowd_answers(TRUTH, all_pairs(TRUTH), answers=10, model=model)
    flags = cp.worker_flags(answers)
    assert list(flags.columns) == ["worker", "flag", "evidence"]
    kinds = pd.Series(pool.kind, index=pool.ids)
    bots = set(kinds.index[kinds == "bot"]) & set(answers["worker"])
    assert bots <= set(flags.loc[flags["flag"] == "constant-answer", "worker"])
    assert bots <= set(flags.loc[flags["flag"] == "constant-time", "worker"])
    quality = flag_quality(flags.rename(columns={"worker": "worker_id"}), kinds)
    assert quality["precision"] >= 0.8 and quality["recall"] >= 0.6
    # without work times only the answer rules can fire
    untimed = cp.worker_flags(answers.drop(columns="seconds"))
    assert set(untimed["flag"]) <= {"constant-answer", "low-agreement"}


def test_transitivity_violations_per_query_and_per_worker():
    answers = pd.DataFrame(
        [
            # w1 is transitive: a > b > c and a > c
            ("w1", "q", "a", "b", "left"),
            ("w1", "q", "b", "c", "left"),
            ("w1", "q", "a", "c", "left"),
            # w2 goes round a cycle: a > b, b > c, c > a
            ("w2", "q", "a", "b", "left"),
            ("w2", "q", "b", "c", "left"),
            ("w2", "q", "a", "c", "right"),
            # w3: a = b, b = c but a > c (weak preferences count too)
            ("w3", "q", "a", "b", "equal"),
            ("w3", "q", "b", "c", "equal"),
            ("w3", "q", "a", "c", "left"),
            # w4 answered too little to close a triple
            ("w4", "q", "a", "b", "left"),
        ],
        columns=["worker", "query", "left", "right", "label"],
    )
    workers = cp.transitivity_violations(answers, by="worker")
    assert workers["triples"].to_dict() == {"w1": 1, "w2": 1, "w3": 1, "w4": 0}
    assert workers["violations"].to_dict() == {"w1": 0, "w2": 1, "w3": 1, "w4": 0}
    assert workers.loc["w2", "rate"] == 1.0 and np.isnan(workers.loc["w4", "rate"])
    # margin-2 verdicts: a > b (3–0), b > c (2–0), but a = c (2–1): not transitive
    queries = cp.transitivity_violations(answers, rule=AggregationRule("margin", margin=2))
    assert queries.loc["q"].to_dict() == {"triples": 1, "violations": 1, "rate": 1.0}
    consistent = cp.transitivity_violations(unanimous(TABLE_1))
    assert consistent.loc["q", "violations"] == 0 and consistent.loc["q", "triples"] > 0


def test_the_audit_answers_frame_round_trips():
    answers, _ = crowd_answers(TRUTH, all_pairs(TRUTH), answers=3, model=PERFECT)
    frame = cp.to_answers_frame(answers)
    assert frame["pair_id"].nunique() == len(all_pairs(TRUTH))
    back = cp.from_answers_frame(frame)
    pd.testing.assert_frame_equal(
        back.reset_index(drop=True), preference_frame(answers).reset_index(drop=True)
    )
    rejected = frame.assign(status=np.where(np.arange(len(frame)) < 5, "rejected", "submitted"))
    assert len(cp.from_answers_frame(rejected)) == len(frame) - 5


def test_bad_answers_end_in_one_line_naming_the_row_and_column():
    good = unanimous([("a", "b", 1)], workers=2)
    with pytest.raises(InputError, match="lack column.*label"):
        cp.verdicts(good.drop(columns="label"))
    with pytest.raises(InputError, match=r"row 1: label 'better' is neither"):
        cp.verdicts(good.assign(label=["left", "better"]))
    with pytest.raises(InputError, match=r"row 0: column 'worker' is empty"):
        cp.verdicts(good.assign(worker=[None, "w"]))
    with pytest.raises(InputError, match=r"row 1: left and right are the same item 'a'"):
        cp.verdicts(good.assign(right=["b", "a"]))
    with pytest.raises(InputError, match=r"row 0: column 'seconds' holds -3"):
        cp.worker_flags(good.assign(seconds=[-3, 4]))
    with pytest.raises(InputError, match="must be a pandas DataFrame"):
        cp.verdicts([("w", "q", "a", "b", "left")])
    with pytest.raises(InputError, match="by must be"):
        cp.transitivity_violations(good, by="pair")
    # without a query column, every row is one query
    assert cp.verdicts(good.drop(columns="query"))["query"].tolist() == ["query"]
