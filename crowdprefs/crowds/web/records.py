"""The web crowd's records, as the store reads and writes them
(:mod:`crowdprefs.crowds.web.store`): a judge, a headphone screen, an assignment, what a
hand-out gives, a question, a judge's session, and what became of a posted answer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import lazy_loader

np = lazy_loader.load("numpy")  # imported on first use

Outcome = Literal["stored", "duplicate", "gone", "blocked"]
Chooser = Callable[["np.ndarray", "np.ndarray", "np.ndarray"], int]
"""``(pair_id, filled, wanted) → index`` of the pair to hand out, ``-1`` for none."""


@dataclass(frozen=True)
class WebJudge:
    """A judge of the web crowd (``source``: ``invite`` or ``platform``)."""

    judge_id: str
    source: str
    completion_code: str
    token_hash: str


@dataclass(frozen=True)
class WebScreen:
    """A judge's headphone screen: started with a secret ``seed`` (it decides which sound of
    each trial carries the tone), ``trials`` and the ``pass_mark`` of that moment; ``answers``
    (JSON), ``correct`` and ``passed`` once answered (``None`` before)."""

    judge_id: str
    seed: int
    trials: int
    pass_mark: int
    csrf: str
    started_at: str
    answers: str | None
    correct: int | None
    passed: bool | None
    finished_at: str | None


@dataclass(frozen=True)
class WebAssignment:
    """One pair handed to one judge."""

    assignment_id: str
    pair_id: int
    judge_id: str
    csrf: str
    issued_at: str
    expires_at: str
    status: str


@dataclass(frozen=True)
class HandOut:
    """What a new assignment gets (its id, CSRF token and times) and the judge's caps:
    ``limit`` questions in all and ``batch_limit`` in the open batch (0: no cap); ``choose``
    picks the pair among those the judge never had."""

    assignment_id: str
    csrf: str
    issued_at: str
    expires_at: str
    limit: int
    batch_limit: int
    choose: Chooser


@dataclass(frozen=True)
class WebQuestion:
    """An assignment with what answering it needs: its pair (a ``pairs`` row with the clips'
    durations ``query_seconds, x_seconds, y_seconds``, ``None`` while unknown) and how many
    questions its judge has answered."""

    assignment: WebAssignment
    pair: dict[str, Any]
    answered: int


@dataclass(frozen=True)
class WebSession:
    """What one request of a judge needs, read at once: the ``judge`` holding the session's
    token (``None``: no one), the seconds its client address must ``wait`` before trying a token
    again (0: now) and, when asked for, the judge's own ``question`` (``None``: unknown, or
    someone else's). Its pair also carries the stored clips ``query_audio, x_audio, y_audio``
    (the paths or URLs of the query and of ``x`` and ``y``; ``None`` where unknown)."""

    judge: WebJudge | None
    wait: float
    question: WebQuestion | None = None


@dataclass(frozen=True)
class Posted:
    """What became of a posted answer: ``outcome``; the judge's ``next`` assignment (``None``:
    nothing left for them, or the answer was refused); whether the answer's batch now has all
    its answers (``batch_complete``)."""

    outcome: Outcome
    next: WebAssignment | None
    batch_complete: bool
