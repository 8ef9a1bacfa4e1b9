"""The web crowd's SQL (:mod:`crowdprefs.crowds.web.store`): the statements the server runs
for every request, each built once on first use (:data:`SQL`; building one costs more CPU than
running it on the database, and a command that merely imports the store builds none), and the
steps of the hand-out and answer transactions, each given the transaction's connection.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any, Literal

import lazy_loader
from sqlalchemy import (
    Connection,
    Integer,
    Select,
    and_,
    bindparam,
    case,
    exists,
    func,
    or_,
    select,
    update,
)

from crowdprefs.campaign.store import tables as t
from crowdprefs.campaign.store.base import insert_ignore, recount_pair_counts, refresh_pair_counts
from crowdprefs.crowds.web import tables as wt
from crowdprefs.crowds.web.records import HandOut, Outcome, WebAssignment

np = lazy_loader.load("numpy")  # imported on first use

_judges, _assignments, _answers, _pairs = wt.web_judges, wt.web_assignments, t.answers, t.pairs
WEB = (None, "web")
"""A batch the web crowd answers: one not yet given to a crowd, or given to the web crowd."""


def blocked(judge: Any) -> Any:
    """SQL: whether the judge (a column or a value) is blocked on the web crowd, or left the
    study they came from (returned it, timed out: ``web_judges.left_at``)."""
    blocks, judges = t.worker_blocks, wt.web_judges
    return or_(
        exists().where(blocks.c.crowd == "web", blocks.c.worker_id == judge),
        exists().where(judges.c.judge_id == judge, judges.c.left_at.is_not(None)),
    )


def open_at(now: Any) -> Any:
    """SQL: an assignment that stays open at ``now``: open, not past its deadline, its judge
    not blocked (what :func:`release` leaves open)."""
    return and_(
        _assignments.c.status == "open",
        _assignments.c.expires_at >= now,
        ~blocked(_assignments.c.judge_id),
    )


def answered_query(judge_id: str, iteration: int | None = None) -> Select:
    """SQL: how many questions the judge answered (of batch ``iteration`` when given)."""
    query = select(func.count()).where(
        _assignments.c.judge_id == judge_id, _assignments.c.status == "submitted"
    )
    if iteration is not None:
        query = query.join(_pairs, _pairs.c.pair_id == _assignments.c.pair_id).where(
            _pairs.c.iteration == iteration
        )
    return query


class Statements:
    """The server's statements, each built on first use and kept (:data:`SQL`)."""

    @functools.cached_property
    def have(self) -> Any:
        """Over ``pairs LEFT JOIN pair_counts``: the pair's answers that count (not rejected)."""
        counts = t.pair_counts.c
        return func.coalesce(counts.more + counts.equal + counts.less, 0)

    @functools.cached_property
    def open(self) -> Any:
        """Per pair with any, its open assignments (``pair_id, n``)."""
        return (
            select(_assignments.c.pair_id, func.count().label("n"))
            .where(_assignments.c.status == "open")
            .group_by(_assignments.c.pair_id)
            .subquery("open_assignments")
        )

    @functools.cached_property
    def assignment(self) -> Select:
        """An assignment's columns, in :class:`WebAssignment`'s order."""
        a = _assignments.c
        return select(
            a.assignment_id, a.pair_id, a.judge_id, a.csrf, a.issued_at, a.expires_at, a.status
        )

    @functools.cached_property
    def session(self) -> dict[bool, tuple[Select, list[str]]]:
        """:func:`session_statement` without and with the question."""
        return {question: session_statement(question) for question in (False, True)}

    @functools.cached_property
    def release(self) -> Any:
        """Release the assignments open past ``:now`` or whose judge is blocked."""
        expired = _assignments.c.expires_at < bindparam("now")
        return (
            update(_assignments)
            .where(_assignments.c.status == "open", or_(expired, blocked(_assignments.c.judge_id)))
            .values(status="released")
        )

    @functools.cached_property
    def held(self) -> Select:
        """The judge's open assignment (the oldest)."""
        mine = _assignments.c.judge_id == bindparam("judge_id")
        return self.assignment.where(mine, _assignments.c.status == "open").order_by(
            _assignments.c.issued_at
        )

    @functools.cached_property
    def held_at(self) -> Select:
        """The judge's assignment that stays open at ``:now`` (the oldest)."""
        mine = _assignments.c.judge_id == bindparam("judge_id")
        return self.assignment.where(mine, open_at(bindparam("now"))).order_by(
            _assignments.c.issued_at
        )

    @functools.cached_property
    def standing(self) -> dict[tuple[bool, bool], Select]:
        """:func:`standing_statement` per ``(limit, batch_limit)``."""
        return {(a, b): standing_statement(a, b) for a in (False, True) for b in (False, True)}

    @functools.cached_property
    def fill(self) -> Select:
        """Inside the hand-out's transaction, after :attr:`release`."""
        return fill_statement(self.open)

    @functools.cached_property
    def room(self) -> Select:
        """Whether a pair the judge never had has room at ``:now`` (read without the writers'
        lock)."""
        open_counts = (
            select(_assignments.c.pair_id, func.count().label("n"))
            .where(open_at(bindparam("now")))
            .group_by(_assignments.c.pair_id)
            .subquery("open_at")
        )
        fill = fill_statement(open_counts).subquery("fill_at")
        return select(exists().where(fill.c.filled < fill.c.answers_wanted))

    @functools.cached_property
    def pair_missing(self) -> Select:
        """Whether the pair ``:pair_id`` still wants answers (0 or 1)."""
        return missing(_pairs.c.pair_id == bindparam("pair_id"))

    @functools.cached_property
    def batch_missing(self) -> Select:
        """How many pairs of the batch of the pair ``:pair_id`` still want answers."""
        batch = select(_pairs.c.iteration).where(_pairs.c.pair_id == bindparam("pair_id"))
        return missing(_pairs.c.iteration == batch.scalar_subquery())

    @functools.cached_property
    def answered_assignment(self) -> Select:
        """The assignment ``:assignment_id`` and whether its judge is blocked."""
        return self.assignment.add_columns(blocked(_assignments.c.judge_id).label("blocked")).where(
            _assignments.c.assignment_id == bindparam("assignment_id")
        )

    @functools.cached_property
    def pair_full(self) -> Select:
        """Whether the pair ``:pair_id`` has all its answers and open assignments."""
        return (
            select(self.have + func.coalesce(self.open.c.n, 0) >= _pairs.c.answers_wanted)
            .select_from(_pairs)
            .outerjoin(t.pair_counts, t.pair_counts.c.pair_id == _pairs.c.pair_id)
            .outerjoin(self.open, self.open.c.pair_id == _pairs.c.pair_id)
            .where(_pairs.c.pair_id == bindparam("pair_id"))
        )

    @functools.cached_property
    def submitted(self) -> Any:
        """Mark the assignment ``:submitted_id`` submitted."""
        return (
            update(_assignments)
            .where(_assignments.c.assignment_id == bindparam("submitted_id"))
            .values(status="submitted")
        )

    @functools.cached_property
    def recount(self) -> list[Any]:
        """Count again the accepted answers of the pair ``:pair_id``."""
        return recount_pair_counts(select(bindparam("pair_id", type_=Integer)))


