"""Attention checks: pairs whose answer is known, mixed into a batch.

Seed 002 §4.2 found careless workers judging candidates "more similar to the query than the
query itself, in cases where it was clearly different". A check asks exactly that: the query's
own clip (``x = query``) against a candidate from the query's least similar group known so far
(any candidate before the first verdicts), so the expected verdict is ``+1`` (x more similar).
Checks look like any other pair to a worker (same number of answers, random A/B side) and are
shuffled among the batch's pairs; their verdicts never enter the sort (``kind = 'check'``), and
:mod:`crowdprefs.quality.review` rejects answers that prefer the candidate to the query itself.

Configured by the ``[checks]`` section: ``share`` (checks per sorting pair, rounded up; default
0, off) and ``max_per_batch``. With no checks a batch is exactly what it would be without this
module.
"""

from __future__ import annotations

import math
import sqlite3
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

import numpy as np

from crowdprefs.errors import InputError

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project


@dataclass(frozen=True)
class CheckSettings:
    """The ``[checks]`` section."""

    share: float = 0.0
    max_per_batch: int = 50

    def __post_init__(self) -> None:
        if not 0 <= self.share <= 1 or self.max_per_batch < 0:
            raise InputError("[checks] share must be in [0, 1] and max_per_batch ≥ 0")

    @classmethod
    def from_project(cls, project: Project) -> CheckSettings:
        section = project.section("checks")
        unknown = set(section) - {f.name for f in fields(cls)}
        if unknown:
            raise InputError(f"unknown [checks] setting(s): {', '.join(sorted(unknown))}")
        return cls(**section)

    def count(self, sorting_pairs: int) -> int:
        """How many checks a batch of ``sorting_pairs`` gets: ⌈share × pairs⌉, capped."""
        return min(self.max_per_batch, math.ceil(self.share * sorting_pairs - 1e-9))


def plan_checks(project: Project, iteration: int, queries: list[str]) -> list[tuple[str, str]]:
    """``(query, candidate)`` for the batch's checks, seeded by the project and iteration.

    ``queries`` lists the batch's sorting pairs' queries (one entry per pair), so checks go to
    queries in proportion to their share of the batch; each candidate is drawn from the query's
    least similar group known so far.
    """
    from crowdprefs.campaign.driver import sort_states

    count = CheckSettings.from_project(project).count(len(queries))
    if count == 0:
        return []
    rng = np.random.default_rng([project.seed, iteration, 0xC4EC])
    states = sort_states(project)
    chosen = rng.choice(np.asarray(queries, dtype=object), size=count, replace=True)
    planned: list[tuple[str, str]] = []
    for query in chosen:
        groups = states[query].groups()
        pool = [doc for group in reversed(groups) for doc in group if (query, doc) not in planned]
        last = [doc for doc in groups[-1] if (query, doc) not in planned] if groups else []
        options = last or pool
        if options:
            planned.append((query, str(options[int(rng.integers(len(options)))])))
    return planned


def add_checks(conn: sqlite3.Connection, project: Project, iteration: int, wanted: int) -> int:
    """Insert the batch's checks (inside the caller's transaction) and reshuffle its order.

    Returns how many checks were added (0 leaves the batch untouched).
    """
    queries = [
        row[0]
        for row in conn.execute(
            "SELECT query FROM pairs WHERE iteration = ? AND kind = 'sort' ORDER BY position",
            (iteration,),
        )
    ]
    planned = plan_checks(project, iteration, queries)
    if not planned:
        return 0
    rng = np.random.default_rng([project.seed, iteration, 0xC4ED])
    a_is_x = rng.integers(0, 2, len(planned))
    first = len(queries)
    conn.executemany(
        "INSERT INTO pairs (iteration, query, x, y, a_is_x, position, kind, expected,"
        " answers_wanted) VALUES (?, ?, ?, ?, ?, ?, 'check', 1, ?)",
        [
            (iteration, query, query, document, int(a), first + i, wanted)
            for i, ((query, document), a) in enumerate(zip(planned, a_is_x, strict=True))
        ],
    )
    ids = [
        row[0]
        for row in conn.execute(
            "SELECT pair_id FROM pairs WHERE iteration = ? ORDER BY position", (iteration,)
        )
    ]
    order = rng.permutation(len(ids))
    conn.executemany(
        "UPDATE pairs SET position = ? WHERE pair_id = ?",
        [(int(p), pid) for p, pid in zip(order, ids, strict=True)],
    )
    return len(planned)
