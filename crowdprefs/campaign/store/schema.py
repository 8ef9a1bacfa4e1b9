"""The project state's one schema history, applied in order; the current tables are in
:mod:`.tables` (and in the crowds' ``tables.py``, on the same ``metadata``).

A new database, on any engine, is created at the current schema from the ``metadata`` and
stamped with the schema version. A database of an older crowdprefs is brought up to date step
by step, each version in one transaction: first the SQL migrations of the SQLite-only store
(``0001`` to ``0011``, frozen, :data:`LEGACY_SQLITE`), then the engine-neutral ones (from
``0012``, :data:`MIGRATIONS`), functions of a SQLAlchemy connection that run on every engine.

The history is the core's (:data:`CORE_MIGRATIONS`) merged with the migrations of the crowds
that keep state of their own (each a :class:`StatePart`, beside its adapter, named in
:data:`crowdprefs.registry.PLATFORMS`): a migration's name starts with the version it brings the
state to, and the parts of one version run core first, then the crowds' in registry order
(:func:`history`). To change the schema, change the tables and append a ``(name, step)`` of
the next version to the migrations of their owner; never edit an applied one. A test checks
that a SQLite file migrated from version 1 and a new database have the same tables, columns and
indexes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, inspect, text

from crowdprefs.campaign.store import tables

Step = Callable[[Connection], None] | Sequence[str]
"""One owner's part of a migration: a function of a connection (engine-neutral, from ``0012``)
or the SQL statements of the SQLite-only store (``0001`` to ``0011``, only ever replayed on a
SQLite file an older crowdprefs wrote)."""

LEGACY_VERSION = 11
"""The last version of the SQLite-only store's SQL migrations."""

