"""The store's guarantees: the batch state machine, one writer per project, and storage failures
as one line naming the file and the cause."""

from __future__ import annotations

import hashlib
import json
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
import sqlalchemy
from mturk_campaign import make_project

from crowdprefs.campaign import driver
from crowdprefs.campaign.aggregate import count_answers
from crowdprefs.campaign.batches import check_transition
from crowdprefs.campaign.project import STATE_NAME, Project
from crowdprefs.campaign.store import SCHEMA_VERSION, Store, base
from crowdprefs.campaign.store.schema import LEGACY_SQLITE
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


def test_the_stored_status_never_goes_back(tmp_path, engine):
    project = make_project(tmp_path / "p", database=engine)
    assert project.store.dialect == ("sqlite" if engine is None else "postgresql")
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


def on_connect(project: Project, *pragmas: str) -> None:
    """Run ``pragmas`` on every connection the project's store uses from now on (its pool is
    emptied, so each is opened anew)."""

    def run(dbapi: sqlite3.Connection, _record: object) -> None:
        for pragma in pragmas:
            dbapi.execute(pragma)

    sqlalchemy.event.listen(project.store.engine, "connect", run)
    project.store.engine.dispose()


def test_a_read_only_state_is_one_line(tmp_path):
    project = make_project(tmp_path / "p")
    on_connect(project, "PRAGMA query_only = ON")  # as a read-only file refuses writes
    with pytest.raises(StateError) as error:
        driver.next_batch(project)
    _one_line(error, project.store.path, "read-only")
    project.close()
    with Project(tmp_path / "p" / "project") as reopened:
        assert reopened.store.last_batch() is None


def test_a_full_disk_is_one_line(tmp_path):
    project = make_project(tmp_path / "p")
    project.store.engine.dispose()  # its pooled connections closed: the journal can change
    conn = sqlite3.connect(project.store.path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = DELETE")  # writes go straight to the file
    conn.execute("VACUUM")  # no free pages left by the migrations: the next write must grow it
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.close()
    on_connect(project, f"PRAGMA max_page_count = {pages}")  # the file may not grow: disk full
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
# (the counts kept per pair, on each engine: tests/campaign/test_store_answers.py)


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
    conn.execute("DROP TABLE pair_counts")
    conn.execute("CREATE INDEX pairs_by_query ON pairs(query, x, y)")
    as_schema_before(conn, "0010_pair_counts")

    with Project(copy) as migrated:
        assert migrated.store.version == SCHEMA_VERSION
        again = driver.aggregate(migrated)
        names = migrated.store.query_names()
    with Project(root) as kept:
        assert names == kept.store.query_names()  # the CSV order, kept by the migration
        result = driver.aggregate(kept)
        expected = count_answers(kept.store.answers(1)).reindex(result["pair_id"], fill_value=0)
    pd.testing.assert_frame_equal(again, result)
    np.testing.assert_array_equal(result[["more", "equal", "less"]], expected)


def as_schema_before(conn: sqlite3.Connection, migration: str) -> None:
    """Leave a SQLite state as the SQLite-only store made it just before ``migration`` (one of
    :data:`LEGACY_SQLITE`): without what ``0012`` added, stamped with that version."""
    conn.execute("ALTER TABLE queries DROP COLUMN position")
    conn.execute("DROP TABLE IF EXISTS web_throttle")
    conn.execute(f"PRAGMA user_version = {[name for name, _ in LEGACY_SQLITE].index(migration)}")
    conn.commit()
    conn.close()


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
    as_schema_before(conn, "0011_drop_decision")
    with Project(root) as migrated:
        assert migrated.store.version == SCHEMA_VERSION
        pd.testing.assert_frame_equal(migrated.store.reviews(), before)
        flagged = pd.DataFrame({"worker_id": workers[2:3], "reason": "low-agreement"})
        migrated.store.decide_blocks(crowd.name, flagged, decision="drop")
        pending = migrated.store.pending_reviews(crowd.name, "drop")
        assert len(pending) and (pending["reason"] == "low-agreement").all()


AFFINITY = {"FLOAT": "REAL"}
"""Type names SQLite stores alike (``FLOAT`` and ``REAL`` both have REAL affinity)."""


def schema_of(store: Store) -> dict[str, dict]:
    """Per table: its key, its columns (name → type, nullable; a key column never is) and its
    indexes (name → columns)."""
    with store.read() as conn:
        seen = sqlalchemy.inspect(conn)
        schema = {}
        for name in sorted(seen.get_table_names()):
            key = tuple(seen.get_pk_constraint(name)["constrained_columns"])
            schema[name] = {
                "key": key,
                "columns": {
                    c["name"]: (
                        AFFINITY.get(str(c["type"]), str(c["type"])),
                        c["nullable"] and c["name"] not in key,
                    )
                    for c in seen.get_columns(name)
                },
                "indexes": {i["name"]: tuple(i["column_names"]) for i in seen.get_indexes(name)},
            }
        return schema


def test_a_file_migrated_from_the_first_schema_equals_a_new_state(tmp_path):
    """Every migration replayed from ``0001`` on an empty SQLite file gives the tables, columns,
    keys and indexes that a new state gets from the current tables."""
    old = tmp_path / "old.sqlite"
    conn = sqlite3.connect(old)
    for statement in LEGACY_SQLITE[0][1]:
        conn.execute(statement)
    conn.execute("PRAGMA user_version = 1")
    conn.execute("INSERT INTO meta (key, value) VALUES ('seed', '1')")
    conn.commit()
    conn.close()
    migrated, new = Store(old), Store(tmp_path / "new.sqlite", create=True)
    try:
        assert migrated.version == new.version == SCHEMA_VERSION
        assert schema_of(migrated) == schema_of(new)
    finally:
        migrated.close()
        new.close()


def test_numpy_numbers_bind_as_the_numbers_they_are(tmp_path, engine):
    """An iteration or a pair id from a numpy array reads the same rows as a Python int (SQLite's
    driver bound numpy integers as blobs that matched nothing; psycopg refused them)."""
    project = make_project(tmp_path / "p", database=engine)
    with project:
        driver.run(project, get_crowd("simulated", project))
        store = project.store
        for kind in (np.int64, np.int32, np.uint16):
            assert store.answer_counts(kind(1)).equals(store.answer_counts(1))
            assert store.pairs(kind(1)).equals(store.pairs(1))
        assert len(store.pairs(1)) > 0


NUMPY_AFTER_THE_STORE = """
import json, sys
from crowdprefs.campaign.project import Project

with Project(sys.argv[1]) as project:
    store = project.store
    plain = store.batch_size(1)
    loaded = "numpy.version" in sys.modules
    import numpy as np  # loaded only now, once the store's engine has run statements

    numbers = [store.batch_size(kind(1)) for kind in (np.int64, np.int32, np.uint16)]
print(json.dumps({"loaded_before": loaded, "plain": plain, "numbers": numbers}))
"""


def test_numpy_loaded_after_the_store_opened_binds_its_numbers(tmp_path):
    """numpy loads on first use, after the SQLite engine connected: its integers still bind as
    the numbers they are (the driver's adapters are registered once numpy is there)."""
    project = make_project(tmp_path / "p")
    with project:
        driver.next_batch(project)
    done = subprocess.run(
        [sys.executable, "-c", NUMPY_AFTER_THE_STORE, str(project.root)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["loaded_before"] is False
    assert report["plain"][0] > 0
    assert report["numbers"] == [report["plain"]] * 3
