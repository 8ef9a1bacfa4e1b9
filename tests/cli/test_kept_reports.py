"""``status`` and ``next`` on the open batch reuse their last report while the project is
unchanged: through the console script, at every step of a campaign and after every kind of
change, the kept report is the one made afresh (a cache folder of its own), and anything
unreadable makes it afresh."""

from __future__ import annotations

import json
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from console_script import crowdprefs

from crowdprefs.campaign.kept_reports import cache_folder
from crowdprefs.demo import create_demo_project


@pytest.fixture
def project(tmp_path) -> Path:
    create_demo_project(tmp_path).close()
    return tmp_path / "project"


def status(project: Path, *options: str, cache: Path | None = None, command="status") -> str:
    env = None if cache is None else {"XDG_CACHE_HOME": str(cache)}
    done = crowdprefs(command, project, *options, env=env)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done.stdout + done.stderr


def kept() -> list[Path]:
    folder = cache_folder()
    assert folder is not None and folder.is_absolute()
    return list(folder.glob("*.json"))


def same_as_made_afresh(project: Path, tmp_path: Path, step: str) -> str:
    """``status`` (text, ``--queries``, ``--json``) twice, equal to a fresh one's; the same for
    ``next`` once a batch is open (on an aggregated one it would build the next batch)."""
    fresh = tmp_path / f"fresh-{step}"
    for options in ((), ("--queries",), ("--json",)):
        made = status(project, *options, cache=fresh)
        assert status(project, *options) == made, (step, options)
        assert status(project, *options) == made, (step, options)
    if '"batch_status": "aggregated"' not in made and '"iteration": 0' not in made:
        line = status(project, command="next", cache=fresh)
        assert line == status(project, command="next") == status(project, command="next"), step
        assert status(project, "--json", cache=fresh) == made  # next built nothing
    return made


def test_a_kept_report_is_the_fresh_one_at_every_step_and_after_every_change(project, tmp_path):
    reports = {"init": same_as_made_afresh(project, tmp_path, "init")}
    assert kept(), "status kept no report"
    for step in ("next", "publish", "collect", "aggregate", "next"):
        done = crowdprefs(step, project)
        assert done.returncode == 0, done.stderr
        reports[step] = same_as_made_afresh(project, tmp_path, step)
    assert len(set(reports.values())) == len(reports), "a step changed nothing status shows"
    # a setting edited by hand
    config = project / "crowdprefs.toml"
    text = config.read_text(encoding="utf-8").replace(
        "reward = 0.02", "reward = 0.02\nbudget = 123.5"
    )
    config.write_text(text, encoding="utf-8")
    edited = same_as_made_afresh(project, tmp_path, "budget")
    assert edited != reports["next"] and "$123.50" in status(project)
    assert "changed since 'next' built batch 2: [crowd] budget" in edited  # the note, kept too
    # the state put back from a copy taken before the last step (a backup restored)
    backup = tmp_path / "backup.sqlite"
    shutil.copy(project / "state.sqlite", backup)
    assert crowdprefs("publish", project).returncode == 0
    published = same_as_made_afresh(project, tmp_path, "published")
    shutil.copy(backup, project / "state.sqlite")
    restored = same_as_made_afresh(project, tmp_path, "restored")
    assert restored == edited != published


def test_a_change_made_without_crowdprefs_is_seen(project, tmp_path):
    assert crowdprefs("next", project).returncode == 0
    before = status(project, "--json")
    with closing(sqlite3.connect(project / "state.sqlite")) as db, db:
        db.execute("UPDATE batches SET status = 'collected'")
    assert status(project, "--json") == status(project, "--json", cache=tmp_path / "c")
    assert status(project, "--json") != before


def test_a_damaged_state_is_refused_although_a_report_was_kept(project):
    status(project)
    (project / "state.sqlite").write_bytes(b"not a database")
    done = crowdprefs("status", project)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert done.stderr.startswith("error: ") and len(done.stderr.strip().splitlines()) == 1


def test_a_cache_folder_that_cannot_be_used_only_costs_time(project, tmp_path):
    made = status(project, cache=tmp_path / "fresh")
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    assert status(project, cache=blocked) == made
    assert status(project, cache=blocked) == made
    own = tmp_path / "own"
    assert status(project, cache=own) == made
    [entry] = (own / "crowdprefs" / "reports").glob("*.json")
    whole = json.loads(entry.read_text(encoding="utf-8"))
    report = next(iter(whole["reports"].values()))
    broken = [
        "{ not json",
        '{"inputs": [], "reports": 3}',
        *(  # the right inputs, parts of the report edited away or misshapen
            json.dumps({**whole, "reports": {name: part for name in whole["reports"]}})
            for part in (
                {k: v for k, v in report.items() if k != "notes"},
                {**report, "notes": [["x", "[link=evil]"]]},
                {**report, "hint": 3},
            )
        ),
    ]
    for text in broken:
        entry.write_text(text, encoding="utf-8")
        assert status(project, cache=own) == made, text
        assert json.loads(entry.read_text(encoding="utf-8")) == whole  # made afresh, kept again


def test_each_spelling_of_the_folder_gets_its_own_next_step(project, monkeypatch):
    monkeypatch.chdir(project.parent)
    relative = status(Path("project"))
    absolute = status(project)
    assert "crowdprefs next project" in relative
    assert f"crowdprefs next {project}" in absolute
    assert status(Path("project")) == relative and status(project) == absolute


def test_without_an_absolute_cache_folder_nothing_is_kept_anywhere(project, tmp_path):
    here = tmp_path / "here"
    here.mkdir()
    made = status(project, cache=tmp_path / "fresh")
    home = tmp_path / "home"
    for env in (
        {"XDG_CACHE_HOME": "relative/cache", "HOME": ""},
        {"XDG_CACHE_HOME": "", "HOME": str(home)},
    ):
        for _ in range(2):
            done = crowdprefs("status", project, cwd=here, env=env)
            assert done.returncode == 0 and done.stdout + done.stderr == made, done.stderr
    assert not any(here.iterdir())  # nothing written where the command ran
    assert list((home / ".cache" / "crowdprefs" / "reports").glob("*.json"))  # but at home


def test_a_file_the_settings_name_that_appears_or_changes_makes_a_fresh_report(tmp_path):
    from crowdprefs.campaign import kept_reports

    with create_demo_project(tmp_path) as made:
        root, revision = made.root, made.store.revision
    sections = {"prior": {"scores": "scores.csv"}, "hit": {"title": "a\0title"}}
    report = {"line": "kept", "notes": []}
    kept_reports.keep(root, "probe", revision, sections, report)
    assert kept_reports.cached(root, "probe", {"line": str}) == report
    (root / "scores.csv").write_text("query,document,score\n", encoding="utf-8")
    assert kept_reports.cached(root, "probe", {"line": str}) is None  # it appeared
    kept_reports.keep(root, "probe", revision, sections, report)
    assert kept_reports.cached(root, "probe", {"line": str}) == report
    (root / "scores.csv").write_text("query,document,score\nq,d,1\n", encoding="utf-8")
    assert kept_reports.cached(root, "probe", {"line": str}) is None  # it changed
