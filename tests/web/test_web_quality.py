"""Listening-test quality control of the web crowd (in the style of ITU-T P.808): the Huggins-
pitch headphone screen before the first question, per-judge caps, and each question's own order
of the two variations, logged with the answer."""

from __future__ import annotations

import io
import json
import re
import warnings
import wave
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from starlette.exceptions import StarletteDeprecationWarning
from test_web import (
    PLAYED,
    RESEARCHER,
    answers_frame,
    invite,
    judge_client,
    make_web_project,
    open_question,
    pass_headphone_check,
)

from crowdprefs.campaign import driver
from crowdprefs.campaign.project import Project
from crowdprefs.errors import InputError
from crowdprefs.web import assign, headphones
from crowdprefs.web.app import create_app
from crowdprefs.web.judges import LocalServer, read_wav, run_judges

with warnings.catch_warnings():
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient


def participant(server, root, pid: str = "5f0c9a1b2c3d4e5f60718293") -> TestClient:
    """A study-platform participant who arrived through the study link."""
    with Project(root) as project:
        key = assign.new_study_key(project)
    client = TestClient(server.app)
    assert client.get(f"/study/{key}?PROLIFIC_PID={pid}").status_code == 200
    return client


def noise_paths(page) -> list[tuple[str, str, str]]:
    return re.findall(r'src="(/headphones/(\d+)/(\d+))"', page.text)


def screen_answers(client: TestClient, page, right: int) -> dict[str, str]:
    """Answers to the check on ``page``: the first ``right`` sets found, the others missed."""
    form = {"csrf": re.search(r'name="csrf" value="([^"]+)"', page.text).group(1)}
    tones = {}
    for path, trial, sound in noise_paths(page):
        if headphones.tone_sound(read_wav(client.get(path).content)):
            tones[int(trial)] = int(sound)
    for trial, sound in tones.items():
        form[f"trial_{trial}"] = str(sound if trial <= right else sound % 3 + 1)
    return form


# --- the stimuli ------------------------------------------------------------------------------


def test_only_the_target_noise_differs_between_the_ears_and_only_around_600_hz():
    seed, trials = 20240611, 40
    targets = headphones.targets(seed, trials)
    assert set(np.unique(targets)) == {0, 1, 2}
    assert np.bincount(targets, minlength=3).min() >= 6, "the tone moves between positions"
    for trial in range(4):
        for index in range(headphones.SOUNDS):
            stereo = headphones.sound(seed, trials, trial, index)
            assert stereo.shape == (headphones.RATE, 2) and np.abs(stereo).max() <= 1
            difference = stereo[:, 0] - stereo[:, 1]
            if index != targets[trial]:
                assert np.array_equal(stereo[:, 0], stereo[:, 1]), "a foil is the same noise"
                continue
            spectrum = np.abs(np.fft.rfft(difference)) ** 2
            freqs = np.fft.rfftfreq(len(difference), 1 / headphones.RATE)
            band = np.abs(freqs - headphones.CENTRE) <= headphones.BAND * headphones.CENTRE * 1.5
            assert spectrum[band].sum() > 0.99 * spectrum.sum(), "the ears differ near 600 Hz"
            loudness = np.sqrt(np.mean(stereo**2, axis=0))
            assert abs(loudness[0] - loudness[1]) < 0.01 * loudness[0], "both ears as loud"


def test_the_sounds_follow_from_the_seed_and_are_sixteen_bit_stereo_wav():
    first = headphones.wav(headphones.sound(7, 3, 1, 2))
    assert first == headphones.wav(headphones.sound(7, 3, 1, 2))
    assert first != headphones.wav(headphones.sound(8, 3, 1, 2))
    with wave.open(io.BytesIO(first)) as handle:
        assert (handle.getnchannels(), handle.getsampwidth(), handle.getframerate()) == (
            2,
            2,
            headphones.RATE,
        )
    answers = list(headphones.targets(7, 3))
    assert headphones.correct(answers, 7, 3) == 3
    assert headphones.correct([(a + 1) % 3 for a in answers], 7, 3) == 0
    with pytest.raises(IndexError):
        headphones.sound(7, 3, 3, 0)


