"""What each crowd holds for a pair (a HIT or a task) and the price it was published at."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import lazy_loader
from sqlalchemy import Column, Integer, func, select, update

from crowdprefs.campaign.budget import PRICE_COLUMNS
from crowdprefs.campaign.store import tables
from crowdprefs.campaign.store.base import StoreBase, now
from crowdprefs.campaign.store.temporary import insert_many, temporary_rows

np = lazy_loader.load("numpy")  # imported on first use
pd = lazy_loader.load("pandas")  # imported on first use

_h, _p = tables.hits.c, tables.pairs.c


class FeeTerms(Protocol):
    """The fee terms a crowd charges, stored with each HIT it publishes: the crowd's own fee
    model (e.g. :class:`crowdprefs.campaign.budget.FeeModel`), never chosen by the store."""

    rate: float
    rate_10_or_more: float
    minimum: float


class Hits(StoreBase):
    """One HIT per pair and crowd: its id, size (assignments), status and price."""

    def add_hits(self, crowd: str, hits: pd.DataFrame, reward: float, fees: FeeTerms) -> int:
        """Record that ``crowd`` holds a HIT for each row's ``pair_id``, priced at ``reward``
        and ``fees`` (the crowd's fee terms); one transaction; returns how many were new (pairs
        ``crowd`` already holds are left as they are).

        ``hit_id`` defaults to ``CROWD-PAIR_ID`` and ``max_assignments`` to the pair's
        ``answers_wanted``; a ``reward`` column (e.g. read back from MTurk) overrides ``reward``
        and a ``created_at`` column (ISO 8601, e.g. of a recorded campaign) the time now.
        """
        pair_ids = hits["pair_id"].astype(int)
        hit_ids = hits["hit_id"] if "hit_id" in hits else crowd + "-" + pair_ids.astype(str)
        sizes = hits["max_assignments"] if "max_assignments" in hits else hits["answers_wanted"]
        rewards = hits["reward"] if "reward" in hits else pd.Series(reward, index=hits.index)
        times = hits["created_at"] if "created_at" in hits else pd.Series(now(), index=hits.index)
        names = ("crowd", "pair_id", "hit_id", "max_assignments", "created_at", *PRICE_COLUMNS)
        rows = [
            (crowd, p, str(h), int(n), str(c), float(r), fees.rate, fees.rate_10_or_more,
             fees.minimum)
            for p, h, n, c, r in zip(
                pair_ids.tolist(), hit_ids, sizes, times, rewards, strict=True
            )
        ]  # fmt: skip
        held = select(func.count()).where(_h.crowd == crowd)
        with self.transaction() as conn:
            before = conn.execute(held).scalar_one()
            insert_many(conn, tables.hits, names, rows, ignore_conflicts=True)
            return conn.execute(held).scalar_one() - before

    def hits(self, crowd: str | None = None) -> pd.DataFrame:
        """``crowd, pair_id, iteration, hit_id, max_assignments, created_at, status`` and the
        price (:data:`~crowdprefs.campaign.budget.PRICE_COLUMNS`) of every HIT (of ``crowd``),
        in the order they were recorded (by time, then crowd and pair)."""
        statement = (
            select(
                _h.crowd, _h.pair_id, _p.iteration, _h.hit_id, _h.max_assignments,
                _h.created_at, _h.status, *(_h[c] for c in PRICE_COLUMNS),
            )
            .join(tables.pairs, _p.pair_id == _h.pair_id)
            .order_by(_h.created_at, _h.crowd, _h.pair_id)
        )  # fmt: skip
        if crowd:
            statement = statement.where(_h.crowd == crowd)
        return self.frame(statement)

    def batch_hits(self, crowd: str, iteration: int) -> pd.DataFrame:
        """The HITs ``crowd`` holds for the batch, indexed by ``pair_id``: ``hit_id, size``
        (assignments), ``wanted`` (the pair's accepted answers wanted), ``rejected`` (answers
        rejected or dropped on review) and the HIT's price (``PRICE_COLUMNS``)."""
        r = tables.answer_reviews.c
        rejected = (
            select(func.count())
            .where(r.pair_id == _p.pair_id, r.crowd == _h.crowd, r.decision.in_(["reject", "drop"]))
            .scalar_subquery()
        )
        statement = (
            select(
                _h.pair_id, _h.hit_id, _h.max_assignments.label("size"),
                _p.answers_wanted.label("wanted"), rejected.label("rejected"),
                *(_h[c] for c in PRICE_COLUMNS),
            )
            .select_from(tables.pairs)
            .join(tables.hits, (_h.pair_id == _p.pair_id) & (_h.crowd == crowd))
            .where(_p.iteration == iteration)
        )  # fmt: skip
        return self.frame(statement).set_index("pair_id")

    def resize_pairs(
        self,
        crowd: str,
        *,
        wanted: Mapping[int, int] | None = None,
        sizes: Mapping[int, int] | None = None,
    ) -> None:
        """Set pairs' ``answers_wanted`` and the sizes (assignments) of ``crowd``'s HITs for
        pairs, both by ``pair_id``, in one transaction."""
        changes = (
            (tables.pairs, "answers_wanted", wanted, ()),
            (tables.hits, "max_assignments", sizes, (_h.crowd == crowd,)),
        )
        with self.transaction() as conn:  # each an UPDATE joined with the new values
            for table, column, values, where in changes:
                rows = [(int(p), int(n)) for p, n in (values or {}).items()]
                if not rows:
                    continue
                columns = [
                    Column("pair_id", Integer, primary_key=True, autoincrement=False),
                    Column("n", Integer),
                ]
                with temporary_rows(conn, "new_sizes", columns, rows) as new:
                    conn.execute(
                        update(table)
                        .where(table.c.pair_id == new.c.pair_id, *where)
                        .values({column: new.c.n})
                    )

    def set_hit_status(self, crowd: str, hit_id: str, status: str) -> None:
        """Mark one of ``crowd``'s HITs (``open`` or ``expired``)."""
        with self.transaction() as conn:
            conn.execute(
                update(tables.hits)
                .where(_h.crowd == crowd, _h.hit_id == hit_id)
                .values(status=status)
            )

    def hit_prices(self) -> dict[str, np.ndarray]:
        """Every HIT's size and price, grouped, as columns: ``size``, the ``PRICE_COLUMNS``
        (NaN for HITs published before prices were stored) and ``hits`` (how many HITs share
        them)."""
        names = ("size", *PRICE_COLUMNS, "hits")
        grouped = [_h.max_assignments, *(_h[c] for c in PRICE_COLUMNS)]
        rows = self.rows(select(*grouped, func.count()).group_by(*grouped))
        values = np.array([tuple(row) for row in rows], dtype=float).reshape(len(rows), len(names))
        return dict(zip(names, values.T, strict=True))

    def batch_crowd(self, iteration: int) -> str | None:
        """The crowd holding HITs for pairs of batch ``iteration`` (the first by name should
        several; ``None``: none)."""
        held = tables.pairs.join(tables.hits, _h.pair_id == _p.pair_id)
        return self.scalar(
            select(func.min(_h.crowd)).select_from(held).where(_p.iteration == iteration)
        )
