"""The Prolific study's migrations, numbered in the store's one schema history
(:func:`crowdprefs.campaign.store.schema.history`): its tables (:mod:`.tables`) as the
SQLite-only store created them (``0008``, frozen) and Prolific's events (``0014``).
:data:`STATE <crowdprefs.crowds.prolific.store.STATE>` hands them to the store.
"""

from __future__ import annotations

from sqlalchemy import Connection, text

from crowdprefs.campaign.store.schema import Step, column_names, statements
from crowdprefs.crowds.prolific import tables

_SCRIPTS: list[tuple[str, str]] = [
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
]


def _prolific_events(conn: Connection) -> None:
    """``0014``: the events Prolific posts to the server (its webhooks), each stored once, and
    when a study participant left the study (``web_judges.left_at``: they get no further
    question and their answers are no longer taken)."""
    tables.prolific_events.create(conn, checkfirst=True)
    for index in tables.prolific_events.indexes:
        index.create(conn, checkfirst=True)
    if "left_at" not in column_names(conn, "web_judges"):  # made from today's tables: it has it
        conn.execute(text("ALTER TABLE web_judges ADD COLUMN left_at TEXT"))


MIGRATIONS: list[tuple[str, Step]] = [
    *((name, statements(sql)) for name, sql in _SCRIPTS),
    ("0014_prolific_events", _prolific_events),
]
"""The Prolific study's steps of the schema history."""
