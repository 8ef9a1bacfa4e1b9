"""The real 2010 MTurk campaign (``../shared/data/sigir2010``) through the installed console
script: replay gives its published lists, audit its paper's Table 2, crowd-model fit a crowd
that plans it, and a project holds it through status, export and evaluate. Skipped, saying why,
where the data is not beside the repository."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from console_script import crowdprefs

from crowdprefs.io import read_lists

COLUMNS = """\
answer = "Answer.radio"
a_value = "a"
b_value = "b"
equal_value = "s"
background = "Answer.bground"
listen_seconds = "Input.time"
"""
"""The column mapping docs/tasks/recorded.md gives for the 2010 file."""

PRICES = ("--reward", "0.02", "--fee-rate", "0.1", "--fee-minimum", "0.005")
"""2010's prices: 2 cents an answer plus half a cent for Amazon."""

TABLE_2 = pd.DataFrame(
    {
        "pairs": [107, 83, 51, 19, 10, 5, 4, 2],
        "workers": [32, 20, 15, 17, 16, 12, 11, 11],
        "previous_workers": [None, 4, 11, 10, 11, 8, 7, 4],
        "median_seconds": [26, 14, 19, 30, 21, 24, 15.5, 24.5],
        "agreement": [0.656, 0.822, 0.72, 0.644, 0.663, 0.732, 0.569, 0.506],
        "cost": [26.75, 20.75, 12.75, 4.75, 2.5, 1.25, 1, 0.5],
    },
    index=pd.RangeIndex(1, 9, name="iteration"),
)
"""Table 2 of the preference-judgments paper (seed 002), iteration by iteration."""

EMPTY_ROWS = 5
"""Answers the file records without a choice (rows 405, 1027, 1365, 2081, 2731)."""


