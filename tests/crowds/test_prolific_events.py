"""Prolific's events (webhooks) on the judges' server, places given back at once when a
participant leaves, and the dry run: against the local fake of Prolific, the commands through
the installed console script. Nothing here reaches the network."""

from __future__ import annotations

import json
import logging
import re
import warnings
from collections import Counter
from urllib.parse import urlsplit

import httpx
import pandas as pd
import pytest
from console_script import crowdprefs
from starlette.exceptions import StarletteDeprecationWarning
from test_prolific import (
    PLAYED,
    RESEARCHER,
    TOKEN,
    crowd_for,
    join,
    make_project,
    pid,
    publish_batch,
    reach,
    take_part,
)

from crowdprefs.campaign import driver
from crowdprefs.campaign.project import Project
from crowdprefs.campaign.store import Store
from crowdprefs.cli.prolific import FAKE_TOKEN
from crowdprefs.crowds import get_crowd
from crowdprefs.crowds.prolific.client import HOOK_SECRET_ENV, TOKEN_ENV
from crowdprefs.crowds.prolific.fake import FakeProlific
from crowdprefs.crowds.prolific.store import ProlificEvent, ProlificStudy
from crowdprefs.crowds.prolific.study import HOOK_EVENTS, HOOK_PATH
from crowdprefs.crowds.web import tables as web_tables
from crowdprefs.errors import CrowdError
from crowdprefs.web.app import create_app
from crowdprefs.web.judges import ServerProcess
from crowdprefs.web.prolific_events import Refusals

with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient


def subscribed(root, fake: FakeProlific):
    """The project's study published on the fake, the server subscribed to its events."""
    with Project(root) as project:
        crowd = crowd_for(project, fake)
        publish_batch(project, crowd)
        assert crowd.subscribe("https://judges.example").startswith("events: subscribed")
        assert crowd.subscribe("https://judges.example").endswith("is subscribed")
        return project.store.prolific_study()


def deliver(server: TestClient, fake: FakeProlific, after: int = 0, *, drop=()) -> int:
    """Post the fake's events queued after number ``after`` to the server, as Prolific does,
    but for those numbered in ``drop`` (lost); returns the last number."""
    last = after
    for number, target, headers, body in fake.outbox(after):
        assert urlsplit(target).path == HOOK_PATH
        if number not in drop:
            assert server.post(HOOK_PATH, content=body, headers=headers).status_code == 200
        last = number
    return last


def join_question(server: TestClient, fake: FakeProlific, study_id: str, participant: str):
    """A participant takes a place and opens their first question (and leaves it open):
    ``(their browser, submission id, the question's path)``."""
    browser, submission, page = join(server, fake, study_id, participant)
    assert page.url.path.startswith("/hit/")
    return browser, submission, page.url.path


def held(server: TestClient) -> int:
    return server.app.state.project.store.web_batch_progress()["open_assignments"]


def test_a_signed_event_is_applied_once_and_an_older_one_never_moves_a_status_back(
    tmp_path, fake, monkeypatch
):
    monkeypatch.setenv(HOOK_SECRET_ENV, fake.secret)
    root = make_project(tmp_path, web={"advance": False})
    study = subscribed(root, fake)
    assert {h["event_type"] for h in fake.hooks() if h["is_enabled"]} == set(HOOK_EVENTS)
    with TestClient(create_app(root, RESEARCHER)) as server:
        store = server.app.state.project.store
        newer = fake.signed(
            {
                "event_type": "study.status.change",
                "resource_id": study.study_id,
                "status": "AWAITING REVIEW",
            },
            event_at=2_000_000_000.5,
        )
        older = fake.signed(
            {
                "event_type": "study.status.change",
                "resource_id": study.study_id,
                "status": "ACTIVE",
            },
            event_at=2_000_000_000.1,
        )
        answers = [server.post(HOOK_PATH, content=b, headers=h).json() for h, b in (newer,) * 3]
        assert [a["event"] for a in answers] == ["applied", "duplicate", "duplicate"]
        assert server.post(HOOK_PATH, content=older[1], headers=older[0]).json()["event"] == (
            "older"
        )
        assert store.prolific_study().status == "AWAITING REVIEW", "never moved back"
        other = fake.signed(
            {"event_type": "study.status.change", "resource_id": "f" * 24, "status": "PAUSED"}
        )
        assert server.post(HOOK_PATH, content=other[1], headers=other[0]).json()["event"] == (
            "ignored"
        )
        events = store.prolific_events()
    assert len(events) == 3, "each event stored once"
    applied = events.set_index("status")["applied_at"].notna().to_dict()
    assert applied == {"PAUSED": False, "ACTIVE": False, "AWAITING REVIEW": True}
    assert events["event_at"].tolist()[1:] == [2_000_000_000.1, 2_000_000_000.5], "in order"


