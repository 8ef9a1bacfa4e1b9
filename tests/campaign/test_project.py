"""Project creation: validation of the candidates CSV, nothing written on error, migrations."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import imageio_ffmpeg
import pytest

from crowdprefs.campaign.project import Project, init_project, read_candidates
from crowdprefs.campaign.store import SCHEMA_VERSION, Store
from crowdprefs.campaign.store.schema import LEGACY_SQLITE, MIGRATIONS
from crowdprefs.errors import InputError, StateError


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", "from crowdprefs.cli import main; main()", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


GOOD = "query,document,audio\nq1,a,clips/a.mp3\nq1,b,https://example.org/b.mp3\nq2,c,\nq2,d,\n"


@pytest.fixture
def good(tmp_path) -> Path:
    """The GOOD candidates CSV beside its local clip, a real MP3 (init probes every clip)."""
    (tmp_path / "clips").mkdir()
    tone = ["-f", "lavfi", "-i", "sine=d=0.5", str(tmp_path / "clips" / "a.mp3")]
    subprocess.run([imageio_ffmpeg.get_ffmpeg_exe(), "-v", "error", *tone], check=True)
    return write(tmp_path / "c.csv", GOOD)


def test_read_candidates_resolves_audio_relative_to_the_csv(tmp_path):
    frame = read_candidates(write(tmp_path / "c.csv", GOOD))
    assert frame["query"].tolist() == ["q1", "q1", "q2", "q2"]
    assert frame.loc[0, "audio"] == str((tmp_path / "clips/a.mp3").resolve())
    assert frame.loc[1, "audio"] == "https://example.org/b.mp3"
    assert frame.loc[2, "audio"] is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("query,doc\nq1,a\n", "missing column"),
        ("query,document\nq1,a\nq1,a\nq1,b\n", r"c.csv:3: duplicate row for query 'q1'"),
        ("query,document\nq1,a\nq1,b\nq2,c\n", "query 'q2' has 1 candidate"),
        ("query,document\nq1,a\n,b\n", r"c.csv:3: empty query or document"),
        ("", "not a valid CSV"),
    ],
)
def test_bad_candidates_are_one_clear_error(tmp_path, text, message):
    with pytest.raises(InputError, match=message):
        read_candidates(write(tmp_path / "c.csv", text))


def test_unreadable_and_missing_files(tmp_path):
    with pytest.raises(InputError, match="not found"):
        read_candidates(tmp_path / "nope.csv")
    binary = tmp_path / "c.csv"
    binary.write_bytes(b"\xff\xfe\x00\x81garbage")
    with pytest.raises(InputError):
        read_candidates(binary)


def test_init_writes_config_and_state(tmp_path, good):
    with init_project(tmp_path / "p", good, seed=7) as project:
        assert project.seed == 7
        assert len(project.store.candidates()) == 4
        assert project.store.version == SCHEMA_VERSION == len(LEGACY_SQLITE) + len(MIGRATIONS)
    assert sorted(p.name for p in (tmp_path / "p").iterdir()) == [
        "crowdprefs.toml",
        "state.lock",  # the project lock's file (empty while no process holds the lock)
        "state.sqlite",
    ]
    assert (tmp_path / "p" / "state.lock").read_text() == ""


def test_init_never_overwrites_and_leaves_nothing_on_error(tmp_path, good):
    init_project(tmp_path / "p", good).close()
    before = (tmp_path / "p" / "state.sqlite").read_bytes()
    with pytest.raises(StateError, match="already holds a crowdprefs project"):
        init_project(tmp_path / "p", good)
    assert (tmp_path / "p" / "state.sqlite").read_bytes() == before
    bad = write(tmp_path / "bad.csv", "query,document\nq1,a\n")
    with pytest.raises(InputError):
        init_project(tmp_path / "q", bad)
    assert not (tmp_path / "q").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.csv", "c.csv", "clips", "p"]


def test_cli_errors_are_one_line_with_non_zero_exit(tmp_path):
    write(tmp_path / "c.csv", "query,document\nq1,a\nq1,a\n")
    result = cli("init", "proj", "--candidates", "c.csv", cwd=tmp_path)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "duplicate row" in lines[0]
    assert not (tmp_path / "proj").exists()
    result = cli("init", "proj", "--candidates", "c.csv", "--alpha", "lots", cwd=tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    result = cli("status", "missing-project", cwd=tmp_path)
    assert result.returncode != 0 and "not a crowdprefs project" in result.stderr


def test_seed_cannot_change_after_init(tmp_path, good):
    root = tmp_path / "p"
    init_project(root, good, seed=3).close()
    config = root / "crowdprefs.toml"
    config.write_text(config.read_text().replace("seed = 3", "seed = 4"))
    with pytest.raises(StateError, match="seed 4 differs"):
        Project(root)


def test_migrations_apply_in_order_and_refuse_newer_files(tmp_path):
    path = tmp_path / "state.sqlite"
    Store(path, create=True).close()
    conn = sqlite3.connect(path)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"meta", "candidates", "batches", "pairs", "hits", "answers"} <= tables
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StateError, match="newer than this crowdprefs"):
        Store(path)
