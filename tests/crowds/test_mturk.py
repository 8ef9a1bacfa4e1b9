"""The MTurk backend against the local fake: the real boto3 client, a loopback endpoint."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import tomli_w
from mturk_campaign import make_project, run_campaign, start_fake
from sqlalchemy import text
from typer.testing import CliRunner

from crowdprefs.campaign import driver
from crowdprefs.campaign.answers import check_answer
from crowdprefs.campaign.project import CONFIG_NAME, Project
from crowdprefs.cli.app import app
from crowdprefs.crowds import get_crowd
from crowdprefs.crowds.mturk.crowd import MTurkCrowd, MTurkSettings, parse_answer, request_token
from crowdprefs.crowds.mturk.fake import FakeMTurk, answer_xml
from crowdprefs.errors import BudgetError, CrowdError, InputError
from crowdprefs.quality.review import Reviewer

REVIEW = Reviewer()


@pytest.fixture
def campaign(tmp_path):
    project = make_project(tmp_path / "c", mturk={"page_size": 2})  # answers come in 3 pages
    fake, url = start_fake(project)
    yield project, fake, MTurkCrowd(project, target="fake", endpoint_url=url)
    fake.stop()
    project.close()


def test_full_campaign_through_the_fake(campaign):
    project, fake, crowd = campaign
    run_campaign(project, crowd)
    lists = driver.lists(project)
    assert sorted(lists["query"].unique()) == ["q01", "q02", "q03"]
    hits = project.store.hits("mturk-fake")
    pairs = project.store.pairs()
    assert len(hits) == len(pairs) == len(fake.hits())  # exactly one HIT per pair
    assert {h["RequesterAnnotation"].rsplit(" ", 1)[1] for h in fake.hits()} == {
        str(p) for p in pairs["pair_id"]
    }
    answers = project.store.answers(include_rejected=True)
    remote = [a for h in fake.hits() for a in fake.assignments(h["HITId"])]
    assert len(answers) == len(remote)
    assert answers["assignment_id"].is_unique
    assert set(answers["status"]) <= {"approved", "rejected"}
    by_id = {a["AssignmentId"]: a["AssignmentStatus"].lower() for a in remote}
    assert (answers["assignment_id"].map(by_id) == answers["status"]).all()
    # the HIT type carries the qualifications (95% approval, 100 approved HITs)
    hit_type = fake.hits()[0]
    quals = {
        q["QualificationTypeId"]: q["IntegerValues"] for q in hit_type["QualificationRequirements"]
    }
    assert quals == {"000000000000000000L0": [95], "00000000000000000040": [100]}
    # scores are from x's point of view whatever side x was shown on
    merged = answers.assign(sign=answers["a_is_x"].map({1: 1, 0: -1}))
    side = merged["choice"].map({"A": 1, "B": -1, "equal": 0})
    assert (side * merged["sign"] == merged["score"]).all()


def test_the_two_bots_are_blocked_and_replaced(tmp_path):
    project = make_project(tmp_path / "b", answers=5)
    section = project.root / CONFIG_NAME
    import tomllib

    data = tomllib.loads(section.read_text())
    data["simulated"].update({"bots": 2, "workers": 12, "activity": 0.0})
    data["review"] = {"bot_min_answers": 4}
    section.write_text(tomli_w.dumps(data))
    project.close()
    project = Project(tmp_path / "b" / "project")
    fake, url = start_fake(project)
    crowd = MTurkCrowd(project, target="fake", endpoint_url=url)
    run_campaign(project, crowd)
    blocks = project.store.worker_blocks()
    assert len(blocks) == 2 and blocks["applied_at"].notna().all()
    assert set(fake.blocked()) == set(blocks["worker_id"])
    assert blocks["reason"].str.startswith("bot:").all()
    rejected = project.store.answers(include_rejected=True).query("status == 'rejected'")
    assert set(rejected["worker_id"]) == set(blocks["worker_id"])
    assert (rejected["choice"] == "equal").all() and (rejected["seconds"] == 8.0).all()
    # every rejected answer was replaced: each pair has its 5 accepted answers
    accepted = project.store.answers().groupby("pair_id").size()
    assert (accepted == 5).all()
    fake.stop()
    project.close()


def test_a_retried_or_resumed_publish_never_posts_a_pair_twice(campaign):
    project, fake, crowd = campaign
    driver.next_batch(project)
    pairs = project.store.pairs(1)
    crowd.publish(project, pairs.iloc[:3])
    # the state loses its HIT ids (a crash before the commit): the tokens find the HITs again
    with project.store.transaction() as conn:
        conn.execute(text("DELETE FROM hits"))
    driver.publish(project, crowd)
    assert len(fake.hits()) == len(pairs)
    # three requests were refused by their token (HitAlreadyExists) and their HITs recovered
    assert fake.calls()["CreateHITWithHITType"] == len(pairs) + 3
    local = project.store.hits()
    assert len(local) == len(pairs) and local["hit_id"].is_unique


def test_token_is_a_function_of_project_iteration_and_pair(campaign):
    project, _, _ = campaign
    token = request_token(project, 1, "q01", "a", "b")
    assert token == request_token(project, 1, "q01", "a", "b")
    assert len(token) <= 64
    assert (
        len(
            {
                token,
                request_token(project, 2, "q01", "a", "b"),
                request_token(project, 1, "q01", "b", "a"),
            }
        )
        == 3
    )


@pytest.mark.slow
def test_faults_are_retried_and_tokens_keep_hits_unique(tmp_path):
    """Throttling and server faults (half after the fact) on one batch: retried by botocore."""
    project = make_project(tmp_path / "f", answers=3)
    fake, url = start_fake(project, fault_rate=0.12, seed=5)
    crowd = MTurkCrowd(project, target="fake", endpoint_url=url)
    driver.next_batch(project)
    driver.publish(project, crowd)
    driver.collect(project, crowd, REVIEW)
    assert project.store.last_batch()["status"] == "collected"
    assert len(fake.hits()) == len(project.store.pairs())
    assert len(project.store.answers(include_rejected=True)) == sum(
        len(fake.assignments(h["HITId"])) for h in fake.hits()
    )
    fake.stop()
    project.close()


def test_the_fake_validates_against_botocore_model(campaign):
    _, fake, _ = campaign
    target = "MTurkRequesterServiceV20170117."
    status, body = fake.dispatch(target + "CreateHITType", json.dumps({"Title": "t"}).encode())
    assert status == 400 and body["__type"] == "ValidationException"
    assert "AssignmentDurationInSeconds" in body["Message"]
    status, body = fake.dispatch(target + "GetHIT", json.dumps({"HITId": 5}).encode())
    assert status == 400 and "HITId" in body["Message"]
    status, body = fake.dispatch(target + "NoSuchThing", b"{}")
    assert status == 400
    type_id = fake.dispatch(
        target + "CreateHITType",
        json.dumps(
            {"AssignmentDurationInSeconds": 60, "Reward": "0.02", "Title": "t", "Description": "d"}
        ).encode(),
    )[1]["HITTypeId"]
    bad_question = {
        "HITTypeId": type_id,
        "MaxAssignments": 1,
        "LifetimeInSeconds": 60,
        "Question": "<HTMLQuestion>not closed",
    }
    status, body = fake.dispatch(target + "CreateHITWithHITType", json.dumps(bad_question).encode())
    assert status == 400 and "not valid XML" in body["Message"]


def test_answer_parsing_is_safe_and_validated():
    fields = {"choice": "equal", "comment": "<b>&amp;</b>", "plays_query": "2", "listen_a": "3.5"}
    parsed, problems = check_answer(parse_answer(answer_xml(fields)))
    assert parsed["choice"] == "equal" and parsed["comment"] == "<b>&amp;</b>"
    assert parsed["plays_query"] == 2.0 and parsed["listen_a"] == 3.5
    assert problems == ["sent without playing every clip to the end (not played: a, b)"]
    bomb = (
        '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa">'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
        "<QuestionFormAnswers>&b;</QuestionFormAnswers>"
    )
    with pytest.raises(InputError, match="unreadable answer XML"):
        parse_answer(bomb)
    played = {f"plays_{role}": "1" for role in ("query", "a", "b")}
    assert check_answer({"choice": "C", **played}) == (
        {**check_answer({"choice": "A", **played})[0], "choice": None},
        ["invalid choice 'C'"],
    )
    assert check_answer({"choice": "A", "listen_a": "nan", **played})[1] == [
        "invalid listen_a 'nan'"
    ]
    long, problems = check_answer({"choice": "A", "comment": "x" * 5000, **played})
    assert len(long["comment"]) == 2000
    assert problems == ["the comment is longer than 2000 characters"]
    lines = "\r\n".join(["x" * 99] * 20)  # 2,000 characters as the page counts them
    assert check_answer({"choice": "A", "comment": lines, **played})[1] == []


def test_listening_evidence_is_checked_against_the_clips_durations():
    played = {f"plays_{role}": "1" for role in ("query", "a", "b")}
    heard = {"listen_query": "9.9", "listen_a": "4.6", "listen_b": "2.0"}
    durations = {"query": 10.0, "a": 5.0, "b": 6.0}
    answer, problems = check_answer({"choice": "B", **played, **heard}, durations)
    assert answer["listen_b"] == 2.0
    assert problems == ["clips heard too briefly: b for 2 s of its 6 s"]
    assert check_answer({"choice": "B", **played, **heard, "listen_b": "5"}, durations)[1] == []
    unknown = {"query": None, "a": float("nan"), "b": None}  # durations unknown: plays suffice
    assert check_answer({"choice": "B", **played}, unknown)[1] == []


def test_malformed_answers_are_rejected_with_a_reason_and_replaced(campaign):
    project, fake, crowd = campaign
    real = fake.responder

    def sloppy(hit, first, count):
        answers = real(hit, first, count)
        if first == 0 and answers:
            answers[0]["fields"]["choice"] = "maybe"
        return answers

    fake.responder = sloppy
    driver.next_batch(project)
    driver.publish(project, crowd)
    driver.collect(project, crowd, REVIEW)
    reviews = project.store.reviews().query("decision == 'reject'")
    pairs = project.store.pairs(1)
    assert len(reviews) == len(pairs)
    assert reviews["reason"].str.contains("invalid choice").all()
    assert reviews["applied_at"].notna().all()
    assert project.store.last_batch()["status"] == "collected"
    assert (project.store.hits()["max_assignments"] == 6).all()


def test_flags_from_the_audit_block_and_reject(campaign):
    project, fake, crowd = campaign
    driver.next_batch(project)
    driver.publish(project, crowd)
    answers_before = fake.assignments(fake.hits()[0]["HITId"])
    victim = answers_before[0]["WorkerId"]
    flags = pd.DataFrame({"worker_id": [victim], "reason": ["audit: low agreement"]})
    driver.collect(project, crowd, Reviewer(flags))
    assert fake.blocked() == {victim: "audit: low agreement"}
    stored = project.store.answers(include_rejected=True)
    assert (stored.loc[stored["worker_id"] == victim, "status"] == "rejected").all()
    assert victim not in set(project.store.answers()["worker_id"])
    assert project.store.last_batch()["status"] == "collected"


def test_reconcile_adopts_orphans_and_expire_ends_hits(campaign):
    project, fake, crowd = campaign
    driver.next_batch(project)
    driver.publish(project, crowd)
    with project.store.transaction() as conn:
        conn.execute(text("DELETE FROM hits WHERE pair_id IN (SELECT pair_id FROM pairs LIMIT 2)"))
    report = crowd.reconcile(project)
    assert report["adopted"] == 2 and report["remote_hits"] == len(fake.hits())
    assert report["new_answers"] == len(project.store.answers())
    assert crowd.expire(project) == len(fake.hits())
    assert {h["HITStatus"] for h in fake.hits()} == {"Reviewable"}
    assert set(project.store.hits()["status"]) == {"expired"}


@pytest.mark.parametrize(
    ("settings", "fake_options", "error", "message"),
    [
        ({}, {"balance": "0.50"}, BudgetError, "balance \\$0.50 cannot pay"),
        (  # adaptive answers from 4 to 10: MTurk never takes a HIT of 4 to 10 assignments
            {"answers": 10, "adaptive": {"method": "curtail"}},
            {},
            InputError,
            "maximum = 10 cannot be reached on MTurk",
        ),
    ],
)
def test_publishing_is_refused_before_any_hit_exists(
    tmp_path, settings, fake_options, error, message
):
    project = make_project(tmp_path / "m", **settings)
    fake, url = start_fake(project, **fake_options)
    crowd = MTurkCrowd(project, target="fake", endpoint_url=url)
    driver.next_batch(project)
    with pytest.raises(error, match=message):
        driver.publish(project, crowd)
    assert fake.hits() == []
    fake.stop()
    project.close()


def test_live_needs_explicit_flag_and_confirmation(tmp_path):
    project = make_project(tmp_path / "l")
    project.close()
    with pytest.raises(InputError, match="never chosen by name"):
        get_crowd("mturk", Project(tmp_path / "l" / "project"))
    result = CliRunner().invoke(
        app, ["mturk", "publish", str(tmp_path / "l" / "project"), "--live"], input="n\n"
    )
    assert result.exit_code != 0
    assert "LIVE MTurk" in result.output and "$" in result.output
    with Project(tmp_path / "l" / "project") as reopened:
        assert reopened.store.hits().empty
        assert MTurkCrowd(reopened, target="sandbox", client=object()).name == "mturk-sandbox"


def test_settings_are_validated(tmp_path):
    project = make_project(tmp_path / "s", mturk={"locales": ["US", "us"]})
    with pytest.raises(InputError, match="locales"):
        MTurkSettings.from_project(project)
    ok = MTurkSettings(locales=["US", "CA-QC"]).qualifications()
    assert ok[-1]["LocaleValues"] == [{"Country": "US"}, {"Country": "CA", "Subdivision": "QC"}]
    project.close()


def test_publishing_local_clips_needs_hosting(tmp_path):
    project = make_project(tmp_path / "h")
    clip = tmp_path / "h" / "clip.wav"
    clip.write_bytes(b"RIFF")
    with project.store.transaction() as conn:
        conn.execute(text("UPDATE candidates SET audio = :a"), {"a": str(clip)})
        conn.execute(text("UPDATE queries SET audio = :a"), {"a": str(clip)})
    crowd = MTurkCrowd(project, target="sandbox", client=object())
    driver.next_batch(project)
    with pytest.raises(InputError, match="set \\[hosting\\]"):
        crowd._clip_url(project, project.store.pairs(1))
    project.close()


def test_cli_with_the_fake(tmp_path):
    project = make_project(tmp_path / "cli", answers=2)
    root = str(project.root)
    project.close()
    runner = CliRunner()

    def run(*args: str) -> str:
        result = runner.invoke(app, list(args), catch_exceptions=False)
        assert result.exit_code == 0, result.output
        return result.output

    assert "wrote 9 HITs of batch 1" in run("preview", root, "--output", str(tmp_path / "pv"))
    assert "published 9 HITs of batch 1 to mturk-fake" in run("mturk", "publish", root, "--fake")
    assert "batch 1 is collected" in run("mturk", "collect", root, "--fake", "--audit")
    assert "remote hits" in run("mturk", "reconcile", root, "--fake")
    assert "expired 9 HITs" in run("mturk", "expire", root, "--fake", "--yes")
    assert "$10000.00 available" in run("mturk", "balance", root, "--fake")


def test_faults_left_after_retries_end_in_one_line(tmp_path):
    project = make_project(tmp_path / "e", mturk={"max_attempts": 2})
    fake, url = start_fake(project, fault_rate=1.0)
    crowd = MTurkCrowd(project, target="fake", endpoint_url=url)
    with pytest.raises(CrowdError) as error:
        crowd.balance()
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("MTurk (fake) GetAccountBalance: ")
    assert "ThrottlingException" in message or "ServiceFault" in message
    fake.stop()
    project.close()


def test_a_resume_after_the_token_memory_adopts_instead_of_posting(campaign):
    project, fake, crowd = campaign
    driver.next_batch(project)
    pairs = project.store.pairs(1)
    crowd.publish(project, pairs.iloc[:1])
    with project.store.transaction() as conn:
        conn.execute(text("DELETE FROM hits"))
        conn.execute(text("UPDATE batches SET created_at = '2020-01-01T00:00:00.000+00:00'"))
    fake.conn.execute("UPDATE hits SET token = NULL")  # MTurk forgot the token after 24 h
    driver.publish(project, crowd)
    assert len(fake.hits()) == len(pairs)
    assert fake.calls()["CreateHITWithHITType"] == len(pairs)  # the lost HIT was adopted


def test_hit_sizes_raised_locally_are_extended_on_mturk(campaign):
    """The adaptive-answers hook raises a pair's wanted answers and HIT size in the state."""
    project, fake, crowd = campaign
    driver.next_batch(project)
    driver.publish(project, crowd)
    driver.collect(project, crowd, REVIEW)
    first = project.store.hits().iloc[0]
    pair_id, hit_id = int(first["pair_id"]), first["hit_id"]
    with project.store.transaction() as conn:
        conn.execute(text("UPDATE pairs SET answers_wanted = 7 WHERE pair_id = :p"), {"p": pair_id})
        conn.execute(text("UPDATE hits SET max_assignments = 7 WHERE pair_id = :p"), {"p": pair_id})
    driver.collect(project, crowd, REVIEW)
    assert next(h for h in fake.hits() if h["HITId"] == hit_id)["MaxAssignments"] == 7
    assert (project.store.answers()["pair_id"] == pair_id).sum() == 7


