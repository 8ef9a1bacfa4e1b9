"""The web crowd's part of the project state: judges, the study key, assignments and what every
server process must agree on (failed token attempts, the campaign's state line).

A judge (``web_judges``) holds an invitation or study token, of which only the SHA-256 is
stored. An *assignment* (``web_assignments``) is one pair handed to one judge, with a CSRF token
and a deadline; ``open`` until answered (``submitted``) or past its deadline (``released``).
Every rule that concurrent judges could break is checked and applied inside one write
transaction of one method, and writers of a campaign run one at a time whichever process or
host runs them (:meth:`~crowdprefs.campaign.store.base.StoreBase.transaction`):
:meth:`WebStore.issue_web_assignment` never hands out more questions of a pair than it still
needs, and :meth:`WebStore.answer_web_question` stores an answer at most once and never beyond
the pair's wanted answers, then hands out the judge's next question in the same transaction.
This role sits beside the web crowd's adapter (:mod:`crowdprefs.crowds.web`); with its
migrations (:mod:`.schema`) it is the crowd's :data:`STATE`, which the crowd platforms'
registry names: one base of :class:`~crowdprefs.campaign.store.store.Store`, over the store's
one schema and transaction.

The records are in :mod:`.records`, the statements and the transactions' steps in
:mod:`.sql` (built on first use, so a command that imports the store builds none).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import lazy_loader
from sqlalchemy import Connection, and_, case, func, or_, select, update

from crowdprefs.campaign.store import tables as t
from crowdprefs.campaign.store.base import (
    POOL_OVERFLOW,
    POOL_SIZE,
    StoreBase,
    insert_ignore,
    json_field,
)
from crowdprefs.campaign.store.schema import StatePart
from crowdprefs.crowds.web import schema, sql
from crowdprefs.crowds.web import tables as wt
from crowdprefs.crowds.web.records import (
    Chooser,
    HandOut,
    Outcome,
    Posted,
    WebAssignment,
    WebJudge,
    WebQuestion,
    WebScreen,
    WebSession,
)
from crowdprefs.crowds.web.sql import SQL, release_participants

__all__ = [
    "CAMPAIGN_KEY",
    "SITE_KEYS",
    "STATE",
    "STUDY_KEY",
    "Chooser",
    "HandOut",
    "Outcome",
    "Posted",
    "WebAssignment",
    "WebJudge",
    "WebQuestion",
    "WebScreen",
    "WebSession",
    "WebStore",
    "release_participants",
]

pd = lazy_loader.load("pandas")  # imported on first use

STUDY_KEY = "web_study_key_sha256"
"""The ``meta`` key holding the SHA-256 of the study-platform link's secret."""
SITE_KEYS = {"given": "web_site_given", "served": "web_site_served"}
"""The ``meta`` keys of the site's remembered addresses: the last ``invite --base-url``
(``given``) and where ``serve`` last served the site (``served``)."""
CAMPAIGN_KEY = "web_campaign"
"""The ``meta`` key holding the line the server last said of the campaign (``waiting``,
``stopped: …``): every server process shows the same one."""

_judges, _assignments, _answers, _pairs = wt.web_judges, wt.web_assignments, t.answers, t.pairs


