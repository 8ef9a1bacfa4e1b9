"""The installed console script, run as a user runs it (for tests of the command line).

The script is the one pip installed beside the interpreter running the tests
(``Path(sys.executable).parent / "crowdprefs"``), not whatever ``crowdprefs`` comes first on
``PATH``: the tests check this environment's program. A missing script fails the test that needs
it instead of skipping it, so a run without the program cannot pass while checking nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).parent / "crowdprefs"
"""Where pip installs the console script of the environment running the tests."""


def script() -> str:
    """The path of this environment's console script; fails the calling test when it is
    missing (a test of the program must not pass without the program)."""
    if not SCRIPT.is_file():
        pytest.fail(f"the console script {SCRIPT} is not installed (pip install -e .)")
    return str(SCRIPT)


def crowdprefs(
    *args: object, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``crowdprefs ARGS…`` in a child process, 200 columns wide (``env`` adds variables)."""
    return subprocess.run(
        [script(), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )
