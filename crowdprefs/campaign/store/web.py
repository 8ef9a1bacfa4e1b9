"""The web crowd's part of the project state: judges, the study key, assignments and what every
server process must agree on (failed token attempts, the campaign's state line).

A judge (``web_judges``) holds an invitation or study token, of which only the SHA-256 is
stored. An *assignment* (``web_assignments``) is one pair handed to one judge, with a CSRF token
and a deadline; ``open`` until answered (``submitted``) or past its deadline (``released``).
Every rule that concurrent judges could break is checked and applied inside one write
transaction of one method, and writers of a campaign run one at a time whichever process or
host runs them (:meth:`~.base.StoreBase.transaction`): :meth:`WebStore.issue_web_assignment`
never hands out more questions of a pair than it still needs, and
:meth:`WebStore.answer_web_question` stores an answer at most once and never beyond the pair's
wanted answers, then hands out the judge's next question in the same transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

import lazy_loader
import numpy as np
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
from crowdprefs.campaign.store.base import (
    StoreBase,
    insert_ignore,
    json_field,
    recount_pair_counts,
    refresh_pair_counts,
)

pd = lazy_loader.load("pandas")  # imported on first use

STUDY_KEY = "web_study_key_sha256"
"""The ``meta`` key holding the SHA-256 of the study-platform link's secret."""
CAMPAIGN_KEY = "web_campaign"
"""The ``meta`` key holding the line the server last said of the campaign (``waiting``,
``stopped: …``): every server process shows the same one."""

_judges, _assignments, _answers, _pairs = t.web_judges, t.web_assignments, t.answers, t.pairs
_HAVE = func.coalesce(t.pair_counts.c.more + t.pair_counts.c.equal + t.pair_counts.c.less, 0)
"""Over ``pairs LEFT JOIN pair_counts``: the pair's answers that count (not rejected)."""
_OPEN = (
    select(_assignments.c.pair_id, func.count().label("n"))
    .where(_assignments.c.status == "open")
    .group_by(_assignments.c.pair_id)
    .subquery("open_assignments")
)
"""Per pair with any, its open assignments."""
_WEB = (None, "web")
"""A batch the web crowd answers: one not yet given to a crowd, or given to the web crowd."""

Outcome = Literal["stored", "duplicate", "gone", "blocked"]
Chooser = Callable[[np.ndarray, np.ndarray, np.ndarray], int]
"""``(pair_id, filled, wanted) → index`` of the pair to hand out, ``-1`` for none."""


def _blocked(judge: Any) -> Any:
    """SQL: whether the judge (a column or a value) is blocked on the web crowd, or left the
    study they came from (returned it, timed out: ``web_judges.left_at``)."""
    blocks, judges = t.worker_blocks, t.web_judges
    return or_(
        exists().where(blocks.c.crowd == "web", blocks.c.worker_id == judge),
        exists().where(judges.c.judge_id == judge, judges.c.left_at.is_not(None)),
    )


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


_ASSIGNMENT = select(
    _assignments.c.assignment_id,
    _assignments.c.pair_id,
    _assignments.c.judge_id,
    _assignments.c.csrf,
    _assignments.c.issued_at,
    _assignments.c.expires_at,
    _assignments.c.status,
)


def _assignment(conn: Connection, *where: Any) -> WebAssignment | None:
    row = conn.execute(_ASSIGNMENT.where(*where).order_by(_assignments.c.issued_at)).first()
    return None if row is None else WebAssignment(*row)


def _answered_query(judge_id: str, iteration: int | None = None) -> Select:
    """SQL: how many questions the judge answered (of batch ``iteration`` when given)."""
    query = select(func.count()).where(
        _assignments.c.judge_id == judge_id, _assignments.c.status == "submitted"
    )
    if iteration is not None:
        query = query.join(_pairs, _pairs.c.pair_id == _assignments.c.pair_id).where(
            _pairs.c.iteration == iteration
        )
    return query


def _session_statement(question: bool) -> tuple[Select, list[str]]:
    """SQL: one row with the failed token attempts of the party ``:party`` since ``:since``
    (``failures``, ``oldest``), the judge holding ``:token_hash`` (``judge_*``, NULL for none)
    and, with ``question``, the assignment ``:assignment_id`` when it is the judge's, with its
    pair as :meth:`WebStore.web_question` reads it and the pair's clips (``pair_*``); and the
    names of the pair's values in the row. Built once (building one costs more than running
    it)."""
    throttle = t.web_throttle
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
        *(c.label(f"assignment_{c.name}") for c in _ASSIGNMENT.selected_columns),
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


