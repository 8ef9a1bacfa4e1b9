"""The database every part of the store shares, on any engine SQLAlchemy compiles for (SQLite,
the embedded default; PostgreSQL for a study served by several processes or hosts):
connections, transactions, migrations, the project lock, and the boundary where storage
failures become one clear line.

Each concern of the store is a mixin subclassing :class:`StoreBase` (``collection``,
``batches``, ``hits``, ``answers``, ``reviews``, and the roles of the crowds that keep state of
their own); :class:`crowdprefs.campaign.store.Store` combines them. Inside the store, methods
read through :meth:`StoreBase.read` (or :meth:`StoreBase.frame`, :meth:`StoreBase.rows`,
:meth:`StoreBase.scalar`) and change anything only inside :meth:`StoreBase.transaction`, with
statements built from :mod:`.tables`; nothing outside the store does, and nothing outside it
learns which engine it runs on.

Writers are serialised per campaign by the database itself: SQLite's ``BEGIN IMMEDIATE``, and
on PostgreSQL a transaction-scoped advisory lock taken as the transaction's first statement, so
a rule checked inside one transaction (a pair's slot still free, an answer not yet stored) holds
until it commits, whichever process or host runs it. Readers never wait.

Every public method of a mixin is guarded (:meth:`StoreBase.__init_subclass__`): a failure of
the database itself (corrupt, locked, read-only, disk full, unreachable, refused) leaves it as a
:class:`~crowdprefs.errors.StateError` naming the database and the cause. Constraint violations
and SQL mistakes are bugs, not storage failures, and keep their traceback.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sqlite3
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar, NoReturn, TypeVar

import lazy_loader
from sqlalchemy import Connection, Engine, Executable, Row, case, event, exc, func, select, text
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.pool import QueuePool
from sqlalchemy.sql.functions import FunctionElement
from sqlalchemy.types import Text

from crowdprefs.campaign.store import tables
from crowdprefs.campaign.store.location import Location
from crowdprefs.campaign.store.lock import (
    LOCK_NAMESPACE,  # noqa: F401  (importable here, as the API reference lists it)
    WRITER_NAMESPACE,
    AdvisoryLock,
    ProjectLock,
    campaign_key,
    command_line,
)
from crowdprefs.campaign.store.schema import History
from crowdprefs.clock import now  # noqa: F401  (the store's modules stamp with it)
from crowdprefs.errors import StateError

np = lazy_loader.load("numpy")  # imported on first use
pd = lazy_loader.load("pandas")  # imported on first use

BUSY_SECONDS = 60.0
"""How long a statement waits for another connection's write lock before giving up."""

CACHE_MB = 64
"""SQLite's page cache per connection, at most (its default, 2 MB, thrashes on the indexes of a
10,000-query project: building a batch inserts into them all over)."""

CAUSES = {
    "SQLITE_NOTADB": "it is not a SQLite database (corrupt or overwritten); restore it from a "
    "backup",
    "SQLITE_CORRUPT": "the database is corrupt; restore it from a backup",
    "SQLITE_BUSY": "the database is locked by another program; close it and retry",
    "SQLITE_LOCKED": "the database is locked by another program; close it and retry",
    "SQLITE_READONLY": "the file (or its folder) is read-only; make it writable",
    "SQLITE_FULL": "the disk is full; free some space and retry",
    "SQLITE_CANTOPEN": "the file cannot be opened; check that it and its folder are accessible",
    "SQLITE_PERM": "permission denied; check the file's permissions",
    "SQLITE_IOERR": "an input/output error occurred; check the disk",
}
"""The cause of a SQLite failure, by its primary error name."""


COLUMNS_QUERY = {
    "sqlite": "SELECT m.name, p.name FROM sqlite_master AS m, pragma_table_info(m.name) AS p "
    "WHERE m.type = 'table'",
    "postgresql": "SELECT c.relname, a.attname FROM pg_attribute AS a "
    "JOIN pg_class AS c ON a.attrelid = c.oid "
    "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') "
    "AND a.attnum > 0 AND NOT a.attisdropped",
}
"""(table, column) of every table of the state, in one statement per engine (the schema check
of every opening: SQLAlchemy's reflection takes a statement per table)."""


FULL_DISK = 1 << 20
"""Free bytes below which a SQLite input/output error is reported as a full disk: SQLite grows
its shared-memory index and journal in steps of 32 KB and more, and says ``disk I/O error``
(``SQLITE_IOERR_SHMSIZE``, ``…_WRITE``) when it cannot."""


