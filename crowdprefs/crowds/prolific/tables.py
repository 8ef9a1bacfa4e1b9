"""The Prolific study's tables, on the store's one schema (the ``metadata`` of
:mod:`crowdprefs.campaign.store.tables`): the study, each submission's review decision (stored
before it is sent), bonuses (set up, then paid), and the events Prolific posted (each once, by
its event id). Their migrations are beside them (:mod:`.schema`), steps of the store's one
schema history."""

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
)

from crowdprefs.campaign.store.tables import metadata, one_of, text_column

prolific_studies = Table(
    "prolific_studies",
    metadata,
    text_column("study_id", primary_key=True),
    text_column("created_at", nullable=False),
    Column("reward", Integer, nullable=False),
    text_column("currency", nullable=False),
    Column("minutes", Integer, nullable=False),
    Column("questions", Integer, nullable=False),
    Column("fee_rate", Float, nullable=False),
    text_column("completion_code", nullable=False),
    Column("places", Integer, nullable=False),
    text_column("status", nullable=False),
    text_column("published_at"),
    CheckConstraint("reward > 0"),
    CheckConstraint("minutes > 0"),
    CheckConstraint("questions > 0"),
)

prolific_reviews = Table(
    "prolific_reviews",
    metadata,
    text_column("submission_id", primary_key=True),
    text_column("study_id", ForeignKey("prolific_studies.study_id"), nullable=False),
    text_column("participant_id", nullable=False),
    text_column("decision", nullable=False),
    text_column("category"),
    text_column("message"),
    text_column("decided_at", nullable=False),
    text_column("applied_at"),
    one_of("decision", ("approve", "reject")),
)

prolific_bonuses = Table(
    "prolific_bonuses",
    metadata,
    text_column("bonus_id", primary_key=True),
    text_column("study_id", ForeignKey("prolific_studies.study_id"), nullable=False),
    Column("amount", Integer, nullable=False),
    Column("fee_rate", Float, nullable=False),
    text_column("created_at", nullable=False),
    text_column("paid_at"),
    CheckConstraint("amount > 0"),
)

prolific_bonus_lines = Table(
    "prolific_bonus_lines",
    metadata,
    text_column("bonus_id", ForeignKey("prolific_bonuses.bonus_id"), nullable=False),
    text_column("participant_id", nullable=False),
    Column("amount", Integer, nullable=False),
    PrimaryKeyConstraint("bonus_id", "participant_id"),
    CheckConstraint("amount > 0"),
)

prolific_events = Table(
    "prolific_events",
    metadata,
    text_column("event_id", primary_key=True),
    text_column("event_type", nullable=False),
    text_column("resource_id", nullable=False),
    text_column("status"),
    text_column("participant_id"),
    Column("event_at", Float, nullable=False),
    text_column("received_at", nullable=False),
    text_column("applied_at"),
)
"""Prolific's webhook events: ``event_at`` is Prolific's UNIX time of the event (its order),
``applied_at`` ``NULL`` for an event not applied (older than one applied to the same resource,
or of no concern to the project)."""
Index("prolific_events_by_resource", prolific_events.c.resource_id, prolific_events.c.event_at)