def test_unsigned_wrongly_signed_and_stale_events_are_refused_in_one_log_line(
    tmp_path, fake, monkeypatch, caplog
):
    root = make_project(tmp_path, web={"advance": False})
    study = subscribed(root, fake)
    payload = {
        "event_type": "study.status.change",
        "resource_id": study.study_id,
        "status": "PAUSED",
    }
    headers, body = fake.signed(payload)
    with TestClient(create_app(root, RESEARCHER)) as server:
        caplog.set_level(logging.INFO, logger="crowdprefs")
        assert server.post(HOOK_PATH, content=body, headers=headers).status_code == 503
        monkeypatch.setenv(HOOK_SECRET_ENV, fake.secret)
        unsigned = {k: v for k, v in headers.items() if "Signature" not in k}
        forged, _ = fake.signed(payload, secret="not-the-workspace-secret")
        stale, _ = fake.signed(payload, sent_at=1_000_000_000)
        tampered = body.replace(b"PAUSED", b"COMPLETED")
        tries = [(unsigned, body), (forged, body), (headers, tampered), (stale, body)]
        codes = [server.post(HOOK_PATH, content=b, headers=h).status_code for h, b in tries]
        refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
        assert server.app.state.project.store.prolific_events().empty
        assert server.post(HOOK_PATH, content=body, headers=headers).status_code == 200
    assert codes == [401, 401, 401, 400]
    assert len(refusals) == 5 and all("\n" not in line for line in refusals)
    assert [line.rsplit(": ", 1)[-1] for line in refusals[:4]] == [
        f"{HOOK_SECRET_ENV} is not set",
        "unsigned",
        "bad signature",
        "bad signature",
    ]
    assert "stale" in refusals[4] and fake.secret not in " ".join(refusals)


def test_signed_events_that_say_nothing_usable_are_refused_in_one_log_line(
    tmp_path, fake, monkeypatch, caplog
):
    """Signed by Prolific's secret, but a body that is not an event: not JSON, not an object,
    no resource, an id with a line break (the log line repeats ids: none can forge a line), an
    X-Event-ID that is not an id. Each is 400, one log line, and nothing is stored."""
    from crowdprefs.crowds.prolific.fake import sign

    monkeypatch.setenv(HOOK_SECRET_ENV, fake.secret)
    root = make_project(tmp_path, web={"advance": False})
    study = subscribed(root, fake)
    good = {"event_type": "study.status.change", "resource_id": study.study_id}
    headers, _ = fake.signed(good)

    def signed(body: bytes, **extra: str) -> dict[str, str]:
        stamp = headers["X-Prolific-Request-Timestamp"]
        return {**headers, "X-Prolific-Request-Signature": sign(fake.secret, stamp, body.decode()),
                **extra}  # fmt: skip

    bodies = [
        b"not json",
        b"[1, 2]",
        json.dumps({"event_type": "study.status.change"}).encode(),
        json.dumps({**good, "status": "PAUSED\nforged line"}).encode(),
        json.dumps(good).encode(),
    ]
    with TestClient(create_app(root, RESEARCHER)) as server:
        caplog.set_level(logging.INFO, logger="crowdprefs")
        codes = [
            server.post(HOOK_PATH, content=body, headers=signed(body, **extra)).status_code
            for body, extra in zip(bodies, [{}] * 4 + [{"X-Event-ID": "a b\nc"}], strict=True)
        ]
        assert server.app.state.project.store.prolific_events().empty
    assert codes == [400] * 5
    refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert len(refusals) == 5 and all("\n" not in line for line in refusals)


