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
``web_*``, ``prolific_*``  the crowds' own tables, on this module's :data:`metadata`, beside
                  their adapters: :mod:`crowdprefs.crowds.web.tables` and
                  :mod:`crowdprefs.crowds.prolific.tables`.

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

from crowdprefs.moved import moved_names

metadata = MetaData()


def text_column(name: str, *args: object, **kwargs: object) -> Column:
    """A text column (the crowds' tables use it too)."""
    return Column(name, Text, *args, **kwargs)


def one_of(column: str, values: tuple[object, ...]) -> CheckConstraint:
    """``column`` holds one of ``values``."""
    listed = ", ".join(repr(v) for v in values)
    return CheckConstraint(f"{column} IN ({listed})")


meta = Table(
    "meta",
    metadata,
    text_column("key", primary_key=True),
    text_column("value", nullable=False),
)

queries = Table(
    "queries",
    metadata,
    text_column("query", primary_key=True),
    text_column("audio"),
    Column("seconds", Float),
    Column("position", Integer),
)

candidates = Table(
    "candidates",
    metadata,
    text_column("query", ForeignKey("queries.query"), nullable=False),
    text_column("document", nullable=False),
    text_column("audio"),
    Column("seconds", Float),
    Column("position", Integer, nullable=False),
    Column("prior", Float),  # the machine prior's score (crowdprefs.machine.scores), when given
    PrimaryKeyConstraint("query", "document"),
)

batches = Table(
    "batches",
    metadata,
    Column("iteration", Integer, primary_key=True, autoincrement=False),
    text_column("status", nullable=False),
    text_column("crowd"),
    text_column("created_at", nullable=False),
    text_column("published_at"),
    text_column("collected_at"),
    text_column("aggregated_at"),
    one_of("status", ("built", "published", "collected", "aggregated")),
)

PAIRS_FILLFACTOR = 50
"""How full PostgreSQL fills the pages of ``pairs`` (per cent; see the table)."""

pairs = Table(
    "pairs",
    metadata,
    Column("pair_id", Integer, primary_key=True),
    Column("iteration", Integer, ForeignKey("batches.iteration"), nullable=False),
    text_column("query", ForeignKey("queries.query"), nullable=False),
    text_column("x", nullable=False),
    text_column("y", nullable=False),
    Column("a_is_x", Integer, nullable=False),
    Column("position", Integer, nullable=False),
    text_column("kind", nullable=False, server_default="sort"),
    Column("expected", Integer),
    Column("answers_wanted", Integer, nullable=False),
    Column("verdict", Integer),
    Column("p_value", Float),
    UniqueConstraint("iteration", "query", "x", "y"),
    one_of("a_is_x", (0, 1)),
    one_of("kind", ("sort", "check")),
    one_of("expected", (-1, 0, 1)),
    one_of("verdict", (-1, 0, 1)),
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
    text_column("crowd", nullable=False),
    Column("pair_id", Integer, ForeignKey("pairs.pair_id"), nullable=False),
    text_column("hit_id", nullable=False),
    Column("max_assignments", Integer, nullable=False),
    text_column("created_at", nullable=False),
    text_column("status", nullable=False, server_default="open"),
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
    text_column("crowd", nullable=False),
    text_column("assignment_id", nullable=False),
    text_column("worker_id", nullable=False),
    text_column("choice", nullable=False),
    Column("score", Integer, nullable=False),
    Column("seconds", Float),
    text_column("accepted_at"),
    text_column("submitted_at"),
    text_column("background"),
    text_column("comment"),
    text_column("raw"),
    text_column("status", nullable=False, server_default="submitted"),
    UniqueConstraint("crowd", "assignment_id"),
    one_of("choice", ("A", "B", "equal")),
    one_of("score", (-1, 0, 1)),
    one_of("status", ("submitted", "approved", "rejected")),
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
    text_column("query", ForeignKey("queries.query"), nullable=False),
    text_column("x", nullable=False),
    text_column("y", nullable=False),
    Column("iteration", Integer, nullable=False),  # the batch whose triage decided it
    Column("verdict", Integer, nullable=False),
    Column("probability", Float, nullable=False),
    Column("asked", Integer, nullable=False),  # 1: an audited pair, asked of humans anyway
    PrimaryKeyConstraint("query", "x", "y"),
    one_of("verdict", (-1, 0, 1)),
    one_of("asked", (0, 1)),
)
"""The machine prior's verdicts (crowdprefs.machine.policy.triage): a skipped pair's verdict
(``asked = 0``: the sort uses it) or an audited pair's (``asked = 1``: compared with the human
verdict of its pair for the overturn share)."""

sort_cache = Table(
    "sort_cache",
    metadata,
    text_column("query", ForeignKey("queries.query"), primary_key=True),
    text_column("fingerprint", nullable=False),
    text_column("state", nullable=False),
)

answer_reviews = Table(
    "answer_reviews",
    metadata,
    text_column("crowd", nullable=False),
    text_column("assignment_id", nullable=False),
    Column("pair_id", Integer, ForeignKey("pairs.pair_id"), nullable=False),
    text_column("worker_id", nullable=False),
    text_column("decision", nullable=False),
    text_column("reason"),
    text_column("decided_at", nullable=False),
    text_column("applied_at"),
    PrimaryKeyConstraint("crowd", "assignment_id"),
    one_of("decision", ("approve", "reject", "drop")),
)

worker_blocks = Table(
    "worker_blocks",
    metadata,
    text_column("crowd", nullable=False),
    text_column("worker_id", nullable=False),
    text_column("reason", nullable=False),
    text_column("decided_at", nullable=False),
    text_column("applied_at"),
    PrimaryKeyConstraint("crowd", "worker_id"),
)


MOVED = {
    **dict.fromkeys(
        ("web_judges", "web_assignments", "web_screens", "web_throttle"),
        "crowdprefs.crowds.web.tables",
    ),
    **dict.fromkeys(
        ("prolific_studies", "prolific_reviews", "prolific_bonuses", "prolific_bonus_lines",
         "prolific_events"),
        "crowdprefs.crowds.prolific.tables",
    ),
}  # fmt: skip
"""The crowds' tables, moved beside their adapters."""
__getattr__ = moved_names(__name__, MOVED)
