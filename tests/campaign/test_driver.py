"""The campaign driver with the simulated crowd: idempotent steps, budget, resume after kill -9."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import text

from crowdprefs.campaign import driver
from crowdprefs.campaign.project import Project
from crowdprefs.campaign.sorting import initial_orders, replay
from crowdprefs.crowds import get_crowd
from crowdprefs.crowds.simulated import SimulatedCrowd
from crowdprefs.demo import create_demo_project, make_collection
from crowdprefs.errors import BudgetError, InputError, StateError
from crowdprefs.io import read_lists
from crowdprefs.quality.crowd_model import CrowdModel
from crowdprefs.quality.review import Reviewer


@pytest.fixture
def demo(tmp_path) -> Project:
    project = create_demo_project(tmp_path / "demo")
    yield project
    project.close()


def test_demo_collection_is_shaped_like_eval05():
    candidates, truth = make_collection()
    sizes = candidates.groupby("query").size()
    assert len(sizes) == 11 and sizes.sum() == 118
    assert sizes.min() == 4 and sizes.max() == 23
    assert set(truth["document"]) == set(candidates["document"])


def test_full_campaign_closes_every_list(demo):
    crowd = get_crowd("simulated", demo)
    summaries = driver.run(demo, crowd)
    assert summaries[0].pairs == 118 - 11  # iteration 1: every member against its pivot
    assert summaries[-1].open_queries == 0
    assert [s.iteration for s in summaries] == list(range(1, len(summaries) + 1))
    lists = driver.lists(demo)
    assert len(lists) == 118 and lists.groupby("query").size().sum() == 118
    pairs = demo.store.pairs()
    assert len(pairs) == sum(s.pairs for s in summaries) < 740  # far fewer than all pairs
    keys = pairs[["query", "x", "y"]].apply(lambda r: (r["query"], frozenset((r.x, r.y))), axis=1)
    assert keys.is_unique, "a pair was asked twice"
    answers = demo.store.answers()
    assert len(answers) == 10 * len(pairs)
    assert answers.groupby("pair_id")["worker_id"].nunique().eq(10).all()
    assert driver.next_batch(demo) is None
    # The lists agree with the hidden truth far better than chance.
    truth = read_lists(demo.root.parent / "truth.qrel")
    merged = truth.merge(lists, on=["query", "document"], suffixes=("_true", "_found"))
    tau = merged.groupby("query")[["group_true", "group_found"]].corr(method="kendall")
    assert tau.xs("group_true", level=1)["group_found"].mean() > 0.8


def full_replay(project: Project) -> dict:
    orders = initial_orders(project.store.candidate_orders(), project.seed)
    verdicts = project.store.verdict_maps()
    return {q: replay(order, verdicts.get(q, {})) for q, order in orders.items()}


def test_sort_cache_always_equals_a_full_replay(demo):
    crowd = get_crowd("simulated", demo)
    for _ in range(2):
        driver.run(demo, crowd, max_iterations=1)
        assert driver.sort_states(demo) == full_replay(demo)
    cached = demo.store.cached_states()
    assert set(cached) == set(demo.store.query_names())
    # Any change of a verdict changes its query's fingerprint, so the cache is not trusted.
    before = demo.store.verdict_fingerprints()
    with demo.store.transaction() as conn:
        conn.execute(
            text(
                "UPDATE pairs SET verdict = -verdict"
                " WHERE pair_id = (SELECT MIN(pair_id) FROM pairs WHERE verdict != 0)"
            )
        )
    after = demo.store.verdict_fingerprints()
    assert [q for q in before if before[q] != after[q]] != []
    assert driver.sort_states(demo) == full_replay(demo)
    # A lost cache is rebuilt.
    with demo.store.transaction() as conn:
        conn.execute(text("DELETE FROM sort_cache"))
    assert driver.sort_states(demo) == full_replay(demo)


def test_next_is_idempotent_until_aggregated(demo):
    first = driver.next_batch(demo)
    pairs = demo.store.pairs(first)
    assert driver.next_batch(demo) == first
    assert demo.store.pairs(first).equals(pairs)
    # Random order and random A side within the batch (seed 002 §4.2).
    assert 0.3 < pairs["a_is_x"].mean() < 0.7
    assert not pairs.sort_values("position")["query"].is_monotonic_increasing
    with pytest.raises(StateError, match="expected a batch that is collected"):
        driver.aggregate(demo)


def test_steps_are_resumable_and_store_nothing_twice(demo):
    crowd = get_crowd("simulated", demo)
    driver.next_batch(demo)
    driver.publish(demo, crowd)
    assert driver.publish(demo, crowd) == 0  # nothing left to publish
    driver.collect(demo, crowd)
    count = len(demo.store.answers())
    assert driver.collect(demo, crowd) == 0
    assert len(demo.store.answers()) == count
    result = driver.aggregate(demo)
    assert set(result["verdict"]) <= {-1, 0, 1}
    assert result[["more", "equal", "less"]].sum(axis=1).eq(10).all()


def test_budget_stops_publishing_and_partial_publishes_what_fits(demo):
    demo.save_settings(demo.settings.__class__(**{**demo.settings.__dict__, "budget": 10.0}))
    crowd = get_crowd("simulated", demo)
    driver.next_batch(demo)
    with pytest.raises(BudgetError, match="cross the budget of \\$10.00"):
        driver.publish(demo, crowd)
    assert demo.store.hits().empty
    published = driver.publish(demo, crowd, partial=True)
    assert published == 33  # 33 pairs × 10 answers × $0.03 = $9.90
    assert driver.committed_cost(demo) <= 10.0
    assert demo.store.last_batch()["status"] == "built"


def test_simulated_answers_do_not_depend_on_collection_order(demo):
    crowd = get_crowd("simulated", demo)
    iteration = driver.next_batch(demo)
    pairs = demo.store.pairs(iteration)
    model, seed = crowd.model, crowd.seed
    whole = crowd_answers(crowd, pairs)
    halves = pd.concat(
        [crowd_answers(crowd, pairs.iloc[::2]), crowd_answers(crowd, pairs.iloc[1::2])]
    )
    key = ["assignment_id"]
    cols = ["assignment_id", "worker_id", "choice", "score", "seconds"]
    assert (
        whole[cols]
        .sort_values(key)
        .reset_index(drop=True)
        .equals(halves[cols].sort_values(key).reset_index(drop=True))
    )
    assert model == crowd.model and seed == crowd.seed


def crowd_answers(crowd: SimulatedCrowd, pairs: pd.DataFrame) -> pd.DataFrame:
    from crowdprefs.quality.crowd_model import simulate_answers

    return simulate_answers(pairs, crowd.similarity, crowd.pool, crowd.model, crowd.seed)


def test_simulated_crowd_is_calibrated_to_the_2010_campaign(demo):
    driver.run(demo, get_crowd("simulated", demo))
    answers = demo.store.answers()
    shares = answers["choice"].value_counts(normalize=True)
    assert shares["equal"] == pytest.approx(0.50, abs=0.05)
    assert shares["A"] == pytest.approx(0.21, abs=0.04)
    assert shares["B"] == pytest.approx(0.29, abs=0.04)
    assert answers["seconds"].median() == pytest.approx(21, abs=3)
    bots = answers.groupby("worker_id").filter(lambda f: (f["seconds"] == 8.0).all())
    assert len(bots) and (bots["choice"] == "equal").all()


def test_honest_answers_take_at_least_the_clips_listening_time(demo):
    with demo.store.transaction() as conn:  # every clip lasts 5 s: a HIT needs 15 s of listening
        conn.execute(text("UPDATE queries SET seconds = 5.0"))
        conn.execute(text("UPDATE candidates SET seconds = 5.0"))
    crowd = get_crowd("simulated", demo)
    driver.run(demo, crowd, max_iterations=1)
    answers = demo.store.answers()
    kinds = dict(zip(crowd.pool.ids, crowd.pool.kind, strict=True))
    honest = answers["worker_id"].map(kinds) == "honest"
    assert honest.sum() > 500
    assert (answers.loc[honest, "seconds"] >= 15.0).all()
    assert (answers.loc[~honest, "seconds"] < 15.0).any()  # bots and careless workers do not listen


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"noise": "x"}, r"\[simulated\] noise must be a number in \(0, 100\], got 'x'"),
        ({"workers": 2.5}, "workers must be a whole number"),
        ({"workers": 40.0}, r"workers must be a whole number in \[1, 100000\], got 40.0"),
        ({"noise": True}, "noise must be a number"),
        ({"nosie": 1.0}, "unknown simulated-crowd setting"),
    ],
)
def test_bad_crowd_settings_are_one_clear_error(setting, message):
    with pytest.raises(InputError, match=message):
        CrowdModel.from_dict(setting)
    model = CrowdModel.from_dict({"noise": 1, "workers": 40})
    assert (model.workers, model.noise) == (40, 1.0) and isinstance(model.noise, float)


def test_bots_and_careless_workers_are_planted():
    pool = SimulatedCrowd(make_collection()[1], CrowdModel(), seed=5).pool
    assert (pool.kind == "bot").sum() == 2
    assert 0 < (pool.kind == "careless").sum() < 15


def test_contradictions_are_recorded(demo):
    driver.run(demo, get_crowd("simulated", demo))
    found = driver.query_contradictions(demo)
    assert list(found.columns) == ["query", "a", "b", "c"]
    assert set(found["query"]) <= set(demo.store.candidates()["query"])


def run_cli(*args: str, cwd: Path, **kwargs) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", "from crowdprefs.cli import main; main()", *args],
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        **kwargs,
    )


@pytest.mark.slow
def test_killed_runs_resume_to_the_same_lists(tmp_path):
    """kill -9 `crowdprefs run` at random moments; every rerun resumes to identical lists."""
    reference = create_demo_project(tmp_path / "reference")
    driver.run(reference, get_crowd("simulated", reference))
    expected = driver.lists(reference)
    expected_answers = len(reference.store.answers())
    reference.close()

    create_demo_project(tmp_path / "killed").close()
    project_dir = tmp_path / "killed" / "project"
    rng = random.Random(7)
    kills = 0
    for _ in range(8):
        process = run_cli("run", str(project_dir), cwd=tmp_path)
        time.sleep(rng.uniform(0.3, 2.5))
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            kills += 1
        process.wait()
    final = run_cli("run", str(project_dir), cwd=tmp_path)
    assert final.wait(timeout=300) == 0, final.stderr.read()
    assert kills > 0
    with Project(project_dir) as project:
        assert driver.lists(project).equals(expected)
        answers = project.store.answers()
        assert len(answers) == expected_answers
        assert answers["assignment_id"].is_unique


def test_cli_round_trip(tmp_path):
    demo_dir = tmp_path / "d"
    result = subprocess.run(
        [sys.executable, "-c", "from crowdprefs.cli import main; main()", "demo", str(demo_dir)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "iter." in result.stdout and "total" in result.stdout
    lists = read_lists(demo_dir / "lists.qrel")
    assert len(lists) == 118
    status = subprocess.run(
        [
            sys.executable,
            "-c",
            "from crowdprefs.cli import main; main()",
            "status",
            str(demo_dir / "project"),
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    report = json.loads(status.stdout)
    assert report["totals"]["closed"] == 11
    assert report["totals"]["answers"] == 10 * report["totals"]["pairs_judged"]
    assert np.isclose(report["totals"]["cost"], 0.03 * report["totals"]["answers"])


def bradley_terry_project(root: Path, sections: dict | None = None) -> Project:
    from crowdprefs.campaign.aggregate import AggregationRule
    from crowdprefs.campaign.project import Settings, init_project
    from crowdprefs.io import write_lists

    root.mkdir()
    candidates, truth = make_collection()
    candidates.to_csv(root / "candidates.csv", index=False)
    write_lists(truth, root / "truth.qrel", tag="truth")
    settings = Settings(
        aggregation=AggregationRule(rule="bradley-terry", ties="rao-kupper"),
        sections={"simulated": {"truth": "../truth.qrel"}, **(sections or {})},
    )
    return init_project(root / "project", root / "candidates.csv", settings=settings)


def test_a_bradley_terry_project_decides_each_batch_from_every_answer_so_far(tmp_path):
    from crowdprefs.campaign.aggregate import AggregationRule, fitted_verdicts, pair_verdicts
    from crowdprefs.quality.frames import project_answers

    with bradley_terry_project(tmp_path / "bt") as project:
        crowd = get_crowd("simulated", project)
        driver.run(project, crowd, max_iterations=2)
        first = project.store.pairs(1).set_index("pair_id")["verdict"]
        driver.run(project, crowd)
        assert driver.next_batch(project) is None
        pairs = project.store.pairs().set_index("pair_id")
        # earlier batches keep their verdicts; each batch's verdicts are a fit on the answers
        # of its own and earlier batches (every query and iteration, shared workers)
        assert pairs.loc[first.index, "verdict"].equals(first)
        rule = AggregationRule(rule="bradley-terry", ties="rao-kupper")
        replayed = pair_verdicts(project_answers(project), rule)["verdict"]
        assert (replayed.reindex(pairs.index) == pairs["verdict"]).all()
        last = pairs.index[pairs["iteration"] == pairs["iteration"].max()]
        verdict, p = fitted_verdicts(project.store.shown_answers(), pairs, last, rule)
        assert (verdict == pairs.loc[last, "verdict"]).all()
        assert np.allclose(p, pairs.loc[last, "p_value"])
        truth = read_lists(tmp_path / "bt" / "truth.qrel")
        merged = truth.merge(driver.lists(project), on=["query", "document"])
        tau = merged.groupby("query")[["group_x", "group_y"]].corr(method="kendall")
        assert tau.xs("group_x", level=1)["group_y"].mean() > 0.8


def test_adaptive_answers_with_the_bradley_terry_rule_are_refused_before_a_batch(tmp_path):
    with bradley_terry_project(tmp_path / "bt", {"adaptive": {"method": "curtail"}}) as project:
        with pytest.raises(InputError, match="turn one of them off"):
            driver.next_batch(project)
        assert project.store.last_batch() is None


def flag_each_round(project: Project) -> None:
    sections = dict(project.settings.sections)
    sections["review"] = {"flag_each_round": True}
    project.save_settings(dataclasses.replace(project.settings, sections=sections))


def test_flagged_workers_are_blocked_dropped_and_replaced_during_the_campaign(demo):
    flag_each_round(demo)
    crowd = get_crowd("simulated", demo)
    driver.run(demo, crowd, review=Reviewer())
    assert driver.next_batch(demo) is None
    blocks = demo.store.worker_blocks("simulated")
    kinds = dict(zip(crowd.pool.ids, crowd.pool.kind, strict=True))
    assert "bot" in {kinds[w] for w in blocks["worker_id"]}  # the robots' constant time
    assert blocks["applied_at"].notna().all()
    answers = demo.store.answers(include_rejected=True)
    pairs = demo.store.pairs().set_index("pair_id")
    answers["iteration"] = answers["pair_id"].map(pairs["iteration"])
    theirs = answers["worker_id"].isin(blocks["worker_id"])
    # Blocked workers are drawn no more: their answers of the batch in which they were flagged
    # are dropped, kept in the state with the rule that flagged them as the reason; their
    # answers of batches aggregated before stay, as the verdicts made from them do.
    flagged_in = answers[theirs].groupby("worker_id")["iteration"].transform("max")
    last = answers[theirs]["iteration"] == flagged_in
    dropped, before = answers[theirs][last], answers[theirs][~last]
    assert len(dropped) and (dropped["status"] == "rejected").all()
    assert len(before) and (before["status"] == "submitted").all()
    reviews = demo.store.reviews("simulated").set_index("assignment_id")
    assert set(reviews["decision"]) == {"drop"} and set(reviews.index) == set(
        dropped["assignment_id"]
    )
    reasons = dropped["assignment_id"].map(reviews["reason"])
    assert reasons.str.contains("constant-time|low-agreement|too-fast|constant-answer").all()
    # A pair was asked again for answers dropped while its batch was open, from other workers.
    stored = answers.groupby("pair_id").size().reindex(pairs.index, fill_value=0)
    assert (stored >= pairs["answers_wanted"]).all() and (stored > pairs["answers_wanted"]).any()
    last = pairs[pairs["iteration"] == pairs["iteration"].max()]
    counted = answers[answers["status"] != "rejected"].groupby("pair_id").size()
    assert counted.reindex(last.index, fill_value=0).eq(last["answers_wanted"]).all()
    assert not answers.duplicated(["pair_id", "worker_id"]).any()


def test_without_the_setting_the_review_leaves_an_unpaid_crowd_alone(demo):
    driver.run(demo, get_crowd("simulated", demo), review=Reviewer())
    assert demo.store.worker_blocks().empty and demo.store.reviews().empty
    assert len(demo.store.answers()) == 10 * len(demo.store.pairs())


class PaidSimulatedCrowd(SimulatedCrowd):
    """The simulated crowd offering a paying crowd's review calls, recording them."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[tuple[str, str]] = []

    def block_worker(self, worker_id: str, reason: str) -> None:
        self.calls.append(("block", worker_id))

    def reject_assignment(self, assignment_id: str, reason: str) -> None:
        self.calls.append(("reject", assignment_id))

    def approve_assignment(self, assignment_id: str) -> None:
        self.calls.append(("approve", assignment_id))

    def add_assignments(self, hit_id: str, before: int, after: int) -> None:
        self.calls.append(("extend", hit_id))


def test_a_paying_crowd_pays_dropped_answers_and_blocks_their_workers(demo):
    """Answers dropped by the flags of the campaign are approved for payment, never rejected;
    the review's own rules (bots, failed checks) still reject, as before."""
    flag_each_round(demo)
    crowd = PaidSimulatedCrowd.for_project(demo)
    driver.run(demo, crowd, review=Reviewer())
    calls = pd.DataFrame(crowd.calls, columns=["call", "id"])
    reviews = demo.store.reviews("simulated")
    dropped = set(reviews.loc[reviews["decision"] == "drop", "assignment_id"])
    rejected = set(reviews.loc[reviews["decision"] == "reject", "assignment_id"])
    assert dropped and rejected
    sent = calls.groupby("call")["id"].agg(set)
    assert dropped <= sent["approve"]
    assert not dropped & sent["reject"]
    assert sent["reject"] == rejected
    assert sent["block"] == set(demo.store.worker_blocks("simulated")["worker_id"])
    assert reviews["applied_at"].notna().all()
    assert driver.next_batch(demo) is None
