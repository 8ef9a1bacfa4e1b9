"""One listening rule on the page and on the server: a clip counts as heard when it was played to
its end and heard (seconds of playing) for ``min_coverage`` of its duration less the page's slack
(:func:`crowdprefs.campaign.answers.check_listening` with
:data:`~crowdprefs.campaign.answers.PAGE_SLACK`). The page sets a faster playback rate back to
normal; where the rate stays fast, the page keeps the answer locked and the server refuses the
log it would send."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_web import RESEARCHER, clip_project, invite, make_web_project

from crowdprefs.campaign.answers import PAGE_SLACK
from crowdprefs.campaign.project import Project
from crowdprefs.web import assign
from crowdprefs.web.judges import LocalServer

SECONDS = 1.0
"""Clips long enough that four times the speed is far from the mark on a loaded machine."""


def one_second_project(tmp_path: Path) -> Path:
    return clip_project(tmp_path, SECONDS)


def test_the_page_is_given_the_servers_rule(tmp_path):
    """The page's JSON config carries the coverage and the slack the server checks with."""
    from starlette.testclient import TestClient
    from test_web import judge_client, open_question

    from crowdprefs.web.app import create_app

    root = make_web_project(tmp_path)
    (token,) = invite(root, 1)
    with TestClient(create_app(root, RESEARCHER)) as server:
        _, _, html = open_question(judge_client(server.app, token))
    block = re.search(r'id="crowdprefs-config">(.*?)</script>', html, re.DOTALL).group(1)
    config = json.loads(block)
    assert config["slack"] == PAGE_SLACK == assign.LISTEN_SLACK
    assert config["min_coverage"] == 0.9


PLAY = """([clip, rate, stuck]) => new Promise((resolve, reject) => {
    const audio = document.getElementById('clip-' + clip);
    if (stuck) {  // a player that keeps its fast rate whatever the page sets
        Object.getOwnPropertyDescriptor(HTMLMediaElement.prototype, 'playbackRate')
            .set.call(audio, rate);
        Object.defineProperty(audio, 'playbackRate', {get: () => 1, set: () => {}});
    } else {
        audio.playbackRate = rate;
    }
    audio.addEventListener('ended', () => setTimeout(resolve, 50), {once: true});
    setTimeout(() => audio.play().catch(reject), 50);
})"""
RATE = """clip => Object.getOwnPropertyDescriptor(HTMLMediaElement.prototype, 'playbackRate')
    .get.call(document.getElementById('clip-' + clip))"""


@pytest.mark.browser
@pytest.mark.slow
def test_four_times_the_speed_is_set_back_or_keeps_page_and_server_closed(tmp_path, browser):
    root = one_second_project(tmp_path)
    (token,) = invite(root, 1)
    with LocalServer(root, RESEARCHER) as server:
        page = browser.new_context().new_page()
        page.goto(f"{server.url}/invite/{token}")
        page.click("#start")
        page.wait_for_url("**/hit/*")
        submit = page.locator("#crowdprefs-submit")
        page.click("h1")
        # a judge asks for 4×: the page plays at normal speed, and the clip counts
        for clip in ("query", "a"):
            page.evaluate(PLAY, [clip, 4.0, False])
            assert page.evaluate(RATE, clip) == 1.0
            assert page.text_content(f"#state-{clip}") == "played ✓"
        # a player stuck at 4×: b is not heard by the page's rule, so the answer stays locked
        page.evaluate(PLAY, ["b", 4.0, True])
        assert page.evaluate(RATE, "b") == 4.0
        assert page.text_content("#state-b") == "not played yet" and submit.is_disabled()
        heard = float(page.input_value("input[name=listen_b]"))
        assert 0 < heard + PAGE_SLACK < 0.9 * SECONDS
        # the server, sent that same log, refuses it by the same rule
        page.check("input[name=choice][value=A]")
        page.evaluate("document.getElementById('crowdprefs-hit').submit()")
        page.wait_for_load_state()
        assert "variation B lasts 1.0 s but was heard for" in page.text_content("#message")
        page.click("#back")
        page.wait_for_url("**/hit/*")
    with Project(root) as project:
        assert project.store.answers().empty
