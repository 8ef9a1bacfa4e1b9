"""The Prolific crowd: the real adapter (httpx) against the local fake of Prolific's API on
127.0.0.1, with participants answering on the project's own web server (in-process). Nothing
here reaches the network."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import threading
import time
import warnings
import wave
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import numpy as np
import pandas as pd
import pytest
import uvicorn
from console_script import script
from starlette.exceptions import StarletteDeprecationWarning

from crowdprefs.campaign import driver
from crowdprefs.campaign.project import Project, Settings, init_project
from crowdprefs.crowds import get_crowd
from crowdprefs.crowds.prolific import crowd as prolific
from crowdprefs.crowds.prolific.client import TOKEN_ENV, ProlificClient, token_from_environment
from crowdprefs.crowds.prolific.crowd import ProlificCrowd
from crowdprefs.crowds.prolific.fake import FakeProlific
from crowdprefs.crowds.prolific.study import COMPLETE_URL, ProlificSettings, StudyTerms
from crowdprefs.errors import BudgetError, CrowdError, InputError
from crowdprefs.quality.frames import project_answers
from crowdprefs.quality.review import ReviewRules
from crowdprefs.quality.workers import worker_decisions
from crowdprefs.web import headphones
from crowdprefs.web.app import create_app
from crowdprefs.web.assign import study_terms
from crowdprefs.web.judges import read_wav

with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

TOKEN = "test-token-0123456789abcdef"
RESEARCHER = "researcher-token-for-these-tests-0123456789"
CODE = "CPDONE42"
SECONDS = 0.25
PLAYED = {
    **{f"plays_{c}": "1" for c in ("query", "a", "b")},
    **{f"listen_{c}": "0.3" for c in ("query", "a", "b")},
    "seconds_on_page": "0.9",
}
WEB = {
    "questions_per_judge": 3,
    "completion_code": CODE,
    "completion_url": COMPLETE_URL,
    "base_url": "https://judges.example",
}


def pid(n: int) -> str:
    """A participant id shaped like Prolific's."""
    return f"{n:024x}"


def make_project(root: Path, *, prolific=None, web=None, budget=None) -> Path:
    """Two queries of four candidates, every clip a 0.25 s WAV; two answers per pair."""
    clips = root / "clips"
    clips.mkdir(parents=True)
    t = np.arange(int(SECONDS * 8000)) / 8000
    rows = []
    for q in range(2):
        for name in [f"q{q}", *(f"q{q}-d{d}" for d in range(4))]:
            with wave.open(str(clips / f"{name}.wav"), "wb") as handle:
                handle.setnchannels(1)
                handle.setsampwidth(2)
                handle.setframerate(8000)
                tone = 0.3 * np.sin(2 * np.pi * (200 + 10 * len(rows)) * t)
                handle.writeframes((tone * 32767).astype("<i2").tobytes())
        rows += [
            (f"q{q}", f"q{q}-d{d}", f"clips/q{q}-d{d}.wav", f"clips/q{q}.wav") for d in range(4)
        ]
    pd.DataFrame(rows, columns=["query", "document", "audio", "query_audio"]).to_csv(
        root / "candidates.csv", index=False
    )
    sections = {"web": {**WEB, **(web or {})}, "prolific": prolific or {}}
    settings = Settings(answers_per_pair=2, reward=0.0, budget=budget, sections=sections)
    with init_project(root / "project", root / "candidates.csv", settings=settings) as project:
        for query, document, audio, query_audio in rows:
            project.store.set_clip(query, document, str(root / audio), SECONDS)
            project.store.set_clip(query, None, str(root / query_audio), SECONDS)
    return root / "project"


def crowd_for(project: Project, fake: FakeProlific) -> ProlificCrowd:
    client = ProlificClient(TOKEN, fake.url, backoff=0.001)
    return ProlificCrowd(project, client, study_terms(project))


def publish_batch(project: Project, crowd: ProlificCrowd) -> int:
    """``publish --crowd prolific``: build the batch, offer it on the web crowd, top up."""
    iteration = driver.next_batch(project)
    driver.publish(project, crowd)
    return iteration


def join(site, fake: FakeProlific, study_id: str, participant: str):
    """A participant takes a place, opens the study's link and passes the headphone check:
    ``(their browser, submission id, the page that follows)``. ``site``: the server in this
    process (a test client) or the address of one in another process."""
    submission, url = fake.take_place(study_id, participant)
    split = urlsplit(url)
    assert (split.scheme, split.netloc) == ("https", "judges.example")
    if isinstance(site, str):
        client = httpx.Client(base_url=site, follow_redirects=True, timeout=30)
    else:
        client = TestClient(site.app)
    assert client.get(f"{split.path}?{split.query}").url.path == "/welcome"
    page = client.post("/next")
    if page.url.path == "/headphones":
        form = {"csrf": re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)}
        for path, trial, sound in re.findall(r'src="(/headphones/(\d+)/(\d+))"', page.text):
            if headphones.tone_sound(read_wav(client.get(path).content)):
                form[f"trial_{trial}"] = sound
        page = client.post("/headphones", data=form)
    return client, submission, page


