"""Shared fixtures: the real MIREX 2011 AMS data beside the repository (skipped when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mirex2011-ams"


@pytest.fixture(scope="session")
def mirex2011() -> Path:
    """Folder holding ``runs.txt``, ``judgments.txt`` and ``metadata.txt``; skips when absent."""
    if not (SHARED_DATA / "runs.txt").exists():
        pytest.skip("../shared/data/mirex2011-ams is not present")
    return SHARED_DATA
