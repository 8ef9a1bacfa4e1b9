"""A crowd keeps its own state with no edit to the store: a toy crowd written here (its folder:
adapter, table, migration, store role) and one registry entry give every store of the process
its table, migrated in order after the core's steps and written in the store's transactions."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
from console_script import crowdprefs

TOY = {
    "__init__.py": '''
        """A toy crowd platform: its adapter."""


        class ToyCrowd:
            name = "toy"
            extension_barrier = None

            @classmethod
            def for_crowd(cls, name, project, **_):
                return cls()

            def fees(self, project):
                return project.settings.fees

            def publish(self, project, pairs):
                settings = project.settings
                project.store.add_hits(self.name, pairs, settings.reward, self.fees(project))
                return len(pairs)
    ''',
    "tables.py": '''
        """The toy crowd's table, on the store's one metadata."""
        from sqlalchemy import Column, Integer, Table

        from crowdprefs.campaign.store.tables import metadata, text_column

        toy_tallies = Table(
            "toy_tallies",
            metadata,
            text_column("worker_id", primary_key=True),
            Column("points", Integer, nullable=False),
        )
    ''',
    "schema.py": '''
        """The toy crowd's migrations: the step after the store's last."""
        from toycrowd import tables

        MIGRATIONS = [("0016_toy_tallies", lambda conn: tables.toy_tallies.create(conn))]
    ''',
    "store.py": '''
        """The toy crowd's store role: its table and a core table in one transaction."""
        from sqlalchemy import select

        from crowdprefs.campaign.store import tables as t
        from crowdprefs.campaign.store.base import StoreBase, upsert
        from crowdprefs.campaign.store.schema import StatePart
        from toycrowd import schema
        from toycrowd.tables import toy_tallies


        class ToyStore(StoreBase):
            def add_toy_tally(self, worker_id, points, fail=False):
                with self.transaction() as conn:
                    conn.execute(toy_tallies.insert(), [{"worker_id": worker_id, "points": points}])
                    conn.execute(upsert(conn, t.meta), [{"key": "toy_last", "value": worker_id}])
                    if fail:
                        raise RuntimeError("the toy fails after both writes")

            def toy_tallies(self):
                return [tuple(row) for row in self.rows(select(toy_tallies))]


        STATE = StatePart(role=ToyStore, migrations=schema.MIGRATIONS)
    ''',
}

SCRIPT = """
import json, sys
from crowdprefs import registry

registry.register(registry.Platform("toy", "toycrowd:ToyCrowd", "toycrowd.store:STATE"))
from crowdprefs.campaign.project import Project, init_project
from crowdprefs.campaign.store import SCHEMA_VERSION, tables
from crowdprefs.crowds import get_crowd

seen = {"schema_version": SCHEMA_VERSION}
with Project(sys.argv[1]) as project:
    store = project.store
    seen["version"] = store.version
    seen["counts"] = store.table_counts()["toy_tallies"]
    store.add_toy_tally("W1", 3)
    try:
        store.add_toy_tally("W2", 5, fail=True)
    except RuntimeError:
        pass
    seen["tallies"] = store.toy_tallies()
    seen["last"] = store.scalar(tables.meta.select().with_only_columns(tables.meta.c.value)
                                .where(tables.meta.c.key == "toy_last"))
    seen["crowd"] = get_crowd("toy", project).name
candidates = project.root / "candidates.csv"
with init_project(sys.argv[2], candidates, database=sys.argv[3] or None) as new:
    seen["new"] = [new.store.version, new.store.toy_tallies()]
print(json.dumps(seen))
"""


def write_toy_crowd(folder: Path) -> None:
    package = folder / "toycrowd"
    package.mkdir(parents=True)
    for name, source in TOY.items():
        (package / name).write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")


def test_a_toy_crowd_keeps_its_table_in_the_store_with_one_registry_entry(
    tmp_path, engine, request
):
    candidates = tmp_path / "candidates.csv"
    pd.DataFrame({"query": ["q1"] * 3, "document": ["a", "b", "c"]}).to_csv(candidates, index=False)
    root = tmp_path / "project"
    database = () if engine is None else ("--database", engine)
    made = crowdprefs("init", root, "--candidates", candidates, *database)
    assert made.returncode == 0, made.stderr
    (root / "candidates.csv").write_bytes(candidates.read_bytes())
    write_toy_crowd(tmp_path / "crowds")
    with contextlib.ExitStack() as stack:
        other = "" if engine is None else stack.enter_context(new_database(request))
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT, str(root), str(tmp_path / "new"), other],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "PYTHONPATH": str(tmp_path / "crowds")},
        )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    # the project of schema 15 took the toy's step 16, after every step of the store
    assert seen["schema_version"] == seen["version"] == 16 and seen["counts"] == 0
    # the failed call wrote the toy's row and a core row in one transaction: both rolled back
    assert seen["tallies"] == [["W1", 3]] and seen["last"] == "W1" and seen["crowd"] == "toy"
    assert seen["new"] == [16, []]  # a new state is made with the toy's table
    # without the toy registered, this crowdprefs refuses the state in one line
    status = crowdprefs("status", root)
    assert status.returncode != 0 and "Traceback" not in status.stderr
    assert "schema version 16, newer than this crowdprefs (15)" in status.stderr


def new_database(request) -> contextlib.AbstractContextManager[str]:
    """A second empty PostgreSQL database, for the new project (dropped afterwards)."""
    import postgres

    return postgres.fresh_database(request.getfixturevalue("postgres_server"))


HISTORY_15 = [
    "0001_core",
    "0002_web_judges_assignments",
    "0003_mturk_reviews_blocks",
    "0004_core_answer_status_index",
    "0005_core_sort_cache",
    "0006_hit_prices",
    "0007_web_headphone_screens",
    "0008_prolific_studies",
    "0009_covering_indexes",
    "0010_pair_counts",
    "0011_drop_decision",
    "0012_engine_neutral",
    "0013_pairs_fillfactor",
    "0014_prolific_events",
    "0015_prior",
]
"""The schema history as the store wrote it when it named every crowd's migration itself."""


def test_the_history_keeps_its_versions_runs_the_core_first_and_refuses_gaps():
    from crowdprefs.campaign.store import Store
    from crowdprefs.campaign.store.schema import CORE_MIGRATIONS, history
    from crowdprefs.crowds.prolific import schema as prolific
    from crowdprefs.crowds.web import schema as web

    assert [name for name, _ in Store.HISTORY] == HISTORY_15
    merged = history([web.MIGRATIONS, prolific.MIGRATIONS])
    core_0012 = dict(CORE_MIGRATIONS)["0012_engine_neutral"]
    assert merged[11][1] == [core_0012, dict(web.MIGRATIONS)["0012_web_throttle"]]
    with pytest.raises(ValueError, match="once each"):  # without Prolific: no step 8, no 14
        history([web.MIGRATIONS])
    with pytest.raises(ValueError, match="once each"):  # a step registered twice
        history([web.MIGRATIONS, prolific.MIGRATIONS, prolific.MIGRATIONS])


def test_a_crowd_with_state_registered_after_the_store_was_made_is_refused():
    from crowdprefs import registry
    from crowdprefs.campaign.store import Store

    assert Store.HISTORY  # the store of this process is made
    before = (list(registry.PLATFORMS), dict(registry.REGISTRY))
    late = registry.Platform("late", "toycrowd:ToyCrowd", "toycrowd.store:STATE")
    with pytest.raises(RuntimeError, match="register it before the first store is used"):
        registry.register(late)
    assert before == (registry.PLATFORMS, registry.REGISTRY)