def tamper_first_answers(fake: FakeMTurk) -> None:
    """The first answer of every HIT comes back without clip B played (rejected on review)."""
    real = fake.responder

    def tampered(hit, first, count):
        answers = real(hit, first, count)
        if first == 0 and answers:
            answers[0]["fields"]["plays_b"] = "0"
        return answers

    fake.responder = tampered


def test_answers_sent_without_listening_are_rejected(campaign):
    project, fake, crowd = campaign
    tamper_first_answers(fake)
    driver.next_batch(project)
    driver.publish(project, crowd)
    driver.collect(project, crowd, REVIEW)
    rejected = project.store.answers(include_rejected=True).query("status == 'rejected'")
    assert len(rejected) == len(project.store.pairs(1))
    assert all(json.loads(r)["fields"]["plays_b"] == 0 for r in rejected["raw"])
    reasons = project.store.reviews().query("decision == 'reject'")
    assert reasons["reason"].str.contains("without playing every clip").all()
    assert project.store.last_batch()["status"] == "collected"


def test_reward_must_be_whole_cents(campaign):
    _, _, crowd = campaign
    with pytest.raises(InputError, match="whole cents"):
        crowd.hit_type(0.025)
    with pytest.raises(InputError, match="whole cents"):
        crowd.hit_type(0.0)
    assert crowd.hit_type(0.03) == crowd.hit_type(0.03)  # one HIT type per project settings


