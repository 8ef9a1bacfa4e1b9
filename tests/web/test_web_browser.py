"""A judge in a real browser (Debian's Chromium driven by Playwright) answers on the web crowd.

Skipped when ``/usr/bin/chromium`` is absent; never downloads a browser.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from test_web import RESEARCHER, invite, make_web_project

from crowdprefs.campaign.project import Project
from crowdprefs.web.judges import LocalServer, ServerProcess

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
        ) != judge.evaluate("getComputedStyle(document.querySelector('p:not([class])')).fontWeight")
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


def answer_in_page(page) -> str:
    """Play the question's three clips to the end, choose A and submit; the next address."""
    question = page.url
    page.click("h1")  # a user gesture, so the page may start playback
    for clip in ("query", "a", "b"):
        play_to_end(page, clip)
    expect(page.locator("#crowdprefs-submit")).to_be_enabled()
    page.check("input[name=choice][value=A]")
    page.click("#crowdprefs-submit")
    page.wait_for_url(lambda url: url != question, timeout=60_000)
    return page.url


def iteration_of(root, url: str) -> int:
    """The batch of the question at ``url`` (``…/hit/ASSIGNMENT``)."""
    with Project(root, lock=False) as project:
        return int(project.store.web_question(url.rsplit("/", 1)[1]).pair["iteration"])


@pytest.mark.parametrize("workers", [1, 2])
def test_the_judge_who_closes_a_batch_goes_on_and_a_waiting_judge_finds_the_next_round(
    tmp_path, browser, engine, workers
):
    """Two judges in Chromium on a served project (SQLite; PostgreSQL with one and two server
    processes). Fixes the class "the next round is published but a judge is told none is
    free": the judge whose answer completes a batch waits for whoever moves the campaign on
    (here a command holding the project lock for 1.5 s, as another server process or the
    watch does) and lands on the next batch's question; the judge who was waiting on the done
    page finds a question by reloading it. The researcher page then names the published batch
    and draws the answers up to the last one."""
    if workers == 2 and engine is None:
        pytest.skip("several server processes need PostgreSQL")
    root = make_web_project(tmp_path, queries=1, size=5, answers=1, database=engine)
    tokens = invite(root, 2)
    with ServerProcess(root, RESEARCHER, workers=workers) as server:
        pages = [browser.new_context().new_page() for _ in tokens]
        for page, token in zip(pages, tokens, strict=True):
            page.goto(f"{server.url}/invite/{token}")
            page.click("#start")
            page.wait_for_url("**/hit/*")
        first, second = pages
        assert first.locator(".reward").count() == 0  # volunteers: no "Reward: $0.00"
        assert "/hit/" in answer_in_page(first) and "/hit/" in answer_in_page(second)
        assert answer_in_page(first).endswith("/done")  # the other judge holds the last pair
        assert first.get_attribute("#done", "data-state") == "waiting"
        assert first.locator('meta[http-equiv="refresh"]').count() == 1
        with Project(root, lock=False) as project:
            project.store.lock.acquire()  # another process is moving the campaign on
            threading.Timer(1.5, project.store.lock.release).start()
            started = time.monotonic()
            closing = answer_in_page(second)  # the batch's last answer
            waited = time.monotonic() - started
        assert "/hit/" in closing and iteration_of(root, closing) == 2, closing
        assert waited > 1.5
        first.reload()
        assert first.get_attribute("#done", "data-state") == "ready"
        assert first.locator('meta[http-equiv="refresh"]').count() == 0
        first.click("#look")
        first.wait_for_url("**/hit/*")
        assert iteration_of(root, first.url) == 2

        researcher = browser.new_context().new_page()
        researcher.goto(f"{server.url}/researcher/{RESEARCHER}")
        status = researcher.text_content("#campaign")
        assert status.startswith("batch 2 published, collecting answers (0 of "), status
        researcher.screenshot(path=str(tmp_path / "researcher.png"), full_page=True)
        with Project(root, lock=False) as project:
            last = project.store.answers()["submitted_at"].max()
        end = researcher.locator("#plot-time text[text-anchor=end]").last.text_content()
        assert end == last[:19].replace("T", " ")  # one point per second, up to the last
