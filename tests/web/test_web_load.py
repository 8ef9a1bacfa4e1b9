"""The web crowd under load, and whole campaigns answered over HTTP (loopback only, bounded)."""

from __future__ import annotations

import importlib.util
import sys
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
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def run_load(tmp_path: Path, engine: str | None, judges: int, **options) -> dict:
    """One run of the benchmark's core on ``engine`` (SQLite: one worker, PostgreSQL: two);
    the store's checks (nothing lost, duplicated or over-filled) run inside it."""
    web_load = load_benchmark()
    config = web_load.Config("sqlite", 1) if engine is None else web_load.Config("postgresql", 2)
    return web_load.load_test(tmp_path, config, judges, database=engine, **options)


def test_hammering_judges_lose_nothing_across_batches_on_each_engine(tmp_path, engine):
    """Four judges who never pause, through two batch completions and the next batches' build:
    every answer the server accepted is stored once, no pair gets more answers than it wants,
    no request failed, and the server's CPU per answer is measured."""
    figures = run_load(tmp_path, engine, 4, think=(0.0, 0.0), answers=2, max_seconds=120)
    assert figures["batches"] >= 2
    assert figures["errors"] == figures["refused"] == figures["lost"] == 0
    assert figures["overfilled"] == 0 and figures["answers"] > 20  # batch 1: 10 pairs x 2
    assert figures["server_cpu_per_answer_s"] > 0
    assert figures["clip_p50_s"] > 0  # the judges downloaded the pages' clips


@pytest.mark.slow
def test_thinking_judges_on_each_engine(tmp_path, engine):
    """Fifty judges who pause between answers, as people do."""
    figures = run_load(tmp_path, engine, 50, think=(0.5, 1.5), max_seconds=240)
    assert figures["batches"] >= 2 and figures["errors"] == figures["lost"] == 0


@pytest.mark.slow
def test_a_server_killed_under_load_loses_no_accepted_answer(tmp_path, engine):
    """kill -9 of the server (SQLite, started again) or of a worker (PostgreSQL) at half the
    first batch and at its last answer: nothing accepted is lost and a batch completes after."""
    figures = run_load(tmp_path, engine, 12, think=(0.0, 0.2), kill=True, max_seconds=240)
    assert figures["kills"] == 2 and figures["lost"] == figures["overfilled"] == 0


def test_the_benchmark_refuses_sqlite_with_several_workers(capsys):
    with pytest.raises(SystemExit) as stop:
        load_benchmark().main(["--configs", "sqlite:4"])
    assert stop.value.code == 2
    assert "sqlite:4: SQLite is served by one worker" in capsys.readouterr().err


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
