"""The web crowd's part of the project state: judges, the study key and assignments.

A judge (``web_judges``) holds an invitation or study token, of which only the SHA-256 is
stored. An *assignment* (``web_assignments``) is one pair handed to one judge, with a CSRF token
and a deadline; ``open`` until answered (``submitted``) or past its deadline (``released``).
Every rule that concurrent judges could break is checked and applied inside one ``BEGIN
IMMEDIATE`` transaction of one method: :meth:`WebStore.issue_web_assignment` never hands out
more questions of a pair than it still needs, and :meth:`WebStore.submit_web_answer` stores an
answer at most once and never beyond the pair's wanted answers.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from dataclasses import astuple, dataclass
from typing import Any, Literal

import lazy_loader
import numpy as np

from crowdprefs.campaign.store.base import SQLiteBase

pd = lazy_loader.load("pandas")  # imported on first use

STUDY_KEY = "web_study_key_sha256"
"""The ``meta`` key holding the SHA-256 of the study-platform link's secret."""

_ASSIGNMENT = (
    "SELECT assignment_id, pair_id, judge_id, csrf, issued_at, expires_at, status"
    " FROM web_assignments"
)
_HAVE = "(SELECT COUNT(*) FROM answers a WHERE a.pair_id = p.pair_id AND a.status != 'rejected')"
"""SQL over ``pairs p``: the pair's answers that count (not rejected)."""
_OPEN = "(SELECT COUNT(*) FROM web_assignments w WHERE w.pair_id = p.pair_id AND w.status = 'open')"
"""SQL over ``pairs p``: the pair's open assignments."""
_BLOCKED = "EXISTS (SELECT 1 FROM worker_blocks b WHERE b.crowd = 'web' AND b.worker_id = {judge})"
"""SQL: whether the judge (a column or ``?``) is blocked on the web crowd."""
_WEB = (None, "web")
"""A batch the web crowd answers: one not yet given to a crowd, or given to the web crowd."""

Outcome = Literal["stored", "duplicate", "gone", "blocked"]
Chooser = Callable[[np.ndarray, np.ndarray, np.ndarray], int]
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


