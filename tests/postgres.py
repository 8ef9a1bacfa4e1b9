"""A real PostgreSQL server for the tests: the one ``CROWDPREFS_TEST_POSTGRES`` names, or else a
throwaway cluster started here from Debian's ``postgresql`` package.

``CROWDPREFS_TEST_POSTGRES`` is an address of a role that may create databases (its password,
if any, in ``PGPASSWORD``: never in the address); ``.ci/run`` starts Debian's cluster and sets
both. Without it, :func:`server` runs ``initdb`` into a temporary folder (as the ``postgres``
user when the tests run as root, as PostgreSQL refuses root) and serves it on a Unix socket in
that folder only, with no TCP port. Each test gets a database of its own
(:func:`fresh_database`), dropped afterwards.

Run as a script, ``python tests/postgres.py start DIR`` starts such a cluster in ``DIR`` and
prints its address (with ``PGPASSWORD`` set, on a TCP port of 127.0.0.1 with that password), and
``stop DIR`` stops it; ``.ci/run`` does so.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

ENV = "CROWDPREFS_TEST_POSTGRES"


def _bin(name: str) -> str | None:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found[-1] if found else shutil.which(name)


def _as_owner(command: list[str]) -> list[str]:
    """``command`` run as the ``postgres`` user when this process is root."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *command]
    return command


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(folder: Path, *, password: str | None = None) -> str:
    """Start a throwaway cluster in ``folder``; its address: a Unix socket in ``folder``, or
    with ``password`` a TCP port on 127.0.0.1 where the ``postgres`` role signs in with it
    (as a deployment does: the password from ``PGPASSWORD``, never in the address)."""
    initdb, pg_ctl = _bin("initdb"), _bin("pg_ctl")
    if initdb is None or pg_ctl is None:
        raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "data"
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
        folder.chmod(0o700)
    auth = ["--auth=trust"]
    if password is not None:
        secret = folder / "pwfile"
        secret.write_text(password + "\n")
        if os.geteuid() == 0:
            shutil.chown(secret, "postgres", "postgres")
        auth = ["--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={secret}"]
    subprocess.run(
        _as_owner([initdb, "-D", str(data), "-U", "postgres", *auth, "-E", "UTF8"]),
        check=True,
        capture_output=True,
    )
    (folder / "pwfile").unlink(missing_ok=True)
    port = _free_port()
    listen = (
        f"-c listen_addresses=127.0.0.1 -p {port}"
        if password is not None
        else ("-c listen_addresses=''")
    )
    options = f"-k {folder} {listen} -c fsync=off -c max_connections=300"
    subprocess.run(
        _as_owner(
            [pg_ctl, "-D", str(data), "-o", options, "-l", str(folder / "log"), "-w", "start"]
        ),
        check=True,
        capture_output=True,
    )
    if password is not None:
        return f"postgresql://postgres@127.0.0.1:{port}/postgres"
    return f"postgresql://postgres@/postgres?host={folder}"


def stop(folder: Path) -> None:
    pg_ctl = _bin("pg_ctl")
    if pg_ctl and (folder / "data").exists():
        subprocess.run(
            _as_owner([pg_ctl, "-D", str(folder / "data"), "-m", "immediate", "stop"]),
            capture_output=True,
        )


@contextlib.contextmanager
def server() -> Iterator[str]:
    """The address of a PostgreSQL server where databases may be created."""
    if os.environ.get(ENV):
        yield os.environ[ENV]
        return
    folder = Path(tempfile.mkdtemp(prefix="crowdprefs-pg-"))
    try:
        yield start(folder)
    finally:
        stop(folder)
        shutil.rmtree(folder, ignore_errors=True)


def _admin(address: str):
    import psycopg

    from crowdprefs.campaign.store.location import database_url

    url = database_url(address)
    return psycopg.connect(
        url.set(drivername="postgresql").render_as_string(hide_password=False), autocommit=True
    )


@contextlib.contextmanager
def fresh_database(address: str) -> Iterator[str]:
    """A new, empty database on the server at ``address``, dropped afterwards."""
    from crowdprefs.campaign.store.location import database_url

    name = f"crowdprefs_test_{uuid.uuid4().hex[:12]}"
    with _admin(address) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield database_url(address).set(database=name, drivername="postgresql").render_as_string()
    finally:
        with _admin(address) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


if __name__ == "__main__":
    verb, where = sys.argv[1], Path(sys.argv[2])
    if verb == "start":  # with PGPASSWORD set: TCP on 127.0.0.1, signing in with it
        print(start(where, password=os.environ.get("PGPASSWORD")))
    else:
        stop(where)