SQL = Statements()
"""The server's statements (built on first use)."""


def assignment(conn: Connection, *where: Any) -> WebAssignment | None:
    """The (oldest) assignment matching ``where``, if any."""
    row = conn.execute(SQL.assignment.where(*where).order_by(_assignments.c.issued_at)).first()
    return None if row is None else WebAssignment(*row)


def session_statement(question: bool) -> tuple[Select, list[str]]:
    """SQL: one row with the failed token attempts of the party ``:party`` since ``:since``
    (``failures``, ``oldest``), the judge holding ``:token_hash`` (``judge_*``, NULL for none)
    and, with ``question``, the assignment ``:assignment_id`` when it is the judge's, with its
    pair as :meth:`~crowdprefs.crowds.web.store.WebStore.web_question` reads it and the
    pair's clips (``pair_*``); and the names of the pair's values in the row (built once:
    :attr:`Statements.session`)."""
    throttle = wt.web_throttle
    failures = (
        select(func.count().label("failures"), func.min(throttle.c.failed_at).label("oldest"))
        .where(throttle.c.party == bindparam("party"), throttle.c.failed_at > bindparam("since"))
        .subquery("failures")
    )
    judge = [
        _judges.c.judge_id.label("judge_id"),
        _judges.c.source.label("judge_source"),
        _judges.c.completion_code.label("judge_code"),
        _judges.c.token_hash.label("judge_token_hash"),
    ]
    joined = failures.outerjoin(_judges, _judges.c.token_hash == bindparam("token_hash"))
    if not question:
        return select(failures.c.failures, failures.c.oldest, *judge).select_from(joined), []
    cx, cy, q = t.candidates.alias("cx"), t.candidates.alias("cy"), t.queries
    done = _assignments.alias("done")  # the judge's answered questions, counted apart
    x_is_query, y_is_query = _pairs.c.x == _pairs.c.query, _pairs.c.y == _pairs.c.query
    statement = select(
        failures.c.failures,
        failures.c.oldest,
        *judge,
        *(c.label(f"assignment_{c.name}") for c in SQL.assignment.selected_columns),
        *(c.label(f"pair_{c.name}") for c in _pairs.c),
        q.c.seconds.label("pair_query_seconds"),
        func.coalesce(cx.c.seconds, case((x_is_query, q.c.seconds))).label("pair_x_seconds"),
        cy.c.seconds.label("pair_y_seconds"),
        q.c.audio.label("pair_query_audio"),
        func.coalesce(cx.c.audio, case((x_is_query, q.c.audio))).label("pair_x_audio"),
        func.coalesce(cy.c.audio, case((y_is_query, q.c.audio))).label("pair_y_audio"),
        select(func.count())
        .where(done.c.judge_id == _judges.c.judge_id, done.c.status == "submitted")
        .correlate(_judges)
        .scalar_subquery()
        .label("answered"),
    ).select_from(
        joined.outerjoin(
            _assignments,
            and_(
                _assignments.c.assignment_id == bindparam("assignment_id"),
                _assignments.c.judge_id == _judges.c.judge_id,
            ),
        )
        .outerjoin(_pairs, _pairs.c.pair_id == _assignments.c.pair_id)
        .outerjoin(q, q.c.query == _pairs.c.query)
        .outerjoin(cx, and_(cx.c.query == _pairs.c.query, cx.c.document == _pairs.c.x))
        .outerjoin(cy, and_(cy.c.query == _pairs.c.query, cy.c.document == _pairs.c.y))
    )
    names = [c.name for c in _pairs.c]
    names += [f"{clip}_{what}" for what in ("seconds", "audio") for clip in ("query", "x", "y")]
    return statement, names


