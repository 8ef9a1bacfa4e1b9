"""Straight-lining and repeated-pair consistency: pure checks of a worker's own answers."""

from __future__ import annotations

import json
from itertools import groupby

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdprefs.errors import InputError
from crowdprefs.quality import consistency
from crowdprefs.quality.review import ReviewRules, review_flags


def frame(rows) -> pd.DataFrame:
    """Answers ``(worker, choice, score, x, y[, raw])`` of query q, in submission order."""
    columns = ["worker_id", "choice", "score", "x", "y", "raw"]
    data = pd.DataFrame([(*r, None)[:6] for r in rows], columns=columns)
    data["query"] = "q"
    data["submitted_at"] = pd.date_range("2024-01-01", periods=len(data), freq="min", tz="UTC")
    return data


def pressed(button: str) -> str:
    return json.dumps({"fields": {}, "order": {"a": "d1", "b": "d2", "clicked": button}})


def test_a_judge_pressing_a_every_time_is_flagged_even_when_the_stored_choices_vary():
    # Sides are shown in each question's own order, so pressing "A" twelve times lands on both
    # sides of the pairs: stored choices alternate, the presses do not.
    rows = [("w1", "AB"[i % 2], 1 - 2 * (i % 2), "d1", "d2", pressed("A")) for i in range(12)]
    rows += [("w2", "ABequal"[i % 3 : i % 3 + 1] or "A", 0, "d1", "d2") for i in range(12)]
    table = consistency.straight_lining(frame(rows)).set_index("worker_id")
    assert table.loc["w1", "modal"] == "A" and table.loc["w1", "modal_share"] == 1.0
    assert table.loc["w1", "longest_run"] == 12 and bool(table.loc["w1", "flagged"])
    assert not table.loc["w2", "flagged"]


def test_a_long_run_is_flagged_but_not_a_worker_with_few_answers():
    run = [("w1", "equal", 0, "d1", "d2")] * 10 + [("w1", c, 1, "d1", "d2") for c in "ABABAB"]
    few = [("w2", "A", 1, "d1", "d2")] * 5
    table = consistency.straight_lining(frame(run + few)).set_index("worker_id")
    assert table.loc["w1", "longest_run"] == 10 and table.loc["w1", "modal_share"] < 0.9
    assert bool(table.loc["w1", "flagged"])
    assert table.loc["w2", "modal_share"] == 1 and not table.loc["w2", "flagged"]


def test_runs_follow_submission_time_not_row_order():
    rows = frame([("w1", c, 0, "d1", "d2") for c in "AAAABBBB"])
    rows["submitted_at"] = rows["submitted_at"].iloc[[0, 2, 4, 6, 1, 3, 5, 7]].to_numpy()
    table = consistency.straight_lining(rows, min_answers=2)
    assert table["longest_run"].iloc[0] == 1


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from("uvw"), st.sampled_from(["A", "B", "equal"])), max_size=60)
)
def test_the_longest_run_equals_a_plain_loop(answers):
    rows = frame([(w, c, 0, "d1", "d2") for w, c in answers])
    table = consistency.straight_lining(rows, min_answers=2).set_index("worker_id")
    for worker in {w for w, _ in answers}:
        clicks = [c for w, c in answers if w == worker]
        longest = max(len(list(g)) for _, g in groupby(clicks))
        assert table.loc[worker, "longest_run"] == longest
        assert table.loc[worker, "answers"] == len(clicks)


def test_repeated_pairs_are_matched_in_either_order_and_contradictions_counted():
    rows = [
        # w1 prefers d1 over d2, then (shown as d2 vs d1) d2 over d1: a contradiction.
        ("w1", "A", 1, "d1", "d2"),
        ("w1", "A", 1, "d2", "d1"),
        # w1 prefers d3 over d1 twice, the second time asked the other way round: consistent.
        ("w1", "A", 1, "d3", "d1"),
        ("w1", "B", -1, "d1", "d3"),
        # w2 changes an equal into a preference: changed, not a contradiction.
        ("w2", "equal", 0, "d1", "d2"),
        ("w2", "A", 1, "d2", "d1"),
        ("w2", "A", 1, "d3", "d4"),
    ]
    pairs = consistency.repeated_pairs(frame(rows))
    assert len(pairs) == 3 and set(pairs["answers"]) == {2}
    d1d3 = pairs[(pairs["worker_id"] == "w1") & (pairs["second"] == "d3")].iloc[0]
    assert (d1d3["first"], d1d3["more"], d1d3["less"]) == ("d1", 0, 2)
    table = consistency.repeated_pair_consistency(frame(rows), min_repeated=1, max_rate=0.4)
    table = table.set_index("worker_id")
    assert table.loc["w1", ["repeated", "contradictions", "changed"]].tolist() == [2, 1, 1]
    assert table.loc["w1", "rate"] == 0.5 and bool(table.loc["w1", "flagged"])
    assert table.loc["w2", ["repeated", "contradictions", "changed"]].tolist() == [1, 0, 1]
    assert not table.loc["w2", "flagged"]


def test_workers_without_repeats_or_answers_give_empty_tables():
    rows = frame([("w1", "A", 1, "d1", "d2"), ("w1", "A", 1, "d1", "d3")])
    assert consistency.repeated_pair_consistency(rows).empty
    assert consistency.straight_lining(rows.iloc[:0]).empty
    assert consistency.flags().empty


def test_flags_feed_the_review_rules_as_extra_flags():
    rows = [("w1", "A", 1, "d1", "d2", pressed("A"))] * 12
    rows += [("w2", "A", 1, "d1", "d2"), ("w2", "A", 1, "d2", "d1")] * 2
    answers = frame(rows)
    extra = consistency.flags(
        consistency.straight_lining(answers),
        consistency.repeated_pair_consistency(answers, min_repeated=1),
    )
    assert list(extra.columns) == ["worker_id", "reason"]
    assert extra.set_index("worker_id")["reason"]["w1"].startswith("straight-lining")
    assert extra.set_index("worker_id")["reason"]["w2"].startswith("inconsistent")
    flagged = review_flags(answers.iloc[:0], None, ReviewRules(), extra)  # the review's extra
    assert set(flagged["worker_id"]) == {"w1", "w2"}


@pytest.mark.parametrize(
    "call",
    [
        lambda a: consistency.straight_lining(a, min_answers=1),
        lambda a: consistency.straight_lining(a, max_share=0),
        lambda a: consistency.repeated_pair_consistency(a, max_rate=2),
        lambda a: consistency.repeated_pairs(a.drop(columns="x")),
        lambda a: consistency.straight_lining(a.drop(columns="choice")),
    ],
)
def test_bad_parameters_and_frames_are_refused_in_one_line(call):
    with pytest.raises(InputError):
        call(frame([("w1", "A", 1, "d1", "d2")]))
