"""Batches and their pairs: building a batch, moving it through its states, verdicts, and the
sort cache replayed from them."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

import lazy_loader

from crowdprefs.campaign.batches import check_transition
from crowdprefs.campaign.store.base import SQLiteBase, now
from crowdprefs.errors import StateError

pd = lazy_loader.load("pandas")  # imported on first use

PAIR_COLUMNS = (
    "query",
    "x",
    "y",
    "a_is_x",
    "position",
    "kind",
    "expected",
    "answers_wanted",
)
"""What :meth:`Batches.create_batch` stores of each new pair."""

_SHORT = """
    SELECT p.pair_id, COUNT(a.answer_id) AS have, p.answers_wanted AS wanted
    FROM pairs p LEFT JOIN answers a
        ON a.pair_id = p.pair_id AND a.status != 'rejected' AND a.crowd = ?
    WHERE p.iteration = ?
    GROUP BY p.pair_id HAVING COUNT(a.answer_id) < p.answers_wanted
"""
"""Pairs of a batch short of answers from one crowd (its answers grouped)."""

_SHORT_ANY = """
    SELECT p.pair_id, COALESCE(c.more + c.equal + c.less, 0) AS have,
           p.answers_wanted AS wanted
    FROM pairs p LEFT JOIN pair_counts c USING (pair_id)
    WHERE p.iteration = ? AND COALESCE(c.more + c.equal + c.less, 0) < p.answers_wanted
    ORDER BY p.pair_id