# --- the screen on the site -------------------------------------------------------------------


def test_a_study_participant_passes_the_headphone_check_before_the_first_question(tmp_path):
    root = make_web_project(tmp_path)
    with TestClient(create_app(root, RESEARCHER)) as server:
        client = participant(server, root)
        assert "headphone check" in client.get("/welcome").text
        check = client.post("/next")
        assert check.url.path == "/headphones" and 'data-state="open"' in check.text
        paths = noise_paths(check)
        assert len(paths) == 9
        noise = client.get(paths[0][0])
        assert noise.headers["content-type"] == "audio/wav" and noise.content[:4] == b"RIFF"
        assert client.get("/headphones/4/1").status_code == 400
        assert client.get("/headphones/1/4").status_code == 400
        assert client.get("/next").url.path == "/welcome", "no question before the check"
        first = pass_headphone_check(client, check)
        assert first.url.path.startswith("/hit/"), "passing leads to the first question"
        assert client.get("/headphones").url.path == "/welcome"
        assert "headphone check" not in client.get("/welcome").text
    with Project(root) as project:
        judge = project.store.web_participants()["judge_id"].iloc[0]
        screen = project.store.web_screen(judge)
    assert (screen.trials, screen.pass_mark, screen.correct, screen.passed) == (3, 3, 3, True)
    assert len(json.loads(screen.answers)) == 3


def test_a_failed_headphone_check_is_final_and_earns_no_completion_code(tmp_path):
    root = make_web_project(
        tmp_path,
        web={"completion_code": "C0DE5", "completion_url": "https://x.example/?cc={code}"},
    )
    with TestClient(create_app(root, RESEARCHER)) as server:
        client = participant(server, root)
        check = client.post("/next")
        passing = screen_answers(client, check, right=3)
        failed = client.post("/headphones", data=screen_answers(client, check, right=2))
        assert failed.url.path == "/headphones" and 'data-state="failed"' in failed.text
        assert "2 of 3" in failed.text
        again = client.post("/headphones", data=passing)
        assert 'data-state="failed"' in again.text, "no second attempt"
        assert client.post("/next").url.path == "/headphones"
        assert client.get(noise_paths(check)[0][0]).status_code == 409
        done = client.get("/done")
        assert "C0DE5" not in done.text and 'id="return-study"' in done.text
    assert answers_frame(root).empty


def test_the_check_needs_its_security_token_and_an_answer_for_every_set(tmp_path):
    root = make_web_project(tmp_path)
    with TestClient(create_app(root, RESEARCHER)) as server:
        client = participant(server, root)
        check = client.post("/next")
        form = screen_answers(client, check, right=3)
        assert client.post("/headphones", data={**form, "csrf": "forged"}).status_code == 403
        assert client.post("/headphones", data={**form, "trial_2": "4"}).status_code == 400
        partial = {k: v for k, v in form.items() if k != "trial_3"}
        assert client.post("/headphones", data=partial).status_code == 400
        cross = client.post("/headphones", data=form, headers={"origin": "https://evil.example"})
        assert cross.status_code == 403
        assert client.post("/headphones", data=form).url.path.startswith("/hit/")


@pytest.mark.parametrize(
    ("screen", "invited_screened", "participant_screened"),
    [("platform", False, True), ("all", True, True), ("off", False, False)],
)
def test_who_is_screened_follows_the_setting(
    tmp_path, screen, invited_screened, participant_screened
):
    root = make_web_project(tmp_path, web={"headphone_screen": screen})
    (token,) = invite(root, 1)
    with TestClient(create_app(root, RESEARCHER)) as server:
        invited = judge_client(server.app, token)
        assert (invited.post("/next").url.path == "/headphones") is invited_screened
        platform = participant(server, root)
        assert (platform.post("/next").url.path == "/headphones") is participant_screened


