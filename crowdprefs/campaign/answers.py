"""Checking one answer as a crowd sends it: the choice, the free texts, the listening evidence.

Every crowd whose answers come from the HIT page (MTurk collect, results-file import, the web
server) checks them here, with one set of rules in two parts:

**Field checks** (:func:`check_fields`):

* the **choice** is ``A``, ``B`` or ``equal``;
* the free texts (``background``, ``comment``; untrusted) fit :data:`TEXT_LIMITS`, the limits
  the HIT page itself enforces (``maxlength``), counted with line breaks as one character as the
  page counts them (:func:`clean_texts`, vectorised for whole results files);
* the page's play log (:data:`PLAY_LOG`: ``plays_ROLE``, times each clip was played to the
  end, ``listen_ROLE``, seconds heard, and ``seconds_on_page``) holds numbers ≥ 0; a missing
  one counts as 0. Pages since the proof of listening also send :data:`LISTEN_LOG` per clip:
  ``cover_ROLE`` (share 0…1 of the clip's duration heard: merged played intervals), ``seeks_ROLE``
  (seeks) and ``muted_ROLE`` (seconds played muted or at volume 0), and ``spans_ROLE`` (the
  intervals heard, ``"0-4.25 6.5-10"`` in seconds of the clip); a missing one was not sent
  (older pages, results files that predate them) and is not judged.

**Listening checks** (:func:`check_listening`): every clip was played to the end at least once
(the page sends nothing before, so anything else comes from a tampered page), when the
clip's duration is known, heard for at least ``min_coverage`` of it less a slack for the page's
timer (faster playback does not count as listening), and, where the log sends it, with at least
``min_coverage`` of the clip covered by the intervals heard (:func:`clip_coverage`: merged, so a
part replayed counts once and a part skipped by a seek not at all; time played muted or at
another rate than 1 is not in them). The HIT page (``listening.js``) unlocks its
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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

CHOICES = ("A", "B", "equal")
TEXT_LIMITS = {"background": 1000, "comment": 2000}
"""The longest free texts a HIT page lets a worker send (its ``maxlength``), in characters."""
ROLES = ("query", "a", "b")
"""The clips of a preference HIT: the query, variation A and variation B."""
PLAY_LOG = (*(f"plays_{r}" for r in ROLES), *(f"listen_{r}" for r in ROLES), "seconds_on_page")
"""The numbers of the page's play log that every page sends (a missing one counts as 0)."""
LISTEN_LOG = (
    *(f"cover_{r}" for r in ROLES),
    *(f"seeks_{r}" for r in ROLES),
    *(f"muted_{r}" for r in ROLES),
)
"""The play log's numbers of the proof of listening (a missing one: not sent, not judged)."""
SPANS = tuple(f"spans_{r}" for r in ROLES)
"""The play log's intervals heard per clip (text ``"START-END START-END"``, seconds)."""
LISTENING_FIELDS = (*PLAY_LOG, *LISTEN_LOG, *SPANS)
"""Every field of a page's play log."""
MAX_SPANS = 200
"""The most intervals a clip's ``spans_ROLE`` may list (the page merges them as it goes)."""
COVER_SLACK = 0.01
"""Share of a clip's duration its covered intervals may fall short of ``min_coverage`` where the
duration is unknown (the page rounds the intervals to hundredths of a second)."""
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
    ``short`` (clip ``name`` heard for ``heard`` of its ``seconds``), ``uncovered`` (clip
    ``name``: only the share ``heard`` of its ``seconds``, NaN when unknown, covered by the
    intervals heard) or ``claimed`` (play-log
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


def _sent(value: Any) -> bool:
    return not (
        value is None
        or (isinstance(value, float) and math.isnan(value))
        or str(value).strip() == ""
    )


def _number(fields: Mapping[str, Any], name: str, problems: list[Problem]) -> float | None:
    text = str(fields.get(name)).strip() if _sent(fields.get(name)) else "0"
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    whole = not name.startswith(("plays_", "seeks_")) or value.is_integer()
    share = not name.startswith("cover_") or value <= 1
    if not math.isfinite(value) or value < 0 or not whole or not share:
        problems.append(Problem("number", name, text[:20]))
        return None
    return value


def merge_spans(spans: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """The intervals ``spans`` (``(start, end)``, any order, overlapping or not) merged: sorted,
    each part of the clip once (a part played twice counts once), empty ones dropped."""
    merged: list[tuple[float, float]] = []
    for start, end in sorted((a, b) for a, b in spans if b > a):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def parse_spans(text: Any) -> list[tuple[float, float]] | None:
    """The intervals of a ``spans_ROLE`` field (``"0-4.25 6.5-10"``; empty: none heard),
    merged (:func:`merge_spans`); ``None`` when it is not such a list (negative, reversed or
    not finite bounds, more than :data:`MAX_SPANS`)."""
    parts = str(text).split()
    if len(parts) > MAX_SPANS:
        return None
    spans = []
    for part in parts:
        start, dash, end = part.partition("-")
        try:
            a, b = float(start), float(end)
        except ValueError:
            return None
        if not dash or not (math.isfinite(a) and math.isfinite(b)) or a < 0 or b < a:
            return None
        spans.append((a, b))
    return merge_spans(spans)


def spans_text(spans: Iterable[tuple[float, float]]) -> str:
    """Intervals as a ``spans_ROLE`` field holds them (what :func:`parse_spans` reads)."""
    return " ".join(f"{a:g}-{b:g}" for a, b in spans)


def covered_seconds(spans: Iterable[tuple[float, float]], seconds: float | None = None) -> float:
    """Seconds of a clip (of ``seconds``, when known) that the intervals ``spans`` cover, each
    part once (:func:`merge_spans`); parts past the clip's end do not count."""
    end = math.inf if seconds is None or not math.isfinite(seconds) else seconds
    return sum(min(b, end) - a for a, b in merge_spans(spans) if a < end)


def clip_coverage(answer: Mapping[str, Any], role: str, seconds: float | None) -> float | None:
    """The share (0…1) of clip ``role`` (of ``seconds``, ``None``/NaN when unknown) that a log
    (:func:`check_fields`' answer) shows heard: its intervals heard (:data:`SPANS`) over the
    duration where both are known, else the page's own ``cover_ROLE``; ``None`` when the log
    sends neither (an older page) or it is invalid."""
    spans = answer.get(f"spans_{role}")
    known = seconds is not None and math.isfinite(seconds) and seconds > 0
    if spans is not None and known:
        return min(covered_seconds(spans, seconds) / seconds, 1.0)
    cover = answer.get(f"cover_{role}")
    return None if cover is None else float(cover)


def check_fields(
    fields: Mapping[str, Any], limits: Mapping[str, int] = TEXT_LIMITS
) -> tuple[dict[str, Any], list[Problem]]:
    """``(answer, problems)`` of the field checks on what a HIT page sent (name → text).

    ``answer`` holds ``choice`` (``None`` when invalid), the free texts of ``limits``
    (:func:`clean_texts`), the numbers of :data:`PLAY_LOG` (``None`` when invalid) and of
    :data:`LISTEN_LOG` and the merged intervals of :data:`SPANS` (``None`` when invalid or not
    sent)."""
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
    for name in LISTEN_LOG:
        answer[name] = _number(fields, name, problems) if _sent(fields.get(name)) else None
    for name in SPANS:
        text = fields.get(name)
        answer[name] = parse_spans(text) if _sent(text) else None
        if answer[name] is None and _sent(text):
            problems.append(Problem("number", name, str(text).strip()[:20]))
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
    for role in clip_seconds:
        bounds[f"muted_{role}"] = elapsed + SLACK_SECONDS
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
    duration, ``None``/NaN when unknown) in its order: not played to the end at least once,
    heard for less than ``min_coverage`` of the duration less ``slack`` seconds, or covered
    (:func:`clip_coverage`, where the log sends it) for less than ``min_coverage`` of the
    duration less ``slack`` seconds (of :data:`COVER_SLACK` where the duration is unknown). With
    ``elapsed`` (seconds from the hand-out to the answer, as the crowd measured them), first
    every number the log claims beyond them (:func:`_claims`).

    ``slack`` is the error allowed the log's listening time: :data:`SLACK_SECONDS` for a
    crowd's stored answer; the web server applies the page's own rule, :data:`PAGE_SLACK`."""
    problems = [] if elapsed is None else _claims(answer, clip_seconds, elapsed)
    for role, seconds in clip_seconds.items():
        plays, heard = answer.get(f"plays_{role}"), answer.get(f"listen_{role}")
        cover = clip_coverage(answer, role, seconds)
        if plays is not None and plays < 1:
            problems.append(Problem("unplayed", role))
        elif (
            heard is not None
            and seconds is not None
            and math.isfinite(seconds)
            and heard + slack < min_coverage * seconds
        ):
            problems.append(Problem("short", role, heard=heard, seconds=seconds))
        elif cover is not None and _uncovered(cover, seconds, min_coverage, slack):
            known = seconds if seconds is not None and math.isfinite(seconds) else math.nan
            problems.append(Problem("uncovered", role, heard=cover, seconds=known))
    return problems


def _uncovered(cover: float, seconds: float | None, min_coverage: float, slack: float) -> bool:
    if seconds is not None and math.isfinite(seconds) and seconds > 0:
        return cover * seconds + slack < min_coverage * seconds
    return cover + COVER_SLACK < min_coverage


def coverages(
    answer: Mapping[str, Any], clip_seconds: Mapping[str, float | None]
) -> dict[str, float | None]:
    """Role → :func:`clip_coverage` of every clip of ``clip_seconds``."""
    return {role: clip_coverage(answer, role, s) for role, s in clip_seconds.items()}


def stored_log(
    answer: Mapping[str, Any], clip_seconds: Mapping[str, float | None]
) -> dict[str, Any]:
    """The play log as stored with an answer (under ``fields`` of its raw record): the numbers
    of :data:`PLAY_LOG` (invalid: 0), and, where sent, those of :data:`LISTEN_LOG` with each
    ``cover_ROLE`` as judged (:func:`clip_coverage`) and the merged intervals of :data:`SPANS`
    as text."""
    log: dict[str, Any] = {name: float(answer.get(name) or 0.0) for name in PLAY_LOG}
    roles = dict.fromkeys([*ROLES, *clip_seconds])
    cover = {role: clip_coverage(answer, role, clip_seconds.get(role)) for role in roles}
    for name in LISTEN_LOG:
        role = name.partition("_")[2]
        value = cover.get(role) if name.startswith("cover_") else answer.get(name)
        if value is not None:
            log[name] = round(float(value), 4)
    for name in SPANS:
        if answer.get(name) is not None:
            log[name] = spans_text(answer[name])
    return log


def listening_record(
    fields: Mapping[str, Any],
    clip_seconds: Mapping[str, float | None] | None = None,
    *,
    min_coverage: float = 0.9,
) -> tuple[float, bool | None]:
    """``(coverage, heard)`` of a stored play log (``fields``, name → number or text, as an
    answer's raw record or a results file holds it): the mean share of the clips covered
    (:func:`clip_coverage`; NaN when the log does not tell it for every clip) and whether every
    clip was heard by :func:`check_listening` with :data:`SLACK_SECONDS` (``None``: no play log
    at all). ``clip_seconds``: role → duration (default: :data:`ROLES`, unknown)."""
    seconds = dict.fromkeys(ROLES) if clip_seconds is None else clip_seconds
    if not any(_sent(fields.get(f"plays_{role}")) for role in seconds):
        return math.nan, None
    answer, _ = check_fields({**fields, "choice": "A"}, {})
    shares = list(coverages(answer, seconds).values())
    mean = math.nan if any(c is None for c in shares) else sum(shares) / len(shares)
    heard = not check_listening(answer, seconds, min_coverage=min_coverage)
    return mean, heard


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
    uncovered = [f"{p.name} {p.heard:.0%}" for p in problems if p.kind == "uncovered"]
    if uncovered:
        lines.append(
            "clips not heard through (share heard at normal speed and volume: "
            f"{', '.join(uncovered)})"
        )
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
    and the play log as stored (:func:`stored_log`: invalid numbers of :data:`PLAY_LOG` as 0,
    the proof of listening where sent). ``problems`` is empty when the answer may count."""
    answer, found = check_fields(fields, limits)
    seconds = dict.fromkeys(ROLES) if clip_seconds is None else clip_seconds
    found += check_listening(answer, seconds, min_coverage=min_coverage)
    texts = {name: answer[name] for name in ("choice", *limits)}
    return {**texts, **stored_log(answer, seconds)}, reasons(found)