_CORE_SCRIPTS: list[tuple[str, str]] = [
    (
        "0001_core",
        """
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE queries (query TEXT PRIMARY KEY, audio TEXT, seconds REAL);
        CREATE TABLE candidates (
            query TEXT NOT NULL REFERENCES queries(query),
            document TEXT NOT NULL,
            audio TEXT,
            seconds REAL,
            position INTEGER NOT NULL,
            PRIMARY KEY (query, document)
        );
        CREATE TABLE batches (
            iteration INTEGER PRIMARY KEY,
            status TEXT NOT NULL
                CHECK (status IN ('built', 'published', 'collected', 'aggregated')),
            crowd TEXT,
            created_at TEXT NOT NULL,
            published_at TEXT,
            collected_at TEXT,
            aggregated_at TEXT
        );
        CREATE TABLE pairs (
            pair_id INTEGER PRIMARY KEY,
            iteration INTEGER NOT NULL REFERENCES batches(iteration),
            query TEXT NOT NULL REFERENCES queries(query),
            x TEXT NOT NULL,
            y TEXT NOT NULL,
            a_is_x INTEGER NOT NULL CHECK (a_is_x IN (0, 1)),
            position INTEGER NOT NULL,
            kind TEXT NOT NULL DEFAULT 'sort' CHECK (kind IN ('sort', 'check')),
            expected INTEGER CHECK (expected IN (-1, 0, 1)),
            answers_wanted INTEGER NOT NULL CHECK (answers_wanted > 0),
            verdict INTEGER CHECK (verdict IN (-1, 0, 1)),
            p_value REAL,
            UNIQUE (iteration, query, x, y)
        );
        CREATE INDEX pairs_by_query ON pairs(query, x, y);
        CREATE TABLE hits (
            crowd TEXT NOT NULL,
            pair_id INTEGER NOT NULL REFERENCES pairs(pair_id),
            hit_id TEXT NOT NULL,
            max_assignments INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'open',
            PRIMARY KEY (crowd, pair_id),
            UNIQUE (crowd, hit_id)
        );
        CREATE TABLE answers (
            answer_id INTEGER PRIMARY KEY,
            pair_id INTEGER NOT NULL REFERENCES pairs(pair_id),
            crowd TEXT NOT NULL,
            assignment_id TEXT NOT NULL,
            worker_id TEXT NOT NULL,
            choice TEXT NOT NULL CHECK (choice IN ('A', 'B', 'equal')),
            score INTEGER NOT NULL CHECK (score IN (-1, 0, 1)),
            seconds REAL,
            accepted_at TEXT,
            submitted_at TEXT,
            background TEXT,
            comment TEXT,
            raw TEXT,
            status TEXT NOT NULL DEFAULT 'submitted'
                CHECK (status IN ('submitted', 'approved', 'rejected')),
            UNIQUE (crowd, assignment_id)
        );
        CREATE INDEX answers_by_pair ON answers(pair_id);
        """,
    ),
    (
        "0003_mturk_reviews_blocks",
        """
        CREATE TABLE answer_reviews (
            crowd TEXT NOT NULL,
            assignment_id TEXT NOT NULL,
            pair_id INTEGER NOT NULL REFERENCES pairs(pair_id),
            worker_id TEXT NOT NULL,
            decision TEXT NOT NULL CHECK (decision IN ('approve', 'reject')),
            reason TEXT,
            decided_at TEXT NOT NULL,
            applied_at TEXT,
            PRIMARY KEY (crowd, assignment_id)
        );
        CREATE TABLE worker_blocks (
            crowd TEXT NOT NULL,
            worker_id TEXT NOT NULL,
            reason TEXT NOT NULL,
            decided_at TEXT NOT NULL,
            applied_at TEXT,
            PRIMARY KEY (crowd, worker_id)
        );
        """,
    ),
    (
        "0004_core_answer_status_index",
        """
        CREATE INDEX answers_by_status ON answers(status);
        """,
    ),
    (
        "0005_core_sort_cache",
        """
        CREATE TABLE sort_cache (
            query TEXT PRIMARY KEY REFERENCES queries(query),
            fingerprint TEXT NOT NULL,
            state TEXT NOT NULL
        );
        """,
    ),
    (
        "0006_hit_prices",
        """
        ALTER TABLE hits ADD COLUMN reward REAL;
        ALTER TABLE hits ADD COLUMN fee_rate REAL;
        ALTER TABLE hits ADD COLUMN fee_rate_10_or_more REAL;
        ALTER TABLE hits ADD COLUMN fee_minimum REAL;
        """,
    ),
    (
        "0009_covering_indexes",
        """
        CREATE INDEX answers_by_pair_status_score ON answers(pair_id, status, score);
        DROP INDEX answers_by_pair;
        CREATE INDEX pairs_by_query_kind ON pairs(query, kind, iteration);
        CREATE INDEX hits_by_price
            ON hits(max_assignments, reward, fee_rate, fee_rate_10_or_more, fee_minimum);
        """,
    ),
    (
        "0010_pair_counts",
        """
        DROP INDEX pairs_by_query;
        DELETE FROM sort_cache;
        CREATE TABLE pair_counts (
            pair_id INTEGER PRIMARY KEY REFERENCES pairs(pair_id),
            more INTEGER NOT NULL,
            equal INTEGER NOT NULL,
            less INTEGER NOT NULL
        );
        INSERT INTO pair_counts (pair_id, more, equal, less)
            SELECT pair_id, SUM(score = 1), SUM(score = 0), SUM(score = -1)
            FROM answers WHERE status != 'rejected' GROUP BY pair_id;
        CREATE TRIGGER pair_counts_insert AFTER INSERT ON answers
        WHEN new.status != 'rejected' BEGIN
            INSERT INTO pair_counts (pair_id, more, equal, less)
                VALUES (new.pair_id, new.score = 1, new.score = 0, new.score = -1)
                ON CONFLICT (pair_id) DO UPDATE SET more = more + excluded.more,
                    equal = equal + excluded.equal, less = less + excluded.less;
        END;
        CREATE TRIGGER pair_counts_delete AFTER DELETE ON answers
        WHEN old.status != 'rejected' BEGIN
            UPDATE pair_counts SET more = more - (old.score = 1),
                equal = equal - (old.score = 0), less = less - (old.score = -1)
            WHERE pair_id = old.pair_id;
        END;
        CREATE TRIGGER pair_counts_update AFTER UPDATE OF pair_id, score, status ON answers
        WHEN (old.status = 'rejected') != (new.status = 'rejected')
            OR old.score != new.score OR old.pair_id != new.pair_id BEGIN
            UPDATE pair_counts SET more = more - (old.score = 1),
                equal = equal - (old.score = 0), less = less - (old.score = -1)
            WHERE pair_id = old.pair_id AND old.status != 'rejected';
            INSERT INTO pair_counts (pair_id, more, equal, less)
                SELECT new.pair_id, new.score = 1, new.score = 0, new.score = -1
                WHERE new.status != 'rejected'
                ON CONFLICT (pair_id) DO UPDATE SET more = more + excluded.more,
                    equal = equal + excluded.equal, less = less + excluded.less;
        END;
        """,
    ),
    (
        "0011_drop_decision",
        """
        CREATE TABLE answer_reviews_new (
            crowd TEXT NOT NULL,
            assignment_id TEXT NOT NULL,
            pair_id INTEGER NOT NULL REFERENCES pairs(pair_id),
            worker_id TEXT NOT NULL,
            decision TEXT NOT NULL CHECK (decision IN ('approve', 'reject', 'drop')),
            reason TEXT,
            decided_at TEXT NOT NULL,
            applied_at TEXT,
            PRIMARY KEY (crowd, assignment_id)
        );
        INSERT INTO answer_reviews_new SELECT * FROM answer_reviews ORDER BY rowid;
        DROP TABLE answer_reviews;
        ALTER TABLE answer_reviews_new RENAME TO answer_reviews;
        """,
    ),
]


def statements(sql: str) -> list[str]:
    """The SQL statements of a script, in order (a trigger's body, with its own semicolons,
    stays one statement)."""
    done: list[str] = []
    pending = ""
    for piece in sql.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                done.append(pending.strip())
            pending = ""
    if pending.strip(" \n;"):
        done.append(pending.strip())
    return done


