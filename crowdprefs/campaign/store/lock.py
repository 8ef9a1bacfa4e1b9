"""One writer per project: an exclusive OS lock (``fcntl.flock``) on a file beside the state.

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

from crowdprefs.errors import StateError

_HELD: dict[tuple[int, str], list[int]] = {}
"""``(process id, lock path) → [file descriptor, holders]`` of the locks this process holds
(keyed by process id too, so a forked child never mistakes its parent's lock for its own)."""
_MUTEX = threading.Lock()


def command_line() -> str:
    """This process's command as a user typed it (``crowdprefs run p``), for the lock file."""
    program = Path(sys.argv[0]).name if sys.argv and sys.argv[0] not in ("", "-c") else "python"
    return shlex.join([program, *sys.argv[1:]])


class ProjectLock:
    """The lock file ``path``; :meth:`acquire` holds it until :meth:`release` (or exit)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.held = False

    def _key(self) -> tuple[int, str]:
        return os.getpid(), str(self.path)

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
                os.ftruncate(entry[0], 0)
                os.close(entry[0])  # closing the descriptor releases the flock

    def _take(self) -> int:
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise StateError(
                f"cannot take the project lock {self.path}: {error.strerror}"
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
