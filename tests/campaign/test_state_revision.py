"""The SQLite state's revision: a new one in the same commit as every change, none for a
transaction that changed nothing or was rolled back, or that writes only what no report shows
(the sort cache, the server's count of wrong tokens) or copies a state whole. ``status`` reuses
a report only at the same revision."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from crowdprefs.campaign import driver
from crowdprefs.campaign.project import Project, migrate_state
from crowdprefs.campaign.store import tables
from crowdprefs.crowds import get_crowd
from crowdprefs.demo import create_demo_project


@pytest.fixture
def project(tmp_path):
    with create_demo_project(tmp_path) as opened:
        yield opened


def test_every_change_gives_a_new_revision_in_its_own_commit(project):
    seen = [project.store.revision]
    assert seen[0] is not None  # init changed the state
    driver.next_batch(project)
    seen.append(project.store.revision)
    project.store.set_web_site("given", "https://example.org")
    seen.append(project.store.revision)
    driver.run(project, get_crowd("simulated", project), max_iterations=1)
    seen.append(project.store.revision)
    assert len(set(seen)) == len(seen) and all(len(r) == 32 for r in seen)


def test_no_change_keeps_the_revision(project):
    before = project.store.revision
    with project.store.transaction() as conn:  # a transaction that finds nothing to change
        conn.execute(update(tables.meta).where(tables.meta.c.key == "no such key").values(value=""))
    with pytest.raises(RuntimeError), project.store.transaction() as conn:
        conn.execute(update(tables.meta).where(tables.meta.c.key == "seed").values(value="7"))
        raise RuntimeError("rolled back")
    assert project.store.revision == before
    assert project.store.meta("seed") != "7"


def test_what_no_report_shows_keeps_the_revision(project):
    query = project.store.query_names()[0]
    before = project.store.revision
    project.store.cache_states([(query, "1:1", "{}")])
    project.store.throttle_fail("client", "token", 100.0, 60.0)
    assert project.store.revision == before
    assert project.store.throttle_wait("client", 101.0, 1, 60.0) > 0  # it was written


def test_a_copied_state_keeps_its_revision_and_postgresql_keeps_none(tmp_path, postgres_url):
    with create_demo_project(tmp_path) as opened:
        root, revision = opened.root, opened.store.revision
    migrate_state(root, postgres_url)
    with Project(root) as moved:
        assert moved.store.dialect == "postgresql" and moved.store.revision is None
    migrate_state(root, "sqlite")
    with Project(root) as back:
        assert back.store.revision == revision
