"""The judges' site's clock: what a server process takes for *now* when it hands out a question,
takes an answer (and the seconds since the hand-out) or starts and ends a headphone check.

A clock is any callable returning an aware UTC :class:`~datetime.datetime`; the application is
given one (:func:`~crowdprefs.web.app.create_app`'s ``clock``), and its handlers read it once per
request. A real site tells the wall clock's time (:func:`wall_clock`); a simulation may run its
site on a :class:`TimeLapse`, so that simulated judges take realistic times in a fraction of
them, and the listening check and the audit judge those times.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from crowdprefs.errors import InputError

Clock = Callable[[], datetime]
"""A site's clock: ``() → now`` (aware, UTC)."""


def wall_clock() -> datetime:
    """The wall clock's time (UTC): a real site's clock."""
    return datetime.now(UTC)


class TimeLapse:
    """A clock ``speed`` times faster than the wall clock, from its creation on (the time then
    is its start). For simulations only (the demo): a real site's times are its judges'."""

    def __init__(self, speed: float) -> None:
        if not speed > 0:
            raise InputError(f"a time lapse needs a speed above 0, got {speed}")
        self.speed = speed
        self.start, self.wall = datetime.now(UTC), time.monotonic()

    def __call__(self) -> datetime:
        return self.start + timedelta(seconds=(time.monotonic() - self.wall) * self.speed)


def stamp(at: datetime) -> str:
    """``at`` as the state stores times: ISO 8601, UTC, milliseconds."""
    return at.astimezone(UTC).isoformat(timespec="milliseconds")
