"""A project that crowdprefs made before the crowds kept their own state (schema 15, its store
naming the web and Prolific roles and migrations itself) opens unchanged on SQLite and
PostgreSQL: same version, same tables, columns and indexes as a new state, every row readable
through the core's and the crowds' roles, and the campaign goes on.

``schema15/`` holds such a project as that crowdprefs wrote it (``crowdprefs.toml``; its state
dumped from SQLite by ``iterdump`` and from PostgreSQL by ``pg_dump --inserts``): two queries,
one simulated batch of six pairs and sixty answers, two invited web judges, a Prolific study.
"""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

import pytest
import sqlalchemy
from console_script import crowdprefs

from crowdprefs.campaign import driver
from crowdprefs.campaign.project import Project
from crowdprefs.campaign.store import SCHEMA_VERSION, Store
from crowdprefs.crowds import get_crowd

MADE = Path(__file__).parent / "schema15"
ROWS = {"answers": 60, "pairs": 6, "hits": 6, "web_judges": 2, "prolific_studies": 1}


def restore(root: Path, engine: str | None) -> None:
    """The project of ``schema15/`` at ``root``, its state in a SQLite file or in ``engine``."""
    root.mkdir()
    settings = (MADE / "crowdprefs.toml").read_text(encoding="utf-8")
    if engine is None:
        conn = sqlite3.connect(root / "state.sqlite")
        conn.executescript((MADE / "sqlite.sql").read_text(encoding="utf-8"))
        conn.close()
    else:
        import psycopg

        with psycopg.connect(engine, autocommit=True) as conn:
            conn.execute((MADE / "postgresql.sql").read_text(encoding="utf-8"))
        settings += f'\n[store]\nurl = "{engine}"\n'
    (root / "crowdprefs.toml").write_text(settings, encoding="utf-8")


def layout(store: Store) -> dict[str, tuple[list[str], list[str]]]:
    """Per table: its columns and its indexes' names."""
    with store.read() as conn:
        seen = sqlalchemy.inspect(conn)
        return {
            name: (
                sorted(c["name"] for c in seen.get_columns(name)),
                sorted(i["name"] for i in seen.get_indexes(name)),
            )
            for name in seen.get_table_names()
        }


@pytest.mark.parametrize("engine_name", ["sqlite", "postgresql"])
def test_a_project_of_schema_15_opens_unchanged_and_goes_on(tmp_path, engine_name, request):
    engine = None if engine_name == "sqlite" else request.getfixturevalue("postgres_url")
    root = tmp_path / "made"
    restore(root, engine)
    status = crowdprefs("status", root)
    assert status.returncode == 0, status.stderr
    assert "Traceback" not in status.stderr
    with contextlib.ExitStack() as stack:
        if engine is None:
            elsewhere: Path | str = tmp_path / "new.sqlite"
        else:
            import postgres

            server = request.getfixturevalue("postgres_server")
            elsewhere = stack.enter_context(postgres.fresh_database(server))
        check_state(engine or root / "state.sqlite", elsewhere)
    with Project(root) as project:
        driver.run_iteration(project, get_crowd("simulated", project))
        assert project.store.version == 15 and len(project.store.answers(2)) > 0


def check_state(made: Path | str, elsewhere: Path | str) -> None:
    """The state of ``schema15/`` at ``made`` is a state of today, as a new one ``elsewhere``
    (same engine) is, and reads through every role."""
    store, new = Store(made), Store(elsewhere, create=True)
    try:
        assert store.version == new.version == SCHEMA_VERSION == 15
        assert layout(store) == layout(new)
        counts = store.table_counts()
        assert {table: counts[table] for table in ROWS} == ROWS
        assert store.web_judge_table()["judge_id"].tolist() == ["J0001", "J0002"]
        assert store.prolific_study().study_id == "S1"
    finally:
        store.close()
        new.close()
