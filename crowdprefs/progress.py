"""Progress bars and notes for long library operations, on stderr (stdout stays clean for
tables, CSV and JSON). A core utility: the library reports through it, the CLI shows it."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from rich.console import Console
from rich.markup import escape as escape_markup
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

T = TypeVar("T")

#: The stream progress and notes go to.
stderr = Console(stderr=True)

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def escape(text: str) -> str:
    """Untrusted text (names, worker text, paths) made safe to print on a terminal: control
    characters (terminal escape sequences among them) shown as ``\\x1b``-style codes, rich
    markup escaped (rich's own ``escape`` leaves control characters in)."""
    visible = _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)
    return escape_markup(visible)


#: Seconds between the plain progress lines written where stderr is not a terminal, unless
#: ``CROWDPREFS_PROGRESS_SECONDS`` says otherwise (0: none).
LINE_SECONDS = 10.0


def line_seconds() -> float:
    """The seconds between plain progress lines (:data:`LINE_SECONDS`, or the variable's)."""
    text = os.environ.get("CROWDPREFS_PROGRESS_SECONDS", "")
    try:
        return max(0.0, float(text)) if text.strip() else LINE_SECONDS
    except ValueError:
        return LINE_SECONDS


class _Progress(Progress):
    """A rich progress bar that, where stderr is not a terminal (a log file, a batch job, a
    pipe), writes a plain line per task every :func:`line_seconds` instead of nothing; work
    shorter than that writes no line."""

    def __init__(self, *columns, **options) -> None:
        super().__init__(*columns, **options)
        every = line_seconds()
        self._every = every if every > 0 and not self.console.is_terminal else None
        self._last: dict[TaskID, float] = {}

    def start(self) -> None:
        super().start()
        if self not in _SHOWN:
            _SHOWN.append(self)

    def stop(self) -> None:
        if self in _SHOWN:
            _SHOWN.remove(self)
        super().stop()

    def add_task(self, description: str, *args, **kwargs) -> TaskID:
        task = super().add_task(description, *args, **kwargs)
        self._last[task] = time.monotonic()
        return task

    def update(self, task_id: TaskID, **kwargs) -> None:
        super().update(task_id, **kwargs)
        self._line(task_id)

    def advance(self, task_id: TaskID, advance: float = 1) -> None:
        super().advance(task_id, advance)
        self._line(task_id)

    def _line(self, task_id: TaskID) -> None:
        now = time.monotonic()
        if self._every is None or now - self._last.get(task_id, now) < self._every:
            return
        self._last[task_id] = now
        task = self._tasks[task_id]
        total = f"/{task.total:.0f}" if task.total is not None else ""
        description = Text.from_markup(task.description).plain
        self.console.print(
            f"{escape(description)}: {task.completed:.0f}{total} ({task.elapsed or 0:.0f} s)",
            highlight=False,
            soft_wrap=True,
        )


_SHOWN: list[_Progress] = []
"""The progress bars on screen (each refreshed by a thread of its own), in the order they
started: a bar started while another shows is drawn inside it."""


@contextmanager
def paused() -> Iterator[None]:
    """Take the progress bars off the screen for the block, so that no refresh thread runs in
    it (a process may then fork safely), and put them back after, in the order they started:
    an inner bar restarted first would hold the outer one, which holds it (rich then recurses
    without end)."""
    shown = list(_SHOWN)
    for bar in reversed(shown):
        bar.stop()
    try:
        yield
    finally:
        for bar in shown:
            bar.start()


def make_progress(*, transient: bool = True) -> Progress:
    """A progress bar on stderr (plain lines every :func:`line_seconds` where stderr is not a
    terminal)."""
    return _Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=stderr,
        transient=transient,
    )


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate over ``items`` showing a progress bar on stderr."""
    with make_progress() as progress:
        yield from progress.track(items, total=total, description=description)


_HEARD: list[list[tuple[str, str]]] = []


@contextmanager
def notes_heard() -> Iterator[list[tuple[str, str]]]:
    """The notes printed inside the block, as ``(message, style)`` (for a report kept to be
    shown again, notes included: ``status``)."""
    heard: list[tuple[str, str]] = []
    _HEARD.append(heard)
    try:
        yield heard
    finally:
        _HEARD.remove(heard)


def note(message: str, style: str = "yellow") -> None:
    """One line on stderr for something the user should know (``message`` is shown as text,
    never as markup)."""
    for heard in _HEARD:
        heard.append((message, style))
    stderr.print(f"[{style}]{escape(message)}[/]", highlight=False, soft_wrap=True)