def test_a_rejection_mturk_cannot_replace_leaves_the_pair_one_answer_short(tmp_path):
    """A HIT of 9 cannot become 10: its rejected answer is not replaced and the batch closes
    with the pair decided on 8 answers instead of waiting forever for a 9th."""
    project = make_project(tmp_path / "n", answers=9)
    fake, url = start_fake(project)
    tamper_first_answers(fake)
    crowd = MTurkCrowd(project, target="fake", endpoint_url=url)
    driver.next_batch(project)
    driver.publish(project, crowd)
    driver.collect(project, crowd, REVIEW)
    assert project.store.last_batch()["status"] == "collected"
    pairs = project.store.pairs(1)
    assert (pairs["answers_wanted"] == 8).all()
    accepted = project.store.answers().groupby("pair_id").size()
    assert (accepted.reindex(pairs["pair_id"]) == 8).all()
    assert {h["MaxAssignments"] for h in fake.hits()} == {9}
    fake.stop()
    project.close()


def test_adaptive_answers_under_ten_with_rejections_close_every_batch(tmp_path):
    """maximum = 9: undecided pairs grow to 9 and rejections at 9 lower what a pair can get,
    so the whole campaign finishes."""
    adaptive = {"method": "sequential", "initial": 4, "step": 2, "maximum": 9}
    project = make_project(tmp_path / "s", answers=9, adaptive=adaptive)
    fake, url = start_fake(project)
    tamper_first_answers(fake)
    crowd = MTurkCrowd(project, target="fake", endpoint_url=url)
    run_campaign(project, crowd)
    hits = project.store.hits().merge(project.store.pairs()[["pair_id", "answers_wanted"]])
    assert hits["max_assignments"].max() == 9  # some pairs went to the maximum...
    at_nine = hits[hits["max_assignments"] == 9]
    assert (at_nine["answers_wanted"] == 8).all()  # ...where their rejection cost an answer
    remote = {
        int(h["RequesterAnnotation"].rsplit(" ", 1)[1]): h["MaxAssignments"] for h in fake.hits()
    }
    assert (hits["pair_id"].map(remote) == hits["max_assignments"]).all()
    fake.stop()
    project.close()