def take_part(
    site, fake: FakeProlific, study_id: str, participant: str, choice="A", complete=True
) -> str:
    """A participant :func:`join`-s, answers until the done page and (with ``complete``)
    follows its link back to Prolific; returns the submission id."""
    client, submission, page = join(site, fake, study_id, participant)
    while page.url.path.startswith("/hit/"):
        csrf = re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)
        page = client.post(page.url.path, data={"csrf": csrf, "choice": choice, **PLAYED})
    assert page.url.path == "/done"
    if complete:
        link = re.search(r'id="complete" href="([^"]+)"', page.text)
        fake.complete(submission, link.group(1).replace("&amp;", "&"))
    return submission


# --- pure rules -------------------------------------------------------------------------------


def test_time_reward_and_places_follow_the_clips_the_rate_and_the_answers_still_wanted():
    # 3 questions of three 0.25 s clips plus 10 s each, and 2 minutes: 152.25 s -> 3 minutes.
    assert prolific.estimated_minutes(np.array([0.75, 0.75]), 3, 10.0, 2.0) == 3
    assert prolific.estimated_minutes(np.array([60.0]), 20, 10.0, 2.0) == 26
    assert prolific.reward_per_place(9.0, 3) == 45  # 9.00 an hour for 3 minutes: 45 pence
    assert prolific.reward_per_place(8.0, 7) == 94  # rounded up: never below the rate
    assert prolific.reward_per_place(8.0, 7) * 60 / 7 >= 800
    # 12 answers at 3 a participant: 4; one taking part now: 3 more on top of 5 taken.
    assert prolific.places_wanted(0, 0, 0, 12, 3) == 4
    assert prolific.places_wanted(6, 5, 1, 12, 3) == 8
    assert prolific.places_wanted(9, 5, 1, 12, 3) == 9, "places never go down"
    assert prolific.places_wanted(6, 6, 0, 0, 3) == 6
    with pytest.raises(InputError, match="durations"):
        prolific.estimated_minutes(np.array([0.75, np.nan]), 3, 10.0, 2.0)


def test_submissions_are_decided_by_the_rules_flags_and_by_having_answered():
    submissions = pd.DataFrame(
        {
            "submission_id": ["s1", "s2", "s3", "s4"],
            "study_id": "st",
            "participant_id": ["p1", "p2", "p3", "p4"],
        }
    )
    judges = pd.DataFrame(
        {"judge_id": ["P0001", "P0002", "P0003"], "participant": ["p1", "p2", "p3"]}
    )
    answered = pd.Series({"P0001": 3, "P0002": 3})
    flags = pd.DataFrame(
        {"worker_id": ["P0002"], "reason": ["failed 2 of 2 checks"], "rule": ["failed_checks"]}
    )
    decided = prolific.submission_decisions(submissions, judges, answered, flags).set_index(
        "submission_id"
    )
    assert decided["decision"].tolist() == ["approve", "reject", "reject", "reject"]
    assert decided["category"].tolist()[1:] == ["FAILED_CHECK", "NO_DATA", "NO_DATA"]
    assert decided.loc[["s1"], ["category", "message"]].isna().all(axis=None)
    assert all(len(m) >= 100 for m in decided["message"].iloc[1:])
    assert "failed 2 of 2 checks" in decided.loc["s2", "message"]


def test_bonuses_owed_subtract_what_was_given():
    answered = pd.Series({"p1": 3, "p2": 2, "p3": 1})
    assert prolific.bonus_lines(5, answered, {"p1": 10, "p3": 5}) == [("p1", 5), ("p2", 10)]


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({"reward_per_hour": 5.5}, r"5\.50 GBP is below Prolific's minimum of 6\.00 GBP"),
        ({"reward_per_hour": 7.5, "currency": "USD"}, r"minimum of 8\.00 USD"),
        ({"currency": "EUR"}, "currency must be one of 'GBP', 'USD'"),
        ({"devices": ["watch"]}, "devices"),
        ({"blocklist": ["not an id!"]}, "not a Prolific participant id"),
        ({"fee_rate": 2}, r"fee_rate must be a number in \[0, 1\]"),
    ],
)
def test_settings_prolific_would_refuse_are_refused_in_one_line(section, message):
    with pytest.raises(InputError, match=message):
        ProlificSettings(**section)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"questions": 0}, "questions_per_judge"),
        ({"completion_code": ""}, "completion_code"),
        ({"completion_url": "https://evil.example/?cc={code}"}, "app.prolific.com"),
    ],
)
def test_terms_prolific_cannot_work_with_are_refused(changes, message):
    terms = {"make_link": lambda: "", "questions": 3, "completion_code": CODE}
    terms = StudyTerms(**{"completion_url": COMPLETE_URL, **terms, **changes})
    with pytest.raises(InputError, match=message):
        terms.check()


