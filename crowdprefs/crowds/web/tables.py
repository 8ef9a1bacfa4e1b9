"""The web crowd's tables, on the store's one schema (the ``metadata`` of
:mod:`crowdprefs.campaign.store.tables`): judges (only a token's SHA-256 is stored),
assignments (one pair handed to one judge), headphone screens, and the server's shared state
(``web_throttle``: each wrong token a party tried, once, with when). Their migrations are
beside them (:mod:`.schema`), steps of the store's one schema history."""

from __future__ import annotations

from sqlalchemy import (
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    PrimaryKeyConstraint,
    Table,
    UniqueConstraint,
)

from crowdprefs.campaign.store.tables import metadata, one_of, text_column

web_judges = Table(
    "web_judges",
    metadata,
    text_column("judge_id", primary_key=True),
    text_column("token_hash", nullable=False, unique=True),
    text_column("source", nullable=False),
    text_column("participant", unique=True),
    text_column("completion_code", nullable=False),
    text_column("created_at", nullable=False),
    text_column("left_at"),
    one_of("source", ("invite", "platform")),
)

web_assignments = Table(
    "web_assignments",
    metadata,
    text_column("assignment_id", primary_key=True),
    Column("pair_id", Integer, ForeignKey("pairs.pair_id"), nullable=False),
    text_column("judge_id", ForeignKey("web_judges.judge_id"), nullable=False),
    text_column("csrf", nullable=False),
    text_column("issued_at", nullable=False),
    text_column("expires_at", nullable=False),
    text_column("status", nullable=False, server_default="open"),
    UniqueConstraint("pair_id", "judge_id"),
    one_of("status", ("open", "submitted", "released")),
)
Index("web_assignments_by_status", web_assignments.c.status, web_assignments.c.pair_id)
Index("web_assignments_by_judge", web_assignments.c.judge_id, web_assignments.c.status)

web_screens = Table(
    "web_screens",
    metadata,
    text_column("judge_id", ForeignKey("web_judges.judge_id"), primary_key=True),
    Column("seed", Integer, nullable=False),
    Column("trials", Integer, nullable=False),
    Column("pass_mark", Integer, nullable=False),
    text_column("csrf", nullable=False),
    text_column("started_at", nullable=False),
    text_column("answers"),
    Column("correct", Integer),
    Column("passed", Integer),
    text_column("finished_at"),
    CheckConstraint("trials > 0"),
    CheckConstraint("pass_mark > 0"),
    one_of("passed", (0, 1)),
)

web_throttle = Table(
    "web_throttle",
    metadata,
    text_column("party", nullable=False),
    text_column("token_sha", nullable=False),
    Column("failed_at", Float, nullable=False),
    PrimaryKeyConstraint("party", "token_sha"),
)