class WebStore(StoreBase):
    """The web crowd's methods of :class:`~crowdprefs.campaign.store.Store` (a mixin)."""

    @property
    def web_threads(self) -> int:
        """How many threads of a server process may reach the store at once: as many as its
        engine's pool holds connections (:data:`~crowdprefs.campaign.store.base.POOL_SIZE`
        and :data:`~crowdprefs.campaign.store.base.POOL_OVERFLOW`), so none waits for a
        connection while holding a thread."""
        return POOL_SIZE + POOL_OVERFLOW

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
        statement, names = SQL.session[assignment_id is not None]
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
            *(row[f"assignment_{c.name}"] for c in SQL.assignment.selected_columns)
        )
        pair = {name: row[f"pair_{name}"] for name in names}
        return WebSession(judge, wait, WebQuestion(assignment, pair, row["answered"]))

    # --- headphone screens -----------------------------------------------------------------------

    @staticmethod
    def _screen(conn: Connection, judge_id: str) -> WebScreen | None:
        screens = wt.web_screens
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
                insert_ignore(conn, wt.web_screens),
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
        screens = wt.web_screens
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

    def web_site(self, kind: str) -> str | None:
        """The site's address remembered as ``kind`` (:data:`SITE_KEYS`), if any."""
        return self.meta(SITE_KEYS[kind])

    def set_web_site(self, kind: str, url: str) -> None:
        self.set_meta(SITE_KEYS[kind], url)

    def throttle_wait(self, party: str, now: float, limit: int, window: float) -> float:
        """Seconds ``party`` must wait before trying a token again (0: now): once it tried
        ``limit`` different wrong tokens within ``window`` seconds, until the oldest of them is
        ``window`` seconds old. ``now`` is a Unix time (every process and host shares it)."""
        throttle = wt.web_throttle
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
        throttle = wt.web_throttle
        with self.transaction(revise=False) as conn:
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
            return sql.release(conn, now)

    def web_open_assignment(self, judge_id: str) -> WebAssignment | None:
        """The judge's open assignment (the oldest, should there be several), if any."""
        with self.read() as conn:
            return sql.assignment(
                conn, _assignments.c.judge_id == judge_id, _assignments.c.status == "open"
            )

    def web_question(self, assignment_id: str) -> WebQuestion | None:
        """The assignment with its pair and its judge's answered questions (``None`` for an
        unknown id), read at once."""
        cx, cy = t.candidates.alias("cx"), t.candidates.alias("cy")
        q = t.queries
        with self.read() as conn:
            assignment = sql.assignment(conn, _assignments.c.assignment_id == assignment_id)
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
                        sql.answered_query(assignment.judge_id).scalar_subquery().label("answered"),
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
            settled, held = sql.settled(conn, judge_id, hand_out)
        if settled:
            return held
        with self.transaction() as conn:
            return sql.issue(conn, judge_id, hand_out)

    def web_lookout(self, judge_id: str, hand_out: HandOut) -> tuple[WebAssignment | None, bool]:
        """Read only, what :meth:`issue_web_assignment` would find for the judge: the
        assignment they hold (else ``None``), and whether a pair has room for them."""
        with self.read() as conn:
            settled, held = sql.settled(conn, judge_id, hand_out)
        return held, not settled

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
            row = conn.execute(SQL.answered_assignment, {"assignment_id": assignment_id}).first()
            if row is None:
                raise KeyError(assignment_id)
            assignment = WebAssignment(*row[:-1])
            outcome = sql.store_answer(
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
            after = sql.issue(conn, assignment.judge_id, hand_out) if taken and hand_out else None
            complete = outcome == "stored" and sql.batch_complete(conn, assignment.pair_id)
        return Posted(outcome, after, complete)

    def web_answered(self, judge_id: str) -> int:
        """How many questions the judge has answered."""
        with self.read() as conn:
            return sql.answered(conn, judge_id)

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
                        func.sum(case((_pairs.c.answers_wanted <= SQL.have, 1), else_=0)), 0
                    ),
                    func.coalesce(func.sum(SQL.have), 0),
                    func.coalesce(func.sum(_pairs.c.answers_wanted), 0),
                    func.coalesce(func.sum(SQL.open.c.n), 0),
                )
                .select_from(_pairs)
                .outerjoin(t.pair_counts, t.pair_counts.c.pair_id == _pairs.c.pair_id)
                .outerjoin(SQL.open, SQL.open.c.pair_id == _pairs.c.pair_id)
                .where(_pairs.c.iteration == batch.iteration)
            ).one()
        names = ("pairs", "pairs_complete", "answers", "answers_wanted", "open_assignments")
        return {**batch._asdict(), **{n: int(v) for n, v in zip(names, sums, strict=True)}}

    def web_batch_fill(self) -> pd.DataFrame:
        """How full the last batch's pairs are: ``answers`` (that count), ``answers_wanted``
        and the number of ``pairs`` so filled, one row per distinct (answers, wanted); a few
        rows however large the batch (the researcher page draws it)."""
        have, wanted = SQL.have.label("answers"), _pairs.c.answers_wanted
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
            sql.reject_web_answers(conn, "assignment_id", rejected_answers, decided_at)
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
            sql.reject_web_answers(conn, "worker_id", rejected, decided_at)
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


STATE = StatePart(role=WebStore, migrations=schema.MIGRATIONS)
"""The web crowd's part of the project state (:data:`crowdprefs.registry.PLATFORMS` names it)."""