@pytest.fixture(scope="module")
def recorded(sigir2010, tmp_path_factory):
    """The file, its published lists, the column mapping and a crowd fitted to them (once)."""
    root = tmp_path_factory.mktemp("sigir2010")
    columns = root / "columns.toml"
    columns.write_text(COLUMNS)
    fitted = root / "crowd.toml"
    ran = crowdprefs(
        "crowd-model", "fit", sigir2010 / "judgments.csv", "--columns", columns,
        "--lists", sigir2010 / "MTurk.qrel", "--bootstrap", "0", "--campaigns", "5",
        "-o", fitted,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    return {
        "root": root,
        "answers": sigir2010 / "judgments.csv",
        "lists": sigir2010 / "MTurk.qrel",
        "columns": columns,
        "crowd": fitted,
        "fit_output": ran.stdout,
    }


def same_groups(ours: pd.DataFrame, published: pd.DataFrame) -> pd.DataFrame:
    """Per query: its documents and how many sit in the published group."""
    both = published.merge(ours, on=["query", "document"], how="left", suffixes=("", "_ours"))
    both["same"] = both["group"] == both["group_ours"]
    return both.groupby("query").agg(documents=("document", "size"), same=("same", "sum"))


def test_replay_with_margin_2_gives_the_published_lists(recorded):
    output = recorded["root"] / "replayed.qrel"
    ran = crowdprefs(
        "replay", recorded["answers"], "--columns", recorded["columns"],
        "--rule", "margin", "--margin", "2", *PRICES, "-o", output,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "8 iterations; 11/11 lists closed" in " ".join(ran.stdout.split())
    assert "$70.25 for 2810 answers" in ran.stdout
    per_query = same_groups(read_lists(output), read_lists(recorded["lists"]))
    assert len(per_query) == 11 and (per_query["same"] == per_query["documents"]).all()
    assert per_query["documents"].sum() == 118


def test_audit_gives_table_2(recorded):
    ran = crowdprefs(
        "audit", "--answers", recorded["answers"], "--columns", recorded["columns"], *PRICES,
        "--resamples", "0", "--json",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    rows = pd.DataFrame(json.loads(ran.stdout)["iterations"]).set_index("iteration")
    total, rows = rows.loc["total"], rows.drop(index="total")
    rows.index = rows.index.astype(int)
    for column in ("pairs", "workers", "cost", "median_seconds"):
        assert rows[column].tolist() == TABLE_2[column].tolist(), column
    assert (
        rows["previous_workers"].iloc[1:].tolist() == TABLE_2["previous_workers"].iloc[1:].tolist()
    )
    assert rows["agreement"].to_numpy() == pytest.approx(TABLE_2["agreement"], abs=0.005)
    # ten answers a pair, less the five recorded without a choice
    assert rows["answers"].sum() + EMPTY_ROWS == 10 * TABLE_2["pairs"].sum() == 2810
    assert (total["pairs"], total["workers"], total["cost"]) == (281, 79, 70.25)
    assert total["agreement"] == pytest.approx(0.664, abs=0.005)
    assert round(total["previous_share"], 2) == 0.55


def test_the_fitted_crowd_plans_the_campaign_within_ten_percent(recorded):
    assert "pairs in iteration 1" in recorded["fit_output"]
    candidates = recorded["root"] / "candidates.csv"
    published = read_lists(recorded["lists"])
    published[["query", "document"]].to_csv(candidates, index=False)
    rows = recorded["root"] / "plan.csv"
    ran = crowdprefs(
        "plan", "--candidates", candidates, "--truth", recorded["lists"],
        "--crowd-model", recorded["crowd"], "--campaigns", "10", "--jobs", "1", "-o", rows,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert pd.read_csv(rows)["pairs"].mean() == pytest.approx(281, rel=0.10)


FEES_2010 = "[fees]\nrate = 0.1\nrate_10_or_more = 0.1\nminimum = 0.005\n"
"""Amazon's 2010 fee as a project's section (half a cent on a 2-cent answer)."""


def test_the_recording_imported_into_a_project_of_its_lists_reports_exports_evaluates(recorded):
    candidates = recorded["root"] / "published.csv"
    read_lists(recorded["lists"])[["query", "document"]].to_csv(candidates, index=False)
    project = recorded["root"] / "project"
    ran = crowdprefs(
        "init", project, "--candidates", candidates, "--rule", "margin", "--margin", "2",
        "--reward", "0.02",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    config = project / "crowdprefs.toml"
    config.write_text(config.read_text().split("[fees]")[0] + FEES_2010)
    imported = crowdprefs(
        "import-answers", project, recorded["answers"], "--columns", recorded["columns"]
    )
    assert imported.returncode == 0, imported.stderr
    said = " ".join(imported.stdout.split())
    assert "recorded campaign of 8 batches, 11 of 11 lists closed" in said
    assert "2805 new answers stored" in said and "5 empty" in said
    again = crowdprefs(
        "import-answers", project, recorded["answers"], "--columns", recorded["columns"]
    )
    assert again.returncode == 0 and "0 new answers stored, 2805 already stored" in " ".join(
        again.stdout.split()
    )
    ran = crowdprefs("status", project)
    assert ran.returncode == 0 and "11 closed, 0 open" in ran.stdout, ran.stderr
    assert "$70.25 committed" in ran.stdout
    written = {}
    for fmt in ("qrels", "preference-qrels", "long", "results", "crowdkit", "choix"):
        written[fmt] = recorded["root"] / f"export.{fmt}"
        one = ("--query", "190.011.224-1.1.1") if fmt in ("crowdkit", "choix") else ()
        ran = crowdprefs("export", project, "--format", fmt, *one, "-o", written[fmt])
        assert ran.returncode == 0, (fmt, ran.stderr)
    per_query = same_groups(read_lists(written["qrels"]), read_lists(recorded["lists"]))
    assert (per_query["same"] == per_query["documents"]).all()
    assert len(pd.read_csv(written["long"])) == 2810 - EMPTY_ROWS
    ran = crowdprefs(
        "audit", "--answers", written["results"], "--rule", "margin", "--margin", "2", "--json",
        "--resamples", "0",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert [r["pairs"] for r in json.loads(ran.stdout)["iterations"]][:-1] == TABLE_2[
        "pairs"
    ].tolist()
    runs = recorded["root"] / "runs.txt"
    published = read_lists(recorded["lists"])
    best = published.sort_values(["query", "group"])
    worst = published.sort_values(["query", "group"], ascending=[True, False])
    good = [f"good {q} {d}" for q, d in zip(best["query"], best["document"], strict=True)]
    bad = [f"bad {q} {d}" for q, d in zip(worst["query"], worst["document"], strict=True)]
    runs.write_text("\n".join(good + bad) + "\n")
    ran = crowdprefs("evaluate", "--truth", project, "--runs", runs, "-m", "ADR@5")
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.index("good") < ran.stdout.index("bad")


def test_without_its_times_the_file_replays_from_its_pivots(recorded):
    """With its time columns unread, the iterations come from the pivots the pairs show: the
    eight iterations, every list closed, 117 of the 118 documents in their published groups
    (pairs whose segment could take either of two pivots are numbered by file order)."""
    output = recorded["root"] / "untimed.qrel"
    ran = crowdprefs(
        "replay", recorded["answers"], "--columns", recorded["columns"], "--created-column",
        "none", "--accept-column", "none", "--rule", "margin", "--margin", "2", "-o", output,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    assert "numbered from the pivots its pairs show (8 iterations" in ran.stderr
    assert "8 iterations; 11/11 lists closed" in " ".join(ran.stdout.split())
    per_query = same_groups(read_lists(output), read_lists(recorded["lists"]))
    assert per_query["same"].sum() == 117
