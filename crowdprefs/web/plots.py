"""The researcher page's pictures: small inline SVG drawn by hand from frames.

Each function returns one ``<svg>`` element (a title, axis labels, an accessible ``<title>``
and ``<desc>``) or, without data, one ``<p>`` saying so. They run on the server's event loop:
a few rectangles, one polyline and some text, never a plotting library. Every text is escaped
(worker ids are untrusted) and the drawing uses presentation attributes (``fill``,
``stroke``) and classes of ``web_page.css`` only: no ``style`` attribute and no script, as the
page's Content-Security-Policy allows (:func:`crowdprefs.web.security.security_headers`).
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

WIDTH = 640
"""Width of every picture (its ``viewBox``; the page's CSS scales it down on narrow screens)."""
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 36, 48
"""Margins around the plotting area, in pixels."""
MAX_BUCKETS = 120
"""Most points of the answers over time (:func:`time_step`)."""
TIME_STEPS = (
    (1, "second"),
    (10, "10 seconds"),
    (60, "minute"),
    (300, "5 minutes"),
    (900, "15 minutes"),
    (3600, "hour"),
    (3 * 3600, "3 hours"),
    (6 * 3600, "6 hours"),
    (86400, "day"),
    (7 * 86400, "week"),
)
"""The steps of the answers over time, in seconds, shortest first."""
AGREEMENT_BINS = 10
"""Bins of the workers' agreement with the verdicts (0 … 1)."""
MAX_WORKERS = 30
"""Workers shown in the listening picture (those with the lowest coverage)."""
MAX_RATIO = 5.0
"""Right end of the listening axis (a longer ratio is drawn to the edge)."""
INK, BAR, DONE, LOW, GRID = "#333", "#1f5fa8", "#2e7d32", "#c0392b", "#ccc"


def _e(text: Any) -> str:
    """``text`` escaped for SVG text and attribute values."""
    return html.escape(str(text), quote=True)


def _n(value: float) -> str:
    """A coordinate with one decimal."""
    return f"{value:.1f}"


def empty(key: str, message: str) -> str:
    """The line standing for picture ``key`` without data."""
    return f'<p class="muted plot-empty" id="plot-{_e(key)}">{_e(message)}</p>'


def _svg(key: str, title: str, desc: str, height: int, body: Iterable[str]) -> str:
    """An ``<svg>`` of :data:`WIDTH` × ``height`` with ``title`` shown and as its accessible
    name, ``desc`` as its description."""
    key = _e(key)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" id="plot-{key}" role="img" '
        f'width="{WIDTH}" height="{height}" viewBox="0 0 {WIDTH} {height}" '
        f'aria-labelledby="plot-{key}-title plot-{key}-desc" font-size="12" fill="{INK}">'
        f'<title id="plot-{key}-title">{_e(title)}</title>'
        f'<desc id="plot-{key}-desc">{_e(desc)}</desc>'
        f'<text x="{LEFT}" y="18" font-size="14" font-weight="bold">{_e(title)}</text>'
        + "".join(body)
        + "</svg>"
    )


def ticks(top: float, count: int = 4) -> list[float]:
    """Round tick values from 0 to at least ``top`` (steps of 1, 2 or 5 × 10ᵏ, at least 1: the
    axes count answers, pairs and workers)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = max(top / count, 1.0)
    power = 10 ** math.floor(math.log10(raw))
    step = next(s * power for s in (1, 2, 5, 10) if s * power >= raw)
    return [i * step for i in range(math.ceil(top / step - 1e-9) + 1)]


def _label(value: float) -> str:
    return f"{value:g}" if value < 1e5 else f"{value:.3g}"


def _y_axis(height: int, top: float, label: str) -> tuple[list[str], float]:
    """Horizontal grid lines and labels of a vertical axis from 0 to the last tick ≥ ``top``,
    its ``label``, and the axis' largest value."""
    marks = ticks(top)
    span, bottom = marks[-1], height - BOTTOM
    parts = []
    for mark in marks:
        y = bottom - (bottom - TOP) * mark / span
        parts.append(
            f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{_n(y)}" y2="{_n(y)}" stroke="{GRID}"/>'
            f'<text x="{LEFT - 6}" y="{_n(y + 4)}" text-anchor="end">{_label(mark)}</text>'
        )
    middle = (TOP + bottom) / 2
    parts.append(
        f'<text x="14" y="{_n(middle)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_n(middle)})">{_e(label)}</text>'
    )
    return parts, span


def _x_label(height: int, label: str) -> str:
    middle = (LEFT + WIDTH - RIGHT) / 2
    return f'<text x="{_n(middle)}" y="{height - 8}" text-anchor="middle">{_e(label)}</text>'


