"""The store's answers, reviews and Prolific records on each engine (SQLite and PostgreSQL): the
per-pair counts kept as answers arrive and are decided, how many answers were new, the sides a
judge saw, lists longer than a statement's bound parameters allow, and the order rows are read
in."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from mturk_campaign import make_project

from crowdprefs.campaign import driver
from crowdprefs.campaign.aggregate import count_answers
from crowdprefs.campaign.project import Project
from crowdprefs.campaign.store import Store
from crowdprefs.crowds import get_crowd
from crowdprefs.crowds.prolific.store import ProlificStudy


def collected(tmp_path, engine) -> tuple[Project, object, int]:
    """A project on ``engine`` with its first batch answered by the simulated crowd."""
    project = make_project(tmp_path / "p", database=engine)
    assert project.store.dialect == ("sqlite" if engine is None else "postgresql")
    crowd = get_crowd("simulated", project)
    iteration = driver.next_batch(project)
    driver.publish(project, crowd)
    driver.collect(project, crowd)
    return project, crowd, iteration


def late(pair_ids, statuses, scores, worker="W-late", prefix="late") -> pd.DataFrame:
    """Answers of a worker outside the simulated crowd, with the statuses given."""
    return pd.DataFrame(
        {
            "pair_id": pair_ids,
            "assignment_id": [f"{prefix}-{i}" for i in range(len(pair_ids))],
            "worker_id": worker,
            "choice": "A",
            "score": scores,
            "status": statuses,
        }
    )


def assert_counts_kept(store: Store, iteration: int) -> None:
    """The kept counts are those counted from the accepted answers themselves."""
    counts = store.answer_counts(iteration)
    expected = count_answers(store.answers(iteration)).reindex(counts.index, fill_value=0)
    pd.testing.assert_frame_equal(counts, expected)
    assert store.answer_total() == len(store.answers())


def test_the_counts_grouped_in_sql_equal_those_counted_from_the_rows(tmp_path, engine):
    project = make_project(tmp_path / "p", database=engine)
    crowd = get_crowd("simulated", project)
    driver.run(project, crowd, max_iterations=1)
    iteration = driver.next_batch(project)
    store = project.store
    pairs = store.pairs(iteration)
    unanswered = store.answer_counts(iteration)
    assert list(unanswered.index) == sorted(pairs["pair_id"])
    assert (unanswered.to_numpy() == 0).all()

    driver.publish(project, crowd)
    driver.collect(project, crowd)
    first = int(pairs["pair_id"].iloc[0])
    assert store.add_answers(crowd.name, late([first] * 3, "rejected", 1)) == 3
    counts = store.answer_counts(iteration)
    assert_counts_kept(store, iteration)
    assert counts.sum(axis=1).eq(project.settings.answers_per_pair).all()  # rejected left out
    everything = store.answers(iteration, include_rejected=True)
    assert counts.loc[first].sum() < (everything["pair_id"] == first).sum()
    project.close()


def test_the_answer_seconds_are_those_of_the_accepted_answers_in_arrival_order(tmp_path, engine):
    project, _, iteration = collected(tmp_path, engine)
    seconds = project.store.answer_seconds(iteration)
    answers = project.store.answers(iteration)
    np.testing.assert_array_equal(seconds, answers["seconds"].to_numpy(float))
    assert len(seconds) and not np.isnan(seconds).all()
    assert answers["answer_id"].is_monotonic_increasing
    project.close()


def test_the_kept_counts_follow_every_answer_stored_rejected_blocked_or_approved(tmp_path, engine):
    project, crowd, iteration = collected(tmp_path, engine)
    store = project.store
    first, second = map(int, store.pairs(iteration)["pair_id"].iloc[:2])
    wanted = project.settings.answers_per_pair

    added = late([first, first, second], ["rejected", "submitted", "approved"], [1, -1, 0])
    rejections = pd.DataFrame(  # failed validation: one stored just now, one never stored
        {"assignment_id": ["late-1", "never"], "pair_id": [first, second], "worker_id": "W-late"}
    ).assign(reason="no choice")
    assert store.add_answers(crowd.name, added, rejections=rejections) == 3
    assert_counts_kept(store, iteration)
    assert store.answer_counts(iteration).loc[first].sum() == wanted  # late-0, late-1 rejected
    assert store.answer_counts(iteration).loc[second].sum() == wanted + 1
    assert {"late-1", "never"} <= store.known_assignments(crowd.name)

    # answers decided outside crowdprefs, on answers stored before and still undecided
    stored = store.answers(iteration)
    undecided = stored[stored["status"] == "submitted"].iloc[:2]
    again = undecided.assign(status="rejected")
    assert store.add_answers(crowd.name, again) == 0  # nothing new, two decided
    assert_counts_kept(store, iteration)

    store.decide_rejections(
        crowd.name, stored[stored["status"] == "submitted"].iloc[2:4].assign(reason="rule")
    )
    assert_counts_kept(store, iteration)

    workers = store.answers(iteration)["worker_id"].unique()[:2]
    store.decide_blocks(crowd.name, pd.DataFrame({"worker_id": workers, "reason": "flagged"}))
    assert_counts_kept(store, iteration)
    assert not store.answers(iteration)["worker_id"].isin(workers).any()
    assert store.blocked_workers(crowd.name) == set(workers)
    assert set(store.pending_blocks(crowd.name)["worker_id"]) == set(workers)

    submitted = (store.answers(iteration)["status"] == "submitted").sum()
    assert store.decide_approvals(crowd.name, iteration) == submitted > 0
    assert store.decide_approvals(crowd.name, iteration) == 0
    assert_counts_kept(store, iteration)
    assert (store.answers(iteration)["status"] == "approved").all()
    reviews = store.reviews(crowd.name)
    assert reviews["decided_at"].is_monotonic_increasing
    assert set(reviews["decision"]) == {"approve", "reject"}
    assert len(store.pending_reviews(crowd.name, "approve")) == submitted

    first_review = reviews["assignment_id"].iloc[0]
    store.review_applied(crowd.name, first_review)
    store.block_applied(crowd.name, workers[0])
    assert first_review not in set(store.pending_reviews(crowd.name, "reject")["assignment_id"])
    assert store.pending_blocks(crowd.name)["worker_id"].tolist() == [workers[1]]
    blocks = store.worker_blocks(crowd.name)
    assert blocks["applied_at"].notna().tolist() == [w == workers[0] for w in blocks["worker_id"]]
    every = store.answers(include_rejected=True)
    per_pair = store.answers_per_pair(crowd.name)
    pd.testing.assert_series_equal(
        per_pair, every.groupby("pair_id").size().rename("n"), check_dtype=False
    )
    matches = store.pair_matches()
    assert set(matches["pair_id"]) == set(store.pairs()["pair_id"])
    assert matches["hit_id"].notna().all() and matches["iteration"].is_monotonic_increasing
    project.close()


def test_a_drop_leaves_the_answers_of_aggregated_batches_alone(tmp_path, engine):
    project = make_project(tmp_path / "p", database=engine)
    crowd = get_crowd("simulated", project)
    driver.run(project, crowd, max_iterations=1)
    iteration = driver.next_batch(project)
    driver.publish(project, crowd)
    driver.collect(project, crowd)
    store = project.store
    before = store.answers(1)
    worker = store.answers(iteration)["worker_id"].iloc[0]
    flagged = pd.DataFrame({"worker_id": [worker], "reason": ["low-agreement"]})
    store.decide_blocks(crowd.name, flagged, decision="drop")
    pd.testing.assert_frame_equal(store.answers(1), before)  # aggregated: its verdicts stand
    assert worker not in set(store.answers(iteration)["worker_id"])
    pending = store.pending_reviews(crowd.name, "drop")
    assert len(pending) and (pending["reason"] == "low-agreement").all()
    assert_counts_kept(store, iteration)
    project.close()


def test_answers_of_more_workers_than_a_statement_may_bind_are_blocked_at_once(tmp_path):
    """On SQLite, whose limit is the lower (PostgreSQL runs the same statements above)."""
    project, crowd, iteration = collected(tmp_path, None)
    store = project.store
    pair_ids = store.pairs(iteration)["pair_id"].to_numpy()
    many = 33_000  # past SQLite's 32,766 bound parameters
    answers = pd.DataFrame(
        {
            "pair_id": pair_ids[np.arange(many) % len(pair_ids)],
            "assignment_id": [f"bulk-{i}" for i in range(many)],
            "worker_id": [f"W-bulk-{i}" for i in range(many)],
            "choice": "equal",
            "score": 0,
        }
    )
    assert store.add_answers(crowd.name, answers) == many
    assert store.add_answers(crowd.name, answers) == 0
    flags = pd.DataFrame({"worker_id": answers["worker_id"], "reason": "bulk"})
    store.decide_blocks(crowd.name, flags)
    assert len(store.blocked_workers(crowd.name)) == many
    assert not store.answers(iteration)["worker_id"].str.startswith("W-bulk").any()
    assert_counts_kept(store, iteration)
    project.close()


def test_the_sides_a_judge_saw_come_from_the_raw_record_where_it_logs_them(tmp_path, engine):
    project, crowd, iteration = collected(tmp_path, engine)
    store = project.store
    pair = store.pairs(iteration).iloc[0]
    shown_x, shown_y = (json.dumps({"order": {"a": pair[side]}}) for side in ("x", "y"))
    raws = [shown_x, shown_y, json.dumps({"fields": {}}), None]
    rows = late([int(pair["pair_id"])] * 4, "submitted", 1, prefix="raw").assign(raw=raws)
    store.add_answers(crowd.name, rows)
    shown = store.shown_answers().tail(4)["a_is_x"].tolist()
    assert shown == [1, 0, int(pair["a_is_x"]), int(pair["a_is_x"])]
    audit = store.audit_answers(crowd.name)
    assert audit.tail(4)["shown_a_is_x"].tolist() == shown
    assert len(audit) == len(store.answers(include_rejected=True))
    assert audit["created_at"].notna().all() and audit["hit_id"].notna().all()
    assert audit["listen_seconds"].isna().all()  # the clips' durations are unknown here
    project.close()


def test_the_prolific_records_keep_the_first_decision_and_every_bonus(tmp_path, engine):
    store = Store(tmp_path / "state.sqlite" if engine is None else engine, create=True)
    try:
        assert store.prolific_study() is None and store.prolific_committed() == 0
        for n, created in enumerate(("2026-01-01T00:00:00", "2026-01-02T00:00:00")):
            store.add_prolific_study(
                ProlificStudy(f"s{n}", created, 150, "GBP", 10, 5, 1 / 3, "CODE", 4, "UNPUBLISHED")
            )
        store.update_prolific_study("s1", places=6, published_at="2026-01-03T00:00:00")
        store.update_prolific_study("s1", status="ACTIVE", published_at="2026-02-01T00:00:00")
        study = store.prolific_study()
        assert (study.study_id, study.places, study.status) == ("s1", 6, "ACTIVE")
        assert study.published_at == "2026-01-03T00:00:00"  # the first publication stays
        assert store.prolific_committed() == pytest.approx(6 * 150 * 4 / 3)

        decisions = pd.DataFrame(
            {
                "submission_id": ["b", "a"],
                "study_id": "s1",
                "participant_id": ["p2", "p1"],
                "decision": ["approve", "reject"],
                "category": [None, "NO_DATA"],
                "message": [None, "no answers"],
            }
        )
        store.decide_prolific_reviews(decisions, "2026-01-04T00:00:00")
        store.decide_prolific_reviews(decisions.assign(decision="reject"), "2026-01-05T00:00:00")
        assert store.prolific_reviews()["decision"].tolist() == ["reject", "approve"]
        assert store.pending_prolific_reviews()["submission_id"].tolist() == ["a", "b"]
        store.applied_prolific_reviews(["a"], "2026-01-06T00:00:00")
        assert store.pending_prolific_reviews()["submission_id"].tolist() == ["b"]

        store.add_prolific_bonus("B1", "s1", [("p1", 20), ("p2", 30)], 0.2, "2026-01-07")
        store.add_prolific_bonus("B2", "s1", [("p1", 5)], 0.2, "2026-01-08")
        assert store.prolific_bonus_totals() == {"p1": 25, "p2": 30}
        assert store.unpaid_prolific_bonuses()["bonus_id"].tolist() == ["B1", "B2"]
        store.paid_prolific_bonus("B1", "2026-01-09")
        assert store.unpaid_prolific_bonuses()["amount"].tolist() == [5]
        assert store.prolific_bonus_lines("B1").values.tolist() == [["p1", 20], ["p2", 30]]
        assert store.prolific_committed() == pytest.approx(6 * 150 * 4 / 3 + 55 * 1.2)
    finally:
        store.close()
