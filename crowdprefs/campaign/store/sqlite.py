"""The project state in one SQLite file: every change in one transaction.

The tables and their migrations are in :mod:`crowdprefs.campaign.store.schema`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from crowdprefs.campaign.store.prolific import ProlificStore
from crowdprefs.campaign.store.schema import MIGRATIONS, SCHEMA_VERSION
from crowdprefs.campaign.store.web import WebStore
from crowdprefs.errors import StateError

CLIP_JOINS = """
    LEFT JOIN queries q ON q.query = p.query
    LEFT JOIN candidates cx ON cx.query = p.query AND cx.document = p.x
    LEFT JOIN candidates cy ON cy.query = p.query AND cy.document = p.y
"""
LISTEN_SECONDS = (
    "q.seconds + COALESCE(cx.seconds, CASE WHEN p.x = p.query THEN q.seconds END) + cy.seconds"
)
"""SQL over ``pairs p`` joined with :data:`CLIP_JOINS`: the seconds needed to hear a pair's three
clips once; NULL while a duration is unknown (an attention check's x is the query's own clip)."""

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


def now() -> str:
    """The current UTC time as ISO 8601 text (how every timestamp is stored)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class Store(WebStore, ProlificStore):
    """A project's SQLite state. Use :meth:`transaction` for every change."""

    def __init__(self, path: Path, *, create: bool = False) -> None:
        path = Path(path)
        if not create and not path.exists():
            raise StateError(f"no project state at {path}: run 'crowdprefs init' first")
        self.path = path
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=60)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")
        self.conn.execute("PRAGMA foreign_keys=ON")
        self.conn.execute("PRAGMA busy_timeout=60000")
        self.migrate()

    def close(self) -> None:
        self.conn.close()

    @property
    def version(self) -> int:
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    def migrate(self) -> None:
        """Apply the migrations this file has not seen yet, each in one transaction."""
        version = self.version
        if version > SCHEMA_VERSION:
            raise StateError(
                f"{self.path} has schema version {version}, newer than this crowdprefs "
                f"({SCHEMA_VERSION}): upgrade crowdprefs"
            )
        for number, (_name, sql) in enumerate(MIGRATIONS[version:], start=version + 1):
            with self.transaction() as conn:
                for statement in sql.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``; rolled back whole on any error."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    def frame(self, sql: str, params: Sequence = ()) -> pd.DataFrame:
        """The result of a read query as a DataFrame."""
        return pd.read_sql_query(sql, self.conn, params=params)

    # --- facts fixed at init ------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else row[0]

    # --- candidates -----------------------------------------------------------------------------

    def candidates(self) -> pd.DataFrame:
        """``query, document, audio, seconds, position``, in CSV order."""
        return self.frame(
            "SELECT query, document, audio, seconds, position FROM candidates ORDER BY position"
        )

    def queries(self) -> pd.DataFrame:
        return self.frame("SELECT query, audio, seconds FROM queries ORDER BY query")

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

    # --- batches and pairs ----------------------------------------------------------------------

    def last_batch(self) -> dict | None:
        row = self.conn.execute(
            "SELECT iteration, status, crowd FROM batches ORDER BY iteration DESC LIMIT 1"
        ).fetchone()
        return None if row is None else {"iteration": row[0], "status": row[1], "crowd": row[2]}

    def batches(self) -> pd.DataFrame:
        return self.frame("SELECT * FROM batches ORDER BY iteration")

    def pairs(self, iteration: int | None = None) -> pd.DataFrame:
        """The pairs of one batch (all batches when ``iteration`` is None), in asking order."""
        where, params = ("WHERE iteration = ?", (iteration,)) if iteration is not None else ("", ())
        return self.frame(f"SELECT * FROM pairs {where} ORDER BY iteration, position", params)

    def listen_seconds(self, iteration: int) -> pd.Series:
        """Seconds needed to hear each pair of the batch once (its three clips), by
        ``pair_id``; NaN while a clip's duration is unknown."""
        return (
            self.frame(
                f"SELECT p.pair_id, {LISTEN_SECONDS} AS seconds FROM pairs p {CLIP_JOINS}"
                " WHERE p.iteration = ? ORDER BY p.position",
                (iteration,),
            )
            .set_index("pair_id")["seconds"]
            .astype(float)
        )

    def candidate_orders(self) -> dict[str, list[str]]:
        """Each query's documents in CSV order (plain lists: the sort's hot path)."""
        orders: dict[str, list[str]] = {}
        for query, document in self.conn.execute(
            "SELECT query, document FROM candidates ORDER BY position"
        ):
            orders.setdefault(query, []).append(document)
        return orders

    def query_names(self) -> list[str]:
        """The queries in the order they first appear in the candidates CSV."""
        return [q for (q,) in self.conn.execute("SELECT query FROM queries ORDER BY rowid")]

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
            maps.setdefault(query, {})[(x, y)] = verdict
        return maps

    def verdict_fingerprints(self) -> dict[str, str]:
        """Per query with verdicts, a fingerprint of its aggregated sorting verdicts (how many,
        and a checksum of which pairs got which verdict), computed inside SQLite."""
        return {
            query: f"{count}:{checksum}"
            for query, count, checksum in self.conn.execute(
                "SELECT query, COUNT(*), SUM(pair_id * (verdict + 2)) FROM pairs"
                " WHERE kind = 'sort' AND verdict IS NOT NULL GROUP BY query"
            )
        }

    def cached_states(self) -> dict[str, tuple[str, str]]:
        """``query → (fingerprint, state JSON)`` from the sort cache."""
        rows = self.conn.execute("SELECT query, fingerprint, state FROM sort_cache")
        return {query: (fingerprint, state) for query, fingerprint, state in rows}

    def cache_states(self, rows: Sequence[tuple[str, str, str]]) -> None:
        """Store ``(query, fingerprint, state JSON)`` rows in the sort cache."""
        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR REPLACE INTO sort_cache (query, fingerprint, state) VALUES (?, ?, ?)",
                rows,
            )

    def set_status(self, conn: sqlite3.Connection, iteration: int, status: str) -> None:
        conn.execute(
            f"UPDATE batches SET status = ?, {status}_at = ? WHERE iteration = ?",
            (status, now(), iteration),
        )

    # --- hits -----------------------------------------------------------------------------------

    def record_hits(self, crowd: str, pairs: pd.DataFrame) -> None:
        """Record that ``crowd`` holds one task per pair (id ``CROWD-PAIR_ID``), in one
        transaction; pairs already recorded are left as they are."""
        created = now()
        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO hits (crowd, pair_id, hit_id, max_assignments, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                [
                    (crowd, int(p), f"{crowd}-{p}", int(n), created)
                    for p, n in zip(pairs["pair_id"], pairs["answers_wanted"], strict=True)
                ],
            )

    def batch_hits(self, crowd: str, iteration: int) -> pd.DataFrame:
        """The tasks ``crowd`` holds for the batch: ``pair_id, hit_id, size`` (assignments),
        ``wanted`` (the pair's accepted answers wanted) and ``rejected`` (answers rejected on
        review), indexed by ``pair_id``."""
        return self.frame(
            """
            SELECT h.pair_id, h.hit_id, h.max_assignments AS size, p.answers_wanted AS wanted, (
                SELECT COUNT(*) FROM answer_reviews r
                WHERE r.pair_id = p.pair_id AND r.crowd = h.crowd AND r.decision = 'reject'
            ) AS rejected
            FROM pairs p JOIN hits h ON h.pair_id = p.pair_id AND h.crowd = ?
            WHERE p.iteration = ?
            """,
            (crowd, iteration),
        ).set_index("pair_id")

    # --- answers --------------------------------------------------------------------------------

    def answers(
        self, iteration: int | None = None, *, include_rejected: bool = False
    ) -> pd.DataFrame:
        """Answers joined with their pair's ``iteration, query, x, y, kind``."""
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

    @staticmethod
    def insert_answers(conn: sqlite3.Connection, rows: pd.DataFrame) -> int:
        """Insert answers inside the caller's transaction; known assignments are skipped.

        ``rows`` needs the columns of :data:`ANSWER_COLUMNS` (missing optional ones are NULL).
        Returns how many were new.
        """
        frame = rows.reindex(columns=ANSWER_COLUMNS)
        frame = frame.astype(object).where(frame.notna(), None)
        before = conn.total_changes
        conn.executemany(
            f"INSERT OR IGNORE INTO answers ({', '.join(ANSWER_COLUMNS)}) "
            f"VALUES ({', '.join('?' * len(ANSWER_COLUMNS))})",
            frame.itertuples(index=False, name=None),
        )
        return conn.total_changes - before
