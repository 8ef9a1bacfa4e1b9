"""What a judge's request costs the server: one statement reads the client's throttle, the
judge and their question; asking again for a question takes no writer's lock; and clip
downloads are admitted apart, so pages and answers never wait behind them."""

from __future__ import annotations

import contextlib
import re
import socket
import time
import warnings
from collections.abc import Iterator

import httpx
import pytest
from sqlalchemy import event, text
from starlette.exceptions import StarletteDeprecationWarning
from test_web import (
    PLAYED,
    RESEARCHER,
    change,
    invite,
    judge_client,
    make_web_project,
    open_question,
)

from crowdprefs.campaign.project import Project
from crowdprefs.web.app import create_app
from crowdprefs.web.judges import LocalServer
from crowdprefs.web.security import new_token

with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

CLIP = re.compile(r'<audio [^>]*src="(/clip/[^"]+)"')
WRITES = ("INSERT", "UPDATE", "DELETE", "BEGIN IMMEDIATE", "SELECT PG_ADVISORY_XACT_LOCK")
"""How the statements of a write transaction start (SQLite's and PostgreSQL's writer locks)."""


@contextlib.contextmanager
def statements(app) -> Iterator[list[str]]:
    """The SQL statements the server's store sends to the database meanwhile."""
    sent: list[str] = []

    def record(conn, cursor, statement, *args) -> None:
        sent.append(" ".join(statement.split()).upper())

    engine = app.state.project.store.engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", record)


def writes(sent: list[str]) -> list[str]:
    return [s for s in sent if s.startswith(WRITES)]


def queries(sent: list[str]) -> list[str]:
    """The statements but those opening or closing a transaction (SQLite's ``BEGIN``)."""
    return [s for s in sent if s not in ("BEGIN", "COMMIT", "ROLLBACK")]


def test_a_clip_download_is_one_statement_that_changes_nothing(tmp_path, engine):
    """The throttle, the judge and the question's clips are read at once; a throttled client is
    still refused, a valid cookie notwithstanding."""
    root = make_web_project(tmp_path, database=engine)
    (token,) = invite(root, 1)
    with TestClient(create_app(root, RESEARCHER)) as server:
        client = judge_client(server.app, token)
        html = open_question(client)[2]
        clips = CLIP.findall(html)
        assert len(clips) == 3
        for path in clips:
            with statements(server.app) as sent:
                audio = client.get(path)
            assert audio.status_code == 200 and audio.content[:4] == b"RIFF"
            assert len(queries(sent)) == 1 and not writes(sent), sent
        assert client.get(clips[0].rsplit("/", 1)[0] + "/other").status_code == 404
        guesser = TestClient(server.app)
        for _ in range(server.app.state.throttle.limit):
            assert guesser.get(f"/invite/{new_token()}").status_code == 403
        assert client.get(clips[0]).status_code == 200  # a valid session always passes
        guesser.cookies.set("crowdprefs_judge", new_token())
        refused = guesser.get(clips[0])
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0


def test_a_question_page_and_an_answer_read_the_session_once(tmp_path, engine):
    """The page's judge, throttle and question come in one statement, and so do the answer's
    before its one write transaction."""
    root = make_web_project(tmp_path, database=engine)
    (token,) = invite(root, 1)
    with TestClient(create_app(root, RESEARCHER)) as server:
        client = judge_client(server.app, token)
        assignment, csrf, _ = open_question(client)
        with statements(server.app) as sent:
            assert client.get(f"/hit/{assignment}").status_code == 200
        assert not writes(sent) and sum("WEB_THROTTLE" in s for s in sent) == 1
        with statements(server.app) as sent:
            posted = client.post(
                f"/hit/{assignment}",
                data={"csrf": csrf, "choice": "A", **PLAYED},
                follow_redirects=False,
            )
        assert posted.status_code == 303
        before = queries(sent[: next(i for i, s in enumerate(sent) if s.startswith(WRITES))])
        assert len(before) == 1 and "WEB_THROTTLE" in before[0], sent


