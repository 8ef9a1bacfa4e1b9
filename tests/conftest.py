"""Shared fixtures: the real MIREX 2011 AMS data and the real 2010 MTurk campaign beside the
repository (skipped when absent)."""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

# rich fixes a console's width from COLUMNS when the console is made: make the CLI's consoles
# now, with COLUMNS unset, so that they follow the COLUMNS each test sets.
os.environ.pop("COLUMNS", None)
import crowdprefs.cli.console  # noqa: E402,F401

# The suite runs one test process per core: studies run in the test's own process unless a test
# asks for jobs (tests/test_parallel.py compares 1, 2 and 4 jobs, and the default, every core).
os.environ.setdefault("CROWDPREFS_JOBS", "1")
# Outputs are compared line for line: no plain progress lines, even when a loaded machine makes
# an operation last longer than their interval (tests/test_parallel.py tests them).
os.environ.setdefault("CROWDPREFS_PROGRESS_SECONDS", "0")
# status keeps its reports in the user's cache folder: the suite's go to a folder of its own.
os.environ["XDG_CACHE_HOME"] = tempfile.mkdtemp(prefix="crowdprefs-test-cache-")
atexit.register(shutil.rmtree, os.environ["XDG_CACHE_HOME"], ignore_errors=True)

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mirex2011-ams"


@pytest.fixture(scope="session")
def mirex2011() -> Path:
    """Folder holding ``runs.txt``, ``judgments.txt`` and ``metadata.txt``; skips when absent."""
    if not (SHARED_DATA / "runs.txt").exists():
        pytest.skip("../shared/data/mirex2011-ams is not present")
    return SHARED_DATA


SIGIR2010 = SHARED_DATA.parent / "sigir2010"


@pytest.fixture(scope="session")
def sigir2010() -> Path:
    """Folder holding the real 2010 MTurk campaign (``judgments.csv``, ``MTurk.qrel``) beside
    the repository, as CI's clean clone has it; skips when absent."""
    if not (SIGIR2010 / "judgments.csv").exists():
        pytest.skip("../shared/data/sigir2010 (the real 2010 campaign) is not present")
    return SIGIR2010


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--autoplay-policy=no-user-gesture-required",
    "--mute-audio",
]


def pytest_collection_modifyitems(config, items):
    """Tests marked ``browser`` are skipped where Debian's Chromium is not installed."""
    if CHROMIUM.exists():
        return
    skip = pytest.mark.skip(reason="needs Debian's /usr/bin/chromium (./setup.sh installs it)")
    for item in items:
        if "browser" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium driven by Playwright (never a browser downloaded by a test tool)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def cli(monkeypatch, capsys):
    """Run ``crowdprefs ARGS...`` in this process on a terminal ``columns`` wide: returns
    (exit code, stdout, stderr)."""
    from crowdprefs.cli import main

    def run(*args, columns: int = 200):
        monkeypatch.setattr("sys.argv", ["crowdprefs", *map(str, args)])
        monkeypatch.setenv("COLUMNS", str(columns))
        with pytest.raises(SystemExit) as stop:
            main()
        out, err = capsys.readouterr()
        return stop.value.code, out, err

    return run


@pytest.fixture(scope="session")
def postgres_server():
    """The address of a real PostgreSQL server (``tests/postgres.py``); skips, saying why, only
    when none can be started here."""
    import postgres

    try:
        with postgres.server() as address:
            yield address
    except (RuntimeError, OSError, subprocess.CalledProcessError) as error:
        detail = getattr(error, "stderr", b"") or b""
        pytest.skip(f"no PostgreSQL server could be started: {error} {detail.decode()[-200:]}")


@pytest.fixture
def postgres_url(postgres_server):
    """A new, empty PostgreSQL database for one test (dropped afterwards)."""
    import postgres

    with postgres.fresh_database(postgres_server) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def engine(request):
    """Each engine the store runs on: ``None`` for the default SQLite file, else the address of
    a new PostgreSQL database. Tests that take it run once per engine."""
    if request.param == "sqlite":
        return None
    return request.getfixturevalue("postgres_url")


@pytest.fixture(params=["sqlite", "postgresql"])
def databases(request):
    """Each engine, for tests that make several projects: a function giving each project's
    database (``None``, a SQLite file in the project; else a new PostgreSQL database)."""
    if request.param == "sqlite":
        yield lambda: None
        return
    import postgres

    server = request.getfixturevalue("postgres_server")
    with contextlib.ExitStack() as made:
        yield lambda: made.enter_context(postgres.fresh_database(server))
