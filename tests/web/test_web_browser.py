"""A judge in a real browser (Debian's Chromium driven by Playwright) answers on the web crowd.

Skipped when ``/usr/bin/chromium`` is absent; never downloads a browser.
"""

from __future__ import annotations

import json

import pytest
from test_web import invite, make_web_project

from crowdprefs.campaign.project import Project
from crowdprefs.web.judges import LocalServer

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def play_to_end(page, clip: str) -> None:
    page.evaluate(
        """clip => new Promise((resolve, reject) => {
            const audio = document.getElementById('clip-' + clip);
            audio.addEventListener('ended', resolve, {once: true});
            audio.play().catch(reject);
        })""",
        clip,
    )


def test_judge_answers_in_chromium_and_cannot_open_another_judges_question(tmp_path, browser):
    root = make_web_project(tmp_path)
    first, second = invite(root, 2)
    with LocalServer(root, "researcher-token") as server:
        judge = browser.new_context().new_page()
        judge.goto(f"{server.url}/invite/{first}")
        assert judge.url == f"{server.url}/welcome"  # the token left the address bar
        judge.click("#start")
        judge.wait_for_url("**/hit/*")
        question_url = judge.url
        submit = judge.locator("#crowdprefs-submit")
        judge.click("h1")  # a user gesture, so the page may start playback
        for clip in ("query", "a"):
            play_to_end(judge, clip)
            assert submit.is_disabled(), f"submit enabled before all clips played ({clip})"
        play_to_end(judge, "b")
        judge.wait_for_function("!document.getElementById('crowdprefs-submit').disabled")
        judge.check("input[name=choice][value=A]")
        judge.fill("#comment", "<b>fine</b>")
        submit.click()
        judge.wait_for_url(lambda url: "/hit/" in url and url != question_url)
        next_question = judge.url

        with Project(root) as project:
            answers = project.store.answers()
        assert len(answers) == 1
        row = answers.iloc[0]
        assert row["assignment_id"] == question_url.rsplit("/", 1)[1]
        assert (row["choice"], row["comment"], row["crowd"]) == ("A", "<b>fine</b>", "web")
        raw = json.loads(row["raw"])
        assert all(int(raw[f"plays_{clip}"]) >= 1 for clip in ("query", "a", "b"))
        assert float(raw["listen_query"]) > 0

        other = browser.new_context().new_page()
        other.goto(f"{server.url}/invite/{second}")
        response = other.goto(next_question)
        assert response.status == 403
        assert "not yours" in other.text_content("#message")
        assert other.locator("audio").count() == 0
