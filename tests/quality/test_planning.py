"""Planning: the vectorised sort equals replay, the fast crowd matches the simulated crowd,
campaign totals, list-quality measures and the ``plan`` command."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from crowdprefs.campaign import driver
from crowdprefs.campaign.adaptive import StoppingRule
from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.campaign.sorting import replay
from crowdprefs.cli.app import app
from crowdprefs.crowds import get_crowd
from crowdprefs.demo import create_demo_project, make_collection
from crowdprefs.errors import InputError
from crowdprefs.io import write_lists
from crowdprefs.quality.crowd_model import CrowdModel, WorkerPool, simulate_answers
from crowdprefs.quality.plan_campaign import _campaign_adr, _relations
from crowdprefs.quality.planning import (
    SUMMARY_COLUMNS,
    Collection,
    Design,
    compare_designs,
    list_adr,
    simulate,
    simulate_campaign,
    simulate_designs,
    sort_rounds,
    summarize,
)


def _hashed_verdict(x: np.ndarray, y: np.ndarray, salt: int) -> np.ndarray:
    """A fixed, arbitrary (even non-transitive) verdict for every ordered pair of items."""
    lo, hi = np.minimum(x, y), np.maximum(x, y)
    value = (lo * 7919 + hi * 104729 + salt * 31) % 3 - 1
    return np.where(x < y, value, -value)


@pytest.mark.parametrize("prior", [False, True], ids=["last-pivot", "prior-pivot"])
@pytest.mark.parametrize("salt", range(4))
def test_vectorised_sort_equals_replay_batch_for_batch(salt, prior):
    """Batch for batch, the vectorised sort is the replay, with the plain pivot rule and with a
    prior's (scores with ties, so the tie rule is checked too)."""
    rng = np.random.default_rng(salt)
    sizes = rng.integers(2, 16, 12)
    query = np.repeat(np.arange(len(sizes)), sizes)
    position = rng.random(len(query))
    score = rng.integers(0, 5, len(query)).astype(float) if prior else None
    group, iterations, asked = sort_rounds(
        query, position, lambda x, y: _hashed_verdict(x, y, salt), score
    )
    total = 0
    for q in range(len(sizes)):
        items = np.flatnonzero(query == q)
        order = items[np.argsort(position[items])].tolist()
        scores = None if score is None else {i: score[i] for i in order}
        known: dict = {}
        rounds = 0
        while True:
            state = replay(order, known, scores)
            if state.closed:
                break
            rounds += 1
            for x, y in state.needed:
                known[(x, y)] = int(_hashed_verdict(np.array([x]), np.array([y]), salt)[0])
                total += 1
        expected = {d: g for g, members in enumerate(state.groups(), 1) for d in members}
        assert [expected[i] for i in items] == group[items].tolist()
        assert iterations[q] == rounds
    assert asked == total


def test_seed_002_table_1_example():
    """Table 1: C, D, E, A, G, B, F sorts into (A, B, C), (D, E), (F, G) in four iterations."""
    names = list("CDEAGBF")
    truth = {"A": 1, "B": 1, "C": 1, "D": 2, "E": 2, "F": 3, "G": 3}
    level = np.array([truth[n] for n in names])
    group, iterations, asked = sort_rounds(
        np.zeros(7, dtype=np.int64),
        np.arange(7.0),
        lambda x, y: np.sign(level[y] - level[x]),
    )
    assert dict(zip(names, group.tolist(), strict=True)) == truth
    assert iterations.tolist() == [3]  # the fourth row of Table 1 asks nothing
    assert asked == 6 + 4 + 2


def test_worker_shares_match_the_simulated_crowd():
    """The planner's per-worker answer shares (``WorkerPool.shares``) are those of the core
    simulated crowd: over its answers, the mean planned share of each choice at the answer's
    worker and gap equals the observed share."""
    model = CrowdModel()
    pool = WorkerPool.draw(model, 4)
    similarity = {("q", "a"): 0.0, ("q", "b"): -1.0, ("q", "c"): -2.0}
    cases = [("a", "a"), ("a", "b"), ("b", "a"), ("a", "c")]  # gaps 0, +1, −1, +2
    n = 2000
    x = np.array([c[0] for c in cases] * n)
    y = np.array([c[1] for c in cases] * n)
    a_is_x = np.arange(len(x)) // len(cases) % 2 == 0
    pairs = pd.DataFrame(
        {
            "pair_id": np.arange(len(x)),
            "query": "q",
            "x": x,
            "y": y,
            "a_is_x": a_is_x.astype(int),
            "answers_wanted": 4,
        }
    )
    core = simulate_answers(pairs, similarity, pool, model, seed=4)
    row = core["pair_id"].to_numpy()
    gap = np.array([similarity[("q", a)] - similarity[("q", b)] for a, b in zip(x, y, strict=True)])
    gap_a = np.where(a_is_x, gap, -gap)[row]
    worker = pd.Index(pool.ids).get_indexer(core["worker_id"])
    planned = pool.shares(np.arange(-2, 3))[worker, gap_a.astype(int) + 2]
    for case in range(len(cases)):
        rows = row % len(cases) == case
        for slot, choice in enumerate(("A", "equal", "B")):
            observed = (core["choice"][rows] == choice).mean()
            assert abs(observed - planned[rows, slot].mean()) < 0.02, (case, choice)


