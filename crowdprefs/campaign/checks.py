"""Attention checks: pairs whose answer is known, mixed into a batch.

The preference-judgments paper §4.2 found careless workers judging candidates "more similar to the
query than the query itself, in cases where it was clearly different". A check asks exactly that:
the query's own clip (``x = query``) against a candidate from the query's least similar group known
so far (any candidate before the first verdicts), so the expected verdict is ``+1`` (x more
similar). Checks look like any other pair to a worker (same number of answers, random A/B side) and
are shuffled among the batch's pairs; their verdicts never enter the sort (``kind = 'check'``), and
:mod:`crowdprefs.quality.review` rejects answers that prefer the candidate to the query itself.

Configured by the ``[checks]`` section: ``share`` (checks per sorting pair, rounded up; default
0, off) and ``max_per_batch``. With no checks a batch is exactly what it would be without this
module.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import lazy_loader

from crowdprefs.campaign.settings import check_values

np = lazy_loader.load("numpy")  # imported on first use
pd = lazy_loader.load("pandas")  # imported on first use

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project
    from crowdprefs.campaign.sorting import SortState


@dataclass(frozen=True)
class CheckSettings:
    """The ``[checks]`` section."""

    share: float = 0.0
    max_per_batch: int = 50

    def __post_init__(self) -> None:
        check_values("checks", self)

    @classmethod
    def from_project(cls, project: Project) -> CheckSettings:
        return cls(**project.section("checks"))  # checked against the schema at open

    def count(self, sorting_pairs: int) -> int:
        """How many checks a batch of ``sorting_pairs`` gets: ⌈share × pairs⌉, capped."""
        return min(self.max_per_batch, math.ceil(self.share * sorting_pairs - 1e-9))


def plan_checks(
    project: Project,
    iteration: int,
    queries: list[str],
    states: Mapping[str, SortState],
    asked: frozenset[tuple[str, str]] = frozenset(),
) -> list[tuple[str, str]]:
    """``(query, candidate)`` for the batch's checks, seeded by the project and iteration.

    ``queries`` lists the batch's sorting pairs' queries (one entry per pair, in asking order),
    so checks go to queries in proportion to their share of the batch; each candidate is drawn
    from the query's least similar group known so far (``states``: each query's sort state).
    A query may be one of its own candidates: a check never pairs it with itself, nor with a
    candidate ``asked`` already pairs with it as a sorting pair (``(query, candidate)``).
    """
    count = CheckSettings.from_project(project).count(len(queries))
    if count == 0:
        return []
    rng = np.random.default_rng([project.seed, iteration, 0xC4EC])
    chosen = rng.choice(np.asarray(queries, dtype=object), size=count, replace=True)
    planned: list[tuple[str, str]] = []
    for query in chosen:
        groups = states[query].groups()
        taken = {query, *(doc for q, doc in (*planned, *asked) if q == query)}
        pool = [doc for group in reversed(groups) for doc in group if doc not in taken]
        last = [doc for doc in groups[-1] if doc not in taken] if groups else []
        options = last or pool
        if options:
            planned.append((query, str(options[int(rng.integers(len(options)))])))
    return planned


def add_checks(
    project: Project, iteration: int, pairs: pd.DataFrame, states: Mapping[str, SortState]
) -> pd.DataFrame:
    """The batch's sorting ``pairs`` (``query, x, y, a_is_x, position, answers_wanted``) with
    its checks appended (``kind = 'check'``, ``expected = 1``) and every pair given a new,
    shuffled position; the pairs unchanged when the batch gets no checks.
    """
    ordered = pairs.sort_values("position", kind="stable")
    query, x, y = (ordered[c].to_numpy() for c in ("query", "x", "y"))
    itself = (x == query) | (y == query)  # sorting pairs of a query among its own candidates
    asked = frozenset(zip(query[itself], np.where(x == query, y, x)[itself], strict=True))
    planned = plan_checks(project, iteration, query.tolist(), states, asked)
    if not planned:
        return pairs
    rng = np.random.default_rng([project.seed, iteration, 0xC4ED])
    a_is_x = rng.integers(0, 2, len(planned))
    checks = pd.DataFrame(
        {
            "query": [query for query, _ in planned],
            "x": [query for query, _ in planned],
            "y": [document for _, document in planned],
            "a_is_x": a_is_x.astype(int),
            "kind": "check",
            "expected": 1,
            "answers_wanted": int(pairs["answers_wanted"].iloc[0]),
        }
    )
    batch = pd.concat([pairs, checks], ignore_index=True)
    # the k-th pair in asking order (sorting pairs by position, then the checks) moves to order[k]
    in_order = np.concatenate([ordered.index.map(pairs.index.get_loc), np.arange(len(checks))])
    in_order[len(ordered) :] += len(pairs)
    order = rng.permutation(len(batch))
    position = np.empty(len(batch), dtype=int)
    position[in_order] = order
    return batch.assign(position=position)