class WebStore(SQLiteBase):
    """The web crowd's methods of :class:`~crowdprefs.campaign.store.Store` (a mixin)."""

    # --- judges ---------------------------------------------------------------------------------

    @staticmethod
    def _next_judge_ids(conn: sqlite3.Connection, prefix: str, count: int) -> Iterator[str]:
        known = conn.execute(
            "SELECT COUNT(*) FROM web_judges WHERE judge_id LIKE ?", (f"{prefix}%",)
        ).fetchone()[0]
        return (f"{prefix}{known + i:04d}" for i in range(1, count + 1))

    def add_invited_judges(
        self, credentials: Sequence[tuple[str, str]], created_at: str
    ) -> list[str]:
        """Add one invited judge per ``(token_hash, completion_code)``, in one transaction;
        returns their ids (``J0001``, ``J0002``, … in order of creation)."""
        with self.transaction() as conn:
            ids = list(self._next_judge_ids(conn, "J", len(credentials)))
            conn.executemany(
                "INSERT INTO web_judges (judge_id, token_hash, source, completion_code, created_at)"
                " VALUES (?, ?, 'invite', ?, ?)",
                [
                    (j, sha, code, created_at)
                    for j, (sha, code) in zip(ids, credentials, strict=True)
                ],
            )
        return ids

    def join_web_participant(
        self, participant: str, token_hash: str, completion_code: str, created_at: str
    ) -> str:
        """The judge id of a study-platform participant, who now holds ``token_hash``: a new
        judge (``P0001``, …, with ``completion_code``) on first visit, else the same judge with
        the new token (their previous one stops working)."""
        with self.transaction() as conn:
            row = conn.execute(
                "SELECT judge_id FROM web_judges WHERE participant = ?", (participant,)
            ).fetchone()
            if row is not None:
                conn.execute(
                    "UPDATE web_judges SET token_hash = ? WHERE judge_id = ?", (token_hash, row[0])
                )
                return row[0]
            (judge_id,) = self._next_judge_ids(conn, "P", 1)
            conn.execute(
                "INSERT INTO web_judges (judge_id, token_hash, source, participant,"
                " completion_code, created_at) VALUES (?, ?, 'platform', ?, ?, ?)",
                (judge_id, token_hash, participant, completion_code, created_at),
            )
        return judge_id

    def web_judge(self, token_hash: str) -> WebJudge | None:
        """The judge holding the token with this hash, if any."""
        row = self.conn.execute(
            "SELECT judge_id, source, completion_code, token_hash FROM web_judges"
            " WHERE token_hash = ?",
            (token_hash,),
        ).fetchone()
        return None if row is None else WebJudge(*row)

    # --- headphone screens -----------------------------------------------------------------------

    @staticmethod
    def _screen(conn: sqlite3.Connection, judge_id: str) -> WebScreen | None:
        row = conn.execute(
            "SELECT judge_id, seed, trials, pass_mark, csrf, started_at, answers, correct, passed,"
            " finished_at FROM web_screens WHERE judge_id = ?",
            (judge_id,),
        ).fetchone()
        if row is None:
            return None
        passed = None if row[8] is None else bool(row[8])
        return WebScreen(*row[:8], passed, row[9])

    def web_screen(self, judge_id: str) -> WebScreen | None:
        """The judge's headphone screen, if they started one."""
        return self._screen(self.conn, judge_id)

    def start_web_screen(
        self, judge_id: str, *, seed: int, trials: int, pass_mark: int, csrf: str, started_at: str
    ) -> WebScreen:
        """The judge's screen: the one they started, else a new one with these values."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO web_screens (judge_id, seed, trials, pass_mark, csrf,"
                " started_at) VALUES (?, ?, ?, ?, ?, ?)",
                (judge_id, seed, trials, pass_mark, csrf, started_at),
            )
            screen = self._screen(conn, judge_id)
        assert screen is not None
        return screen

    def finish_web_screen(
        self, judge_id: str, *, answers: str, correct: int, passed: bool, finished_at: str
    ) -> WebScreen:
        """Record the screen's answers and outcome once; a screen already answered keeps its
        first outcome (returned either way)."""
        with self.transaction() as conn:
            conn.execute(
                "UPDATE web_screens SET answers = ?, correct = ?, passed = ?, finished_at = ?"
                " WHERE judge_id = ? AND finished_at IS NULL",
                (answers, correct, int(passed), finished_at, judge_id),
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
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (STUDY_KEY, token_hash)
            )

    # --- assignments ----------------------------------------------------------------------------

    @staticmethod
    def _release(conn: sqlite3.Connection, now: str) -> int:
        before = conn.total_changes
        conn.execute(
            "UPDATE web_assignments SET status = 'released' WHERE status = 'open'"
            f" AND (expires_at < ? OR {_BLOCKED.format(judge='judge_id')})",
            (now,),
        )
        return conn.total_changes - before

    def release_expired_assignments(self, now: str) -> int:
        """Release every open assignment whose deadline is before ``now`` (ISO 8601 UTC) or
        whose judge was blocked, so its pair's slot goes back to the pool; returns how many."""
        with self.transaction() as conn:
            return self._release(conn, now)

    def web_assignment(self, assignment_id: str) -> WebAssignment | None:
        row = self.conn.execute(
            f"{_ASSIGNMENT} WHERE assignment_id = ?", (assignment_id,)
        ).fetchone()
        return None if row is None else WebAssignment(*row)

    @staticmethod
    def _open_assignment(conn: sqlite3.Connection, judge_id: str) -> WebAssignment | None:
        row = conn.execute(
            f"{_ASSIGNMENT} WHERE judge_id = ? AND status = 'open' ORDER BY issued_at LIMIT 1",
            (judge_id,),
        ).fetchone()
        return None if row is None else WebAssignment(*row)

    def web_open_assignment(self, judge_id: str) -> WebAssignment | None:
        """The judge's open assignment (the oldest, should there be several), if any."""
        return self._open_assignment(self.conn, judge_id)

    def issue_web_assignment(
        self,
        judge_id: str,
        *,
        assignment_id: str,
        csrf: str,
        issued_at: str,
        expires_at: str,
        limit: int,
        choose: Chooser,
        batch_limit: int = 0,
    ) -> WebAssignment | None:
        """The judge's open assignment, else a new one, in one transaction; ``None`` when the
        judge answered ``limit`` questions (0: no limit), ``batch_limit`` questions of the open
        batch (0: no limit), or no pair is left for them.

        First releases the assignments expired at ``issued_at``. A new assignment (with the
        given id, CSRF token and times) goes to the pair ``choose(pair_id, filled, wanted)``
        picks among the open web batch's pairs the judge never had; ``filled`` counts answers
        (not rejected) and open assignments, so no pair is handed out beyond ``wanted``."""
        with self.transaction() as conn:
            self._release(conn, issued_at)
            held = self._open_assignment(conn, judge_id)
            if held is not None:
                return held
            if limit and self._answered(conn, judge_id) >= limit:
                return None
            batch = conn.execute(
                "SELECT iteration, status, crowd FROM batches ORDER BY iteration DESC LIMIT 1"
            ).fetchone()
            if batch is None or batch[1] not in ("built", "published") or batch[2] not in _WEB:
                return None
            if batch_limit and self._answered_in(conn, judge_id, batch[0]) >= batch_limit:
                return None
            candidates = np.array(
                conn.execute(
                    f"""
                    SELECT p.pair_id, {_HAVE} + {_OPEN}, p.answers_wanted
                    FROM pairs p JOIN hits h ON h.pair_id = p.pair_id AND h.crowd = 'web'
                    WHERE p.iteration = ? AND p.pair_id NOT IN
                          (SELECT pair_id FROM web_assignments WHERE judge_id = ?)
                    """,
                    (batch[0], judge_id),
                ).fetchall(),
                dtype=np.int64,
            ).reshape(-1, 3)
            chosen = choose(candidates[:, 0], candidates[:, 1], candidates[:, 2])
            if chosen < 0:
                return None
            pair_id = int(candidates[chosen, 0])
            assignment = WebAssignment(
                assignment_id, pair_id, judge_id, csrf, issued_at, expires_at, "open"
            )
            conn.execute(
                "INSERT INTO web_assignments (assignment_id, pair_id, judge_id, csrf, issued_at,"
                " expires_at, status) VALUES (?, ?, ?, ?, ?, ?, ?)",
                astuple(assignment),
            )
        return assignment

    def submit_web_answer(
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
    ) -> Outcome:
        """Store the answer to an assignment and mark it submitted, in one transaction.

        ``"duplicate"`` (nothing changes) when the assignment was already answered;
        ``"blocked"`` (nothing changes) when its judge was blocked meanwhile; ``"gone"``
        (nothing changes) when it was released and its pair has all its answers and open
        assignments meanwhile; else ``"stored"``, with the assignment's judge as worker and its
        hand-out time as ``accepted_at``.
        """
        with self.transaction() as conn:
            row = conn.execute(
                f"{_ASSIGNMENT} WHERE assignment_id = ?", (assignment_id,)
            ).fetchone()
            if row is None:
                raise KeyError(assignment_id)
            assignment = WebAssignment(*row)
            if assignment.status == "submitted":
                return "duplicate"
            blocked = f"SELECT {_BLOCKED.format(judge='?')}"
            if conn.execute(blocked, (assignment.judge_id,)).fetchone()[0]:
                return "blocked"
            if assignment.status == "released":
                full = conn.execute(
                    f"SELECT {_HAVE} + {_OPEN} >= p.answers_wanted FROM pairs p"
                    " WHERE p.pair_id = ?",
                    (assignment.pair_id,),
                ).fetchone()[0]
                if full:
                    return "gone"
            conn.execute(
                "INSERT OR IGNORE INTO answers (pair_id, crowd, assignment_id, worker_id, choice,"
                " score, seconds, accepted_at, submitted_at, background, comment, raw)"
                " VALUES (?, 'web', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    assignment.pair_id,
                    assignment.assignment_id,
                    assignment.judge_id,
                    choice,
                    score,
                    seconds,
                    assignment.issued_at,
                    submitted_at,
                    background,
                    comment,
                    raw,
                ),
            )
            conn.execute(
                "UPDATE web_assignments SET status = 'submitted' WHERE assignment_id = ?",
                (assignment_id,),
            )
        return "stored"

    @staticmethod
    def _answered(conn: sqlite3.Connection, judge_id: str) -> int:
        return conn.execute(
            "SELECT COUNT(*) FROM web_assignments WHERE judge_id = ? AND status = 'submitted'",
            (judge_id,),
        ).fetchone()[0]

    @staticmethod
    def _answered_in(conn: sqlite3.Connection, judge_id: str, iteration: int) -> int:
        return conn.execute(
            "SELECT COUNT(*) FROM web_assignments w JOIN pairs p USING (pair_id)"
            " WHERE w.judge_id = ? AND w.status = 'submitted' AND p.iteration = ?",
            (judge_id, iteration),
        ).fetchone()[0]

    def web_answered(self, judge_id: str) -> int:
        """How many questions the judge has answered."""
        return self._answered(self.conn, judge_id)

    # --- pairs ----------------------------------------------------------------------------------

    def web_pair(self, pair_id: int) -> dict[str, Any]:
        """The ``pairs`` row of ``pair_id`` with the durations of its clips (``query_seconds``,
        ``x_seconds``, ``y_seconds``; ``None`` while unknown; an attention check's ``x`` is the
        query's own clip)."""
        cursor = self.conn.execute(
            """
            SELECT p.*, q.seconds AS query_seconds,
                   COALESCE(cx.seconds, CASE WHEN p.x = p.query THEN q.seconds END) AS x_seconds,
                   cy.seconds AS y_seconds
            FROM pairs p
            LEFT JOIN queries q ON q.query = p.query
            LEFT JOIN candidates cx ON cx.query = p.query AND cx.document = p.x
            LEFT JOIN candidates cy ON cy.query = p.query AND cy.document = p.y
            WHERE p.pair_id = ?
            """,
            (pair_id,),
        )
        row = cursor.fetchone()
        if row is None:
            raise KeyError(pair_id)
        return dict(zip([d[0] for d in cursor.description], row, strict=True))

    def web_batch_complete(self, pair_id: int) -> bool:
        """Whether every pair of ``pair_id``'s batch has its answers (the pair is checked first,
        the batch only when the pair is complete)."""
        have_all = f"SELECT COUNT(*) FROM pairs p WHERE {{where}} AND p.answers_wanted > {_HAVE}"
        if self.conn.execute(have_all.format(where="p.pair_id = ?"), (pair_id,)).fetchone()[0]:
            return False
        iteration = "p.iteration = (SELECT iteration FROM pairs WHERE pair_id = ?)"
        return self.conn.execute(have_all.format(where=iteration), (pair_id,)).fetchone()[0] == 0

    # --- the researcher's summaries -------------------------------------------------------------

    def web_batch_progress(self) -> dict[str, Any]:
        """The last batch: ``iteration, status, crowd``, ``pairs``, ``pairs_complete``,
        ``answers`` (not rejected), ``answers_wanted`` and ``open_assignments``."""
        row = self.conn.execute(
            f"""
            SELECT b.iteration, b.status, b.crowd, COUNT(t.pair_id),
                   COALESCE(SUM(t.have >= t.wanted), 0), COALESCE(SUM(t.have), 0),
                   COALESCE(SUM(t.wanted), 0), COALESCE(SUM(t.open), 0)
            FROM (SELECT * FROM batches ORDER BY iteration DESC LIMIT 1) b
            LEFT JOIN (
                SELECT p.iteration, p.pair_id, p.answers_wanted AS wanted, {_HAVE} AS have,
                       {_OPEN} AS open
                FROM pairs p
            ) t ON t.iteration = b.iteration
            GROUP BY b.iteration
            """
        ).fetchone()
        if row is None:
            return {"iteration": None, "status": None, "crowd": None, "pairs": 0}
        names = ("iteration", "status", "crowd", "pairs", "pairs_complete", "answers")
        names += ("answers_wanted", "open_assignments")
        return dict(zip(names, row, strict=True))

    def web_judge_table(self) -> pd.DataFrame:
        """Per judge (most answers first): ``judge_id, source, answers``, the shares of "equal"
        answers and of presses of "A" as the page showed it (the raw record's ``order``, else
        the choice), ``last_answer`` and ``median_seconds`` (NaN without answers)."""
        medians = (
            self.frame("SELECT worker_id AS judge_id, seconds FROM answers WHERE crowd = 'web'")
            .groupby("judge_id", as_index=False)["seconds"]
            .median()
            .rename(columns={"seconds": "median_seconds"})
        )
        return self.frame(
            """
            SELECT j.judge_id, j.source, COUNT(a.answer_id) AS answers,
                   AVG(a.choice = 'equal') AS equal_share,
                   AVG(COALESCE(json_extract(a.raw, '$.order.clicked'), a.choice) = 'A')
                       AS a_share,
                   MAX(a.submitted_at) AS last_answer
            FROM web_judges j
            LEFT JOIN answers a ON a.worker_id = j.judge_id AND a.crowd = 'web'
            GROUP BY j.judge_id ORDER BY answers DESC, j.judge_id
            """
        ).merge(medians, on="judge_id", how="left")

    def web_participants(self, iteration: int | None = None) -> pd.DataFrame:
        """The study-platform participants: ``judge_id, participant``, the questions each has
        ``answered`` and, of them, ``answered_in`` batch ``iteration`` (0 without one)."""
        return self.frame(
            """
            SELECT j.judge_id, j.participant,
                   COUNT(w.assignment_id) AS answered,
                   COALESCE(SUM(p.iteration = ?), 0) AS answered_in
            FROM web_judges j
            LEFT JOIN web_assignments w ON w.judge_id = j.judge_id AND w.status = 'submitted'
            LEFT JOIN pairs p ON p.pair_id = w.pair_id
            WHERE j.source = 'platform'
            GROUP BY j.judge_id ORDER BY j.judge_id
            """,
            (iteration,),
        )

    def blocked_participants(self) -> list[str]:
        """The study-platform participants whose judges were blocked on review."""
        return [
            p
            for (p,) in self.conn.execute(
                "SELECT j.participant FROM worker_blocks b JOIN web_judges j"
                " ON j.judge_id = b.worker_id"
                " WHERE b.crowd = 'web' AND j.participant IS NOT NULL ORDER BY j.participant"
            )
        ]

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
            conn.executemany(
                "INSERT OR IGNORE INTO worker_blocks (crowd, worker_id, reason, decided_at,"
                " applied_at) VALUES ('web', ?, ?, ?, ?)",
                [(w, r, decided_at, decided_at) for w, r in rejected],
            )
            _reject_web_answers(conn, "worker_id", rejected, decided_at)
            conn.executemany(
                "UPDATE answers SET status = 'approved'"
                " WHERE crowd = 'web' AND worker_id = ? AND status = 'submitted'",
                [(w,) for w in approved],
            )

    def web_comments(self, limit: int = 20) -> pd.DataFrame:
        """The latest web answers carrying a background or comment: ``worker_id, submitted_at,
        background, comment``, newest first."""
        return self.frame(
            "SELECT worker_id, submitted_at, background, comment FROM answers"
            " WHERE crowd = 'web' AND (comment IS NOT NULL OR background IS NOT NULL)"
            " ORDER BY answer_id DESC LIMIT ?",
            (limit,),
        )


def _reject_web_answers(
    conn: sqlite3.Connection,
    column: Literal["assignment_id", "worker_id"],
    decisions: Sequence[tuple[str, str]],
    decided_at: str,
) -> None:
    """Reject (decided and applied at once) the submitted web answers whose ``column``
    (``assignment_id`` or ``worker_id``) is each decision's key, with its reason."""
    conn.executemany(
        "INSERT OR IGNORE INTO answer_reviews (crowd, assignment_id, pair_id, worker_id,"
        " decision, reason, decided_at, applied_at) SELECT 'web', assignment_id, pair_id,"
        " worker_id, 'reject', ?, ?, ? FROM answers"
        f" WHERE crowd = 'web' AND {column} = ? AND status = 'submitted'",
        [(reason, decided_at, decided_at, key) for key, reason in decisions],
    )
    conn.executemany(
        "UPDATE answers SET status = 'rejected'"
        f" WHERE crowd = 'web' AND {column} = ? AND status = 'submitted'",
        [(key,) for key, _ in decisions],
    )
