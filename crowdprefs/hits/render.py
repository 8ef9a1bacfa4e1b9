"""The preference HIT: wording, rendering, and MTurk's ``HTMLQuestion`` wrapper.

One template (``hit_templates/preference.html``) serves every crowd: the question of the
preference-judgments paper (Figure 4, §4.1) with HTML5 players for the original melody and
variations A and B, the three options, the note that a melody contained in another counts as equally
similar, the warning that the original changes between HITs (§4.2), and optional background and
comment fields. The answer cannot be submitted before each clip was played to the end; play counts
and listening seconds go back as hidden fields. Only the surrounding submit mechanics differ between
crowds, chosen by ``mode``:

``mturk``    posts to MTurk's ``externalSubmit`` (read from ``turkSubmitTo``) with the
             ``assignmentId`` of the URL; with ``assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE`` (MTurk's
             preview) nothing can be answered.
``web``      posts to ``submit_url`` with the caller's ``extra_hidden`` fields (the in-house crowd).
``preview``  nothing can be answered (what a worker sees before accepting).

The wording comes from the project's ``[hit]`` section (:class:`HitSettings`), every value
autoescaped. The fields a submission carries are :data:`ANSWER_FIELDS`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jinja2

from crowdprefs.campaign.answers import PAGE_SLACK
from crowdprefs.campaign.settings import check_values
from crowdprefs.errors import InputError
from crowdprefs.files import write_atomic

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project

TEMPLATE_DIR = Path(str(resources.files("hit_templates")))
"""Where the HIT templates are installed (the ``hit_templates`` package)."""
MODES = ("mturk", "web", "preview")
#: The questions a level-judgment HIT can ask (MIREX AMS: Broad, Fine, or both).
LEVEL_SCALES = ("fine", "broad", "both")
SANDBOX_SUBMIT = "https://workersandbox.mturk.com/mturk/externalSubmit"
LIVE_SUBMIT = "https://www.mturk.com/mturk/externalSubmit"
HTML_QUESTION_NS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2011-11-11/HTMLQuestion.xsd"
)
QUESTION_LIMIT = 65_535
"""MTurk's limit on the ``Question`` XML, in bytes (botocore's service model documents it)."""

ANSWER_FIELDS = (
    "choice",
    "background",
    "comment",
    "plays_query",
    "plays_a",
    "plays_b",
    "listen_query",
    "listen_a",
    "listen_b",
    "seconds_on_page",
)
"""What a submitted preference HIT carries (besides the crowd's own hidden fields)."""


@dataclass(frozen=True)
class HitSettings:
    """The HIT's wording and presentation: the ``[hit]`` section (defaults follow Figure 4)."""

    title: str = "Evaluate Melodic Similarity"
    description: str = (
        "Listen to an original melody and two variations, and tell which variation is more "
        "similar to the original."
    )
    keywords: str = "music, melody, similarity, audio, listening"
    language: str = "en"
    instructions: str = ""
    original_text: str = "Listen to the following original melody"
    original_warning: str = "(beware, this melody is not always the same one):"
    original_label: str = "Original melody:"
    variations_text: str = "And now to these two variations:"
    a_label: str = "Variation A:"
    b_label: str = "Variation B:"
    question: str = "Which melody is more similar to the original one?"
    choice_a: str = "Variation A."
    choice_b: str = "Variation B."
    choice_equal: str = "They are both equally similar or dissimilar to the original melody."
    note: str = (
        "NOTE: If one melody is part of another one, they shall be considered equally similar."
    )
    optional_text: str = "Optional:"
    background_question: str = (
        "Do you have a strong musical background? Which one and for how long? "
        "You may answer to this question just once."
    )
    comment_question: str = "Do you have any comments or suggestions? We appreciate your input!"
    play_all_text: str = "Play each of the three clips to the end at least once to answer."
    ready_text: str = "Thank you for listening: choose an answer and submit it."
    preview_text: str = "This is a preview: accept the HIT to listen and answer."
    played_text: str = "played ✓"
    not_played_text: str = "not played yet"
    submit_text: str = "Submit"
    reward_text: str = "Reward: ${reward:.2f} per answer."
    show_reward: bool = True
    frame_height: int = 800
    min_coverage: float = 0.9
    """Share of a clip's duration that must have been heard when it ends, to count as played."""

    def __post_init__(self) -> None:
        check_values("hit", self)

    @classmethod
    def from_project(cls, project: Project) -> HitSettings:
        return cls(**project.section("hit"))  # checked against the schema at open

    def as_context(self, reward: float) -> dict[str, Any]:
        """The template's values; without a reward (volunteers: ``reward = 0``) no reward
        line is shown, whatever ``show_reward`` says."""
        context = asdict(self)
        context["show_reward"] = self.show_reward and reward > 0
        try:
            context["reward_text"] = self.reward_text.format(reward=reward)
        except (KeyError, ValueError, IndexError) as error:
            raise InputError(
                f"[hit] reward_text: cannot format {self.reward_text!r}: {error}"
            ) from None
        return context


@functools.cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        autoescape=jinja2.select_autoescape(["html", "xml"], default_for_string=True),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )


