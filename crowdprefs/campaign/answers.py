"""Checking one answer as a crowd sends it: the choice, the free texts, the listening evidence.

Every crowd that takes answers from a HIT page (MTurk, the web server) checks them here, with
one set of rules:

* the **choice** is ``A``, ``B`` or ``equal``;
* the free texts (``background``, ``comment``; untrusted) fit :data:`TEXT_LIMITS`, the limits
  the HIT page itself enforces (``maxlength``), counted with line breaks as one character as the
  page counts them;
* the **listening evidence** the page reports for each clip (``plays_ROLE``: times played to
  the end, ``listen_ROLE``: seconds heard) and ``seconds_on_page`` are numbers ≥ 0; every clip
  was played to the end at least once (the page sends nothing before, so anything else comes from
  a tampered page); and, when the clip's duration is known, heard for at least ``min_coverage``
  of it (one second of slack for the page's timer; faster playback does not count as listening).

:func:`check_answer` returns the cleaned answer and every problem found, each one line a worker
can be shown (MTurk rejects with it as the reason; the web server refuses the post with it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

CHOICES = ("A", "B", "equal")
TEXT_LIMITS = {"background": 1000, "comment": 2000}
"""The longest free texts a HIT page lets a worker send (its ``maxlength``), in characters."""
ROLES = ("query", "a", "b")
"""The clips of a preference HIT: the query, variation A and variation B."""
SLACK_SECONDS = 1.0


def _number(fields: Mapping[str, Any], name: str, problems: list[str]) -> float | None:
    text = fields.get(name)
    text = "0" if text is None or str(text).strip() == "" else str(text).strip()
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        problems.append(f"invalid {name} {text[:20]!r}")
        return None
    return value


def check_answer(
    fields: Mapping[str, Any],
    clip_seconds: Mapping[str, float | None] | None = None,
    *,
    min_coverage: float = 0.9,
    limits: Mapping[str, int] = TEXT_LIMITS,
) -> tuple[dict[str, Any], list[str]]:
    """``(answer, problems)`` for the fields a HIT page sent (name → text).

    ``clip_seconds`` maps each clip role the page plays (default :data:`ROLES`) to its
    duration (``None``/NaN when unknown). ``answer`` holds ``choice`` (``None`` when invalid),
    the free texts of ``limits`` (stripped, cut to their limit, ``None`` when empty), and for
    each role ``plays_ROLE`` and ``listen_ROLE``, and ``seconds_on_page`` (numbers; 0 when
    invalid). ``problems`` is empty when the answer may count.
    """
    problems: list[str] = []
    roles = dict.fromkeys(ROLES) if clip_seconds is None else dict(clip_seconds)
    choice = fields.get("choice")
    if choice not in CHOICES:
        problems.append(f"invalid choice {str(choice or '')[:20]!r}")
        choice = None
    answer: dict[str, Any] = {"choice": choice}
    for name, limit in limits.items():
        text = str(fields.get(name) or "").replace("\r\n", "\n").strip()
        if len(text) > limit:
            problems.append(f"the {name} is longer than {limit} characters")
        answer[name] = text[:limit] or None
    unplayed, short = [], []
    for role, seconds in roles.items():
        plays = _number(fields, f"plays_{role}", problems)
        heard = _number(fields, f"listen_{role}", problems)
        answer[f"plays_{role}"], answer[f"listen_{role}"] = plays or 0.0, heard or 0.0
        if plays is not None and plays < 1:
            unplayed.append(role)
        elif (
            heard is not None
            and seconds is not None
            and math.isfinite(seconds)
            and heard + SLACK_SECONDS < min_coverage * seconds
        ):
            short.append(f"{role} for {heard:g} s of its {seconds:g} s")
    answer["seconds_on_page"] = _number(fields, "seconds_on_page", problems) or 0.0
    if unplayed:
        problems.append(
            f"sent without playing every clip to the end (not played: {', '.join(unplayed)})"
        )
    if short:
        problems.append(f"clips heard too briefly: {'; '.join(short)}")
    return answer, problems
