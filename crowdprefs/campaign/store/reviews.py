"""Review decisions: each answer approved or rejected (with a reason), workers blocked.

A decision is stored first and applied to the crowd afterwards (``applied_at``), so a crash
between the two is finished by the next review pass.
"""

from __future__ import annotations

import lazy_loader
from sqlalchemy import Column, Connection, Text, literal, select, update

from crowdprefs.campaign.store import tables
from crowdprefs.campaign.store.base import StoreBase, insert_ignore, now, refresh_pair_counts
from crowdprefs.campaign.store.temporary import temporary_table

pd = lazy_loader.load("pandas")  # imported on first use


def record_rejections(
    conn: Connection, crowd: str, rows: pd.DataFrame, decision: str = "reject"
) -> None:
    """Inside a transaction: decide to reject (or ``drop``: left out of aggregation, yet paid)
    the answers ``rows`` (``assignment_id, pair_id, worker_id, reason``) and mark those stored
    and not yet decided as rejected, so they stop counting."""
    if not len(rows):
        return
    decided = now()
    columns = zip(
        rows["assignment_id"].astype(str).tolist(),
        rows["pair_id"].astype(int).tolist(),
        rows["worker_id"].astype(str).tolist(),
        rows["reason"].astype(str).tolist(),
        strict=True,
    )
    reviews = [
        {"crowd": crowd, "assignment_id": a, "pair_id": p, "worker_id": w,
         "decision": decision, "reason": r, "decided_at": decided}
        for a, p, w, r in columns
    ]  # fmt: skip
    conn.execute(insert_ignore(conn, tables.answer_reviews), reviews)
    answers = tables.answers
    keys = [{"assignment_id": row["assignment_id"]} for row in reviews]
    with temporary_table(conn, "rejected_keys", [Column("assignment_id", Text)], keys) as rejected:
        theirs = answers.c.assignment_id.in_(select(rejected.c.assignment_id))
        conn.execute(
            update(answers)
            .where(answers.c.crowd == crowd, answers.c.status == "submitted", theirs)
            .values(status="rejected")
        )
        refresh_pair_counts(conn, select(answers.c.pair_id).where(answers.c.crowd == crowd, theirs))