_SESSION = {question: _session_statement(question) for question in (False, True)}
""":func:`_session_statement` without and with the question."""


def _answered(conn: Connection, judge_id: str, iteration: int | None = None) -> int:
    return conn.execute(_answered_query(judge_id, iteration)).scalar_one()


# The statements of the hand-out and the answer, built once with their values as parameters:
# building one costs more CPU than running it on the database (the web server runs them for
# every request).


def _open_at(now: Any) -> Any:
    """SQL: an assignment that stays open at ``now``: open, not past its deadline, its judge
    not blocked (what :func:`_release` leaves open)."""
    return and_(
        _assignments.c.status == "open",
        _assignments.c.expires_at >= now,
        ~_blocked(_assignments.c.judge_id),
    )


_RELEASE = (
    update(_assignments)
    .where(
        _assignments.c.status == "open",
        or_(_assignments.c.expires_at < bindparam("now"), _blocked(_assignments.c.judge_id)),
    )
    .values(status="released")
)
_HELD = _ASSIGNMENT.where(
    _assignments.c.judge_id == bindparam("judge_id"), _assignments.c.status == "open"
).order_by(_assignments.c.issued_at)
"""The judge's open assignment (the oldest)."""
_HELD_AT = _ASSIGNMENT.where(
    _assignments.c.judge_id == bindparam("judge_id"), _open_at(bindparam("now"))
).order_by(_assignments.c.issued_at)
"""The judge's assignment that stays open at ``:now`` (the oldest)."""


def release_participants(conn: Connection, participants: Sequence[str], at: str) -> int:
    """Inside a transaction: these study-platform ``participants`` left the study at ``at``:
    their judges get no further question and their answers are no longer taken
    (:func:`_blocked`), and their open assignments are released, so their pairs go back to the
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


def _standing_statement(limit: bool, batch_limit: bool) -> Select:
    """SQL: the last batch (``iteration, status, crowd``) with whether the judge ``:judge_id``
    is ``blocked`` and, as asked, the questions they ``answered`` in all and ``answered_in``
    that batch; no row without batches."""
    b, done, done_pairs = t.batches, _assignments.alias("done"), _pairs.alias("done_pairs")
    judge_id = bindparam("judge_id")
    mine = (done.c.judge_id == judge_id, done.c.status == "submitted")
    columns = [b.c.iteration, b.c.status, b.c.crowd, select(_blocked(judge_id)).label("blocked")]
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


_STANDING = {(a, b): _standing_statement(a, b) for a in (False, True) for b in (False, True)}


def _fill_statement(open_counts: Any) -> Select:
    """SQL: ``pair_id, filled, answers_wanted`` of batch ``:iteration``'s web pairs the judge
    ``:judge_id`` never had; ``filled`` counts answers (not rejected) and the open assignments
    of ``open_counts`` (``pair_id, n``)."""
    had = select(_assignments.c.pair_id).where(_assignments.c.judge_id == bindparam("judge_id"))
    return (
        select(
            _pairs.c.pair_id,
            (_HAVE + func.coalesce(open_counts.c.n, 0)).label("filled"),
            _pairs.c.answers_wanted,
        )
        .join(t.hits, and_(t.hits.c.pair_id == _pairs.c.pair_id, t.hits.c.crowd == "web"))
        .outerjoin(t.pair_counts, t.pair_counts.c.pair_id == _pairs.c.pair_id)
        .outerjoin(open_counts, open_counts.c.pair_id == _pairs.c.pair_id)
        .where(_pairs.c.iteration == bindparam("iteration"), _pairs.c.pair_id.not_in(had))
    )


_FILL = _fill_statement(_OPEN)
"""Inside the hand-out's transaction, after :data:`_RELEASE`."""
_OPEN_AT = (
    select(_assignments.c.pair_id, func.count().label("n"))
    .where(_open_at(bindparam("now")))
    .group_by(_assignments.c.pair_id)
    .subquery("open_at")
)
_FILL_AT = _fill_statement(_OPEN_AT).subquery("fill_at")
_ROOM = select(exists().where(_FILL_AT.c.filled < _FILL_AT.c.answers_wanted))
"""Whether a pair the judge never had has room at ``:now`` (read without the writers' lock)."""