class FixedResponder:
    """Five workers answer every HIT: W1 and W2 prefer x, W3–W5 find the two equal (2–3–0:
    "more similar" under a vote margin of 2, "equal" under Mann-Whitney, p = 0.075)."""

    def __init__(self, state_path, crowd) -> None:
        self.state_path = state_path

    def __call__(self, hit: dict, first: int, count: int) -> list[dict]:
        from datetime import UTC, datetime, timedelta

        from crowdprefs.campaign.store import Store

        store = Store(self.state_path, lock=False)
        pair = store.pair(int(hit["RequesterAnnotation"].rsplit(" ", 1)[1]))
        store.close()
        x_side = "A" if pair["a_is_x"] else "B"
        start = datetime.fromtimestamp(hit["CreationTime"], UTC)
        answers = []
        for k in range(first, min(first + count, 5)):
            seconds = 20.0 + 3 * k + int(pair["pair_id"]) % 7  # plausible, varied work times
            answers.append(
                {
                    "WorkerId": f"W{k + 1}",
                    "AcceptTime": start,
                    "SubmitTime": start + timedelta(seconds=seconds),
                    "fields": {
                        "choice": x_side if k < 2 else "equal",
                        **{f"plays_{c}": "1" for c in ("query", "a", "b")},
                    },
                }
            )
        return answers


