"""Issue 42, class 5: one answer identity in every reader of answers files.

An answer is (worker, query, left, right): a worker answers a pair once (in either order), so
every reader of the long and crowd-kit formats refuses a worker's second answer to a pair, naming
both rows, as the results reader refuses a worker answering one HIT twice; and a file without a
query column is never given a query silently. Each case runs every command that reads such a
file (``audit --answers``, ``import-answers``) through the console script.
"""

from __future__ import annotations

import hashlib
import sqlite3
from contextlib import closing
from pathlib import Path

import pandas as pd
import pytest
from console_script import crowdprefs

from crowdprefs import exchange
from crowdprefs.demo import create_demo_project


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """The demo project (11 queries, q01-v01 ... candidates), nothing asked yet."""
    root = tmp_path_factory.mktemp("identity")
    create_demo_project(root).close()
    return root / "project"


def state_dump(project: Path) -> str:
    uri = f"{(project / 'state.sqlite').as_uri()}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as db:
        return hashlib.sha256("\n".join(db.iterdump()).encode()).hexdigest()


def readers(project: Path, path: Path, *options: str) -> dict[str, list]:
    """Every command reading an answers file, on ``path`` with ``options``."""
    return {
        "audit": ["audit", "--answers", path, *options],
        "import-answers": ["import-answers", project, path, *options],
    }


def one_line(done) -> str:
    assert done.returncode not in (0, None), done.stdout + done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    return lines[0]


TWICE = {
    "long, two labels": (
        "worker,query,left,right,label\nw1,q01,q01-v01,q01-v02,left\n"
        "w2,q01,q01-v01,q01-v02,right\nw1,q01,q01-v01,q01-v02,right\n",
        ["--format", "long"],
    ),
    "long, the same label in the other order": (
        "worker,query,left,right,label\nw1,q01,q01-v01,q01-v02,left\n"
        "w2,q01,q01-v01,q01-v02,right\nw1,q01,q01-v02,q01-v01,right\n",
        ["--format", "long"],
    ),
    "crowdkit, won twice by one side": (
        "worker,left,right,label\nw1,q01-v01,q01-v02,q01-v01\nw2,q01-v01,q01-v02,q01-v02\n"
        "w1,q01-v01,q01-v02,q01-v01\n",
        ["--format", "crowdkit", "--query", "q01"],
    ),
}


@pytest.mark.parametrize("command", ["audit", "import-answers"])
@pytest.mark.parametrize("name", TWICE)
def test_a_worker_s_second_answer_to_a_pair_is_refused_naming_both_rows(
    name, command, project, tmp_path
):
    text, options = TWICE[name]
    path = tmp_path / "answers.csv"
    path.write_text(text)
    before = state_dump(project)
    line = one_line(crowdprefs(*readers(project, path, *options)[command]))
    assert f"{path}: rows 1 and 3: worker 'w1' answered the pair" in line, line
    assert "of query 'q01' twice" in line, line
    assert state_dump(project) == before


NO_QUERY = {
    "long without a query column": (
        "worker,left,right,label\nw1,q01-v01,q01-v02,left\n",
        "long",
    ),
    "a crowd-kit file read as long": (
        "worker,left,right,label\nw1,q01-v01,q01-v02,q01-v02\n",
        "long",
    ),
    "crowdkit": ("worker,left,right,label\nw1,q01-v01,q01-v02,q01-v02\n", "crowdkit"),
}


@pytest.mark.parametrize("name", NO_QUERY)
def test_a_file_without_a_query_column_asks_for_query(name, project, tmp_path):
    """Every reader, on a project of 11 queries: refused without --query; with it, read."""
    text, fmt = NO_QUERY[name]
    path = tmp_path / "answers.csv"
    path.write_text(text)
    before = state_dump(project)
    for args in readers(project, path, "--format", fmt).values():
        line = one_line(crowdprefs(*args))
        assert f"{path}: the file has no query column" in line and "--query" in line, line
    assert state_dump(project) == before
    done = crowdprefs("audit", "--answers", path, "--format", fmt, "--query", "q01")
    assert done.returncode == 0, done.stderr
    assert "1 answers, each identified by (worker, query, left, right)" in done.stderr


def test_a_query_named_for_a_file_with_a_query_column_is_refused(project, tmp_path):
    path = tmp_path / "answers.csv"
    path.write_text("worker,query,left,right,label\nw1,q01,q01-v01,q01-v02,left\n")
    for args in readers(project, path, "--format", "long", "--query", "q02").values():
        line = one_line(crowdprefs(*args))
        assert "the file has a query column" in line, line


def test_a_one_query_project_names_the_query_of_a_file_without_one(tmp_path):
    """import-answers takes a one-query project's query for a file without a query column."""
    candidates = tmp_path / "candidates.csv"
    candidates.write_text("query,document\nq,a\nq,b\nq,c\n")
    project = tmp_path / "one"
    assert crowdprefs("init", project, "--candidates", candidates).returncode == 0
    assert crowdprefs("next", project).returncode == 0
    pairs = tmp_path / "pairs.csv"
    assert crowdprefs("export", project, "--format", "pairs", "-o", pairs).returncode == 0
    asked = pd.read_csv(pairs, dtype=str)
    answers = tmp_path / "answers.csv"
    answers.write_text(
        "worker,left,right,label\n"
        + "".join(f"w1,{r.left},{r.right},left\n" for r in asked.itertuples())
    )
    done = crowdprefs("import-answers", project, answers, "--format", "long")
    assert done.returncode == 0, done.stderr
    assert f"{len(asked)} new answers stored" in done.stdout


def test_a_split_tie_of_a_crowdkit_file_is_read_back_as_one_equal_answer(tmp_path):
    """What ``export --format crowdkit --split-ties`` writes reads back as the answers it
    holds: each tie once, 'equal'."""
    answers = pd.DataFrame(
        {
            "worker": ["w1", "w2", "w1", "w3"],
            "query": "q",
            "left": ["a", "a", "a", "b"],
            "right": ["b", "b", "c", "c"],
            "label": ["equal", "left", "right", "equal"],
        }
    )
    path = tmp_path / "split.csv"
    path.write_text(exchange.crowdkit_csv(answers, ties="split"))
    assert len(pd.read_csv(path)) == 6
    back = exchange.read_preferences(path, "crowdkit", query="q")
    assert back[exchange.PREFERENCE_COLUMNS].values.tolist() == answers.values.tolist()
    done = crowdprefs("audit", "--answers", path, "--format", "crowdkit", "--query", "q")
    assert done.returncode == 0, done.stderr
    assert "4 answers, each identified by" in done.stderr