def _bars(
    key: str,
    title: str,
    desc: str,
    bars: list[tuple[str, int, str, str]],
    axes: tuple[str, str],
) -> str:
    """Picture ``key`` (as :func:`_svg`): vertical ``bars`` (label, count, colour, tooltip: its
    ``<title>``) on axes labelled ``axes`` (x, y)."""
    height = 220
    grid, span = _y_axis(height, max(bar[1] for bar in bars), axes[1])
    bottom, slot = height - BOTTOM, (WIDTH - LEFT - RIGHT) / len(bars)
    parts = [*grid, _x_label(height, axes[0])]
    every = max(1, math.ceil(len(bars) / 12))
    for i, (label, count, fill, tip) in enumerate(bars):
        tall = (bottom - TOP) * count / span
        x = LEFT + i * slot
        parts.append(
            f'<rect class="bar" x="{_n(x + slot * 0.1)}" y="{_n(bottom - tall)}" '
            f'width="{_n(slot * 0.8)}" height="{_n(tall)}" fill="{fill}">'
            f"<title>{_e(tip)}</title></rect>"
        )
        if i % every == 0:
            parts.append(
                f'<text x="{_n(x + slot / 2)}" y="{bottom + 16}" text-anchor="middle">'
                f"{_e(label)}</text>"
            )
    return _svg(key, title, desc, height, parts)


# --- the four pictures ----------------------------------------------------------------------


def time_step(span: float) -> tuple[float, str]:
    """The step of the answers over time for ``span`` seconds of answers: the shortest of
    :data:`TIME_STEPS` that draws at most :data:`MAX_BUCKETS` points (whole weeks beyond), in
    seconds, with its name."""
    for seconds, name in TIME_STEPS:
        if span / seconds < MAX_BUCKETS:
            return float(seconds), name
    weeks = math.floor(span / MAX_BUCKETS / TIME_STEPS[-1][0]) + 1
    return float(weeks * TIME_STEPS[-1][0]), f"{weeks} weeks"


