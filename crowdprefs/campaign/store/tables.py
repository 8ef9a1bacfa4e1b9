"""The project state's tables, written once for every engine (SQLAlchemy Core).

``meta``          key/value facts fixed at ``init`` (seed, creation time, schema version).
``queries``       ``query, audio, seconds`` (the query clip, when known) and ``position``, the
                  order in which the query first appears in the candidates CSV.
``candidates``    ``query, document, audio, seconds, position`` (position = row order in the CSV).
``batches``       one per iteration: ``built → published → collected → aggregated``.
``pairs``         the questions of a batch: ``x`` (the member) against ``y`` (the pivot), the side
                  shown as variation A, the order within the batch, how many answers are
                  wanted, and, once aggregated, the verdict (+1: x more similar, 0, −1) and
                  p-value. ``kind = 'check'`` marks attention checks with a known ``expected``.
``hits``          what each crowd published for a pair (its HIT or task id) and at what price
                  (the reward and MTurk's fee terms when it was published; NULL for HITs
                  published before prices were stored, priced at the current settings).
``sort_cache``    each query's sort state as JSON with the fingerprint of the verdicts it was
                  replayed from: a cache trusted only while the fingerprint matches.
``answers``       every answer as it arrived, unique per crowd assignment (a retried collect
                  never stores an answer twice).
``pair_counts``   per pair, its accepted (not rejected) answers counted by score: ``more``
                  (score +1), ``equal``, ``less``; kept by the store in the transaction that
                  stores an answer or changes its status (:func:`.base.refresh_pair_counts`).
``answer_reviews`` each answer's review decision: ``approve``, ``reject`` or ``drop`` (left out
                  of aggregation, yet paid: an answer of a worker flagged during the campaign).
``worker_blocks`` workers blocked on a crowd, with the reason and when it was applied.
``web_*``         the web crowd: judges (only a token's SHA-256 is stored), assignments (one
                  pair handed to one judge), headphone screens, and the server's shared state
                  (``web_throttle``: each wrong token a party tried, once, with when).
``prolific_*``    the Prolific study, each submission's review decision (stored before it is
                  sent), bonuses (set up, then paid), and the events Prolific posted (each
                  once, by its event id).

Rows with no natural order are read in the order of their timestamp, then their key.
"""

from __future__ import annotations

from sqlalchemy import (
    DDL,
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    Table,
    Text,
    UniqueConstraint,
    event,
)

metadata = MetaData()


def _text(name: str, *args: object, **kwargs: object) -> Column:
    return Column(name, Text, *args, **kwargs)


def _in(column: str, values: tuple[object, ...]) -> CheckConstraint:
    listed = ", ".join(repr(v) for v in values)
    return CheckConstraint(f"{column} IN ({listed})")


meta = Table(
    "meta",
    metadata,
    _text("key", primary_key=True),
    _text("value", nullable=False),
)

queries = Table(
    "queries",
    metadata,
    _text("query", primary_key=True),
    _text("audio"),
    Column("seconds", Float),
    Column("position", Integer),
)

candidates = Table(
    "candidates",
    metadata,
    _text("query", ForeignKey("queries.query"), nullable=False),
    _text("document", nullable=False),
    _text("audio"),
    Column("seconds", Float),
    Column("position", Integer, nullable=False),
    Column("prior", Float),  # the machine prior's score (crowdprefs.machine.scores), when given
    PrimaryKeyConstraint("query", "document"),
)

batches = Table(
    "batches",
    metadata,
    Column("iteration", Integer, primary_key=True, autoincrement=False),
    _text("status", nullable=False),
    _text("crowd"),
    _text("created_at", nullable=False),
    _text("published_at"),
    _text("collected_at"),
    _text("aggregated_at"),
    _in("status", ("built", "published", "collected", "aggregated")),
)

PAIRS_FILLFACTOR = 50
"""How full PostgreSQL fills the pages of ``pairs`` (per cent; see the table)."""

