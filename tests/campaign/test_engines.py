"""One campaign on either engine: a project on PostgreSQL through the installed console script,
`migrate` from SQLite to PostgreSQL and back with nothing lost, and the address rules (never a
password; an empty database of its own)."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
import sqlalchemy
from console_script import crowdprefs
from mturk_campaign import make_project
from sqlalchemy import Float

from crowdprefs.campaign import driver
from crowdprefs.campaign.project import Project, migrate_state
from crowdprefs.campaign.store import SCHEMA_VERSION, Store, tables
from crowdprefs.campaign.store.temporary import temporary_rows
from crowdprefs.crowds import get_crowd
from crowdprefs.errors import InputError, StateError


def contents(store: Store) -> dict[str, list[tuple]]:
    """Every table's rows, sorted (what a copy must keep, engine aside)."""
    with store.read() as conn:
        return {
            table.name: sorted(
                (tuple(row) for row in conn.execute(sqlalchemy.select(table))), key=repr
            )
            for table in tables.metadata.sorted_tables
        }


def campaign_rows(project: Project, iterations: int = 2) -> None:
    crowd = get_crowd("simulated", project)
    for _ in range(iterations):
        driver.run_iteration(project, crowd)


def test_a_project_on_postgresql_runs_through_the_console_script(tmp_path, postgres_url):
    make_project(tmp_path / "seed").close()  # the candidates and truth of a small collection
    project = tmp_path / "p"
    created = crowdprefs(
        "init",
        project,
        "--candidates",
        tmp_path / "seed" / "candidates.csv",
        "--database",
        postgres_url,
    )
    assert created.returncode == 0, created.stderr
    assert "state in postgresql://" in created.stdout
    config = tomllib.loads((project / "crowdprefs.toml").read_text())
    assert config["store"]["url"] == postgres_url
    assert not (project / "state.sqlite").exists()
    assert os.environ.get("PGPASSWORD", "\0") not in (project / "crowdprefs.toml").read_text()
    ran = crowdprefs("next", project)
    assert ran.returncode == 0, ran.stderr
    status = crowdprefs("status", project, "--json")
    assert status.returncode == 0, status.stderr
    store = Store(postgres_url)
    try:
        assert store.last_batch()["iteration"] == 1 and len(store.pairs(1)) > 0
    finally:
        store.close()


def init_on(cli, tmp_path: Path, address: str) -> tuple:
    """``crowdprefs init p --candidates … --database ADDRESS`` on a small collection."""
    make_project(tmp_path / "seed").close()
    candidates = tmp_path / "seed" / "candidates.csv"
    return cli("init", tmp_path / "p", "--candidates", candidates, "--database", address)


def test_a_password_in_the_address_is_refused_before_anything_is_written(tmp_path, cli):
    code, out, err = init_on(cli, tmp_path, "postgresql://someone:hunter2@localhost/db")
    assert code != 0
    assert "must not hold a password" in err and "PGPASSWORD" in err
    assert "hunter2" not in out + err
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize(
    ("address", "words"),
    [
        ("mysql://u@h/db", "must start with postgresql://"),
        ("postgresql://u@localhost", "names no database"),
    ],
)
def test_other_addresses_are_refused_in_one_line(tmp_path, cli, address, words):
    code, _, err = init_on(cli, tmp_path, address)
    assert code != 0 and words in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_database_that_is_not_empty_is_refused_and_left_as_it_was(tmp_path, postgres_url):
    make_project(tmp_path / "a", database=postgres_url).close()
    before = contents(Store(postgres_url))
    with pytest.raises(StateError, match="is not empty"):
        make_project(tmp_path / "b", database=postgres_url)
    assert not (tmp_path / "b" / "project").exists()
    assert contents(Store(postgres_url)) == before


def test_an_unreachable_database_is_one_line_naming_it(tmp_path, cli):
    code, _, err = init_on(cli, tmp_path, "postgresql://nobody@127.0.0.1:1/none")
    assert code != 0 and "Traceback" not in err
    assert "cannot use the project state postgresql://nobody@127.0.0.1:1/none" in err
    assert not (tmp_path / "p").exists()


def test_migrate_to_postgresql_and_back_loses_nothing(tmp_path, postgres_url, cli):
    project = make_project(tmp_path / "c")
    campaign_rows(project)
    root = project.root
    original = contents(project.store)
    exported = tmp_path / "before.qrel"
    project.close()
    assert cli("export", root, "-o", exported, "--partial")[0] == 0

    code, out, err = cli("migrate", root, "--to", postgres_url)
    assert code == 0, err
    assert "state.sqlite.moved" in out and not (root / "state.sqlite").exists()
    with Project(root) as moved:
        assert moved.store.location.url is not None
        assert contents(moved.store) == original
        campaign_rows(moved, 1)  # the campaign goes on there: ids continue past the copied ones
        on_postgresql = contents(moved.store)

    code, out, err = cli("migrate", root, "--to", "sqlite")
    assert code == 0, err
    assert "[store]" not in (root / "crowdprefs.toml").read_text()
    with Project(root) as back:
        assert back.store.location.path == root / "state.sqlite"
        assert contents(back.store) == on_postgresql


