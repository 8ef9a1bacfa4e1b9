"""Malformed engines, addresses and counts (issue 42, classes 1 and 2), through the installed
console script: every case ends in a non-zero exit, exactly one ``error:`` line naming the
problem, no traceback, within its time limit, and nothing written.

* A Dask scheduler that cannot be used (an HTTP or other server on its port, a port that accepts
  and never answers, a refused port, an address Dask cannot read) ends in one line within
  :data:`crowdprefs.parallel.CONNECT_TIMEOUT` seconds, with no half-built client left behind.
* A database address (``init --database``, ``migrate --to``, ``[store] url``) is checked whole
  before anything is written.
* A state missing a table or a column is refused on both engines before a command runs.
* Every whole-number option, and ``CROWDPREFS_JOBS``, has a ceiling named in its message.

The servers these tests start listen on 127.0.0.1 only and stop with the module.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import typer
from console_script import crowdprefs
from demo_inputs import demo_inputs

from crowdprefs.cli import app
from crowdprefs.parallel import CONNECT_TIMEOUT, JOBS_VARIABLE, SCHEDULER_VARIABLE, max_jobs

STARTUP = 60
"""Seconds a refused command may take on top of its own limit: starting Python and reading the
inputs, on a busy machine (a hang, the failure these tests catch, never ends)."""


def refused(run, says: str) -> str:
    """The one error line of a refused command, checked to name ``says``."""
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert run.returncode not in (0, None), run.stdout + run.stderr
    assert "Traceback" not in run.stderr and "Exception ignored" not in run.stderr, run.stderr
    assert len(lines) == 1 and lines[0].startswith("error:"), run.stderr
    assert says.lower() in lines[0].lower(), lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("inputs")
    demo_inputs(root, ["s1", "s2"])
    return root


# --- schedulers ---------------------------------------------------------------------------


class Listener:
    """A TCP server on 127.0.0.1 that answers each connection with ``reply`` (``None``: accepts
    and never answers), in a daemon thread, until :meth:`stop`."""

    def __init__(self, reply: bytes | None) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.socket.settimeout(0.2)
        self.reply, self.open, self.connections = reply, True, []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def address(self) -> str:
        return f"tcp://127.0.0.1:{self.socket.getsockname()[1]}"

    def _serve(self) -> None:
        while self.open:
            try:
                connection, _ = self.socket.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections.append(connection)
            if self.reply is not None:
                connection.sendall(self.reply)

    def stop(self) -> None:
        self.open = False
        self.thread.join(timeout=5)
        for connection in self.connections:
            connection.close()
        self.socket.close()


HTTP_REPLY = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\n\r\nBad Request" * 4


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    """The addresses of an HTTP server, a server answering bytes of no protocol, a port that
    accepts and never answers, and a port nothing listens on."""
    listeners = {
        "http": Listener(HTTP_REPLY),
        "garbage": Listener(bytes(range(256)) * 4),
        "silent": Listener(None),
    }
    with socket.create_server(("127.0.0.1", 0)) as probe:
        closed = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    yield {**{kind: each.address for kind, each in listeners.items()}, "refused": closed}
    for each in listeners.values():
        each.stop()


UNREACHABLE = {  # kind → what the line says
    "http": "is not a Dask scheduler",
    "garbage": "is not a Dask scheduler",
    "silent": f"no answer within {CONNECT_TIMEOUT} s",
    "refused": "cannot reach the Dask scheduler",
}


@pytest.mark.parametrize(
    "kind, how",
    [(kind, "option") for kind in UNREACHABLE] + [("http", "variable"), ("garbage", "variable")],
)  # the slow kinds once: the variable reaches the same connection
def test_a_scheduler_that_cannot_be_used_ends_in_one_line_within_the_limit(
    kind, how, servers, inputs, tmp_path
):
    """Dask read an HTTP answer as a 3 EiB message length (MemoryError), hung on a silent port,
    and a client that failed to start printed a 20 s TimeoutError traceback at exit."""
    address, out = servers[kind], tmp_path / "plan.csv"
    option = ["--scheduler", address] if how == "option" else []
    env = {SCHEDULER_VARIABLE: address} if how == "variable" else None
    started = time.monotonic()
    run = crowdprefs(
        "plan", "--candidates", inputs / "candidates.csv", "--campaigns", 2, *option, "-o", out,
        env=env,
    )  # fmt: skip
    took = time.monotonic() - started
    refused(run, UNREACHABLE[kind])
    assert address in run.stderr
    assert took < CONNECT_TIMEOUT + STARTUP, took
    assert not out.exists()


ABANDON = """
import sys
from distributed import Client
from crowdprefs.parallel import _abandon
client = Client.__new__(Client)
try:
    client.__init__(sys.argv[1], timeout=5, set_as_default=False)
except Exception:
    _abandon(client)