"""
"""Pairs of a batch short of answers from any crowd (read from ``pair_counts``)."""


class Batches(SQLiteBase):
    """One batch per iteration, its pairs and their verdicts."""

    def last_batch(self) -> dict | None:
        """``iteration, status, crowd, created_at`` of the latest batch (``None``: no batch)."""
        row = self.conn.execute(
            "SELECT iteration, status, crowd, created_at FROM batches"
            " ORDER BY iteration DESC LIMIT 1"
        ).fetchone()
        if row is None:
            return None
        return dict(zip(("iteration", "status", "crowd", "created_at"), row, strict=True))

    def batches(self) -> pd.DataFrame:
        """Every batch: ``iteration, status, crowd`` and the time of each status."""
        return self.frame("SELECT * FROM batches ORDER BY iteration")

    def create_batch(self, iteration: int, pairs: pd.DataFrame) -> None:
        """Store a new batch (``built``) with its pairs (:data:`PAIR_COLUMNS`, inserted in row
        order), in one transaction. Refused unless ``iteration`` follows an aggregated batch."""
        frame = pairs.reindex(columns=PAIR_COLUMNS)
        columns = [  # column by column: far faster than converting every row of the frame
            frame[name].astype(object).where(frame[name].notna(), None).tolist()
            for name in PAIR_COLUMNS
        ]
        with self.transaction() as conn:
            last = conn.execute(
                "SELECT iteration, status FROM batches ORDER BY iteration DESC LIMIT 1"
            ).fetchone()
            expected = 1 if last is None else last[0] + 1
            if (last is not None and last[1] != "aggregated") or iteration != expected:
                raise StateError(
                    f"batch {iteration} cannot be built: "
                    + (f"batch {last[0]} is {last[1]}" if last else "no batch exists yet")
                )
            conn.execute(
                "INSERT INTO batches (iteration, status, created_at) VALUES (?, 'built', ?)",
                (iteration, now()),
            )
            conn.executemany(
                f"INSERT INTO pairs (iteration, {', '.join(PAIR_COLUMNS)})"
                f" VALUES (?, {', '.join('?' * len(PAIR_COLUMNS))})",
                zip([iteration] * len(frame), *columns, strict=True),
            )

    def advance_batch(self, iteration: int, to: str, *, crowd: str | None = None) -> bool:
        """Move batch ``iteration`` on to ``to`` when it is ready; whether it is there now.

        One transaction reads the stored status, checks the step
        (:func:`crowdprefs.campaign.batches.check_transition`: never back, never skipping) and
        the batch's readiness: ``published`` when ``crowd`` holds every pair (the batch then
        belongs to ``crowd``), ``collected`` when every pair has its wanted answers,
        ``aggregated`` when every pair has its verdict (see :meth:`save_verdicts`).
        """
        with self.transaction() as conn:
            return self._advance(conn, iteration, to, crowd)

    def _advance(
        self, conn: sqlite3.Connection, iteration: int, to: str, crowd: str | None
    ) -> bool:
        row = conn.execute(
            "SELECT status FROM batches WHERE iteration = ?", (iteration,)
        ).fetchone()
        if row is None:
            raise StateError(f"there is no batch {iteration}")
        if not check_transition(iteration, row[0], to):
            return True
        if to == "published":
            if crowd is None:
                raise StateError(f"batch {iteration} can only be published to a named crowd")
            ready = not conn.execute(
                "SELECT 1 FROM pairs WHERE iteration = ? AND pair_id NOT IN"
                " (SELECT pair_id FROM hits WHERE crowd = ?) LIMIT 1",
                (iteration, crowd),
            ).fetchone()
        elif to == "collected":
            ready = not conn.execute(_SHORT_ANY, (iteration,)).fetchone()
        else:
            ready = not conn.execute(
                "SELECT 1 FROM pairs WHERE iteration = ? AND verdict IS NULL LIMIT 1",
                (iteration,),
            ).fetchone()
        if ready:
            conn.execute(
                f"UPDATE batches SET status = ?, {to}_at = ?, crowd = COALESCE(?, crowd)"
                " WHERE iteration = ?",
                (to, now(), crowd, iteration),
            )
        return ready

    def save_verdicts(self, iteration: int, verdicts: pd.DataFrame) -> None:
        """Store the batch's verdicts (``pair_id, verdict, p_value``; every pair of the batch)
        and mark it aggregated, in one transaction."""
        p_values = verdicts["p_value"].astype(object).where(verdicts["p_value"].notna(), None)
        rows = zip(
            verdicts["pair_id"].astype(int).tolist(),
            verdicts["verdict"].astype(int).tolist(),
            p_values.tolist(),
            strict=True,
        )
        with self.transaction() as conn:  # one UPDATE joined with the verdicts: fast at scale
            conn.execute(
                "CREATE TEMP TABLE new_verdicts"
                " (pair_id INTEGER PRIMARY KEY, verdict INTEGER, p_value REAL)"
            )
            conn.executemany("INSERT INTO new_verdicts VALUES (?, ?, ?)", rows)
            conn.execute(
                "UPDATE pairs SET verdict = v.verdict, p_value = v.p_value"
                " FROM new_verdicts v WHERE pairs.pair_id = v.pair_id"
            )
            conn.execute("DROP TABLE new_verdicts")
            if not self._advance(conn, iteration, "aggregated", None):
                raise StateError(f"batch {iteration} has pairs without a verdict")

    def pairs(
        self, iteration: int | None = None, columns: Sequence[str] | None = None
    ) -> pd.DataFrame:
        """The pairs of one batch (all batches when ``iteration`` is None), in asking order:
        the ``columns`` of the ``pairs`` table named (every column by default; reading only
        those needed is far faster on a large batch)."""
        where, params = ("WHERE iteration = ?", (iteration,)) if iteration is not None else ("", ())
        order = ["iteration", "position"]
        read = "*" if columns is None else ", ".join(dict.fromkeys([*order, *columns]))
        frame = self.frame(f"SELECT {read} FROM pairs {where}", params)  # sorted here: no SQL sort
        frame = frame.sort_values(order, kind="stable", ignore_index=True)
        return frame if columns is None else frame[list(columns)]

    def batch_size(self, iteration: int) -> tuple[int, int]:
        """How many pairs batch ``iteration`` has, and over how many queries."""
        return self.conn.execute(
            "SELECT COUNT(*), COUNT(DISTINCT query) FROM pairs WHERE iteration = ?", (iteration,)
        ).fetchone()

    def pair(self, pair_id: int) -> dict | None:
        """One pair's row as a dict (``None`` when the state has no such pair)."""
        frame = self.frame("SELECT * FROM pairs WHERE pair_id = ?", (int(pair_id),))
        return None if frame.empty else frame.iloc[0].to_dict()

    def unpublished_pairs(self, iteration: int, crowd: str) -> pd.DataFrame:
        """The batch's pairs ``crowd`` does not hold yet, in asking order (``pairs`` columns)."""
        return self.frame(
            "SELECT * FROM pairs WHERE iteration = ? AND pair_id NOT IN"
            " (SELECT pair_id FROM hits WHERE crowd = ?) ORDER BY position",
            (iteration, crowd),
        )

    def published_pairs(self, iteration: int, crowd: str) -> pd.DataFrame:
        """The batch's pairs ``crowd`` holds, in asking order (``pairs`` columns)."""
        return self.frame(
            "SELECT p.* FROM pairs p JOIN hits h ON h.pair_id = p.pair_id AND h.crowd = ?"
            " WHERE p.iteration = ? ORDER BY p.position",
            (crowd, iteration),
        )

    def missing_answers(self, iteration: int, crowd: str | None = None) -> pd.DataFrame:
        """Pairs of the batch with fewer accepted answers than wanted (counting only ``crowd``'s
        answers when given): ``pair_id, have, wanted``."""
        if crowd is None:
            return self.frame(_SHORT_ANY, (iteration,))
        return self.frame(_SHORT, (crowd, iteration))

    def query_progress(self) -> dict[str, tuple[int, int, str]]:
        """Per query with sorting pairs, in one pass: ``(iterations, pairs_judged,
        fingerprint)``, how many batches asked it, how many of its pairs have a verdict, and
        the fingerprint of those verdicts (:meth:`verdict_fingerprints`)."""
        return {
            query: (iterations, judged, f"{judged}:{checksum}")
            for query, iterations, judged, checksum in self.conn.execute(
                "SELECT query, COUNT(DISTINCT iteration), COUNT(verdict),"
                " COALESCE(SUM(pair_id * (verdict + 2)), 0) FROM pairs"
                " WHERE kind = 'sort' GROUP BY query"
            )
        }

    def verdict_maps(self, queries: Sequence[str] | None = None) -> dict[str, dict]:
        """Per query, ``(x, y) → verdict`` of the aggregated sorting pairs (latest wins);
        only the given ``queries`` when some are named."""
        where, params = "", ()
        if queries is not None:
            where = f" AND query IN ({', '.join('?' * len(queries))})"
            params = tuple(queries)
        maps: dict[str, dict[tuple[str, str], int]] = {}
        for query, x, y, verdict in self.conn.execute(
            "SELECT query, x, y, verdict FROM pairs"
            f" WHERE kind = 'sort' AND verdict IS NOT NULL{where} ORDER BY pair_id",
            params,
        ):
            known = maps.get(query)
            if known is None:
                known = maps[query] = {}
            known[(x, y)] = verdict
        return maps

    def verdict_fingerprints(self) -> dict[str, str]:
        """Per query with sorting pairs, a fingerprint of its aggregated sorting verdicts (how
        many, and a checksum of which pairs got which verdict; ``0:0`` without verdicts),
        computed inside SQLite."""
        return {
            query: f"{count}:{checksum}"
            for query, count, checksum in self.conn.execute(
                "SELECT query, COUNT(verdict), COALESCE(SUM(pair_id * (verdict + 2)), 0)"
                " FROM pairs WHERE kind = 'sort' GROUP BY query"
            )
        }

    def cached_states(self) -> dict[str, tuple[str, str]]:
        """``query → (fingerprint, state JSON)`` from the sort cache."""
        rows = self.conn.execute("SELECT query, fingerprint, state FROM sort_cache")
        return {query: (fingerprint, state) for query, fingerprint, state in rows}

    def cache_states(self, rows: Sequence[tuple[str, str, str]]) -> bool:
        """Store ``(query, fingerprint, state JSON)`` rows in the sort cache; whether they were
        stored. The cache only saves work: while another process writes the project (a reading
        command beside a ``run``), nothing is stored and nothing waits."""
        held = self.lock.held
        if not held and not self.lock.try_acquire():
            return False
        try:
            with self.transaction() as conn:
                conn.executemany(
                    "INSERT OR REPLACE INTO sort_cache (query, fingerprint, state)"
                    " VALUES (?, ?, ?)",
                    rows,
                )
        finally:
            if not held:
                self.lock.release()
        return True
