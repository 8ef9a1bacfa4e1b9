"""The facts fixed at ``init`` and the collection: meta, queries, candidates and their clips."""

from __future__ import annotations

from collections.abc import Sequence

import lazy_loader
from sqlalchemy import Join, bindparam, case, func, select, union, update
from sqlalchemy.sql import FromClause

from crowdprefs.campaign.store import tables
from crowdprefs.campaign.store.base import StoreBase, now, upsert
from crowdprefs.campaign.store.temporary import insert_many, listed, plain

np = lazy_loader.load("numpy")  # imported on first use
pd = lazy_loader.load("pandas")  # imported on first use

_q = tables.queries.alias("q")
_cx = tables.candidates.alias("cx")
_cy = tables.candidates.alias("cy")


def with_clips(joined: FromClause) -> Join:
    """``joined`` (which holds ``pairs``) with each pair's clips: the query's (``q``), x's
    (``cx``) and y's (``cy``), each NULL where not stored."""
    p = tables.pairs.c
    return (
        joined.outerjoin(_q, _q.c.query == p.query)
        .outerjoin(_cx, (_cx.c.query == p.query) & (_cx.c.document == p.x))
        .outerjoin(_cy, (_cy.c.query == p.query) & (_cy.c.document == p.y))
    )


CLIP_X_SECONDS = func.coalesce(
    _cx.c.seconds, case((tables.pairs.c.x == tables.pairs.c.query, _q.c.seconds))
)
"""x's duration over :func:`with_clips` (an attention check's x is the query's own clip)."""

CLIP_LISTEN_SECONDS = _q.c.seconds + CLIP_X_SECONDS + _cy.c.seconds
"""The seconds needed to hear a pair's three clips once, over :func:`with_clips`; NULL while a
duration is unknown."""


