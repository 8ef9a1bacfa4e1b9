"""The installed console script, run as a user runs it (for tests of the command line)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def crowdprefs(
    *args: object, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``crowdprefs ARGS…`` in a child process, 200 columns wide (``env`` adds variables);
    skips when the console script is not installed."""
    script = shutil.which("crowdprefs")
    if script is None:
        pytest.skip("the console script 'crowdprefs' is not on PATH (pip install -e .)")
    return subprocess.run(
        [script, *map(str, args)],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )
