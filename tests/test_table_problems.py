"""A table the parser cannot read is named in the tool's words, the same way by every reader:
one line with the file, the line an editor shows and what is wrong there, never the parser's
own message ("Error tokenizing data. C error: Expected 2 fields in line 3, saw 4")."""

from __future__ import annotations

from pathlib import Path

import pytest
from console_script import crowdprefs

TABLES = {
    "ragged": ("query,document\nq1,a\n\nq1,b,c,d\n", "line 4 has 4 fields, expected 2"),
    "unclosed": ('query,document\nq1,"a\nq1,b\n', "the quoted field opened on line 2 never closes"),
    "empty": ("\n\n", "it holds no table (empty, or only blank lines)"),
}
COMMANDS = {
    "init": lambda table, tmp: ("init", tmp / "project", "--candidates", table),
    "replay": lambda table, tmp: ("replay", table),
    "crowd-model fit": lambda table, tmp: ("crowd-model", "fit", table, "-o", tmp / "m.json"),
    "stats test": lambda table, tmp: ("stats", "test", "--scores", table),
}


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", TABLES)
def test_every_csv_reader_names_the_problem_in_one_line(
    tmp_path: Path, command: str, kind: str
) -> None:
    text, problem = TABLES[kind]
    table = tmp_path / "table.csv"
    table.write_text(text)
    done = crowdprefs(*COMMANDS[command](table, tmp_path))
    assert done.returncode == 2, done.stdout
    assert done.stderr.strip().splitlines() == [f"error: {table}: not a valid CSV: {problem}"]
    assert not (tmp_path / "project").exists() and not (tmp_path / "m.json").exists()


def test_a_whitespace_separated_file_names_its_ragged_line(tmp_path: Path) -> None:
    truth = tmp_path / "truth.qrel"
    truth.write_text("q1 0 a 1\nq1 0 b 1 extra\n")
    runs = tmp_path / "runs.txt"
    runs.write_text("s q1 a\n")
    done = crowdprefs("evaluate", "--truth", truth, "--runs", runs)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"error: {truth}: line 2 has 5 fields, expected 4"]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("d1 a1 rock\nd2 a2 jazz extra\n", "line 2 has 4 fields, expected 3"),
        ("d1 a1 rock\nd2 a2\n", "line 2 has 2 fields, expected 3"),
        ("d1 a1\n", "line 1 has 2 fields, expected 3"),
    ],
)
def test_the_mtc_metadata_reader_is_the_whitespace_reader(tmp_path, text, problem):
    from crowdprefs.errors import InputError
    from crowdprefs.evaluation.mtc import read_metadata

    metadata = tmp_path / "metadata.txt"
    metadata.write_text(text)
    with pytest.raises(InputError) as refused:
        read_metadata(metadata)
    assert str(refused.value) == f"{metadata}: {problem}"
