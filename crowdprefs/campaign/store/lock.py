"""One command per project: on SQLite an exclusive OS lock (``fcntl.flock``) on a file beside the
state; on PostgreSQL a session-level advisory lock on the campaign (:class:`AdvisoryLock`).

The lock belongs to a process: every :class:`~crowdprefs.campaign.store.Store` of one process
shares it (the web server's threads each open their own), and the operating system releases it
when the process ends, however it ends (``kill -9`` included), so a lock is never stale. Its
holder writes its process id, command line and start time into the file, which is how a second
writer names who is in its way.
"""

from __future__ import annotations

import fcntl
import os
import shlex
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, func, select, text

from crowdprefs.errors import StateError, os_cause

LOCK_NAMESPACE = 0x63707266
"""The first key of the project lock on PostgreSQL ('cprf'), a session-level advisory lock; the
second is the campaign's (its database and schema), see :func:`campaign_key`."""

WRITER_NAMESPACE = 0x63707277
"""The first key of the writers' transaction-scoped advisory lock ('cprw'), on the same
campaign key: held by each write transaction, so writers of a campaign run one at a time."""


def campaign_key() -> Any:
    """SQL for the campaign's advisory-lock key on PostgreSQL: its database and schema."""
    return func.hashtext(func.current_database() + "." + func.current_schema())


_HELD: dict[tuple[int, str], list[Any]] = {}
"""``(process id, lock) → [handle, holders]`` of the locks this process holds (keyed by process
id too, so a forked child never mistakes its parent's lock for its own)."""
_MUTEX = threading.Lock()


def command_line() -> str:
    """This process's command as a user typed it (``crowdprefs run p``), for the lock file."""
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] not in ("", "-c") else "python"
    return shlex.join([program, *sys.argv[1:]])


class ProcessLock:
    """A lock that belongs to the process: :meth:`acquire` takes it from the system once
    (:meth:`_take`, a handle) and counts the stores of this process holding it; the last
    :meth:`release` gives it back (:meth:`_give_back`)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.held = False

    def _key(self) -> tuple[int, str]:
        return os.getpid(), self.name

    def acquire(self) -> None:
        """Hold the lock (once per instance); :class:`StateError` naming the holder when
        another process has it."""
        if self.held:
            return
        key = self._key()
        with _MUTEX:
            entry = _HELD.get(key)
            if entry is None:
                entry = _HELD[key] = [self._take(), 0]
            entry[1] += 1
        self.held = True

    def try_acquire(self) -> bool:
        """:meth:`acquire` when the lock is free; ``False`` when another process holds it."""
        try:
            self.acquire()
        except StateError:
            return False
        return True

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        key = self._key()
        with _MUTEX:
            entry = _HELD.get(key)
            if entry is None:
                return
            entry[1] -= 1
            if entry[1] == 0:
                del _HELD[key]
                self._give_back(entry[0])

    def _take(self) -> Any:
        raise NotImplementedError

    def _give_back(self, handle: Any) -> None:
        raise NotImplementedError


class ProjectLock(ProcessLock):
    """The lock file ``path``; :meth:`acquire` holds it until :meth:`release` (or exit)."""

    def __init__(self, path: Path) -> None:
        super().__init__(str(path))
        self.path = Path(path)

    def _give_back(self, fd: int) -> None:
        os.ftruncate(fd, 0)
        os.close(fd)  # closing the descriptor releases the flock

    def _take(self) -> int:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise StateError(
                f"cannot take the project lock {self.path}: {os_cause(error)}"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            written = os.pread(fd, 4096, 0).decode("utf-8", "replace").strip().splitlines()
            os.close(fd)
            raise StateError(
                f"{self.path.parent} is in use by another command "
                f"({written[0] if written else 'a process that just started'}); wait for it to end"
            ) from None
        since = datetime.now(UTC).isoformat(timespec="seconds")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()}: {command_line()} (since {since})\n".encode(), 0)
        return fd


class AdvisoryLock(ProcessLock):
    """The project lock of a campaign on PostgreSQL: a session-level advisory lock on the
    campaign's key, held on a connection of its own until the last holder in this process
    releases it (the server releases it when that connection ends, however the process ends).
    The holder is named from ``pg_stat_activity``, where every crowdprefs connection carries
    its command line."""

    def __init__(self, engine: Engine, location: object) -> None:
        super().__init__(str(location))
        self.engine = engine
        self.location = location

    @staticmethod
    def _keys() -> tuple[Any, Any]:
        return LOCK_NAMESPACE, campaign_key()

    def _take(self) -> Connection:
        conn = self.engine.connect()
        conn.execution_options(isolation_level="AUTOCOMMIT")
        if conn.execute(select(func.pg_try_advisory_lock(*self._keys()))).scalar():
            return conn
        holder = conn.execute(
            text(
                "SELECT a.application_name, a.pid FROM pg_locks l"
                " JOIN pg_stat_activity a ON a.pid = l.pid"
                " WHERE l.locktype = 'advisory' AND l.granted AND l.classid = :space"
                " AND l.objsubid = 2 AND l.pid != pg_backend_pid() LIMIT 1"
            ),
            {"space": self._keys()[0]},
        ).first()
        conn.close()
        who = f"pid {holder[1]}: {holder[0]}" if holder else "a process that just started"
        raise StateError(
            f"the campaign {self.location} is in use by another command ({who}); wait for it to end"
        )

    def _give_back(self, conn: Connection) -> None:
        try:
            conn.execute(select(func.pg_advisory_unlock(*self._keys())))
        finally:
            conn.close()
