"""A judge in a real browser (Debian's Chromium driven by Playwright) answers on the web crowd.

Skipped when ``/usr/bin/chromium`` is absent; never downloads a browser.
"""

from __future__ import annotations

import json

import pytest
from test_web import RESEARCHER, invite, make_web_project

from crowdprefs.campaign.project import Project
from crowdprefs.web.judges import LocalServer

pytestmark = [pytest.mark.browser, pytest.mark.slow]
expect = pytest.importorskip("playwright.sync_api").expect


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
    with LocalServer(root, RESEARCHER) as server:
        judge = browser.new_context().new_page()
        violations: list[str] = []
        judge.on(
            "console", lambda m: violations.append(m.text) if "Security Policy" in m.text else None
        )
        judge.add_init_script(
            "document.addEventListener('securitypolicyviolation',"
            " e => console.error('Content Security Policy violation: ' + e.violatedDirective))"
        )
        judge.goto(f"{server.url}/invite/{first}")
        assert judge.url == f"{server.url}/welcome"  # the token left the address bar
        start_colour = "getComputedStyle(document.getElementById('start')).backgroundColor"
        assert judge.evaluate(start_colour) == "rgb(31, 95, 168)"
        judge.click("#start")
        judge.wait_for_url("**/hit/*")
        question_url = judge.url
        # The page's own style and script run under a policy without 'unsafe-inline'.
        assert judge.evaluate(
            "getComputedStyle(document.querySelector('.clip .label')).fontWeight"
        ) != judge.evaluate("getComputedStyle(document.querySelector('p')).fontWeight")
        assert violations == [], violations
        submit = judge.locator("#crowdprefs-submit")
        judge.click("h1")  # a user gesture, so the page may start playback
        for clip in ("query", "a"):
            play_to_end(judge, clip)
            assert submit.is_disabled(), f"submit enabled before all clips played ({clip})"
        play_to_end(judge, "b")
        expect(submit).to_be_enabled()
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
        order = json.loads(row["raw"])["order"]
        on_pair_sides = "A" if (order["a"] == row["x"]) == bool(row["a_is_x"]) else "B"
        assert order["clicked"] == "A"
        assert (row["choice"], row["comment"], row["crowd"]) == (
            on_pair_sides,
            "<b>fine</b>",
            "web",
        )
        log = json.loads(row["raw"])["fields"]
        assert all(log[f"plays_{clip}"] >= 1 for clip in ("query", "a", "b"))
        assert all(log[f"listen_{clip}"] > 0 for clip in ("query", "a", "b"))
        assert log["seconds_on_page"] > 0
        assert violations == [], violations

        other = browser.new_context().new_page()
        other.goto(f"{server.url}/invite/{second}")
        response = other.goto(next_question)
        assert response.status == 403
        assert "not yours" in other.text_content("#message")
        assert other.locator("audio").count() == 0
