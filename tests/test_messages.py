"""Messages name the user's thing (issue 42, item 7), by class, through the console script.

- values are shown as the user wrote them: a numpy scalar as its plain value, an overlong value
  cut to its start and end with its length (:func:`crowdprefs.errors.readable`, applied to every
  error line);
- the one text reader (:func:`crowdprefs.files.read_text`) reads UTF-16 and a UTF-8 byte-order
  mark in every file it reads, names what a binary file is, and refuses a named pipe before
  opening it (it would wait for a writer for ever);
- settings that name a file must name one; ``prior chroma --seconds`` is finite and bounded;
- a full disk is "no space left on device", naming the path, for a written file and for the
  project's state.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tomli_w
from console_script import crowdprefs, script
from demo_inputs import demo_inputs

from crowdprefs.campaign.settings import CONFIG_NAME
from crowdprefs.errors import InputError, os_cause, readable, shown


def one_line(done: subprocess.CompletedProcess, says: str) -> str:
    """The one ``error:`` line of a refused command, which says ``says``."""
    assert done.returncode not in (0, None), f"accepted: {done.stdout}{done.stderr}"
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert says in lines[0], lines[0]
    return lines[0]


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Path:
    """The demo project's inputs, and a prior file of its candidates."""
    made = demo_inputs(tmp_path_factory.mktemp("messages"), ("sysA", "sysB"))
    candidates = pd.read_csv(made.root / "candidates.csv")
    prior = candidates[["query", "document"]].assign(score=np.arange(len(candidates)) % 7)
    prior.to_csv(made.root / "prior.csv", index=False)
    return made.root


# ------------------------------------------------------------------ values as the user wrote them


def test_numpy_scalars_read_as_plain_values_and_long_values_are_cut():
    assert readable(f"gain {np.float64(-3.0)!r}, level {np.int64(3)!r}") == "gain -3.0, level 3"
    assert readable(f"name {np.str_('a(b)')!r}") == "name 'a(b)'"
    long = readable("document " + "x" * 5_000_000 + " is unknown")
    assert len(long) < 200 and "…" in long and long.endswith("(5,000,000 characters) is unknown")
    spaced = readable("document " + "x " * 2_500_000 + " is unknown")
    assert len(spaced) < 1600 and spaced.endswith(" is unknown")
    assert readable(long) == long  # a message made twice (a pickled error) stays the same
    assert str(InputError(f"gain {np.float64(2.5)!r}")) == "gain 2.5"
    assert shown(np.float64(-3.0)) == "-3.0" and shown("3") == "'3'"
    assert len(shown("y" * 500)) < 110
    assert os_cause(OSError(28, "No space left on device")).startswith("no space left on device")
    assert "Errno" not in os_cause(OSError(113, "No route to host"))


@pytest.mark.parametrize(
    "command, says",
    [
        ("evaluate", "gain -3.0 of query 'q1', document 'd1' is not a number >= 0"),
        ("mtc estimate", "gain -3.0 of (q1, d1) is outside 0..100"),
    ],
)
def test_a_gain_is_shown_as_written(command, says, ws, tmp_path):
    levels = tmp_path / "levels.txt"
    levels.write_text("q1\td1\t-3\nq1\td2\t5\n")
    runs = tmp_path / "runs.txt"
    runs.write_text("sysA q1 d1\nsysA q1 d2\n")
    option = "--truth" if command == "evaluate" else "--judgments"
    line = one_line(crowdprefs(*command.split(), option, levels, "--runs", runs), says)
    assert "np." not in line


def test_a_five_megabyte_name_is_not_echoed_whole(ws, tmp_path):
    truth = tmp_path / "truth.txt"
    truth.write_text(f"q1 0 {'x' * 5_000_000} -3\n")
    line = one_line(crowdprefs("evaluate", "--truth", truth, "--runs", ws / "runs.txt"), "")
    assert len(line) < 400 and "characters)" in line, line[:400]


# ------------------------------------------------------------------ the one text reader


@dataclass(frozen=True)
class Reader:
    """A command reading a text file: ``args(ws, file, tmp)``; ``valid(ws)``: a valid file."""

    name: str
    args: Callable[[Path, Path, Path], list]
    valid: Callable[[Path], Path]
    what: str


READERS = [
    Reader("candidates", lambda ws, f, t: ["init", t / "new", "--candidates", f],
           lambda ws: ws / "candidates.csv", "candidates file"),
    Reader("prior", lambda ws, f, t: ["init", t / "new", "--candidates", ws / "candidates.csv",
                                      "--prior", f],
           lambda ws: ws / "prior.csv", "prior file"),
    Reader("runs", lambda ws, f, t: ["evaluate", "--truth", ws / "truth.qrel", "--runs", f],
           lambda ws: ws / "runs.txt", ""),
    Reader("truth", lambda ws, f, t: ["evaluate", "--truth", f, "--runs", ws / "runs.txt"],
           lambda ws: ws / "truth.qrel", ""),
    Reader("results", lambda ws, f, t: ["audit", "--answers", f, "--resamples", 0],
           lambda ws: ws / "results.csv", "results file"),
]  # fmt: skip
READER_IDS = [r.name for r in READERS]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le"])
@pytest.mark.parametrize("reader", READERS, ids=READER_IDS)
def test_every_reader_reads_unicode_text_as_a_spreadsheet_saves_it(reader, encoding, ws, tmp_path):
    text = reader.valid(ws).read_text(encoding="utf-8")
    saved = tmp_path / f"saved{reader.valid(ws).suffix}"
    saved.write_bytes(text.encode(encoding))
    done = crowdprefs(*reader.args(ws, saved, tmp_path))
    assert done.returncode == 0, done.stderr
    assert f"as {encoding.upper()} (it is not UTF-8)" in done.stderr