def test_the_pass_mark_is_configurable(tmp_path):
    root = make_web_project(tmp_path, web={"headphone_trials": 4, "headphone_pass": 3})
    with TestClient(create_app(root, RESEARCHER)) as server:
        client = participant(server, root)
        check = client.post("/next")
        assert len(noise_paths(check)) == 12
        passed = client.post("/headphones", data=screen_answers(client, check, right=3))
        assert passed.url.path.startswith("/hit/"), "3 of 4 passes"


@pytest.mark.parametrize(
    "web",
    [
        {"headphone_screen": "sometimes"},
        {"headphone_trials": 2, "headphone_pass": 3},
        {"headphone_trials": 11, "headphone_pass": 3},
        {"headphone_pass": "3"},
        {"randomise_sides": "yes"},
        {"questions_per_batch": -1},
    ],
)
def test_bad_quality_settings_are_refused_in_one_line(web):
    from crowdprefs.campaign.settings import check_section

    with pytest.raises(InputError, match=r"\[web\] "):
        check_section("web", web, "crowdprefs.toml")
        assign.WebSettings(**web)


# --- caps and order ---------------------------------------------------------------------------


def test_a_judge_answers_at_most_questions_per_batch_in_one_batch(tmp_path):
    root = make_web_project(tmp_path, web={"questions_per_batch": 2})
    j1, j2 = invite(root, 2)
    with TestClient(create_app(root, RESEARCHER)) as server:
        client = judge_client(server.app, j1)
        for _ in range(2):
            assignment, csrf, _ = open_question(client)
            client.post(f"/hit/{assignment}", data={"csrf": csrf, "choice": "A", **PLAYED})
        assert client.post("/next").url.path == "/done", "the batch cap is reached"
        other = judge_client(server.app, j2)
        assert other.post("/next").url.path.startswith("/hit/"), "pairs are left for others"


def test_each_question_shows_its_own_order_and_the_answer_is_logged(tmp_path):
    root = make_web_project(tmp_path, queries=3, size=5, answers=4)
    tokens = invite(root, 4)
    with TestClient(create_app(root, RESEARCHER)) as server:
        for token in tokens:
            client = judge_client(server.app, token)
            for _ in range(5):
                assignment, csrf, html = open_question(client)
                served = client.get(f"/clip/{assignment}/a").content
                client.post(f"/hit/{assignment}", data={"csrf": csrf, "choice": "A", **PLAYED})
                row = answers_frame(root).set_index("assignment_id").loc[assignment]
                order = json.loads(row["raw"])["order"]
                with Project(root) as project:
                    audio = project.store.candidates().set_index(["query", "document"])["audio"]
                assert Path(audio[row["query"], order["a"]]).read_bytes() == served
    answers = answers_frame(root)
    orders = pd.DataFrame([json.loads(r)["order"] for r in answers["raw"]])
    shown_a_is_x = (orders["a"] == answers["x"]).to_numpy()
    assert 0 < shown_a_is_x.sum() < len(answers), "both orders are shown"
    assert (shown_a_is_x != answers["a_is_x"].astype(bool)).any(), "not only the pair's order"
    assert (orders["clicked"] == "A").all()
    assert (answers["score"].to_numpy() == np.where(shown_a_is_x, 1, -1)).all()
    flipped = shown_a_is_x != answers["a_is_x"].astype(bool).to_numpy()
    assert (answers["choice"].to_numpy() == np.where(flipped, "B", "A")).all()
    numbers = orders.groupby(answers["worker_id"].to_numpy())["question"].apply(list)
    assert all(n == [1, 2, 3, 4, 5] for n in numbers)