# --- the study ------------------------------------------------------------------------------


def test_a_study_is_created_and_published_with_the_places_time_and_reward_of_the_batch(
    tmp_path, fake
):
    root = make_project(tmp_path)
    with Project(root) as project:
        crowd = crowd_for(project, fake)
        iteration = publish_batch(project, crowd)
        pairs = project.store.pairs(iteration)
        study = project.store.prolific_study()
        batch = project.store.last_batch()
    remote = fake.study(study.study_id)
    assert (batch["status"], batch["crowd"]) == ("published", "web")
    assert remote["status"] == "ACTIVE"
    assert remote["total_available_places"] == study.places == int(np.ceil(2 * len(pairs) / 3))
    assert (
        (remote["estimated_completion_time"], remote["reward"])
        == (3, 45)
        == (
            study.minutes,
            study.reward,
        )
    )
    url = urlsplit(remote["external_study_url"])
    assert url.netloc == "judges.example" and url.path.startswith("/study/")
    assert url.query.endswith(
        "PROLIFIC_PID={{%PROLIFIC_PID%}}&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
    )
    assert remote["completion_codes"][0]["code"] == CODE
    assert remote["peripheral_requirements"] == ["audio"]
    assert remote["submissions_config"] == {"max_submissions_per_participant": 1}
    assert fake.calls()["transition_study"] == 1


def test_participants_answer_on_the_server_and_the_study_awaits_review_when_places_run_out(
    tmp_path, fake
):
    root = make_project(tmp_path)
    with Project(root) as project:
        crowd = crowd_for(project, fake)
        publish_batch(project, crowd)
        study = project.store.prolific_study()
    with TestClient(create_app(root, RESEARCHER)) as server:
        for n in range(study.places):
            take_part(server, fake, study.study_id, pid(n))
        with pytest.raises(Exception, match="no free place|not recruiting"):
            fake.take_place(study.study_id, pid(99))
    remote = fake.study(study.study_id)
    assert remote["status"] == "AWAITING REVIEW", "all places taken, nobody taking part"
    submissions = fake.submissions(study.study_id)
    assert {s["status"] for s in submissions} == {"AWAITING REVIEW"}
    assert {s["study_code"] for s in submissions} == {CODE}
    with Project(root) as project:
        answers = project.store.answers()
        judges = project.store.web_participants()
        batches = project.store.batches()
        crowd = crowd_for(project, fake)
        assert sorted(judges["participant"]) == [pid(n) for n in range(study.places)]
        assert set(answers["worker_id"]) == set(judges["judge_id"])
        assert len(batches) == 2 and batches.loc[0, "status"] == "aggregated"
        # The server opened batch 2: places go up and the study recruits again.
        done = crowd.top_up(project)
    assert done.places > done.before == study.places
    assert fake.study(study.study_id)["status"] == "ACTIVE"


def reach(fake: FakeProlific):
    """How the server reaches the fake (its ``prolific`` connection)."""
    return lambda: ProlificClient(TOKEN, fake.url, backoff=0.001)


