"""The crowd resampled and the sort replayed: stability of the lists, and the systems' intervals
with the ground truth's uncertainty (``evaluate --truth-resamples``) through the console
script."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from console_script import crowdprefs
from demo_inputs import finished_demo

from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.parallel import Runner
from crowdprefs.quality.stability import resample_groups, stability


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """A finished demo campaign (simulated crowd) with the demo's system runs, and its answers
    as a results file (``results.csv``)."""
    from crowdprefs.campaign.project import Project
    from crowdprefs.demo import example_runs
    from crowdprefs.io import read_lists, write_runs
    from crowdprefs.quality.frames import project_answers
    from crowdprefs.results_file import write_results

    root = tmp_path_factory.mktemp("stability")
    with Project(finished_demo(root / "demo"), lock=False) as project:
        write_results(project_answers(project), root / "results.csv")
    write_runs(example_runs(read_lists(root / "demo" / "truth.qrel")), root / "runs.txt")
    return root


def _campaign(demo: Path):
    from crowdprefs.campaign.project import Project
    from crowdprefs.quality.sorted_campaign import SortedCampaign

    with Project(demo / "demo" / "project", lock=False) as project:
        return SortedCampaign.of_project(project)


def test_published_lists_are_the_projects(demo):
    """The replay of the stored verdicts from the seeded orders gives the project's lists."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project

    campaign = _campaign(demo)
    resampled = resample_groups(
        campaign.answers, campaign.pairs, campaign.orders, campaign.rule, resamples=3
    )
    with Project(demo / "demo" / "project", lock=False) as project:
        lists = driver.lists(project)
    key = ["query", "document"]
    merged = resampled.documents.merge(lists, on=key, suffixes=("", "_project"))
    assert len(merged) == len(lists) == len(resampled.documents)
    assert (merged["group"] == merged["group_project"]).all()


def test_resamples_are_identical_for_any_jobs_and_seeded(demo):
    campaign = _campaign(demo)
    args = (campaign.answers, campaign.pairs, campaign.orders, campaign.rule)
    one = resample_groups(*args, resamples=40, seed=5)
    two = resample_groups(*args, resamples=40, seed=5, runner=Runner(jobs=2))
    other = resample_groups(*args, resamples=40, seed=6)
    assert np.array_equal(one.groups, two.groups)
    assert not np.array_equal(one.groups, other.groups)


def test_a_unanimous_crowd_gives_stable_lists():
    """Every worker agrees on every pair: each resample rebuilds the published list exactly."""
    order = ["a", "b", "c", "d"]  # d is the first pivot
    truth = {"a": 3, "b": 2, "c": 2, "d": 1}
    rows, pairs = [], []
    asked = [("a", "d"), ("b", "d"), ("c", "d"), ("a", "c"), ("b", "c")]
    for pair_id, (x, y) in enumerate(asked):
        score = int(np.sign(truth[x] - truth[y]))
        counts = {1: (10, 0, 0), 0: (0, 10, 0), -1: (0, 0, 10)}[score]
        pairs.append((pair_id, "q", x, y, "sort", *counts, score))
        rows += [(pair_id, f"w{w}", score, "approved", "A") for w in range(10)]
    answers = pd.DataFrame(rows, columns=["pair_id", "worker_id", "score", "status", "choice"])
    columns = ["pair_id", "query", "x", "y", "kind", "more", "equal", "less", "verdict"]
    table = pd.DataFrame(pairs, columns=columns).set_index("pair_id")
    resampled = resample_groups(answers, table, {"q": order}, AggregationRule(), resamples=50)
    lists, boundaries = stability(resampled)
    assert resampled.documents.sort_values("document")["group"].tolist() == [1, 2, 2, 3]
    assert lists.loc[0, "same_list"] == 1.0 and lists.loc[0, "expected_adr"] == 1.0
    assert boundaries["reappears"].tolist() == [1.0, 1.0]


