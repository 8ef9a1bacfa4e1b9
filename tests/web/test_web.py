"""The in-house web crowd: assignment rules, storage, security and the researcher page.

Runs the real Starlette application in-process (``TestClient``) on a real project with tiny WAV
clips; the browser and load tests are in ``test_web_browser.py`` and ``test_web_load.py``.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import warnings
import wave
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text
from starlette.exceptions import StarletteDeprecationWarning
from typer.testing import CliRunner

from crowdprefs.campaign.driver import advance
from crowdprefs.campaign.project import Project, Settings, init_project
from crowdprefs.cli.app import app as cli_app
from crowdprefs.crowds.web import WebCrowd
from crowdprefs.crowds.web.store import WebAssignment
from crowdprefs.web import assign, headphones
from crowdprefs.web.app import create_app
from crowdprefs.web.judges import read_wav
from crowdprefs.web.security import is_loopback, token_hash

with warnings.catch_warnings():  # starlette asks for httpx2, which is not a dependency
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

RESEARCHER = "researcher-token-for-these-tests-0123456789"
CLIP_SECONDS = 0.25
PLAYED = {
    **{f"plays_{clip}": "1" for clip in ("query", "a", "b")},
    **{f"listen_{clip}": "0.3" for clip in ("query", "a", "b")},
    "seconds_on_page": "0.9",
}
"""The play log of a page whose three clips (0.25 s each) were heard to the end, posted within a
second of the hand-out (the server refuses a log claiming more time than it saw)."""
ANSWER_A = {**PLAYED, "choice": "A"}
ANSWER_B = {**PLAYED, "choice": "B"}


def change(project: Project, sql: str) -> None:
    """Change the project's state behind the store's back (a test's shortcut)."""
    with project.store.transaction() as conn:
        conn.execute(text(sql))


def write_wav(path: Path, freq: float, seconds: float = CLIP_SECONDS, rate: int = 8000) -> None:
    """A tiny mono 16-bit sine clip."""
    t = np.arange(int(seconds * rate)) / rate
    samples = (0.3 * np.sin(2 * np.pi * freq * t) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(rate)
        handle.writeframes(samples.tobytes())


def make_web_project(
    root: Path,
    *,
    queries: int = 2,
    size: int = 4,
    answers: int = 3,
    web=None,
    database: str | None = None,
):
    """A project whose queries and candidates all have WAV clips of known duration (its state
    in the PostgreSQL ``database`` when given); returns its folder."""
    clips = root / "clips"
    clips.mkdir(parents=True)
    rows = []
    for q in range(queries):
        write_wav(clips / f"q{q}.wav", 220 + 40 * q)
        for d in range(size):
            write_wav(clips / f"q{q}-d{d}.wav", 330 + 20 * d)
            rows.append((f"q{q}", f"q{q}-d{d}", f"clips/q{q}-d{d}.wav", f"clips/q{q}.wav"))
    frame = pd.DataFrame(rows, columns=["query", "document", "audio", "query_audio"])
    frame.to_csv(root / "candidates.csv", index=False)
    settings = Settings(answers_per_pair=answers, reward=0.0, sections={"web": web or {}})
    with init_project(
        root / "project", root / "candidates.csv", settings=settings, database=database
    ) as project:
        for query, document, audio, query_audio in rows:
            project.store.set_clip(query, document, str(root / audio), CLIP_SECONDS)
            project.store.set_clip(query, None, str(root / query_audio), CLIP_SECONDS)
    return root / "project"


@pytest.fixture
def project_dir(tmp_path: Path) -> Path:
    return make_web_project(tmp_path)


def invite(root: Path, n: int) -> list[str]:
    with Project(root) as project:
        return [token for _, token in assign.invite(project, n)]


def judge_client(app, token: str) -> TestClient:
    """A client sharing ``app`` that opened the invitation ``token`` (so holds its cookie)."""
    client = TestClient(app)
    response = client.get(f"/invite/{token}")
    assert response.status_code == 200 and "Start" in response.text
    return client


def open_question(client: TestClient) -> tuple[str, str, str]:
    """Ask for a question (``POST /next``) and follow to its page: ``(assignment_id, csrf,
    html)``."""
    response = client.post("/next")
    assert response.status_code == 200
    match = re.search(r"/hit/([A-Za-z0-9_-]+)$", str(response.url))
    assert match, f"not a question page: {response.url}"
    csrf = re.search(r'name="csrf" value="([^"]+)"', response.text).group(1)
    return match.group(1), csrf, response.text


@contextlib.contextmanager
def judge_with_question(root: Path) -> Iterator[tuple[TestClient, str, str]]:
    """The project's one invited judge on a served app, holding their first question: the
    judge's client, the assignment id and its CSRF token."""
    (token,) = invite(root, 1)
    with TestClient(create_app(root, RESEARCHER)) as server:
        client = judge_client(server.app, token)
        assignment, csrf, _ = open_question(client)
        yield client, assignment, csrf


def clip_project(tmp_path: Path, seconds: float) -> Path:
    """The web test project (one query, two candidates) with every clip ``seconds`` long."""
    root = make_web_project(tmp_path, queries=1, size=2)
    clips = tmp_path / "clips"
    with Project(root) as project:
        for document in ("q0-d0", "q0-d1", None):
            path = clips / f"{document or 'q0'}.wav"
            write_wav(path, 330.0, seconds=seconds)
            project.store.set_clip("q0", document, str(path), seconds)
    return root


def pass_headphone_check(client: TestClient, page) -> object:
    """Answer the headphone check on ``page`` as a listener with headphones would (the noise
    whose two ears differ hides the tone); returns the page that follows."""
    form = {"csrf": re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)}
    for path, trial, sound in re.findall(r'src="(/headphones/(\d+)/(\d+))"', page.text):
        if headphones.tone_sound(read_wav(client.get(path).content)):
            form[f"trial_{trial}"] = sound
    return client.post("/headphones", data=form)


def stamp(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds")


def answers_frame(root: Path) -> pd.DataFrame:
    with Project(root) as project:
        return project.store.answers(include_rejected=True)


def test_judge_answers_and_the_answer_is_stored_at_once(project_dir):
    (token,) = invite(project_dir, 1)
    with TestClient(create_app(project_dir, RESEARCHER)) as server:
        client = judge_client(server.app, token)
        assignment, csrf, html = open_question(client)
        assert 'data-mode="web"' in html
        clips = re.findall(r'src="(/clip/[^"]+)"', html)
        assert sorted(c.rsplit("/", 1)[1] for c in clips) == ["a", "b", "query"]
        audio = client.get(clips[0])
        assert audio.status_code == 200 and audio.headers["content-type"].startswith("audio/")
        assert audio.content[:4] == b"RIFF"
        response = client.post(
            f"/hit/{assignment}",
            data={"csrf": csrf, "choice": "A", "comment": "nice", **PLAYED},
            follow_redirects=False,
        )
        assert response.status_code == 303
        next_assignment = response.headers["location"].rsplit("/", 1)[1]
        stored = answers_frame(project_dir)
        assert len(stored) == 1
        row = stored.iloc[0]
        raw = json.loads(row["raw"])
        shown_a_is_x = raw["order"]["a"] == row["x"]  # this question's own order of A and B
        assert raw == {
            "fields": {name: float(value) for name, value in PLAYED.items()},
            "order": {
                "a": row["x"] if shown_a_is_x else row["y"],
                "b": row["y"] if shown_a_is_x else row["x"],
                "clicked": "A",
                "question": 1,
            },
        }
        on_pair_sides = "A" if shown_a_is_x == bool(row["a_is_x"]) else "B"
        assert (row["crowd"], row["assignment_id"], row["choice"]) == (
            "web",
            assignment,
            on_pair_sides,
        )
        assert row["score"] == (1 if shown_a_is_x else -1), "variation A (as shown) preferred"
        assert row["comment"] == "nice"
        assert next_assignment != assignment
        assert open_question(client)[0] == next_assignment, "the answer handed out the next"


def test_every_pair_gets_exactly_its_answers_from_distinct_judges(project_dir):
    tokens = invite(project_dir, 5)
    with TestClient(create_app(project_dir, RESEARCHER)) as server:
        clients = [judge_client(server.app, t) for t in tokens]
        with Project(project_dir) as project:
            batch1 = set(project.store.pairs(1)["pair_id"])
        # Round-robin until batch 1 is complete (the server then publishes batch 2).
        for _ in range(20):
            for client in clients:
                response = client.post("/next")
                if "/hit/" not in str(response.url):
                    continue
                assignment = str(response.url).rsplit("/", 1)[1]
                csrf = re.search(r'name="csrf" value="([^"]+)"', response.text).group(1)
                client.post(f"/hit/{assignment}", data={"csrf": csrf, "choice": "equal", **PLAYED})
            answers = answers_frame(project_dir)
            if answers["pair_id"].isin(batch1).sum() == 3 * len(batch1):
                break
    answers = answers_frame(project_dir)
    first = answers[answers["pair_id"].isin(batch1)]
    assert (first.groupby("pair_id").size() == 3).all() and len(first) == 3 * len(batch1)
    assert not first.duplicated(["pair_id", "worker_id"]).any()
    assert answers["assignment_id"].is_unique
    with Project(project_dir) as project:
        batches = project.store.batches()
    assert batches.loc[0, "status"] == "aggregated" and batches.loc[0, "crowd"] == "web"
    assert len(batches) == 2, "the server publishes the next batch by itself"


def test_concurrent_judges_never_overfill_a_pair(project_dir):
    """Threads with their own connections race for questions: the transaction rules hold."""
    tokens = invite(project_dir, 8)
    with Project(project_dir) as project:
        assign_settings = assign.WebSettings.from_project(project)
        advance(project, WebCrowd())
        wanted = int(project.store.pairs(1)["answers_wanted"].sum())
    errors: list[BaseException] = []

    def work(token: str) -> None:
        try:
            with Project(project_dir) as project:
                judge = project.store.web_judge(token_hash(token))
                while (a := assign.next_assignment(project, judge, assign_settings)) is not None:
                    form = {"choice": "B", **PLAYED}
                    assert assign.submit(
                        project, judge, a.assignment_id, a.csrf, form, assign_settings
                    )
        except BaseException as error:  # noqa: BLE001 (reported below)
            errors.append(error)

    threads = [threading.Thread(target=work, args=(t,)) for t in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    answers = answers_frame(project_dir)
    assert len(answers) == wanted
    assert (answers.groupby("pair_id").size() == 3).all()
    assert not answers.duplicated(["pair_id", "worker_id"]).any()


def test_abandoned_questions_are_released_and_late_answers_handled(project_dir):
    j1, j2, j3, j4 = invite(project_dir, 4)
    later = datetime.now(UTC) + timedelta(hours=1)
    with Project(project_dir) as project:
        advance(project, WebCrowd())
        change(project, "UPDATE pairs SET answers_wanted = 1")
        settings = assign.WebSettings(timeout_minutes=5)
        judges = [project.store.web_judge(token_hash(t)) for t in (j1, j2, j3, j4)]
        pairs = len(project.store.pairs(1))
        taken = [assign.next_assignment(project, judges[0], settings)]
        # Every other pair goes to judge 2: nothing is left for judge 3 while judge 1 holds one.
        while (a := assign.next_assignment(project, judges[1], settings)) is not None:
            taken.append(a)
            assign.submit(project, judges[1], a.assignment_id, a.csrf, ANSWER_A, settings)
        assert len(taken) == pairs
        assert assign.next_assignment(project, judges[2], settings) is None
        # An hour later judge 1's question is released and goes to judge 3 ...
        again = assign.next_assignment(project, judges[2], settings, at=later)
        assert again.pair_id == taken[0].pair_id
        # ... whose answer fills the pair, so judge 1's late answer is refused.
        assign.submit(
            project, judges[2], again.assignment_id, again.csrf, {**PLAYED, "choice": "B"}, settings
        )
        with pytest.raises(assign.Gone):
            assign.submit(
                project, judges[0], taken[0].assignment_id, taken[0].csrf, ANSWER_A, settings
            )
        # Judge 1 is never offered that pair again, even with room.
        change(project, "UPDATE pairs SET answers_wanted = 3")
        seen = set()
        while (a := assign.next_assignment(project, judges[0], settings, at=later)) is not None:
            seen.add(a.pair_id)
            assign.submit(project, judges[0], a.assignment_id, a.csrf, ANSWER_A, settings, at=later)
        assert taken[0].pair_id not in seen and len(seen) == pairs - 1
        # A late answer to a released question is taken while the pair still has room.
        a4 = assign.next_assignment(project, judges[3], settings, at=later)
        assert project.store.release_expired_assignments(stamp(later + timedelta(hours=1))) == 1
        posted = assign.submit(
            project, judges[3], a4.assignment_id, a4.csrf, {**PLAYED, "choice": "equal"}, settings
        )
        assert posted.outcome == "stored"


def test_a_judge_cannot_touch_another_judges_question(project_dir):
    t1, t2 = invite(project_dir, 2)
    with TestClient(create_app(project_dir, RESEARCHER)) as server:
        first, second = judge_client(server.app, t1), judge_client(server.app, t2)
        assignment, csrf, _ = open_question(first)
        assert second.get(f"/hit/{assignment}").status_code == 403
        assert second.get(f"/clip/{assignment}/query").status_code == 403
        response = second.post(f"/hit/{assignment}", data={"csrf": csrf, **ANSWER_A})
        assert response.status_code == 403
        anonymous = TestClient(server.app)
        assert anonymous.get(f"/hit/{assignment}").status_code == 403
        assert anonymous.get("/next").status_code == 403
        assert anonymous.post("/next").status_code == 403
        assert anonymous.get("/invite/not-a-token").status_code == 403
    assert answers_frame(project_dir).empty


def test_posts_are_csrf_checked_validated_and_idempotent(project_dir):
    (token,) = invite(project_dir, 1)
    with TestClient(create_app(project_dir, RESEARCHER)) as server:
        client = judge_client(server.app, token)
        assignment, csrf, _ = open_question(client)
        url = f"/hit/{assignment}"
        assert client.post(url, data=ANSWER_A).status_code == 403
        assert (
            client.post(
                url, data={"csrf": csrf[:-1] + ("y" if csrf.endswith("x") else "x"), **ANSWER_A}
            ).status_code
            == 403
        )
        foreign = {"origin": "https://evil.example"}
        assert client.post(url, data={"csrf": csrf, **ANSWER_A}, headers=foreign).status_code == 403
        assert client.post(url, data={"csrf": csrf, **PLAYED, "choice": "C"}).status_code == 400
        assert client.post(url, data={"csrf": csrf, **PLAYED}).status_code == 400
        long = {"csrf": csrf, **ANSWER_A, "comment": "x" * 2001}
        assert client.post(url, data=long).status_code == 400
        assert client.get(f"/clip/{assignment}/..%2F..%2Fstate.sqlite").status_code == 404
        assert answers_frame(project_dir).empty
        ok = {"csrf": csrf, **PLAYED, "choice": "B"}
        same_origin = {"origin": "http://testserver"}
        assert (
            client.post(url, data=ok, headers=same_origin, follow_redirects=False).status_code
            == 303
        )
        assert client.post(url, data=ok, follow_redirects=False).status_code == 303
    assert len(answers_frame(project_dir)) == 1


def test_tokens_are_stored_only_as_hashes(project_dir):
    tokens = invite(project_dir, 3)
    data = (project_dir / "state.sqlite").read_bytes()
    for token in tokens:
        assert token.encode() not in data
        assert len(token) >= 32
    with Project(project_dir) as project:
        hashes = set(project.store.frame("SELECT token_hash FROM web_judges")["token_hash"])
    assert hashes == {token_hash(t) for t in tokens}


def test_researcher_page_is_token_protected_and_escapes_worker_text(project_dir):
    (token,) = invite(project_dir, 1)
    hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    with TestClient(create_app(project_dir, RESEARCHER)) as server:
        client = judge_client(server.app, token)
        assignment, csrf, _ = open_question(client)
        client.post(
            f"/hit/{assignment}",
            data={
                "csrf": csrf,
                **PLAYED,
                "choice": "equal",
                "comment": hostile,
                "background": hostile,
            },
        )
        outsider = TestClient(server.app)
        assert outsider.get("/researcher").status_code == 403
        assert outsider.get("/researcher/wrong").status_code == 403
        page = outsider.get(f"/researcher/{RESEARCHER}")
        assert page.status_code == 200
        assert "<script>alert" not in page.text and "&lt;script&gt;" in page.text
        assert "<img src=x" not in page.text
        assert "J0001" in page.text and 'id="progress"' in page.text and 'id="audit"' in page.text
        assert "<form" not in page.text and "<button" not in page.text
        assert page.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]


def test_researcher_page_shows_a_dash_for_judges_without_answers(project_dir):
    t1, _ = invite(project_dir, 2)
    with TestClient(create_app(project_dir, RESEARCHER)) as server:
        client = judge_client(server.app, t1)
        assignment, csrf, _ = open_question(client)
        client.post(f"/hit/{assignment}", data={"csrf": csrf, **ANSWER_B})
        page = TestClient(server.app).get(f"/researcher/{RESEARCHER}").text
    rows = re.findall(r"<tr><td>(J000\d)</td>(.*?)</tr>", page, re.S)
    cells = {judge: re.findall(r"<td>(.*?)</td>", rest) for judge, rest in rows}
    assert cells["J0001"][:4] == ["invite", "1", "0%", "0%"]
    assert cells["J0002"] == ["invite", "0", "–", "–", "–", "–"]
    assert "nan" not in page


def test_study_participants_get_a_completion_code(tmp_path):
    root = make_web_project(
        tmp_path,
        web={"questions_per_judge": 2, "completion_url": "https://study.example/done?cc={code}"},
    )
    with Project(root) as project:
        key = assign.new_study_key(project)
    with TestClient(create_app(root, RESEARCHER)) as server:
        client = TestClient(server.app)
        assert client.get(f"/study/{key}?PROLIFIC_PID=p%3Cx%3E").status_code == 400
        assert client.get("/study/wrong?PROLIFIC_PID=abc").status_code == 403
        assert client.get(f"/study/{key}?PROLIFIC_PID=abc123").status_code == 200
        check = client.post("/next")
        assert check.url.path == "/headphones", "a study participant is screened first"
        assert pass_headphone_check(client, check).url.path.startswith("/hit/")
        for _ in range(2):
            assignment, csrf, _ = open_question(client)
            client.post(f"/hit/{assignment}", data={"csrf": csrf, **ANSWER_A})
        done = client.post("/next")
        assert str(done.url).endswith("/done")
        code = re.search(r'id="completion-code">([A-Z0-9]+)<', done.text).group(1)
        assert f"https://study.example/done?cc={code}" in done.text
        back = re.search(r'<meta http-equiv="refresh" content="(\d+); url=([^"]+)">', done.text)
        assert back and back.group(2) == f"https://study.example/done?cc={code}"
        # The same participant coming back keeps their judge and answers.
        again = TestClient(server.app)
        again.get(f"/study/{key}?PROLIFIC_PID=abc123")
        assert code in again.post("/next").text
    with Project(root) as project:
        judges = project.store.frame("SELECT judge_id, participant, source FROM web_judges")
    assert judges.to_dict("records") == [
        {"judge_id": "P0001", "participant": "abc123", "source": "platform"}
    ]


@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(1, 5)), min_size=1, max_size=30),
    st.integers(0, 2**60),
)
def test_choose_pair_picks_a_least_filled_pair_with_room(rows, key):
    filled = np.array([f for f, _ in rows])
    wanted = np.array([w for _, w in rows])
    index = assign.choose_pair(np.arange(len(rows)), filled, wanted, key)
    room = filled < wanted
    if not room.any():
        assert index == -1
    else:
        assert room[index] and filled[index] == filled[room].min()


