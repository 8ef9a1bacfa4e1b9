"""Proof of listening in a real headless Chromium (Debian's, driven by Playwright; skipped where
it is absent): a judge who hears every clip to its end unlocks the answer and the server stores
the play log with it; a judge who seeks to the end, plays at 4× or mutes does not, the buttons
stay locked, and the same log posted anyway (the form sent by script) is refused by the server,
by the same rule, and nothing is stored.

What the page sees: a seek (``seeking``), the rate (``playbackRate``, read through the media
element's own getter, so a script redefining it on the element cannot hide it), ``muted`` and
``volume``; not the system's volume, the output device or whether anyone listens. A player
lying about its rate through the prototype itself is caught only by the wall clock: an interval
heard is credited no further than the time it lasted.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from console_script import crowdprefs
from test_web import RESEARCHER, clip_project, invite

from crowdprefs.campaign.answers import parse_spans
from crowdprefs.campaign.project import Project
from crowdprefs.quality.review import listened_answers
from crowdprefs.web.judges import LocalServer

pytestmark = [pytest.mark.browser, pytest.mark.slow]
expect = pytest.importorskip("playwright.sync_api").expect

SECONDS = 1.5
"""Clips long enough that a quarter of one is far from the 0.9 mark on a loaded machine."""
CLIPS = ("query", "a", "b")

PLAY = """([clip, how]) => new Promise((resolve, reject) => {
    const audio = document.getElementById('clip-' + clip);
    const go = () => {
        if (how === 'seek') audio.currentTime = audio.duration - 0.05;
        if (how === 'mute') audio.muted = true;
        if (how === 'volume0') audio.volume = 0;
        if (how === 'fast') audio.playbackRate = 4;  // the page sets it back to 1
        if (how === 'stuck') {  // a player that keeps 4× and tells the element's reader 1
            Object.getOwnPropertyDescriptor(HTMLMediaElement.prototype, 'playbackRate')
                .set.call(audio, 4);
            Object.defineProperty(audio, 'playbackRate', {get: () => 1, set: () => {}});
        }
        audio.addEventListener('ended', () => setTimeout(resolve, 50), {once: true});
        setTimeout(() => audio.play().catch(reject), 50);
    };
    if (audio.readyState >= 1) go();
    else audio.addEventListener('loadedmetadata', go, {once: true});
})"""
LYING_PROTOTYPE = """(() => {  // before the page's script: every player plays 4× and says 1
    const rate = Object.getOwnPropertyDescriptor(HTMLMediaElement.prototype, 'playbackRate');
    Object.defineProperty(HTMLMediaElement.prototype, 'playbackRate', {
        get() { return 1; }, set(value) {}, configurable: true });
    document.addEventListener('play', e => rate.set.call(e.target, 4), true);
})()"""


def listening_project(tmp_path: Path) -> Path:
    return clip_project(tmp_path, SECONDS)


def open_page(browser, server, token: str, init_script: str | None = None):
    page = browser.new_context().new_page()
    if init_script:
        page.add_init_script(init_script)
    page.goto(f"{server.url}/invite/{token}")
    page.click("#start")
    page.wait_for_url("**/hit/*")
    page.click("h1")  # a user gesture, so the page may start playback
    return page


def log(page) -> dict[str, str]:
    return page.evaluate(
        "() => Object.fromEntries([...document.querySelectorAll('input[type=hidden]')]"
        ".map(i => [i.name, i.value]))"
    )


def stored(root: Path):
    with Project(root) as project:
        return project.store.answers()


def test_a_judge_who_listens_unlocks_and_the_log_is_stored(tmp_path, browser):
    root = listening_project(tmp_path)
    (token,) = invite(root, 1)
    with LocalServer(root, RESEARCHER) as server:
        page = open_page(browser, server, token)
        submit = page.locator("#crowdprefs-submit")
        for clip in ("query", "a", "query"):  # the original heard twice: covered once
            page.evaluate(PLAY, [clip, "normal"])
            assert submit.is_disabled()
        page.evaluate(PLAY, ["b", "fast"])  # asked for 4×: set back to 1, and heard
        expect(submit).to_be_enabled()
        sent = log(page)
        assert sent["plays_query"] == "2" and sent["seeks_query"] == "0"
        for clip in CLIPS:
            assert float(sent[f"cover_{clip}"]) >= 0.9, sent
            assert float(sent[f"muted_{clip}"]) == 0.0
            (span,) = parse_spans(sent[f"spans_{clip}"])
            assert span[1] == pytest.approx(SECONDS, abs=0.01)
        page.check("input[name=choice][value=B]")
        submit.click()
        page.wait_for_load_state()
    (raw,) = stored(root)["raw"]
    fields = json.loads(raw)["fields"]
    assert fields["plays_query"] == 2.0 and fields["seeks_a"] == 0.0
    assert all(0.9 <= fields[f"cover_{clip}"] <= 1.0 for clip in CLIPS), fields
    assert len(parse_spans(fields["spans_query"])) == 1
    with Project(root) as project:  # the audit reads the stored log per worker
        frame = listened_answers(project, "web")
    assert frame["listened"].tolist() == [True]
    assert frame["listen_coverage"].iloc[0] >= 0.9
    audited = crowdprefs("audit", root, "--resamples", 0, "--json")  # the console script
    assert audited.returncode == 0, audited.stderr
    (worker,) = json.loads(audited.stdout)["workers"]
    assert worker["logged_answers"] == 1 and worker["unheard"] == 0
    assert worker["listen_coverage"] >= 0.9


@pytest.mark.parametrize(
    ("how", "init_script"),
    [
        ("seek", None),
        ("stuck", None),
        ("normal", LYING_PROTOTYPE),
        ("mute", None),
        ("volume0", None),
    ],
    ids=["seek-to-end", "4x-stuck-player", "4x-lying-prototype", "muted", "volume-0"],
)
def test_a_judge_who_does_not_listen_stays_locked_and_a_forged_post_is_refused(
    tmp_path, browser, how, init_script
):
    root = listening_project(tmp_path)
    (token,) = invite(root, 1)
    with LocalServer(root, RESEARCHER) as server:
        page = open_page(browser, server, token, init_script)
        submit = page.locator("#crowdprefs-submit")
        if init_script is None:
            for clip in ("query", "a"):
                page.evaluate(PLAY, [clip, "normal"])
                assert page.text_content(f"#state-{clip}") == "played ✓"
        page.evaluate(PLAY, ["b", how])
        assert page.text_content("#state-b") == "not played yet"
        assert submit.is_disabled()
        sent = log(page)
        assert sent["plays_b"] == "1", "the clip did end"
        assert float(sent["cover_b"]) < 0.9, sent
        if how == "seek":
            assert sent["seeks_b"] == "1"
        if how in ("mute", "volume0"):
            assert float(sent["listen_b"]) == 0.0 and float(sent["muted_b"]) > 0.5 * SECONDS
        # the same log, its listening time forged, sent past the locked button
        page.check("input[name=choice][value=A]")
        page.evaluate(
            """seconds => {
                const form = document.getElementById('crowdprefs-hit');
                for (const clip of ['query', 'a', 'b']) {
                    form.querySelector(`input[name=listen_${clip}]`).value = String(seconds);
                    form.querySelector(`input[name=plays_${clip}]`).value = '1';
                }
                form.submit();
            }""",
            SECONDS,
        )
        page.wait_for_load_state()
        message = page.text_content("#message")
        assert "was heard (parts skipped, or played muted or faster, do not count)" in message
    assert stored(root).empty