def test_a_noisy_crowd_moves_the_boundaries(demo):
    campaign = _campaign(demo)
    resampled = resample_groups(
        campaign.answers, campaign.pairs, campaign.orders, campaign.rule, resamples=100
    )
    lists, boundaries = stability(resampled)
    assert set(lists["query"]) == set(campaign.orders)
    assert ((boundaries["reappears"] >= 0) & (boundaries["reappears"] <= 1)).all()
    assert boundaries["reappears"].min() < 1  # the simulated crowd is noisy
    assert (lists["adr_low"] <= lists["expected_adr"]).all()
    assert (lists["expected_adr"] <= lists["adr_high"]).all()
    assert lists["expected_adr"].between(0.5, 1).all()


def test_bradley_terry_resamples_are_refused_in_one_line(demo):
    campaign = _campaign(demo)
    from crowdprefs.errors import InputError

    with pytest.raises(InputError, match="once per resample"):
        resample_groups(
            campaign.answers, campaign.pairs, campaign.orders,
            AggregationRule(rule="bradley-terry"), resamples=2,
        )  # fmt: skip


def test_evaluate_truth_resamples_through_the_console_script(demo):
    """Intervals that include the truth's uncertainty contain the query-only intervals' centre
    on average, every pair's kept share is a share, and the JSON is the same on 1 and 2 jobs."""
    project, runs = demo / "demo" / "project", demo / "runs.txt"
    outputs = []
    for jobs in (1, 2):
        done = crowdprefs(
            "evaluate", "--truth", project, "--runs", runs, "-m", "ADR@5",
            "--truth-resamples", 60, "--seed", 3, "--jobs", jobs, "--format", "json",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    assert outputs[0] == outputs[1]
    payload = json.loads(outputs[0])["truth_uncertainty"]
    assert payload["resamples"] == 60
    summary = pd.DataFrame(payload["summary"])
    assert len(summary) == 5 and (summary["truth_ci_low"] <= summary["truth_ci_high"]).all()
    assert (summary["ci_low"] <= summary["mean"]).all() and (
        summary["mean"] <= summary["ci_high"]
    ).all()
    pairs = pd.DataFrame(payload["pairs"])
    assert len(pairs) == 10 and pairs["kept"].between(0, 1).all()
    assert (pairs["difference"] >= 0).all()  # system_a is the one ahead
    table = crowdprefs(
        "evaluate", "--truth", project, "--runs", runs, "-m", "ADR@5", "--truth-resamples", 20,
    )  # fmt: skip
    assert table.returncode == 0, table.stderr
    assert "queries + truth" in table.stdout and "stays ahead" in table.stdout


def test_evaluate_truth_resamples_refuses_a_lists_file_in_one_line(demo, tmp_path):
    lists = tmp_path / "lists.qrel"
    lists.write_text("truth q01 q01-v01 1\n")
    done = crowdprefs(
        "evaluate", "--truth", lists, "--runs", demo / "runs.txt", "--truth-resamples", 5
    )
    assert done.returncode != 0
    assert "give a project folder" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_audit_shows_how_sure_the_lists_are_through_the_console_script(demo, tmp_path):
    """The project's audit: fragility and stability in the table, the JSON, the CSV folder and
    the HTML report (with its whole tables beside it); --resamples 0 leaves stability out."""
    project = demo / "demo" / "project"
    done = crowdprefs("audit", project, "--resamples", 50, "--json")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    summary = payload["fragility"]
    assert summary["resamples"] == 50 and 0 <= summary["boundaries_kept"] <= 1
    assert summary["pairs"] == len(payload["fragile_pairs"]) > 0
    flips = [row["flips"] for row in payload["fragile_pairs"]]
    assert flips == sorted(flips, key=lambda v: float("inf") if v is None else v)
    assert {"removals", "top_flips", "expected_adr"} <= set(payload["lists"][0])
    assert payload["list_boundaries"] and 0 <= payload["list_boundaries"][0]["reappears"] <= 1
    text = crowdprefs("audit", project, "--resamples", 0)
    assert text.returncode == 0, text.stderr
    assert "the most fragile verdicts" in text.stdout and "expected ADR" not in text.stdout
    tables, report = tmp_path / "tables", tmp_path / "report.html"
    done = crowdprefs("audit", project, "--resamples", 20, "--csv-dir", tables, "--html", report)
    assert done.returncode == 0, done.stderr
    lists = pd.read_csv(tables / "lists.csv")
    assert {"query", "flips", "same_list"} <= set(lists.columns)
    assert len(pd.read_csv(tmp_path / "report.lists.csv")) == len(lists)
    page = report.read_text()
    assert "How sure the lists are" in page and "report.fragile-pairs.csv" in page


def test_audit_of_a_recorded_file_replays_its_lists(demo):
    """A results file of the campaign (the simulated crowd's batches a moment apart: batch gap
    0): the lists are replayed from the recorded pivots, so the fragility of each closed list
    equals the project's."""
    by_file = crowdprefs(
        "audit", "--answers", demo / "results.csv", "--batch-gap", 0, "--resamples", 0,
        "--json",
    )  # fmt: skip
    by_project = crowdprefs("audit", demo / "demo" / "project", "--resamples", 0, "--json")
    assert by_file.returncode == 0, by_file.stderr
    mine, theirs = (json.loads(d.stdout) for d in (by_file, by_project))
    assert len(mine["lists"]) == len(theirs["lists"]) > 0
    key = ["query", "removals", "flips", "top_removals", "top_flips"]
    assert [[row[k] for k in key] for row in mine["lists"]] == [
        [row[k] for k in key] for row in theirs["lists"]
    ]


def test_audit_resamples_out_of_range_are_refused_in_one_line(demo):
    done = crowdprefs("audit", demo / "demo" / "project", "--resamples", -3)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "--resamples" in done.stderr


def test_bradley_terry_audit_gives_approximate_fragility_and_no_stability(demo):
    """The bradley-terry rule: verdict fragility from the fit (refit-confirmed where it can),
    said to be approximate; no resampled crowds (one refit each), said in the JSON."""
    done = crowdprefs(
        "audit", "--answers", demo / "results.csv", "--batch-gap", 0,
        "--rule", "bradley-terry", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    assert payload["fragility"]["exact"] is False
    assert "bradley-terry" in payload["fragility"]["stability"]
    sort = [row for row in payload["fragile_pairs"] if row["kind"] == "sort"]
    assert sort and not any(row["exact"] for row in sort)
    assert any(row["confirmed"] for row in sort)
    assert min(row["flips"] for row in sort if row["flips"] is not None) >= 1
    text = crowdprefs(
        "audit", "--answers", demo / "results.csv", "--batch-gap", 0,
        "--rule", "bradley-terry",
    )  # fmt: skip
    assert "approximate" in text.stdout


def test_audit_of_a_results_file_reads_its_play_logs(demo, tmp_path):
    """A results file whose answers carry the page's play log (``Answer.cover_a``…): three
    workers who heard a fifth of each clip are flagged as answering without listening, the
    others are not; a file without play-log fields has no logged answers."""
    raw = pd.read_csv(demo / "results.csv", dtype=str, keep_default_na=False)
    deaf = raw["WorkerId"].isin(sorted(raw["WorkerId"].unique())[:3])
    for role in ("query", "a", "b"):
        raw[f"Answer.plays_{role}"], raw[f"Answer.listen_{role}"] = "1", "10"
        raw[f"Answer.cover_{role}"] = np.where(deaf, "0.2", "1")
    raw.to_csv(tmp_path / "logged.csv", index=False)
    payloads = [
        json.loads(
            crowdprefs(
                "audit",
                "--answers",
                path,
                "--batch-gap",
                0,
                "--resamples",
                0,
                "--json",
            ).stdout
        )  # fmt: skip
        for path in (tmp_path / "logged.csv", demo / "results.csv")
    ]
    workers = pd.DataFrame(payloads[0]["workers"]).set_index("worker_id")
    flagged = {f["worker_id"] for f in payloads[0]["flags"] if f["flag"] == "not-listening"}
    assert flagged == set(raw.loc[deaf, "WorkerId"])
    assert workers.loc[sorted(flagged), "listen_coverage"].round(3).eq(0.2).all()
    assert (workers["logged_answers"] == workers["answers"]).all()
    assert all(row["logged_answers"] == 0 for row in payloads[1]["workers"])