def test_workers_persist_and_answer_a_pair_once():
    """A recorded campaign: each pair's answers come from distinct workers of one pool, the
    busiest worker gives at most one answer per pair, and sides follow the pivot share."""
    _, truth = make_collection(2010)
    collection = Collection.from_truth(truth)
    design = Design(pivot_b_share=0.74)
    campaign = simulate_campaign(collection, design, CrowdModel(activity=1.5), seed=6, record=True)
    log = campaign.answers
    assert not log.duplicated(["pair", "worker"]).any()
    assert log["worker"].max() < len(campaign.pool.ids)
    busiest = log["worker"].value_counts()
    assert busiest.iloc[0] <= log["pair"].nunique()
    assert busiest.iloc[0] / log["pair"].nunique() > 0.5  # Zipf 1.5: the head answers most pairs
    sides = log.groupby("pair")["a_is_x"].first()
    assert sides.mean() == pytest.approx(0.74, abs=0.08)
    assert log.groupby("iteration")["worker"].nunique().min() > 1
    per = campaign.per_iteration
    assert per["pairs"].sum() == campaign.summary["pairs"]
    assert per[["A", "equal", "B"]].to_numpy().sum() == campaign.summary["answers"]


def test_designs_on_the_same_seeds_get_the_same_answers():
    """Exact curtailment on the same campaign seeds gives the fixed design's lists (paired
    answers), with fewer answers; pipelining segments leaves a fixed design's rounds alone and
    never adds rounds to an adaptive one."""
    _, truth = make_collection(2010)
    collection = Collection.from_truth(truth)
    margin = AggregationRule(rule="margin", margin=2)
    fixed = Design(10, margin)
    curtailed = Design(10, margin, StoppingRule(method="curtail", step=1, aggregation=margin))
    for seed in range(3):
        a = simulate_campaign(collection, fixed, seed=seed)
        b = simulate_campaign(collection, curtailed, seed=seed)
        np.testing.assert_array_equal(a.group, b.group)
        assert b.summary["answers"] < a.summary["answers"]
        assert a.summary["rounds_pipelined"] == a.summary["rounds"]
        assert a.summary["wall_hours_pipelined"] == pytest.approx(a.summary["wall_hours"])
        assert b.summary["rounds_pipelined"] <= b.summary["rounds"]
        assert b.summary["rounds"] > a.summary["rounds"]
    table = compare_designs(
        simulate_designs(truth, {"fixed": fixed, "curtail": curtailed}, campaigns=4), "fixed"
    )
    assert table.loc[("curtail", "adr"), "delta"] == 0.0
    assert table.loc[("curtail", "answers"), "delta_high"] < 0


def test_flagging_blocks_careless_workers_and_pays_for_their_replacements():
    """With ``flag_each_round`` the campaign's flag rules block mostly careless workers and
    bots; their answers are dropped, paid and replaced, so a pair gets more answers and more
    rounds; the lists come out closer to the truth than without flagging on the same seeds."""
    _, truth = make_collection(2010)
    collection = Collection.from_truth(truth)
    model = CrowdModel(careless_share=0.3, careless_seconds=20.0)
    plain, flagged = Design(), Design(flag_each_round=True)
    adr = []
    for seed in range(3):
        a = simulate_campaign(collection, plain, model, seed=seed)
        b = simulate_campaign(collection, flagged, model, seed=seed)
        assert len(a.blocked) == 0 and len(b.blocked) >= 3
        kinds = WorkerPool.draw(model, seed).kind[b.blocked]
        assert (kinds != "honest").mean() >= 0.75
        assert b.summary["answers"] > 10 * b.summary["pairs"]
        assert b.summary["rounds"] > b.summary["iterations"]
        assert b.summary["cost"] > a.summary["cost"] * b.summary["pairs"] / a.summary["pairs"]
        adr.append(b.summary["adr"] - a.summary["adr"])
    assert np.mean(adr) > 0


def test_campaign_totals_and_lists():
    _, truth = make_collection(2010)
    collection = Collection.from_truth(truth)
    campaign = simulate_campaign(collection, Design(), seed=3)
    s = campaign.summary
    assert s["answers"] == 10 * s["pairs"]
    assert s["cost"] == pytest.approx(s["answers"] * 0.03)  # $0.02 + max($0.01, 40% fee)
    assert 3 <= s["iterations"] <= 10 and s["wall_hours"] > 0 and s["rounds"] == s["iterations"]
    lists = campaign.lists(collection)
    assert len(lists) == 118
    assert lists.groupby("query")["group"].min().eq(1).all()
    adaptive = simulate_campaign(collection, Design(adaptive=StoppingRule()), seed=3).summary
    assert adaptive["answers"] < 10 * adaptive["pairs"]


def test_relations_and_adr_of_perfect_and_reversed_lists():
    truth = pd.DataFrame({"query": "q", "document": list("ABCDE"), "group": [1, 1, 1, 2, 2]})
    collection = Collection.from_truth(truth)
    perfect = _relations(collection, collection.group)
    assert perfect == {"order_recovered": 1.0, "ties_kept": 1.0}
    reversed_ = _relations(collection, 3 - collection.group)
    assert reversed_["order_recovered"] == 0.0
    assert list_adr(truth, truth)[0, 0] == pytest.approx(1.0)


def test_campaign_adr_equals_adr_through_judge():
    """The fast ADR of a campaign equals measures.judge + ADR on the same (tie-free) lists."""
    _, truth = make_collection(2010)
    collection = Collection.from_truth(truth)
    rng = np.random.default_rng(8)
    produced = np.empty(len(collection.query), dtype=np.int64)
    for q in range(len(collection.queries)):
        rows = np.flatnonzero(collection.query == q)
        produced[rows] = rng.permutation(len(rows)) + 1
    fast = _campaign_adr(collection, produced, np.random.default_rng(0))
    frame = pd.DataFrame(
        {
            "query": collection.queries[collection.query],
            "document": collection.documents,
            "group": produced,
        }
    )
    np.testing.assert_allclose(fast, list_adr(frame, truth)[0], atol=1e-12)
    perfect = _campaign_adr(collection, collection.group, np.random.default_rng(0))
    np.testing.assert_allclose(perfect, 1.0)


def test_list_adr_reproduces_seed_002_example():
    """Seed 002 §5.4: truth ⟨(A,B,C),(D,E)⟩, results ⟨A,B,D,E,C⟩ give ADR 0.933."""
    truth = pd.DataFrame({"query": "q", "document": list("ABCDE"), "group": [1, 1, 1, 2, 2]})
    produced = pd.DataFrame({"query": "q", "document": list("ABDEC"), "group": [1, 2, 3, 4, 5]})
    assert list_adr(produced, truth)[0, 0] == pytest.approx(0.9333, abs=1e-4)


def test_simulate_and_summarize():
    _, truth = make_collection(2010, sizes=(5, 8, 12))
    frame = simulate(truth, Design(), campaigns=6, seed=2)
    assert list(frame.columns) == SUMMARY_COLUMNS and len(frame) == 6
    again = simulate(truth, Design(), campaigns=6, seed=2)
    pd.testing.assert_frame_equal(frame, again)
    summary = summarize(frame)
    assert (summary["ci_low"] <= summary["mean"]).all()
    assert (frame["adr"].between(0, 1)).all()