@pytest.mark.parametrize("reader", READERS, ids=READER_IDS)
def test_every_reader_refuses_a_named_pipe_at_once(reader, ws, tmp_path):
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    done = subprocess.run(
        [script(), *map(str, reader.args(ws, fifo, tmp_path))],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    line = one_line(done, f"{fifo} is a named pipe (FIFO), not a regular file")
    assert reader.what in line
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize("reader", READERS, ids=READER_IDS)
def test_every_reader_says_what_a_binary_file_is(reader, ws, tmp_path):
    workbook = tmp_path / "sheet.xlsx"
    workbook.write_bytes(b"PK\x03\x04\x14\x00\x06\x00\x08\x00\x00\x00!\x00")
    line = one_line(crowdprefs(*reader.args(ws, workbook, tmp_path)), "not a text file")
    assert "ZIP archive" in line and "save it as CSV" in line


# ------------------------------------------------------------------ settings files


@pytest.fixture(scope="module")
def made(ws, tmp_path_factory) -> Path:
    """A project made by ``init`` once for the module (each test copies it)."""
    root = tmp_path_factory.mktemp("made") / "project"
    assert crowdprefs("init", root, "--candidates", ws / "candidates.csv").returncode == 0
    return root


def _project(made: Path, tmp_path: Path) -> Path:
    return Path(
        shutil.copytree(made, tmp_path / "project", ignore=shutil.ignore_patterns("*.lock"))
    )


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_a_settings_file_saved_with_a_byte_order_mark_is_read(encoding, made, tmp_path):
    root = _project(made, tmp_path)
    config = root / CONFIG_NAME
    config.write_bytes(config.read_text(encoding="utf-8").encode(encoding))
    done = crowdprefs("status", root)
    assert done.returncode == 0 and "11 queries" in done.stdout, done.stderr


@pytest.mark.parametrize(
    "section, key, value",
    [("prior", "scores", ""), ("prior", "scores", "  "), ("simulated", "truth", "")],
)
def test_a_setting_naming_a_file_must_name_one(section, key, value, made, tmp_path):
    root = _project(made, tmp_path)
    config = root / CONFIG_NAME
    data = tomllib.loads(config.read_text())
    data[section] = {key: value}
    config.write_text(tomli_w.dumps(data))
    before = (root / "state.sqlite").read_bytes()
    line = one_line(crowdprefs("next", root), f"[{section}] {key} must be a file name")
    assert "folder" not in line
    assert (root / "state.sqlite").read_bytes() == before


# ------------------------------------------------------------------ options and model files


@pytest.mark.parametrize("seconds", ["inf", "nan", "1e9", "-1"])
def test_prior_chroma_seconds_are_finite_and_bounded(seconds, ws, tmp_path):
    out = tmp_path / "scores.csv"
    done = crowdprefs("prior", "chroma", ws / "candidates.csv", "-o", out, "--seconds", seconds)
    line = one_line(done, "")
    assert "seconds" in line and "clip" not in line.split("seconds", 1)[0], line
    assert not out.exists()


def test_an_mtc_model_of_another_version_shows_the_version_as_written(ws, tmp_path):
    from crowdprefs.evaluation.mtc.trained import (
        ARRAYS,
        GAIN_MODEL_FORMAT,
        GAIN_MODEL_VERSION,
        NUMBERS,
    )

    fields = dict.fromkeys(("features", "scale", *ARRAYS, *NUMBERS, "judgments"), 0)
    model = tmp_path / "model.json"
    data = {**fields, "format": GAIN_MODEL_FORMAT, "version": str(GAIN_MODEL_VERSION)}
    model.write_text(json.dumps(data))
    done = crowdprefs("mtc", "estimate", "--runs", ws / "runs.txt", "--model", model)
    says = f"version '{GAIN_MODEL_VERSION}' is not the number {GAIN_MODEL_VERSION}; train it"
    one_line(done, says)


# ------------------------------------------------------------------ a full disk


FILL = """
set -e
mount -t tmpfs -o size=3m none "$1"
"$2" -c "from crowdprefs.demo import create_demo_project; from pathlib import Path; \
create_demo_project(Path('$1/demo')).close()"
"$3" next "$1/demo/project" >/dev/null
dd if=/dev/zero of="$1/fill" bs=4k 2>/dev/null || true
set +e
"$3" run "$1/demo/project"; echo "exit $?"
"$3" plan --candidates "$1/demo/candidates.csv" --campaigns 2 -o "$1/plan.csv"; echo "exit $?"
"""


def test_a_full_disk_says_no_space_left_on_device_naming_the_path(tmp_path):
    """On a full file system (a 3 MB tmpfs in a private mount namespace): the project's state
    and a written file each end in one line naming the path and the full disk."""
    unshare = shutil.which("unshare")
    probe = subprocess.run(
        [unshare or "unshare", "-rm", "true"], capture_output=True, check=False
    ) if unshare else None  # fmt: skip
    if probe is None or probe.returncode != 0:
        pytest.skip("no private mount namespace here (unshare -rm) to make a full disk in")
    disk = tmp_path / "disk"
    disk.mkdir()
    done = subprocess.run(
        [unshare, "-rm", "sh", "-c", FILL, "fill", disk, sys.executable, script()],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert done.stdout.split().count("exit") == 2 and "exit 0" not in done.stdout, done.stdout
    assert "Traceback" not in done.stderr and len(errors) == 2, done.stderr
    state, written = errors
    assert f"{disk}/demo/project/state.sqlite: no space left on device" in state
    assert f"cannot write {disk}/plan.csv: no space left on device" in written