pairs = Table(
    "pairs",
    metadata,
    Column("pair_id", Integer, primary_key=True),
    Column("iteration", Integer, ForeignKey("batches.iteration"), nullable=False),
    _text("query", ForeignKey("queries.query"), nullable=False),
    _text("x", nullable=False),
    _text("y", nullable=False),
    Column("a_is_x", Integer, nullable=False),
    Column("position", Integer, nullable=False),
    _text("kind", nullable=False, server_default="sort"),
    Column("expected", Integer),
    Column("answers_wanted", Integer, nullable=False),
    Column("verdict", Integer),
    Column("p_value", Float),
    UniqueConstraint("iteration", "query", "x", "y"),
    _in("a_is_x", (0, 1)),
    _in("kind", ("sort", "check")),
    _in("expected", (-1, 0, 1)),
    _in("verdict", (-1, 0, 1)),
    CheckConstraint("answers_wanted > 0"),
)
# A pair is written once, then updated once with its verdict: half of each page is left free so
# PostgreSQL writes the new row version beside the old one without touching the indexes (a
# heap-only update; 4× faster verdicts on a batch of 490,000 pairs). Set once the table exists,
# as the migration 0013 sets it: a dialect option on the table would load SQLAlchemy's
# PostgreSQL dialect in every command, SQLite projects included.
event.listen(
    pairs,
    "after_create",
    DDL(f"ALTER TABLE pairs SET (fillfactor = {PAIRS_FILLFACTOR})").execute_if(
        dialect="postgresql"
    ),
)
Index("pairs_by_query_kind", pairs.c.query, pairs.c.kind, pairs.c.iteration)

hits = Table(
    "hits",
    metadata,
    _text("crowd", nullable=False),
    Column("pair_id", Integer, ForeignKey("pairs.pair_id"), nullable=False),
    _text("hit_id", nullable=False),
    Column("max_assignments", Integer, nullable=False),
    _text("created_at", nullable=False),
    _text("status", nullable=False, server_default="open"),
    Column("reward", Float),
    Column("fee_rate", Float),
    Column("fee_rate_10_or_more", Float),
    Column("fee_minimum", Float),
    PrimaryKeyConstraint("crowd", "pair_id"),
    UniqueConstraint("crowd", "hit_id"),
)
Index(
    "hits_by_price",
    hits.c.max_assignments,
    hits.c.reward,
    hits.c.fee_rate,
    hits.c.fee_rate_10_or_more,
    hits.c.fee_minimum,
)

answers = Table(
    "answers",
    metadata,
    Column("answer_id", Integer, primary_key=True),
    Column("pair_id", Integer, ForeignKey("pairs.pair_id"), nullable=False),
    _text("crowd", nullable=False),
    _text("assignment_id", nullable=False),
    _text("worker_id", nullable=False),
    _text("choice", nullable=False),
    Column("score", Integer, nullable=False),
    Column("seconds", Float),
    _text("accepted_at"),
    _text("submitted_at"),
    _text("background"),
    _text("comment"),
    _text("raw"),
    _text("status", nullable=False, server_default="submitted"),
    UniqueConstraint("crowd", "assignment_id"),
    _in("choice", ("A", "B", "equal")),
    _in("score", (-1, 0, 1)),
    _in("status", ("submitted", "approved", "rejected")),
)
Index("answers_by_status", answers.c.status)
Index("answers_by_pair_status_score", answers.c.pair_id, answers.c.status, answers.c.score)

pair_counts = Table(
    "pair_counts",
    metadata,
    Column("pair_id", Integer, ForeignKey("pairs.pair_id"), primary_key=True, autoincrement=False),
    Column("more", Integer, nullable=False),
    Column("equal", Integer, nullable=False),
    Column("less", Integer, nullable=False),
)

machine_verdicts = Table(
    "machine_verdicts",
    metadata,
    _text("query", ForeignKey("queries.query"), nullable=False),
    _text("x", nullable=False),
    _text("y", nullable=False),
    Column("iteration", Integer, nullable=False),  # the batch whose triage decided it
    Column("verdict", Integer, nullable=False),
    Column("probability", Float, nullable=False),
    Column("asked", Integer, nullable=False),  # 1: an audited pair, asked of humans anyway
    PrimaryKeyConstraint("query", "x", "y"),
    _in("verdict", (-1, 0, 1)),
    _in("asked", (0, 1)),
)
"""The machine prior's verdicts (crowdprefs.machine.policy.triage): a skipped pair's verdict
(``asked = 0``: the sort uses it) or an audited pair's (``asked = 1``: compared with the human
verdict of its pair for the overturn share)."""

sort_cache = Table(
    "sort_cache",
    metadata,
    _text("query", ForeignKey("queries.query"), primary_key=True),
    _text("fingerprint", nullable=False),
    _text("state", nullable=False),
)

answer_reviews = Table(
    "answer_reviews",
    metadata,
    _text("crowd", nullable=False),
    _text("assignment_id", nullable=False),
    Column("pair_id", Integer, ForeignKey("pairs.pair_id"), nullable=False),
    _text("worker_id", nullable=False),
    _text("decision", nullable=False),
    _text("reason"),
    _text("decided_at", nullable=False),
    _text("applied_at"),
    PrimaryKeyConstraint("crowd", "assignment_id"),
    _in("decision", ("approve", "reject", "drop")),
)

