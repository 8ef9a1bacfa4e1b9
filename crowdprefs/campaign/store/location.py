"""Where a project's state lives: a SQLite file (the default) or a PostgreSQL database.

A database address never carries a password: it comes from the environment (``PGPASSWORD``) or
libpq's password and service files (``~/.pgpass``, ``PGSERVICEFILE``), so no project file,
log line or error message ever holds one.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from crowdprefs.errors import InputError

SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")
"""The schemes of a database address crowdprefs accepts (PostgreSQL through psycopg 3)."""

EXAMPLE = "postgresql://user@host:5432/database"

_ADDRESS = re.compile(r"postgres(ql)?(\+\w+)?:", re.IGNORECASE)
"""What starts a text meant as a database address, even a misspelt one (``postgres:/x``)."""

SECRETS = ("password", "sslpassword", "oauth_client_secret")
"""libpq options holding a secret, never written in an address."""

WHOLE_NUMBERS = (
    "connect_timeout",
    "keepalives",
    "keepalives_idle",
    "keepalives_interval",
    "keepalives_count",
    "tcp_user_timeout",
    "sslcompression",
    "sslsni",
    "gssdelegation",
)
"""libpq options whose value is a whole number (libpq itself reads only the leading digits)."""

CHOICES = {
    "sslmode": ("disable", "allow", "prefer", "require", "verify-ca", "verify-full"),
    "sslcertmode": ("disable", "allow", "require"),
    "sslnegotiation": ("postgres", "direct"),
    "gssencmode": ("disable", "prefer", "require"),
    "channel_binding": ("disable", "prefer", "require"),
    "target_session_attrs": (
        "any",
        "read-write",
        "read-only",
        "primary",
        "standby",
        "prefer-standby",
    ),
    "load_balance_hosts": ("disable", "random"),
}
"""libpq options with a fixed set of values."""


def is_address(text: str) -> bool:
    """Whether ``text`` is meant as a database address rather than a file's path."""
    return "://" in text or _ADDRESS.match(text) is not None


def database_url(text: str) -> URL:
    """A PostgreSQL address ``postgresql://user@host:port/database[?options]`` checked whole
    (scheme, port, database, every option libpq would read, and no password anywhere) and set
    to the psycopg 3 driver; :class:`InputError` naming what is wrong otherwise."""
    try:
        url = make_url(text.strip())
    except ArgumentError:
        raise InputError(f"the database address {text!r} is not a URL like {EXAMPLE}") from None
    except ValueError:  # sqlalchemy's int() of the port
        raise InputError(
            f"the database address {text!r} has a port that is not a number from 1 to 65535"
        ) from None
    if url.drivername not in SCHEMES:
        raise InputError(
            f"the database address must start with postgresql://, got {url.drivername}://"
        )
    if url.password is not None or any(key in url.query for key in SECRETS):
        raise InputError(
            "the database address must not hold a password: set PGPASSWORD in the environment "
            "or use a password file (~/.pgpass) or service file instead"
        )
    if url.port is not None and not 0 < url.port < 65536:
        raise InputError(f"the database address's port must be from 1 to 65535, got {url.port}")
    if not url.database:
        raise InputError(f"the database address names no database: {EXAMPLE}")
    for key, value in url.query.items():
        problem = _option_problem(key, value)
        if problem is not None:
            raise InputError(f"the database address's option {key!r} {problem}")
    return url.set(drivername="postgresql+psycopg")


def _option_problem(key: str, value: str | tuple[str, ...]) -> str | None:
    """What is wrong with the address option ``key=value`` (``None``: nothing)."""
    if key not in _libpq_options():
        return (
            "is not a PostgreSQL connection option (see 'Parameter Key Words' in libpq's "
            "documentation)"
        )
    if not isinstance(value, str):
        return f"is given {len(value)} times"
    if key in WHOLE_NUMBERS and not (value.isascii() and value.isdigit()):
        return f"must be a whole number, got {value!r}"
    if key == "port" and not all(
        p.isascii() and p.isdigit() and 0 < int(p) < 65536 for p in value.split(",")
    ):
        return f"must be ports from 1 to 65535 separated by commas, got {value!r}"
    if key in CHOICES and value not in CHOICES[key]:
        return f"must be one of {', '.join(CHOICES[key])}, got {value!r}"
    return None


@functools.cache
def _libpq_options() -> frozenset[str]:
    """The connection options of the libpq psycopg runs on."""
    from psycopg import pq

    return frozenset(option.keyword.decode() for option in pq.Conninfo.get_defaults())


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
        if isinstance(value, str) and is_address(value):
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
