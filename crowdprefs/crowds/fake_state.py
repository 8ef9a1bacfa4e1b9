"""The state file of the local platform fakes (MTurk's, Prolific's): one SQLite file that the
fake's server threads and the commands share, opened the same way for every fake."""

from __future__ import annotations

import sqlite3
from pathlib import Path


def open_state(path: Path, schema: str) -> sqlite3.Connection:
    """``path`` opened (and made, with ``schema``'s tables) for several threads: autocommit,
    write-ahead log, waiting up to a minute for another writer."""
    conn = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=60000")
    conn.executescript(schema)
    return conn