def answered(conn: Connection, judge_id: str, iteration: int | None = None) -> int:
    return conn.execute(answered_query(judge_id, iteration)).scalar_one()


def release_participants(conn: Connection, participants: Sequence[str], at: str) -> int:
    """Inside a transaction: these study-platform ``participants`` left the study at ``at``:
    their judges get no further question and their answers are no longer taken
    (:func:`blocked`), and their open assignments are released, so their pairs go back to the
    pool at once; returns how many."""
    if not participants:
        return 0
    mine = _judges.c.participant.in_(list(participants))
    conn.execute(update(_judges).where(mine, _judges.c.left_at.is_(None)).values(left_at=at))
    theirs = select(_judges.c.judge_id).where(mine)
    return conn.execute(
        update(_assignments)
        .where(_assignments.c.status == "open", _assignments.c.judge_id.in_(theirs))
        .values(status="released")
    ).rowcount


def standing_statement(limit: bool, batch_limit: bool) -> Select:
    """SQL: the last batch (``iteration, status, crowd``) with whether the judge ``:judge_id``
    is ``blocked`` and, as asked, the questions they ``answered`` in all and ``answered_in``
    that batch; no row without batches."""
    b, done, done_pairs = t.batches, _assignments.alias("done"), _pairs.alias("done_pairs")
    judge_id = bindparam("judge_id")
    mine = (done.c.judge_id == judge_id, done.c.status == "submitted")
    columns = [b.c.iteration, b.c.status, b.c.crowd, select(blocked(judge_id)).label("blocked")]
    if limit:
        columns.append(select(func.count()).where(*mine).label("answered"))
    if batch_limit:
        in_batch = (
            select(func.count())
            .select_from(done.join(done_pairs, done_pairs.c.pair_id == done.c.pair_id))
            .where(*mine, done_pairs.c.iteration == b.c.iteration)
            .correlate(b)
        )
        columns.append(in_batch.label("answered_in"))
    return select(*columns).order_by(b.c.iteration.desc()).limit(1)