class Reviews(StoreBase):
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
        if not len(flags):
            return
        decided = now()
        workers, why = flags["worker_id"].astype(str).tolist(), flags["reason"].astype(str).tolist()
        reasons = dict(zip(workers, why, strict=True))
        answers, pairs, batches = tables.answers, tables.pairs, tables.batches
        with self.transaction() as conn:
            conn.execute(
                insert_ignore(conn, tables.worker_blocks),
                [
                    {"crowd": crowd, "worker_id": w, "reason": r, "decided_at": decided}
                    for w, r in reasons.items()
                ],
            )
            flagged_rows = [{"worker_id": w} for w in reasons]
            with temporary_table(
                conn, "flagged_workers", [Column("worker_id", Text)], flagged_rows
            ) as flagged:
                query = select(
                    answers.c.assignment_id, answers.c.pair_id, answers.c.worker_id
                ).where(
                    answers.c.crowd == crowd,
                    answers.c.status == "submitted",
                    answers.c.worker_id.in_(select(flagged.c.worker_id)),
                )
                if decision == "drop":
                    open_pairs = select(pairs.c.pair_id).join(
                        batches, batches.c.iteration == pairs.c.iteration
                    )
                    query = query.where(
                        answers.c.pair_id.in_(open_pairs.where(batches.c.status != "aggregated"))
                    )
                found = conn.execute(query.order_by(answers.c.answer_id))
                theirs = pd.DataFrame.from_records(
                    [tuple(row) for row in found],  # plain tuples: pandas probes each Row
                    columns=["assignment_id", "pair_id", "worker_id"],
                )
            record_rejections(
                conn, crowd, theirs.assign(reason=theirs["worker_id"].map(reasons)), decision
            )

    def decide_approvals(self, crowd: str, iteration: int) -> int:
        """Approve ``crowd``'s answers of the batch not decided yet, in one transaction;
        returns how many."""
        answers, reviews = tables.answers, tables.answer_reviews
        batch = answers.c.pair_id.in_(
            select(tables.pairs.c.pair_id).where(tables.pairs.c.iteration == iteration)
        )
        undecided = (answers.c.crowd == crowd, answers.c.status == "submitted", batch)
        with self.transaction() as conn:
            conn.execute(
                insert_ignore(conn, reviews).from_select(
                    ["crowd", "assignment_id", "pair_id", "worker_id", "decision", "decided_at"],
                    select(
                        answers.c.crowd,
                        answers.c.assignment_id,
                        answers.c.pair_id,
                        answers.c.worker_id,
                        literal("approve", Text),
                        literal(now(), Text),
                    )
                    .where(*undecided)
                    .order_by(answers.c.answer_id),
                )
            )
            # submitted and approved answers both count: the pairs' counts stay as they are
            approved = conn.execute(update(answers).where(*undecided).values(status="approved"))
        return approved.rowcount

    def blocked_workers(self, crowd: str) -> set[str]:
        """The workers blocked (decided, applied or not) on ``crowd``."""
        blocks = tables.worker_blocks
        with self.read() as conn:
            return set(
                conn.execute(select(blocks.c.worker_id).where(blocks.c.crowd == crowd)).scalars()
            )

    def pending_blocks(self, crowd: str) -> pd.DataFrame:
        """Blocks decided but not applied to ``crowd`` yet: ``worker_id, reason``."""
        blocks = tables.worker_blocks
        return self.frame(
            select(blocks.c.worker_id, blocks.c.reason)
            .where(blocks.c.crowd == crowd, blocks.c.applied_at.is_(None))
            .order_by(blocks.c.decided_at, blocks.c.worker_id)
        )

    def pending_reviews(self, crowd: str, decision: str) -> pd.DataFrame:
        """Decisions (``approve``, ``reject`` or ``drop``) not applied to ``crowd`` yet:
        ``assignment_id, reason``."""
        reviews = tables.answer_reviews
        return self.frame(
            select(reviews.c.assignment_id, reviews.c.reason)
            .where(
                reviews.c.crowd == crowd,
                reviews.c.decision == decision,
                reviews.c.applied_at.is_(None),
            )
            .order_by(reviews.c.decided_at, reviews.c.assignment_id)
        )

    def block_applied(self, crowd: str, worker_id: str) -> None:
        """Record that ``crowd`` blocked the worker."""
        blocks = tables.worker_blocks
        with self.transaction() as conn:
            conn.execute(
                update(blocks)
                .where(blocks.c.crowd == crowd, blocks.c.worker_id == worker_id)
                .values(applied_at=now())
            )

    def review_applied(self, crowd: str, assignment_id: str) -> None:
        """Record that ``crowd`` applied the decision on the assignment."""
        reviews = tables.answer_reviews
        with self.transaction() as conn:
            conn.execute(
                update(reviews)
                .where(reviews.c.crowd == crowd, reviews.c.assignment_id == assignment_id)
                .values(applied_at=now())
            )

    def reviews(self, crowd: str | None = None) -> pd.DataFrame:
        """Every review decision: ``crowd, assignment_id, pair_id, worker_id, decision, reason,
        decided_at, applied_at``, in the order they were decided."""
        reviews = tables.answer_reviews
        query = select(reviews).order_by(
            reviews.c.decided_at, reviews.c.crowd, reviews.c.assignment_id
        )
        return self.frame(query.where(reviews.c.crowd == crowd) if crowd else query)

    def worker_blocks(self, crowd: str | None = None) -> pd.DataFrame:
        """Every block: ``crowd, worker_id, reason, decided_at, applied_at``, in the order they
        were decided."""
        blocks = tables.worker_blocks
        query = select(blocks).order_by(blocks.c.decided_at, blocks.c.crowd, blocks.c.worker_id)
        return self.frame(query.where(blocks.c.crowd == crowd) if crowd else query)