@pytest.mark.parametrize(
    ("aggregation", "blocked"),
    [({"rule": "margin", "margin": 2}, set()), ({"rule": "mann-whitney"}, {"W1", "W2"})],
)
def test_audit_flags_judge_workers_by_the_projects_own_rule(
    tmp_path, monkeypatch, aggregation, blocked
):
    """``mturk collect --audit`` judges agreement against the verdicts of the project's rule:
    W1 and W2 agree with every margin verdict, but disagree with every Mann-Whitney one."""
    import crowdprefs.crowds.mturk.fake as fake_module

    monkeypatch.setattr(fake_module, "SimulatedResponder", FixedResponder)
    project = make_project(tmp_path / "a", aggregation=aggregation)
    root = str(project.root)
    project.close()
    runner = CliRunner()
    for args in (["publish", root, "--fake"], ["collect", root, "--fake", "--audit"]):
        result = runner.invoke(app, ["mturk", *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
    with Project(root) as reopened:
        blocks = reopened.store.worker_blocks()
        assert set(blocks["worker_id"]) == blocked
        assert blocks["reason"].str.startswith("low-agreement: ").all()
        answers = reopened.store.answers(include_rejected=True)
        rejected = answers.loc[answers["status"] == "rejected", "worker_id"]
        assert set(rejected) == blocked