def pair_clips(project: Project, pair: Mapping[str, Any]) -> dict[str, str | None]:
    """The clip paths (or URLs) shown for a pair: ``query``, ``a`` and ``b``.

    ``x`` equal to the query (an attention check) shows the query's own clip.
    """
    query_audio, x, y = project.store.pair_audio(pair["query"], pair["x"], pair["y"])
    a_is_x = bool(int(pair["a_is_x"]))
    return {"query": query_audio, "a": x if a_is_x else y, "b": y if a_is_x else x}


def _default_clip_url(path: str) -> str:
    return path if "://" in path else Path(path).resolve().as_uri()


def render_preference_hit(
    project: Project,
    pair: Mapping[str, Any],
    *,
    mode: str = "mturk",
    submit_url: str | None = None,
    extra_hidden: Mapping[str, Any] | None = None,
    clip_url: Callable[[str], str] | None = None,
    template: str = "preference.html",
) -> str:
    """The HTML page of one preference question.

    ``pair`` needs ``query, x, y, a_is_x`` (a row of the ``pairs`` table). ``clip_url`` turns a
    clip's stored path into the URL the browser loads (default: the path as a ``file:`` URL, or
    the URL itself); a clip without audio renders an empty player. ``submit_url`` defaults to
    MTurk's sandbox ``externalSubmit`` in ``mturk`` mode (the page prefers ``turkSubmitTo``) and
    is required in ``web`` mode. ``template`` may name a template that extends this one.
    """
    if mode not in MODES:
        raise InputError(f"unknown HIT mode {mode!r}: choose one of {', '.join(MODES)}")
    if submit_url is None:
        if mode == "web":
            raise InputError("a web HIT needs the URL its answers are posted to")
        submit_url = SANDBOX_SUBMIT if mode == "mturk" else "#"
    settings = HitSettings.from_project(project)
    to_url = clip_url or _default_clip_url
    clips = {
        side: (to_url(path) if path else "") for side, path in pair_clips(project, pair).items()
    }
    return (
        _environment()
        .get_template(template)
        .render(
            hit=settings.as_context(project.settings.reward),
            clips=clips,
            mode=mode,
            submit_url=submit_url,
            hidden=dict(extra_hidden or {}),
            config=_listening_config(mode, list(clips), settings),
        )
    )


def render_level_hit(
    query: str,
    document: str,
    clips: Mapping[str, str],
    scale: str = "both",
    *,
    mode: str = "mturk",
    submit_url: str | None = None,
    extra_hidden: Mapping[str, Any] | None = None,
) -> str:
    """The level-judgment HIT (``level_judgment.html``) for one query–candidate pair: the Broad
    and/or Fine similarity question of MIREX AMS (the MTC paper, §2), behind the same listening gate
    as the preference HIT (both clips played to the end; the Fine score starts empty).

    ``clips`` maps ``query`` and ``document`` to the URLs the browser loads; ``mode`` and
    ``submit_url`` work as in :func:`render_preference_hit`.
    """
    if mode not in MODES:
        raise InputError(f"unknown HIT mode {mode!r}: choose one of {', '.join(MODES)}")
    if scale not in LEVEL_SCALES:
        raise InputError(f"unknown level scale {scale!r}: choose {', '.join(LEVEL_SCALES)}")
    if submit_url is None:
        if mode == "web":
            raise InputError("a web HIT needs the URL its answers are posted to")
        submit_url = SANDBOX_SUBMIT if mode == "mturk" else "#"
    settings = HitSettings(
        play_all_text="Play both clips to the end at least once to answer.",
        ready_text="Thank you for listening: score the candidate and submit.",
    )
    return (
        _environment()
        .get_template("level_judgment.html")
        .render(
            query=query,
            document=document,
            clips={"query": clips["query"], "document": clips["document"]},
            scale=scale,
            mode=mode,
            submit_url=submit_url,
            hidden=dict(extra_hidden or {}),
            config=_listening_config(mode, ["query", "document"], settings),
        )
    )


def _listening_config(mode: str, clips: list[str], settings: HitSettings) -> dict[str, Any]:
    """The JSON block read by ``listening.js``: which clips gate the answer, the listening rule
    the server checks again (:func:`crowdprefs.campaign.answers.check_listening` with
    :data:`~crowdprefs.campaign.answers.PAGE_SLACK`), and its texts."""
    return {
        "mode": mode,
        "clips": clips,
        "min_coverage": settings.min_coverage,
        "slack": PAGE_SLACK,
        "texts": {
            "played": settings.played_text,
            "not_played": settings.not_played_text,
            "play_all": settings.play_all_text,
            "ready": settings.ready_text,
            "preview": settings.preview_text,
        },
    }