def _free_bytes(folder: Path) -> int | None:
    """Bytes an unprivileged writer may still use on the file system of ``folder``."""
    try:
        info = os.statvfs(folder)
    except OSError:
        return None
    return info.f_bavail * info.f_frsize


def storage_error(location: Location, error: BaseException) -> StateError:
    """One line naming the database and the cause of a storage failure."""
    original = getattr(error, "orig", error)
    name = getattr(original, "sqlite_errorname", "") or ""
    cause = next((cause for code, cause in CAUSES.items() if name.startswith(code)), None)
    if name.startswith(("SQLITE_IOERR", "SQLITE_FULL")) and location.path is not None:
        free = _free_bytes(location.path.parent)
        if free is not None and free < FULL_DISK:  # SQLite reports a full disk as I/O errors
            cause = f"no space left on device ({free // 1024} KB free); free some space and retry"
    if cause is None:
        lines = str(original).strip().splitlines()
        cause = lines[0] if lines else type(original).__name__
    return StateError(f"cannot use the project state {location}: {cause}")


def _is_storage_failure(error: BaseException) -> bool:
    """A failure of the database (operational: files, disk, network, server), not a bug."""
    return isinstance(error, exc.OperationalError | exc.InterfaceError) or (
        isinstance(error, exc.DatabaseError)
        and not isinstance(error, exc.IntegrityError | exc.ProgrammingError)
        and type(getattr(error, "orig", None)).__name__ in ("DatabaseError", "InternalError")
    )


def _raise(location: Location, error: BaseException) -> NoReturn:
    """Re-raise ``error`` as a storage failure of ``location`` when it is one, else as it is."""
    if _is_storage_failure(error):
        raise storage_error(location, error) from None
    raise error


Method = TypeVar("Method", bound=Callable[..., Any])


def _guarded(method: Method) -> Method:
    @functools.wraps(method)
    def guarded(self: StoreBase, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except exc.DBAPIError as error:
            _raise(self.location, error)

    return guarded  # type: ignore[return-value]


def _sqlite_engine(path: Path) -> Engine:
    """A SQLite file: pysqlite's own transaction handling off, so that ``BEGIN`` (reads) and
    ``BEGIN IMMEDIATE`` (writes) are ours; every connection set up as the store expects."""
    engine = _sqlite_pool(path)

    @event.listens_for(engine, "connect")
    def _configure(dbapi: Any, _record: Any) -> None:
        dbapi.isolation_level = None
        cursor = dbapi.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(BUSY_SECONDS * 1000)}")
        cursor.execute(f"PRAGMA cache_size=-{CACHE_MB * 1024}")
        # an answer a judge saw accepted survives a power loss: WAL commits are synced
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        immediate = conn.get_execution_options().get("writer", False)
        conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    @event.listens_for(engine, "before_cursor_execute")
    def _numbers(*_: Any) -> None:
        if _numpy_loaded():
            _plain_numbers_for_sqlite()

    return engine


POOL_SIZE = 4
"""Connections an engine of the store keeps open for reuse."""
POOL_OVERFLOW = 16
"""Connections an engine opens beyond :data:`POOL_SIZE` when that many are in use at once."""


def _sqlite_pool(path: Path) -> Engine:
    """A pooled engine on the file: a connection (and its set-up) is reused by the store's
    calls instead of opened for each (a web server's answer makes several calls)."""
    from sqlalchemy import create_engine

    engine = create_engine(
        f"sqlite:///{path}",
        connect_args={"timeout": BUSY_SECONDS, "check_same_thread": False},
        poolclass=QueuePool,
        pool_size=POOL_SIZE,
        max_overflow=POOL_OVERFLOW,
    )
    _ENGINES.add(engine)
    return engine


NUMPY_INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32")
"""numpy's integer scalars (by name), bound as the Python integers they are on both engines:
SQLite's driver would bind an ``np.int64`` as a blob that silently matches no row, and psycopg
would refuse it (:func:`_plain_numbers_for_sqlite`, :func:`_plain_numbers_for_psycopg`)."""


def _numpy_loaded() -> bool:
    """Whether numpy has run, not only its stand-in that loads it on first use."""
    return "numpy.version" in sys.modules