def test_the_server_gives_the_study_the_places_of_each_new_batch_by_itself(tmp_path, fake):
    root = make_project(tmp_path)
    with Project(root) as project:
        crowd = crowd_for(project, fake)
        publish_batch(project, crowd)
        study = project.store.prolific_study()
    with TestClient(create_app(root, RESEARCHER, prolific=reach(fake))) as server:
        for n in range(study.places):
            take_part(server, fake, study.study_id, pid(n))
        joined = fake.take_place(study.study_id, pid(50))  # batch 2 recruits at once
        assert joined[1].startswith("https://judges.example/study/")
    with Project(root) as project:
        batches = project.store.batches()
        progress = project.store.web_batch_progress()
        stored = project.store.prolific_study()
    assert batches["status"].tolist() == ["aggregated", "published"]
    missing = int(progress["answers_wanted"]) - int(progress["answers"])
    remote = fake.study(study.study_id)
    # The last participant was still taking part, but had answered all their questions.
    assert remote["total_available_places"] == study.places + -(-missing // study.questions)
    assert stored.places == remote["total_available_places"] > study.places
    assert remote["status"] == "ACTIVE"


def test_a_study_whose_places_ran_out_is_resumed_by_adding_places(tmp_path, fake):
    root = make_project(tmp_path)
    with Project(root) as project:
        crowd = crowd_for(project, fake)
        publish_batch(project, crowd)
        study = project.store.prolific_study()
    with TestClient(create_app(root, RESEARCHER)) as server:  # places added by hand
        for n in range(study.places):
            take_part(server, fake, study.study_id, pid(n))
    assert fake.study(study.study_id)["status"] == "AWAITING REVIEW"
    start = {"action": "START"}
    with pytest.raises(CrowdError, match="Cannot START a study that is AWAITING REVIEW"):
        crowd.client.request("POST", f"/api/v1/studies/{study.study_id}/transition/", start)
    # The server restarts reaching Prolific: batch 2 is open, so the study gets its places.
    with TestClient(create_app(root, RESEARCHER, prolific=reach(fake))):
        pass
    remote = fake.study(study.study_id)
    assert remote["status"] == "ACTIVE" and remote["total_available_places"] > study.places
    fake.take_place(study.study_id, pid(50))


def test_more_answers_wanted_on_the_open_batch_raise_the_places_never_lower(tmp_path, fake):
    root = make_project(tmp_path)
    with Project(root) as project:
        crowd = crowd_for(project, fake)
        iteration = publish_batch(project, crowd)
        pairs = project.store.published_pairs(iteration, "web")
        before = project.store.prolific_study().places
        more = dict.fromkeys(pairs["pair_id"].astype(int), 4)  # an adaptive round: 2 → 4
        project.store.resize_pairs("web", wanted=more)
        crowd.collect(project, pairs)
        grown = project.store.prolific_study().places
        assert grown == -(-4 * len(pairs) // 3) > before
        project.store.resize_pairs("web", wanted=dict.fromkeys(more, 2))
        crowd.collect(project, pairs)
        study = project.store.prolific_study()
    assert study.places == fake.study(study.study_id)["total_available_places"] == grown


def test_the_server_without_a_token_stops_the_campaign_in_one_line(tmp_path, fake, monkeypatch):
    from crowdprefs.web.app import connect_prolific

    monkeypatch.delenv(TOKEN_ENV, raising=False)
    root = make_project(tmp_path)
    with Project(root) as project:
        crowd = crowd_for(project, fake)
        publish_batch(project, crowd)
    with TestClient(create_app(root, RESEARCHER, prolific=connect_prolific)) as server:
        state = server.app.state.project.store.web_campaign()
    assert state.startswith("stopped: set the environment variable PROLIFIC_TOKEN"), state
    assert "\n" not in state


def test_places_only_go_up_and_lists_freeze_once_published(tmp_path, fake):
    root = make_project(tmp_path, prolific={"blocklist": [pid(7)]})
    with Project(root) as project:
        crowd = crowd_for(project, fake)
        publish_batch(project, crowd)
        study = project.store.prolific_study()
        with pytest.raises(CrowdError, match="Places can only be increased"):
            crowd.client.update_study(study.study_id, {"total_available_places": 1})
        with pytest.raises(CrowdError, match="cannot change once a study is published"):
            crowd.client.update_study(study.study_id, {"filters": []})
        with pytest.raises(CrowdError, match="cannot change once the study is published"):
            crowd.client.update_study(study.study_id, {"reward": 1000})
        with pytest.raises(Exception, match="exclude"):
            fake.take_place(study.study_id, pid(7))
        changed = ProlificSettings(blocklist=[pid(8)])
        other = ProlificCrowd(project, crowd.client, study_terms(project), changed)
        with pytest.raises(InputError, match="froze"):
            other.top_up(project)
    assert fake.study(study.study_id)["total_available_places"] == study.places


def test_the_budget_is_checked_before_anything_is_spent(tmp_path, fake):
    root = make_project(tmp_path, budget=0.5)
    with Project(root) as project:
        crowd = crowd_for(project, fake)
        balance = fake.balance
        with pytest.raises(BudgetError, match=r"publishing 4 places costs 2\.70 GBP"):
            publish_batch(project, crowd)
        study = project.store.prolific_study()
        assert study.status == "UNPUBLISHED" and study.published_at is None
    assert fake.study(study.study_id)["status"] == "UNPUBLISHED"
    assert fake.balance == balance


def test_a_workspace_in_another_currency_or_without_funds_is_refused(tmp_path):
    usd = FakeProlific(token=TOKEN, currency="USD")
    poor = FakeProlific(token=TOKEN, balance=10)
    usd.start(), poor.start()
    try:
        root = make_project(tmp_path)
        with Project(root) as project:
            with pytest.raises(InputError, match="pays in USD but \\[prolific\\] currency is GBP"):
                publish_batch(project, crowd_for(project, usd))
            assert project.store.prolific_study() is None, "the draft was not adopted"
            with pytest.raises(CrowdError, match="Insufficient balance"):
                driver.publish(project, crowd_for(project, poor))
            assert project.store.prolific_study().published_at is None
    finally:
        usd.close(), poor.close()


# --- review and bonuses ---------------------------------------------------------------------


def test_review_applies_the_review_rules_to_whole_submissions(tmp_path, fake):
    root = make_project(tmp_path, web={"questions_per_judge": 2})
    with Project(root) as project:
        crowd = crowd_for(project, fake)
        publish_batch(project, crowd)
        study = project.store.prolific_study()
    with TestClient(create_app(root, RESEARCHER)) as server:
        good = [take_part(server, fake, study.study_id, pid(n)) for n in range(2)]
        flagged = take_part(server, fake, study.study_id, pid(2), choice="B")
        # A participant who never answered comes back with the code from elsewhere.
        empty, _ = fake.take_place(study.study_id, pid(3))
        fake.complete(empty, COMPLETE_URL.format(code=CODE))
    with Project(root) as project:
        judges = project.store.web_participants().set_index("participant")["judge_id"]
        extra = pd.DataFrame({"worker_id": [judges[pid(2)]], "reason": ["pressed B every time"]})
        decided = worker_decisions(project_answers(project, crowd.name), ReviewRules(), extra)
        done = crowd.review(project, decided.flags, decided.rejected_answers)
        assert done == {"approved": 2, "rejected": 2}
        answers = project.store.answers(include_rejected=True)
        status = answers.groupby("worker_id")["status"].agg(set)
        assert status[judges[pid(2)]] == {"rejected"}, "a rejected participant's answers drop"
        assert status[judges[pid(0)]] == status[judges[pid(1)]] == {"approved"}
        assert project.store.blocked_participants() == [pid(2)]
        assert not project.store.missing_answers(1).empty, "their pairs are asked again"
        again = crowd.review(project, decided.flags, decided.rejected_answers)
    assert again == {"approved": 0, "rejected": 0}, "decided once"
    by_id = {s["id"]: s for s in fake.submissions(study.study_id)}
    assert [by_id[s]["status"] for s in good] == ["APPROVED", "APPROVED"]
    assert by_id[flagged]["rejection"]["category"] == "LOW_EFFORT"
    assert "pressed B every time" in by_id[flagged]["rejection"]["message"]
    assert by_id[empty]["rejection"]["category"] == "NO_DATA"
    assert fake.study(study.study_id)["status"] == "ACTIVE", "rejections free their places"


def test_a_decision_stored_before_a_failure_is_sent_by_the_next_review(tmp_path, fake, monkeypatch):
    root = make_project(tmp_path)
    with Project(root) as project:
        crowd = crowd_for(project, fake)
        publish_batch(project, crowd)
        study = project.store.prolific_study()
    with TestClient(create_app(root, RESEARCHER)) as server:
        take_part(server, fake, study.study_id, pid(0))
        empty, _ = fake.take_place(study.study_id, pid(1))
        fake.complete(empty, COMPLETE_URL.format(code=CODE))
    no_flags = pd.DataFrame(columns=["worker_id", "reason", "rule"])
    no_answers = pd.DataFrame(columns=["assignment_id", "worker_id", "reason"])
    with Project(root) as project:
        failing = ProlificClient(TOKEN, fake.url, backoff=0.001)
        monkeypatch.setattr(
            failing, "approve", lambda ids: (_ for _ in ()).throw(CrowdError("lost"))
        )
        broken = ProlificCrowd(project, failing, study_terms(project))
        with pytest.raises(CrowdError, match="lost"):
            broken.review(project, no_flags, no_answers)
        pending = project.store.pending_prolific_reviews()
        assert pending["decision"].tolist() == ["approve"], "the rejection was sent, not this"
        assert crowd.review(project, no_flags, no_answers) == {"approved": 1, "rejected": 0}
        assert project.store.pending_prolific_reviews().empty
    assert {s["status"] for s in fake.submissions(study.study_id)} == {"APPROVED", "REJECTED"}


def test_bonuses_are_paid_per_accepted_answer_once_even_when_the_reply_is_lost(
    tmp_path, fake, monkeypatch
):
    root = make_project(tmp_path)
    with Project(root) as project:
        crowd = crowd_for(project, fake)
        publish_batch(project, crowd)
        study = project.store.prolific_study()
    with TestClient(create_app(root, RESEARCHER)) as server:
        for n in range(2):
            take_part(server, fake, study.study_id, pid(n))
    empty = pd.DataFrame(columns=["worker_id", "reason", "rule"])
    with Project(root) as project:
        crowd.review(project, empty, pd.DataFrame(columns=["assignment_id", "worker_id", "reason"]))
        with pytest.raises(InputError, match="whole pence"):
            crowd.bonus(project, 0.005)
        real_pay = crowd.client.pay_bonuses

        def lost(bonus_id):  # Prolific pays, the reply never arrives
            real_pay(bonus_id)
            raise CrowdError("Prolific POST: Service Unavailable")

        monkeypatch.setattr(crowd.client, "pay_bonuses", lost)
        assert crowd.bonus(project, 0.05) == {"participants": 2, "amount": 30}
        monkeypatch.setattr(crowd.client, "pay_bonuses", real_pay)
        assert crowd.bonus(project, 0.05) == {"participants": 0, "amount": 0}
        assert project.store.unpaid_prolific_bonuses().empty
        committed = project.store.prolific_committed()
    assert [s["bonus_payments"] for s in fake.submissions(study.study_id)] == [[15], [15]]
    assert committed == pytest.approx((study.places * 45 + 30) * 1.5)


def test_throttling_and_lost_replies_never_publish_or_pay_twice(tmp_path):
    fake = FakeProlific(token=TOKEN, fault_rate=0.35, seed=3)
    fake.start()
    try:
        root = make_project(tmp_path)
        with Project(root) as project:
            crowd = crowd_for(project, fake)
            publish_batch(project, crowd)
            study = project.store.prolific_study()
        fake.fault_rate = 0.0
        with TestClient(create_app(root, RESEARCHER)) as server:
            for n in range(2):
                take_part(server, fake, study.study_id, pid(n))
        fake.fault_rate = 0.35
        empty = pd.DataFrame(columns=["worker_id", "reason", "rule"])
        with Project(root) as project:
            crowd.review(
                project, empty, pd.DataFrame(columns=["assignment_id", "worker_id", "reason"])
            )
            crowd.bonus(project, 0.05)
        calls = fake.calls()
        assert calls["transition_study"] == 1 and calls["pay_bonuses"] == 1
        assert fake.study(study.study_id)["status"] in ("ACTIVE", "AWAITING REVIEW")
        assert [sum(s["bonus_payments"]) for s in fake.submissions(study.study_id)] == [15, 15]
    finally:
        fake.close()


# --- the fake refuses what Prolific refuses -------------------------------------------------


def study_body(**changes) -> dict:
    body = {
        "name": "n",
        "description": "d",
        "external_study_url": "https://x.example/s?PROLIFIC_PID={{%PROLIFIC_PID%}}",
        "prolific_id_option": "url_parameters",
        "completion_codes": [{"code": "C1", "code_type": "COMPLETED", "actions": []}],
        "total_available_places": 2,
        "estimated_completion_time": 10,
        "reward": 150,
    }
    return {k: v for k, v in {**body, **changes}.items() if v is not None}


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (study_body(reward=None), "reward.*required"),
        (study_body(reward="150"), "reward.*Expected int"),
        (study_body(colour="red"), "colour.*Unknown field"),
        (study_body(reward=99), "below the minimum of 6.00"),
        (study_body(external_study_url="https://x.example/s"), "PROLIFIC_PID"),
        (study_body(completion_codes=[]), "completion_codes"),
        (
            study_body(
                completion_codes=[{"code": "C", "code_type": "COMPLETED", "actions": []}] * 2
            ),
            "unique",
        ),
        (study_body(total_available_places=0), "greater than or equal to 1"),
        (study_body(filters=[{"filter_id": "age", "selected_values": []}]), "filters"),
    ],
)
def test_the_fake_refuses_studies_prolific_refuses(fake, body, message):
    with ProlificClient(TOKEN, fake.url) as client, pytest.raises(CrowdError, match=message):
        client.create_study(body)


