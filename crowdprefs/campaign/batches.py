"""The one batch state machine: ``built → published → collected → aggregated``.

A batch (one iteration) is *built* with its pairs, *published* once its crowd holds every pair,
*collected* once every pair has the answers it wants and *aggregated* once every pair has its
verdict. Answers imported from a results file can also fill a batch no crowd published
(``built → collected``). A batch never goes back.

The rules live here; :meth:`crowdprefs.campaign.store.Store.advance_batch` applies them inside
the transaction that changes the status, against the status stored at that moment, so two
processes can never move one batch two ways.
"""

from __future__ import annotations

from typing import Literal

from crowdprefs.errors import StateError

BatchStatus = Literal["built", "published", "collected", "aggregated"]
STATUSES: tuple[BatchStatus, ...] = ("built", "published", "collected", "aggregated")
TRANSITIONS: dict[str, tuple[str, ...]] = {
    "built": ("published", "collected"),
    "published": ("collected",),
    "collected": ("aggregated",),
    "aggregated": (),
}
"""The statuses each status may move on to."""


def check_transition(iteration: int, current: str, to: str) -> bool:
    """Whether batch ``iteration`` must move from ``current`` to ``to`` (``False``: it is there).

    Raises :class:`StateError` for a status that does not exist, a step back, or a skipped step.
    """
    if to not in STATUSES:
        raise StateError(f"unknown batch status {to!r}: one of {', '.join(STATUSES)}")
    if current == to:
        return False
    if STATUSES.index(to) < STATUSES.index(current):
        raise StateError(f"batch {iteration} is already {current}; it cannot become {to} again")
    if to not in TRANSITIONS[current]:
        needed = STATUSES[STATUSES.index(to) - 1]
        raise StateError(f"batch {iteration} is {current}; it must be {needed} before it is {to}")
    return True