def test_fixed_sides_show_the_pair_as_built(tmp_path):
    root = make_web_project(tmp_path, web={"randomise_sides": False})
    (token,) = invite(root, 1)
    with TestClient(create_app(root, RESEARCHER)) as server:
        client = judge_client(server.app, token)
        for _ in range(4):
            assignment, csrf, _ = open_question(client)
            client.post(f"/hit/{assignment}", data={"csrf": csrf, "choice": "A", **PLAYED})
    answers = answers_frame(root)
    assert (answers["choice"] == "A").all()
    assert (answers["score"] == np.where(answers["a_is_x"] == 1, 1, -1)).all()


def test_simulated_judges_pass_the_check_over_http_when_everyone_is_screened(tmp_path):
    root = make_web_project(tmp_path, queries=1, size=3, answers=2, web={"headphone_screen": "all"})
    tokens = invite(root, 3)
    with LocalServer(root, RESEARCHER) as server:
        report = run_judges(
            server.url, tokens, lambda _a, _i: {"choice": "equal", **PLAYED}, max_seconds=60
        )
    assert report.refused == [] and report.answers > 0
    with Project(root) as project:
        screens = [project.store.web_screen(j) for j in ("J0001", "J0002", "J0003")]
        closed = all(q["closed"] for q in driver.status(project)["queries"])
    assert all(s is not None and s.passed and s.correct == 3 for s in screens)
    assert closed, "the judges took the campaign to its end"


@pytest.mark.browser
@pytest.mark.slow
def test_the_check_plays_in_chromium_without_policy_violations(tmp_path, browser):
    root = make_web_project(tmp_path)
    with Project(root) as project:
        key = assign.new_study_key(project)
    with LocalServer(root, RESEARCHER) as server:
        page = browser.new_context().new_page()
        violations: list[str] = []
        page.on("console", lambda m: violations.append(m.text) if "Policy" in m.text else None)
        page.goto(f"{server.url}/study/{key}?PROLIFIC_PID=5f0c9a1b2c3d4e5f60718293")
        page.click("#start")
        page.wait_for_url("**/headphones")
        assert page.locator("audio").count() == 9
        seconds = page.evaluate(
            """() => new Promise((resolve, reject) => {
                const audio = document.getElementById('noise-1-1');
                audio.addEventListener('ended', () => resolve(audio.duration), {once: true});
                audio.play().catch(reject);
            })"""
        )
        assert seconds == pytest.approx(headphones.SECONDS, abs=0.01)
        assert violations == [], violations


def test_the_audit_sees_a_judge_who_always_presses_the_left_button(tmp_path):
    from crowdprefs.quality.audit import audit_project
    from crowdprefs.quality.frames import project_answers

    root = make_web_project(tmp_path, queries=3, size=5, answers=4)
    (token,) = invite(root, 1)
    with TestClient(create_app(root, RESEARCHER)) as server:
        client = judge_client(server.app, token)
        for _ in range(8):
            assignment, csrf, _ = open_question(client)
            client.post(f"/hit/{assignment}", data={"csrf": csrf, "choice": "A", **PLAYED})
    stored = answers_frame(root)
    assert set(stored["choice"]) == {"A", "B"}, "stored on the pair's sides: both"
    with Project(root) as project:
        frame = project_answers(project)
        result = audit_project(project)
        fitted = project.store.shown_answers()  # the bradley-terry rule reads the same sides
    assert (frame["choice"] == "A").all()
    shown = np.array([json.loads(raw)["order"]["a"] for raw in stored["raw"]])
    assert (frame["a_is_x"].to_numpy() == (shown == stored["x"].to_numpy())).all()
    assert (fitted["a_is_x"].to_numpy() == frame["a_is_x"].to_numpy()).all()
    assert (frame["score"].to_numpy() == stored["score"].to_numpy()).all()
    profile = result.workers.iloc[0]
    assert profile["share_A"] == 1.0 and profile["position_bias"] == 1.0