def test_the_fake_refuses_bad_transitions_rejections_and_bonuses(fake):
    client = ProlificClient(TOKEN, fake.url, backoff=0.001)
    study = client.create_study(study_body())
    with pytest.raises(CrowdError, match="Not Found"):
        client.request("GET", "/api/v1/messages/")
    with pytest.raises(CrowdError, match="not allowed"):
        client.request("DELETE", f"/api/v1/studies/{study['id']}/")
    client.publish_study(study["id"])
    with pytest.raises(CrowdError, match="Cannot PUBLISH a study that is ACTIVE"):
        client.publish_study(study["id"])
    working, _ = fake.take_place(study["id"], pid(1))
    with pytest.raises(CrowdError, match="only a submission awaiting review"):
        client.approve([working])
    with pytest.raises(Exception, match="completion address"):
        fake.complete(working, "https://app.prolific.example/submissions/complete?cc=C1")
    fake.complete(working, "https://app.prolific.com/submissions/complete?cc=C1")
    with pytest.raises(CrowdError, match="at least 100 characters"):
        client.reject(working, "too short", "LOW_EFFORT")
    with pytest.raises(CrowdError, match="rejection_category"):
        client.reject(working, "x" * 120, "RUDE")
    with pytest.raises(CrowdError, match="no completed submission"):
        client.set_up_bonuses(study["id"], [(pid(2), 50)])
    client.approve([working])
    client.approve([working])  # a repeated approval is ignored, as Prolific does
    with pytest.raises(CrowdError, match="is APPROVED: only a submission awaiting review"):
        client.reject(working, "x" * 120, "LOW_EFFORT")
    bonus = client.set_up_bonuses(study["id"], [(pid(1), 50)])
    assert (bonus["amount"], bonus["total_amount"]) == (50, 67)
    client.pay_bonuses(bonus["id"])
    with pytest.raises(CrowdError, match="already been paid"):
        client.pay_bonuses(bonus["id"])
    client.close()


