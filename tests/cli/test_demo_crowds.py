"""``crowdprefs demo`` through the installed console script on its other crowds, and a web demo
resumed after a crash (issue 28, class 7). The demo resumes any folder holding a demo project:
these tests give it a small one (three queries, three answers a pair), so a campaign takes
seconds."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from console_script import script

from crowdprefs.campaign.project import Project, Settings, init_project
from crowdprefs.demo import make_collection
from crowdprefs.io import write_lists

pytestmark = pytest.mark.slow


def small_demo(folder: Path) -> Path:
    """A demo folder holding a small collection and its truth, as ``crowdprefs demo`` leaves
    one (it resumes it)."""
    folder.mkdir()
    candidates, truth = make_collection(sizes=(4, 5, 6))
    candidates.to_csv(folder / "candidates.csv", index=False)
    write_lists(truth, folder / "truth.qrel", tag="truth")
    settings = Settings(answers_per_pair=3, sections={"simulated": {"truth": "../truth.qrel"}})
    init_project(folder / "project", folder / "candidates.csv", settings=settings).close()
    return folder


def demo_command(folder: Path, crowd: str) -> list[str]:
    return [script(), "demo", str(folder), "--crowd", crowd, "--no-audio"]


def run_demo(folder: Path, crowd: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "120"}
    return subprocess.run(
        demo_command(folder, crowd), capture_output=True, text=True, env=env, timeout=600
    )


@pytest.mark.parametrize("crowd", ["web", "mturk-fake"])
def test_the_demo_runs_on_its_other_crowds_through_the_console_script(tmp_path, crowd):
    done = run_demo(small_demo(tmp_path / "demo"), crowd)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and "demo finished in" in done.stdout
    assert f"demo campaign ({crowd} crowd)" in done.stdout
    assert "against the planted bots and careless workers: precision" in done.stdout
    if crowd == "web":
        assert " answers posted over HTTP, 0 refused" in done.stdout
    with Project(tmp_path / "demo" / "project", lock=False) as project:
        answers = project.store.answers()
    assert set(answers["crowd"]) == {"web" if crowd == "web" else "mturk-fake"}


def progress(root: Path) -> tuple[int, int]:
    """``(answers, open hand-outs)`` of the web campaign now."""
    with Project(root, lock=False) as project:
        figures = project.store.web_batch_progress()  # no batch yet: no figures
        return project.store.answer_total(), int(figures.get("open_assignments", 0))


def test_a_crashed_web_demo_resumes_releases_what_it_held_and_audits_its_judges(tmp_path):
    folder = small_demo(tmp_path / "demo")
    root = folder / "project"
    crashed = subprocess.Popen(
        demo_command(folder, "web"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and crashed.poll() is None:
            answers, held = progress(root) if (root / "state.sqlite").exists() else (0, 0)
            if answers >= 5 and held:
                break
            time.sleep(0.05)
    finally:
        os.killpg(crashed.pid, signal.SIGKILL)
        crashed.wait()
    answers, held = progress(root)
    assert held > 0, "the crashed run held questions"

    started = time.monotonic()
    done = run_demo(folder, "web")
    assert done.returncode == 0, done.stderr[-2000:]
    assert time.monotonic() - started < 240, "the resumed run did not wait on held questions"
    assert "resuming the demo" in done.stderr and "0 refused" in done.stdout
    with Project(root, lock=False) as project:
        closed = project.store.web_batch_progress().get("open_assignments", 0) == 0
        judges = set(project.store.answers()["worker_id"])
    assert closed and judges & {f"J{k:04d}" for k in range(41, 81)}, "new judges answered"
    audit = next(line for line in done.stdout.splitlines() if "planted bots" in line)
    assert "precision 0.00, recall 0.00" not in audit, audit


def test_a_new_run_of_simulated_judges_releases_what_earlier_judges_held(tmp_path):
    """The hand-outs of a crashed run's judges go back to the pool at once, not after the
    timeout (20 minutes by default)."""
    from crowdprefs.campaign import driver
    from crowdprefs.crowds import get_crowd
    from crowdprefs.web import assign
    from crowdprefs.web.judges import release_held
    from crowdprefs.web.security import token_hash

    root = small_demo(tmp_path / "demo") / "project"
    with Project(root) as project:
        driver.next_batch(project)
        driver.publish(project, get_crowd("web", project))
        settings = assign.WebSettings.from_project(project)
        for _, token in assign.invite(project, 2):
            judge = project.store.web_judge(token_hash(token))
            assert assign.next_assignment(project, judge, settings) is not None
        assert project.store.web_batch_progress()["open_assignments"] == 2
        assert release_held(project) == 2
        assert project.store.web_batch_progress()["open_assignments"] == 0
        assert release_held(project) == 0
