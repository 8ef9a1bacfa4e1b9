"""The SQLite connection every part of the store shares: transactions, migrations, the project
lock, and the boundary where storage failures become one clear line.

Each concern of the store is a mixin subclassing :class:`SQLiteBase` (``collection``,
``batches``, ``hits``, ``answers``, ``reviews``); :class:`crowdprefs.campaign.store.Store`
combines them. Inside the store, methods use :attr:`SQLiteBase.conn` for reads,
:meth:`SQLiteBase.frame` for reads into pandas and :meth:`SQLiteBase.transaction` for every
change; nothing outside the store does.

Every public method of a mixin is guarded (:meth:`SQLiteBase.__init_subclass__`): a SQLite
failure of the file itself (corrupt, locked, read-only, disk full, unreadable) leaves it as a
:class:`~crowdprefs.errors.StateError` naming the file and the cause. Constraint violations and
SQL mistakes are bugs, not storage failures, and keep their traceback.
"""

from __future__ import annotations

import functools
import inspect
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import lazy_loader

from crowdprefs.campaign.store.lock import ProjectLock
from crowdprefs.campaign.store.schema import MIGRATIONS, SCHEMA_VERSION
from crowdprefs.errors import StateError

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
"""The cause of a storage failure, by SQLite's primary error name."""


def now() -> str:
    """The current UTC time as ISO 8601 text (how every timestamp is stored)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def storage_error(path: Path, error: sqlite3.Error) -> StateError:
    """One line naming the state file and the cause of a SQLite failure."""
    name = getattr(error, "sqlite_errorname", "") or ""
    primary = next((cause for code, cause in CAUSES.items() if name.startswith(code)), None)
    return StateError(f"cannot use the project state {path}: {primary or str(error).strip()}")


def _statements(sql: str) -> list[str]:
    """The SQL statements of a script, in order (a trigger's body, with its own semicolons,
    stays one statement)."""
    done: list[str] = []
    pending = ""
    for piece in sql.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            if pending.strip(" \n;"):
                done.append(pending.strip())
            pending = ""
    if pending.strip(" \n;"):
        done.append(pending.strip())
    return done


def _is_storage_failure(error: BaseException) -> bool:
    return isinstance(error, sqlite3.DatabaseError) and not isinstance(
        error, sqlite3.IntegrityError | sqlite3.ProgrammingError
    )


def _raise(path: Path, error: sqlite3.Error) -> NoReturn:
    """Re-raise ``error`` as a storage failure of ``path`` when it is one, else as it is."""
    if _is_storage_failure(error):
        raise storage_error(path, error) from None
    raise error


Method = TypeVar("Method", bound=Callable[..., Any])


def _guarded(method: Method) -> Method:
    @functools.wraps(method)
    def guarded(self: SQLiteBase, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as error:
            _raise(self.path, error)

    return guarded  # type: ignore[return-value]


class SQLiteBase:
    """A project's SQLite state file: the connection the store's mixins share."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, value in list(vars(cls).items()):
            if not name.startswith("_") and inspect.isfunction(value):
                setattr(cls, name, _guarded(value))

    def __init__(self, path: Path, *, create: bool = False) -> None:
        path = Path(path)
        if not create and not path.exists():
            raise StateError(f"no project state at {path}: run 'crowdprefs init' first")
        self.path = path
        self.lock = ProjectLock(path.with_suffix(".lock"))
        try:
            self.conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_SECONDS)
        except sqlite3.Error as error:
            _raise(path, error)
        try:
            if not create and self.version == 0:  # an empty file: migrating would write one
                raise StateError(f"{path}: not a crowdprefs state (empty or another program's)")
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")
            self.conn.execute("PRAGMA foreign_keys=ON")
            self.conn.execute(f"PRAGMA busy_timeout={int(BUSY_SECONDS * 1000)}")
            self.conn.execute(f"PRAGMA cache_size=-{CACHE_MB * 1024}")
            self.migrate()
        except sqlite3.Error as error:
            self.close()
            _raise(path, error)
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close the connection and give up the project lock (when this store held it)."""
        self.conn.close()
        self.lock.release()

    @property
    def version(self) -> int:
        """How many migrations the file has seen (``PRAGMA user_version``)."""
        return self.conn.execute("PRAGMA user_version").fetchone()[0]

    def migrate(self) -> None:
        """Apply the migrations this file has not seen yet, each in one transaction."""
        version = self.version
        if version > SCHEMA_VERSION:
            raise StateError(
                f"{self.path} has schema version {version}, newer than this crowdprefs "
                f"({SCHEMA_VERSION}): upgrade crowdprefs"
            )
        for number, (_name, sql) in enumerate(MIGRATIONS[version:], start=version + 1):
            with self.transaction() as conn:
                for statement in _statements(sql):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {number}")

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back whole on any error.

        The first transaction takes the project lock (:mod:`.lock`), held until :meth:`close`:
        one writing process per project at a time.
        """
        self.lock.acquire()
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as error:
            _raise(self.path, error)
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException as error:
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            if isinstance(error, sqlite3.Error):
                _raise(self.path, error)
            raise

    def frame(self, sql: str, params: Sequence | dict = ()) -> pd.DataFrame:
        """The result of a read query as a DataFrame."""
        try:
            return pd.read_sql_query(sql, self.conn, params=params)
        except pd.errors.DatabaseError as error:  # pandas wraps the driver's error
            if isinstance(error.__cause__, sqlite3.Error):
                _raise(self.path, error.__cause__)
            raise