def _engine_neutral(conn: Connection) -> None:
    """``0012``: the store moves to SQLAlchemy Core. Answers are counted per pair by the store
    itself (the SQLite triggers go); queries keep their CSV order in ``position`` (no engine
    but SQLite has a ``rowid``). Only SQLite files an older crowdprefs wrote are ever at an
    older version."""
    for trigger in ("pair_counts_insert", "pair_counts_delete", "pair_counts_update"):
        conn.execute(text(f"DROP TRIGGER IF EXISTS {trigger}"))
    conn.execute(text("ALTER TABLE queries ADD COLUMN position INTEGER"))
    conn.execute(
        text(
            "UPDATE queries SET position = (SELECT MIN(c.position) FROM candidates c"
            " WHERE c.query = queries.query)"
        )
    )


def _pairs_fillfactor(conn: Connection) -> None:
    """``0013``: on PostgreSQL, pages of ``pairs`` keep room for the verdict's update
    (:data:`.tables.PAIRS_FILLFACTOR`; pages written from now on). SQLite has no such setting."""
    if conn.dialect.name == "postgresql":
        conn.execute(text(f"ALTER TABLE pairs SET (fillfactor = {tables.PAIRS_FILLFACTOR})"))


def _prior(conn: Connection) -> None:
    """``0015``: a machine prior's score per candidate (``candidates.prior``; null without one),
    fixed once the first batch is built, so the sort replays the same pivots; and the verdicts
    the calibrated prior gave (``machine_verdicts``: pairs it decided, pairs it audited)."""
    tables.machine_verdicts.create(conn, checkfirst=True)
    if "prior" not in column_names(conn, "candidates"):
        kind = tables.candidates.c.prior.type.compile(dialect=conn.dialect)
        conn.execute(text(f"ALTER TABLE candidates ADD COLUMN prior {kind}"))


def column_names(conn: Connection, table: str) -> set[str]:
    """The columns ``table`` has in the database (a migration adds a column only where a table
    made from today's ``metadata`` lacks it)."""
    return {column["name"] for column in inspect(conn).get_columns(table)}


CORE_MIGRATIONS: list[tuple[str, Step]] = [
    *((name, statements(sql)) for name, sql in _CORE_SCRIPTS),
    ("0012_engine_neutral", _engine_neutral),
    ("0013_pairs_fillfactor", _pairs_fillfactor),
    ("0015_prior", _prior),
]
"""The core tables' migrations; the crowds' are beside them (``crowds/<name>/schema.py``)."""


@dataclass(frozen=True)
class StatePart:
    """The state a crowd keeps of its own, beside its adapter: its ``role``, a mixin over
    :class:`~crowdprefs.campaign.store.base.StoreBase` that becomes one base of
    :class:`~crowdprefs.campaign.store.Store` (its module imports its tables, on
    :data:`.tables.metadata`), and its ``migrations``, ``(name, step)`` numbered in the one
    history. A platform of :data:`crowdprefs.registry.PLATFORMS` names it."""

    role: type
    migrations: Sequence[tuple[str, Step]]


History = list[tuple[str, list[Step]]]
"""Per version (entry ``v - 1`` brings the state to version ``v``): its name, its steps."""


def history(parts: Iterable[Sequence[tuple[str, Step]]] = ()) -> History:
    """The one schema history: :data:`CORE_MIGRATIONS` and the ``parts`` (the crowds'
    migrations, in registry order) merged by version, the core's step of a version first. Each
    version from 1 on must have a step, and each name must be new."""
    steps: dict[int, list[tuple[str, Step]]] = {}
    for name, step in [*CORE_MIGRATIONS, *(m for part in parts for m in part)]:
        steps.setdefault(int(name[:4]), []).append((name, step))
    names = [name for version in steps.values() for name, _ in version]
    if sorted(steps) != list(range(1, len(steps) + 1)) or len(set(names)) != len(names):
        raise ValueError(f"the schema history must number its steps 1, 2, … once each: {names}")
    return [(found[0][0], [step for _, step in found]) for _, found in sorted(steps.items())]


def _in_order(steps: list[Step]) -> Callable[[Connection], None]:
    def run(conn: Connection) -> None:
        for step in steps:
            step(conn)  # type: ignore[operator]  (from 0012 on, every step is a function)

    return run


def __getattr__(name: str) -> object:
    """:data:`SCHEMA_VERSION`, :data:`LEGACY_SQLITE` and :data:`MIGRATIONS`: the history of
    :class:`~crowdprefs.campaign.store.Store`, which takes the crowds' parts on first use."""
    if name not in ("SCHEMA_VERSION", "LEGACY_SQLITE", "MIGRATIONS"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from crowdprefs.campaign.store.store import Store

    if name == "SCHEMA_VERSION":
        return len(Store.HISTORY)
    if name == "LEGACY_SQLITE":
        return [
            (steps_name, [s for step in steps for s in step])  # type: ignore[union-attr]
            for steps_name, steps in Store.HISTORY[:LEGACY_VERSION]
        ]
    return [(steps_name, _in_order(steps)) for steps_name, steps in Store.HISTORY[LEGACY_VERSION:]]
