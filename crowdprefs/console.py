"""The shared rich consoles and progress bars (all user-facing output goes through here)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

T = TypeVar("T")

console = Console()
err_console = Console(stderr=True)


def make_progress(*, transient: bool = True) -> Progress:
    """A progress bar on stderr (so stdout stays clean for tables, CSV and JSON)."""
    return Progress(
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err_console,
        transient=transient,
    )


def track(items: Iterable[T], description: str, total: int | None = None) -> Iterator[T]:
    """Iterate over ``items`` showing a progress bar on stderr."""
    with make_progress() as progress:
        yield from progress.track(items, total=total, description=description)
