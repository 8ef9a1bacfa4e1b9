"""Where a project's state lives: a SQLite file (the default) or a PostgreSQL database.

A database address never carries a password: it comes from the environment (``PGPASSWORD``) or
libpq's password and service files (``~/.pgpass``, ``PGSERVICEFILE``), so no project file,
log line or error message ever holds one.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from crowdprefs.errors import InputError

SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")
"""The schemes of a database address crowdprefs accepts (PostgreSQL through psycopg 3)."""


def database_url(text: str) -> URL:
    """A PostgreSQL address ``postgresql://user@host:port/database[?options]`` checked and
    set to the psycopg 3 driver; :class:`InputError` naming what is wrong otherwise."""
    try:
        url = make_url(text.strip())
    except ArgumentError:
        raise InputError(
            f"the database address {text!r} is not a URL like postgresql://user@host/database"
        ) from None
    if url.drivername not in SCHEMES:
        raise InputError(
            f"the database address must start with postgresql://, got {url.drivername}://"
        )
    if url.password is not None:
        raise InputError(
            "the database address must not hold a password: set PGPASSWORD in the environment "
            "or use a password file (~/.pgpass) or service file instead"
        )
    if not url.database:
        raise InputError("the database address names no database: postgresql://user@host/DATABASE")
    return url.set(drivername="postgresql+psycopg")


@dataclass(frozen=True)
class Location:
    """A SQLite file (``path``) or a PostgreSQL database (``url``, without a password)."""

    path: Path | None = None
    url: URL | None = None

    @classmethod
    def of(cls, value: Location | Path | str) -> Location:
        """A location from a path, an address (``postgresql://…``) or a location."""
        if isinstance(value, Location):
            return value
        if isinstance(value, str) and "://" in value:
            return cls(url=database_url(value))
        return cls(path=Path(value))

    @property
    def is_file(self) -> bool:
        return self.path is not None

    def __str__(self) -> str:
        if self.path is not None:
            return str(self.path)
        assert self.url is not None
        return self.url.set(drivername="postgresql").render_as_string(hide_password=True)
