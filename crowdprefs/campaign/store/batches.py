"""Batches and their pairs: building a batch, moving it through its states, verdicts, and the
sort cache replayed from them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import lazy_loader
from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Executable,
    Float,
    Integer,
    Select,
    Text,
    distinct,
    exists,
    func,
    literal,
    select,
    union_all,
    update,
)

from crowdprefs.campaign.batches import check_transition
from crowdprefs.campaign.store import tables
from crowdprefs.campaign.store.base import StoreBase, now, upsert
from crowdprefs.campaign.store.temporary import insert_many, listed, plain, temporary_rows
from crowdprefs.errors import StateError

np = lazy_loader.load("numpy")  # imported on first use
pd = lazy_loader.load("pandas")  # imported on first use

PAIR_COLUMNS = (
    "query",
    "x",
    "y",
    "a_is_x",
    "position",
    "kind",
    "expected",
    "answers_wanted",
)
"""What :meth:`Batches.create_batch` stores of each new pair."""

_p, _c, _a, _h = tables.pairs.c, tables.pair_counts.c, tables.answers.c, tables.hits.c


def _short(iteration: int, crowd: str) -> Select:
    """Pairs of a batch short of accepted answers from one crowd (its answers grouped)."""
    have = func.count(_a.answer_id)
    return (
        select(_p.pair_id, have.label("have"), _p.answers_wanted.label("wanted"))
        .select_from(
            tables.pairs.outerjoin(
                tables.answers,
                (_a.pair_id == _p.pair_id) & (_a.status != "rejected") & (_a.crowd == crowd),
            )
        )
        .where(_p.iteration == iteration)
        .group_by(_p.pair_id, _p.answers_wanted)
        .having(have < _p.answers_wanted)
        .order_by(_p.pair_id)
    )


def _short_any(iteration: int) -> Select:
    """Pairs of a batch short of accepted answers from any crowd (read from ``pair_counts``)."""
    have = func.coalesce(_c.more + _c.equal + _c.less, 0)
    return (
        select(_p.pair_id, have.label("have"), _p.answers_wanted.label("wanted"))
        .select_from(tables.pairs.outerjoin(tables.pair_counts, _c.pair_id == _p.pair_id))
        .where(_p.iteration == iteration, have < _p.answers_wanted)
        .order_by(_p.pair_id)
    )


def _held_by(crowd: str) -> Executable:
    """Whether ``crowd`` holds a HIT for the pair of the enclosing query."""
    return exists().where(_h.pair_id == _p.pair_id, _h.crowd == crowd)


def _fingerprints(*columns: Any) -> Select:
    """Per query with sorting pairs: the ``columns`` asked, then how many of its pairs have a
    verdict and a checksum of which pairs got which verdict (0 without verdicts)."""
    return (
        select(
            _p.query,
            *columns,
            func.count(_p.verdict),
            func.coalesce(func.sum(_p.pair_id * (_p.verdict + 2)), 0),
        )
        .where(_p.kind == "sort")
        .group_by(_p.query)
    )


def _insert_machine(conn: Connection, iteration: int, machine: pd.DataFrame) -> None:
    """Insert machine verdicts and drop the cached sorts of their queries (the cache is keyed
    by the human verdicts only)."""
    names = ("query", "x", "y", "verdict", "probability", "asked")
    columns = [plain(machine[name], integer=name in ("verdict", "asked")) for name in names]
    rows = zip([iteration] * len(machine), *columns, strict=True)
    insert_many(conn, tables.machine_verdicts, ("iteration", *names), rows)
    s = tables.sort_cache.c
    for query in sorted(set(machine["query"])):
        conn.execute(tables.sort_cache.delete().where(s.query == query))


class Batches(StoreBase):
    """One batch per iteration, its pairs and their verdicts."""

    def last_batch(self) -> dict | None:
        """``iteration, status, crowd, created_at`` of the latest batch (``None``: no batch)."""
        b = tables.batches.c
        rows = self.rows(
            select(b.iteration, b.status, b.crowd, b.created_at)
            .order_by(b.iteration.desc())
            .limit(1)
        )
        return dict(rows[0]._mapping) if rows else None

    def batch_crowds(self) -> set[str]:
        """The crowds batches were published to."""
        crowd = tables.batches.c.crowd
        with self.read() as conn:
            return set(conn.execute(select(crowd).distinct().where(crowd.is_not(None))).scalars())

    def batches(self) -> pd.DataFrame:
        """Every batch: ``iteration, status, crowd`` and the time of each status."""
        return self.frame(select(tables.batches).order_by(tables.batches.c.iteration))

    def create_batch(
        self, iteration: int, pairs: pd.DataFrame, machine: pd.DataFrame | None = None
    ) -> None:
        """Store a new batch (``built``) with its pairs (:data:`PAIR_COLUMNS`, inserted in row
        order), and the machine prior's verdicts of its triage (:meth:`add_machine_verdicts`),
        in one transaction. Refused unless ``iteration`` follows an aggregated batch."""
        frame = pairs.reindex(columns=PAIR_COLUMNS)
        columns = [  # column by column: far faster than converting every row of the frame
            plain(frame[name], integer=isinstance(_p[name].type, Integer)) for name in PAIR_COLUMNS
        ]
        rows = zip([iteration] * len(frame), *columns, strict=True)
        b = tables.batches.c
        with self.transaction() as conn:
            last = conn.execute(
                select(b.iteration, b.status).order_by(b.iteration.desc()).limit(1)
            ).first()
            expected = 1 if last is None else last[0] + 1
            if (last is not None and last[1] != "aggregated") or iteration != expected:
                raise StateError(
                    f"batch {iteration} cannot be built: "
                    + (f"batch {last[0]} is {last[1]}" if last else "no batch exists yet")
                )
            conn.execute(
                tables.batches.insert().values(
                    iteration=iteration, status="built", created_at=now()
                )
            )
            insert_many(conn, tables.pairs, ("iteration", *PAIR_COLUMNS), rows)
            if machine is not None and len(machine):
                _insert_machine(conn, iteration, machine)

    def add_machine_verdicts(self, iteration: int, machine: pd.DataFrame) -> None:
        """Store the machine prior's verdicts ``query, x, y, verdict, probability, asked`` of
        the triage before batch ``iteration`` (pairs it decided before any batch could hold
        them), in one transaction; the sort cache of their queries goes with it."""
        with self.transaction() as conn:
            _insert_machine(conn, iteration, machine)

    def machine_verdict_count(self) -> int:
        """How many verdicts the machine prior gave (skipped and audited pairs): no pandas, so
        ``status`` of a project without a prior stays quick."""
        with self.read() as conn:
            return int(
                conn.execute(select(func.count()).select_from(tables.machine_verdicts)).scalar()
            )

    def machine_verdicts(self) -> pd.DataFrame:
        """``query, x, y, iteration, verdict, probability, asked`` and ``human``: the verdict
        of the audited pair's latest aggregated pair (null while undecided, and for a skipped
        pair)."""
        m = tables.machine_verdicts.c
        human = (
            select(_p.verdict)
            .where(_p.query == m.query, _p.x == m.x, _p.y == m.y, _p.verdict.is_not(None))
            .order_by(_p.pair_id.desc())
            .limit(1)
            .scalar_subquery()
        )
        return self.frame(
            select(
                m.query, m.x, m.y, m.iteration, m.verdict, m.probability, m.asked,
                human.label("human"),
            ).order_by(m.iteration, m.query, m.x, m.y)
        )  # fmt: skip

    def advance_batch(self, iteration: int, to: str, *, crowd: str | None = None) -> bool:
        """Move batch ``iteration`` on to ``to`` when it is ready; whether it is there now.

        One transaction reads the stored status, checks the step
        (:func:`crowdprefs.campaign.batches.check_transition`: never back, never skipping) and
        the batch's readiness: ``published`` when ``crowd`` holds every pair (the batch then
        belongs to ``crowd``), ``collected`` when every pair has its wanted answers,
        ``aggregated`` when every pair has its verdict (see :meth:`save_verdicts`).
        """
        with self.transaction() as conn:
            return self._advance(conn, iteration, to, crowd)

    def _advance(self, conn: Connection, iteration: int, to: str, crowd: str | None) -> bool:
        b = tables.batches.c
        status = conn.execute(select(b.status).where(b.iteration == iteration)).scalar()
        if status is None:
            raise StateError(f"there is no batch {iteration}")
        if not check_transition(iteration, status, to):
            return True
        if to == "published":
            if crowd is None:
                raise StateError(f"batch {iteration} can only be published to a named crowd")
            short = select(_p.pair_id).where(_p.iteration == iteration, ~_held_by(crowd))
        elif to == "collected":
            short = _short_any(iteration)
        else:
            short = select(_p.pair_id).where(_p.iteration == iteration, _p.verdict.is_(None))
        ready = conn.execute(short.limit(1)).first() is None
        if ready:
            changes = {"status": to, f"{to}_at": now()}
            if crowd is not None:
                changes["crowd"] = crowd
            conn.execute(update(tables.batches).where(b.iteration == iteration).values(**changes))
        return ready

    def save_verdicts(self, iteration: int, verdicts: pd.DataFrame) -> None:
        """Store the batch's verdicts (``pair_id, verdict, p_value``; every pair of the batch)
        and mark it aggregated, in one transaction."""
        verdicts = verdicts.sort_values("pair_id")  # the UPDATE then visits pairs in table order
        p_values = verdicts["p_value"].astype(object).where(verdicts["p_value"].notna(), None)
        rows = zip(
            verdicts["pair_id"].astype(int).tolist(),
            verdicts["verdict"].astype(int).tolist(),
            p_values.tolist(),
            strict=True,
        )
        columns = [  # 64-bit integers: copied in the binary format (temporary_rows)
            Column("pair_id", BigInteger, primary_key=True, autoincrement=False),
            Column("verdict", BigInteger),
            Column("p_value", Float),
        ]
        with (  # one UPDATE joined with the verdicts: fast at scale
            self.transaction() as conn,
            temporary_rows(conn, "new_verdicts", columns, rows) as new,
        ):
            conn.execute(
                update(tables.pairs)
                .where(_p.pair_id == new.c.pair_id)
                .values(verdict=new.c.verdict, p_value=new.c.p_value)
            )
            if not self._advance(conn, iteration, "aggregated", None):
                raise StateError(f"batch {iteration} has pairs without a verdict")

    def pairs(
        self, iteration: int | None = None, columns: Sequence[str] | None = None
    ) -> pd.DataFrame:
        """The pairs of one batch (all batches when ``iteration`` is None), in asking order:
        the ``columns`` of the ``pairs`` table named (every column by default; reading only
        those needed is far faster on a large batch)."""
        order = ["iteration", "position"]
        if columns is None:
            statement = select(tables.pairs)
        else:
            statement = select(*(_p[name] for name in dict.fromkeys([*order, *columns])))
        if iteration is not None:
            statement = statement.where(_p.iteration == iteration)
        frame = self.frame(statement)  # sorted here: no SQL sort
        frame = frame.sort_values(order, kind="stable", ignore_index=True)
        return frame if columns is None else frame[list(columns)]

    def batch_size(self, iteration: int) -> tuple[int, int]:
        """How many pairs batch ``iteration`` has, and over how many queries."""
        rows = self.rows(
            select(func.count(), func.count(distinct(_p.query))).where(_p.iteration == iteration)
        )
        return tuple(rows[0])

    def pair(self, pair_id: int) -> dict | None:
        """One pair's row as a dict (``None`` when the state has no such pair)."""
        frame = self.frame(select(tables.pairs).where(_p.pair_id == int(pair_id)))
        return None if frame.empty else frame.iloc[0].to_dict()

    def unpublished_pairs(self, iteration: int, crowd: str) -> pd.DataFrame:
        """The batch's pairs ``crowd`` does not hold yet, in asking order (``pairs`` columns)."""
        return self.frame(
            select(tables.pairs)
            .where(_p.iteration == iteration, ~_held_by(crowd))
            .order_by(_p.position)
        )

    def unpublished_sizes(self, iteration: int, crowd: str) -> np.ndarray:
        """The answers wanted of each of the batch's pairs ``crowd`` does not hold yet (what
        publishing them would buy), in no particular order: counted per size by the database
        (a batch has a few sizes), so ``status`` reads no row per pair and loads no pandas."""
        sizes = (
            select(_p.answers_wanted, func.count())
            .where(_p.iteration == iteration, ~_held_by(crowd))
            .group_by(_p.answers_wanted)
        )
        counted = np.array(self.rows(sizes), dtype=np.int64).reshape(-1, 2)
        return np.repeat(counted[:, 0], counted[:, 1])

    def published_pairs(self, iteration: int, crowd: str) -> pd.DataFrame:
        """The batch's pairs ``crowd`` holds, in asking order (``pairs`` columns)."""
        return self.frame(
            select(tables.pairs)
            .join(tables.hits, (_h.pair_id == _p.pair_id) & (_h.crowd == crowd))
            .where(_p.iteration == iteration)
            .order_by(_p.position)
        )

    def missing_answers(self, iteration: int, crowd: str | None = None) -> pd.DataFrame:
        """Pairs of the batch with fewer accepted answers than wanted (counting only ``crowd``'s
        answers when given): ``pair_id, have, wanted``."""
        return self.frame(_short_any(iteration) if crowd is None else _short(iteration, crowd))

    def query_progress(self) -> dict[str, tuple[int, int, str]]:
        """Per query with sorting pairs, in one pass: ``(iterations, pairs_judged,
        fingerprint)``, how many batches asked it, how many of its pairs have a verdict, and
        the fingerprint of those verdicts (:meth:`verdict_fingerprints`)."""
        with self.read() as conn:
            return {
                query: (iterations, judged, f"{judged}:{checksum}")
                for query, iterations, judged, checksum in conn.execute(
                    _fingerprints(func.count(distinct(_p.iteration)))
                )
            }

    def verdict_maps(self, queries: Sequence[str] | None = None) -> dict[str, dict]:
        """Per query, ``(x, y) → verdict`` of the aggregated sorting pairs (latest wins) and of
        the pairs the machine prior decided; only the given ``queries`` when some are named."""
        m = tables.machine_verdicts.c
        skipped = select(m.query, m.x, m.y, m.verdict, literal(0).label("pair_id")).where(
            m.asked == 0
        )
        asked = select(_p.query, _p.x, _p.y, _p.verdict, _p.pair_id).where(
            _p.kind == "sort", _p.verdict.is_not(None)
        )
        both = union_all(skipped, asked).subquery()
        statement = select(both.c.query, both.c.x, both.c.y, both.c.verdict).order_by(
            both.c.pair_id
        )
        maps: dict[str, dict[tuple[str, str], int]] = {}
        with self.read() as conn:
            if queries is None:
                rows = conn.execute(statement).cursor  # the driver's tuples: no Row per pair
            else:
                with listed(conn, queries, Text) as named:
                    chosen = statement.where(both.c.query.in_(select(named.c.value)))
                    rows = conn.execute(chosen).cursor.fetchall()
            for query, x, y, verdict in rows:
                known = maps.get(query)
                if known is None:
                    known = maps[query] = {}
                known[(x, y)] = verdict
        return maps

    def verdict_fingerprints(self) -> dict[str, str]:
        """Per query with sorting pairs, a fingerprint of its aggregated sorting verdicts (how
        many, and a checksum of which pairs got which verdict; ``0:0`` without verdicts),
        computed inside the database."""
        with self.read() as conn:
            return {
                query: f"{count}:{checksum}"
                for query, count, checksum in conn.execute(_fingerprints())
            }

    def cached_states(self) -> dict[str, tuple[str, str]]:
        """``query → (fingerprint, state JSON)`` from the sort cache."""
        s = tables.sort_cache.c
        with self.read() as conn:
            rows = conn.execute(select(s.query, s.fingerprint, s.state))
            return {query: (fingerprint, state) for query, fingerprint, state in rows}

    def cache_states(self, rows: Sequence[tuple[str, str, str]]) -> bool:
        """Store ``(query, fingerprint, state JSON)`` rows in the sort cache; whether they were
        stored. The cache only saves work: while another process writes the project (a reading
        command beside a ``run``), nothing is stored and nothing waits."""
        values = [{"query": q, "fingerprint": f, "state": s} for q, f, s in rows]
        held = self.lock.held
        if not held and not self.lock.try_acquire():
            return False
        try:
            if values:
                with self.transaction(revise=False) as conn:
                    conn.execute(upsert(conn, tables.sort_cache), values)
        finally:
            if not held:
                self.lock.release()
        return True
