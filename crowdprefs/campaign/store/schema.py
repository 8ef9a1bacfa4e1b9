"""The project state's migrations, applied in order; the current tables are in :mod:`.tables`.

A new database, on any engine, is created at the current schema from :mod:`.tables` and stamped
with :data:`SCHEMA_VERSION`. A SQLite file of an older crowdprefs is brought up to date step by
step: first the SQL migrations of the SQLite-only store (:data:`LEGACY_SQLITE`, ``0001`` to
``0011``, frozen), then the engine-neutral ones (:data:`MIGRATIONS`, from ``0012``), functions
of a SQLAlchemy connection that run on every engine.

To change the schema, change :mod:`.tables` and append a ``(name, function)`` entry to
:data:`MIGRATIONS` that brings a database of the previous version to it; never edit an applied
one. A test checks that a SQLite file migrated from version 1 and a new database have the same
tables, columns and indexes.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from sqlalchemy import Connection, inspect, text

from crowdprefs.campaign.store import tables

_LEGACY_SCRIPTS: list[tuple[str, str]] = [
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
        "0002_web_judges_assignments",
        """
        CREATE TABLE web_judges (
            judge_id TEXT PRIMARY KEY,
            token_hash TEXT NOT NULL UNIQUE,
            source TEXT NOT NULL CHECK (source IN ('invite', 'platform')),
            participant TEXT UNIQUE,
            completion_code TEXT NOT NULL,
            created_at TEXT NOT NULL
        );
        CREATE TABLE web_assignments (
            assignment_id TEXT PRIMARY KEY,
            pair_id INTEGER NOT NULL REFERENCES pairs(pair_id),
            judge_id TEXT NOT NULL REFERENCES web_judges(judge_id),
            csrf TEXT NOT NULL,
            issued_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'open'
                CHECK (status IN ('open', 'submitted', 'released')),
            UNIQUE (pair_id, judge_id)
        );
        CREATE INDEX web_assignments_by_status ON web_assignments(status, pair_id);
        CREATE INDEX web_assignments_by_judge ON web_assignments(judge_id, status);
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
        "0007_web_headphone_screens",
        """
        CREATE TABLE web_screens (
            judge_id TEXT PRIMARY KEY REFERENCES web_judges(judge_id),
            seed INTEGER NOT NULL,
            trials INTEGER NOT NULL CHECK (trials > 0),
            pass_mark INTEGER NOT NULL CHECK (pass_mark > 0),
            csrf TEXT NOT NULL,
            started_at TEXT NOT NULL,
            answers TEXT,
            correct INTEGER,
            passed INTEGER CHECK (passed IN (0, 1)),
            finished_at TEXT
        );
        """,
    ),
    (
        "0008_prolific_studies",
        """
        CREATE TABLE prolific_studies (
            study_id TEXT PRIMARY KEY,
            created_at TEXT NOT NULL,
            reward INTEGER NOT NULL CHECK (reward > 0),
            currency TEXT NOT NULL,
            minutes INTEGER NOT NULL CHECK (minutes > 0),
            questions INTEGER NOT NULL CHECK (questions > 0),
            fee_rate REAL NOT NULL,
            completion_code TEXT NOT NULL,
            places INTEGER NOT NULL,
            status TEXT NOT NULL,
            published_at TEXT
        );
        CREATE TABLE prolific_reviews (
            submission_id TEXT PRIMARY KEY,
            study_id TEXT NOT NULL REFERENCES prolific_studies(study_id),
            participant_id TEXT NOT NULL,
            decision TEXT NOT NULL CHECK (decision IN ('approve', 'reject')),
            category TEXT,
            message TEXT,
            decided_at TEXT NOT NULL,
            applied_at TEXT
        );
        CREATE TABLE prolific_bonuses (
            bonus_id TEXT PRIMARY KEY,
            study_id TEXT NOT NULL REFERENCES prolific_studies(study_id),
            amount INTEGER NOT NULL CHECK (amount > 0),
            fee_rate REAL NOT NULL,
            created_at TEXT NOT NULL,
            paid_at TEXT
        );
        CREATE TABLE prolific_bonus_lines (
            bonus_id TEXT NOT NULL REFERENCES prolific_bonuses(bonus_id),
            participant_id TEXT NOT NULL,
            amount INTEGER NOT NULL CHECK (amount > 0),
            PRIMARY KEY (bonus_id, participant_id)
        );
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


def _statements(sql: str) -> list[str]:
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


LEGACY_SQLITE: list[tuple[str, list[str]]] = [
    (name, _statements(sql)) for name, sql in _LEGACY_SCRIPTS
]
"""The SQLite-only store's migrations (``0001`` … ``0011``), as statements: replayed only on a
SQLite file an older crowdprefs wrote."""


def _engine_neutral(conn: Connection) -> None:
    """``0012``: the store moves to SQLAlchemy Core. Answers are counted per pair by the store
    itself (the SQLite triggers go); queries keep their CSV order in ``position`` (no engine
    but SQLite has a ``rowid``); every server process counts wrong tokens in ``web_throttle``.
    Only SQLite files an older crowdprefs wrote are ever at an older version."""
    for trigger in ("pair_counts_insert", "pair_counts_delete", "pair_counts_update"):
        conn.execute(text(f"DROP TRIGGER IF EXISTS {trigger}"))
    conn.execute(text("ALTER TABLE queries ADD COLUMN position INTEGER"))
    conn.execute(
        text(
            "UPDATE queries SET position = (SELECT MIN(c.position) FROM candidates c"
            " WHERE c.query = queries.query)"
        )
    )
    tables.metadata.tables["web_throttle"].create(conn, checkfirst=True)


def _pairs_fillfactor(conn: Connection) -> None:
    """``0013``: on PostgreSQL, pages of ``pairs`` keep room for the verdict's update
    (:data:`.tables.PAIRS_FILLFACTOR`; pages written from now on). SQLite has no such setting."""
    if conn.dialect.name == "postgresql":
        conn.execute(text(f"ALTER TABLE pairs SET (fillfactor = {tables.PAIRS_FILLFACTOR})"))


def _prolific_events(conn: Connection) -> None:
    """``0014``: the events Prolific posts to the server (its webhooks), each stored once, and
    when a study participant left the study (``web_judges.left_at``: they get no further
    question and their answers are no longer taken)."""
    tables.metadata.tables["prolific_events"].create(conn, checkfirst=True)
    for index in tables.metadata.tables["prolific_events"].indexes:
        index.create(conn, checkfirst=True)
    columns = {column["name"] for column in inspect(conn).get_columns("web_judges")}
    if "left_at" not in columns:  # a table made from today's metadata has it already
        conn.execute(text("ALTER TABLE web_judges ADD COLUMN left_at TEXT"))


def _prior(conn: Connection) -> None:
    """``0015``: a machine prior's score per candidate (``candidates.prior``; null without one),
    fixed once the first batch is built, so the sort replays the same pivots; and the verdicts
    the calibrated prior gave (``machine_verdicts``: pairs it decided, pairs it audited)."""
    tables.machine_verdicts.create(conn, checkfirst=True)
    columns = {column["name"] for column in inspect(conn).get_columns("candidates")}
    if "prior" not in columns:
        kind = tables.candidates.c.prior.type.compile(dialect=conn.dialect)
        conn.execute(text(f"ALTER TABLE candidates ADD COLUMN prior {kind}"))


MIGRATIONS: list[tuple[str, Callable[[Connection], None]]] = [
    ("0012_engine_neutral", _engine_neutral),
    ("0013_pairs_fillfactor", _pairs_fillfactor),
    ("0014_prolific_events", _prolific_events),
    ("0015_prior", _prior),
]
"""Engine-neutral migrations, from ``0012`` on."""

SCHEMA_VERSION = len(LEGACY_SQLITE) + len(MIGRATIONS)