"""


def test_a_client_that_failed_to_start_is_closed_at_once(servers):
    """A client whose building failed (here: on a port that answers HTTP) waited 20 s at exit
    to close, then printed a TimeoutError traceback; closed as _connect closes it, it ends at
    once and silently."""
    started = time.monotonic()
    run = subprocess.run(
        [sys.executable, "-c", ABANDON, servers["http"]], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0 and not run.stderr.strip(), run.stderr
    assert time.monotonic() - started < STARTUP


STUDY_COMMANDS = {  # every command with --scheduler: the arguments before it
    "plan": ["plan"],
    "audit": ["audit"],
    "evaluate": ["evaluate"],
    "crowd-model fit": ["crowd-model", "fit"],
    "stats power": ["stats", "power"],
    "stats stability": ["stats", "stability"],
    "mtc transfer": ["mtc", "transfer"],
}
BAD_SCHEDULERS = {  # address → what the line says
    "http://127.0.0.1:8786": "unknown address scheme 'http'",
    "::::": "ipv6 needs brackets",
    "garbage": "missing port number",
    "tcp://127.0.0.1:99999": "port 99999 is not in 1–65535",
}


def test_every_study_command_takes_the_scheduler_option():
    assert sorted(STUDY_COMMANDS) == sorted(
        name for name, option in every_option() if option.name == "scheduler"
    )


@pytest.mark.parametrize("address", list(BAD_SCHEDULERS))
@pytest.mark.parametrize("command", list(STUDY_COMMANDS))
def test_an_address_dask_cannot_read_is_refused_before_the_command_starts(command, address):
    """``--scheduler`` is read as Dask reads it, by every study command, before any input."""
    line = refused(
        crowdprefs(*STUDY_COMMANDS[command], "--scheduler", address), BAD_SCHEDULERS[address]
    )
    assert "--scheduler" in line


@pytest.mark.parametrize("address", list(BAD_SCHEDULERS))
def test_the_scheduler_variable_is_read_as_the_option_is(address, inputs, tmp_path):
    run = crowdprefs(
        "plan", "--candidates", inputs / "candidates.csv", "-o", tmp_path / "p.csv",
        env={SCHEDULER_VARIABLE: address},
    )  # fmt: skip
    refused(run, BAD_SCHEDULERS[address])
    assert not (tmp_path / "p.csv").exists()


# --- database addresses -------------------------------------------------------------------

BAD_ADDRESSES = {  # address → what the line says
    "postgresql://u@127.0.0.1:abc/x": "port that is not a number",
    "postgresql://u@127.0.0.1:70000/x": "port must be from 1 to 65535",
    "postgresql://u@127.0.0.1/x?bogus_option=1": "'bogus_option' is not a PostgreSQL",
    "postgresql://u@127.0.0.1/x?connect_timeout=abc": "'connect_timeout' must be a whole number",
    "postgresql://u@127.0.0.1/x?sslmode=sometimes": "'sslmode' must be one of",
    "postgresql://u@127.0.0.1/x?port=5432,x": "'port' must be ports",
    "postgresql://u@127.0.0.1/x?connect_timeout=1&connect_timeout=2": "given 2 times",
    "postgresql://u@127.0.0.1/x?password=secret": "must not hold a password",
    "postgresql://u@127.0.0.1/": "names no database",
    "postgres:/x": "is not a url",
    "mysql://u@127.0.0.1/x": "must start with postgresql://",
}


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.fixture
def project(inputs, tmp_path) -> Path:
    copy = tmp_path / "project"
    shutil.copytree(inputs / "project", copy, ignore=shutil.ignore_patterns("*.lock"))
    return copy


IN_SETTINGS = [  # the same check: a few, to keep the suite fast
    "postgresql://u@127.0.0.1:abc/x",
    "postgresql://u@127.0.0.1/x?connect_timeout=abc",
    "postgresql://u@127.0.0.1/x?bogus_option=1",
    "postgres:/x",
]


@pytest.mark.parametrize(
    "where, address",
    [(where, address) for where in ("init --database", "migrate --to") for address in BAD_ADDRESSES]
    + [("[store] url", address) for address in IN_SETTINGS],
)
def test_a_database_address_is_checked_whole_before_anything_is_written(
    where, address, inputs, project, tmp_path
):
    """A port not a number was a ValueError traceback, an unknown option psycopg's, a bad
    connect_timeout was written into [store] url, and postgres:/x became a SQLite file."""
    before = _files(project)
    if where == "init --database":
        new = tmp_path / "new"
        run = crowdprefs(
            "init", new, "--candidates", inputs / "candidates.csv", "--database", address
        )
        assert not new.exists() and not any(tmp_path.glob(".new.init-*"))
    elif where == "migrate --to":
        run = crowdprefs("migrate", project, "--to", address, cwd=tmp_path)
        assert sorted(p.name for p in tmp_path.iterdir()) == ["project"]
    else:
        config = project / "crowdprefs.toml"
        config.write_text(config.read_text() + f'\n[store]\nurl = "{address}"\n')
        before = _files(project)
        run = crowdprefs("status", project)
    says = BAD_ADDRESSES[address]
    if where == "[store] url" and not address.startswith(("postgresql://", "postgres://")):
        says = "[store] url must be a text starting with postgresql://"  # the settings' check
    line = refused(run, says)
    assert "secret" not in line
    assert _files(project) == before


def test_migrate_takes_an_address_or_sqlite_only(project):
    refused(crowdprefs("migrate", project, "--to", "elsewhere.sqlite"), "is not a URL")
    assert not (project / "elsewhere.sqlite").exists()


# --- the state's schema -------------------------------------------------------------------

DAMAGE = {  # name → (SQL, what the line says)
    "a table dropped": ("DROP TABLE answers", "missing answers"),
    "a column dropped": ("ALTER TABLE answers DROP COLUMN comment", "missing answers.comment"),
}


def _sql(project: Path, url: str | None, sql: str) -> object:
    """Run ``sql`` on the project's state directly (not through the store); its first value."""
    from sqlalchemy import create_engine, text

    from crowdprefs.campaign.store.location import database_url

    engine = create_engine(
        f"sqlite:///{project / 'state.sqlite'}" if url is None else database_url(url)
    )
    try:
        with engine.begin() as connection:
            result = connection.execute(text(sql))
            return result.scalar() if result.returns_rows else None
    finally:
        engine.dispose()


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_state_missing_part_of_its_schema_is_refused_on_every_engine(
    damage, engine, inputs, tmp_path
):
    """With the answers table dropped, next on PostgreSQL built batch 1 and exited 0."""
    project = tmp_path / "p"
    database = ["--database", engine] if engine else []
    assert (
        crowdprefs("init", project, "--candidates", inputs / "candidates.csv", *database).returncode
        == 0
    )
    sql, says = DAMAGE[damage]
    _sql(project, engine, sql + (" CASCADE" if engine else ""))  # PostgreSQL: its references
    for command in ("next", "status"):
        refused(crowdprefs(command, project), f"the state is damaged ({says})")
    assert _sql(project, engine, "SELECT count(*) FROM batches") == 0


