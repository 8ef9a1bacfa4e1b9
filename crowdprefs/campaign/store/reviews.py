"""Review decisions: each answer approved or rejected (with a reason), workers blocked.

A decision is stored first and applied to the crowd afterwards (``applied_at``), so a crash
between the two is finished by the next review pass.
"""

from __future__ import annotations

import json
import sqlite3

import lazy_loader

from crowdprefs.campaign.store.base import SQLiteBase, now

pd = lazy_loader.load("pandas")  # imported on first use


def record_rejections(
    conn: sqlite3.Connection, crowd: str, rows: pd.DataFrame, decision: str = "reject"
) -> None:
    """Inside a transaction: decide to reject (or ``drop``: left out of aggregation, yet paid)
    the answers ``rows`` (``assignment_id, pair_id, worker_id, reason``) and mark those stored
    and not yet decided as rejected, so they stop counting."""
    decided = now()
    conn.executemany(
        "INSERT OR IGNORE INTO answer_reviews"
        " (crowd, assignment_id, pair_id, worker_id, decision, reason, decided_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (crowd, str(a), int(p), str(w), decision, str(r), decided)
            for a, p, w, r in zip(
                rows["assignment_id"],
                rows["pair_id"],
                rows["worker_id"],
                rows["reason"],
                strict=True,
            )
        ],  # fmt: skip
    )
    conn.executemany(
        "UPDATE answers SET status = 'rejected' WHERE crowd = ? AND assignment_id = ?"
        " AND status = 'submitted'",
        [(crowd, str(a)) for a in rows["assignment_id"]],
    )


class Reviews(SQLiteBase):
    """``answer_reviews`` and ``worker_blocks``."""

    def decide_rejections(self, crowd: str, rows: pd.DataFrame) -> None:
        """Reject ``crowd``'s answers ``rows`` (``assignment_id, pair_id, worker_id, reason``),
        in one transaction; answers already decided keep their decision."""
        with self.transaction() as conn:
            record_rejections(conn, crowd, rows)

    def decide_blocks(self, crowd: str, flags: pd.DataFrame, decision: str = "reject") -> None:
        """Block the flagged workers (``worker_id, reason``) and reject (or ``drop``) their
        answers not decided yet, each with the worker's reason, in one transaction. A drop
        leaves the answers of aggregated batches alone: they made verdicts that stand."""
        decided = now()
        rows = [(str(w), str(r)) for w, r in zip(flags["worker_id"], flags["reason"], strict=True)]
        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO worker_blocks (crowd, worker_id, reason, decided_at)"
                " VALUES (?, ?, ?, ?)",
                [(crowd, w, r, decided) for w, r in rows],
            )
            theirs = pd.DataFrame(
                conn.execute(
                    "SELECT assignment_id, pair_id, worker_id FROM answers"
                    " WHERE crowd = ? AND status = 'submitted' AND worker_id IN"
                    " (SELECT value FROM json_each(?)) AND (? != 'drop' OR pair_id IN"
                    " (SELECT p.pair_id FROM pairs p JOIN batches b USING (iteration)"
                    " WHERE b.status != 'aggregated'))",
                    (crowd, json.dumps([w for w, _ in rows]), decision),
                ).fetchall(),
                columns=["assignment_id", "pair_id", "worker_id"],
            )
            reasons = theirs["worker_id"].map(dict(rows))
            record_rejections(conn, crowd, theirs.assign(reason=reasons), decision)

    def decide_approvals(self, crowd: str, iteration: int) -> int:
        """Approve ``crowd``'s answers of the batch not decided yet, in one transaction;
        returns how many."""
        with self.transaction() as conn:
            rows = conn.execute(
                "SELECT a.assignment_id, a.pair_id, a.worker_id FROM answers a"
                " JOIN pairs p USING (pair_id)"
                " WHERE a.crowd = ? AND p.iteration = ? AND a.status = 'submitted'",
                (crowd, iteration),
            ).fetchall()
            decided = now()
            conn.executemany(
                "INSERT OR IGNORE INTO answer_reviews"
                " (crowd, assignment_id, pair_id, worker_id, decision, decided_at)"
                " VALUES (?, ?, ?, ?, 'approve', ?)",
                [(crowd, a, p, w, decided) for a, p, w in rows],
            )
            conn.executemany(
                "UPDATE answers SET status = 'approved' WHERE crowd = ? AND assignment_id = ?",
                [(crowd, a) for a, _, _ in rows],
            )
        return len(rows)

    def blocked_workers(self, crowd: str) -> set[str]:
        """The workers blocked (decided, applied or not) on ``crowd``."""
        rows = self.conn.execute("SELECT worker_id FROM worker_blocks WHERE crowd = ?", (crowd,))
        return {w for (w,) in rows}

    def pending_blocks(self, crowd: str) -> pd.DataFrame:
        """Blocks decided but not applied to ``crowd`` yet: ``worker_id, reason``."""
        return self.frame(
            "SELECT worker_id, reason FROM worker_blocks WHERE crowd = ? AND applied_at IS NULL",
            (crowd,),
        )

    def pending_reviews(self, crowd: str, decision: str) -> pd.DataFrame:
        """Decisions (``approve``, ``reject`` or ``drop``) not applied to ``crowd`` yet:
        ``assignment_id, reason``."""
        return self.frame(
            "SELECT assignment_id, reason FROM answer_reviews"
            " WHERE crowd = ? AND decision = ? AND applied_at IS NULL",
            (crowd, decision),
        )

    def block_applied(self, crowd: str, worker_id: str) -> None:
        """Record that ``crowd`` blocked the worker."""
        with self.transaction() as conn:
            conn.execute(
                "UPDATE worker_blocks SET applied_at = ? WHERE crowd = ? AND worker_id = ?",
                (now(), crowd, worker_id),
            )

    def review_applied(self, crowd: str, assignment_id: str) -> None:
        """Record that ``crowd`` applied the decision on the assignment."""
        with self.transaction() as conn:
            conn.execute(
                "UPDATE answer_reviews SET applied_at = ? WHERE crowd = ? AND assignment_id = ?",
                (now(), crowd, assignment_id),
            )

    def reviews(self, crowd: str | None = None) -> pd.DataFrame:
        """Every review decision: ``crowd, assignment_id, pair_id, worker_id, decision, reason,
        decided_at, applied_at``."""
        where, params = ("WHERE crowd = ?", (crowd,)) if crowd else ("", ())
        return self.frame(f"SELECT * FROM answer_reviews {where} ORDER BY rowid", params)

    def worker_blocks(self, crowd: str | None = None) -> pd.DataFrame:
        """Every block: ``crowd, worker_id, reason, decided_at, applied_at``."""
        where, params = ("WHERE crowd = ?", (crowd,)) if crowd else ("", ())
        return self.frame(f"SELECT * FROM worker_blocks {where} ORDER BY rowid", params)