def test_submissions_are_read_page_by_page(fake, monkeypatch):
    monkeypatch.setattr("crowdprefs.crowds.prolific.client.PAGE_SIZE", 2)
    with ProlificClient(TOKEN, fake.url) as client:
        study = client.create_study(study_body(total_available_places=5))
        client.publish_study(study["id"])
        taken = [fake.take_place(study["id"], pid(n))[0] for n in range(5)]
        assert [s["id"] for s in client.submissions(study["id"])] == taken
    assert fake.calls().get("list_submissions") == 3


def test_the_token_comes_from_the_environment_and_never_shows(tmp_path, fake, monkeypatch):
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    with pytest.raises(InputError, match=f"set the environment variable {TOKEN_ENV}"):
        token_from_environment()
    root = make_project(tmp_path)
    with Project(root) as project, pytest.raises(InputError, match=TOKEN_ENV):
        get_crowd("prolific", project, study_terms=study_terms(project))
    wrong = "wrong-secret-token-value"
    with ProlificClient(wrong, fake.url) as client, pytest.raises(CrowdError) as refused:
        client.study("abc")
    assert "Invalid token" in str(refused.value) and wrong not in str(refused.value)
    with pytest.raises(InputError, match="HTTPS only"):
        ProlificClient(TOKEN, "http://api.prolific.example")
    monkeypatch.setenv(TOKEN_ENV, " from-the-environment ")
    assert token_from_environment() == "from-the-environment"