@functools.cache
def _plain_numbers_for_sqlite() -> None:
    """:data:`NUMPY_INTEGERS` and ``np.bool_`` bound by SQLite's driver as integers and
    booleans: run before a statement once numpy is loaded (no numpy value exists before, and a
    command that never uses numpy never loads it)."""
    for name in NUMPY_INTEGERS:
        sqlite3.register_adapter(getattr(np, name), int)
    sqlite3.register_adapter(np.bool_, bool)


def _plain_numbers_for_psycopg() -> None:
    """:data:`NUMPY_INTEGERS` and ``np.bool_`` dumped by psycopg as integers and booleans (here,
    with the first PostgreSQL engine: psycopg takes a tenth of a second to import)."""
    import psycopg
    from psycopg.types.bool import BoolDumper
    from psycopg.types.numeric import IntDumper

    for name in NUMPY_INTEGERS:
        psycopg.adapters.register_dumper(getattr(np, name), IntDumper)
    psycopg.adapters.register_dumper(np.bool_, BoolDumper)


_ENGINES: weakref.WeakSet[Engine] = weakref.WeakSet()
"""Every pooled engine of this process: a forked child starts with empty pools (a database
connection must never be shared by two processes), see :func:`_forget_pools`."""


def _forget_pools() -> None:
    for engine in list(_ENGINES):
        engine.dispose(close=False)  # the parent keeps using its connections


os.register_at_fork(after_in_child=_forget_pools)


def _postgresql_engine(location: Location) -> Engine:
    from sqlalchemy import create_engine

    _plain_numbers_for_psycopg()
    engine = create_engine(
        location.url,
        pool_pre_ping=True,  # a server restarted meanwhile costs a reconnect, not a failure
        pool_size=POOL_SIZE,
        max_overflow=POOL_OVERFLOW,
        connect_args={"application_name": command_line()[:63], "connect_timeout": 10},
    )
    _ENGINES.add(engine)
    return engine