def test_a_participant_returning_mid_question_frees_it_for_another_judge_at_once(
    tmp_path, fake, monkeypatch
):
    """Batch 1: six pairs of two answers, three questions a participant. Three participants
    answer nine; the fourth opens a question and returns the study: its event gives the
    question back (their answer to it is no longer taken, nor are they given another), so the
    fifth answers the three still wanted (one of them the question
    returned), without waiting for the hand-out to expire."""
    monkeypatch.setenv(HOOK_SECRET_ENV, fake.secret)
    root = make_project(tmp_path)
    study = subscribed(root, fake)
    with TestClient(create_app(root, RESEARCHER, prolific=reach(fake))) as server:
        for n in range(3):
            take_part(server, fake, study.study_id, pid(n))
        seen = deliver(server, fake)
        returning, submission, path = join_question(server, fake, study.study_id, pid(3))
        assert held(server) == 1
        fake.return_submission(submission)
        answers = [
            server.post(HOOK_PATH, content=body, headers=headers).json()
            for _, _, headers, body in fake.outbox(seen)
        ]
        assert {"event": "applied", "released": 1} in answers
        assert held(server) == 0, "given back at once"
        page = returning.get(path)  # who returned: their answer is not taken, nor a question
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text)
        if csrf is not None:
            answer = {"csrf": csrf.group(1), "choice": "A", **PLAYED}
            refused = returning.post(path, data=answer)
            assert refused.status_code >= 400 or "no longer taken" in refused.text
        assert not returning.post("/next").url.path.startswith("/hit/")
        assignment = path.rsplit("/", 1)[-1]
        pair = server.app.state.project.store.web_question(assignment).assignment.pair_id
        take_part(server, fake, study.study_id, pid(4))
        page = server.get(f"/researcher/{RESEARCHER}").text  # the return, on the researcher page
        returns = re.search(r'<p id="returns"[^>]*>(.*?)</p>', page, re.S).group(1)
        assert "returned the study or timed out" in " ".join(returns.split())
    with Project(root) as project:
        judges = project.store.web_participants().set_index("participant")["judge_id"]
        answers = project.store.answers()
        batches = project.store.batches()
    fifth = answers[answers["worker_id"] == judges[pid(4)]]
    assert len(fifth) == 3 and pair in set(fifth["pair_id"]), "the returned question, answered"
    assert (answers["worker_id"] == judges[pid(3)]).sum() == 0
    assert batches.loc[0, "status"] == "aggregated", "batch 1 complete, the campaign moved on"


def test_a_lost_event_is_caught_by_the_poll_and_a_restart_keeps_events_once(
    tmp_path, fake, monkeypatch
):
    """One participant's event is delivered, then the server stops; another participant times
    out while it is down (their event is lost); the restarted server's poll of the study gives
    that question back, and the first event delivered again is a duplicate."""
    monkeypatch.setenv(HOOK_SECRET_ENV, fake.secret)
    root = make_project(tmp_path)
    study = subscribed(root, fake)
    with TestClient(create_app(root, RESEARCHER, prolific=reach(fake))) as server:
        seen = deliver(server, fake)
        _, first, _ = join_question(server, fake, study.study_id, pid(1))
        _, second, _ = join_question(server, fake, study.study_id, pid(2))
        fake.return_submission(first)
        before = seen
        seen = deliver(server, fake, seen)
        assert held(server) == 1
    fake.return_submission(second, "TIMED-OUT")
    lost = {number for number, *_ in fake.outbox(seen)}
    with TestClient(create_app(root, RESEARCHER, prolific=reach(fake))) as server:
        assert held(server) == 0, "the poll at start caught the lost event"
        again = [
            server.post(HOOK_PATH, content=body, headers=headers).json()["event"]
            for _, _, headers, body in fake.outbox(before)
        ]
    assert again[: seen - before] == ["duplicate"] * (seen - before)
    assert len(again) - (seen - before) == len(lost)