def test_migrate_refuses_an_occupied_target_and_changes_nothing(tmp_path, postgres_url):
    make_project(tmp_path / "other", database=postgres_url).close()
    project = make_project(tmp_path / "c")
    root, before = project.root, contents(project.store)
    config = (root / "crowdprefs.toml").read_bytes()
    project.close()
    with pytest.raises(StateError, match="is not empty"):
        migrate_state(root, postgres_url)
    assert (root / "crowdprefs.toml").read_bytes() == config
    with Project(root) as again:
        assert contents(again.store) == before
    with pytest.raises(StateError, match="already is"):
        migrate_state(root, "sqlite")
    with pytest.raises(InputError, match="password"):
        migrate_state(root, "postgresql://u:p@h/db")


def test_a_second_command_on_a_postgresql_campaign_names_the_holder(tmp_path, postgres_url):
    project = make_project(tmp_path / "c", database=postgres_url)
    project.store.lock.acquire()
    try:
        other = crowdprefs("next", project.root)
        assert other.returncode != 0
        assert "is in use by another command" in other.stderr
        assert "Traceback" not in other.stderr
    finally:
        project.close()
    assert crowdprefs("next", project.root).returncode == 0


def test_a_committed_change_is_synced_to_disk_on_both_engines(tmp_path, engine):
    """An answer a judge saw accepted survives a power loss, not only a kill: SQLite syncs its
    write-ahead log at every commit (``synchronous=FULL``), PostgreSQL waits for its WAL flush
    (``synchronous_commit=on``, its default, never lowered)."""
    store = Store(tmp_path / "state.sqlite" if engine is None else engine, create=True)
    try:
        with store.transaction() as conn:
            if store.dialect == "sqlite":
                assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
                assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            else:
                assert conn.exec_driver_sql("SHOW synchronous_commit").scalar() == "on"
    finally:
        store.close()


def test_pairs_pages_keep_room_for_verdicts_on_postgresql(postgres_url):
    """A new PostgreSQL state and one migrated from ``0012`` both leave half of each page of
    ``pairs`` free for the verdict's heap-only update."""

    def fillfactor(store: Store) -> list[str] | None:
        with store.read() as conn:
            return conn.exec_driver_sql(
                "SELECT reloptions FROM pg_class WHERE relname = 'pairs'"
            ).scalar_one()

    store = Store(postgres_url, create=True)
    try:
        assert fillfactor(store) == [f"fillfactor={tables.PAIRS_FILLFACTOR}"]
        with store.transaction() as conn:  # as 0012 left it
            conn.exec_driver_sql("ALTER TABLE pairs RESET (fillfactor)")
            conn.exec_driver_sql("UPDATE meta SET value = '12' WHERE key = 'schema_version'")
    finally:
        store.close()
    migrated = Store(postgres_url)
    try:
        assert migrated.version == SCHEMA_VERSION == 15
        assert fillfactor(migrated) == [f"fillfactor={tables.PAIRS_FILLFACTOR}"]
    finally:
        migrated.close()


def test_bulk_copies_keep_or_refuse_integers_past_32_bits_on_postgresql(postgres_url):
    """Rows copied in bulk (COPY) never wrap a large integer: a 64-bit column (copied in the
    binary format) keeps 2⁴⁰, a 32-bit one (copied as text) refuses it."""
    store = Store(postgres_url, create=True)
    big = [(2**40, 0.5), (-(2**40), float("nan"))]
    try:

        def columns(integer: type) -> list[sqlalchemy.Column]:
            return [sqlalchemy.Column("v", integer), sqlalchemy.Column("p", Float)]

        wide_columns = columns(sqlalchemy.BigInteger)
        with store.transaction() as conn, temporary_rows(conn, "wide", wide_columns, big) as wide:
            kept = conn.execute(sqlalchemy.select(wide.c.v).order_by(wide.c.v)).scalars().all()
        assert kept == [-(2**40), 2**40]
        with (
            pytest.raises(sqlalchemy.exc.DataError, match="out of range"),
            store.transaction() as conn,
            temporary_rows(conn, "narrow", columns(sqlalchemy.Integer), big),
        ):
            pass
    finally:
        store.close()