def fill_statement(open_counts: Any) -> Select:
    """SQL: ``pair_id, filled, answers_wanted`` of batch ``:iteration``'s web pairs the judge
    ``:judge_id`` never had; ``filled`` counts answers (not rejected) and the open assignments
    of ``open_counts`` (``pair_id, n``)."""
    had = select(_assignments.c.pair_id).where(_assignments.c.judge_id == bindparam("judge_id"))
    return (
        select(
            _pairs.c.pair_id,
            (SQL.have + func.coalesce(open_counts.c.n, 0)).label("filled"),
            _pairs.c.answers_wanted,
        )
        .join(t.hits, and_(t.hits.c.pair_id == _pairs.c.pair_id, t.hits.c.crowd == "web"))
        .outerjoin(t.pair_counts, t.pair_counts.c.pair_id == _pairs.c.pair_id)
        .outerjoin(open_counts, open_counts.c.pair_id == _pairs.c.pair_id)
        .where(_pairs.c.iteration == bindparam("iteration"), _pairs.c.pair_id.not_in(had))
    )


def release(conn: Connection, now: str) -> int:
    """Release the open assignments expired at ``now`` or whose judge was blocked."""
    return conn.execute(SQL.release, {"now": now}).rowcount


def judge_standing(conn: Connection, judge_id: str, hand_out: HandOut) -> Any:
    """The judge's standing (:func:`standing_statement`, with the counts ``hand_out`` caps);
    ``None`` without batches."""
    statement = SQL.standing[bool(hand_out.limit), bool(hand_out.batch_limit)]
    return conn.execute(statement, {"judge_id": judge_id}).first()


def closed(standing: Any, hand_out: HandOut) -> bool:
    """Whether a judge of this :func:`judge_standing` gets no new question: blocked, capped by
    ``hand_out``, or the last batch is not the web crowd's to answer (or there is none)."""
    return (
        standing is None
        or bool(standing.blocked)
        or bool(hand_out.limit and standing.answered >= hand_out.limit)
        or standing.status not in ("built", "published")
        or standing.crowd not in WEB
        or bool(hand_out.batch_limit and standing.answered_in >= hand_out.batch_limit)
    )


def settled(conn: Connection, judge_id: str, hand_out: HandOut) -> tuple[bool, Any]:
    """Read only: ``(True, what)`` when :func:`issue` would give the judge ``what`` at
    ``hand_out.issued_at`` without changing anything (the assignment they hold, or ``None``:
    nothing for them); ``(False, None)`` when a pair they never had has room, so only a write
    transaction can tell (expired assignments and those of blocked judges count free, as
    :func:`issue` releases them first)."""
    now = hand_out.issued_at
    held = conn.execute(SQL.held_at, {"judge_id": judge_id, "now": now}).first()
    if held is not None:
        return True, WebAssignment(*held)
    standing = judge_standing(conn, judge_id, hand_out)
    if closed(standing, hand_out):
        return True, None
    values = {"judge_id": judge_id, "iteration": standing.iteration, "now": now}
    return not conn.execute(SQL.room, values).scalar_one(), None


