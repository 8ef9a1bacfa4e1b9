"""The campaign's port to the crowds: what every crowd adapter provides, and what the driver
hands a crowd that reviews answers.

Adapters (:mod:`crowdprefs.crowds`) implement :class:`Crowd`: publish a batch's pairs and
collect their answers. Both calls are idempotent and resumable: ``publish`` skips pairs the
crowd already holds and records each one as it is created; ``collect`` stores answers with their
crowd assignment ids, so answers already stored are never stored twice. A crowd that pays for
answers (MTurk) also offers the primitives of :class:`ReviewedCrowd`. The driver runs the
:class:`Review` it is handed after each collection from any crowd (collect → review → replace
rejected or dropped answers), so the adapter never decides what to approve or whom to block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import lazy_loader

np = lazy_loader.load("numpy")  # imported on first use
pd = lazy_loader.load("pandas")  # imported on first use

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project


class Crowd(Protocol):
    """A source of answers for the pairs of a batch.

    An adapter may also offer ``check(project, pairs) -> None``: raise
    :class:`~crowdprefs.errors.InputError` when it cannot answer ``pairs`` (the driver calls it
    before a batch is built for the crowd or published to it, so a refused step writes nothing).
    """

    name: str
    #: A pair offered for fewer answers than this can never be offered this many or more
    #: (MTurk never extends a HIT created with fewer than 10 assignments to 10); None: no limit.
    extension_barrier: int | None

    def publish(self, project: Project, pairs: pd.DataFrame) -> int:
        """Offer ``pairs`` (rows of the ``pairs`` table not yet published here); return how many."""
        ...

    def collect(self, project: Project, pairs: pd.DataFrame) -> int:
        """Store the answers available for ``pairs``; return how many were new."""
        ...


@runtime_checkable
class ReviewedCrowd(Crowd, Protocol):
    """A crowd whose answers are reviewed: the calls a review applies (each idempotent)."""

    def block_worker(self, worker_id: str, reason: str) -> None: ...

    def reject_assignment(self, assignment_id: str, reason: str) -> None: ...

    def approve_assignment(self, assignment_id: str) -> None: ...

    def add_assignments(self, hit_id: str, before: int, after: int) -> None: ...


class Review(Protocol):
    """One review pass over a batch's answers from ``crowd`` (approve, reject, block, drop,
    replace; a crowd that is not a :class:`ReviewedCrowd` only blocks and drops); returns how
    many of each it did, always with the same keys (``replaced``: answers asked again)."""

    def __call__(self, project: Project, crowd: Crowd, iteration: int) -> dict[str, int]: ...


def reachable_size(have, wanted, barrier: int | None) -> np.ndarray:
    """How far HITs of ``have`` assignments can grow toward ``wanted`` (vectorised): to
    ``barrier − 1`` at most when they have fewer than ``barrier``."""
    have, wanted = np.asarray(have), np.asarray(wanted)
    if barrier is None:
        return wanted
    return np.where(have < barrier, np.minimum(wanted, barrier - 1), wanted)


def score_of(choice: pd.Series, a_is_x: pd.Series) -> pd.Series:
    """An answer's score from x's point of view: +1 x preferred, 0 equal, −1 y preferred."""
    side = choice.map({"A": 1, "B": -1, "equal": 0})
    return (side * a_is_x.map({1: 1, 0: -1})).astype(int)
