"""The researcher page's pictures (:mod:`crowdprefs.web.plots`) served by the real application:
four inline SVGs of the right size for a known campaign, worker text escaped, nothing the
Content-Security-Policy forbids, and drawn with a size in Chromium."""

from __future__ import annotations

import re
import warnings
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from starlette.exceptions import StarletteDeprecationWarning
from test_web import (
    ANSWER_A,
    ANSWER_B,
    RESEARCHER,
    change,
    invite,
    judge_client,
    make_web_project,
    open_question,
)

from crowdprefs.campaign.project import Project
from crowdprefs.web import plots
from crowdprefs.web.app import create_app
from crowdprefs.web.judges import LocalServer

with warnings.catch_warnings():  # starlette asks for httpx2, which is not a dependency
    warnings.simplefilter("ignore", StarletteDeprecationWarning)
    from starlette.testclient import TestClient

HOSTILE = '<script>alert("x")</script>'
TIMES = ("2026-01-05T10:15:00.000+00:00", "2026-01-05T11:40:00.000+00:00")
LAST = "2026-01-05T13:05:00.000+00:00"
"""Submission times given to the campaign's answers: hours 10, 11, (12 empty) and 13."""
PLOTS = ("batch", "time", "agreement", "listening")


class Page(HTMLParser):
    """The page's elements: ``(tag, attributes)`` in order, and the SVGs' inner text by id."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.svg: str | None = None
        self.texts: dict[str, str] = {}
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))
        if tag == "svg":
            self.svg = dict(attrs)["id"]
            self.texts[self.svg] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self.svg = None

    def handle_data(self, data: str) -> None:
        if self.svg is not None:
            self.texts[self.svg] += data


def answered_campaign(root: Path) -> None:
    """Three judges answer 2, 2 and 1 questions; the answers then carry :data:`TIMES` and
    :data:`LAST`, and the last judge's id is :data:`HOSTILE` (worker ids from other crowds
    are untrusted text)."""
    tokens = invite(root, 3)
    with TestClient(create_app(root, RESEARCHER)) as server:
        for token, count in zip(tokens, (2, 2, 1), strict=True):
            client = judge_client(server.app, token)
            for n in range(count):
                assignment, csrf, _ = open_question(client)
                answer = ANSWER_A if n == 0 else ANSWER_B
                client.post(f"/hit/{assignment}", data={"csrf": csrf, **answer})
    with Project(root) as project:
        ids = project.store.frame("SELECT answer_id FROM answers ORDER BY answer_id")["answer_id"]
        for i, answer in enumerate(ids):
            at = TIMES[i % 2] if i < len(ids) - 1 else LAST
            change(project, f"UPDATE answers SET submitted_at = '{at}' WHERE answer_id = {answer}")
        change(project, f"UPDATE answers SET worker_id = '{HOSTILE}' WHERE worker_id = 'J0003'")


def researcher_page(root: Path) -> tuple[str, dict[str, str]]:
    with TestClient(create_app(root, RESEARCHER)) as server:
        response = TestClient(server.app).get(f"/researcher/{RESEARCHER}")
    assert response.status_code == 200
    return response.text, response.headers


def svg(text: str, key: str) -> str:
    match = re.search(rf'<svg [^>]*id="plot-{key}".*?</svg>', text, re.S)
    assert match, f"no picture {key}"
    return match.group(0)


def test_the_page_draws_the_campaign_in_four_pictures(tmp_path, engine):
    root = make_web_project(tmp_path, database=engine)
    answered_campaign(root)
    text, _ = researcher_page(root)
    with Project(root) as project:
        wanted = int(project.store.web_batch_fill()["answers_wanted"].max())
    assert re.findall(r'<svg [^>]*id="plot-(\w+)"', text) == list(PLOTS)
    # cumulative answers from 10:15 to 13:05, one point per 5 minutes (at most 120 points)
    (points,) = re.findall(r'<polyline [^>]*points="([^"]+)"', svg(text, "time"))
    xs, ys = zip(*(map(float, point.split(",")) for point in points.split()), strict=True)
    assert len(ys) == 36 and sorted(set(ys), reverse=True) == list(dict.fromkeys(ys))
    assert len(set(ys)) == 4  # 0, 2, 4, 5 answers (y grows downwards)
    assert xs[0] == plots.LEFT and xs[-1] == plots.WIDTH - plots.RIGHT  # the last answer's time
    assert "5 answers from 2026-01-05 10:15 to 2026-01-05 13:05 UTC" in svg(text, "time")
    assert "one point per 5 minutes" in svg(text, "time")
    # the batch: one bar per number of answers a pair can have (0 … wanted)
    assert svg(text, "batch").count('class="bar"') == wanted + 1
    assert "5 of" in svg(text, "batch")
    assert svg(text, "agreement").count('class="bar"') == plots.AGREEMENT_BINS
    assert svg(text, "listening").count('class="bar"') == 3  # every judge's clips are known
    for key in PLOTS:
        picture = svg(text, key)
        assert f'<title id="plot-{key}-title">' in picture
        assert f'<desc id="plot-{key}-desc">' in picture
        assert "nan" not in picture.lower()


def test_worker_text_is_escaped_in_the_pictures(tmp_path):
    root = make_web_project(tmp_path)
    answered_campaign(root)
    text, _ = researcher_page(root)
    listening = svg(text, "listening")
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in listening
    assert "<script" not in text
    page = Page(text)
    assert HOSTILE in page.texts["plot-listening"]  # shown as text, not run
    assert not [tag for tag, _ in page.elements if tag == "script"]


def test_the_pictures_need_nothing_the_security_policy_forbids(tmp_path):
    root = make_web_project(tmp_path)
    answered_campaign(root)
    text, headers = researcher_page(root)
    policy = headers["content-security-policy"]
    assert "'unsafe-inline'" not in policy
    page = Page(text)
    assert len([tag for tag, _ in page.elements if tag == "svg"]) == 4
    for tag, attributes in page.elements:
        assert "style" not in attributes, tag  # style-src has no 'unsafe-inline'
        assert not [a for a in attributes if a.startswith("on")], tag  # nor has script-src
        assert tag not in ("script", "foreignobject", "image", "use", "iframe"), tag
        values = [(v or "").strip().lower() for v in attributes.values()]
        assert not [v for v in values if v.startswith("javascript:")], tag
    assert [tag for tag, _ in page.elements if tag == "style"] == ["style"]  # web_page.css only


def test_pictures_without_data_are_one_line_each(tmp_path):
    root = make_web_project(tmp_path)
    text, _ = researcher_page(root)
    assert re.findall(r'<svg [^>]*id="plot-(\w+)"', text) == ["batch"]  # its pairs, at 0
    for key in PLOTS[1:]:
        assert re.search(rf'<p class="muted plot-empty" id="plot-{key}">[^<]+</p>', text), key
    no_batch = plots.batch_progress(pd.DataFrame(), {"iteration": None})
    assert no_batch.startswith('<p class="muted plot-empty" id="plot-batch">No batch yet')
    assert plots.answers_over_time(pd.Series([], dtype=object)).startswith("<p ")
    profiles = pd.DataFrame({"verdict_agreement": [float("nan")], "listen_ratio": [None]})
    assert plots.agreement_histogram(profiles).startswith("<p ")
    assert plots.listening_coverage(profiles).startswith("<p ")


def test_many_workers_and_a_long_campaign_stay_small():
    workers = pd.Index([f"W{i:04d}" for i in range(500)], name="worker_id")
    profiles = pd.DataFrame(
        {"verdict_agreement": 0.7, "listen_ratio": [i / 100 for i in range(500)]}, index=workers
    )
    listening = plots.listening_coverage(profiles)
    assert listening.count('class="bar"') == plots.MAX_WORKERS
    assert "W0000" in listening and "W0499" not in listening  # the lowest coverage first
    times = pd.Series(pd.date_range("2026-01-01", periods=2000, freq="37min", tz="UTC"))
    (points,) = re.findall(r'points="([^"]+)"', plots.answers_over_time(times))
    assert len(points.split()) <= plots.MAX_BUCKETS + 1
    assert plots.ticks(7) == [0, 2, 4, 6, 8] and plots.ticks(0.4) == [0, 1]


@pytest.mark.browser
@pytest.mark.slow
def test_the_pictures_render_in_chromium_within_the_policy(tmp_path, browser):
    root = make_web_project(tmp_path)
    answered_campaign(root)
    with LocalServer(root, RESEARCHER) as server:
        page = browser.new_context().new_page()
        messages: list[str] = []
        page.on("console", lambda m: messages.append(m.text))
        page.add_init_script(
            "document.addEventListener('securitypolicyviolation',"
            " e => console.error('Content Security Policy violation: ' + e.violatedDirective))"
        )
        page.goto(f"{server.url}/researcher/{RESEARCHER}")
        assert page.url == f"{server.url}/researcher"
        for key in PLOTS:
            box = page.locator(f"svg#plot-{key}").bounding_box()
            assert box is not None and box["width"] > 100 and box["height"] > 100, key
        bars = "[...document.querySelectorAll('svg.plot rect.bar')]"
        assert max(page.evaluate(f"{bars}.map(r => r.getBoundingClientRect().height)")) > 10
        assert page.evaluate("document.querySelectorAll('svg.plot').length") == 4
        assert not [m for m in messages if "Security Policy" in m], messages


@pytest.mark.parametrize(
    ("every", "answers", "step", "stamp"),
    [
        ("9s", 20, "10 seconds", "2026-01-05 10:02:51"),  # 20 answers in 3 minutes
        ("1s", 100, "second", "2026-01-05 10:01:39"),
        ("7min", 200, "15 minutes", "2026-01-06 09:13"),
        ("5h", 300, "day", "2026-03-08 17:00"),
        ("1D", 1000, "2 weeks", "2028-09-30 10:00"),
    ],
)
def test_answers_over_time_take_a_step_that_fits_the_campaign_and_end_at_the_last(
    every, answers, step, stamp
):
    """The class "a time axis that does not fit its data": 20 answers in 3 minutes were one
    point per hour, drawn to a time still in the future. Each span gets the shortest step with
    at most MAX_BUCKETS points, and the line and its axis end at the last answer."""
    times = pd.Series(pd.date_range("2026-01-05 10:00", periods=answers, freq=every, tz="UTC"))
    picture = plots.answers_over_time(times.sample(frac=1, random_state=1))  # any order
    (points,) = re.findall(r'points="([^"]+)"', picture)
    xs, ys = zip(*(map(float, point.split(",")) for point in points.split()), strict=True)
    assert 2 <= len(xs) <= plots.MAX_BUCKETS + 1
    assert xs[0] == plots.LEFT and xs[-1] == plots.WIDTH - plots.RIGHT
    assert list(xs) == sorted(xs) and list(ys) == sorted(ys, reverse=True)
    assert f"one point per {step}" in picture
    assert re.findall(r'<text x="(?:64|624)"[^>]*>([^<]+)</text>', picture)[-1] == stamp
    assert f"{answers} answers from 2026-01-05 10:00" in picture and f"to {stamp} UTC" in picture


def test_the_batch_picture_follows_each_answer(tmp_path):
    root = make_web_project(tmp_path)
    (token,) = invite(root, 1)
    with TestClient(create_app(root, RESEARCHER)) as server:
        researcher = TestClient(server.app)
        researcher.get(f"/researcher/{RESEARCHER}")
        judge = judge_client(server.app, token)
        titles = [batch_title(researcher)]
        for _ in range(2):
            assignment, csrf, _ = open_question(judge)
            judge.post(f"/hit/{assignment}", data={"csrf": csrf, **ANSWER_A})
            titles.append(batch_title(researcher))
    assert [re.search(r": (\d+) of", title)[1] for title in titles] == ["0", "1", "2"]


def batch_title(client: TestClient) -> str:
    """The batch picture's title on the researcher page ``client`` opens now."""
    return re.search(r'<title id="plot-batch-title">([^<]+)', client.get("/researcher").text)[1]