def test_plan_command_compares_designs_side_by_side(tmp_path):
    candidates, truth = make_collection(2010, sizes=(5, 8, 12))
    candidates.to_csv(tmp_path / "c.csv", index=False)
    write_lists(truth, tmp_path / "t.qrel")
    runner = CliRunner()
    result = runner.invoke(
        app,
        [
            "plan",
            "--candidates",
            str(tmp_path / "c.csv"),
            "--truth",
            str(tmp_path / "t.qrel"),
            "--campaigns",
            "5",
            "--adaptive",
            "sequential",
            "--output",
            str(tmp_path / "runs.csv"),
        ],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "ADR vs truth" in result.output and "per-look" in result.output
    assert "10 answers, Mann-Whitney 0.05" in result.output and "Δ sequential" in result.output
    runs = pd.read_csv(tmp_path / "runs.csv")
    assert len(runs) == 10 and set(runs["design"]) == {
        "10 answers, Mann-Whitney 0.05",
        "sequential (4+2…10)",
    }
    curtail = runner.invoke(
        app,
        [
            "plan",
            "--candidates",
            str(tmp_path / "c.csv"),
            "--campaigns",
            "2",
            "--rule",
            "margin",
            "--adaptive",
            "curtail",
            "--epsilon",
            "0.2",
            "--maximum",
            "12",
            "--initial",
            "3",
            "--step",
            "1",
            "--flag-each-round",
        ],
        env={"COLUMNS": "250"},
    )
    assert curtail.exit_code == 0, curtail.output
    assert "curtail ε=0.2 (3+1…12)" in curtail.output and "segments pipelined" in curtail.output
    assert "Δ curtail ε=0.2 (3+1…12) + flag and block" in curtail.output


def test_plan_refuses_a_bad_epsilon_in_one_line(tmp_path, cli):
    candidates, _ = make_collection(2010, sizes=(5, 8))
    candidates.to_csv(tmp_path / "c.csv", index=False)
    code, out, err = cli(
        "plan", "--candidates", tmp_path / "c.csv", "--adaptive", "curtail", "--epsilon", "0.7"
    )
    assert code != 0 and "epsilon must be a number in [0, 0.5)" in err and "Traceback" not in err


@pytest.mark.slow
def test_plan_agrees_with_campaigns_through_the_driver(tmp_path):
    """The in-memory plan and real campaigns (SQLite, the simulated crowd backend, distinct
    workers per pair) buy the same numbers of pairs and answers, fixed and adaptive."""
    _, truth = make_collection(2010)
    for adaptive in (None, {"method": "sequential"}):
        measured = []
        for seed in range(3):
            project = create_demo_project(tmp_path / f"{adaptive is None}-{seed}")
            sections = dict(project.settings.sections)
            sections["simulated"] = {**sections["simulated"], "seed": 100 + seed}
            if adaptive:
                sections["adaptive"] = adaptive
            project.save_settings(dataclasses.replace(project.settings, sections=sections))
            with project:
                driver.run(project, get_crowd("simulated", project))
                totals = driver.status(project)["totals"]
                measured.append((totals["pairs_judged"], totals["answers"]))
        design = Design(adaptive=StoppingRule() if adaptive else None)
        planned = simulate(truth, design, campaigns=30, seed=5)
        pairs, answers = np.mean(measured, axis=0)
        assert pairs == pytest.approx(planned["pairs"].mean(), rel=0.05)
        assert answers == pytest.approx(planned["answers"].mean(), rel=0.06)


def test_the_bradley_terry_rule_is_simulated_as_the_driver_runs_it():
    """Each simulated batch is decided by one fit on every answer of the campaign so far: the
    recorded answers, refitted batch by batch, sort the collection into the same lists."""
    from crowdprefs.campaign.bradley_terry import fit_verdicts

    _, truth = make_collection(7)
    collection = Collection.from_truth(truth)
    bt = AggregationRule(rule="bradley-terry", ties="rao-kupper")
    campaign = simulate_campaign(collection, Design(4, bt), seed=5, record=True)
    log = campaign.answers
    n = len(collection.query)
    batches = iter(sorted(log["iteration"].unique()))

    def refitted(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        so_far = log[log["iteration"] <= next(batches)]
        a_is_x = so_far["a_is_x"].to_numpy(bool)
        sx, sy = so_far["x"].to_numpy(), so_far["y"].to_numpy()
        return fit_verdicts(
            np.where(a_is_x, sx, sy), np.where(a_is_x, sy, sx), 1 - so_far["choice"].to_numpy(),
            so_far["worker"].to_numpy(), collection.query, x, y,
            n_items=n, n_workers=len(campaign.pool.ids), ties="rao-kupper",
        )[0]  # fmt: skip

    position = np.random.default_rng([5, 0x91A7]).random(n)
    group, _, _ = sort_rounds(collection.query, position, refitted)
    np.testing.assert_array_equal(group, campaign.group)
    assert campaign.summary["adr"] > 0.85
    with pytest.raises(InputError, match="use one or the other"):
        Design(aggregation=bt, adaptive=StoppingRule())
    with pytest.raises(InputError, match="plan one or the other"):
        Design(aggregation=bt, flag_each_round=True)


def test_the_fragility_design_leaves_no_fragile_verdict_below_its_maximum():
    """Pairs one changed answer would flip get two answers more per round, up to 14, as the
    driver asks them: none is left fragile below 14, at the price of answers and rounds."""
    from crowdprefs.campaign.adaptive import FragilityRule
    from crowdprefs.campaign.aggregate import fewest_changes

    _, truth = make_collection(2010)
    collection = Collection.from_truth(truth)
    margin = AggregationRule(rule="margin", margin=2)
    fixed = Design(10, margin)
    rule = FragilityRule(min_flips=2, step=2, maximum=14, aggregation=margin)
    sturdy = dataclasses.replace(fixed, fragility=rule)
    assert sturdy.most_answers == 14
    for seed in range(2):
        plain = simulate_campaign(collection, fixed, seed=seed)
        campaign = simulate_campaign(collection, sturdy, seed=seed, record=True)
        log = campaign.answers
        x_side = np.where(log["a_is_x"], 0, 2)
        more = (log["choice"] == x_side).groupby(log["pair"]).sum()
        less = (log["choice"] == 2 - x_side).groupby(log["pair"]).sum()
        n = log.groupby("pair").size()
        equal = n - more - less
        assert set(n) <= {10, 12, 14} and (n > 10).any()
        flips = fewest_changes(more, equal, less, margin)[1]
        assert (n[(flips >= 0) & (flips < 2)] == 14).all()
        assert campaign.summary["answers"] == n.sum() > plain.summary["answers"]
        assert campaign.summary["rounds"] > plain.summary["rounds"]
    with pytest.raises(InputError, match="design's own rule"):
        Design(10, AggregationRule(), fragility=rule)


def test_plan_min_flips_shows_the_design_beside_the_others_the_same_on_any_jobs(tmp_path):
    from console_script import crowdprefs

    candidates, truth = make_collection(2010, sizes=(5, 8, 12))
    candidates.to_csv(tmp_path / "c.csv", index=False)
    write_lists(truth, tmp_path / "t.qrel")
    common = ["plan", "--candidates", tmp_path / "c.csv", "--truth", tmp_path / "t.qrel"]
    common += ["--rule", "margin", "--min-flips", "2", "--campaigns", "6"]
    runs = [
        crowdprefs(*common, "--jobs", jobs, "--output", tmp_path / f"{jobs}.csv") for jobs in (1, 2)
    ]
    assert [run.returncode for run in runs] == [0, 0], runs[0].stderr + runs[1].stderr
    assert runs[0].stdout == runs[1].stdout
    assert (tmp_path / "1.csv").read_bytes() == (tmp_path / "2.csv").read_bytes()
    name = "10 answers, margin 2 + no verdict one answer flips"
    assert f"Δ {name}" in runs[0].stdout
    frame = pd.read_csv(tmp_path / "1.csv")
    assert list(frame["design"].unique()) == ["10 answers, margin 2", name]
    means = frame.groupby("design", sort=False)["answers"].mean()
    assert means[name] > means["10 answers, margin 2"]
    for extra, says in [
        (["--min-flips", "1"], "min_flips = 1 asks no further answers"),
        (["--min-flips", "2", "--fragile-step", "0"], "in [1, 1000] ([fragility] step), got 0"),
        (["--rule", "bradley-terry", "--min-flips", "2"], "turn one of them off"),
    ]:
        done = crowdprefs("plan", "--candidates", tmp_path / "c.csv", "--campaigns", "2", *extra)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
        assert len(lines) == 1 and says in lines[0], done.stderr


@pytest.mark.slow
def test_plan_agrees_with_fragility_campaigns_through_the_driver(tmp_path):
    """With ``[fragility] min_flips = 2`` the plan and real campaigns buy the same answers."""
    from crowdprefs.campaign.adaptive import FragilityRule

    _, truth = make_collection(2010)
    measured = []
    for seed in range(3):
        project = create_demo_project(tmp_path / str(seed))
        sections = dict(project.settings.sections)
        sections["simulated"] = {**sections["simulated"], "seed": 100 + seed}
        sections["fragility"] = {"min_flips": 2}
        project.save_settings(dataclasses.replace(project.settings, sections=sections))
        with project:
            driver.run(project, get_crowd("simulated", project))
            totals = driver.status(project)["totals"]
            measured.append((totals["pairs_judged"], totals["answers"]))
    design = Design(fragility=FragilityRule(2, 2, 20, AggregationRule()))
    planned = simulate(truth, design, campaigns=30, seed=5)
    pairs, answers = np.mean(measured, axis=0)
    assert pairs == pytest.approx(planned["pairs"].mean(), rel=0.05)
    assert answers == pytest.approx(planned["answers"].mean(), rel=0.06)