def _release(conn: Connection, now: str) -> int:
    """Release the open assignments expired at ``now`` or whose judge was blocked."""
    return conn.execute(_RELEASE, {"now": now}).rowcount


def _standing(conn: Connection, judge_id: str, hand_out: HandOut) -> Any:
    """The judge's standing (:func:`_standing_statement`, with the counts ``hand_out`` caps);
    ``None`` without batches."""
    statement = _STANDING[bool(hand_out.limit), bool(hand_out.batch_limit)]
    return conn.execute(statement, {"judge_id": judge_id}).first()


def _closed(standing: Any, hand_out: HandOut) -> bool:
    """Whether a judge of this :func:`_standing` gets no new question: blocked, capped by
    ``hand_out``, or the last batch is not the web crowd's to answer (or there is none)."""
    return (
        standing is None
        or bool(standing.blocked)
        or bool(hand_out.limit and standing.answered >= hand_out.limit)
        or standing.status not in ("built", "published")
        or standing.crowd not in _WEB
        or bool(hand_out.batch_limit and standing.answered_in >= hand_out.batch_limit)
    )


def _settled(conn: Connection, judge_id: str, hand_out: HandOut) -> tuple[bool, Any]:
    """Read only: ``(True, what)`` when :func:`_issue` would give the judge ``what`` at
    ``hand_out.issued_at`` without changing anything (the assignment they hold, or ``None``:
    nothing for them); ``(False, None)`` when a pair they never had has room, so only a write
    transaction can tell (expired assignments and those of blocked judges count free, as
    :func:`_issue` releases them first)."""
    now = hand_out.issued_at
    held = conn.execute(_HELD_AT, {"judge_id": judge_id, "now": now}).first()
    if held is not None:
        return True, WebAssignment(*held)
    standing = _standing(conn, judge_id, hand_out)
    if _closed(standing, hand_out):
        return True, None
    values = {"judge_id": judge_id, "iteration": standing.iteration, "now": now}
    return not conn.execute(_ROOM, values).scalar_one(), None


def _issue(conn: Connection, judge_id: str, hand_out: HandOut) -> WebAssignment | None:
    """Inside a transaction: the judge's open assignment, else a new one (see
    :meth:`WebStore.issue_web_assignment`)."""
    _release(conn, hand_out.issued_at)
    held = conn.execute(_HELD, {"judge_id": judge_id}).first()
    if held is not None:
        return WebAssignment(*held)
    standing = _standing(conn, judge_id, hand_out)
    if _closed(standing, hand_out):
        return None
    rows = conn.execute(_FILL, {"judge_id": judge_id, "iteration": standing.iteration})
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


def _missing(pairs_where: Any) -> Any:
    """SQL: how many pairs matching ``pairs_where`` still want answers."""
    return (
        select(func.count())
        .select_from(_pairs.outerjoin(t.pair_counts, t.pair_counts.c.pair_id == _pairs.c.pair_id))
        .where(pairs_where, _pairs.c.answers_wanted > _HAVE)
    )


_PAIR_MISSING = _missing(_pairs.c.pair_id == bindparam("pair_id"))
_BATCH_MISSING = _missing(
    _pairs.c.iteration
    == select(_pairs.c.iteration).where(_pairs.c.pair_id == bindparam("pair_id")).scalar_subquery()
)


def _batch_complete(conn: Connection, pair_id: int) -> bool:
    """Whether every pair of ``pair_id``'s batch has its answers (the pair first: the batch is
    read only once the pair is complete)."""
    if conn.execute(_PAIR_MISSING, {"pair_id": pair_id}).scalar_one():
        return False
    return conn.execute(_BATCH_MISSING, {"pair_id": pair_id}).scalar_one() == 0


