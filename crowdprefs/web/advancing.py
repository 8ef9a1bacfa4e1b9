"""Moving the campaign on from the judges' site: after a batch's last answer, at start-up, when
a Prolific participant left, and when a server process finds a batch whose answers are all in
(:func:`watch`). Aggregating, building and publishing the next batch and reaching Prolific run
on a worker thread with a project (and connections) of their own, never on the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from typing import Any

from starlette.concurrency import run_in_threadpool

from crowdprefs.campaign.crowd import Crowd
from crowdprefs.campaign.driver import advance
from crowdprefs.campaign.project import Project
from crowdprefs.crowds.prolific.crowd import ProlificCrowd
from crowdprefs.crowds.web import WebCrowd
from crowdprefs.errors import CrowdprefsError
from crowdprefs.quality.review import Reviewer
from crowdprefs.web.assign import study_terms
from crowdprefs.web.http import store_call

log = logging.getLogger("crowdprefs.web")

MOVE_ON_WAIT = 20.0
"""Seconds the judge whose answer completed a batch waits at most for another thread or
process moving the campaign on (then, or when nothing is free, the done page)."""
LOCK_POLL = 0.25
"""Seconds between two tries of the project lock while waiting for its holder."""
WATCH_EVERY = 5.0
"""Seconds between two looks of each server process for a batch whose answers are all in but
that was not moved on (the process that took its last answer ended meanwhile)."""

_ADVANCING = threading.Lock()
"""Held by the thread of this process that moves the campaign on (the project lock belongs to
the process: it keeps other processes out, this keeps the process's other threads out)."""


def _crowd(app: Any, project: Project) -> Crowd:
    """The crowd the campaign moves on with: the web crowd, recruited by the project's Prolific
    study when it has one that was not stopped and the app reaches Prolific (``prolific``)."""
    connect = app.state.prolific
    study = project.store.prolific_study()
    if connect is None or study is None or study.status == "COMPLETED":
        return WebCrowd()
    return ProlificCrowd(project, connect(), study_terms(project))


def _advance(app: Any, project: Project, wait: float = 0.0) -> None:
    """Move the campaign on, at most one process at a time across every server process and
    host, and never beside a command of the researcher's: it runs only while it holds the
    project lock (:mod:`crowdprefs.campaign.store.lock`: a file lock on SQLite, an advisory
    lock on PostgreSQL), else it is left to its holder, who moves the campaign as far as the
    answers allow (:func:`~crowdprefs.campaign.driver.advance` reads where the campaign stands,
    so running it again after another process is harmless). With ``wait`` seconds, a holder
    (another thread or process) is waited for that long, and the campaign moved on after it:
    the judge whose answer completed the batch is then handed the next batch's question even
    when a server's :func:`watch` or another server process moved it on. A refusal (budget,
    Prolific, settings) stops the campaign with its line on the researcher page and in the
    log; answers are still taken. The line is kept in the state, so every server process shows
    the same."""
    if not (_ADVANCING.acquire(timeout=wait) if wait > 0 else _ADVANCING.acquire(False)):
        return  # another thread of this process is moving it on
    try:
        deadline = time.monotonic() + wait
        while not project.store.lock.try_acquire():
            if time.monotonic() >= deadline:
                log.info("campaign: moved on by another process (it holds the project lock)")
                return
            time.sleep(LOCK_POLL)
        _advance_holding_the_lock(app, project)
    finally:
        _ADVANCING.release()


def _advance_holding_the_lock(app: Any, project: Project) -> None:
    crowd: Crowd | None = None
    try:
        crowd = _crowd(app, project)
        line = advance(project, crowd, Reviewer())
    except CrowdprefsError as error:
        line = f"stopped: {error}"
    finally:
        if isinstance(crowd, ProlificCrowd):
            crowd.client.close()
    try:
        project.store.set_web_campaign(line)
    finally:
        project.store.lock.release()
    log.info("campaign: %s", line)


def advance_apart(app: Any, wait: float = 0.0) -> None:
    """Move the campaign on (see :func:`_advance`) on this worker thread, through a project
    opened for it (its changes take the project lock, released when it is done)."""
    with Project(app.state.root) as project:
        _advance(app, project, wait)


async def move_on(app: Any, wait: float = 0.0) -> None:
    """:func:`advance_apart` on a worker thread, awaited."""
    await run_in_threadpool(advance_apart, app, wait)


def stalled(progress: dict[str, Any]) -> bool:
    """Whether the last batch's ``progress``
    (:meth:`~crowdprefs.crowds.web.store.WebStore.web_batch_progress`) says it waits to be
    moved on: collected, or a web batch whose pairs all have their answers."""
    return progress["status"] == "collected" or (
        progress["status"] in ("built", "published")
        and progress["crowd"] in (None, "web")
        and 0 < progress["pairs"] == progress["pairs_complete"]
    )


async def watch(app: Any) -> None:
    """Every :data:`WATCH_EVERY` seconds, move the campaign on when the open web batch has all
    its answers: a server process killed while moving it on leaves the work to the others, or
    to itself once restarted."""
    while True:
        await asyncio.sleep(WATCH_EVERY)
        try:
            progress = await store_call(app, app.state.project.store.web_batch_progress)
        except CrowdprefsError as error:
            log.warning("cannot read the campaign: %s", error)
            continue
        if stalled(progress):
            await move_on(app)