def issue(conn: Connection, judge_id: str, hand_out: HandOut) -> WebAssignment | None:
    """Inside a transaction: the judge's open assignment, else a new one (see
    :meth:`WebStore.issue_web_assignment`)."""
    release(conn, hand_out.issued_at)
    held = conn.execute(SQL.held, {"judge_id": judge_id}).first()
    if held is not None:
        return WebAssignment(*held)
    standing = judge_standing(conn, judge_id, hand_out)
    if closed(standing, hand_out):
        return None
    rows = conn.execute(SQL.fill, {"judge_id": judge_id, "iteration": standing.iteration})
    candidates = np.array(list(map(tuple, rows)), dtype=np.int64).reshape(-1, 3)
    chosen = hand_out.choose(candidates[:, 0], candidates[:, 1], candidates[:, 2])
    if chosen < 0:
        return None
    assignment = WebAssignment(
        hand_out.assignment_id,
        int(candidates[chosen, 0]),
        judge_id,
        hand_out.csrf,
        hand_out.issued_at,
        hand_out.expires_at,
        "open",
    )
    conn.execute(_assignments.insert(), [asdict(assignment)])
    return assignment


def missing(pairs_where: Any) -> Any:
    """SQL: how many pairs matching ``pairs_where`` still want answers."""
    return (
        select(func.count())
        .select_from(_pairs.outerjoin(t.pair_counts, t.pair_counts.c.pair_id == _pairs.c.pair_id))
        .where(pairs_where, _pairs.c.answers_wanted > SQL.have)
    )


def batch_complete(conn: Connection, pair_id: int) -> bool:
    """Whether every pair of ``pair_id``'s batch has its answers (the pair first: the batch is
    read only once the pair is complete)."""
    if conn.execute(SQL.pair_missing, {"pair_id": pair_id}).scalar_one():
        return False
    return conn.execute(SQL.batch_missing, {"pair_id": pair_id}).scalar_one() == 0


def store_answer(
    conn: Connection, assignment: WebAssignment, blocked: bool, answer: dict[str, Any]
) -> Outcome:
    """Inside the answer's transaction: store ``answer`` to ``assignment`` (see
    :meth:`~crowdprefs.crowds.web.store.WebStore.answer_web_question`)."""
    if assignment.status == "submitted":
        return "duplicate"
    if blocked:
        return "blocked"
    if assignment.status == "released":
        full = conn.execute(SQL.pair_full, {"pair_id": assignment.pair_id}).scalar_one()
        if full:
            return "gone"
    conn.execute(
        insert_ignore(conn, _answers),
        [
            {
                "pair_id": assignment.pair_id,
                "crowd": "web",
                "assignment_id": assignment.assignment_id,
                "worker_id": assignment.judge_id,
                "accepted_at": assignment.issued_at,
                **answer,
            }
        ],
    )
    conn.execute(SQL.submitted, {"submitted_id": assignment.assignment_id})
    for statement in SQL.recount:
        conn.execute(statement, {"pair_id": assignment.pair_id})
    return "stored"


def reject_web_answers(
    conn: Connection,
    column: Literal["assignment_id", "worker_id"],
    decisions: Sequence[tuple[str, str]],
    decided_at: str,
) -> None:
    """Reject (decided and applied at once) the submitted web answers whose ``column``
    (``assignment_id`` or ``worker_id``) is each decision's key, with its reason, and count
    their pairs' answers again."""
    if not decisions:
        return
    a, reviews = _answers, t.answer_reviews
    reasons = dict(decisions)
    chosen = (a.c.crowd == "web", a.c[column].in_(list(reasons)), a.c.status == "submitted")
    found = conn.execute(
        select(a.c.assignment_id, a.c.pair_id, a.c.worker_id, a.c[column]).where(*chosen)
    ).all()
    if not found:
        return
    conn.execute(
        insert_ignore(conn, reviews),
        [
            {
                "crowd": "web",
                "assignment_id": assignment,
                "pair_id": pair,
                "worker_id": worker,
                "decision": "reject",
                "reason": reasons[key],
                "decided_at": decided_at,
                "applied_at": decided_at,
            }
            for assignment, pair, worker, key in found
        ],
    )
    conn.execute(update(a).where(*chosen).values(status="rejected"))
    pairs = sorted({pair for _, pair, _, _ in found})
    refresh_pair_counts(conn, select(_pairs.c.pair_id).where(_pairs.c.pair_id.in_(pairs)))