def test_the_commands_subscribe_poll_and_make_a_test_run_through_the_fake(tmp_path, monkeypatch):
    """The console script: ``prolific publish --test`` makes a test study of the draft for
    test participants (nothing spent) and subscribes the server to the study's events;
    ``prolific status`` polls (a lost return is caught) and reports the return rate."""
    env = {TOKEN_ENV: "", HOOK_SECRET_ENV: ""}
    root = make_project(tmp_path)
    with Project(root) as project:
        driver.next_batch(project)
        driver.publish(project, get_crowd("web", project))
    ran = crowdprefs("prolific", "publish", root, "--fake", "--tester", "a@b.example", env=env)
    assert ran.returncode == 2 and "--test" in ran.stderr
    ran = crowdprefs(
        "prolific", "publish", root, "--fake", "--test", "--tester", "tester@lab.example", env=env
    )
    assert ran.returncode == 0, ran.stderr
    assert re.search(r"test participant \w+ \(tester@lab\.example\)", ran.stdout)
    assert "at no cost" in ran.stdout and "events: subscribed" in ran.stdout
    assert HOOK_SECRET_ENV in ran.stderr, "a note: the server needs the secret"
    fake = FakeProlific(root / "prolific-fake.sqlite", token=FAKE_TOKEN)
    test_id = re.search(r"test study (\w+)", ran.stdout).group(1)
    with Project(root) as project:
        draft = project.store.prolific_study()
    assert fake.study(draft.study_id)["status"] == "UNPUBLISHED"
    assert fake.study(test_id)["is_test"] and fake.study(test_id)["status"] == "ACTIVE"
    with pytest.raises(Exception, match="exclude this participant"):
        fake.take_place(test_id, pid(7))
    fake.take_place(test_id, fake.testers()[0])
    assert fake.balance == 10_000_000, "nothing spent"
    ran = crowdprefs("prolific", "publish", root, "--fake", env=env)
    assert ran.returncode == 0 and "is active with 4 places" in ran.stdout
    assert f"events: https://judges.example{HOOK_PATH} is subscribed" in ran.stdout
    ran = crowdprefs("prolific", "publish", root, "--fake", "--test", env=env)
    assert ran.returncode == 1 and "a test run is made from a draft" in ran.stderr
    fake.start()
    with TestClient(create_app(root, RESEARCHER, prolific=None)) as server:
        take_part(server, fake, draft.study_id, pid(0))
        _, gone, _ = join_question(server, fake, draft.study_id, pid(1))
        fake.return_submission(gone)  # its event never arrives
        assert held(server) == 1
    fake.close()
    ran = crowdprefs("prolific", "status", root, "--fake", env=env)
    assert ran.returncode == 0, ran.stderr
    assert "returned or timed out: 50% (high" in ran.stdout
    assert "1 of 2 participants returned it or timed out" in ran.stderr
    assert "1 questions held by participants who left went back" in ran.stderr
    with Project(root) as project:
        assert project.store.web_batch_progress()["open_assignments"] == 0


def test_test_runs_and_subscriptions_are_refused_where_prolific_refuses_them(tmp_path):
    fake = FakeProlific(token=TOKEN, test_studies=False)
    fake.start()
    try:
        root = make_project(tmp_path, web={"base_url": "http://127.0.0.1:8000"})
        with Project(root) as project:
            driver.next_batch(project)
            crowd = crowd_for(project, fake)
            with pytest.raises(CrowdError, match="Test studies are not enabled") as refused:
                crowd.test_run(project, ["x@lab.example"])
            line = crowd.subscribe("http://127.0.0.1:8000")
            with pytest.raises(CrowdError, match="must be public https"):
                crowd.client.subscribe(fake.workspace_id, HOOK_EVENTS[0], "https://localhost/x")
        assert not any(hook["is_enabled"] for hook in fake.hooks())
    finally:
        fake.close()
    assert "\n" not in str(refused.value)
    assert line.startswith("events: not subscribed, [web] base_url http://127.0.0.1:8000 is not")


