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
timer (faster playback does not count as listening).

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


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an answer: ``kind`` is ``choice`` (not one of :data:`CHOICES`),
    ``text`` (``name`` longer than ``limit``), ``number`` (play-log field ``name`` not a number
    ≥ 0), ``unplayed`` (clip ``name`` never played to its end) or ``short`` (clip ``name``
    heard for ``heard`` of its ``seconds``); ``sent`` is the text sent (cut to 20 characters)."""

    kind: str
    name: str = ""
    sent: str = ""
    limit: int = 0
    heard: float = 0.0
    seconds: float = 0.0


def clean_texts(texts: pd.DataFrame, limits: Mapping[str, int] = TEXT_LIMITS) -> pd.DataFrame:
    """The free texts ``texts`` (a column per name of ``limits``; missing: none) as stored:
    line breaks as ``\\n``, stripped, cut to their limit, ``None`` when empty; with a boolean
    column ``NAME_too_long`` per text that was longer than its limit."""
    out = {}
    for name, limit in limits.items():
        column = texts[name] if name in texts else pd.Series(None, index=texts.index)
        text = column.astype(object).fillna("").astype(str).str.replace("\r\n", "\n").str.strip()
        out[f"{name}_too_long"] = text.str.len() > limit
        out[name] = text.str.slice(0, limit).astype(object).where(text != "", None)
    return pd.DataFrame(out, index=texts.index)


def _number(fields: Mapping[str, Any], name: str, problems: list[Problem]) -> float | None:
    text = fields.get(name)
    text = "0" if text is None or str(text).strip() == "" else str(text).strip()
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
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
    texts = clean_texts(pd.DataFrame([{name: fields.get(name) for name in limits}]), limits)
    for name, limit in limits.items():
        if texts[f"{name}_too_long"].iloc[0]:
            problems.append(Problem("text", name, limit=limit))
        answer[name] = texts[name].iloc[0]
    for name in PLAY_LOG:
        answer[name] = _number(fields, name, problems)
    return answer, problems


def check_listening(
    answer: Mapping[str, float | None],
    clip_seconds: Mapping[str, float | None],
    *,
    min_coverage: float,
    slack: float = SLACK_SECONDS,
) -> list[Problem]:
    """The listening problems of a play log (``answer``: :func:`check_fields`' numbers, an
    invalid one ``None`` and not judged again), one per clip role of ``clip_seconds`` (role →
    duration, ``None``/NaN when unknown) in its order: not played to the end at least once, or
    heard for less than ``min_coverage`` of the duration less ``slack`` seconds.

    ``slack`` is the error allowed the log's listening time: :data:`SLACK_SECONDS` for a
    crowd's stored answer; the web server, which measures the play log it serves while the
    judge can still listen again and resend, allows less."""
    problems = []
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
