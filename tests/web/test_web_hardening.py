"""The web crowd against hostile or careless requests: body limits while streaming, the
listening gate on the server, safe GETs, token guessing, weak researcher tokens, token files,
and a Content-Security-Policy without inline code it does not know."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import os
import re
import select
import socket
import stat
import warnings

import httpx
import pytest
from sqlalchemy import text
from starlette.exceptions import StarletteDeprecationWarning
from test_web import (
    ANSWER_A,
    PLAYED,
    RESEARCHER,
    answers_frame,
    invite,
    judge_client,
    judge_with_question,
    make_web_project,
    open_question,
)
from typer.testing import CliRunner

from crowdprefs.campaign.project import Project
from crowdprefs.cli.app import app as cli_app
from crowdprefs.errors import InputError
from crowdprefs.web import assign
from crowdprefs.web.app import MAX_BODY, create_app
from crowdprefs.web.judges import LocalServer
from crowdprefs.web.security import (
    RESEARCHER_TOKEN_ENV,
    Throttle,
    check_researcher_token,
    new_token,
    researcher_token,
)

with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient


@pytest.fixture
def project_dir(tmp_path):
    return make_web_project(tmp_path)


def open_assignments(root) -> int:
    with Project(root) as project:
        return int(project.store.web_batch_progress()["open_assignments"])


# --- request bodies ---------------------------------------------------------------------------


def test_a_chunked_body_is_cut_off_at_the_limit_with_413(project_dir):
    """A body without Content-Length (chunked) is refused once it passes the limit: of 200 MB
    offered in 16 KB chunks the server pulls only what fits under the limit, plus one chunk."""
    (token,) = invite(project_dir, 1)
    chunk = 16 * 1024
    pulled = 0

    async def two_hundred_megabytes():
        nonlocal pulled
        for _ in range(200 * 1024 * 1024 // chunk):
            pulled += 1
            yield b"x" * chunk

    with TestClient(create_app(project_dir, RESEARCHER)) as server:
        client = judge_client(server.app, token)
        assignment, _, _ = open_question(client)

        async def post() -> httpx.Response:
            transport = httpx.ASGITransport(app=server.app)
            async with httpx.AsyncClient(
                transport=transport, base_url="http://testserver", cookies=client.cookies
            ) as streaming:
                return await streaming.post(
                    f"/hit/{assignment}",
                    content=two_hundred_megabytes(),
                    headers={"content-type": "application/x-www-form-urlencoded"},
                )

        response = asyncio.run(post())
    assert response.status_code == 413 and "too large" in response.text
    assert "content-length" not in response.request.headers
    assert pulled * chunk <= MAX_BODY + chunk
    assert answers_frame(project_dir).empty


def test_a_declared_length_over_the_limit_is_refused_before_reading(project_dir):
    with judge_with_question(project_dir) as (client, assignment, csrf):
        big = {"csrf": csrf, **ANSWER_A, "comment": "x" * (MAX_BODY + 1)}
        assert client.post(f"/hit/{assignment}", data=big).status_code == 413
        # Every POST is limited, also the ones that read no form.
        assert client.post("/next", content=b"x" * (MAX_BODY + 1)).status_code == 413
    assert answers_frame(project_dir).empty


def raw_post(port: int, path: str, head: list[str], chunks, timeout: float = 5.0):
    """Send a request over a plain socket, stopping when the server answers or stops reading;
    returns (status line, bytes of body sent)."""
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(("\r\n".join([f"POST {path} HTTP/1.1", *head, "", ""])).encode())
        for chunk in chunks:
            if select.select([sock], [], [], 0)[0]:
                break
            try:
                sock.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError, TimeoutError):
                break
            sent += len(chunk)
        sock.settimeout(timeout)
        status = sock.recv(4096).split(b"\r\n", 1)[0].decode()
    return status, sent


@pytest.mark.slow
def test_a_real_server_cuts_a_200_megabyte_chunked_post_short(project_dir):
    """Against uvicorn on loopback: a judge's chunked 200 MB answer gets 413 long before it is
    sent."""
    (token,) = invite(project_dir, 1)
    with LocalServer(project_dir, RESEARCHER) as server:
        with httpx.Client(base_url=server.url, follow_redirects=True) as client:
            client.get(f"/invite/{token}")
            path = client.post("/next").url.path
        assert path.startswith("/hit/")
        port = int(server.url.rsplit(":", 1)[1])
        piece = b"x" * (1024 * 1024)
        framed = b"%x\r\n%s\r\n" % (len(piece), piece)
        head = [
            f"Host: 127.0.0.1:{port}",
            f"Cookie: crowdprefs_judge={token}",
            "Content-Type: application/x-www-form-urlencoded",
            "Transfer-Encoding: chunked",
        ]
        status, sent = raw_post(port, path, head, (framed for _ in range(200)))
    assert status.split()[1] == "413", status
    assert sent < 50 * 1024 * 1024
    assert answers_frame(project_dir).empty


# --- answers ---------------------------------------------------------------------------------


def test_only_the_known_answer_fields_are_stored(project_dir):
    with judge_with_question(project_dir) as (client, assignment, csrf):
        extra = {f"unknown_{i}": "y" * 1000 for i in range(29)}
        response = client.post(
            f"/hit/{assignment}", data={"csrf": csrf, **ANSWER_A, **extra}, follow_redirects=False
        )
        assert response.status_code == 303
    (raw,) = answers_frame(project_dir)["raw"]
    record = json.loads(raw)
    assert record.keys() == {"fields", "order"}
    assert record["fields"] == {k: float(v) for k, v in PLAYED.items()}
    assert record["order"].keys() == {"a", "b", "clicked", "question"}
    assert "unknown" not in raw and len(raw) < 300


@pytest.mark.parametrize(
    "log, status, message",
    [
        ({}, 422, "not played to its end"),  # only csrf and choice
        ({**PLAYED, "plays_b": "0"}, 422, "variation B was not played"),
        ({**PLAYED, "listen_query": "0.05"}, 422, "the original melody lasts 0.2 s"),
        ({**PLAYED, "listen_a": "nan"}, 400, "play log is damaged"),
        ({**PLAYED, "plays_query": "-1"}, 400, "play log is damaged"),
    ],
)
def test_the_server_refuses_answers_without_listening(project_dir, log, status, message):
    with judge_with_question(project_dir) as (client, assignment, csrf):
        response = client.post(f"/hit/{assignment}", data={"csrf": csrf, "choice": "A", **log})
        assert response.status_code == status and message in response.text
        assert answers_frame(project_dir).empty
        ok = client.post(f"/hit/{assignment}", data={"csrf": csrf, **ANSWER_A})
        assert ok.status_code == 200
    assert len(answers_frame(project_dir)) == 1


def test_the_listening_gate_skips_the_time_of_clips_of_unknown_duration():
    seconds = {"query": None, "a": 10.0, "b": None}
    log = {**{k: float(v) for k, v in PLAYED.items()}, "listen_a": 8.95}
    assign.check_listening(log, seconds, 0.9)
    with pytest.raises(assign.NotListened, match="variation A lasts 10.0 s"):
        assign.check_listening({**log, "listen_a": 5.0}, seconds, 0.9)  # heard at double speed


# --- safe GETs ---------------------------------------------------------------------------------


def test_get_next_changes_nothing_and_post_next_hands_out_a_question(project_dir):
    (token,) = invite(project_dir, 1)
    with TestClient(create_app(project_dir, RESEARCHER)) as server:
        client = judge_client(server.app, token)
        for _ in range(3):
            response = client.get("/next")
            assert response.status_code == 200 and str(response.url).endswith("/welcome")
        assert open_assignments(project_dir) == 0
        assert 'method="post" action="/next"' in response.text
        assignment, _, _ = open_question(client)
        assert open_assignments(project_dir) == 1
        for _ in range(3):
            assert str(client.get("/next").url).endswith(f"/hit/{assignment}")
        assert open_question(client)[0] == assignment
        assert open_assignments(project_dir) == 1


# --- tokens ----------------------------------------------------------------------------------


def test_failed_token_attempts_are_rate_limited_per_address(project_dir):
    with TestClient(create_app(project_dir, RESEARCHER)) as server:
        guesser = TestClient(server.app)
        limit = server.app.state.throttle.limit
        for _ in range(limit):
            assert guesser.get(f"/invite/{new_token()}").status_code == 403
        refused = guesser.get(f"/invite/{new_token()}")
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
        assert guesser.get(f"/researcher/{new_token()}").status_code == 429
        guesser.cookies.set("crowdprefs_judge", new_token())
        assert guesser.get("/welcome").status_code == 429
        with server.app.state.project.store.transaction() as conn:
            conn.execute(text("DELETE FROM web_throttle"))
        for _ in range(limit):
            assert guesser.get(f"/researcher/{new_token()}").status_code == 403
        assert guesser.get(f"/invite/{new_token()}").status_code == 429


def locked_out(server, address_of_everyone: TestClient) -> None:
    """Lock the one address every client of ``server`` shares out (wrong invitations)."""
    for _ in range(server.app.state.throttle.limit):
        assert address_of_everyone.get(f"/invite/{new_token()}").status_code == 403
    assert address_of_everyone.get(f"/invite/{new_token()}").status_code == 429


@pytest.mark.parametrize("kind", ["invitation", "session", "question", "study", "researcher"])
def test_a_valid_token_always_passes_behind_a_locked_out_address(tmp_path, engine, kind):
    """Fixes the class "a guesser locks out every judge behind its address" (a university
    proxy, a lab's NAT: every TestClient here has the same address): the token is checked
    first and only failed attempts wait, so a valid invitation, judge session (welcome page,
    question, clip, answer), study link or researcher token passes while wrong ones get 429."""
    root = make_web_project(tmp_path, database=engine)
    (token,) = invite(root, 1)
    with Project(root) as project:
        study = assign.invitation_links(project, 0, study=True).study_link
    study_path = study.split("://", 1)[1].split("/", 1)[1].split("?", 1)[0]
    with TestClient(create_app(root, RESEARCHER)) as server:
        judge = judge_client(server.app, token) if kind in ("session", "question") else None
        held = open_question(judge) if kind == "question" else None
        locked_out(server, TestClient(server.app))
        if kind == "invitation":
            opened = TestClient(server.app).get(f"/invite/{token}")
            assert opened.status_code == 200 and str(opened.url).endswith("/welcome")
        elif kind == "session":
            assert judge.get("/welcome").status_code == 200
            assert judge.post("/next").status_code == 200
        elif kind == "question":
            assignment, csrf, html = held
            clip = re.search(r'src="(/clip/[^"]+)"', html)[1]
            assert judge.get(f"/hit/{assignment}").status_code == 200
            assert judge.get(clip).status_code == 200
            posted = judge.post(f"/hit/{assignment}", data={**ANSWER_A, "csrf": csrf})
            assert posted.status_code == 200 and answers_frame(root).shape[0] == 1
        elif kind == "study":
            joined = TestClient(server.app).get(f"/{study_path}?PROLIFIC_PID={'a1' * 12}")
            assert joined.status_code == 200 and str(joined.url).endswith("/welcome")
            wrong = TestClient(server.app).get(f"/study/{new_token()}?PROLIFIC_PID={'b2' * 12}")
            assert wrong.status_code == 429
        else:
            assert TestClient(server.app).get(f"/researcher/{RESEARCHER}").status_code == 200
        wrong = TestClient(server.app)
        wrong.cookies.set("crowdprefs_judge", new_token())
        assert wrong.get("/welcome").status_code == 429


def test_a_stale_link_reloaded_never_locks_out_the_judges_behind_one_address(project_dir):
    """Behind a proxy every judge shares one address: one old link opened again and again is
    one failure, so the others still get in."""
    (token,) = invite(project_dir, 1)
    stale = new_token()
    with TestClient(create_app(project_dir, RESEARCHER)) as server:
        everyone = TestClient(server.app)
        for _ in range(3 * server.app.state.throttle.limit):
            assert everyone.get(f"/invite/{stale}").status_code == 403
        assert everyone.get(f"/invite/{token}").status_code == 200


def test_failed_attempts_are_counted_by_every_server_process_alike(project_dir):
    """Two server processes of one campaign (two apps on one state) share the count."""
    (token,) = invite(project_dir, 1)
    with (
        TestClient(create_app(project_dir, RESEARCHER)) as one,
        TestClient(create_app(project_dir, RESEARCHER)) as two,
    ):
        limit = one.app.state.throttle.limit
        for i in range(limit):
            server = one if i % 2 else two
            assert TestClient(server.app).get(f"/invite/{new_token()}").status_code == 403
        assert TestClient(one.app).get(f"/invite/{new_token()}").status_code == 429
        assert TestClient(two.app).get(f"/invite/{new_token()}").status_code == 429
        assert TestClient(two.app).get(f"/invite/{token}").status_code == 200


def test_the_throttle_forgets_failures_older_than_its_window(project_dir):
    now = [1_000_000.0]
    throttle = Throttle(limit=3, window=60.0, clock=lambda: now[0])
    with Project(project_dir) as project:
        store = project.store
        for _ in range(3):
            assert throttle.wait(store, "a") == 0
            throttle.fail(store, "a", new_token())
            now[0] += 10
        assert throttle.wait(store, "a") == pytest.approx(30.0) and throttle.wait(store, "b") == 0
        now[0] += 30.5
        assert throttle.wait(store, "a") == 0


@pytest.mark.parametrize("weak", ["", "short", "a" * 40, "ab" * 20, "researcher-token"])
def test_a_weak_researcher_token_is_refused(project_dir, weak):
    with pytest.raises(InputError, match="too weak"):
        check_researcher_token(weak)
    with pytest.raises(InputError, match="too weak"):
        create_app(project_dir, weak)


def test_the_researcher_token_comes_from_a_private_file_or_the_environment(tmp_path, monkeypatch):
    token = new_token()
    file = tmp_path / "token"
    file.write_text(token + "\n")
    file.chmod(0o644)
    with pytest.raises(InputError, match="open to other users: chmod 600"):
        researcher_token(file)
    file.chmod(0o600)
    assert researcher_token(file) == token
    monkeypatch.setenv(RESEARCHER_TOKEN_ENV, "weak")
    with pytest.raises(InputError, match="too weak"):
        researcher_token()
    monkeypatch.delenv(RESEARCHER_TOKEN_ENV)
    made = researcher_token()
    assert len(made) >= 32 and made != researcher_token()


def test_serve_has_no_token_option_and_refuses_a_weak_token(project_dir):
    result = CliRunner().invoke(cli_app, ["serve", str(project_dir), "--researcher-token", "x"])
    assert result.exit_code != 0 and "No such option" in result.output
    weak = CliRunner().invoke(
        cli_app, ["serve", str(project_dir)], env={RESEARCHER_TOKEN_ENV: "password"}
    )
    assert weak.exit_code != 0 and "too weak" in str(weak.exception)


def test_the_invitation_file_is_readable_by_its_owner_only(project_dir, tmp_path):
    out = tmp_path / "links.csv"
    result = CliRunner().invoke(cli_app, ["invite", str(project_dir), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert "/invite/" in out.read_text()


# --- content security policy -------------------------------------------------------------------

INLINE = re.compile(r"<(script|style)>(.*?)</\1>", re.S)


def inline_hashes(html: str) -> set[tuple[str, str]]:
    """``(element, 'sha256-…')`` of each inline script and style element of a page."""
    return {
        (kind, f"'sha256-{base64.b64encode(hashlib.sha256(body.encode()).digest()).decode()}'")
        for kind, body in INLINE.findall(html)
    }


def test_the_csp_allows_only_the_pages_own_inline_code(project_dir):
    (token,) = invite(project_dir, 1)
    with TestClient(create_app(project_dir, RESEARCHER)) as server:
        client = judge_client(server.app, token)
        pages = [client.get("/welcome"), client.post("/next"), TestClient(server.app).get("/")]
        pages.append(TestClient(server.app).get(f"/researcher/{RESEARCHER}"))
        assert "/hit/" in str(pages[1].url)
        seen = set()
        for page in pages:
            policy = dict(
                part.strip().split(" ", 1)
                for part in page.headers["content-security-policy"].split(";")
            )
            assert "unsafe-inline" not in page.headers["content-security-policy"]
            for kind, digest in inline_hashes(page.text):
                assert digest in policy[f"{kind}-src"].split(), (page.url, kind)
                seen.add(kind)
        assert seen == {"script", "style"}


def test_a_finished_judge_sees_the_completion_page_after_the_last_answer(tmp_path):
    root = make_web_project(tmp_path, web={"questions_per_judge": 1})
    (token,) = invite(root, 1)
    with TestClient(create_app(root, RESEARCHER)) as server:
        client = judge_client(server.app, token)
        assignment, csrf, _ = open_question(client)
        response = client.post(f"/hit/{assignment}", data={"csrf": csrf, **ANSWER_A})
        assert str(response.url).endswith("/done") and 'data-state="finished"' in response.text


# --- bodies cut short, fields twice, and the way back ------------------------------------------


def judge_path(server_url: str, token: str) -> str:
    """The path of the question an invited judge holds on a running server."""
    with httpx.Client(base_url=server_url, follow_redirects=True) as client:
        client.get(f"/invite/{token}")
        path = client.post("/next").url.path
    assert path.startswith("/hit/"), path
    return path


def raw_request(port: int, head: list[str], body: bytes) -> bytes:
    """Send a request's head and ``body`` over a plain socket, then close the sending side;
    returns whatever the server answered (nothing when it dropped the connection)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall("\r\n".join([*head, "", ""]).encode() + body)
        sock.shutdown(socket.SHUT_WR)
        answer = b""
        while chunk := sock.recv(4096):
            answer += chunk
    return answer


@pytest.mark.slow
def test_a_body_cut_short_or_badly_chunked_is_one_log_line_and_a_400(project_dir):
    """A Content-Length longer than the body sent, and a chunked body with a bad chunk size:
    the server logs one line each (no traceback), answers 400 where the client still listens,
    and stores nothing."""
    from crowdprefs.web.judges import ServerProcess

    (token,) = invite(project_dir, 1)
    with ServerProcess(project_dir, RESEARCHER) as server:
        path = judge_path(server.url, token)
        head = [
            f"POST {path} HTTP/1.1",
            f"Host: 127.0.0.1:{server.port}",
            f"Cookie: crowdprefs_judge={token}",
            "Content-Type: application/x-www-form-urlencoded",
        ]
        short = raw_request(server.port, [*head, "Content-Length: 500"], b"choice=A&plays")
        chunked = raw_request(
            server.port, [*head, "Transfer-Encoding: chunked"], b"zz\r\nchoice=A\r\n0\r\n\r\n"
        )
        assert httpx.get(f"{server.url}/healthz").status_code == 200
        server.log.seek(0)
        log = server.log.read().decode()
    assert short == b"" or short.startswith(b"HTTP/1.1 400"), short[:80]
    assert chunked.startswith(b"HTTP/1.1 400"), chunked[:80]
    assert "Traceback" not in log and "Exception in ASGI" not in log, log
    assert log.count("the request body was cut short or malformed") == 2, log
    assert answers_frame(project_dir).empty


def test_a_field_sent_twice_refuses_the_post(project_dir):
    """``choice`` twice: which one counts would be a guess, so neither does."""
    with judge_with_question(project_dir) as (client, assignment, csrf):
        body = f"csrf={csrf}&choice=A&choice=B&" + "&".join(f"{k}={v}" for k, v in PLAYED.items())
        response = client.post(
            f"/hit/{assignment}",
            content=body.encode(),
            headers={"content-type": "application/x-www-form-urlencoded"},
        )
        assert response.status_code == 400
        assert "sends the field &#39;choice&#39; twice" in response.text
    assert answers_frame(project_dir).empty


def test_a_refused_answer_links_back_to_its_question(project_dir):
    """The 422 (and 400) page of an answer leads back to the question, which is shown again;
    a refusal the judge cannot fix (403) has no such link."""
    with judge_with_question(project_dir) as (client, assignment, csrf):
        refused = client.post(f"/hit/{assignment}", data={"csrf": csrf, "choice": "A"})
        assert refused.status_code == 422
        back = re.search(r'<a id="back" href="([^"]+)"', refused.text).group(1)
        assert back == f"/hit/{assignment}"
        again = client.get(back)
        assert again.status_code == 200 and f'value="{csrf}"' in again.text
        unchosen = client.post(f"/hit/{assignment}", data={"csrf": csrf, **PLAYED})
        assert unchosen.status_code == 400 and f'href="/hit/{assignment}"' in unchosen.text
        forged = client.post(f"/hit/{assignment}", data={"csrf": "forged", **ANSWER_A})
        assert forged.status_code == 403 and 'id="back"' not in forged.text
        assert client.post(f"/hit/{assignment}", data={"csrf": csrf, **ANSWER_A}).status_code == 200


def test_a_play_log_claiming_more_than_the_server_saw_is_refused(project_dir):
    """Posted at once after the hand-out: 1e300 s of listening, 1e30 plays or an hour on the
    page are refused with the field named; the honest log of the same moment is stored."""
    with judge_with_question(project_dir) as (client, assignment, csrf):
        for field, value in [
            ("listen_b", "1e300"),
            ("plays_a", "1e30"),
            ("seconds_on_page", "3600"),
        ]:
            form = {"csrf": csrf, **ANSWER_A, field: value}
            response = client.post(f"/hit/{assignment}", data=form)
            assert response.status_code == 400, (field, response.status_code)
            assert f"({field} = {float(value):g} but the question was handed out" in response.text
        assert answers_frame(project_dir).empty
        assert client.post(f"/hit/{assignment}", data={"csrf": csrf, **ANSWER_A}).status_code == 200
    assert len(answers_frame(project_dir)) == 1


def test_a_researcher_token_file_that_is_no_file_is_named_in_one_line(project_dir, tmp_path):
    from console_script import crowdprefs

    pipe, missing = tmp_path / "token-pipe", tmp_path / "missing"
    os.mkfifo(pipe)  # reading it would wait for a writer forever
    for given, said in (
        (pipe, f"the researcher token file {pipe} is a named pipe (FIFO), not a regular file"),
        (missing, f"the researcher token file not found: {missing}"),
        (tmp_path, f"the researcher token file {tmp_path} is a folder, not a file"),
    ):
        done = crowdprefs("serve", project_dir, "--researcher-token-file", given)
        assert done.returncode == 2, done.stdout
        assert done.stderr.strip().splitlines() == [f"error: {said}"]