worker_blocks = Table(
    "worker_blocks",
    metadata,
    _text("crowd", nullable=False),
    _text("worker_id", nullable=False),
    _text("reason", nullable=False),
    _text("decided_at", nullable=False),
    _text("applied_at"),
    PrimaryKeyConstraint("crowd", "worker_id"),
)

web_judges = Table(
    "web_judges",
    metadata,
    _text("judge_id", primary_key=True),
    _text("token_hash", nullable=False, unique=True),
    _text("source", nullable=False),
    _text("participant", unique=True),
    _text("completion_code", nullable=False),
    _text("created_at", nullable=False),
    _text("left_at"),
    _in("source", ("invite", "platform")),
)

web_assignments = Table(
    "web_assignments",
    metadata,
    _text("assignment_id", primary_key=True),
    Column("pair_id", Integer, ForeignKey("pairs.pair_id"), nullable=False),
    _text("judge_id", ForeignKey("web_judges.judge_id"), nullable=False),
    _text("csrf", nullable=False),
    _text("issued_at", nullable=False),
    _text("expires_at", nullable=False),
    _text("status", nullable=False, server_default="open"),
    UniqueConstraint("pair_id", "judge_id"),
    _in("status", ("open", "submitted", "released")),
)
Index("web_assignments_by_status", web_assignments.c.status, web_assignments.c.pair_id)
Index("web_assignments_by_judge", web_assignments.c.judge_id, web_assignments.c.status)

web_screens = Table(
    "web_screens",
    metadata,
    _text("judge_id", ForeignKey("web_judges.judge_id"), primary_key=True),
    Column("seed", Integer, nullable=False),
    Column("trials", Integer, nullable=False),
    Column("pass_mark", Integer, nullable=False),
    _text("csrf", nullable=False),
    _text("started_at", nullable=False),
    _text("answers"),
    Column("correct", Integer),
    Column("passed", Integer),
    _text("finished_at"),
    CheckConstraint("trials > 0"),
    CheckConstraint("pass_mark > 0"),
    _in("passed", (0, 1)),
)

prolific_studies = Table(
    "prolific_studies",
    metadata,
    _text("study_id", primary_key=True),
    _text("created_at", nullable=False),
    Column("reward", Integer, nullable=False),
    _text("currency", nullable=False),
    Column("minutes", Integer, nullable=False),
    Column("questions", Integer, nullable=False),
    Column("fee_rate", Float, nullable=False),
    _text("completion_code", nullable=False),
    Column("places", Integer, nullable=False),
    _text("status", nullable=False),
    _text("published_at"),
    CheckConstraint("reward > 0"),
    CheckConstraint("minutes > 0"),
    CheckConstraint("questions > 0"),
)

prolific_reviews = Table(
    "prolific_reviews",
    metadata,
    _text("submission_id", primary_key=True),
    _text("study_id", ForeignKey("prolific_studies.study_id"), nullable=False),
    _text("participant_id", nullable=False),
    _text("decision", nullable=False),
    _text("category"),
    _text("message"),
    _text("decided_at", nullable=False),
    _text("applied_at"),
    _in("decision", ("approve", "reject")),
)

prolific_bonuses = Table(
    "prolific_bonuses",
    metadata,
    _text("bonus_id", primary_key=True),
    _text("study_id", ForeignKey("prolific_studies.study_id"), nullable=False),
    Column("amount", Integer, nullable=False),
    Column("fee_rate", Float, nullable=False),
    _text("created_at", nullable=False),
    _text("paid_at"),
    CheckConstraint("amount > 0"),
)

prolific_bonus_lines = Table(
    "prolific_bonus_lines",
    metadata,
    _text("bonus_id", ForeignKey("prolific_bonuses.bonus_id"), nullable=False),
    _text("participant_id", nullable=False),
    Column("amount", Integer, nullable=False),
    PrimaryKeyConstraint("bonus_id", "participant_id"),
    CheckConstraint("amount > 0"),
)

prolific_events = Table(
    "prolific_events",
    metadata,
    _text("event_id", primary_key=True),
    _text("event_type", nullable=False),
    _text("resource_id", nullable=False),
    _text("status"),
    _text("participant_id"),
    Column("event_at", Float, nullable=False),
    _text("received_at", nullable=False),
    _text("applied_at"),
)
"""Prolific's webhook events: ``event_at`` is Prolific's UNIX time of the event (its order),
``applied_at`` ``NULL`` for an event not applied (older than one applied to the same resource,
or of no concern to the project)."""
Index("prolific_events_by_resource", prolific_events.c.resource_id, prolific_events.c.event_at)

web_throttle = Table(
    "web_throttle",
    metadata,
    _text("party", nullable=False),
    _text("token_sha", nullable=False),
    Column("failed_at", Float, nullable=False),
    PrimaryKeyConstraint("party", "token_sha"),
)