_ANSWERED_ASSIGNMENT = _ASSIGNMENT.add_columns(
    _blocked(_assignments.c.judge_id).label("blocked")
).where(_assignments.c.assignment_id == bindparam("assignment_id"))
"""The assignment ``:assignment_id`` and whether its judge is blocked."""
_PAIR_FULL = (
    select(_HAVE + func.coalesce(_OPEN.c.n, 0) >= _pairs.c.answers_wanted)
    .select_from(_pairs)
    .outerjoin(t.pair_counts, t.pair_counts.c.pair_id == _pairs.c.pair_id)
    .outerjoin(_OPEN, _OPEN.c.pair_id == _pairs.c.pair_id)
    .where(_pairs.c.pair_id == bindparam("pair_id"))
)
"""Whether the pair ``:pair_id`` has all its answers and open assignments."""
_SUBMITTED = (
    update(_assignments)
    .where(_assignments.c.assignment_id == bindparam("submitted_id"))
    .values(status="submitted")
)
_RECOUNT = recount_pair_counts(select(bindparam("pair_id", type_=Integer)))
"""Count again the accepted answers of the pair ``:pair_id`` (built once)."""


class WebStore(StoreBase):
    """The web crowd's methods of :class:`~crowdprefs.campaign.store.Store` (a mixin)."""

    # --- judges ---------------------------------------------------------------------------------

    @staticmethod
    def _next_judge_ids(conn: Connection, prefix: str, count: int) -> Iterator[str]:
        known = conn.execute(
            select(func.count()).where(_judges.c.judge_id.like(f"{prefix}%"))
        ).scalar_one()
        return (f"{prefix}{known + i:04d}" for i in range(1, count + 1))

    def add_invited_judges(
        self, credentials: Sequence[tuple[str, str]], created_at: str
    ) -> list[str]:
        """Add one invited judge per ``(token_hash, completion_code)``, in one transaction;
        returns their ids (``J0001``, ``J0002``, … in order of creation)."""
        if not credentials:
            return []
        with self.transaction() as conn:
            ids = list(self._next_judge_ids(conn, "J", len(credentials)))
            conn.execute(
                _judges.insert(),
                [
                    {
                        "judge_id": j,
                        "token_hash": sha,
                        "source": "invite",
                        "completion_code": code,
                        "created_at": created_at,
                    }
                    for j, (sha, code) in zip(ids, credentials, strict=True)
                ],
            )
        return ids

    def join_web_participant(
        self, participant: str, token_hash: str, completion_code: str, created_at: str
    ) -> WebJudge:
        """The judge of a study-platform participant, who now holds ``token_hash``: a new judge
        (``P0001``, …, with ``completion_code``) on first visit, else the same judge with the
        new token (their previous one stops working)."""
        with self.transaction() as conn:
            found = conn.execute(
                select(_judges.c.judge_id, _judges.c.completion_code).where(
                    _judges.c.participant == participant
                )
            ).first()
            if found is not None:
                conn.execute(
                    update(_judges)
                    .where(_judges.c.judge_id == found.judge_id)
                    .values(token_hash=token_hash)
                )
                return WebJudge(found.judge_id, "platform", found.completion_code, token_hash)
            (judge_id,) = self._next_judge_ids(conn, "P", 1)
            conn.execute(
                _judges.insert().values(
                    judge_id=judge_id,
                    token_hash=token_hash,
                    source="platform",
                    participant=participant,
                    completion_code=completion_code,
                    created_at=created_at,
                )
            )
        return WebJudge(judge_id, "platform", completion_code, token_hash)

    def web_judge(self, token_hash: str) -> WebJudge | None:
        """The judge holding the token with this hash, if any."""
        with self.read() as conn:
            row = conn.execute(
                select(
                    _judges.c.judge_id,
                    _judges.c.source,
                    _judges.c.completion_code,
                    _judges.c.token_hash,
                ).where(_judges.c.token_hash == token_hash)
            ).first()
        return None if row is None else WebJudge(*row)

    def web_session(
        self,
        token_hash: str,
        party: str,
        now: float,
        limit: int,
        window: float,
        assignment_id: str | None = None,
    ) -> WebSession:
        """What a judge's request needs, in one statement: the judge holding ``token_hash``,
        the wait of ``party`` by :meth:`throttle_wait`'s rule (``now``, ``limit``, ``window``)
        and, with ``assignment_id``, the judge's own question with its clips
        (:class:`WebSession`)."""
        statement, names = _SESSION[assignment_id is not None]
        values = {"token_hash": token_hash, "party": party, "since": now - window}
        if assignment_id is not None:
            values["assignment_id"] = assignment_id
        with self.read() as conn:
            row = conn.execute(statement, values).one()._mapping
        wait = row["oldest"] + window - now if row["failures"] >= limit else 0.0
        if row["judge_id"] is None:
            return WebSession(None, wait)
        judge = WebJudge(
            row["judge_id"], row["judge_source"], row["judge_code"], row["judge_token_hash"]
        )
        if assignment_id is None or row["assignment_assignment_id"] is None:
            return WebSession(judge, wait)
        assignment = WebAssignment(
            *(row[f"assignment_{c.name}"] for c in _ASSIGNMENT.selected_columns)
        )
        pair = {name: row[f"pair_{name}"] for name in names}
        return WebSession(judge, wait, WebQuestion(assignment, pair, row["answered"]))

    # --- headphone screens -----------------------------------------------------------------------

    @staticmethod
    def _screen(conn: Connection, judge_id: str) -> WebScreen | None:
        screens = t.web_screens
        row = conn.execute(select(screens).where(screens.c.judge_id == judge_id)).first()
        if row is None:
            return None
        values = row._asdict()
        values["passed"] = None if values["passed"] is None else bool(values["passed"])
        return WebScreen(**values)

    def web_screen(self, judge_id: str) -> WebScreen | None:
        """The judge's headphone screen, if they started one."""
        with self.read() as conn:
            return self._screen(conn, judge_id)

    def start_web_screen(
        self, judge_id: str, *, seed: int, trials: int, pass_mark: int, csrf: str, started_at: str
    ) -> WebScreen:
        """The judge's screen: the one they started, else a new one with these values."""
        with self.transaction() as conn:
            conn.execute(
                insert_ignore(conn, t.web_screens),
                [
                    {
                        "judge_id": judge_id,
                        "seed": seed,
                        "trials": trials,
                        "pass_mark": pass_mark,
                        "csrf": csrf,
                        "started_at": started_at,
                    }
                ],
            )
            screen = self._screen(conn, judge_id)
        assert screen is not None
        return screen

    def finish_web_screen(
        self, judge_id: str, *, answers: str, correct: int, passed: bool, finished_at: str
    ) -> WebScreen:
        """Record the screen's answers and outcome once; a screen already answered keeps its
        first outcome (returned either way)."""
        screens = t.web_screens
        with self.transaction() as conn:
            conn.execute(
                update(screens)
                .where(screens.c.judge_id == judge_id, screens.c.finished_at.is_(None))
                .values(
                    answers=answers, correct=correct, passed=int(passed), finished_at=finished_at
                )
            )
            screen = self._screen(conn, judge_id)
        if screen is None:
            raise KeyError(judge_id)
        return screen

    def web_study_key_hash(self) -> str | None:
        """The SHA-256 of the study link's secret (``None`` before ``invite --study``)."""
        return self.meta(STUDY_KEY)

    def set_web_study_key_hash(self, token_hash: str) -> None:
        """Replace the study link's secret (only its SHA-256 is stored)."""
        self.set_meta(STUDY_KEY, token_hash)

    # --- what every server process agrees on ------------------------------------------------------

    def web_campaign(self) -> str | None:
        """The line the server last said of the campaign (``None`` before it said any)."""
        return self.meta(CAMPAIGN_KEY)

    def set_web_campaign(self, line: str) -> None:
        self.set_meta(CAMPAIGN_KEY, line)

    def throttle_wait(self, party: str, now: float, limit: int, window: float) -> float:
        """Seconds ``party`` must wait before trying a token again (0: now): once it tried
        ``limit`` different wrong tokens within ``window`` seconds, until the oldest of them is
        ``window`` seconds old. ``now`` is a Unix time (every process and host shares it)."""
        throttle = t.web_throttle
        with self.read() as conn:
            count, oldest = conn.execute(
                select(func.count(), func.min(throttle.c.failed_at)).where(
                    throttle.c.party == party, throttle.c.failed_at > now - window
                )
            ).one()
        return oldest + window - now if count >= limit else 0.0

    def throttle_fail(self, party: str, token_sha: str, now: float, window: float) -> None:
        """Count a wrong token of ``party`` (the same token again counts once: a stale link
        reloaded is one failure) and forget failures older than ``window``."""
        throttle = t.web_throttle
        with self.transaction() as conn:
            conn.execute(throttle.delete().where(throttle.c.failed_at <= now - window))
            conn.execute(
                insert_ignore(conn, throttle),
                [{"party": party, "token_sha": token_sha, "failed_at": now}],
            )

    # --- assignments ----------------------------------------------------------------------------

    def release_expired_assignments(self, now: str) -> int:
        """Release every open assignment whose deadline is before ``now`` (ISO 8601 UTC) or
        whose judge was blocked, so its pair's slot goes back to the pool; returns how many."""
        with self.transaction() as conn:
            return _release(conn, now)

    def web_open_assignment(self, judge_id: str) -> WebAssignment | None:
        """The judge's open assignment (the oldest, should there be several), if any."""
        with self.read() as conn:
            return _assignment(
                conn, _assignments.c.judge_id == judge_id, _assignments.c.status == "open"
            )

    def web_question(self, assignment_id: str) -> WebQuestion | None:
        """The assignment with its pair and its judge's answered questions (``None`` for an
        unknown id), read at once."""
        cx, cy = t.candidates.alias("cx"), t.candidates.alias("cy")
        q = t.queries
        with self.read() as conn:
            assignment = _assignment(conn, _assignments.c.assignment_id == assignment_id)
            if assignment is None:
                return None
            pair = (
                conn.execute(
                    select(
                        _pairs,
                        q.c.seconds.label("query_seconds"),
                        func.coalesce(
                            cx.c.seconds, case((_pairs.c.x == _pairs.c.query, q.c.seconds))
                        ).label("x_seconds"),
                        cy.c.seconds.label("y_seconds"),
                        _answered_query(assignment.judge_id).scalar_subquery().label("answered"),
                    )
                    .outerjoin(q, q.c.query == _pairs.c.query)
                    .outerjoin(cx, and_(cx.c.query == _pairs.c.query, cx.c.document == _pairs.c.x))
                    .outerjoin(cy, and_(cy.c.query == _pairs.c.query, cy.c.document == _pairs.c.y))
                    .where(_pairs.c.pair_id == assignment.pair_id)
                )
                .one()
                ._asdict()
            )
        return WebQuestion(assignment, pair, pair.pop("answered"))

    def issue_web_assignment(self, judge_id: str, hand_out: HandOut) -> WebAssignment | None:
        """The judge's open assignment, else a new one, in one transaction; ``None`` when the
        judge is blocked, answered ``hand_out.limit`` questions, ``hand_out.batch_limit`` of
        the open batch, or no pair is left for them.

        First releases the assignments expired at ``issued_at``. A new assignment goes to the
        pair ``choose(pair_id, filled, wanted)`` picks among the open web batch's pairs the
        judge never had; ``filled`` counts answers (not rejected) and open assignments, so no
        pair is handed out beyond ``wanted``.

        Read first without the writers' lock: a judge who holds a question, or for whom no
        pair has room, is answered from that read (judges waiting for the next batch ask
        again and again); the write transaction runs only when a pair may be handed out."""
        with self.read() as conn:
            settled, held = _settled(conn, judge_id, hand_out)
        if settled:
            return held
        with self.transaction() as conn:
            return _issue(conn, judge_id, hand_out)

    def answer_web_question(
        self,
        assignment_id: str,
        *,
        choice: str,
        score: int,
        seconds: float,
        submitted_at: str,
        background: str | None,
        comment: str | None,
        raw: str,
        hand_out: HandOut | None = None,
    ) -> Posted:
        """Store the answer to an assignment, mark it submitted and, with ``hand_out``, hand
        the judge their next question — one transaction.

        ``"duplicate"`` when the assignment was already answered; ``"blocked"`` when its judge
        was blocked meanwhile; ``"gone"`` when it was released and its pair has all its
        answers and open assignments meanwhile (nothing changes in these three); else
        ``"stored"``, with the assignment's judge as worker and its hand-out time as
        ``accepted_at``. The next question is handed out after a stored or duplicate answer.
        """
        with self.transaction() as conn:
            row = conn.execute(_ANSWERED_ASSIGNMENT, {"assignment_id": assignment_id}).first()
            if row is None:
                raise KeyError(assignment_id)
            assignment = WebAssignment(*row[:-1])
            outcome = self._store_answer(
                conn,
                assignment,
                bool(row.blocked),
                {
                    "choice": choice,
                    "score": score,
                    "seconds": seconds,
                    "submitted_at": submitted_at,
                    "background": background,
                    "comment": comment,
                    "raw": raw,
                },
            )
            taken = outcome in ("stored", "duplicate")
            after = _issue(conn, assignment.judge_id, hand_out) if taken and hand_out else None
            complete = outcome == "stored" and _batch_complete(conn, assignment.pair_id)
        return Posted(outcome, after, complete)

    @staticmethod
    def _store_answer(
        conn: Connection, assignment: WebAssignment, blocked: bool, answer: dict[str, Any]
    ) -> Outcome:
        if assignment.status == "submitted":
            return "duplicate"
        if blocked:
            return "blocked"
        if assignment.status == "released":
            full = conn.execute(_PAIR_FULL, {"pair_id": assignment.pair_id}).scalar_one()
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
        conn.execute(_SUBMITTED, {"submitted_id": assignment.assignment_id})
        for statement in _RECOUNT:
            conn.execute(statement, {"pair_id": assignment.pair_id})
        return "stored"

    def web_answered(self, judge_id: str) -> int:
        """How many questions the judge has answered."""
        with self.read() as conn:
            return _answered(conn, judge_id)

    # --- the researcher's summaries -------------------------------------------------------------

    def web_batch_progress(self) -> dict[str, Any]:
        """The last batch: ``iteration, status, crowd``, ``pairs``, ``pairs_complete``,
        ``answers`` (not rejected), ``answers_wanted`` and ``open_assignments``."""
        batches = t.batches
        with self.read() as conn:
            batch = conn.execute(
                select(batches.c.iteration, batches.c.status, batches.c.crowd)
                .order_by(batches.c.iteration.desc())
                .limit(1)
            ).first()
            if batch is None:
                return {"iteration": None, "status": None, "crowd": None, "pairs": 0}
            sums = conn.execute(
                select(
                    func.count(_pairs.c.pair_id),
                    func.coalesce(
                        func.sum(case((_pairs.c.answers_wanted <= _HAVE, 1), else_=0)), 0
                    ),
                    func.coalesce(func.sum(_HAVE), 0),
                    func.coalesce(func.sum(_pairs.c.answers_wanted), 0),
                    func.coalesce(func.sum(_OPEN.c.n), 0),
                )
                .select_from(_pairs)
                .outerjoin(t.pair_counts, t.pair_counts.c.pair_id == _pairs.c.pair_id)
                .outerjoin(_OPEN, _OPEN.c.pair_id == _pairs.c.pair_id)
                .where(_pairs.c.iteration == batch.iteration)
            ).one()
        names = ("pairs", "pairs_complete", "answers", "answers_wanted", "open_assignments")
        return {**batch._asdict(), **{n: int(v) for n, v in zip(names, sums, strict=True)}}

    def web_batch_fill(self) -> pd.DataFrame:
        """How full the last batch's pairs are: ``answers`` (that count), ``answers_wanted``
        and the number of ``pairs`` so filled, one row per distinct (answers, wanted); a few
        rows however large the batch (the researcher page draws it)."""
        have, wanted = _HAVE.label("answers"), _pairs.c.answers_wanted
        last = select(func.max(t.batches.c.iteration)).scalar_subquery()
        return self.frame(
            select(have, wanted, func.count().label("pairs"))
            .select_from(_pairs)
            .outerjoin(t.pair_counts, t.pair_counts.c.pair_id == _pairs.c.pair_id)
            .where(_pairs.c.iteration == last)
            .group_by(have, wanted)
            .order_by(have, wanted)
        )

    def web_judge_table(self) -> pd.DataFrame:
        """Per judge (most answers first): ``judge_id, source, answers``, the shares of "equal"
        answers and of presses of "A" as the page showed it (the raw record's ``order``, else
        the choice), ``last_answer`` and ``median_seconds`` (NaN without answers)."""
        a, j = _answers, _judges
        medians = (
            self.frame(
                select(a.c.worker_id.label("judge_id"), a.c.seconds).where(a.c.crowd == "web")
            )
            .groupby("judge_id", as_index=False)["seconds"]
            .median()
            .rename(columns={"seconds": "median_seconds"})
        )
        pressed = func.coalesce(json_field(a.c.raw, "order", "clicked"), a.c.choice)
        answers = func.count(a.c.answer_id).label("answers")
        table = self.frame(
            select(
                j.c.judge_id,
                j.c.source,
                answers,
                func.avg(case((a.c.choice == "equal", 1.0), (a.c.choice.is_not(None), 0.0))).label(
                    "equal_share"
                ),
                func.avg(case((pressed == "A", 1.0), (pressed.is_not(None), 0.0))).label("a_share"),
                func.max(a.c.submitted_at).label("last_answer"),
            )
            .select_from(j.outerjoin(a, and_(a.c.worker_id == j.c.judge_id, a.c.crowd == "web")))
            .group_by(j.c.judge_id, j.c.source)
            .order_by(answers.desc(), j.c.judge_id)
        )
        return table.merge(medians, on="judge_id", how="left")

    def web_participants(self, iteration: int | None = None) -> pd.DataFrame:
        """The study-platform participants: ``judge_id, participant``, the questions each has
        ``answered`` and, of them, ``answered_in`` batch ``iteration`` (0 without one)."""
        j, w = _judges, _assignments
        return self.frame(
            select(
                j.c.judge_id,
                j.c.participant,
                func.count(w.c.assignment_id).label("answered"),
                func.coalesce(
                    func.sum(case((_pairs.c.iteration == iteration, 1), else_=0)), 0
                ).label("answered_in"),
            )
            .select_from(
                j.outerjoin(
                    w, and_(w.c.judge_id == j.c.judge_id, w.c.status == "submitted")
                ).outerjoin(_pairs, _pairs.c.pair_id == w.c.pair_id)
            )
            .where(j.c.source == "platform")
            .group_by(j.c.judge_id, j.c.participant)
            .order_by(j.c.judge_id)
        )

    def blocked_participants(self) -> list[str]:
        """The study-platform participants whose judges were blocked on review."""
        b, j = t.worker_blocks, _judges
        with self.read() as conn:
            return list(
                conn.execute(
                    select(j.c.participant)
                    .join(b, j.c.judge_id == b.c.worker_id)
                    .where(b.c.crowd == "web", j.c.participant.is_not(None))
                    .order_by(j.c.participant)
                ).scalars()
            )

    def decide_web_workers(
        self,
        rejected: Sequence[tuple[str, str]],
        approved: Sequence[str],
        decided_at: str,
        rejected_answers: Sequence[tuple[str, str]] = (),
    ) -> None:
        """In one transaction: block each ``(worker_id, reason)`` of ``rejected`` and reject
        their web answers not yet approved (they stop counting, so their pairs are offered
        again); reject each ``(assignment_id, reason)`` of ``rejected_answers``; then approve
        the remaining submitted web answers of the ``approved`` workers. A decision made earlier
        is kept."""
        with self.transaction() as conn:
            _reject_web_answers(conn, "assignment_id", rejected_answers, decided_at)
            if rejected:
                conn.execute(
                    insert_ignore(conn, t.worker_blocks),
                    [
                        {
                            "crowd": "web",
                            "worker_id": w,
                            "reason": r,
                            "decided_at": decided_at,
                            "applied_at": decided_at,
                        }
                        for w, r in rejected
                    ],
                )
            _reject_web_answers(conn, "worker_id", rejected, decided_at)
            if approved:
                conn.execute(
                    update(_answers)
                    .where(
                        _answers.c.crowd == "web",
                        _answers.c.worker_id.in_(list(approved)),
                        _answers.c.status == "submitted",
                    )
                    .values(status="approved")
                )

    def web_comments(self, limit: int = 20) -> pd.DataFrame:
        """The latest web answers carrying a background or comment: ``worker_id, submitted_at,
        background, comment``, newest first."""
        a = _answers
        return self.frame(
            select(a.c.worker_id, a.c.submitted_at, a.c.background, a.c.comment)
            .where(a.c.crowd == "web", or_(a.c.comment.is_not(None), a.c.background.is_not(None)))
            .order_by(a.c.answer_id.desc())
            .limit(limit)
        )


def _reject_web_answers(
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
