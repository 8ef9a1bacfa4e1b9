"""The command line as users start it: ``python -m crowdprefs`` (what the installed
``crowdprefs`` script runs) in a fresh process, for the version, every help page and the demo."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import typer.main

import crowdprefs
from crowdprefs.cli.app import app
from crowdprefs.io import read_lists

ROOT = Path(__file__).resolve().parents[2]


def crowdprefs_script(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    return subprocess.run(
        [sys.executable, "-m", "crowdprefs", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=300,
    )


def command_names() -> list[str]:
    names = []

    def walk(group, prefix: str) -> None:
        for name, command in group.commands.items():
            names.append(prefix + name)
            if hasattr(command, "commands"):
                walk(command, f"{prefix}{name} ")

    walk(typer.main.get_command(app), "")
    return names


def test_version():
    done = crowdprefs_script("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"crowdprefs {crowdprefs.__version__}"


def test_help_lists_every_command():
    done = crowdprefs_script("--help")
    assert done.returncode == 0, done.stderr
    assert "Usage: crowdprefs [OPTIONS] COMMAND" in done.stdout
    top = [name for name in command_names() if " " not in name]
    assert all(f" {name} " in done.stdout for name in top)
    assert max(map(len, done.stdout.splitlines())) <= 80


@pytest.mark.parametrize("name", command_names())
def test_every_commands_help(name):
    done = crowdprefs_script(*name.split(), "--help")
    assert done.returncode == 0, done.stderr
    assert f"Usage: crowdprefs {name}" in done.stdout
    assert done.stderr == ""


def test_demo_without_audio_runs_every_stage(tmp_path):
    done = crowdprefs_script("demo", "demo", "--no-audio", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for stage in ("1. collection", "3. campaign", "4. HIT previews", "5. worker audit"):
        assert stage in done.stdout
    assert "6. evaluation" in done.stdout and "demo finished" in done.stdout
    assert "2. audio clips" not in done.stdout and "Traceback" not in done.stderr
    assert len(read_lists(tmp_path / "demo" / "lists.qrel")) == 118
    assert (tmp_path / "demo" / "audit.html").stat().st_size > 1000
