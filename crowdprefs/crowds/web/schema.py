"""The web crowd's migrations, numbered in the store's one schema history
(:func:`crowdprefs.campaign.store.schema.history`): its tables (:mod:`.tables`) as the
SQLite-only store created them (``0002``, ``0007``, frozen) and the server's shared state
(``0012``). :data:`STATE <crowdprefs.crowds.web.store.STATE>` hands them to the store.
"""

from __future__ import annotations

from sqlalchemy import Connection

from crowdprefs.campaign.store.schema import Step, statements
from crowdprefs.crowds.web import tables

_SCRIPTS: list[tuple[str, str]] = [
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
]


def _throttle(conn: Connection) -> None:
    """``0012``: every server process counts wrong tokens in ``web_throttle``."""
    tables.web_throttle.create(conn, checkfirst=True)


MIGRATIONS: list[tuple[str, Step]] = [
    *((name, statements(sql)) for name, sql in _SCRIPTS),
    ("0012_web_throttle", _throttle),
]
"""The web crowd's steps of the schema history."""