# --- the commands ---------------------------------------------------------------------------


def test_the_commands_publish_follow_review_and_pay_through_the_fake(tmp_path, cli, monkeypatch):
    from crowdprefs.cli.prolific import FAKE_TOKEN

    monkeypatch.delenv(TOKEN_ENV, raising=False)
    root = make_project(tmp_path)
    with Project(root) as project:
        driver.next_batch(project)
        driver.publish(project, get_crowd("web", project))
    code, out, err = cli("prolific", "publish", root)
    assert code == 2 and err.strip().count("\n") == 0 and TOKEN_ENV in err, "no token: one line"
    code, out, _ = cli("prolific", "publish", root, "--fake")
    assert code == 0 and "0 → 4 places at 0.45 GBP for 3 min (3 questions each)" in out
    assert "is active with 4 places" in out
    code, out, _ = cli("prolific", "publish", root, "--fake")
    assert code == 0 and "no new places needed" in out
    fake = FakeProlific(root / "prolific-fake.sqlite", token=FAKE_TOKEN)
    fake.start()
    with Project(root) as project:
        study = project.store.prolific_study()
    with TestClient(create_app(root, RESEARCHER)) as server:
        for n in range(2):
            take_part(server, fake, study.study_id, pid(n))
    fake.close()
    code, out, _ = cli("prolific", "status", root, "--fake")
    assert code == 0 and "2/4 places taken" in out and "2 awaiting review" in out
    code, out, _ = cli("prolific", "review", root, "--fake", "--consistency")
    assert code == 0 and "approved 2, rejected 0 submissions" in out
    code, out, _ = cli("prolific", "bonus", root, "--fake", "--per-answer", "0.02")
    assert code == 0 and "paid 0.12 GBP to 2 participants" in out
    code, _, err = cli("prolific", "bonus", root, "--fake", "--per-answer", "0.001")
    assert code == 2 and "whole pence" in err


