"""Answers as they arrived from the crowds, unique per crowd assignment."""

from __future__ import annotations

import lazy_loader
import numpy as np

from crowdprefs.campaign.store.base import SQLiteBase
from crowdprefs.campaign.store.collection import CLIP_JOINS, LISTEN_SECONDS
from crowdprefs.campaign.store.reviews import record_rejections

pd = lazy_loader.load("pandas")  # imported on first use

ANSWER_COLUMNS = (
    "pair_id",
    "crowd",
    "assignment_id",
    "worker_id",
    "choice",
    "score",
    "seconds",
    "accepted_at",
    "submitted_at",
    "background",
    "comment",
    "raw",
)
"""What :meth:`Answers.add_answers` stores of each answer (optional ones may be missing)."""

SHOWN_A_IS_X = (
    "COALESCE(CASE WHEN json_valid(a.raw) THEN json_extract(a.raw, '$.order.a') = p.x END,"
    " p.a_is_x)"
)
"""Whether the judge was shown x as variation A: the page's own order where the answer's raw
record logs it (web questions with sides randomised per question), else the pair's sides."""


class Answers(SQLiteBase):
    """The ``answers`` table and the views of it the campaign needs."""

    def answers(
        self, iteration: int | None = None, *, include_rejected: bool = False
    ) -> pd.DataFrame:
        """Answers (of one batch, or all) with every ``answers`` column (``status`` included)
        joined with their pair's ``iteration, query, x, y, kind, a_is_x, expected``, in the
        order they arrived; rejected ones only with ``include_rejected``."""
        clauses, params = [], []
        if iteration is not None:
            clauses.append("p.iteration = ?")
            params.append(iteration)
        if not include_rejected:
            clauses.append("a.status != 'rejected'")
        where = f"WHERE {' AND '.join(clauses)}" if clauses else ""
        return self.frame(
            f"""
            SELECT a.*, p.iteration, p.query, p.x, p.y, p.kind, p.a_is_x, p.expected
            FROM answers a JOIN pairs p USING (pair_id) {where}
            ORDER BY a.answer_id
            """,
            params,
        )

    def shown_answers(self) -> pd.DataFrame:
        """Every usable answer (not rejected, not empty) as the judge saw it, in the order they
        arrived: ``pair_id, worker_id, score`` (from x's point of view) and ``a_is_x`` (whether
        x was shown as A, :data:`SHOWN_A_IS_X`)."""
        return self.frame(
            f"""
            SELECT a.pair_id, a.worker_id, a.score, {SHOWN_A_IS_X} AS a_is_x
            FROM answers a JOIN pairs p USING (pair_id)
            WHERE a.status != 'rejected' AND a.choice != ''
            ORDER BY a.answer_id
            """
        )

    def add_answers(
        self, crowd: str, rows: pd.DataFrame, *, rejections: pd.DataFrame | None = None
    ) -> int:
        """Store ``crowd``'s answers in one transaction; returns how many were new.

        ``rows`` has the :data:`ANSWER_COLUMNS` (missing optional ones are NULL); answers
        already stored (same crowd and assignment) are skipped. An optional ``status`` column
        (``approved``/``rejected``) records decisions made outside crowdprefs on answers not
        decided yet. ``rejections`` (``assignment_id, pair_id, worker_id, reason``) are decided
        in the same transaction: answers that failed validation, stored or not.
        """
        frame = rows.assign(crowd=crowd).reindex(columns=ANSWER_COLUMNS).astype(object)
        frame = frame.where(frame.notna(), None)
        statuses = rows["status"] if "status" in rows else pd.Series("submitted", rows.index)
        decided = [
            (str(s), crowd, str(a))
            for a, s in zip(rows["assignment_id"], statuses, strict=True)
            if s != "submitted"
        ]
        with self.transaction() as conn:
            new = conn.executemany(  # rows inserted (the pair_counts triggers' not counted)
                f"INSERT OR IGNORE INTO answers ({', '.join(ANSWER_COLUMNS)}) "
                f"VALUES ({', '.join('?' * len(ANSWER_COLUMNS))})",
                frame.itertuples(index=False, name=None),
            ).rowcount
            conn.executemany(
                "UPDATE answers SET status = ? WHERE crowd = ? AND assignment_id = ?"
                " AND status = 'submitted'",
                decided,
            )
            if rejections is not None and len(rejections):
                record_rejections(conn, crowd, rejections)
        return new

    def answers_per_pair(self, crowd: str) -> pd.Series:
        """How many answers (any status) ``crowd`` gave each pair, indexed by ``pair_id``."""
        return self.frame(
            "SELECT pair_id, COUNT(*) AS n FROM answers WHERE crowd = ? GROUP BY pair_id",
            (crowd,),
        ).set_index("pair_id")["n"]

    def answer_counts(self, iteration: int) -> pd.DataFrame:
        """Per pair of the batch, its accepted answers counted by score: ``more`` (score +1, x
        preferred), ``equal``, ``less`` (0 for a pair without answers), indexed by ``pair_id``
        in pair order; what :func:`crowdprefs.campaign.aggregate.count_answers` gives from
        :meth:`answers`, read from the ``pair_counts`` the store keeps as answers arrive and
        are decided (one row a pair, never the answers themselves)."""
        rows = self.conn.execute(
            """
            SELECT p.pair_id, COALESCE(c.more, 0), COALESCE(c.equal, 0), COALESCE(c.less, 0)
            FROM pairs p LEFT JOIN pair_counts c USING (pair_id)
            WHERE p.iteration = ? ORDER BY p.pair_id
            """,
            (iteration,),
        ).fetchall()
        values = np.array(rows, dtype=np.int64).reshape(-1, 4)
        return pd.DataFrame(
            values[:, 1:],
            index=pd.Index(values[:, 0], name="pair_id"),
            columns=["more", "equal", "less"],
        )

    def answer_seconds(self, iteration: int) -> np.ndarray:
        """The seconds each accepted answer of the batch took (NaN when unknown), in the order
        the answers arrived."""
        rows = self.conn.execute(
            "SELECT a.seconds FROM answers a JOIN pairs p USING (pair_id)"
            " WHERE p.iteration = ? AND a.status != 'rejected' ORDER BY a.answer_id",
            (iteration,),
        )
        return np.array([s for (s,) in rows], dtype=np.float64)  # NULL becomes NaN

    def known_assignments(self, crowd: str) -> set[str]:
        """``crowd``'s assignments already handled: stored as answers or decided on review."""
        rows = self.conn.execute(
            "SELECT assignment_id FROM answers WHERE crowd = ?"
            " UNION SELECT assignment_id FROM answer_reviews WHERE crowd = ?",
            (crowd, crowd),
        )
        return {a for (a,) in rows}

    def answer_total(self) -> int:
        """How many answers count (every one not rejected): the sum of the kept per-pair
        counts, one row a pair instead of one an answer."""
        return self.conn.execute(
            "SELECT COALESCE(SUM(more + equal + less), 0) FROM pair_counts"
        ).fetchone()[0]

    def pair_matches(self) -> pd.DataFrame:
        """Every pair with the HIT ids any crowd published it as (to match recorded answers):
        ``pair_id, iteration, query, x, y, a_is_x, hit_id`` (NULL when unpublished), by
        iteration."""
        return self.frame(
            "SELECT p.pair_id, p.iteration, p.query, p.x, p.y, p.a_is_x, h.hit_id"
            " FROM pairs p LEFT JOIN hits h ON h.pair_id = p.pair_id ORDER BY p.iteration"
        )

    def audit_answers(self, crowd: str | None = None) -> pd.DataFrame:
        """Every answer (rejected ones included; of ``crowd`` when given) with what an audit
        needs, in the order they arrived: ``iteration, pair_id, hit_id`` (NULL for answers not
        from a recorded HIT), ``created_at`` (the HIT's, else the batch's publication or
        creation), ``max_assignments``, ``reward`` (the HIT's, NULL when unknown), ``query, x,
        y, a_is_x, shown_a_is_x`` (the sides the judge saw, :data:`SHOWN_A_IS_X`), ``kind,
        expected, worker_id, assignment_id, status, choice, score, seconds,
        listen_seconds`` (the pair's three clips, NULL while a duration is unknown),
        ``accepted_at, submitted_at, background, comment``."""
        where, params = ("WHERE a.crowd = ?", (crowd,)) if crowd else ("", ())
        return self.frame(
            f"""
            SELECT p.iteration, a.pair_id, h.hit_id,
                   COALESCE(h.created_at, b.published_at, b.created_at) AS created_at,
                   COALESCE(h.max_assignments, p.answers_wanted) AS max_assignments,
                   h.reward, p.query, p.x, p.y, p.a_is_x, {SHOWN_A_IS_X} AS shown_a_is_x,
                   p.kind, p.expected,
                   a.worker_id, a.assignment_id, a.status, a.choice, a.score, a.seconds,
                   {LISTEN_SECONDS} AS listen_seconds,
                   a.accepted_at, a.submitted_at, a.background, a.comment
            FROM answers a
            JOIN pairs p USING (pair_id)
            JOIN batches b ON b.iteration = p.iteration
            LEFT JOIN hits h ON h.pair_id = a.pair_id AND h.crowd = a.crowd
            {CLIP_JOINS}
            {where}
            ORDER BY a.answer_id
            """,
            params,
        )