def test_invite_command_prints_links_and_writes_csv(project_dir, tmp_path):
    out = tmp_path / "links.csv"
    result = CliRunner().invoke(
        cli_app,
        [
            "invite",
            str(project_dir),
            "--judges",
            "3",
            "--study",
            "--base-url",
            "https://judge.lab.example/",
            "-o",
            str(out),
        ],
        env={"COLUMNS": "300"},
    )
    assert result.exit_code == 0, result.output
    links = pd.read_csv(out)
    assert list(links["judge_id"]) == ["J0001", "J0002", "J0003"]
    assert links["url"].str.match(r"^https://judge\.lab\.example/invite/[\w-]{32}$").all()
    assert "/study/" in result.output and "PROLIFIC_PID={{%PROLIFIC_PID%}}" in result.output
    bad = CliRunner().invoke(cli_app, ["invite", str(project_dir), "--judges", "-1"])
    assert bad.exit_code != 0


def test_serve_binds_loopback_by_default_and_refuses_bad_options(project_dir, tmp_path):
    assert all(is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "127.3.2.1"))
    assert not any(is_loopback(h) for h in ("0.0.0.0", "192.0.2.7", "example.org"))
    result = CliRunner().invoke(cli_app, ["serve", str(project_dir), "--port", "70000"])
    assert result.exit_code != 0 and "--port': must be a whole number in [1, 65535]" in (
        result.output
    )
    bad = make_web_project(tmp_path / "bad", queries=1)
    config = bad / "crowdprefs.toml"
    config.write_text(config.read_text().replace("[web]", "[web]\ntimeout_minutes = 0"))
    result = CliRunner().invoke(cli_app, ["serve", str(bad)])
    assert result.exit_code != 0 and "timeout_minutes" in str(result.exception)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.integers(0, 3), st.sampled_from(["answer", "abandon", "late", "wait"])),
        min_size=1,
        max_size=40,
    )
)
def test_random_judging_keeps_the_assignment_rules(tmp_path_factory, actions):
    """Whatever judges do (answer, abandon, answer late, let time pass), no pair gets more
    answers than wanted, none twice from one judge, and a judge holds one question at most."""
    root = make_web_project(tmp_path_factory.mktemp("random"), queries=1, size=4, answers=2)
    clock = datetime.now(UTC)
    web = assign.WebSettings(timeout_minutes=20)
    with Project(root) as project:
        advance(project, WebCrowd())
        judges = [project.store.web_judge(token_hash(t)) for _, t in assign.invite(project, 4)]
        held: dict[int, list[WebAssignment]] = {j: [] for j in range(4)}
        for who, action in actions:
            judge = judges[who]
            if action == "wait":
                clock += timedelta(minutes=30)
                continue
            if action == "late" and held[who]:
                old = held[who][0]
                with contextlib.suppress(assign.Gone):  # released, and others filled the pair
                    assign.submit(
                        project, judge, old.assignment_id, old.csrf, ANSWER_A, web, at=clock
                    )
                continue
            got = assign.next_assignment(project, judge, web, at=clock)
            if got is None:
                continue
            held[who].append(got)
            if action == "answer":
                assign.submit(project, judge, got.assignment_id, got.csrf, ANSWER_B, web, at=clock)
            with project.store.read() as conn:
                rows = conn.execute(
                    text(
                        """
                        SELECT p.answers_wanted,
                               (SELECT COUNT(*) FROM answers a WHERE a.pair_id = p.pair_id),
                               (SELECT COUNT(*) FROM web_assignments w
                                 WHERE w.pair_id = p.pair_id AND w.status = 'open')
                        FROM pairs p
                        """
                    )
                ).fetchall()
                twice = conn.execute(
                    text(
                        "SELECT COUNT(*) FROM (SELECT 1 FROM answers GROUP BY pair_id, worker_id"
                        " HAVING COUNT(*) > 1) AS d"
                    )
                ).scalar_one()
                most_held = conn.execute(
                    text(
                        "SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM web_assignments"
                        " WHERE status = 'open' GROUP BY judge_id) AS d"
                    )
                ).scalar_one()
            assert all(have + open_ <= wanted for wanted, have, open_ in rows)
            assert twice == 0
            assert most_held in (None, 1)