# --- the store, on each engine ----------------------------------------------------------------

CANDIDATES = pd.DataFrame(
    {
        "query": ["q", "q", "q"],
        "document": ["d1", "d2", "d3"],
        "audio": ["d1.wav", "d2.wav", "d3.wav"],
        "query_audio": ["q.wav", None, None],
    }
)
PAIRS = pd.DataFrame(
    {
        "query": ["q", "q"],
        "x": ["d1", "d1"],
        "y": ["d2", "d3"],
        "a_is_x": [1, 0],
        "position": [0, 1],
        "kind": ["sort", "sort"],
        "expected": [None, None],
        "answers_wanted": [2, 2],
    }
)


def test_events_are_stored_once_ordered_and_give_questions_back_on_each_engine(tmp_path, engine):
    store = Store(tmp_path / "state.sqlite" if engine is None else engine, create=True)
    try:
        store.initialise(7, CANDIDATES)
        store.create_batch(1, PAIRS)
        store.add_prolific_study(
            ProlificStudy("s" * 24, "2026-01-01", 45, "GBP", 3, 3, 0.5, "CODE1234", 4, "ACTIVE")
        )
        judges = [store.join_web_participant(p, f"sha-{p}", "CODE1234", "2026-01-01") for p in "ab"]
        pairs = store.pairs(1)["pair_id"].tolist()
        with store.transaction() as conn:
            conn.execute(
                web_tables.web_assignments.insert(),
                [
                    {"assignment_id": f"x{i}", "pair_id": pair, "judge_id": judge.judge_id,
                     "csrf": "c", "issued_at": "2026-01-01", "expires_at": "2099-01-01"}
                    for i, (pair, judge) in enumerate(zip(pairs, judges, strict=True))
                ],
            )  # fmt: skip

        def event(n: str, kind: str, resource: str, status: str, at: float, who=None):
            made = ProlificEvent(n, kind, resource, status, who, at)
            return store.record_prolific_event(made, "2026-01-02")

        assert event("e1", "study.status.change", "s" * 24, "PAUSED", 20.0).outcome == "applied"
        assert event("e1", "study.status.change", "s" * 24, "PAUSED", 20.0).outcome == "duplicate"
        assert event("e2", "study.status.change", "s" * 24, "ACTIVE", 10.0).outcome == "older"
        assert store.prolific_study().status == "PAUSED"
        assert event("e5", "study.status.change", "t" * 24, "ACTIVE", 40.0).outcome == "ignored"
        left = event("e3", "submission.status.change", "sub-a", "RETURNED", 30.0, "a")
        assert (left.outcome, left.released) == ("applied", 1)
        assert event("e4", "submission.status.change", "sub-a", "ACTIVE", 25.0, "a").outcome == (
            "older"
        )
        assert store.web_batch_progress()["open_assignments"] == 1, "b still holds theirs"
        assert store.reclaim_prolific_places(["a", "b"]) == 1
        assert store.web_batch_progress()["open_assignments"] == 0
        assert len(store.prolific_events()) == 5
    finally:
        store.close()


