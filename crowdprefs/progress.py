"""Progress bars and notes for long library operations, on stderr (stdout stays clean for
tables, CSV and JSON). A core utility: the library reports through it, the CLI shows it."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import TypeVar

from rich.console import Console
from rich.markup import escape as escape_markup
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

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


def make_progress(*, transient: bool = True) -> Progress:
    """A progress bar on stderr."""
    return Progress(
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


def note(message: str, style: str = "yellow") -> None:
    """One line on stderr for something the user should know (``message`` is shown as text,
    never as markup)."""
    stderr.print(f"[{style}]{escape(message)}[/]", highlight=False, soft_wrap=True)
