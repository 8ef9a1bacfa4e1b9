"""The facts fixed at ``init`` and the collection: meta, queries, candidates and their clips."""

from __future__ import annotations

import json
from collections.abc import Sequence

import lazy_loader

from crowdprefs.campaign.store.base import SQLiteBase, now

pd = lazy_loader.load("pandas")  # imported on first use

CLIP_JOINS = """
    LEFT JOIN queries q ON q.query = p.query
    LEFT JOIN candidates cx ON cx.query = p.query AND cx.document = p.x
    LEFT JOIN candidates cy ON cy.query = p.query AND cy.document = p.y
"""
"""The clips of ``pairs p``: the query's (``q``), x's (``cx``) and y's (``cy``)."""

X_SECONDS = "COALESCE(cx.seconds, CASE WHEN p.x = p.query THEN q.seconds END)"
"""x's duration over :data:`CLIP_JOINS` (an attention check's x is the query's own clip)."""

LISTEN_SECONDS = f"q.seconds + {X_SECONDS} + cy.seconds"
"""The seconds needed to hear a pair's three clips once; NULL while a duration is unknown."""


class Collection(SQLiteBase):
    """Queries and candidates with their clips (audio path and duration)."""

    def meta(self, key: str) -> str | None:
        """A fact fixed at init (``seed``, ``created_at``), ``None`` when absent."""
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    def initialise(self, seed: int, candidates: pd.DataFrame) -> None:
        """Fill a new state in one transaction: the seed, the creation time, the queries (with
        ``query_audio``) and the candidates ``query, document, audio`` in CSV order; then fold
        the write-ahead log into the file (so the file alone is the whole state)."""
        with self.transaction() as conn:
            conn.executemany(
                "INSERT INTO meta (key, value) VALUES (?, ?)",
                [("seed", str(seed)), ("created_at", now())],
            )
            queries = candidates.groupby("query", sort=False)["query_audio"].first()
            conn.executemany(
                "INSERT INTO queries (query, audio) VALUES (?, ?)", list(queries.items())
            )
            conn.executemany(
                "INSERT INTO candidates (query, document, audio, position) VALUES (?, ?, ?, ?)",
                [
                    (row.query, row.document, row.audio, i)
                    for i, row in enumerate(candidates.itertuples(index=False))
                ],
            )
        self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def candidates(self) -> pd.DataFrame:
        """``query, document, audio, seconds, position``, in CSV order."""
        return self.frame(
            "SELECT query, document, audio, seconds, position FROM candidates ORDER BY position"
        )

    def queries(self) -> pd.DataFrame:
        """``query, audio, seconds`` (the query's own clip), by query."""
        return self.frame("SELECT query, audio, seconds FROM queries ORDER BY query")

    def query_names(self) -> list[str]:
        """The queries in the order they first appear in the candidates CSV."""
        return [q for (q,) in self.conn.execute("SELECT query FROM queries ORDER BY rowid")]

    def candidate_orders(self) -> dict[str, list[str]]:
        """Each query's documents in CSV order (plain lists: the sort's hot path)."""
        orders: dict[str, list[str]] = {}
        for query, document in self.conn.execute(
            "SELECT query, document FROM candidates ORDER BY position"
        ):
            documents = orders.get(query)
            if documents is None:
                documents = orders[query] = []
            documents.append(document)
        return orders

    def set_clip(self, query: str, document: str | None, audio: str, seconds: float) -> None:
        """Record a prepared clip (``document=None`` for the query's own clip)."""
        with self.transaction() as conn:
            if document is None:
                conn.execute(
                    "UPDATE queries SET audio = ?, seconds = ? WHERE query = ?",
                    (audio, seconds, query),
                )
            else:
                conn.execute(
                    "UPDATE candidates SET audio = ?, seconds = ? WHERE query = ? AND document = ?",
                    (audio, seconds, query, document),
                )

    def clip_paths(self) -> list[str]:
        """Every clip path (or URL) of the queries and candidates, sorted, without repeats."""
        rows = self.conn.execute(
            "SELECT audio FROM queries WHERE audio IS NOT NULL"
            " UNION SELECT audio FROM candidates WHERE audio IS NOT NULL"
        ).fetchall()
        return sorted(r[0] for r in rows)

    def pair_audio(self, query: str, x: str, y: str) -> tuple[str | None, str | None, str | None]:
        """The stored clips ``(query, x, y)`` of a pair (``x`` equal to the query, an attention
        check, is the query's own clip); ``None`` where a clip is unknown."""
        row = self.conn.execute("SELECT audio FROM queries WHERE query = ?", (query,)).fetchone()
        query_audio = None if row is None else row[0]

        def audio(document: str) -> str | None:
            if document == query:
                return query_audio
            found = self.conn.execute(
                "SELECT audio FROM candidates WHERE query = ? AND document = ?", (query, document)
            ).fetchone()
            return None if found is None else found[0]

        return query_audio, audio(x), audio(y)

    def clip_seconds(self, pair_ids: Sequence[int]) -> pd.DataFrame:
        """The durations of each pair's clips: ``query, x, y`` (seconds, NaN while unknown),
        indexed by ``pair_id`` (pairs not in the state are left out)."""
        frame = self.frame(
            f"""
            SELECT p.pair_id, q.seconds AS query, {X_SECONDS} AS x, cy.seconds AS y
            FROM pairs p JOIN json_each(?) ids ON ids.value = p.pair_id {CLIP_JOINS}
            """,
            (json.dumps([int(p) for p in pair_ids]),),
        )
        return frame.set_index("pair_id").astype(float)