def test_refusals_are_counted_per_address_and_in_all_and_summed_up_per_window(caplog):
    """The class "refused events are free": past its share an address's refusals are quiet
    (429, no line of their own), past the total share everyone's are, and each window's quiet
    ones end in one line; addresses past the total are not remembered one by one."""
    now = [100.0]
    refusals = Refusals(per_address=3, total=5, window=60.0, clock=lambda: now[0])
    caplog.set_level(logging.INFO, logger="crowdprefs")
    assert [refusals.refuse("203.0.113.9", "unsigned") for _ in range(4)] == [True] * 3 + [False]
    assert refusals.wait("203.0.113.9") == 60.0 and refusals.wait("198.51.100.7") == 0
    assert refusals.refuse("203.0.113.9", "too many refused events") is False
    assert [refusals.refuse("198.51.100.7", "stale: signed 400 s ago") for _ in range(3)] == [
        True,
        True,
        False,  # the sixth refusal in all: past the total of 5
    ]
    for i in range(50):  # a flood from many addresses: remembered up to the total
        assert refusals.refuse(f"2001:db8::{i}", "bad signature") is False
    assert len(refusals.counts) == 5
    now[0] += 30
    assert refusals.wait("203.0.113.9") == 30.0
    assert not [r for r in caplog.records if "not logged one by one" in r.getMessage()]
    now[0] += 30
    assert refusals.wait("203.0.113.9") == 0 and refusals.counts == {}
    (line,) = [r.getMessage() for r in caplog.records if "not logged one by one" in r.getMessage()]
    assert line == (
        "Prolific events refused in 60 s and not logged one by one: "
        "2 from 203.0.113.9 (1 unsigned, 1 too many refused events); "
        "51 from other addresses (50 bad signature, 1 stale)"
    )
    assert refusals.refuse("203.0.113.9", "unsigned") is True  # a new window
    refusals.flush(force=True)  # nothing quiet: no line
    assert len([r for r in caplog.records if "one by one" in r.getMessage()]) == 1


def test_a_flood_of_unsigned_events_writes_a_bounded_log_and_a_signed_event_still_passes(
    tmp_path, fake
):
    """1,000 unsigned posts from one address and one each from 300 others, to the server of
    'crowdprefs serve' behind a trusted proxy: the first refusals of each address, up to the
    total, are logged one by one, the rest answered 429 and summed up in one line when the
    server stops; Prolific's signed event from its own address is applied meanwhile."""
    root = make_project(tmp_path, web={"advance": False, "trusted_proxies": ["127.0.0.1"]})
    study = subscribed(root, fake)
    payload = {"event_type": "study.status.change", "resource_id": study.study_id}
    headers, body = fake.signed({**payload, "status": "PAUSED"})
    unsigned = {k: v for k, v in headers.items() if "Signature" not in k}
    limits = Refusals()
    server = ServerProcess(root, RESEARCHER)
    server.env[HOOK_SECRET_ENV] = fake.secret
    with server, httpx.Client(base_url=server.url) as proxy:

        def post(address: str, sent: dict[str, str] = unsigned) -> int:
            forwarded = {**sent, "X-Forwarded-For": address}
            return proxy.post(HOOK_PATH, content=body, headers=forwarded).status_code

        flood = Counter(post("203.0.113.9") for _ in range(1000))
        spread = Counter(post(f"2001:db8::{i:x}") for i in range(300))
        assert post("198.51.100.7", headers) == 200
        assert httpx.get(f"{server.url}/healthz").status_code == 200
    assert flood == {401: limits.per_address, 429: 1000 - limits.per_address}
    assert spread == {401: limits.total - limits.per_address, 429: 300 - 90}
    log = server.output
    lines = [line for line in log.splitlines() if "Prolific event" in line]
    assert len([line for line in lines if "refused from" in line]) == limits.total
    (summary,) = [line for line in lines if "not logged one by one" in line]
    assert "990 from 203.0.113.9 (990 too many refused events)" in summary
    assert "210 from other addresses (210 unsigned)" in summary
    assert len(log.encode()) < 25_000, len(log.encode())
    with Project(root) as project:
        assert project.store.prolific_events()["status"].tolist() == ["PAUSED"]


@pytest.mark.parametrize(
    ("sent", "said"),
    [(1_000_000_000 - 400, "400 s ago"), (1_000_000_000 + 660, "660 s in the future")],
)
def test_a_stale_signature_says_which_way_the_clocks_differ(sent, said):
    from crowdprefs.web.prolific_events import MAX_AGE, Refused, signature, verify

    body, secret = b'{"event_type": "study.status.change"}', "s3cret"
    headers = {
        "x-prolific-request-timestamp": str(sent),
        "x-prolific-request-signature": signature(secret, str(sent), body).decode(),
    }
    with pytest.raises(Refused) as refused:
        verify(headers, body, secret, at=1_000_000_000)
    assert str(refused.value) == (
        f"stale: signed {said} (clocks may differ by at most {MAX_AGE:.0f} s)"
    )
