"""The built wheel carries every package and the HIT templates (package data)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_holds_packages_and_templates(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            "-q",
        ],
        check=True,
        timeout=300,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("crowdprefs-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = {
        p.relative_to(ROOT).as_posix()
        for folder in ("crowdprefs", "audio_prep", "hit_templates")
        for p in (ROOT / folder).rglob("*")
        if p.suffix in {".py", ".html", ".css", ".js"} and "__pycache__" not in p.parts
    }
    assert sources and sources <= names, sorted(sources - names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "crowdprefs = crowdprefs.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()