class StoreBase:
    """A project's database: the engine the store's mixins share.

    ``location`` is the project's SQLite file or its PostgreSQL database
    (:class:`~crowdprefs.campaign.store.location.Location`). ``lock=False`` opens it for a web
    server process, whose changes never take the project lock: they are single transactions
    serialised by the database, so the researcher's commands run beside a live server.
    """

    HISTORY: ClassVar[History]
    """The schema history this store migrates by: :class:`~crowdprefs.campaign.store.Store`
    sets it, the core's steps merged with the crowds' (:func:`.schema.history`)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, value in list(vars(cls).items()):
            if not name.startswith("_") and inspect.isfunction(value):
                setattr(cls, name, _guarded(value))

    def __init__(
        self, location: Location | Path | str, *, create: bool = False, lock: bool = True
    ) -> None:
        location = Location.of(location)
        self.location = location
        self.path = location.path  # the SQLite file; None on PostgreSQL
        if location.path is not None and not create and not location.path.exists():
            raise StateError(f"no project state at {location.path}: run 'crowdprefs init' first")
        self.takes_lock = lock
        self.writers: contextlib.AbstractContextManager[Any] = (
            threading.RLock() if location.path is not None else contextlib.nullcontext()
        )
        """Where this store's threads wait for each other's write transactions on SQLite, in
        turn (a web server's requests run on several): not in SQLite's busy handler, which polls
        with growing sleeps. PostgreSQL queues them itself (the writers' advisory lock)."""
        try:
            if location.path is not None:
                self.engine = _sqlite_engine(location.path)
                self.lock: ProjectLock | AdvisoryLock = ProjectLock(
                    location.path.with_suffix(".lock")
                )
            else:
                self.engine = _postgresql_engine(location)
                self.lock = AdvisoryLock(self.engine, location)
        except exc.ArgumentError as error:
            raise StateError(f"cannot use the project state {location}: {error}") from None
        try:
            version = self.version
            if create and location.url is not None and self._has_tables():
                raise StateError(
                    f"the database {location} is not empty; give crowdprefs a database of its own"
                )
            if not create and version == 0:  # an empty database: migrating would write one
                raise StateError(f"{location}: not a crowdprefs state (empty or another program's)")
            if version < self.schema_version:
                self.migrate()
            elif version > self.schema_version:
                raise StateError(
                    f"{location} has schema version {version}, newer than this crowdprefs "
                    f"({self.schema_version}): upgrade crowdprefs"
                )
            if not create:
                self._check_schema()
        except exc.DBAPIError as error:
            self.close()
            _raise(location, error)
        except BaseException:
            self.close()
            raise

    def _check_schema(self) -> None:
        """Refuse a state missing a table or a column of :mod:`.tables` (dropped or altered by
        hand, or a partial restore), on every engine alike, before a command reads or writes
        it: otherwise the first statement to reach the gap fails, after others have run."""
        found: dict[str, set[str]] = {}
        with self.read() as conn:
            for table, column in conn.exec_driver_sql(COLUMNS_QUERY[self.dialect]):
                found.setdefault(table, set()).add(column)
        gaps = [
            table.name if table.name not in found else f"{table.name}.{column.name}"
            for table in tables.metadata.sorted_tables
            for column in table.columns
            if table.name not in found or column.name not in found[table.name]
        ]
        if gaps:
            missing = ", ".join(dict.fromkeys(gaps))
            raise StateError(
                f"{self.location}: the state is damaged (missing {missing}); restore it from "
                "a backup"
            )

    def _has_tables(self) -> bool:
        with self.read() as conn:
            return bool(conn.dialect.get_table_names(conn))

    def discard(self) -> None:
        """Drop every table of a state just created (a failed ``init``): the database is left
        as empty as it was given."""
        with self.transaction() as conn:
            tables.metadata.drop_all(conn)

    def table_counts(self) -> dict[str, int]:
        """Rows per table (what :func:`copy_state` checks a copy by)."""
        with self.read() as conn:
            counts = {
                table.name: conn.execute(select(func.count()).select_from(table)).scalar_one()
                for table in tables.metadata.sorted_tables
            }
        return counts

    @property
    def schema_version(self) -> int:
        """The version this crowdprefs writes: the number of steps of :attr:`HISTORY`."""
        return len(self.HISTORY)

    @property
    def many_processes(self) -> bool:
        """Whether several server processes and hosts may share this state (PostgreSQL; a
        SQLite file has one writer at a time and one host)."""
        return self.location.path is None

    def server_lock(self) -> ProjectLock | None:
        """The lock a server process holds while it serves a state that only one may serve
        (a SQLite file: ``state.serve.lock`` beside it); ``None`` where many may."""
        return (
            None
            if self.location.path is None
            else ProjectLock(self.location.path.with_suffix(".serve.lock"))
        )

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql`` (for the store's own statements only)."""
        return self.engine.dialect.name

    def close(self) -> None:
        """Close every connection and give up the project lock (when this store held it)."""
        self.lock.release()
        self.engine.dispose()

    @property
    def version(self) -> int:
        """How many migrations the database has seen (0: none, an empty database)."""
        with self.read() as conn:
            if self.dialect == "sqlite":
                return int(conn.exec_driver_sql("PRAGMA user_version").scalar_one())
            if not conn.dialect.has_table(conn, "meta"):
                return 0
            value = conn.execute(
                select(tables.meta.c.value).where(tables.meta.c.key == "schema_version")
            ).scalar()
            return 0 if value is None else int(value)

    def _stamp(self, conn: Connection, version: int) -> None:
        """Record the schema version in ``meta`` (and, on SQLite, in ``PRAGMA user_version``,
        where crowdprefs before 0012 kept it)."""
        if self.dialect == "sqlite":
            conn.exec_driver_sql(f"PRAGMA user_version = {int(version)}")
        conn.execute(upsert(conn, tables.meta), [{"key": "schema_version", "value": str(version)}])

    def migrate(self) -> None:
        """Bring the database to :attr:`schema_version`, each step in one transaction.

        An empty database is created at the current schema (the tables of the one ``metadata``)
        on any engine; a database of an older crowdprefs takes the steps of :attr:`HISTORY` it
        has not seen: SQL statements (the SQLite-only store's, up to ``0011``) or functions of
        the connection (engine-neutral)."""
        version = self.version
        if version == 0:
            if self.dialect == "sqlite":
                raw = self.engine.raw_connection()  # outside a transaction, as SQLite asks
                try:
                    raw.cursor().execute("PRAGMA journal_mode=WAL")
                finally:
                    raw.close()
            with self.transaction() as conn:
                tables.metadata.create_all(conn)
                self._stamp(conn, self.schema_version)
            return
        for number in range(version + 1, self.schema_version + 1):
            with self.transaction() as conn:
                for step in self.HISTORY[number - 1][1]:
                    if callable(step):
                        step(conn)
                    else:
                        for statement in step:
                            conn.exec_driver_sql(statement)
                self._stamp(conn, number)

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection for reads: one consistent snapshot, given back at the end."""
        try:
            with self.engine.connect() as conn:
                yield conn
        except exc.DBAPIError as error:
            _raise(self.location, error)

    @contextmanager
    def transaction(self, *, revise: bool = True) -> Iterator[Connection]:
        """One write transaction, committed at the end and rolled back whole on any error.

        Writers of a campaign run one at a time, across processes and hosts (SQLite's
        ``BEGIN IMMEDIATE``; PostgreSQL's transaction-scoped advisory lock on the campaign).
        Unless the store was opened with ``lock=False``, the first transaction also takes the
        project lock (:mod:`.lock`), held until :meth:`close`: one command per project at a
        time.

        On SQLite, a transaction that changed a row also gives the state a new
        :attr:`revision`, in the same commit, unless told not to ``revise`` it: it writes
        nothing a report of the state shows (a cache of what the state already says, a
        server's own bookkeeping) or copies a whole state, revision included.
        """
        if self.takes_lock:
            self.lock.acquire()
        try:
            with self.writers, self.engine.connect() as conn:
                conn.execution_options(writer=True)
                with conn.begin():
                    if self.dialect == "postgresql":
                        conn.execute(
                            select(func.pg_advisory_xact_lock(WRITER_NAMESPACE, campaign_key()))
                        )
                    sqlite = conn.connection.dbapi_connection if self.dialect == "sqlite" else None
                    before = None if sqlite is None or not revise else sqlite.total_changes
                    yield conn
                    if before is not None and sqlite.total_changes != before:
                        sqlite.execute(NEW_REVISION, (os.urandom(16).hex(),))
        except exc.DBAPIError as error:
            _raise(self.location, error)

    @property
    def revision(self) -> str | None:
        """The SQLite state's revision: a new random token at every commit that changed it
        (``None`` on PostgreSQL, or before the first such commit). Equal revisions mean the
        same state, so a report of one (``status``) can be kept and reused
        (:mod:`crowdprefs.campaign.kept_reports`)."""
        if self.dialect != "sqlite":
            return None
        meta = tables.meta
        return self.scalar(select(meta.c.value).where(meta.c.key == REVISION_KEY))

    def frame(
        self, statement: Executable | str, params: dict[str, Any] | None = None
    ) -> pd.DataFrame:
        """The result of a read query as a DataFrame (columns as the query names them)."""
        with self.read() as conn:
            result = conn.execute(
                text(statement) if isinstance(statement, str) else statement, params or {}
            )
            columns = list(result.keys())
            # the driver's plain tuples: pandas probes each Row for keys (an exception per row),
            # 8× slower on a 490,000-pair batch; the store's column types need no conversion
            rows = result.cursor.fetchall()
            return pd.DataFrame.from_records(rows, columns=columns, coerce_float=True)

    def rows(self, statement: Executable, params: dict[str, Any] | None = None) -> list[Row]:
        """The rows of a read query."""
        with self.read() as conn:
            return list(conn.execute(statement, params or {}))

    def scalar(self, statement: Executable, params: dict[str, Any] | None = None) -> Any:
        """The first column of a read query's first row (``None`` without rows)."""
        with self.read() as conn:
            return conn.execute(statement, params or {}).scalar()


class json_field(FunctionElement):  # noqa: N801 (an SQL function, named as one)
    """SQL: the text at ``path`` (keys) inside a JSON text column, NULL where the column is
    NULL, not JSON or has no such key; compiled for each engine (``json_extract`` on SQLite,
    ``#>>`` on PostgreSQL). The store writes its JSON columns (``answers.raw``) itself."""

    type = Text()
    inherit_cache = True

    def __init__(self, column: Any, *path: str) -> None:
        self.path = path
        super().__init__(column)


@compiles(json_field, "sqlite")
def _json_field_sqlite(element: json_field, compiler: Any, **kw: Any) -> str:
    column = compiler.process(list(element.clauses)[0], **kw)
    path = "$." + ".".join(element.path)
    return f"(CASE WHEN json_valid({column}) THEN json_extract({column}, '{path}') END)"


@compiles(json_field, "postgresql")
def _json_field_postgresql(element: json_field, compiler: Any, **kw: Any) -> str:
    column = compiler.process(list(element.clauses)[0], **kw)
    return f"(CAST({column} AS jsonb) #>> '{{{','.join(element.path)}}}')"


REVISION_KEY = "revision"
"""The ``meta`` key of the SQLite state's :attr:`StoreBase.revision`."""
NEW_REVISION = (
    f"INSERT INTO meta (key, value) VALUES ('{REVISION_KEY}', ?) "
    "ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)
"""SQLite's statement giving the state a new revision (128 random bits), run on the driver's
connection like its count of changed rows (``total_changes``): through SQLAlchemy, the two
would cost a small transaction three times its own work."""


def upsert(conn: Connection, table: Any) -> Executable:
    """``INSERT … ON CONFLICT (primary key) DO UPDATE`` every other column, compiled for the
    connection's engine, for ``conn.execute(statement, rows)``: a stored row with the same key
    is replaced."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    statement = insert(table)
    keys = [column.name for column in table.primary_key.columns]
    others = {c.name: statement.excluded[c.name] for c in table.columns if c.name not in keys}
    return statement.on_conflict_do_update(index_elements=keys, set_=others)


def insert_ignore(conn: Connection, table: Any) -> Executable:
    """``INSERT … ON CONFLICT DO NOTHING`` for ``conn.execute(statement, rows)``: rows whose key
    or unique columns are already stored are left as they are."""
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        from sqlalchemy.dialects.sqlite import insert
    return insert(table).on_conflict_do_nothing()


def recount_pair_counts(pair_ids: Executable) -> tuple[Executable, Executable]:
    """The statements that count again the accepted answers of the pairs ``pair_ids`` (a
    SELECT of pair ids, maybe of bound parameters) into ``pair_counts``: a delete, then an
    insert of the new counts."""
    # the answers counted under another name: a ``pair_ids`` reading ``answers`` must not
    # correlate with them (it would select each counted answer's own pair only)
    answers, counts = tables.answers.alias("counted"), tables.pair_counts
    tally = [func.sum(case((answers.c.score == s, 1), else_=0)) for s in (1, 0, -1)]
    return (
        counts.delete().where(counts.c.pair_id.in_(pair_ids)),
        counts.insert().from_select(
            ["pair_id", "more", "equal", "less"],
            select(answers.c.pair_id, *tally)
            .where(answers.c.pair_id.in_(pair_ids), answers.c.status != "rejected")
            .group_by(answers.c.pair_id),
        ),
    )


def refresh_pair_counts(conn: Connection, pair_ids: Executable) -> None:
    """Count again the accepted answers of the pairs ``pair_ids`` into ``pair_counts``
    (:func:`recount_pair_counts`): called in every transaction that stores answers or changes
    their status."""
    for statement in recount_pair_counts(pair_ids):
        conn.execute(statement)


def copy_state(source: StoreBase, target: StoreBase, *, chunk: int = 20_000) -> dict[str, int]:
    """Copy every table of ``source`` into the new, empty ``target`` (any engines), parents
    before children, in one transaction of the target; rows counted per table. Key sequences
    are moved past the copied ids, so the target goes on numbering where the source stopped."""
    if target.scalar(select(tables.meta.c.value).where(tables.meta.c.key == "seed")) is not None:
        raise StateError(f"{target.location} already holds a crowdprefs state; give an empty one")
    copied: dict[str, int] = {}
    with source.read() as reading, target.transaction(revise=False) as writing:
        writing.execute(tables.meta.delete())  # the schema version a new database stamped
        for table in tables.metadata.sorted_tables:
            copied[table.name] = 0
            result = reading.execution_options(yield_per=chunk).execute(select(table))
            for rows in result.partitions():
                writing.execute(table.insert(), [row._asdict() for row in rows])
                copied[table.name] += len(rows)
        if target.dialect == "postgresql":
            for table in tables.metadata.sorted_tables:
                for column in table.primary_key.columns:
                    if column.autoincrement is True or (
                        column.autoincrement == "auto"
                        and len(table.primary_key.columns) == 1
                        and isinstance(column.type, tables.Integer)
                    ):
                        writing.execute(
                            text(
                                f"SELECT setval(pg_get_serial_sequence('{table.name}', "
                                f"'{column.name}'), COALESCE(MAX({column.name}), 0) + 1, false)"
                                f" FROM {table.name}"
                            )
                        )
        target._stamp(writing, target.schema_version)
    return copied
