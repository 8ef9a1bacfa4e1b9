"""Checking one answer as a crowd sends it: the choice, the free texts, the listening evidence.

Every crowd whose answers come from the HIT page (MTurk collect, results-file import, the web
server) checks them here, with one set of rules in two parts:

**Field checks** (:func:`check_fields`):

* the **choice** is ``A``, ``B`` or ``equal``;
* the free texts (``background``, ``comment``; untrusted) fit :data:`TEXT_LIMITS`, the limits
  the HIT page itself enforces (``maxlength``), counted with line breaks as one character as the
  page counts them (:func:`clean_texts`, vectorised for whole results files);
* the page's play log (``plays_ROLE``: times each clip was played to the end, ``listen_ROLE``:
  seconds heard, and ``seconds_on_page``) holds numbers ≥ 0; a missing one counts as 0.

**Listening checks** (:func:`check_listening`): every clip was played to the end at least once
(the page sends nothing before, so anything else comes from a tampered page) and, when the
clip's duration is known, heard for at least ``min_coverage`` of it less a slack for the page's
timer (faster playback does not count as listening). The HIT page (``listening.js``) unlocks its
submit button by this same rule, with :data:`PAGE_SLACK`. Where the crowd saw the seconds since
the question was handed out (the web server: its clips are served only after the hand-out), the
play log may not claim more than they allow: no clip heard, and no page open, for longer, and no
clip played to its end more often than its duration allows at the fastest playback browsers
offer (:func:`max_plays`). MTurk's work time does not bound the log: a worker may listen in
MTurk's preview, before accepting.

Each check returns :class:`Problem` records; :func:`check_answer` runs both and words them as
one line each for an MTurk rejection. A crowd that answers differently words them its own way
(the web server refuses the post, so the judge can fix it and send again).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

CHOICES = ("A", "B", "equal")
TEXT_LIMITS = {"background": 1000, "comment": 2000}
"""The longest free texts a HIT page lets a worker send (its ``maxlength``), in characters."""
ROLES = ("query", "a", "b")
"""The clips of a preference HIT: the query, variation A and variation B."""
PLAY_LOG = (*(f"plays_{r}" for r in ROLES), *(f"listen_{r}" for r in ROLES), "seconds_on_page")
"""The numbers of the page's play log."""
SLACK_SECONDS = 1.0
"""Seconds a clip may be heard short of ``min_coverage`` of its duration, for the page's own
timer (it measures between player events) when the log comes with a crowd's stored answer."""
PAGE_SLACK = 0.1
"""Seconds a clip may be heard short of ``min_coverage`` of its duration on the HIT page (which
unlocks its submit button by this rule) and on the web server (which checks it again): the page
reports tenths of a second. Below :data:`SLACK_SECONDS`, so what the page sends, every crowd
accepts."""
MAX_PLAYBACK_RATE = 16.0
"""The fastest playback rate browsers allow (Chrome and Firefox clamp ``playbackRate`` to 16)."""
MIN_PLAY_SECONDS = 0.1
"""The shortest time one play of a clip to its end is taken to last, however short the clip."""


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an answer: ``kind`` is ``choice`` (not one of :data:`CHOICES`),
    ``text`` (``name`` longer than ``limit``), ``number`` (play-log field ``name`` not a number
    ≥ 0, or a play count not whole), ``unplayed`` (clip ``name`` never played to its end),
    ``short`` (clip ``name`` heard for ``heard`` of its ``seconds``) or ``claimed`` (play-log
    field ``name`` claims ``heard``, more than the ``seconds`` since the hand-out allow); ``sent``
    is the text sent (cut to 20 characters)."""

    kind: str
    name: str = ""
    sent: str = ""
    limit: int = 0
    heard: float = 0.0
    seconds: float = 0.0


def clean_text(value: Any, limit: int) -> tuple[str | None, bool]:
    """A free text as stored, and whether it was longer than ``limit``: line breaks as
    ``\\n``, stripped, cut to ``limit``, ``None`` when empty (or missing)."""
    missing = value is None or (isinstance(value, float) and math.isnan(value))
    text = "" if missing else str(value).replace("\r\n", "\n").strip()
    return (text[:limit] or None), len(text) > limit


def clean_texts(texts: pd.DataFrame, limits: Mapping[str, int] = TEXT_LIMITS) -> pd.DataFrame:
    """The free texts ``texts`` (a column per name of ``limits``; missing: none) as stored
    (:func:`clean_text`), with a boolean column ``NAME_too_long`` per text that was longer
    than its limit."""
    out = {}
    for name, limit in limits.items():
        column = texts[name] if name in texts else pd.Series(None, index=texts.index)
        cleaned = [clean_text(value, limit) for value in column.astype(object)]
        out[f"{name}_too_long"] = pd.Series([long for _, long in cleaned], texts.index, bool)
        out[name] = pd.Series([text for text, _ in cleaned], texts.index, object)
    return pd.DataFrame(out, index=texts.index)


def _number(fields: Mapping[str, Any], name: str, problems: list[Problem]) -> float | None:
    text = fields.get(name)
    text = "0" if text is None or str(text).strip() == "" else str(text).strip()
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    whole = not name.startswith("plays_") or value.is_integer()
    if not math.isfinite(value) or value < 0 or not whole:
        problems.append(Problem("number", name, text[:20]))
        return None
    return value


def check_fields(
    fields: Mapping[str, Any], limits: Mapping[str, int] = TEXT_LIMITS
) -> tuple[dict[str, Any], list[Problem]]:
    """``(answer, problems)`` of the field checks on what a HIT page sent (name → text).

    ``answer`` holds ``choice`` (``None`` when invalid), the free texts of ``limits``
    (:func:`clean_texts`) and the numbers of :data:`PLAY_LOG` (``None`` when invalid)."""
    problems: list[Problem] = []
    choice = fields.get("choice")
    if choice not in CHOICES:
        problems.append(Problem("choice", "choice", str(choice or "")[:20]))
        choice = None
    answer: dict[str, Any] = {"choice": choice}
    for name, limit in limits.items():
        answer[name], too_long = clean_text(fields.get(name), limit)
        if too_long:
            problems.append(Problem("text", name, limit=limit))
    for name in PLAY_LOG:
        answer[name] = _number(fields, name, problems)
    return answer, problems


def max_plays(elapsed: float, seconds: float | None) -> float:
    """The most plays to its end a clip of ``seconds`` (``None``/NaN: unknown) can have had in
    ``elapsed`` seconds: one, and one more per :data:`MAX_PLAYBACK_RATE`-times-faster play (at
    least :data:`MIN_PLAY_SECONDS` each)."""
    known = seconds is not None and math.isfinite(seconds)
    shortest = max((seconds if known else 0.0) / MAX_PLAYBACK_RATE, MIN_PLAY_SECONDS)
    return 1 + elapsed / shortest


def _claims(
    answer: Mapping[str, float | None], clip_seconds: Mapping[str, float | None], elapsed: float
) -> list[Problem]:
    """The play-log numbers that claim more than ``elapsed`` seconds allow (times with
    :data:`SLACK_SECONDS` for the page's rounding and the way to the server)."""
    bounds = {"seconds_on_page": elapsed + SLACK_SECONDS}
    for role, seconds in clip_seconds.items():
        bounds[f"listen_{role}"] = elapsed + SLACK_SECONDS
        bounds[f"plays_{role}"] = max_plays(elapsed, seconds)
    return [
        Problem("claimed", name, f"{answer[name]:g}", heard=answer[name], seconds=elapsed)
        for name, bound in bounds.items()
        if answer.get(name) is not None and answer[name] > bound
    ]


def check_listening(
    answer: Mapping[str, float | None],
    clip_seconds: Mapping[str, float | None],
    *,
    min_coverage: float,
    slack: float = SLACK_SECONDS,
    elapsed: float | None = None,
) -> list[Problem]:
    """The listening problems of a play log (``answer``: :func:`check_fields`' numbers, an
    invalid one ``None`` and not judged again), one per clip role of ``clip_seconds`` (role →
    duration, ``None``/NaN when unknown) in its order: not played to the end at least once, or
    heard for less than ``min_coverage`` of the duration less ``slack`` seconds. With
    ``elapsed`` (seconds from the hand-out to the answer, as the crowd measured them), first
    every number the log claims beyond them (:func:`_claims`).

    ``slack`` is the error allowed the log's listening time: :data:`SLACK_SECONDS` for a
    crowd's stored answer; the web server applies the page's own rule, :data:`PAGE_SLACK`."""
    problems = [] if elapsed is None else _claims(answer, clip_seconds, elapsed)
    for role, seconds in clip_seconds.items():
        plays, heard = answer.get(f"plays_{role}"), answer.get(f"listen_{role}")
        if plays is not None and plays < 1:
            problems.append(Problem("unplayed", role))
        elif (
            heard is not None
            and seconds is not None
            and math.isfinite(seconds)
            and heard + slack < min_coverage * seconds
        ):
            problems.append(Problem("short", role, heard=heard, seconds=seconds))
    return problems


def reasons(problems: list[Problem]) -> list[str]:
    """The problems as lines a worker is shown with a rejection (not-played and heard-briefly
    clips each gathered in one line)."""
    lines = []
    for p in problems:
        if p.kind == "choice":
            lines.append(f"invalid choice {p.sent!r}")
        elif p.kind == "text":
            lines.append(f"the {p.name} is longer than {p.limit} characters")
        elif p.kind == "number":
            lines.append(f"invalid {p.name} {p.sent!r}")
        elif p.kind == "claimed":
            lines.append(f"{p.name} {p.sent} is more than {p.seconds:.1f} s allow")
    unplayed = [p.name for p in problems if p.kind == "unplayed"]
    if unplayed:
        lines.append(
            f"sent without playing every clip to the end (not played: {', '.join(unplayed)})"
        )
    short = [
        f"{p.name} for {p.heard:g} s of its {p.seconds:g} s" for p in problems if p.kind == "short"
    ]
    if short:
        lines.append(f"clips heard too briefly: {'; '.join(short)}")
    return lines


def check_answer(
    fields: Mapping[str, Any],
    clip_seconds: Mapping[str, float | None] | None = None,
    *,
    min_coverage: float = 0.9,
    limits: Mapping[str, int] = TEXT_LIMITS,
) -> tuple[dict[str, Any], list[str]]:
    """``(answer, problems)`` for the fields a HIT page sent (name → text), as a crowd storing
    the answer sees them: :func:`check_fields`, then :func:`check_listening` on the clips of
    ``clip_seconds`` (default: :data:`ROLES`, durations unknown), worded by :func:`reasons`.

    ``answer`` holds ``choice`` (``None`` when invalid), the free texts (cut to their limit)
    and the play log (invalid numbers as 0). ``problems`` is empty when the answer may count."""
    answer, found = check_fields(fields, limits)
    seconds = dict.fromkeys(ROLES) if clip_seconds is None else clip_seconds
    found += check_listening(answer, seconds, min_coverage=min_coverage)
    answer.update({name: answer[name] or 0.0 for name in PLAY_LOG})
    return answer, reasons(found)
