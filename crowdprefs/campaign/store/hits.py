"""What each crowd holds for a pair (a HIT or a task) and the price it was published at."""

from __future__ import annotations

from collections.abc import Mapping

import lazy_loader
import numpy as np

from crowdprefs.campaign.budget import PRICE_COLUMNS, FeeModel
from crowdprefs.campaign.store.base import SQLiteBase, now

pd = lazy_loader.load("pandas")  # imported on first use


class Hits(SQLiteBase):
    """One HIT per pair and crowd: its id, size (assignments), status and price."""

    def add_hits(self, crowd: str, hits: pd.DataFrame, reward: float, fees: FeeModel) -> int:
        """Record that ``crowd`` holds a HIT for each row's ``pair_id``, priced at ``reward``
        and ``fees``; one transaction; returns how many were new (pairs ``crowd`` already
        holds are left as they are).

        ``hit_id`` defaults to ``CROWD-PAIR_ID`` and ``max_assignments`` to the pair's
        ``answers_wanted``; a ``reward`` column (e.g. read back from MTurk) overrides ``reward``
        and a ``created_at`` column (ISO 8601, e.g. of a recorded campaign) the time now.
        """
        pair_ids = hits["pair_id"].astype(int)
        hit_ids = hits["hit_id"] if "hit_id" in hits else crowd + "-" + pair_ids.astype(str)
        sizes = hits["max_assignments"] if "max_assignments" in hits else hits["answers_wanted"]
        rewards = hits["reward"] if "reward" in hits else pd.Series(reward, index=hits.index)
        times = hits["created_at"] if "created_at" in hits else pd.Series(now(), index=hits.index)
        rows = [
            (crowd, p, str(h), int(n), c, float(r), fees.rate, fees.rate_10_or_more,
             fees.minimum)
            for p, h, n, c, r in zip(pair_ids, hit_ids, sizes, times, rewards, strict=True)
        ]  # fmt: skip
        with self.transaction() as conn:
            before = conn.total_changes
            conn.executemany(
                "INSERT OR IGNORE INTO hits (crowd, pair_id, hit_id, max_assignments, created_at,"
                f" {', '.join(PRICE_COLUMNS)}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
            return conn.total_changes - before

    def hits(self, crowd: str | None = None) -> pd.DataFrame:
        """``crowd, pair_id, iteration, hit_id, max_assignments, created_at, status`` and the
        price (:data:`~crowdprefs.campaign.budget.PRICE_COLUMNS`) of every HIT (of ``crowd``)."""
        where, params = ("WHERE h.crowd = ?", (crowd,)) if crowd else ("", ())
        return self.frame(
            f"""
            SELECT h.crowd, h.pair_id, p.iteration, h.hit_id, h.max_assignments, h.created_at,
                   h.status, {", ".join(f"h.{c}" for c in PRICE_COLUMNS)}
            FROM hits h JOIN pairs p USING (pair_id) {where} ORDER BY h.rowid
            """,
            params,
        )

    def batch_hits(self, crowd: str, iteration: int) -> pd.DataFrame:
        """The HITs ``crowd`` holds for the batch, indexed by ``pair_id``: ``hit_id, size``
        (assignments), ``wanted`` (the pair's accepted answers wanted), ``rejected`` (answers
        rejected or dropped on review) and the HIT's price (``PRICE_COLUMNS``)."""
        return self.frame(
            f"""
            SELECT h.pair_id, h.hit_id, h.max_assignments AS size, p.answers_wanted AS wanted, (
                SELECT COUNT(*) FROM answer_reviews r
                WHERE r.pair_id = p.pair_id AND r.crowd = h.crowd
                    AND r.decision IN ('reject', 'drop')
            ) AS rejected, {", ".join(f"h.{c}" for c in PRICE_COLUMNS)}
            FROM pairs p JOIN hits h ON h.pair_id = p.pair_id AND h.crowd = ?
            WHERE p.iteration = ?
            """,
            (crowd, iteration),
        ).set_index("pair_id")

    def resize_pairs(
        self,
        crowd: str,
        *,
        wanted: Mapping[int, int] | None = None,
        sizes: Mapping[int, int] | None = None,
    ) -> None:
        """Set pairs' ``answers_wanted`` and the sizes (assignments) of ``crowd``'s HITs for
        pairs, both by ``pair_id``, in one transaction."""
        with self.transaction() as conn:
            conn.executemany(
                "UPDATE pairs SET answers_wanted = ? WHERE pair_id = ?",
                [(int(n), int(p)) for p, n in (wanted or {}).items()],
            )
            conn.executemany(
                "UPDATE hits SET max_assignments = ? WHERE crowd = ? AND pair_id = ?",
                [(int(n), crowd, int(p)) for p, n in (sizes or {}).items()],
            )

    def set_hit_status(self, crowd: str, hit_id: str, status: str) -> None:
        """Mark one of ``crowd``'s HITs (``open`` or ``expired``)."""
        with self.transaction() as conn:
            conn.execute(
                "UPDATE hits SET status = ? WHERE crowd = ? AND hit_id = ?",
                (status, crowd, hit_id),
            )

    def hit_prices(self) -> dict[str, np.ndarray]:
        """Every HIT's size and price, grouped, as columns: ``size``, the ``PRICE_COLUMNS``
        (NaN for HITs published before prices were stored) and ``hits`` (how many HITs share
        them)."""
        names = ("size", *PRICE_COLUMNS, "hits")
        columns = ", ".join(PRICE_COLUMNS)
        rows = self.conn.execute(
            f"SELECT max_assignments, {columns}, COUNT(*) FROM hits"
            f" GROUP BY max_assignments, {columns}"
        ).fetchall()
        values = np.array(rows, dtype=float).reshape(len(rows), len(names))
        return dict(zip(names, values.T, strict=True))

    def batch_crowd(self, iteration: int) -> str | None:
        """The crowd holding HITs for pairs of batch ``iteration`` (the first by name should
        several; ``None``: none)."""
        row = self.conn.execute(
            "SELECT c.crowd FROM (SELECT DISTINCT crowd FROM hits) c WHERE EXISTS ("
            " SELECT 1 FROM pairs p JOIN hits h ON h.crowd = c.crowd AND h.pair_id = p.pair_id"
            " WHERE p.iteration = ?) ORDER BY c.crowd LIMIT 1",
            (iteration,),
        ).fetchone()
        return None if row is None else row[0]
