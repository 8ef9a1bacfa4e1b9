"""The modified QuickSort of the preference-judgments paper (§3.2, Table 1) as a pure function of
the verdicts so far.

A query's candidates start in one segment, in a random order fixed by the project seed. A
segment holds ``todo`` members (still to place) and ``done`` members (former pivots). The pivot
of an open segment is its last ``todo`` member; every other ``todo`` member is compared with it.
On the verdicts, the segment splits (keeping relative order) into

* the *more* segment (members more similar to the query than the pivot; ranks earlier),
* the *equal* segment: ``done`` = (pivot, former pivots...), ``todo`` = members judged equal,
* the *less* segment.

A segment is closed when it has fewer than two ``todo`` members; an equal segment with two or
more ``todo`` members is refined later with a new pivot, and the former pivots stay with it.

With a machine prior (a model's similarity score per candidate, :mod:`crowdprefs.machine.scores`)
the pivot is the ``todo`` member nearest the segment's median score instead (:func:`arranged`:
the upper median of the ``todo`` members ranked by score, ties by initial order), so segments
split evenly. The rule moves that member to the end of ``todo`` when a segment is made, so the
pivot is still the last ``todo`` member and every other part of the sort is unchanged; the prior
is fixed with the project, so the sort stays a pure replay of the verdicts.
When every segment of a query is closed, its list is the left-to-right sequence of segments,
each one a group (group 1 = most similar).

Nothing here keeps state: :func:`replay` rebuilds the segments from the initial order and the
verdicts known so far, splitting every segment whose comparisons are all known, until each open
segment waits for at least one unknown pair. Verdicts already known are reused, so a pair is
never asked twice, and every split moves its pivot from ``todo`` to ``done``: the number of
``todo`` members strictly decreases, so the sort terminates whatever the answers are.

Verdicts are oriented: ``verdicts[(x, y)]`` is ``+1`` when *x* is more similar to the query than
*y*, ``0`` when they are equally similar, ``-1`` when *x* is less similar. The reverse
orientation is inferred (``(y, x)`` is the negation).
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

import lazy_loader

from crowdprefs.rng import counter_uniform

np = lazy_loader.load("numpy")  # imported on first use

Verdicts = Mapping[tuple[Hashable, Hashable], int]
Scores = Mapping[Hashable, float]
"""A query's machine prior: each candidate's similarity score (higher = more similar)."""


def arranged(todo: tuple[Hashable, ...], scores: Scores | None) -> tuple[Hashable, ...]:
    """``todo`` (in initial order) with the prior's pivot moved last: the member of rank
    ``len(todo) // 2`` when ranked by ascending score, ties by their order in ``todo`` (the
    median, the upper one of an even count). Without a prior (or under two members), as given."""
    if scores is None or len(todo) < 2:
        return todo
    ranked = sorted(range(len(todo)), key=lambda i: (scores[todo[i]], i))
    pivot = ranked[len(todo) // 2]
    return (*todo[:pivot], *todo[pivot + 1 :], todo[pivot])


@dataclass(frozen=True)
class Segment:
    """A run of candidates that the sort has not separated yet."""

    done: tuple[Hashable, ...]
    todo: tuple[Hashable, ...]

    @property
    def closed(self) -> bool:
        """Closed when fewer than two members are still to be placed (the preference-judgments paper
        §4.1)."""
        return len(self.todo) < 2

    @property
    def pivot(self) -> Hashable:
        """The last ``todo`` member (the preference-judgments paper §4.2; with a prior, the
        member :func:`arranged` put last)."""
        return self.todo[-1]

    @property
    def members(self) -> tuple[Hashable, ...]:
        return self.done + self.todo

    def comparisons(self) -> list[tuple[Hashable, Hashable]]:
        """The (member, pivot) pairs that split this segment; none once it is closed."""
        if self.closed:
            return []
        pivot = self.pivot
        return [(member, pivot) for member in self.todo[:-1]]


@dataclass(frozen=True)
class SortState:
    """Where one query's sort stands: its segments and the pairs it needs next."""

    segments: tuple[Segment, ...]
    needed: tuple[tuple[Hashable, Hashable], ...]
    rounds: int

    @property
    def closed(self) -> bool:
        return not self.needed

    @property
    def size(self) -> int:
        """How many candidates the query has."""
        return sum(len(s.done) + len(s.todo) for s in self.segments)

    @property
    def open_segments(self) -> int:
        return sum(not s.closed for s in self.segments)

    def groups(self) -> list[tuple[Hashable, ...]]:
        """The partially ordered list: one group per segment, most similar first."""
        return [s.members for s in self.segments]

    def to_json(self) -> str:
        """The state as compact JSON (documents must be JSON scalars, e.g. strings): each
        segment as ``[done, todo, unknown]``, ``unknown`` the positions in ``todo`` of the
        members whose comparison with the pivot is needed, so no document is written twice."""
        needed = set(self.needed)
        segments = [
            [
                list(s.done),
                list(s.todo),
                [i for i, member in enumerate(s.todo[:-1]) if (member, s.todo[-1]) in needed],
            ]
            for s in self.segments
        ]
        return json.dumps({"segments": segments, "rounds": self.rounds}, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> SortState:
        """The state :meth:`to_json` wrote (its needed pairs in segment order, as
        :func:`replay` lists them)."""
        data = json.loads(text)
        segments = []
        needed: list[tuple[Hashable, Hashable]] = []
        for done, todo, unknown in data["segments"]:
            segments.append(Segment(tuple(done), tuple(todo)))
            if unknown:
                pivot = todo[-1]
                needed.extend([(todo[i], pivot) for i in unknown])
        return cls(tuple(segments), tuple(needed), data["rounds"])


@dataclass(frozen=True)
class StateCounts:
    """How far one query's sort is, in counts: what a progress report needs of a
    :class:`SortState`, read from its JSON without rebuilding segments or pairs."""

    size: int
    """How many candidates the query has."""
    open_segments: int
    needed: int
    """How many pairs the sort needs next."""

    @property
    def closed(self) -> bool:
        return not self.needed

    @classmethod
    def of(cls, state: SortState) -> StateCounts:
        return cls(state.size, state.open_segments, len(state.needed))

    @classmethod
    def from_json(cls, text: str) -> StateCounts:
        """The counts of the state :meth:`SortState.to_json` wrote."""
        segments = json.loads(text)["segments"]
        return cls(
            size=sum(len(done) + len(todo) for done, todo, _ in segments),
            open_segments=sum(len(todo) >= 2 for _, todo, _ in segments),
            needed=sum(len(unknown) for _, _, unknown in segments),
        )


def lookup(verdicts: Verdicts, x: Hashable, y: Hashable) -> int | None:
    """The verdict of *x* against *y*, using the reverse orientation when needed."""
    verdict = verdicts.get((x, y))
    if verdict is not None:
        return verdict
    verdict = verdicts.get((y, x))
    return None if verdict is None else -verdict


def split(
    segment: Segment, verdicts: Verdicts, scores: Scores | None = None
) -> list[Segment] | None:
    """Split an open segment on its pivot, or ``None`` while a comparison is unknown; each new
    part's ``todo`` is :func:`arranged` by the prior ``scores``."""
    pivot = segment.pivot
    more: list[Hashable] = []
    equal: list[Hashable] = []
    less: list[Hashable] = []
    get = verdicts.get
    for member in segment.todo[:-1]:
        verdict = get((member, pivot))
        if verdict is None:
            verdict = get((pivot, member))
            if verdict is None:
                return None
            verdict = -verdict
        (more if verdict > 0 else less if verdict < 0 else equal).append(member)
    parts = [Segment((), arranged(tuple(more), scores))] if more else []
    parts.append(Segment((pivot, *segment.done), arranged(tuple(equal), scores)))
    if less:
        parts.append(Segment((), arranged(tuple(less), scores)))
    return parts


def replay(
    initial_order: Sequence[Hashable], verdicts: Verdicts, scores: Scores | None = None
) -> SortState:
    """Rebuild a query's segments from its initial order and the verdicts known so far (and the
    machine prior's ``scores``, which choose the pivots when given: :func:`arranged`).

    Splits every segment whose comparisons are all known, repeatedly, until each open segment
    needs at least one unknown pair; ``rounds`` counts the passes that split something.
    """
    segments = [Segment((), arranged(tuple(initial_order), scores))]
    rounds = 0
    while True:
        progressed = False
        needed: list[tuple[Hashable, Hashable]] = []
        next_segments: list[Segment] = []
        for segment in segments:
            parts = None if segment.closed else split(segment, verdicts, scores)
            if parts is None:
                next_segments.append(segment)
                if not segment.closed:
                    pivot = segment.todo[-1]
                    needed.extend(
                        (member, pivot)
                        for member in segment.todo[:-1]
                        if (member, pivot) not in verdicts and (pivot, member) not in verdicts
                    )
            else:
                next_segments.extend(parts)
                progressed = True
        segments = next_segments
        if not progressed:
            return SortState(tuple(segments), tuple(needed), rounds)
        rounds += 1


def initial_orders(documents: Mapping[str, Sequence[Hashable]], seed: int) -> dict[str, list]:
    """The random initial order of every query's candidates (the preference-judgments paper §4.2),
    fixed by the seed.

    Candidates are sorted by counter-based random keys of (seed, CRC of the query name, position
    in the query), so adding or removing another query never changes this one's order; all
    queries are keyed and sorted in one vectorised pass.
    """
    queries = list(documents)
    sizes = np.array([len(documents[q]) for q in queries], dtype=np.int64)
    starts = np.cumsum(sizes) - sizes
    crc = np.repeat([zlib.crc32(q.encode()) for q in queries], sizes)
    position = np.arange(sizes.sum()) - np.repeat(starts, sizes)
    order = np.lexsort(
        (counter_uniform(seed, crc, position), np.repeat(np.arange(len(queries)), sizes))
    )
    flat = [d for q in queries for d in documents[q]]
    return {
        q: [flat[i] for i in order[start : start + n]]
        for q, start, n in zip(queries, starts.tolist(), sizes.tolist(), strict=True)
    }


def initial_order(documents: Sequence[Hashable], seed: int, query: str) -> list[Hashable]:
    """One query's initial order (see :func:`initial_orders`)."""
    return initial_orders({query: documents}, seed)[query]


def placed(wanted: Sequence[Hashable], seed: int, query: str) -> list[Hashable]:
    """The documents of ``wanted`` in the order to store them so that :func:`initial_order` of
    ``query`` from ``seed`` gives back ``wanted`` (the seeded shuffle keys positions, not
    documents, so it can be inverted): how a project fixes a chosen initial order."""
    positions = initial_order(list(range(len(wanted))), seed, query)
    order: list[Hashable] = [None] * len(wanted)
    for document, position in zip(wanted, positions, strict=True):
        order[position] = document
    return order


def with_first_pivots(
    documents: Mapping[str, Sequence[Hashable]], seed: int, pivots: Mapping[str, Hashable]
) -> dict[str, list[Hashable]]:
    """Each query of ``pivots`` with its ``documents`` placed (:func:`placed`) so that its
    initial order from ``seed`` ends with ``pivots[query]``, its first pivot: the pivot swaps
    places with the member the seed put last, every other member keeps its place."""
    orders = initial_orders({q: documents[q] for q in pivots}, seed)
    for query, order in orders.items():
        at = order.index(pivots[query])
        order[at], order[-1] = order[-1], order[at]
    return {query: placed(order, seed, query) for query, order in orders.items()}


def contradictions(documents: Sequence[Hashable], verdicts: Verdicts) -> list[tuple]:
    """Triples of known verdicts that no weak order satisfies (non-transitive answers).

    With ``V[a, b]`` the verdict of *a* against *b*, the triple (a, b, c) contradicts when
    ``V[a,b]``, ``V[b,c]`` and ``V[a,c]`` are all known and: a>b, b>c but a≤c; a>b, b=c but
    a≤c; a=b, b>c but a≤c; or a=b, b=c but a≠c. Every triple of the query is checked at once
    with broadcast boolean arrays. Each contradictory set of three documents is reported once,
    as the first (a, b, c) found for it.
    """
    index = {d: i for i, d in enumerate(documents)}
    n = len(documents)
    value = np.full((n, n), 2, dtype=np.int8)  # 2 = unknown
    for (x, y), verdict in verdicts.items():
        if x in index and y in index and x != y:
            value[index[x], index[y]], value[index[y], index[x]] = verdict, -verdict
    greater, equal = value == 1, value == 0
    at_most = (value == 0) | (value == -1)
    differ = np.abs(value) == 1
    ab_gt, ab_eq = greater[:, :, None], equal[:, :, None]
    bc_gt, bc_eq = greater[None, :, :], equal[None, :, :]
    ac_le, ac_ne = at_most[:, None, :], differ[:, None, :]
    bad = ((ab_gt & (bc_gt | bc_eq)) | (ab_eq & bc_gt)) & ac_le | (ab_eq & bc_eq & ac_ne)
    seen: set[frozenset] = set()
    found = []
    for a, b, c in zip(*np.nonzero(bad), strict=True):
        key = frozenset((a, b, c))
        if len(key) == 3 and key not in seen:
            seen.add(key)
            found.append((documents[a], documents[b], documents[c]))
    return found


def settle(
    segments: list[Segment],
    known: dict[tuple[str, str], int],
    on_split: Callable[[Segment, str], None] | None = None,
) -> list[Segment]:
    """``segments`` once every split the ``known`` verdicts allow is made: an open segment
    splits on its last ``todo`` member whose comparisons with all the others are known (a
    QuickSort campaign's pivot), again and again; ``on_split(segment, pivot)`` hears of each."""
    progressed = True
    while progressed:
        progressed = False
        next_segments: list[Segment] = []
        for segment in segments:
            parts = None
            for pivot in () if segment.closed else reversed(segment.todo):
                others = tuple(d for d in segment.todo if d != pivot)
                parts = split(Segment(segment.done, (*others, pivot)), known)
                if parts is not None:
                    if on_split is not None:
                        on_split(segment, pivot)
                    break
            next_segments.extend(parts if parts is not None else [segment])
            progressed |= parts is not None
        segments = next_segments
    return segments
