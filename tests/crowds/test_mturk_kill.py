"""Kill -9 at random moments during publish and collect, resume: nothing lost, nothing twice.

The campaign runs in a forked child talking to the fake (a loopback server in this process);
the child is killed with SIGKILL at a random moment while it publishes or collects, 50 times,
and resumed each time: on a SQLite file and on a PostgreSQL database.
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections import Counter

import pandas as pd
import pytest
from mturk_campaign import make_project, run_campaign, start_fake
from sqlalchemy import func, select

from crowdprefs.campaign import driver
from crowdprefs.campaign.project import Project
from crowdprefs.campaign.store import Store, tables
from crowdprefs.crowds.mturk.crowd import MTurkCrowd

KILLS = 50


def _child(root, url: str) -> None:
    try:
        with Project(root) as project:
            run_campaign(project, MTurkCrowd(project, target="fake", endpoint_url=url))
    except BaseException:  # noqa: BLE001 (any failure is reported through the exit code)
        os._exit(3)
    os._exit(0)


def _progress(store: Store) -> tuple:
    """The last batch and its status, and how many HITs, answers and applied reviews."""
    batches, reviews = tables.batches, tables.answer_reviews
    with store.read() as conn:
        batch = conn.execute(
            select(batches.c.iteration, batches.c.status).order_by(batches.c.iteration.desc())
        ).first()
        counts = conn.execute(
            select(
                select(func.count()).select_from(tables.hits).scalar_subquery(),
                select(func.count()).select_from(tables.answers).scalar_subquery(),
                select(func.count(reviews.c.applied_at)).scalar_subquery(),
            )
        ).one()
    return (tuple(batch) if batch else (0, "none")) + tuple(counts)


def _run_with_kills(root, fake, url: str, kills: int, base: float, seed: int) -> Counter:
    """Run the campaign in forked children, SIGKILLing the first ``kills`` ones.

    Kills alternate between the two phases: the parent watches the state until the child
    is publishing (batch ``built``) or collecting and reviewing (batch ``published``), then
    kills it after a random delay of up to ``base`` seconds. Aiming at a phase, rather than
    at a time, keeps both phases covered however fast the machine is. Returns how many
    kills hit each batch status.
    """
    rng = random.Random(seed)
    killed: Counter = Counter()
    with Project(root) as watched:
        location = watched.store.location
    store = Store(location, lock=False)  # the parent only reads
    try:
        return _kill_children(store, root, fake, url, kills, base, rng, killed)
    finally:
        store.close()


def _kill_children(store, root, fake, url, kills, base, rng, killed) -> Counter:
    while True:
        with fake.lock:  # the fake's server thread is between requests: the child inherits no
            pid = os.fork()  # lock it holds (a SQLite mutex held at the fork hung a child)
        if pid == 0:
            _child(root, url)
        target = ("built", "published")[killed.total() % 2]
        kill_at = None
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                assert os.waitstatus_to_exitcode(status) == 0, "the campaign failed (not a kill)"
                return killed
            now = time.monotonic()
            if kill_at is None and killed.total() < kills and _progress(store)[1] == target:
                kill_at = now + rng.uniform(0.0, base)
            if kill_at is not None and now >= kill_at:
                break
            time.sleep(0.005)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        killed[_progress(store)[1]] += 1


def _answers(project: Project) -> pd.DataFrame:
    frame = project.store.answers(include_rejected=True)
    return frame[["iteration", "query", "x", "y", "worker_id", "choice", "status"]]


def _check_against(root, fake, expected_lists, expected_answers) -> None:
    """One HIT per pair, every assignment stored once, the same answers and lists."""
    with Project(root) as project:
        assert driver.next_batch(project) is None
        pairs = project.store.pairs()
        hits = fake.hits()
        # exactly one HIT per pair, on MTurk and in the state
        assert len(hits) == len(pairs)
        assert sorted(int(h["RequesterAnnotation"].rsplit(" ", 1)[1]) for h in hits) == sorted(
            pairs["pair_id"]
        )
        local_hits = project.store.hits()["hit_id"]
        assert sorted(local_hits) == sorted(h["HITId"] for h in hits)
        # every assignment stored once, none lost
        remote = {a["AssignmentId"] for h in hits for a in fake.assignments(h["HITId"])}
        stored = project.store.answers(include_rejected=True)["assignment_id"]
        assert stored.is_unique and set(stored) == remote
        # the same answers and the same lists as the uninterrupted run
        key = ["iteration", "query", "x", "y", "worker_id"]
        got = _answers(project).sort_values(key, ignore_index=True)
        pd.testing.assert_frame_equal(got, expected_answers.sort_values(key, ignore_index=True))
        pd.testing.assert_frame_equal(driver.lists(project), expected_lists)


@pytest.mark.slow
def test_fifty_kills_during_publish_and_collect(tmp_path, databases):
    reference = make_project(tmp_path / "reference", answers=3, database=databases())
    fake, url = start_fake(reference)
    started = time.monotonic()
    run_campaign(reference, MTurkCrowd(reference, target="fake", endpoint_url=url))
    whole = time.monotonic() - started
    expected_lists = driver.lists(reference)
    expected_answers = _answers(reference)
    reference.close()
    fake.stop()

    # Kills land anywhere in a resumed run (each kill loses at most the work since the last
    # one). On a fast machine a resumed run may finish the campaign before all kills landed:
    # the remaining kills then go to a fresh campaign, each checked against the reference.
    killed: Counter = Counter()
    for campaign in range(KILLS):
        project = make_project(tmp_path / f"killed-{campaign}", answers=3, database=databases())
        root = project.root
        project.close()
        fake, url = start_fake(project)
        left = KILLS - killed.total()
        killed += _run_with_kills(root, fake, url, left, base=whole / 40, seed=2026 + campaign)
        _check_against(root, fake, expected_lists, expected_answers)
        fake.stop()
        if killed.total() == KILLS:
            break
    assert killed.total() == KILLS
    assert killed["built"] and killed["published"], killed  # during publish and collect