_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _cdata(text: str) -> str:
    """``text`` as CDATA sections (a ``]]>`` inside is split across two sections)."""
    return "<![CDATA[" + text.replace("]]>", "]]]]><![CDATA[>") + "]]>"


def htmlquestion_xml(html: str, frame_height: int = 800) -> str:
    """Wrap an HTML page in MTurk's ``HTMLQuestion`` XML.

    Raises :class:`InputError` when the page holds characters XML cannot carry or the XML is
    larger than MTurk's 65,535-byte limit on ``Question``.
    """
    if _NOT_XML.search(html):
        raise InputError("the HIT's HTML holds a control character XML cannot carry")
    xml = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<HTMLQuestion xmlns="{HTML_QUESTION_NS}">\n'
        f"<HTMLContent>{_cdata(html)}</HTMLContent>\n"
        f"<FrameHeight>{int(frame_height)}</FrameHeight>\n"
        "</HTMLQuestion>\n"
    )
    size = len(xml.encode("utf-8"))
    if size > QUESTION_LIMIT:
        raise InputError(
            f"the HIT's HTMLQuestion is {size} bytes, over MTurk's limit of {QUESTION_LIMIT}: "
            "shorten the [hit] texts"
        )
    return xml


_INDEX = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Preview of batch {{ iteration }}</title>
<style>body{font-family:system-ui,sans-serif;margin:1.5rem}td,th{padding:.2rem .6rem}</style>
</head><body>
<h1>Batch {{ iteration }}: {{ rows|length }} HITs</h1>
<p>Each HIT as a worker sees it before accepting it (nothing can be answered), and as after
accepting it. Answers submitted here go nowhere but this page's server.</p>
<table><tr><th>#</th><th>query</th><th>variation A</th><th>variation B</th><th>kind</th>
<th>preview</th><th>try</th></tr>
{% for row in rows %}<tr><td>{{ row.position }}</td><td>{{ row.query }}</td><td>{{ row.a }}</td>
<td>{{ row.b }}</td><td>{{ row.kind }}</td>
<td><a href="{{ row.file }}?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE">preview</a></td>
<td><a href="{{ row.file }}?assignmentId=PREVIEW-{{ row.position }}">try</a></td></tr>
{% endfor %}</table></body></html>
"""


def write_preview(project: Project, iteration: int, folder: Path) -> list[Path]:
    """Render every HIT of a batch into ``folder`` (clips copied under ``folder/clips``).

    Writes ``hit-NNN.html`` (in MTurk mode: ``?assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE`` shows
    the preview, any other id lets one answer; answers post to ``submitted``) and
    ``index.html``. Returns the HIT files in batch order. Every clip is checked (it exists
    and is audio: :func:`~crowdprefs.campaign.clips.clip_refusals`) and every page rendered
    before anything is copied or written.
    """
    from crowdprefs.campaign.clips import clip_refusals
    from crowdprefs.hits.hosting import FolderHost, is_url

    folder = Path(folder)
    pairs = project.store.pairs(iteration)
    if pairs.empty:
        raise InputError(f"batch {iteration} has no pairs")
    host = FolderHost(folder)
    clips = {
        p for pair in pairs.to_dict("records") for p in pair_clips(project, pair).values() if p
    }
    local = sorted(p for p in clips if not is_url(p))
    missing = [p for p in local if not Path(p).is_file()]
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise InputError(f"clip not found: {missing[0]}{more}; nothing was copied")
    refused = clip_refusals(local)
    if refused:
        path, reason = next(iter(refused.items()))
        raise InputError(f"{path} is not a clip: {reason}; nothing was copied")
    pages, rows = [], []
    for pair in pairs.to_dict("records"):
        name = f"hit-{int(pair['position']) + 1:03d}.html"
        html = render_preference_hit(
            project, pair, mode="mturk", submit_url="submitted", clip_url=host.url
        )
        pages.append((folder / name, html))
        a_is_x = bool(pair["a_is_x"])
        rows.append(
            {
                "position": int(pair["position"]) + 1,
                "query": pair["query"],
                "a": pair["x"] if a_is_x else pair["y"],
                "b": pair["y"] if a_is_x else pair["x"],
                "kind": pair["kind"],
                "file": name,
            }
        )
    index = _environment().from_string(_INDEX).render(iteration=iteration, rows=rows)
    folder.mkdir(parents=True, exist_ok=True)
    host.prepare(clips)
    for path, html in pages:
        write_atomic(path, html)
    write_atomic(folder / "index.html", index)
    return [path for path, _ in pages]
