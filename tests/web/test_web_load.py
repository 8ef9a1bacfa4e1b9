"""The web crowd under load, and whole campaigns answered over HTTP (loopback only, bounded)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from crowdprefs.campaign import driver
from crowdprefs.campaign.project import Project, Settings, init_project
from crowdprefs.demo import make_collection
from crowdprefs.io import write_lists
from crowdprefs.web.judges import run_web_campaign

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "web_load.py"


def load_benchmark():
    spec = importlib.util.spec_from_file_location("web_load", BENCHMARK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_fifty_judges_complete_a_batch_without_losing_or_duplicating(tmp_path):
    """50 concurrent judges against ``crowdprefs serve`` in a child process: every pair of the
    batch ends with exactly its answers, from distinct judges (checked inside ``load_test``)."""
    report = load_benchmark().load_test(tmp_path, judges=50, answers=3, max_seconds=240)
    assert report.refused == []
    assert report.answers == 321  # 107 pairs x 3


def test_a_whole_campaign_runs_through_the_web_crowd(tmp_path):
    """Simulated judges posting over HTTP take a campaign to its end: the server aggregates each
    batch and publishes the next, and every list closes."""
    candidates, truth = make_collection(sizes=(4, 5, 7))
    candidates.to_csv(tmp_path / "candidates.csv", index=False)
    write_lists(truth, tmp_path / "truth.qrel", tag="truth")
    settings = Settings(answers_per_pair=3, sections={"simulated": {"truth": "../truth.qrel"}})
    init_project(tmp_path / "project", tmp_path / "candidates.csv", settings=settings).close()
    report = run_web_campaign(tmp_path / "project", judges=6, max_seconds=240)
    assert report.refused == []
    with Project(tmp_path / "project") as project:
        totals = driver.status(project)["totals"]
        answers = project.store.answers()
        batches = project.store.batches()
        lists = driver.lists(project)
    assert totals["closed"] == totals["queries"] == 3
    assert (batches["status"] == "aggregated").all() and (batches["crowd"] == "web").all()
    assert set(answers["crowd"]) == {"web"} and report.answers == len(answers)
    assert (answers.groupby("pair_id").size() == 3).all()
    assert sorted(lists["document"]) == sorted(candidates["document"])
