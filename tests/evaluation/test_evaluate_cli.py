"""The ``evaluate`` and ``compare-lists`` commands, end to end through the entry point."""

from __future__ import annotations

import json
import re
from io import StringIO
from pathlib import Path

import pandas as pd
import pytest

from crowdprefs import io
from crowdprefs.evaluation.stats import read_scores

EVALUATING = Path(__file__).resolve().parents[2] / "docs" / "tasks" / "evaluate.md"


@pytest.fixture
def files(tmp_path):
    truth = tmp_path / "truth.txt"
    truth.write_text("".join(f"crowd q{q} d{d} {1 + d // 2}\n" for q in range(4) for d in range(6)))
    runs = tmp_path / "runs"
    runs.mkdir()
    for s, order in {"good": [0, 1, 2, 3, 4, 5], "bad": [5, 4, 9, 3, 2, 1]}.items():
        lines = [
            f"q{q} Q0 d{d} {r + 1} {10 - r} {s}\n" for q in range(4) for r, d in enumerate(order)
        ]
        (runs / f"{s}.trec").write_text("".join(lines) + "q9 Q0 d0 1 1 " + s + "\n")
    return truth, runs


def test_csv_is_the_scores_interchange_format(cli, tmp_path, files):
    truth, runs = files
    code, out, err = cli(
        "evaluate",
        "--truth",
        truth,
        "--runs",
        runs,
        "--measure",
        "ADR@5",
        "AG",
        "-m",
        "nDCG(b=2)@3,P(rel=2)@2",
        "--format",
        "csv",
    )
    assert code == 0
    assert "ignored 2 run line(s)" in err
    scores = pd.read_csv(StringIO(out))
    assert list(scores.columns) == ["system", "query", "measure", "score"]
    assert scores["measure"].unique().tolist() == [
        "ADR@5",
        "nDCG@3",
        "P(rel=2)@2",
        "AG@5",
    ]  # options, then arguments
    good = scores[scores["system"] == "good"]
    assert (good[good["measure"] == "ADR@5"]["score"] == 1).all()
    path = tmp_path / "scores.csv"
    path.write_text(out)
    matrices = read_scores(path)
    assert matrices["AG@5"].shape == (2, 4)


def test_json_and_table(cli, files, tmp_path):
    truth, runs = files
    code, out, _ = cli(
        "evaluate",
        "--truth",
        truth,
        "--runs",
        runs,
        "--format",
        "json",
        "--test",
        "sign",
        "--one-sided",
    )
    assert code == 0
    payload = json.loads(out)
    assert set(payload) == {"scores", "summary", "tests"}
    assert {r["measure"] for r in payload["summary"]} == {"AG@5", "nDCG@5", "ANDCG@5", "ADR@5"}
    assert len(payload["tests"]) == 4
    (tmp_path / "scores.json").write_text(out)
    assert read_scores(tmp_path / "scores.json")["ADR@5"].shape == (2, 4)
    plot = tmp_path / "fig.png"
    code, out, err = cli(
        "evaluate",
        "--truth",
        truth,
        "--runs",
        runs,
        "-m",
        "AP",
        "--plot",
        plot,
    )
    assert code == 0
    assert "Ranked by AP" in out and "good" in out
    assert plot.exists() and "figure saved" in err


def test_bad_input_gives_one_line_and_exit_2(cli, files, tmp_path):
    truth, runs = files
    code, out, err = cli("evaluate", "--truth", truth, "--runs", runs, "-m", "nDCG(z=1)@5")
    assert code == 2 and "unknown parameter 'z'" in err and "Traceback" not in err
    (runs / "broken.trec").write_text("q0 Q0 d1 1 abc other\n")
    code, _, err = cli("evaluate", "--truth", truth, "--runs", runs)
    assert code == 2 and "broken.trec: line 1: score 'abc' is not a number" in err


def test_compare_lists_command(cli, tmp_path):
    a, b = tmp_path / "L1.txt", tmp_path / "L2.txt"
    io.write_lists(
        pd.DataFrame({"query": "q", "document": list("ABCDE"), "group": [1, 1, 1, 2, 2]}), a
    )
    io.write_lists(
        pd.DataFrame({"query": "q", "document": list("ABDEC"), "group": [1, 1, 2, 2, 2]}), b
    )
    code, out, _ = cli("compare-lists", a, b, "--permutations", "200", "--format", "csv")
    assert code == 0
    table = pd.read_csv(StringIO(out))
    assert table[["truth", "results"]].values.tolist() == [["L1", "L2"], ["L2", "L1"]]
    assert table["min"].round(3).tolist() == [0.933, 0.7]
    code, out, _ = cli("compare-lists", a, b)
    assert code == 0 and "0.933" in out


def test_readme_ranking_is_what_the_command_prints_on_mirex2011(cli, mirex2011):
    """The docs' page on evaluating systems shows the AG@5 ranking of the MIREX 2011 systems."""
    code, out, _ = cli(
        "evaluate",
        "--truth",
        mirex2011 / "judgments.txt",
        "--runs",
        mirex2011 / "runs.txt",
        "-m",
        "AG@5",
        "--test",
        "none",
    )
    assert code == 0
    ranking = re.findall(r"│\s+(\d+) │ (\w+) │\s+([\d.]+)±", out)
    assert len(ranking) == 18
    section = EVALUATING.read_text(encoding="utf-8").split("## Example: MIREX 2011", 1)[1]
    assert ranking == re.findall(r"│\s+(\d+) │ (\w+) │\s+([\d.]+)±", section)[:18]