# --- counts -------------------------------------------------------------------------------


def every_option() -> Iterator[tuple[str, typer.core.TyperOption]]:
    """``(command, option)`` for every option of every command."""

    def walk(command, path):
        if hasattr(command, "commands"):
            for name, sub in command.commands.items():
                yield from walk(sub, [*path, name])
            return
        for param in command.params:
            yield " ".join(path), param

    yield from walk(typer.main.get_command(app), [])


def _whole_number_options() -> list[tuple[str, typer.core.TyperOption]]:
    return [
        (command, option)
        for command, option in every_option()
        if option.type_descriptor is not None
        and option.type_descriptor.annotation in (int, int | None)
    ]


COUNTS = _whole_number_options()


def ceiling(option) -> tuple[int, str, Callable]:
    """The option's ceiling, as its message writes it (its check's refusal of 10³⁰), and the
    check."""
    check = option.type_descriptor.parameter_info.callback  # the option's own, not typer's
    assert check is not None, f"{option.opts} takes any whole number"
    with pytest.raises(typer.BadParameter) as refusal:
        check(10**30)
    message = str(refusal.value)
    found = re.search(r"in \[-?\d+, (\d+)\]", message)
    assert found, message
    return int(found.group(1)), found.group(0), check


def test_there_are_whole_number_options_to_check():
    names = {f"{command} {option.opts[0]}" for command, option in COUNTS}
    assert {"plan --jobs", "plan --campaigns", "invite --judges", "audit --resamples"} <= names
    assert {"mtc transfer --splits", "serve --workers", "stats power --samples"} <= names
    assert len(COUNTS) >= 60


@pytest.mark.parametrize("command, option", COUNTS, ids=[f"{c} {o.opts[0]}" for c, o in COUNTS])
def test_every_count_has_a_ceiling_named_in_its_message(command, option):
    """plan --jobs 1000000 forked until the system refused, invite --judges held the lock for
    minutes: every whole-number option refuses one more than its ceiling, in one line naming
    it, before the command does anything (the option comes first: nothing else is read)."""
    high, written, check = ceiling(option)
    assert check(high) == high  # the ceiling itself is accepted
    line = refused(crowdprefs(*command.split(), option.opts[0], high + 1), written)
    assert option.opts[0] in line and str(high + 1) in line


@pytest.mark.parametrize("value", ["³", "٣", "0", "-1", "many", "1e3", str(10**6)])
def test_the_jobs_variable_is_a_whole_number_up_to_its_ceiling(value, inputs, tmp_path):
    """'³' passed str.isdigit() and failed in int()."""
    run = crowdprefs(
        "plan", "--candidates", inputs / "candidates.csv", "-o", tmp_path / "p.csv",
        env={JOBS_VARIABLE: value},
    )  # fmt: skip
    refused(run, f"{JOBS_VARIABLE} must be a whole number in [1, {max_jobs()}]")
    assert not (tmp_path / "p.csv").exists()