class Collection(StoreBase):
    """Queries and candidates with their clips (audio path and duration)."""

    def meta(self, key: str) -> str | None:
        """A fact fixed at init (``seed``, ``created_at``), ``None`` when absent."""
        meta = tables.meta
        return self.scalar(select(meta.c.value).where(meta.c.key == key))

    def set_meta(self, key: str, value: str) -> None:
        """Remember a fact of the project's history (e.g. the ``budget`` it last spent under)."""
        with self.transaction() as conn:
            conn.execute(upsert(conn, tables.meta), [{"key": key, "value": value}])

    def initialise(self, seed: int, candidates: pd.DataFrame) -> None:
        """Fill a new state in one transaction: the seed, the creation time, the queries (with
        ``query_audio``, and their position: where each first appears) and the candidates
        ``query, document, audio`` in CSV order; then, on SQLite, fold the write-ahead log into
        the file (so the file alone is the whole state)."""
        audio = candidates.groupby("query", sort=False)["query_audio"].first()
        first = np.flatnonzero(~candidates["query"].duplicated().to_numpy()).tolist()
        queries = zip(audio.index.tolist(), plain(audio), first, strict=True)
        names = ("query", "document", "audio")
        columns = [plain(candidates[name]) for name in names]
        rows = zip(*columns, range(len(candidates)), strict=True)
        with self.transaction() as conn:
            conn.execute(
                tables.meta.insert(),
                [{"key": "seed", "value": str(seed)}, {"key": "created_at", "value": now()}],
            )
            insert_many(conn, tables.queries, ("query", "audio", "position"), queries)
            insert_many(conn, tables.candidates, (*names, "position"), rows)
        if self.dialect == "sqlite":
            with self.read() as conn:
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")

    def candidates(self) -> pd.DataFrame:
        """``query, document, audio, seconds, position``, in CSV order."""
        c = tables.candidates.c
        return self.frame(
            select(c.query, c.document, c.audio, c.seconds, c.position).order_by(c.position)
        )

    def queries(self) -> pd.DataFrame:
        """``query, audio, seconds`` (the query's own clip), by query."""
        q = tables.queries.c
        return self.frame(select(q.query, q.audio, q.seconds).order_by(q.query))

    def query_names(self) -> list[str]:
        """The queries in the order they first appear in the candidates CSV."""
        q = tables.queries.c
        with self.read() as conn:
            return list(conn.execute(select(q.query).order_by(q.position, q.query)).scalars())

    def candidate_orders(self) -> dict[str, list[str]]:
        """Each query's documents in CSV order (plain lists: the sort's hot path)."""
        c = tables.candidates.c
        orders: dict[str, list[str]] = {}
        with self.read() as conn:
            # the driver's own tuples (no Row per candidate): 500,000 of them at 10,000 queries
            rows = conn.execute(select(c.query, c.document).order_by(c.position)).cursor
            for query, document in rows:
                documents = orders.get(query)
                if documents is None:
                    documents = orders[query] = []
                documents.append(document)
        return orders

    def prior(self) -> pd.DataFrame | None:
        """The machine prior ``query, document, score`` in CSV order, or ``None`` without one."""
        c = tables.candidates.c
        frame = self.frame(select(c.query, c.document, c.prior.label("score")).order_by(c.position))
        return None if frame["score"].isna().all() else frame

    def prior_map(self) -> dict[str, dict[str, float]] | None:
        """The machine prior per query and document (what the sort's pivot rule reads), or
        ``None`` without one; plain tuples, no pandas (``status`` and ``next`` read it)."""
        c = tables.candidates.c
        scores: dict[str, dict[str, float]] = {}
        with self.read() as conn:
            rows = conn.execute(
                select(c.query, c.document, c.prior).where(c.prior.is_not(None))
            ).cursor
            for query, document, score in rows:
                scores.setdefault(query, {})[document] = score
        return scores or None

    def set_prior(self, prior: pd.DataFrame) -> None:
        """Store a checked prior (``query, document, score`` covering every candidate) in one
        transaction; the cached sort states go with it (their pivots change)."""
        c = tables.candidates.c
        update = (
            tables.candidates.update()
            .where(c.query == bindparam("q"), c.document == bindparam("d"))
            .values(prior=bindparam("s"))
        )
        rows = zip(
            plain(prior["query"]), plain(prior["document"]), plain(prior["score"]), strict=True
        )
        with self.transaction() as conn:
            conn.execute(update, [{"q": q, "d": d, "s": float(v)} for q, d, v in rows])
            conn.execute(tables.sort_cache.delete())

    def set_candidate_orders(self, orders: dict[str, list[str]]) -> None:
        """Give each query of ``orders`` its candidates in that order (the same documents), in
        one transaction: the query's positions are dealt out again, so the queries keep their
        order; the cached sort states go (their initial orders change)."""
        c = tables.candidates.c
        held = self.candidate_orders()
        positions = self.candidates().groupby("query")["position"].apply(sorted)
        rows = []
        for query, documents in orders.items():
            if sorted(documents) != sorted(held.get(query, [])):
                raise ValueError(f"the new order of query {query!r} has other documents")
            rows.extend(
                {"q": query, "d": d, "p": int(p)}
                for d, p in zip(documents, positions[query], strict=True)
            )
        update = (
            tables.candidates.update()
            .where(c.query == bindparam("q"), c.document == bindparam("d"))
            .values(position=bindparam("p"))
        )
        with self.transaction() as conn:
            if rows:
                conn.execute(update, rows)
            conn.execute(tables.sort_cache.delete())

    def set_clip(self, query: str, document: str | None, audio: str, seconds: float) -> None:
        """Record a prepared clip (``document=None`` for the query's own clip)."""
        if document is None:
            table = tables.queries
            statement = update(table).where(table.c.query == query)
        else:
            table = tables.candidates
            statement = update(table).where(table.c.query == query, table.c.document == document)
        with self.transaction() as conn:
            conn.execute(statement.values(audio=audio, seconds=seconds))

    def clip_paths(self) -> list[str]:
        """Every clip path (or URL) of the queries and candidates, sorted, without repeats."""
        q, c = tables.queries.c, tables.candidates.c
        with self.read() as conn:
            paths = conn.execute(
                union(
                    select(q.audio).where(q.audio.is_not(None)),
                    select(c.audio).where(c.audio.is_not(None)),
                )
            ).scalars()
            return sorted(paths)

    def pair_audio(self, query: str, x: str, y: str) -> tuple[str | None, str | None, str | None]:
        """The stored clips ``(query, x, y)`` of a pair (a side equal to the query without a
        candidate's clip of its own, as in an attention check, is the query's clip); ``None``
        where a clip is unknown."""
        q, c = tables.queries.c, tables.candidates.c
        document = select(c.audio).where(c.query == query, c.document == bindparam("document"))
        with self.read() as conn:
            query_audio = conn.execute(select(q.audio).where(q.query == query)).scalar()

            def audio(name: str) -> str | None:
                own = conn.execute(document, {"document": name}).scalar()
                return query_audio if own is None and name == query else own

            return query_audio, audio(x), audio(y)

    def clip_seconds(self, pair_ids: Sequence[int]) -> pd.DataFrame:
        """The durations of each pair's clips: ``query, x, y`` (seconds, NaN while unknown),
        indexed by ``pair_id`` in the order given (pairs not in the state are left out)."""
        p = tables.pairs.c
        with self.read() as conn, listed(conn, (int(i) for i in pair_ids)) as ids:
            statement = (
                select(
                    p.pair_id,
                    _q.c.seconds.label("query"),
                    CLIP_X_SECONDS.label("x"),
                    _cy.c.seconds.label("y"),
                )
                .select_from(with_clips(tables.pairs.join(ids, ids.c.value == p.pair_id)))
                .order_by(ids.c.position)
            )
            result = conn.execute(statement)
            rows = result.cursor.fetchall()  # the driver's tuples, as :meth:`StoreBase.frame`
            frame = pd.DataFrame.from_records(rows, columns=list(result.keys()))
        return frame.set_index("pair_id").astype(float)
