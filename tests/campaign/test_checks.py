"""Attention checks mixed into batches, and the review rules that use them."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from mturk_campaign import make_project, run_campaign, start_fake

from crowdprefs.campaign import driver
from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.campaign.checks import CheckSettings
from crowdprefs.crowds.mturk.crowd import MTurkCrowd
from crowdprefs.crowds.simulated import SimulatedCrowd
from crowdprefs.errors import InputError
from crowdprefs.quality.flags import FlagRules, flag_workers
from crowdprefs.quality.review import ReviewRules, failed_checks, review_flags
from crowdprefs.results_file import FRAME_COLUMNS


def test_no_checks_leaves_the_batch_untouched(tmp_path):
    plain = make_project(tmp_path / "plain")
    off = make_project(tmp_path / "off", checks={"share": 0.0})
    driver.next_batch(plain), driver.next_batch(off)
    pd.testing.assert_frame_equal(plain.store.pairs(1), off.store.pairs(1))


def test_checks_are_mixed_in(tmp_path):
    plain = make_project(tmp_path / "plain")
    mixed = make_project(tmp_path / "mixed", checks={"share": 0.25})
    driver.next_batch(plain), driver.next_batch(mixed)
    sort_pairs = plain.store.pairs(1)
    pairs = mixed.store.pairs(1)
    checks = pairs[pairs["kind"] == "check"]
    assert len(checks) == math.ceil(0.25 * len(sort_pairs))
    assert (checks["x"] == checks["query"]).all() and (checks["expected"] == 1).all()
    assert (checks["answers_wanted"] == 5).all()
    assert sorted(pairs["position"]) == list(range(len(pairs)))
    assert set(checks["position"]) != set(range(len(sort_pairs), len(pairs)))  # shuffled in
    key = ["query", "x", "y", "a_is_x"]
    pd.testing.assert_frame_equal(
        pairs.loc[pairs["kind"] == "sort", key].sort_values(key, ignore_index=True),
        sort_pairs[key].sort_values(key, ignore_index=True),
    )
    candidates = mixed.store.candidates()
    for row in checks.itertuples():
        assert ((candidates["query"] == row.query) & (candidates["document"] == row.y)).any()


def test_checks_never_enter_the_sort(tmp_path):
    project = make_project(tmp_path / "c", checks={"share": 0.3})
    crowd = SimulatedCrowd.for_project(project)
    driver.run(project, crowd)
    states = driver.sort_states(project)
    assert all(state.closed for state in states.values())
    pairs = project.store.pairs()
    checks = pairs[pairs["kind"] == "check"]
    assert len(checks) >= driver.status(project)["totals"]["iteration"]
    assert (checks["verdict"] == 1).mean() > 0.8  # the query wins against its own candidates
    lists = driver.lists(project)
    assert not (lists["document"] == lists["query"]).any()


def test_check_settings_are_validated():
    assert CheckSettings(share=0.1, max_per_batch=3).count(100) == 3
    assert CheckSettings(share=0.1).count(7) == 1
    assert CheckSettings().count(1000) == 0
    with pytest.raises(InputError):
        CheckSettings(share=1.5)


def _answers(rows):
    """An answers frame (every column an audit needs): one pair per answer."""
    frame = pd.DataFrame(
        rows, columns=["worker_id", "kind", "expected", "score", "choice", "seconds"]
    )
    n = len(frame)
    frame = frame.assign(
        iteration=pd.array([1] * n, dtype="Int64"),
        pair_id=range(n),
        hit_id=[f"H{i}" for i in range(n)],
        created_at=pd.NaT,
        max_assignments=1.0,
        reward=0.02,
        query="q",
        x=[f"d{i}" for i in range(n)],
        y="p",
        a_is_x=1,
        pivot_known=True,
        assignment_id=[f"A{i}" for i in range(n)],
        status="submitted",
        listen_seconds=float("nan"),
        accepted_at=pd.NaT,
        submitted_at=pd.NaT,
        background="",
        comment="",
    )
    return frame[list(FRAME_COLUMNS)]


def test_failed_checks_tolerate_equal():
    answers = _answers(
        [
            ("w1", "check", 1, 1, "A", 10.0),
            ("w1", "check", 1, 0, "equal", 11.0),
            ("w1", "check", 1, -1, "B", 12.0),
            ("w1", "sort", None, -1, "B", 9.0),
        ]
    )
    assert failed_checks(answers).tolist() == [False, False, True, False]


def test_bots_answer_equal_in_exactly_eight_seconds():
    """Seed 002 §4.2: two workers always answered "Equal" in exactly 8 seconds."""
    rows = [("bot", "sort", None, 0, "equal", 8.0)] * 6
    rows += [("slow", "sort", None, 0, "equal", 8.0 + i) for i in range(6)]
    rows += [("few", "sort", None, 0, "equal", 8.0)] * 4
    rows += [("mixed", "sort", None, 1, c, 8.0) for c in "AB" * 3]
    answers = _answers(rows)
    flags = flag_workers(answers, AggregationRule(), FlagRules(bot_answers=5), select=("bot",))
    assert flags["worker_id"].tolist() == ["bot"]
    assert flags["evidence"].iloc[0] == "6 identical answers in identical time"
    reasons = review_flags(answers, AggregationRule(), ReviewRules(bot_min_answers=5))
    assert reasons.to_dict("records") == [
        {"worker_id": "bot", "reason": "bot: 6 identical answers in identical time", "rule": "bot"}
    ]


def test_check_failers_and_all_flags():
    rows = [("careless", "check", 1, -1, "B", 5.0)] * 2 + [("careless", "check", 1, 1, "A", 5.0)]
    rows += [("once", "check", 1, -1, "B", 5.0)]
    rows += [("good", "check", 1, 1, "A", 5.0)] * 3
    answers = _answers(rows)
    rules = ReviewRules(block=["listed", "careless"])
    failers = flag_workers(
        answers, AggregationRule(), rules.flag_rules(), select=("failed-checks",)
    )
    assert failers[["worker_id", "evidence"]].to_dict("records") == [
        {"worker_id": "careless", "evidence": "failed 2 of 3 attention checks"}
    ]
    extra = pd.DataFrame({"worker_id": ["audit1", "listed"], "reason": ["low agreement", "x"]})
    flags = review_flags(answers, AggregationRule(), rules, extra)
    assert flags.set_index("worker_id")["reason"].to_dict() == {
        "careless": "failed-checks: failed 2 of 3 attention checks",
        "listed": "listed in [review] block",
        "audit1": "low agreement",
    }
    assert flags.set_index("worker_id")["rule"].to_dict() == {
        "careless": "failed-checks",
        "listed": "listed",
        "audit1": "extra",
    }
    with pytest.raises(InputError, match="worker_id, reason"):
        review_flags(answers, AggregationRule(), rules, pd.DataFrame({"worker": ["x"]}))


def test_failed_checks_are_rejected_on_mturk(tmp_path):
    project = make_project(
        tmp_path / "r",
        answers=3,
        checks={"share": 0.5},
        simulated={"truth": "../truth.qrel", "careless_share": 0.5, "bots": 0},
    )
    fake, url = start_fake(project)
    crowd = MTurkCrowd(project, target="fake", endpoint_url=url)
    run_campaign(project, crowd)
    answers = project.store.answers(include_rejected=True)
    failed = answers[failed_checks(answers)]
    assert len(failed) > 0
    assert (failed["status"] == "rejected").all()
    reviews = project.store.reviews().query("decision == 'reject'")
    assert set(failed["assignment_id"]) <= set(reviews["assignment_id"])
    remote = {a["AssignmentId"]: a for h in fake.hits() for a in fake.assignments(h["HITId"])}
    for assignment in failed["assignment_id"]:
        assert remote[assignment]["AssignmentStatus"] == "Rejected"
        assert "control question" in remote[assignment]["RequesterFeedback"]
    fake.stop()
    project.close()
