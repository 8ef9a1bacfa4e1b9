"""The preference HIT: wording from the config, escaping, MTurk's HTMLQuestion wrapper."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest
import scipy.io.wavfile
import tomli_w
from defusedxml import ElementTree
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdprefs.campaign import driver
from crowdprefs.campaign.project import CONFIG_NAME, Project, init_project
from crowdprefs.errors import InputError
from crowdprefs.hits.render import (
    HTML_QUESTION_NS,
    QUESTION_LIMIT,
    htmlquestion_xml,
    pair_clips,
    render_level_hit,
    render_preference_hit,
    write_preview,
)

HOSTILE = '<script>alert("x")</script> & </textarea><img src=x onerror=alert(1)> ]]>'


@pytest.fixture
def project(tmp_path):
    import pandas as pd

    clips = tmp_path / "clips"
    clips.mkdir()
    for name in ("q", "a", "b", "c"):  # init refuses clips that are not audio
        scipy.io.wavfile.write(clips / f"{name}.wav", 8000, np.zeros(800, np.int16))
    frame = pd.DataFrame(
        {
            "query": ["Q1"] * 3,
            "document": ["d<1>", "d2", "d3"],
            "audio": [str(clips / f"{n}.wav") for n in ("a", "b", "c")],
            "query_audio": [str(clips / "q.wav")] * 3,
        }
    )
    with init_project(tmp_path / "p", frame, seed=7) as created:
        driver.next_batch(created)
    return Project(tmp_path / "p")


def _set_section(project: Project, name: str, values: dict) -> Project:
    path = project.root / CONFIG_NAME
    import tomllib

    data = tomllib.loads(path.read_text())
    data[name] = values
    path.write_text(tomli_w.dumps(data))
    project.close()
    return Project(project.root)


def _pair(project: Project) -> dict:
    return project.store.pairs(1).iloc[0].to_dict()


def test_render_has_the_figure_4_question(project):
    html = render_preference_hit(project, _pair(project))
    assert html.startswith("<!DOCTYPE html>")
    assert len(re.findall(r"<audio ", html)) == 3
    for text in (
        "Evaluate Melodic Similarity",
        "beware, this melody is not always the same one",
        "Which melody is more similar to the original one?",
        "They are both equally similar or dissimilar to the original melody.",
        "If one melody is part of another one, they shall be considered equally similar.",
        "Do you have a strong musical background?",
        "Do you have any comments or suggestions?",
        "Reward: $0.02 per answer.",
    ):
        assert text in html
    assert re.findall(r'name="choice" value="(\w+)"', html) == ["A", "B", "equal"]
    assert 'name="assignmentId"' in html
    assert re.search(r'<button type="submit" id="crowdprefs-submit" disabled>', html)


def test_clips_follow_the_a_b_side(project):
    pair = _pair(project)
    clips = pair_clips(project, pair)
    x_audio = str(project.root.parent / "clips" / ("a.wav" if pair["x"] == "d<1>" else ""))
    assert clips["query"].endswith("q.wav")
    flipped = dict(pair, a_is_x=1 - pair["a_is_x"])
    assert pair_clips(project, flipped) == {**clips, "a": clips["b"], "b": clips["a"]}
    check = dict(pair, x="Q1")  # an attention check shows the query's own clip
    side = "a" if pair["a_is_x"] else "b"
    assert pair_clips(project, check)[side] == clips["query"]
    assert x_audio  # paths are absolute


def test_hostile_config_and_urls_are_escaped(project):
    project = _set_section(
        project, "hit", {"title": HOSTILE, "note": HOSTILE, "played_text": "</script>" + HOSTILE}
    )
    html = render_preference_hit(
        project,
        _pair(project),
        mode="web",
        submit_url='/submit?"><script>',
        extra_hidden={"token": '"><script>alert(2)</script>'},
        clip_url=lambda path: 'https://x/"onerror="alert(3)',
    )
    assert "<script>alert" not in html
    assert "<img src=x" not in html
    assert '"onerror="' not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in html
    config = re.search(
        r'<script type="application/json" id="crowdprefs-config">(.*?)</script>', html, re.S
    )
    assert json.loads(config.group(1))["texts"]["played"] == "</script>" + HOSTILE


def test_modes_and_settings_are_checked(project):
    with pytest.raises(InputError, match="web HIT needs"):
        render_preference_hit(project, _pair(project), mode="web")
    with pytest.raises(InputError, match="unknown HIT mode"):
        render_preference_hit(project, _pair(project), mode="bogus")
    # the settings are checked when the project opens, before any HIT is rendered
    with pytest.raises(InputError, match=r"\[hit\] frame_height"):
        _set_section(project, "hit", {"frame_height": "tall"})
    with pytest.raises(InputError, match="unknown \\[hit\\] setting"):
        _set_section(project, "hit", {"colour": "red"})


def test_level_hit_escapes_and_shows_the_chosen_scales():
    html = render_level_hit(
        "q<1>", 'd"2', {"query": "a.mp3?x=<b>", "document": "b.mp3"}, "both", mode="mturk"
    )
    assert "q&lt;1&gt;" in html and "d&#34;2" in html and "<b>" not in html
    assert 'name="broad"' in html and 'name="fine"' in html
    assert re.search(r'<input type="number" id="fine" name="fine"[^>]*required', html)
    assert "value=" not in re.search(r'<input type="number"[^>]*>', html).group(0)  # no default
    config = re.search(r'id="crowdprefs-config">(.*?)</script>', html, re.S)
    assert json.loads(config.group(1))["clips"] == ["query", "document"]
    broad_only = render_level_hit("q", "d", {"query": "", "document": ""}, "broad")
    assert 'name="fine"' not in broad_only and 'name="broad"' in broad_only
    with pytest.raises(InputError, match="unknown level scale"):
        render_level_hit("q", "d", {"query": "", "document": ""}, "loud")
    with pytest.raises(InputError, match="web HIT needs"):
        render_level_hit("q", "d", {"query": "", "document": ""}, mode="web")


def _content(xml: str) -> str:
    root = ElementTree.fromstring(xml.encode("utf-8"))
    assert root.tag == f"{{{HTML_QUESTION_NS}}}HTMLQuestion"
    assert root.find(f"{{{HTML_QUESTION_NS}}}FrameHeight").text == "800"
    return root.find(f"{{{HTML_QUESTION_NS}}}HTMLContent").text


def test_htmlquestion_round_trips_the_page(project):
    project = _set_section(project, "hit", {"instructions": HOSTILE})
    html = render_preference_hit(project, _pair(project))
    assert "]]>" not in html  # autoescaped; a raw terminator is split across CDATA sections:
    assert _content(htmlquestion_xml(html)) == html
    raw = html.replace("</body>", "<!-- ]]> ]]]]> --></body>")
    assert _content(htmlquestion_xml(raw)) == raw


@settings(max_examples=60, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=300))
def test_htmlquestion_carries_any_xml_text_exactly(text):
    if re.search("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]", text):
        with pytest.raises(InputError, match="control character"):
            htmlquestion_xml(text)
    else:
        # XML parsers normalise line ends, as MTurk's does.
        expected = text.replace("\r\n", "\n").replace("\r", "\n")
        assert (_content(htmlquestion_xml(text)) or "") == expected


def test_htmlquestion_size_limit():
    assert len(htmlquestion_xml("x" * (QUESTION_LIMIT - 400)).encode()) <= QUESTION_LIMIT
    with pytest.raises(InputError, match="over MTurk's limit of 65535"):
        htmlquestion_xml("é" * (QUESTION_LIMIT // 2))


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda clip: clip.unlink(), "clip not found"),
        (lambda clip: clip.write_text("root:x:0"), "is not a clip"),
    ],
    ids=["missing", "not audio"],
)
def test_preview_checks_every_clip_before_copying_any(project, tmp_path, damage, says):
    damage(tmp_path / "clips" / "c.wav")
    with pytest.raises(InputError, match=says):
        write_preview(project, 1, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_preview_writes_every_hit_with_local_clips(project, tmp_path):
    files = write_preview(project, 1, tmp_path / "out")
    pairs = project.store.pairs(1)
    assert len(files) == len(pairs)
    index = (tmp_path / "out" / "index.html").read_text()
    assert "d&lt;1&gt;" in index and "d<1>" not in index
    page = files[0].read_text()
    srcs = re.findall(r'<audio [^>]*src="([^"]*)"', page)
    assert len(srcs) == 3 and all(s.startswith("clips/") for s in srcs)
    assert all((tmp_path / "out" / s).exists() for s in srcs)
    assert 'action="submitted"' in page


@pytest.mark.parametrize(("reward", "line"), [("0", None), ("0.05", "Reward: $0.05 per answer.")])
def test_volunteers_read_no_reward_line(tmp_path, reward, line):
    """A project of volunteers (init --reward 0) shows no "Reward: $0.00 per answer." on its
    questions (preview, MTurk, the web site: one renderer); a paid one shows its reward."""
    from console_script import crowdprefs

    clips = tmp_path / "clips"
    clips.mkdir()
    rows = ["query,document,audio,query_audio"]
    for name in ("q", "a", "b"):
        scipy.io.wavfile.write(clips / f"{name}.wav", 8000, np.zeros(800, np.int16))
    rows += [f"Q1,{d},{clips / d}.wav,{clips / 'q.wav'}" for d in ("a", "b")]
    (tmp_path / "candidates.csv").write_text("\n".join(rows) + "\n")
    root = tmp_path / "p"
    made = crowdprefs("init", root, "--candidates", tmp_path / "candidates.csv", "--reward", reward)
    assert made.returncode == 0, made.stderr
    shown = crowdprefs("preview", root, "-o", tmp_path / "preview")
    assert shown.returncode == 0, shown.stderr
    (page,) = [
        p.read_text() for p in (tmp_path / "preview").glob("*.html") if "<audio" in p.read_text()
    ]
    assert ("Reward:" in page) == (line is not None)
    assert line is None or line in page


def test_preview_open_serves_the_batch_and_shows_what_a_hit_would_send(tmp_path):
    """``preview --open`` serves the pages on localhost (its HTTP server is imported only
    there): a page is served as written, and a submitted form comes back as a table."""
    import signal
    import subprocess
    import urllib.request

    from console_script import crowdprefs, script

    clips = tmp_path / "clips"
    clips.mkdir()
    for name in ("q", "a", "b"):
        scipy.io.wavfile.write(clips / f"{name}.wav", 8000, np.zeros(800, np.int16))
    rows = ["query,document,audio,query_audio"]
    rows += [f"Q1,{d},{clips / d}.wav,{clips / 'q.wav'}" for d in ("a", "b")]
    (tmp_path / "candidates.csv").write_text("\n".join(rows) + "\n")
    root = tmp_path / "p"
    made = crowdprefs("init", root, "--candidates", tmp_path / "candidates.csv")
    assert made.returncode == 0, made.stderr
    env = {**os.environ, "BROWSER": "true", "PYTHONUNBUFFERED": "1", "COLUMNS": "400"}
    server = subprocess.Popen(
        [script(), "preview", str(root), "-o", str(tmp_path / "out"), "--open", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        lines = [server.stdout.readline() for _ in range(2)]
        url = re.search(r"(http://127\.0\.0\.1:\d+)/index\.html", lines[1]).group(1)
        with urllib.request.urlopen(f"{url}/index.html", timeout=30) as page:
            assert page.read() == (tmp_path / "out" / "index.html").read_bytes()
        sent = urllib.request.Request(f"{url}/submitted", data=b"answer=%3Cmore%3E&worker=w1")
        with urllib.request.urlopen(sent, timeout=30) as reply:
            body = reply.read().decode()
        assert "<th>answer</th><td>&lt;more&gt;</td>" in body and "<th>worker</th>" in body
    finally:
        server.send_signal(signal.SIGINT)  # Ctrl-C: the server closes and the command ends
        assert server.wait(timeout=30) == 0, server.stderr.read()
