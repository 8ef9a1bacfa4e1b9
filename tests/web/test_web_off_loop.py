"""The server never waits on its own store: a request's store calls run off the event loop, so
one request waiting for the writers' lock holds up no other; the site tells time by the clock
it is given; and importing the store builds none of the server's statements."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from datetime import UTC, datetime, timedelta

import httpx
from sqlalchemy import event, text
from test_web import PLAYED, RESEARCHER, invite, make_web_project

from crowdprefs.campaign.project import Project
from crowdprefs.web.judges import LocalServer

CSRF = re.compile(r'name="csrf" value="([^"]+)"')
WRITER_LOCK = ("BEGIN IMMEDIATE", "SELECT PG_ADVISORY_XACT_LOCK")
"""The statement that takes the writers' lock (SQLite's, PostgreSQL's)."""
GUARD = 30.0
"""Seconds a request may take before the test gives up on it: a guard against a deadlock (the
old server answered nothing while its loop waited on the lock the test holds), not a bound."""


def _answered(root) -> int:
    with Project(root, lock=False) as project:
        return project.store.scalar(text("SELECT count(*) FROM answers"))


def test_a_request_waiting_for_the_writers_lock_holds_up_no_other(tmp_path, engine):
    """While another connection holds the writers' lock and a judge's answer waits for it on
    the server, the home page and another judge's pages are answered; the answer is stored
    once the lock is given back. Asserted by order of completion: the other requests finish
    while the answer is still waiting."""
    root = make_web_project(tmp_path, database=engine)
    first, second = invite(root, 2)
    with (
        LocalServer(root, RESEARCHER) as server,
        httpx.Client(base_url=server.url, timeout=GUARD) as judge,
        httpx.Client(base_url=server.url, timeout=GUARD) as other,
    ):
        judge.get(f"/invite/{first}")
        page = judge.post("/next", follow_redirects=True)
        form = {"csrf": CSRF.search(page.text).group(1), "choice": "equal", **PLAYED}
        other.get(f"/invite/{second}")
        waiting = threading.Event()

        def seen(conn, cursor, statement, *args) -> None:
            if " ".join(statement.split()).upper().startswith(WRITER_LOCK):
                waiting.set()  # the server's answer is about to wait for the lock

        store = server.app.state.project.store
        posted: list[httpx.Response] = []
        with Project(root, lock=False) as holder, holder.store.transaction():
            event.listen(store.engine, "before_cursor_execute", seen)
            try:
                post = threading.Thread(
                    target=lambda: posted.append(judge.post(page.url.path, data=form))
                )
                post.start()
                assert waiting.wait(GUARD), "the answer never reached the store"
                assert other.get("/").status_code == 200
                assert "Start" in other.get("/welcome").text
                assert other.get("/healthz").text.startswith("ok")
                assert post.is_alive() and not posted, "the answer did not wait for the lock"
                assert _answered(root) == 0
            finally:
                event.remove(store.engine, "before_cursor_execute", seen)
        post.join(GUARD)
    assert posted and posted[0].status_code == 303
    assert _answered(root) == 1


class ManualClock:
    """A clock the test moves by hand."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> datetime:
        return self.at


def test_the_site_tells_time_by_the_clock_it_is_given(tmp_path):
    """Hand-out, answer and the seconds between them are the given clock's (no process-wide
    state: a second site in the same process keeps the wall clock)."""
    root = make_web_project(tmp_path)
    (token,) = invite(root, 1)
    clock = ManualClock(datetime(2031, 5, 6, 7, 8, 9, tzinfo=UTC))
    with (
        LocalServer(root, RESEARCHER, clock) as server,
        httpx.Client(base_url=server.url, timeout=GUARD) as judge,
    ):
        judge.get(f"/invite/{token}")
        page = judge.post("/next", follow_redirects=True)
        clock.at += timedelta(seconds=42)
        form = {"csrf": CSRF.search(page.text).group(1), "choice": "equal", **PLAYED}
        assert judge.post(page.url.path, data=form).status_code == 303
    with Project(root, lock=False) as project:
        row = project.store.rows(text("SELECT accepted_at, submitted_at, seconds FROM answers"))
    ((accepted, submitted, seconds),) = row
    assert accepted.startswith("2031-05-06T07:08:09")
    assert submitted.startswith("2031-05-06T07:08:51")
    assert seconds == 42.0


def test_importing_the_store_and_the_events_builds_no_statement_and_no_app():
    """A command that imports the store builds none of the server's statements, and the
    Prolific events reach the campaign's advance without importing the app."""
    script = (
        "import sys\n"
        "from crowdprefs.campaign.store import Store\n"
        "import crowdprefs.web.prolific_events\n"
        "from crowdprefs.crowds.web.sql import SQL\n"
        "assert vars(SQL) == {}, sorted(vars(SQL))\n"
        "assert 'crowdprefs.web.app' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
