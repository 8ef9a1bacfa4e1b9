"""The HIT in a real browser (Debian's Chromium through Playwright), served from localhost.

Preview mode cannot answer; the answer is only possible after each clip has played to the end;
submitting posts the expected fields; hostile text renders as text. The same for the level
judgment HIT of MTC, whose Fine score starts empty.
"""

from __future__ import annotations

import functools
import threading
import wave
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs

import numpy as np
import pandas as pd
import pytest
import tomli_w

from crowdprefs.campaign import driver
from crowdprefs.campaign.project import CONFIG_NAME, Project, init_project
from crowdprefs.hits.hosting import FolderHost
from crowdprefs.hits.render import render_level_hit, render_preference_hit

pytestmark = [pytest.mark.browser, pytest.mark.slow]
HOSTILE = "<img src=x onerror=\"document.title='pwned'\"> & <b>bold</b>"


def _wav(path: Path, seconds: float, hz: float) -> None:
    rate = 8000
    t = np.arange(int(rate * seconds)) / rate
    samples = (0.3 * np.sin(2 * np.pi * hz * t) * 32767).astype("<i2")
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(samples.tobytes())


class _Handler(SimpleHTTPRequestHandler):
    posts: list[dict] = []

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length", 0))
        self.posts.append(parse_qs(self.rfile.read(length).decode(), keep_blank_values=True))
        body = b"<!DOCTYPE html><title>thanks</title>ok"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """A project with tiny WAV clips, its first HIT rendered in MTurk mode, served on localhost."""
    root = tmp_path_factory.mktemp("hit")
    clips = root / "clips"
    clips.mkdir()
    for i, name in enumerate(("q", "a", "b", "c")):
        _wav(clips / f"{name}.wav", 0.25 + 0.05 * i, 330 + 110 * i)
    frame = pd.DataFrame(
        {
            "query": ["Q1"] * 3,
            "document": ["d1", "d2", "d3"],
            "audio": [str(clips / f"{n}.wav") for n in ("a", "b", "c")],
            "query_audio": [str(clips / "q.wav")] * 3,
        }
    )
    project = init_project(root / "p", frame, seed=3)
    config = project.root / CONFIG_NAME
    import tomllib

    data = tomllib.loads(config.read_text())
    data["hit"] = {"title": HOSTILE, "instructions": HOSTILE}
    config.write_text(tomli_w.dumps(data))
    project.close()
    project = Project(root / "p")
    driver.next_batch(project)
    site_dir = root / "site"
    host = FolderHost(site_dir)
    pair = project.store.pairs(1).iloc[0].to_dict()
    host.prepare([p for p in (frame["audio"].tolist() + [str(clips / "q.wav")])])
    page = render_preference_hit(
        project, pair, mode="mturk", submit_url="/submit", clip_url=host.url
    )
    (site_dir / "hit.html").write_text(page, encoding="utf-8")
    clips_of = {"query": host.url(str(clips / "q.wav")), "document": host.url(str(clips / "a.wav"))}
    level = render_level_hit("Q1", "d1", clips_of, "both", mode="mturk", submit_url="/submit")
    (site_dir / "level.html").write_text(level, encoding="utf-8")
    project.close()
    handler = type("Handler", (_Handler,), {"posts": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=site_dir))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler.posts
    server.shutdown()
    server.server_close()


def _play_all(page, names=("query", "a", "b")) -> None:
    for name in names:
        page.evaluate(f"document.getElementById('clip-{name}').play()")
        page.wait_for_function(
            f"document.getElementById('state-{name}').classList.contains('done')", timeout=15000
        )


@pytest.mark.parametrize(
    ("name", "fields", "clips"),
    [
        ("hit.html", ("input[name=choice][value=A]", "#comment"), ("query", "a", "b")),
        ("level.html", ("#fine", "input[name=broad][value='2']"), ("query", "document")),
    ],
)
def test_preview_mode_cannot_answer(site, browser, name, fields, clips):
    url, posts = site
    sent_before = len(posts)
    page = browser.new_page()
    page.goto(f"{url}/{name}?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&hitId=H1")
    assert page.is_visible("#crowdprefs-preview")
    assert all(page.is_disabled(field) for field in fields)
    _play_all(page, clips)  # even after listening, nothing can be sent
    assert page.is_disabled("#crowdprefs-submit")
    page.evaluate("document.getElementById('crowdprefs-hit').requestSubmit()")
    page.wait_for_timeout(300)
    assert len(posts) == sent_before
    page.close()


def test_answer_only_after_every_clip_played_to_the_end(site, browser):
    url, posts = site
    page = browser.new_page()
    page.goto(f"{url}/hit.html?assignmentId=ASSIGN123&hitId=H1&workerId=W1")
    assert not page.is_visible("#crowdprefs-preview")
    page.check("input[name=choice][value=B]")
    assert page.is_disabled("#crowdprefs-submit")
    page.evaluate("document.getElementById('clip-query').play()")
    page.wait_for_function("document.getElementById('state-query').classList.contains('done')")
    assert page.is_disabled("#crowdprefs-submit")  # A and B not played yet
    _play_all(page)
    assert page.is_enabled("#crowdprefs-submit")
    page.fill("#background", "piano, 10 years")
    page.fill("#comment", "<b>nice</b>")
    with page.expect_navigation():
        page.click("#crowdprefs-submit")
    assert len(posts) == 1
    sent = {k: v[0] for k, v in posts[0].items()}
    assert sent["assignmentId"] == "ASSIGN123"
    assert sent["choice"] == "B"
    assert sent["background"] == "piano, 10 years"
    assert sent["comment"] == "<b>nice</b>"
    assert sent["plays_query"] == "2" and sent["plays_a"] == "1" and sent["plays_b"] == "1"
    assert all(float(sent[f"listen_{c}"]) > 0.1 for c in ("query", "a", "b"))
    assert float(sent["seconds_on_page"]) > 0
    page.close()


def test_hostile_config_renders_as_text(site, browser):
    url, _ = site
    page = browser.new_page()
    page.goto(f"{url}/hit.html?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE")
    assert page.inner_text("h1") == HOSTILE
    assert page.inner_text(".instructions") == HOSTILE
    assert page.locator("img").count() == 0 and page.locator("h1 b").count() == 0
    assert page.title() != "pwned"
    page.close()


def test_level_hit_needs_both_clips_and_a_fine_score_the_judge_set(site, browser):
    url, posts = site
    page = browser.new_page()
    foreign = "https://evil.example"  # not MTurk: the form keeps posting to its own URL
    page.goto(f"{url}/level.html?assignmentId=L42&hitId=H9&turkSubmitTo={foreign}")
    page.check("input[name=broad][value='1']")
    assert page.is_disabled("#crowdprefs-submit")
    _play_all(page, ("query", "document"))
    assert page.is_enabled("#crowdprefs-submit")
    before = len(posts)
    page.click("#crowdprefs-submit")  # the Fine score was never set: the browser refuses
    page.wait_for_timeout(300)
    assert len(posts) == before and page.input_value("#fine") == ""
    page.focus("#fine-slider")
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    assert page.input_value("#fine") == "53"
    with page.expect_navigation():
        page.click("#crowdprefs-submit")
    sent = {k: v[0] for k, v in posts[-1].items()}
    assert sent["assignmentId"] == "L42" and sent["query"] == "Q1" and sent["document"] == "d1"
    assert sent["broad"] == "1" and sent["fine"] == "53"
    assert sent["plays_query"] == "1" and sent["plays_document"] == "1"
    assert float(sent["listen_document"]) > 0.1
    page.close()
