"""The store's guarantees: the batch state machine, one writer per project, and storage failures
as one line naming the file and the cause."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from mturk_campaign import make_project

from crowdprefs.campaign import driver
from crowdprefs.campaign.aggregate import count_answers
from crowdprefs.campaign.batches import check_transition
from crowdprefs.campaign.project import STATE_NAME, Project
from crowdprefs.campaign.store import MIGRATIONS, SCHEMA_VERSION, base
from crowdprefs.crowds import get_crowd
from crowdprefs.errors import StateError


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from crowdprefs.cli import main; main()", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ------------------------------------------------------------------ the batch state machine


def test_a_batch_moves_forward_one_step_at_a_time():
    assert check_transition(1, "built", "published")
    assert check_transition(1, "built", "collected")  # answers imported from a results file
    assert check_transition(1, "published", "collected")
    assert check_transition(1, "collected", "aggregated")
    assert not check_transition(1, "published", "published")  # already there: nothing to do
    with pytest.raises(StateError, match="batch 1 is built; it must be collected before it is"):
        check_transition(1, "built", "aggregated")
    with pytest.raises(StateError, match="already aggregated; it cannot become collected"):
        check_transition(1, "aggregated", "collected")
    with pytest.raises(StateError, match="unknown batch status"):
        check_transition(1, "built", "done")


def test_the_stored_status_never_goes_back(tmp_path):
    project = make_project(tmp_path / "p")
    crowd = get_crowd("simulated", project)
    driver.run(project, crowd, max_iterations=1)
    store = project.store
    assert store.last_batch()["status"] == "aggregated"
    with pytest.raises(StateError, match="batch 1 is already aggregated"):
        store.advance_batch(1, "collected")
    with pytest.raises(StateError, match="batch 1 is already aggregated"):
        store.advance_batch(1, "published", crowd="simulated")
    assert store.batches()["status"].tolist() == ["aggregated"]
    iteration = driver.next_batch(project)
    assert not store.advance_batch(iteration, "collected")  # no answers yet: it stays built
    assert not store.advance_batch(iteration, "published", crowd="simulated")  # nothing held
    assert store.last_batch()["status"] == "built"
    with pytest.raises(StateError, match="cannot be built: batch 2 is built"):
        store.create_batch(iteration + 1, store.pairs(iteration))
    project.close()


# ------------------------------------------------------------------ one writer per project

HOLDER = textwrap.dedent(
    """
    import sys, time
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import STATE_NAME, Project

    with Project(sys.argv[1]) as project:
        driver.next_batch(project)  # a write: this process now holds the project lock
        print("holding", flush=True)
        sys.stdin.readline()
    """
)


def test_a_second_writer_stops_naming_who_holds_the_project(tmp_path):
    project = make_project(tmp_path / "p")
    root = project.root
    project.close()
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root), "--tag", "first-writer"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        before = digest(root / "state.sqlite")
        second = cli("run", str(root), cwd=tmp_path)
        assert second.returncode != 0
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1, second.stderr
        assert f"pid {holder.pid}" in lines[0] and "--tag first-writer" in lines[0]
        assert "in use by another command" in lines[0] and "Traceback" not in second.stderr
        assert digest(root / "state.sqlite") == before  # nothing written
        # readers are not in the way (status only skips refreshing its cache)
        assert cli("status", str(root), cwd=tmp_path).returncode == 0
    finally:
        holder.communicate("\n", timeout=60)
    assert holder.returncode == 0
    assert cli("run", str(root), cwd=tmp_path).returncode == 0  # the lock went with its holder


def test_one_process_shares_its_lock_between_its_stores(tmp_path):
    project = make_project(tmp_path / "p")
    driver.next_batch(project)
    assert project.store.lock.held
    with Project(project.root) as again:  # e.g. the web server's threads
        again.store.add_hits("web", again.store.pairs(1), 0.02, project.settings.fees)
    project.close()
    assert (project.root / "state.lock").read_text() == ""


# ------------------------------------------------------------------ storage failures


def _one_line(error: pytest.ExceptionInfo, path: Path, cause: str) -> None:
    message = str(error.value)
    assert "\n" not in message
    assert str(path) in message and cause in message, message


def test_a_corrupt_state_is_one_line(tmp_path):
    project = make_project(tmp_path / "p")
    state = project.store.path
    project.close()
    state.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{state}{suffix}").unlink(missing_ok=True)
    with pytest.raises(StateError) as error:
        Project(state.parent)
    _one_line(error, state, "not a SQLite database")
    result = cli("status", str(state.parent), cwd=tmp_path)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "not a SQLite database" in result.stderr


def test_a_locked_state_is_one_line(tmp_path, monkeypatch):
    import sqlite3

    project = make_project(tmp_path / "p")
    state = project.store.path
    project.close()
    monkeypatch.setattr(base, "BUSY_SECONDS", 0.2)
    other = sqlite3.connect(state, isolation_level=None)  # another program writing the file
    other.execute("BEGIN EXCLUSIVE")
    try:
        with Project(state.parent) as project, pytest.raises(StateError) as error:
            driver.next_batch(project)
    finally:
        other.execute("ROLLBACK")
        other.close()
    _one_line(error, state, "locked by another program")
    with Project(state.parent) as project:
        assert project.store.last_batch() is None  # nothing half-written


def test_a_read_only_state_is_one_line(tmp_path):
    project = make_project(tmp_path / "p")
    project.store.conn.execute("PRAGMA query_only = ON")  # as a read-only file refuses writes
    with pytest.raises(StateError) as error:
        driver.next_batch(project)
    _one_line(error, project.store.path, "read-only")
    project.store.conn.execute("PRAGMA query_only = OFF")
    assert project.store.last_batch() is None
    project.close()


def test_a_full_disk_is_one_line(tmp_path):
    project = make_project(tmp_path / "p")
    conn = project.store.conn  # the file may not grow (a full disk), and writes go straight to it
    conn.execute("PRAGMA journal_mode = DELETE")
    conn.execute("VACUUM")  # no free pages left by the migrations: the next write must grow it
    conn.execute(f"PRAGMA max_page_count = {conn.execute('PRAGMA page_count').fetchone()[0]}")
    with pytest.raises(StateError) as error:
        driver.run(project, get_crowd("simulated", project))
    _one_line(error, project.store.path, "disk is full")
    project.close()
    with Project(tmp_path / "p" / "project") as reopened:  # whole transactions or nothing
        answers = reopened.store.answers()
        assert answers.empty or set(answers["iteration"]) == {1}
        assert reopened.store.last_batch()["status"] in ("built", "published")


def test_a_state_that_cannot_be_opened_is_one_line(tmp_path):
    project = make_project(tmp_path / "p")
    state = project.store.path
    project.close()
    os.remove(state)
    state.mkdir()  # a folder where the file should be
    with pytest.raises(StateError) as error:
        Project(state.parent)
    _one_line(error, state, "cannot use the project state")


# ------------------------------------------------------------------ counts computed in SQL


def test_the_counts_grouped_in_sql_equal_those_counted_from_the_rows(tmp_path):
    project = make_project(tmp_path / "p")
    crowd = get_crowd("simulated", project)
    driver.run(project, crowd, max_iterations=1)
    iteration = driver.next_batch(project)
    store = project.store
    pairs = store.pairs(iteration)
    assert store.batch_size(iteration) == (len(pairs), pairs["query"].nunique())
    unanswered = store.answer_counts(iteration)
    assert list(unanswered.index) == sorted(pairs["pair_id"])
    assert (unanswered.to_numpy() == 0).all()

    driver.publish(project, crowd)
    driver.collect(project, crowd)
    first = pairs["pair_id"].iloc[0]
    rejected = pd.DataFrame(
        {
            "pair_id": [first] * 3,
            "assignment_id": ["late-1", "late-2", "late-3"],
            "worker_id": "W-late",
            "choice": "A",
            "score": 1,
            "status": "rejected",
        }
    )
    assert store.add_answers(crowd.name, rejected) == 3
    counts = store.answer_counts(iteration)
    expected = count_answers(store.answers(iteration)).reindex(counts.index, fill_value=0)
    pd.testing.assert_frame_equal(counts, expected)
    assert counts.sum(axis=1).eq(project.settings.answers_per_pair).all()  # rejected left out
    assert counts.loc[first].sum() < len(
        store.answers(iteration, include_rejected=True).query("pair_id == @first")
    )


def test_the_answer_seconds_are_those_of_the_accepted_answers_in_arrival_order(tmp_path):
    project = make_project(tmp_path / "p")
    driver.run(project, get_crowd("simulated", project), max_iterations=1)
    seconds = project.store.answer_seconds(1)
    np.testing.assert_array_equal(seconds, project.store.answers(1)["seconds"].to_numpy(float))
    assert len(seconds) and not np.isnan(seconds).all()


def test_the_kept_counts_follow_every_answer_stored_rejected_or_reinstated(tmp_path):
    project = make_project(tmp_path / "p")
    crowd = get_crowd("simulated", project)
    iteration = driver.next_batch(project)
    driver.publish(project, crowd)
    driver.collect(project, crowd)
    store = project.store
    first, second = store.pairs(iteration)["pair_id"].iloc[:2]

    def recount() -> pd.DataFrame:
        answers = store.answers(iteration)
        return count_answers(answers).reindex(store.answer_counts(iteration).index, fill_value=0)

    late = pd.DataFrame(
        {
            "pair_id": [first, first, second],
            "assignment_id": ["late-1", "late-2", "late-3"],
            "worker_id": "W-late",
            "choice": "A",
            "score": [1, -1, 0],
            "status": ["rejected", "submitted", "approved"],
        }
    )
    store.add_answers(crowd.name, late)
    with store.transaction() as conn:  # a rejection, and a rejection taken back
        conn.execute("UPDATE answers SET status = 'rejected' WHERE assignment_id = 'late-3'")
        conn.execute("UPDATE answers SET status = 'approved' WHERE assignment_id = 'late-1'")
    pd.testing.assert_frame_equal(store.answer_counts(iteration), recount())
    assert store.answer_counts(iteration).loc[first].sum() == project.settings.answers_per_pair + 2


def test_a_project_of_the_previous_schema_is_migrated_and_aggregates_the_same_verdicts(tmp_path):
    project = make_project(tmp_path / "p")
    crowd = get_crowd("simulated", project)
    driver.next_batch(project)
    driver.publish(project, crowd)
    driver.collect(project, crowd)
    first = project.store.pairs(1)["pair_id"].iloc[0]
    rejected = pd.DataFrame(
        {"pair_id": [first], "assignment_id": ["late"], "worker_id": "W-late", "choice": "A"}
    ).assign(score=1, status="rejected")
    project.store.add_answers(crowd.name, rejected)
    root = project.root
    project.close()
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    conn = sqlite3.connect(copy / STATE_NAME)  # the copy as the schema before pair_counts left it
    for name in ("pair_counts_insert", "pair_counts_delete", "pair_counts_update"):
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("DROP TABLE pair_counts")
    conn.execute("CREATE INDEX pairs_by_query ON pairs(query, x, y)")
    conn.execute(f"PRAGMA user_version = {applied_before('0010_pair_counts')}")
    conn.commit()
    conn.close()

    with Project(copy) as migrated:
        assert migrated.store.version == SCHEMA_VERSION
        again = driver.aggregate(migrated)
    with Project(root) as kept:
        result = driver.aggregate(kept)
        expected = count_answers(kept.store.answers(1)).reindex(result["pair_id"], fill_value=0)
    pd.testing.assert_frame_equal(again, result)
    np.testing.assert_array_equal(result[["more", "equal", "less"]], expected)


def applied_before(migration: str) -> int:
    """The schema version of a project made just before ``migration``."""
    return [name for name, _ in MIGRATIONS].index(migration)


def test_reviews_of_the_previous_schema_are_kept_and_a_drop_can_be_decided(tmp_path):
    project = make_project(tmp_path / "p")
    crowd = get_crowd("simulated", project)
    driver.next_batch(project)
    driver.publish(project, crowd)
    driver.collect(project, crowd)
    workers = project.store.answers(1)["worker_id"].unique()
    project.store.decide_blocks(crowd.name, pd.DataFrame({"worker_id": workers[:2], "reason": "x"}))
    before = project.store.reviews()
    root = project.root
    project.close()
    conn = sqlite3.connect(root / STATE_NAME)  # answer_reviews as it was: no 'drop' decision
    conn.executescript(
        """
        CREATE TABLE old (crowd TEXT NOT NULL, assignment_id TEXT NOT NULL,
            pair_id INTEGER NOT NULL REFERENCES pairs(pair_id), worker_id TEXT NOT NULL,
            decision TEXT NOT NULL CHECK (decision IN ('approve', 'reject')), reason TEXT,
            decided_at TEXT NOT NULL, applied_at TEXT, PRIMARY KEY (crowd, assignment_id));
        INSERT INTO old SELECT * FROM answer_reviews ORDER BY rowid;
        DROP TABLE answer_reviews;
        ALTER TABLE old RENAME TO answer_reviews;
        """
    )
    conn.execute(f"PRAGMA user_version = {applied_before('0011_drop_decision')}")
    conn.commit()
    conn.close()
    with Project(root) as migrated:
        assert migrated.store.version == SCHEMA_VERSION
        pd.testing.assert_frame_equal(migrated.store.reviews(), before)
        flagged = pd.DataFrame({"worker_id": workers[2:3], "reason": "low-agreement"})
        migrated.store.decide_blocks(crowd.name, flagged, decision="drop")
        pending = migrated.store.pending_reviews(crowd.name, "drop")
        assert len(pending) and (pending["reason"] == "low-agreement").all()