def test_asking_again_for_a_question_takes_no_writers_lock(tmp_path, engine):
    """A judge who holds a question, or for whom no pair has room (judges waiting for the next
    batch ask again and again), is answered without a write transaction; the rules hold."""
    root = make_web_project(tmp_path, database=engine)
    first, second, third = invite(root, 3)
    with TestClient(create_app(root, RESEARCHER)) as server:
        change(server.app.state.project, "UPDATE pairs SET answers_wanted = 1")
        holder = judge_client(server.app, first)
        held = open_question(holder)[0]
        with statements(server.app) as sent:
            assert open_question(holder)[0] == held
        assert sent and not writes(sent), sent
        answering = judge_client(server.app, second)
        answered = 0
        page = answering.post("/next")
        while page.url.path.startswith("/hit/"):
            csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
            page = answering.post(page.url.path, data={"csrf": csrf, "choice": "B", **PLAYED})
            answered += 1
        assert page.url.path == "/done" and answered > 0
        waiting = judge_client(server.app, third)
        with statements(server.app) as sent:
            assert waiting.post("/next").url.path == "/done"
        assert sent and not writes(sent), sent
    with Project(root) as project:
        answers = project.store.answers()
        progress = project.store.web_batch_progress()
    assert len(answers) == answered and answers["pair_id"].is_unique
    assert progress["pairs"] == answered + 1 and progress["open_assignments"] == 1


def _stalled_download(port: int, path: str, token: str) -> socket.socket:
    """A client that asks for ``path`` and reads only the response's first bytes, so the server
    keeps streaming it (a slow listener)."""
    stalled = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.settimeout(10)
    stalled.connect(("127.0.0.1", port))
    request = f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nCookie: crowdprefs_judge={token}"
    stalled.sendall(f"{request}\r\n\r\n".encode())
    assert stalled.recv(12) == b"HTTP/1.1 200"
    return stalled


def test_clip_downloads_are_admitted_apart_from_pages_and_answers(tmp_path):
    """With ``max_in_flight = 1``, a clip still streaming to a slow listener leaves pages and
    answers to be served; another clip download is asked to come back (503) until it ends."""
    root = make_web_project(tmp_path, web={"max_in_flight": 1})
    big = tmp_path / "clips" / "long.wav"
    big.write_bytes(b"RIFF" + bytes(48 * 1024 * 1024))  # more than loopback buffers hold
    with Project(root) as project:
        for query in ("q0", "q1"):  # every query of the project
            project.store.set_clip(query, None, str(big), 1000.0)
    (token,) = invite(root, 1)
    with LocalServer(root, RESEARCHER) as server, httpx.Client(base_url=server.url) as client:
        client.get(f"/invite/{token}")
        page = client.post("/next", follow_redirects=True)
        query_clip = next(p for p in CLIP.findall(page.text) if p.endswith("/query"))
        other_clip = next(p for p in CLIP.findall(page.text) if not p.endswith("/query"))
        stalled = _stalled_download(int(server.url.rsplit(":", 1)[1]), query_clip, token)
        try:
            assert client.get(page.url.path).status_code == 200
            assert client.get("/welcome").status_code == 200
            busy = client.get(other_clip)
            assert busy.status_code == 503 and "Retry-After" in busy.headers
        finally:
            stalled.close()
        deadline = time.monotonic() + 10
        while (status := client.get(other_clip).status_code) == 503:
            assert time.monotonic() < deadline, "the stalled download never ended"
            time.sleep(0.05)
        assert status == 200


@pytest.mark.parametrize("path", ["/welcome", "/clip/unknown/query"])
def test_a_stale_session_is_refused_and_counted_once(tmp_path, path):
    """A stale cookie on a page or a clip is refused (403) and counted as one failed attempt,
    however often it comes back."""
    root = make_web_project(tmp_path)
    with TestClient(create_app(root, RESEARCHER)) as server:
        client = TestClient(server.app)
        client.cookies.set("crowdprefs_judge", new_token())
        for _ in range(3):
            assert client.get(path).status_code == 403
        with server.app.state.project.store.read() as conn:
            assert conn.execute(text("SELECT count(*) FROM web_throttle")).scalar_one() == 1
