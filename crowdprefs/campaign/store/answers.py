"""Answers as they arrived from the crowds, unique per crowd assignment."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from typing import Any

import lazy_loader
from sqlalchemy import Column, Join, Text, case, func, select, union, update

from crowdprefs.campaign.store import tables
from crowdprefs.campaign.store.base import StoreBase, insert_ignore, json_field, refresh_pair_counts
from crowdprefs.campaign.store.collection import CLIP_LISTEN_SECONDS, with_clips
from crowdprefs.campaign.store.reviews import record_rejections
from crowdprefs.campaign.store.temporary import temporary_table

np = lazy_loader.load("numpy")  # imported on first use
pd = lazy_loader.load("pandas")  # imported on first use

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
"""What :meth:`Answers.add_answers` stores of each answer (optional ones may be missing)."""

CHUNK = 50_000
"""Answers stored per statement: a batch's millions of answers never sit in memory as rows of
Python objects all at once."""

_SHOWN_A = json_field(tables.answers.c.raw, "order", "a")

SHOWN_A_IS_X = case(
    (tables.pairs.c.x == _SHOWN_A, 1),
    (_SHOWN_A.is_not(None), 0),
    else_=tables.pairs.c.a_is_x,
)
"""Whether the judge was shown x as variation A (1 or 0), over ``answers`` joined with
``pairs``: the page's own order where the answer's raw record logs it (web questions with sides
randomised per question), else the pair's sides."""


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``frame`` as plain Python values, ``None`` where missing (what every driver
    takes; a column at a time, many times faster than ``to_dict``)."""
    names = list(frame.columns)
    columns = [frame[name].astype(object).where(frame[name].notna(), None) for name in names]
    rows = zip(*(column.tolist() for column in columns), strict=True)
    return [dict(zip(names, row, strict=True)) for row in rows]


def _plain(column: Any) -> list[Any]:
    """A column (array, series or list) as a list of plain Python values."""
    return column.tolist() if hasattr(column, "tolist") else list(column)


def _answers_with_pairs() -> Join:
    """``answers`` joined with their pairs."""
    answers, pairs = tables.answers, tables.pairs
    return answers.join(pairs, pairs.c.pair_id == answers.c.pair_id)


class Answers(StoreBase):
    """The ``answers`` table and the views of it the campaign needs."""

    def answers(
        self, iteration: int | None = None, *, include_rejected: bool = False
    ) -> pd.DataFrame:
        """Answers (of one batch, or all) with every ``answers`` column (``status`` included)
        joined with their pair's ``iteration, query, x, y, kind, a_is_x, expected``, in the
        order they arrived; rejected ones only with ``include_rejected``."""
        a, p = tables.answers, tables.pairs
        query = (
            select(a, p.c.iteration, p.c.query, p.c.x, p.c.y, p.c.kind, p.c.a_is_x, p.c.expected)
            .select_from(_answers_with_pairs())
            .order_by(a.c.answer_id)
        )
        if iteration is not None:
            query = query.where(p.c.iteration == iteration)
        if not include_rejected:
            query = query.where(a.c.status != "rejected")
        return self.frame(query)

    def shown_answers(self) -> pd.DataFrame:
        """Every usable answer (not rejected, not empty) as the judge saw it, in the order they
        arrived: ``pair_id, worker_id, score`` (from x's point of view) and ``a_is_x`` (whether
        x was shown as A, :data:`SHOWN_A_IS_X`)."""
        a = tables.answers
        return self.frame(
            select(a.c.pair_id, a.c.worker_id, a.c.score, SHOWN_A_IS_X.label("a_is_x"))
            .select_from(_answers_with_pairs())
            .where(a.c.status != "rejected", a.c.choice != "")
            .order_by(a.c.answer_id)
        )

    def add_answers(
        self, crowd: str, rows: pd.DataFrame, *, rejections: pd.DataFrame | None = None
    ) -> int:
        """Store ``crowd``'s answers in one transaction; returns how many were new.

        ``rows`` has the :data:`ANSWER_COLUMNS` (missing optional ones are NULL); answers
        already stored (same crowd and assignment) are skipped. An optional ``status`` column
        (``approved``/``rejected``) records decisions made outside crowdprefs on answers not
        decided yet. ``rejections`` (``assignment_id, pair_id, worker_id, reason``) are decided
        in the same transaction: answers that failed validation, stored or not.
        """
        frame = rows.assign(crowd=crowd).reindex(columns=ANSWER_COLUMNS)
        statuses = rows["status"] if "status" in rows else pd.Series("submitted", rows.index)
        chosen = (statuses != "submitted").to_numpy()
        decided = [
            {"assignment_id": a, "status": s}
            for a, s in zip(
                rows["assignment_id"][chosen].astype(str).tolist(),
                statuses[chosen].astype(str).tolist(),
                strict=True,
            )
        ]
        answers = tables.answers
        with self.transaction() as conn:
            # writers run one at a time and keys only grow: the new answers are those past
            # the largest key stored before (on either engine; no executemany row count)
            last = conn.execute(select(func.coalesce(func.max(answers.c.answer_id), 0))).scalar()
            insert = insert_ignore(conn, answers)
            for start in range(0, len(frame), CHUNK):
                conn.execute(insert, _records(frame.iloc[start : start + CHUNK]))
            arrived = answers.c.answer_id > last
            new = conn.execute(select(func.count()).select_from(answers).where(arrived)).scalar()
            changed = select(answers.c.pair_id).where(arrived)
            if decided:
                with temporary_table(
                    conn,
                    "decided_answers",
                    [Column("assignment_id", Text), Column("status", Text)],
                    decided,
                ) as keys:
                    theirs = (
                        answers.c.crowd == crowd,
                        answers.c.assignment_id == keys.c.assignment_id,
                    )
                    conn.execute(
                        update(answers)
                        .where(answers.c.status == "submitted", *theirs)
                        .values(status=keys.c.status)
                    )
                    rejected = select(answers.c.pair_id).where(*theirs, keys.c.status == "rejected")
                    refresh_pair_counts(conn, union(changed, rejected))
            else:
                refresh_pair_counts(conn, changed)
            if rejections is not None and len(rejections):
                record_rejections(conn, crowd, rejections)
        return int(new)

    def add_answer_stream(self, crowd: str, chunks: Iterable[Mapping[str, Any]]) -> int:
        """Store ``crowd``'s answers arriving as a stream of chunks, in one transaction;
        returns how many were new.

        Each chunk maps :data:`ANSWER_COLUMNS` but ``crowd`` (optional ones may be missing, none
        holds NULL) to equally long columns (arrays, series or lists) and is stored as it
        comes, by the database driver straight from plain tuples: a round of millions of
        answers never sits in memory at once. The answers are undecided (no ``status``);
        answers already stored (same crowd and assignment) are skipped, as by
        :meth:`add_answers`."""
        answers = tables.answers
        with self.transaction() as conn:
            last = conn.execute(select(func.coalesce(func.max(answers.c.answer_id), 0))).scalar()
            for chunk in chunks:
                names = ["crowd", *(c for c in ANSWER_COLUMNS if c in chunk and c != "crowd")]
                compiled = insert_ignore(conn, answers).compile(
                    dialect=conn.dialect, column_keys=names
                )
                order = compiled.positiontup if compiled.positional else names
                values = {name: _plain(chunk[name]) for name in names[1:]}
                values["crowd"] = [crowd] * len(values[names[1]])
                rows = zip(*(values[name] for name in order), strict=True)
                while batch := list(itertools.islice(rows, CHUNK)):
                    if not compiled.positional:
                        batch = [dict(zip(order, row, strict=True)) for row in batch]
                    conn.exec_driver_sql(str(compiled), batch)
            arrived = answers.c.answer_id > last
            new = conn.execute(select(func.count()).select_from(answers).where(arrived)).scalar()
            refresh_pair_counts(conn, select(answers.c.pair_id).where(arrived))
        return int(new)

    def answers_per_pair(self, crowd: str) -> pd.Series:
        """How many answers (any status) ``crowd`` gave each pair, indexed by ``pair_id``."""
        a = tables.answers
        return self.frame(
            select(a.c.pair_id, func.count().label("n"))
            .where(a.c.crowd == crowd)
            .group_by(a.c.pair_id)
        ).set_index("pair_id")["n"]

    def answer_counts(self, iteration: int | None) -> pd.DataFrame:
        """Per pair of the batch (of every batch when ``iteration`` is None), its accepted
        answers counted by score: ``more`` (score +1, x
        preferred), ``equal``, ``less`` (0 for a pair without answers), indexed by ``pair_id``
        in pair order; what :func:`crowdprefs.campaign.aggregate.count_answers` gives from
        :meth:`answers`, read from the ``pair_counts`` the store keeps as answers arrive and
        are decided (one row a pair, never the answers themselves)."""
        p, c = tables.pairs, tables.pair_counts
        query = (
            select(
                p.c.pair_id,
                func.coalesce(c.c.more, 0),
                func.coalesce(c.c.equal, 0),
                func.coalesce(c.c.less, 0),
            )
            .select_from(p.outerjoin(c, c.c.pair_id == p.c.pair_id))
            .order_by(p.c.pair_id)
        )
        if iteration is not None:
            query = query.where(p.c.iteration == iteration)
        with self.read() as conn:  # the driver's plain tuples: numpy reads Rows 80× slower
            rows = conn.execute(query).cursor.fetchall()
        values = np.array(rows, dtype=np.int64).reshape(-1, 4)
        return pd.DataFrame(
            values[:, 1:],
            index=pd.Index(values[:, 0], name="pair_id"),
            columns=["more", "equal", "less"],
        )

    def answer_seconds(self, iteration: int) -> np.ndarray:
        """The seconds each accepted answer of the batch took (NaN when unknown), in the order
        the answers arrived."""
        a, p = tables.answers, tables.pairs
        query = (
            select(a.c.seconds)
            .select_from(_answers_with_pairs())
            .where(p.c.iteration == iteration, a.c.status != "rejected")
            .order_by(a.c.answer_id)
        )
        with self.read() as conn:  # the driver's plain tuples, as in answer_counts
            rows = conn.execute(query).cursor.fetchall()
        return np.array(rows, dtype=np.float64).reshape(-1)  # NULL becomes NaN

    def known_assignments(self, crowd: str) -> set[str]:
        """``crowd``'s assignments already handled: stored as answers or decided on review."""
        a, r = tables.answers, tables.answer_reviews
        query = union(
            select(a.c.assignment_id).where(a.c.crowd == crowd),
            select(r.c.assignment_id).where(r.c.crowd == crowd),
        )
        with self.read() as conn:
            return set(conn.execute(query).scalars())

    def answer_total(self) -> int:
        """How many answers count (every one not rejected): the sum of the kept per-pair
        counts, one row a pair instead of one an answer."""
        c = tables.pair_counts
        return int(self.scalar(select(func.coalesce(func.sum(c.c.more + c.c.equal + c.c.less), 0))))

    def answer_crowds(self) -> dict[str, int]:
        """The crowds that gave answers and how many each (rejected ones too), the crowd of the
        latest answer last."""
        a = tables.answers
        rows = self.rows(
            select(a.c.crowd, func.count()).group_by(a.c.crowd).order_by(func.max(a.c.answer_id))
        )
        return {crowd: int(count) for crowd, count in rows}

    def latest_answer_crowd(self) -> str | None:
        """The crowd of the latest answer (rejected ones too), ``None`` before any."""
        a = tables.answers.c
        return self.scalar(select(a.crowd).order_by(a.answer_id.desc()).limit(1))

    def pair_matches(self) -> pd.DataFrame:
        """Every pair with the HIT ids any crowd published it as (to match recorded answers):
        ``pair_id, iteration, query, x, y, a_is_x, hit_id`` (NULL when unpublished), by
        iteration."""
        p, h = tables.pairs, tables.hits
        return self.frame(
            select(p.c.pair_id, p.c.iteration, p.c.query, p.c.x, p.c.y, p.c.a_is_x, h.c.hit_id)
            .select_from(p.outerjoin(h, h.c.pair_id == p.c.pair_id))
            .order_by(p.c.iteration, p.c.pair_id, h.c.crowd)
        )

    def audit_answers(self, crowd: str | None = None) -> pd.DataFrame:
        """Every answer (rejected ones included; of ``crowd`` when given) with what an audit
        needs, in the order they arrived: ``iteration, pair_id, hit_id`` (NULL for answers not
        from a recorded HIT), ``created_at`` (the HIT's, else the batch's publication or
        creation), ``max_assignments``, ``reward`` (the HIT's, NULL when unknown), ``query, x,
        y, a_is_x, shown_a_is_x`` (the sides the judge saw, :data:`SHOWN_A_IS_X`), ``kind,
        expected, worker_id, assignment_id, status, choice, score, seconds,
        listen_seconds`` (the pair's three clips, NULL while a duration is unknown),
        ``accepted_at, submitted_at, background, comment``."""
        a, p, b, h = tables.answers, tables.pairs, tables.batches, tables.hits
        joined = with_clips(
            _answers_with_pairs()
            .join(b, b.c.iteration == p.c.iteration)
            .outerjoin(h, (h.c.pair_id == a.c.pair_id) & (h.c.crowd == a.c.crowd))
        )
        query = (
            select(
                p.c.iteration,
                a.c.pair_id,
                h.c.hit_id,
                func.coalesce(h.c.created_at, b.c.published_at, b.c.created_at).label("created_at"),
                func.coalesce(h.c.max_assignments, p.c.answers_wanted).label("max_assignments"),
                h.c.reward,
                p.c.query,
                p.c.x,
                p.c.y,
                p.c.a_is_x,
                SHOWN_A_IS_X.label("shown_a_is_x"),
                p.c.kind,
                p.c.expected,
                a.c.worker_id,
                a.c.assignment_id,
                a.c.status,
                a.c.choice,
                a.c.score,
                a.c.seconds,
                CLIP_LISTEN_SECONDS.label("listen_seconds"),
                a.c.accepted_at,
                a.c.submitted_at,
                a.c.background,
                a.c.comment,
            )
            .select_from(joined)
            .order_by(a.c.answer_id)
        )
        return self.frame(query.where(a.c.crowd == crowd) if crowd else query)