def test_the_served_site_adds_places_on_the_local_fake_when_asked_to(tmp_path, cli, monkeypatch):
    """``crowdprefs serve --fake``, through the installed console script: the server reaches the
    project's local fake of Prolific, so a study rehearsed with ``prolific publish --fake``
    gets the places of batch 2 once batch 1 is answered."""
    from crowdprefs.cli.prolific import FAKE_TOKEN

    monkeypatch.delenv(TOKEN_ENV, raising=False)
    root = make_project(tmp_path)
    with Project(root) as project:
        driver.next_batch(project)
        driver.publish(project, get_crowd("web", project))
    assert cli("prolific", "publish", root, "--fake")[0] == 0
    with Project(root) as project:
        study = project.store.prolific_study()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {**os.environ, "CROWDPREFS_RESEARCHER_TOKEN": RESEARCHER}
    command = [script(), "serve", root, "--port", port, "--fake"]
    server = subprocess.Popen(list(map(str, command)), env=env, stderr=subprocess.PIPE, text=True)
    fake = FakeProlific(root / "prolific-fake.sqlite", token=FAKE_TOKEN)
    site = f"http://127.0.0.1:{port}"
    try:
        for _ in range(200):
            try:
                if httpx.get(f"{site}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        for n in range(study.places):
            take_part(site, fake, study.study_id, pid(n))
        remote = fake.study(study.study_id)
    finally:
        server.terminate()
        log = server.communicate(timeout=30)[1]
        fake.close()
    with Project(root) as project:
        assert project.store.batches()["status"].tolist() == ["aggregated", "published"]
        grown = project.store.prolific_study().places
    assert "stopped" not in log and remote["total_available_places"] == grown > study.places


def test_judges_are_served_while_the_server_waits_on_prolific_after_a_batch(tmp_path, fake):
    """The batch's last answer moves the campaign on (aggregate, batch 2, Prolific's places) on a
    worker thread: while Prolific is slow to answer, the site answers other requests."""
    root = make_project(tmp_path)
    with Project(root) as project:
        publish_batch(project, crowd_for(project, fake))
        study = project.store.prolific_study()
    answering, reached = threading.Event(), threading.Event()
    answering.set()

    def slow_prolific() -> ProlificClient:
        reached.set()
        assert answering.wait(timeout=60)
        return reach(fake)()

    app = create_app(root, RESEARCHER, prolific=slow_prolific)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, port=port, log_level="warning"))
    serving = threading.Thread(target=server.run)
    serving.start()
    site = f"http://127.0.0.1:{port}"
    try:
        while not server.started:
            time.sleep(0.02)
        for n in range(study.places - 1):
            take_part(site, fake, study.study_id, pid(n))
        answering.clear()
        reached.clear()
        last = threading.Thread(target=take_part, args=(site, fake, study.study_id, pid(99)))
        last.start()
        assert reached.wait(timeout=60), "the last answer moves the campaign on"
        assert httpx.get(f"{site}/healthz", timeout=5).text.startswith("ok")  # not held up
        answering.set()
        last.join(timeout=60)
    finally:
        answering.set()
        server.should_exit = True
        serving.join(timeout=30)
    with Project(root) as project:
        assert project.store.batches()["status"].tolist() == ["aggregated", "published"]
        assert project.store.prolific_study().places > study.places


def test_a_participant_at_the_per_batch_cap_does_not_stand_in_for_a_new_place(tmp_path, fake):
    """With ``[web] questions_per_batch``, a participant still taking part who answered their
    share of the batch brings no more answers to it: answers wanted again need new places."""
    root = make_project(tmp_path, web={"questions_per_batch": 2, "advance": False})
    with Project(root) as project:
        publish_batch(project, crowd_for(project, fake))
        study = project.store.prolific_study()
    assert study.questions == 2
    with TestClient(create_app(root, RESEARCHER)) as server:
        for n in range(study.places):  # the last one stays on the done page
            take_part(server, fake, study.study_id, pid(n), complete=n < study.places - 1)
    with Project(root) as project:
        assert project.store.missing_answers(1).empty
        judges = project.store.web_participants().set_index("participant")["judge_id"]
        rejected = [(judges[pid(0)], "careless")]
        project.store.decide_web_workers(rejected, [], "2026-01-01T00:00:00+00:00")
        plan = crowd_for(project, fake).plan(project)
    assert plan.before == study.places and plan.places == study.places + 1