def test_the_done_page_sends_a_judge_to_the_question_they_hold_or_says_one_is_free(tmp_path):
    """The done page reads what a hand-out would find (changing nothing): a judge holding a
    question is sent to it, one for whom a question is free reads so (no self-reload), one for
    whom none is waits on a page that looks again by itself."""
    root = make_web_project(tmp_path, queries=1, size=3, answers=1)
    first, second = invite(root, 2)
    with TestClient(create_app(root, RESEARCHER)) as server:
        one, two = judge_client(server.app, first), judge_client(server.app, second)
        ready = one.get("/done")
        assert 'data-state="ready"' in ready.text and 'http-equiv="refresh"' not in ready.text
        assignment, _, _ = open_question(one)
        held = one.get("/done")
        assert held.url.path == f"/hit/{assignment}" and held.history[0].status_code == 303
        open_question(two)  # the batch's other pair
        with Project(root) as project:
            before = project.store.web_batch_progress()
        three = judge_client(server.app, invite(root, 1)[0])
        page = three.get("/done")
        assert 'data-state="waiting"' in page.text and 'content="10"' in page.text
        with Project(root) as project:
            assert project.store.web_batch_progress() == before  # nothing handed out


@pytest.mark.parametrize(
    ("line", "progress", "advance", "said"),
    [
        ("waiting", {"iteration": 2, "status": "published", "crowd": "web", "answers": 3,
                     "answers_wanted": 8}, True,
         "batch 2 published, collecting answers (3 of 8); moved on by the server"),
        (None, {"iteration": 1, "status": "published", "crowd": None, "answers": 0,
                "answers_wanted": 4}, False,
         "batch 1 published, collecting answers (0 of 4); moved on by your commands "
         "([web] advance = false)"),
        ("done", {"iteration": 5, "status": "aggregated", "crowd": "web"}, True,
         "done: every list is closed"),
        ("stopped: the budget is spent", {"iteration": 3, "status": "aggregated"}, True,
         "stopped: the budget is spent"),
        ("other crowd", {"iteration": 4, "status": "published", "crowd": "mturk"}, True,
         "batch 4 is published on the mturk crowd, not this site"),
        (None, {"iteration": None}, True, "no batch yet; moved on by the server"),
    ],
)  # fmt: skip
def test_the_researcher_page_tells_the_campaign_with_its_batch(line, progress, advance, said):
    """The class "the campaign said 'waiting' while a batch was published": the server's last
    line is told with the batch's progress."""
    from crowdprefs.web.researcher import campaign_status

    assert campaign_status(line, progress, advance) == said
