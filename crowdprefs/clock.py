"""The clock every stored timestamp is read from: UTC, as ISO 8601 text to the millisecond.

A core utility (it imports nothing of crowdprefs) so that what only needs the time, such as the
simulated crowd's answer times, never loads the store.
"""

from __future__ import annotations

from datetime import UTC, datetime


def now() -> str:
    """The current UTC time as ISO 8601 text (how every timestamp is stored)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")