def answers_over_time(submitted: pd.Series) -> str:
    """Cumulative answers from the first answer to the last (never beyond: the line ends at
    the last answer's time), one point per step of :func:`time_step` (seconds for a quick
    round, days for a long campaign), from their submission times (UTC)."""
    times = pd.to_datetime(submitted, utc=True, format="ISO8601").dropna()
    if times.empty:
        return empty("time", "No answers yet: nothing to draw over time.")
    start, last = times.min(), times.max()
    elapsed = (times - start).dt.total_seconds().to_numpy()
    span = float(elapsed.max())
    step, unit = time_step(span)
    counts = np.bincount((elapsed // step).astype(np.int64))
    total = np.concatenate([[0], np.cumsum(counts)])
    at = np.minimum(np.arange(len(total)) * step, span)  # each bucket's end, the last at `last`
    height = 240
    grid, span_y = _y_axis(height, float(total[-1]), "answers (cumulative)")
    bottom, right = height - BOTTOM, WIDTH - RIGHT
    xs = LEFT + (right - LEFT) * at / (span or 1.0)
    ys = bottom - (bottom - TOP) * total / span_y
    points = " ".join(f"{_n(x)},{_n(y)}" for x, y in zip(xs, ys, strict=True))
    stamp = "%Y-%m-%d %H:%M:%S" if step < 60 else "%Y-%m-%d %H:%M"
    one = unit if unit[0].isdigit() else f"one {unit}"
    desc = (
        f"{total[-1]} answers from {start:{stamp}} to {last:{stamp}} UTC, "
        f"at most {counts.max()} in {one}."
    )
    parts = [
        *grid,
        f'<polyline class="line" points="{points}" fill="none" stroke="{BAR}" stroke-width="2"/>',
        f'<text x="{LEFT}" y="{bottom + 16}">{start:{stamp}}</text>',
        f'<text x="{right}" y="{bottom + 16}" text-anchor="end">{last:{stamp}}</text>',
        _x_label(height, f"time (UTC), one point per {unit}"),
    ]
    return _svg("time", "Answers over time", desc, height, parts)


def batch_progress(fill: pd.DataFrame, progress: Mapping[str, Any]) -> str:
    """The last batch's pairs by the answers they have (0 … the most any pair wants), from
    :meth:`~crowdprefs.crowds.web.store.WebStore.web_batch_fill`, with the totals of
    :meth:`~crowdprefs.crowds.web.store.WebStore.web_batch_progress`."""
    if progress.get("iteration") is None or fill.empty:
        return empty("batch", "No batch yet: no progress to draw.")
    most = int(fill["answers_wanted"].max())
    have = fill["answers"].clip(upper=most).astype(int).to_numpy()
    counts = np.bincount(have, weights=fill["pairs"].to_numpy(), minlength=most + 1)
    title = (
        f"Batch {progress['iteration']} ({progress.get('status')}): "
        f"{progress.get('answers', 0)} of {progress.get('answers_wanted', 0)} answers"
    )
    desc = (
        f"{progress.get('pairs_complete', 0)} of {progress.get('pairs', 0)} pairs complete, "
        f"{progress.get('open_assignments', 0)} questions open; bars: pairs by the answers "
        f"they have, of {most} wanted."
    )
    bars = [
        (str(k), int(c), DONE if k == most else BAR, f"{int(c)} pairs with {k} answers")
        for k, c in enumerate(counts)
    ]
    axes = ("answers stored per pair (green: all wanted)", "pairs")
    return _bars("batch", title, desc, bars, axes)


def agreement_histogram(profiles: pd.DataFrame) -> str:
    """The workers' agreement with the verdicts (``verdict_agreement`` of
    :func:`~crowdprefs.quality.flags.worker_profiles`, 0 … 1) in :data:`AGREEMENT_BINS` bins."""
    values = profiles["verdict_agreement"].dropna().astype(float).clip(0.0, 1.0)
    if values.empty:
        return empty("agreement", "No worker has answered a pair with a verdict yet.")
    counts, edges = np.histogram(values, bins=AGREEMENT_BINS, range=(0.0, 1.0))
    bars = [
        (f"{lo:.1f}", int(c), BAR, f"{c} workers agree {lo:.1f}–{lo + 0.1:.1f}")
        for lo, c in zip(edges[:-1], counts, strict=True)
    ]
    desc = (
        f"{len(values)} workers; median agreement {values.median():.2f} "
        "(1: always the verdict, ½: always equal, 0: always the other side)."
    )
    axes = ("agreement with the verdicts (bin from)", "workers")
    return _bars("agreement", "Workers' agreement with the verdicts", desc, bars, axes)


def listening_coverage(profiles: pd.DataFrame, limit: int = MAX_WORKERS) -> str:
    """Per worker, the median of work time over the clips' length (``listen_ratio`` of
    :func:`~crowdprefs.quality.flags.worker_profiles`): the ``limit`` lowest as bars, a line
    at 1 (below it a worker answered before the clips could have played through)."""
    ratios = profiles["listen_ratio"].dropna().astype(float)
    if ratios.empty:
        return empty("listening", "No answer with known clip lengths yet: no listening to draw.")
    shown = ratios.sort_values(kind="stable").head(limit)
    row, height = 16, TOP + BOTTOM + 16 * len(shown)
    axis = max(2.0, min(MAX_RATIO, math.ceil(float(shown.max()))))
    left = LEFT + 86  # room for the workers' ids
    width, bottom = WIDTH - RIGHT - left, height - BOTTOM

    def x(value: float) -> float:
        return left + width * min(value, axis) / axis

    middle = (TOP + bottom) / 2
    parts = [
        f'<text x="14" y="{_n(middle)}" text-anchor="middle" '
        f'transform="rotate(-90 14 {_n(middle)})">worker</text>'
    ]
    for mark in ticks(axis):
        if mark <= axis:
            parts.append(
                f'<line x1="{_n(x(mark))}" x2="{_n(x(mark))}" y1="{TOP}" y2="{bottom}" '
                f'stroke="{GRID}"/><text x="{_n(x(mark))}" y="{bottom + 16}" '
                f'text-anchor="middle">{_label(mark)}</text>'
            )
    for i, (worker, ratio) in enumerate(shown.items()):
        y = TOP + 8 + i * row
        name = str(worker) if len(str(worker)) <= 18 else str(worker)[:17] + "…"
        parts.append(
            f'<text x="{left - 6}" y="{_n(y + 11)}" text-anchor="end">{_e(name)}</text>'
            f'<rect class="bar" x="{left}" y="{_n(y + 2)}" width="{_n(x(ratio) - left)}" '
            f'height="{row - 4}" fill="{LOW if ratio < 1 else BAR}">'
            f"<title>{_e(worker)}: {ratio:.2f}</title></rect>"
        )
    parts.append(
        f'<line x1="{_n(x(1.0))}" x2="{_n(x(1.0))}" y1="{TOP}" y2="{bottom}" stroke="{INK}" '
        'stroke-dasharray="4 3"/>'
    )
    parts.append(_x_label(height, "median work time ÷ the clips' length (red: below 1)"))
    some = f"the {len(shown)} lowest of {len(ratios)}" if len(shown) < len(ratios) else "all"
    title = f"Listening coverage ({some} workers)"
    desc = (
        f"{len(ratios)} workers with known clip lengths; "
        f"{int((ratios < 1).sum())} answered faster than the clips last (ratio below 1)."
    )
    return _svg("listening", title, desc, height, parts)
