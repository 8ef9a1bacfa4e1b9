"""A campaign that knows its systems, through the console script: init --runs, batches that ask
only what can change how two systems compare, status, evaluate on unfinished lists, export."""

from __future__ import annotations

import json
import tomllib

import pandas as pd
import pytest
import tomli_w
from console_script import crowdprefs

from crowdprefs.campaign import driver
from crowdprefs.campaign import systems as S
from crowdprefs.campaign.project import CONFIG_NAME, Project
from crowdprefs.demo import example_runs, make_collection
from crowdprefs.evaluation.measures import score
from crowdprefs.io import read_runs, write_lists, write_runs


def collection(tmp_path):
    """Candidates, truth and five graded systems' runs in ``tmp_path``."""
    candidates, truth = make_collection(2010)
    candidates.to_csv(tmp_path / "candidates.csv", index=False)
    write_lists(truth, tmp_path / "truth.qrel", tag="truth")
    write_runs(example_runs(truth), tmp_path / "runs.txt")
    return tmp_path / "candidates.csv", tmp_path / "runs.txt"


def simulated(folder, truth) -> None:
    config = folder / CONFIG_NAME
    data = tomllib.loads(config.read_text())
    data["simulated"] = {"truth": str(truth)}
    config.write_text(tomli_w.dumps(data))


def test_a_campaign_that_knows_its_systems_asks_less_and_stops_when_they_are_ranked(
    tmp_path, engine
):
    candidates, runs = collection(tmp_path)
    folder = tmp_path / "ranked"
    database = [] if engine is None else ["--database", engine]
    made = crowdprefs("init", folder, "--candidates", candidates, "--runs", runs, *database)
    assert made.returncode == 0, made.stderr
    assert "ranking its systems by ADR@5" in made.stdout
    assert tomllib.loads((folder / CONFIG_NAME).read_text())["systems"] == {
        "runs": "runs.txt",
        "measure": "ADR@5",
    }
    (tmp_path / "runs.txt").unlink()  # the project keeps its own copy
    simulated(folder, tmp_path / "truth.qrel")
    ran = crowdprefs("run", folder)
    assert ran.returncode == 0, ran.stderr

    full = tmp_path / "full"
    assert crowdprefs("init", full, "--candidates", candidates).returncode == 0
    simulated(full, tmp_path / "truth.qrel")
    assert crowdprefs("run", full).returncode == 0
    with Project(folder) as project, Project(full) as whole:
        asked, everything = project.store.answer_total(), whole.store.answer_total()
        assert asked < 0.9 * everything
        states = driver.sort_states(project)
        assert any(not state.closed for state in states.values())  # left partly sorted
        standing = driver.system_status(project, 99)
        assert standing["undecided"] == 0 and standing["next_pairs"] == 0
        # batch 1 compares each query's candidates with its consensus 5th place (the systems'
        # mean reciprocal rank in their top 5; never below the median), which the full sort's
        # random pivot is not
        first = project.store.pairs(1)
        consensus = reciprocal_votes(project.root / "runs.txt")
        for query, pairs in first.groupby("query"):
            pivot = pairs["y"].iloc[0]
            assert (pairs["y"] == pivot).all() and len(pairs) == states[query].size - 1
            votes = consensus.reindex([*pairs["x"], pivot], fill_value=0.0)
            place = min(5, (len(votes) + 1) // 2)
            assert votes[pivot] == votes.sort_values(ascending=False).iloc[place - 1]
        theirs = whole.store.pairs(1).groupby("query")["y"].first()
        assert (first.groupby("query")["y"].first() != theirs).any()

    status = crowdprefs("status", folder)
    assert status.returncode == 0
    assert "systems:  0 of 10 pairs of 5 systems undecided by ADR@5 at 0.95" in status.stdout
    assert "next batch: 0 pairs, 0 answers, $0.00" in status.stdout
    assert "the systems' ranking needs nothing more" in status.stdout

    evaluated = crowdprefs(
        "evaluate", "--truth", folder, "--runs", folder / "runs.txt", "-m", "ADR@5", "-m", "P@5",
        "--format", "json",
    )  # fmt: skip
    assert evaluated.returncode == 0, evaluated.stderr
    assert "P@5 is not scored on the unfinished lists" in evaluated.stderr
    part = json.loads(evaluated.stdout)["unfinished"][0]
    assert part["measure"] == "ADR@5" and part["draws"] == 1000
    systems = [row["system"] for row in part["systems"]]
    assert all(row["low"] <= row["mean"] <= row["high"] for row in part["systems"])
    assert len(part["pairs"]) == 10 and all(row["decided"] for row in part["pairs"])
    exported = crowdprefs("export", folder, "--partial", "-o", tmp_path / "lists.qrel")
    assert exported.returncode == 0
    assert "unsorted groups (their members' order was not asked), in" in exported.stdout
    # finishing the lists (the same campaign without [systems]) keeps every decided order
    config = folder / CONFIG_NAME
    data = tomllib.loads(config.read_text())
    del data["systems"]
    config.write_text(tomli_w.dumps(data))
    assert crowdprefs("run", folder).returncode == 0
    with Project(folder) as project:
        assert all(state.closed for state in driver.sort_states(project).values())
        finished = score(read_runs(folder / "runs.txt"), driver.lists(project), ["ADR@5"])
    means = finished.groupby("system")["score"].mean().sort_values(ascending=False)
    assert systems == means.index.tolist()
    assert systems[2:] == ["sys-C", "sys-D", "sys-E"]  # graded by their noise


def reciprocal_votes(runs) -> pd.Series:
    """Each (query, document)'s mean reciprocal rank over the systems' top 5, by document."""
    frame = read_runs(runs)
    frame = frame[frame["rank"] <= 5]
    votes = (1 / frame["rank"]).groupby(frame["document"]).sum()
    return votes / frame["system"].nunique()


def test_the_unfinished_lists_score_like_the_finished_ones_where_nothing_is_open(tmp_path):
    """On a project whose open parts are closed, the drawn scores are the measures' own."""
    candidates, runs = collection(tmp_path)
    folder = tmp_path / "p"
    made = crowdprefs("init", folder, "--candidates", candidates, "--budget", "70")
    assert made.returncode == 0
    simulated(folder, tmp_path / "truth.qrel")
    crowdprefs("run", folder)  # a few batches, then the budget stops it
    from crowdprefs.campaign.ranking import project_standing

    with Project(folder) as project:
        standing = project_standing(
            project, runs=read_runs(runs), measure=S.RankMeasure("AG", 5), samples=50
        )
        lists = driver.lists(project, partial=True)
    drawn = standing.drawn  # draws × systems × queries
    states = driver_states(folder)
    closed = [q for q, s in states.items() if s.closed]
    assert closed and len(closed) < len(states)
    expected = score(read_runs(runs), lists, ["AG@5"])
    for q in closed:
        i = standing.queries.index(q)
        for s, name in enumerate(standing.runs.systems):
            value = expected[(expected["query"] == q) & (expected["system"] == name)]["score"]
            assert drawn[:, s, i] == pytest.approx(float(value.iloc[0]))


def test_a_replay_of_a_system_driven_campaign_rebuilds_its_batches_and_lists(tmp_path):
    """The consensus first pivots live in the project (its candidate order), so every replay
    from the seed asks what the campaign asked: each batch is whole segments of the sort
    replayed on the verdicts before it, and status, export and the sort cache agree."""
    from crowdprefs.campaign.sorting import initial_orders, replay

    candidates, runs = collection(tmp_path)
    folder = tmp_path / "ranked"
    assert crowdprefs("init", folder, "--candidates", candidates, "--runs", runs).returncode == 0
    simulated(folder, tmp_path / "truth.qrel")
    assert crowdprefs("run", folder).returncode == 0
    exported = crowdprefs("export", folder, "--partial", "-o", tmp_path / "lists.qrel")
    assert exported.returncode == 0, exported.stderr
    with Project(folder) as project:
        store = project.store
        orders = initial_orders(store.candidate_orders(), project.seed)
        asked = store.pairs()
        asked = asked[asked["kind"] == "sort"]
        batches = sorted(asked["iteration"].unique())
        assert len(batches) >= 2
        for iteration in batches:
            before = asked[asked["iteration"] < iteration]
            batch = asked[asked["iteration"] == iteration]
            for query, pairs in batch.groupby("query"):
                known = before[before["query"] == query]
                pairs_known = zip(known["x"], known["y"], strict=True)
                verdicts = dict(zip(pairs_known, known["verdict"], strict=True))
                needed = replay(orders[query], verdicts).needed
                wanted = {pair for pair in needed if pair[1] in set(pairs["y"])}
                assert set(zip(pairs["x"], pairs["y"], strict=True)) == wanted
        replayed = {q: replay(orders[q], v).groups() for q, v in store.verdict_maps().items()}
        states = driver.sort_states(project)
        assert {q: s.groups() for q, s in states.items() if q in replayed} == replayed
        lists = driver.lists(project, partial=True)
    from crowdprefs.io import read_lists

    written = read_lists(tmp_path / "lists.qrel")
    key = ["query", "document", "group"]
    pd.testing.assert_frame_equal(
        written[key].sort_values(key, ignore_index=True).astype(str),
        lists[key].sort_values(key, ignore_index=True).astype(str),
    )
    status = crowdprefs("status", folder)
    assert status.returncode == 0 and "0 of 10 pairs of 5 systems undecided" in status.stdout


def test_curtailed_answers_rank_the_systems_with_fewer_answers(tmp_path):
    """[adaptive] beside [systems]: exact curtailment stops a pair once no further answer can
    change its verdict, so the campaign decides every pair of systems, in the same order, with
    fewer answers than with the fixed ten."""
    candidates, runs = collection(tmp_path)
    orders = {}
    answers = {}
    for name, extra in (("fixed", {}), ("curtailed", {"adaptive": {"method": "curtail"}})):
        folder = tmp_path / name
        made = crowdprefs("init", folder, "--candidates", candidates, "--runs", runs)
        assert made.returncode == 0, made.stderr
        config = folder / CONFIG_NAME
        config.write_text(tomli_w.dumps(tomllib.loads(config.read_text()) | extra))
        simulated(folder, tmp_path / "truth.qrel")
        ran = crowdprefs("run", folder)
        assert ran.returncode == 0, ran.stderr
        status = crowdprefs("status", folder)
        assert "0 of 10 pairs of 5 systems undecided" in status.stdout, status.stdout
        with Project(folder) as project:
            standing = driver.system_status(project, 99)
            answers[name] = project.store.answer_total()
        assert standing["undecided"] == 0
        evaluated = crowdprefs(
            "evaluate", "--truth", folder, "--runs", folder / "runs.txt", "--format", "json"
        )
        assert evaluated.returncode == 0, evaluated.stderr
        part = json.loads(evaluated.stdout)["unfinished"][0]
        orders[name] = [row["system"] for row in part["systems"]]
    assert answers["curtailed"] < answers["fixed"]
    assert orders["curtailed"] == orders["fixed"]


def test_without_runs_the_full_sort_starts_from_the_seeds_own_order(tmp_path):
    """No runs, no change: the candidates stay in CSV order and batch 1 compares every
    candidate with the last of the seed's initial order of that CSV order."""
    from crowdprefs.campaign.sorting import initial_order

    candidates, _ = collection(tmp_path)
    folder = tmp_path / "full"
    assert crowdprefs("init", folder, "--candidates", candidates).returncode == 0
    assert crowdprefs("next", folder).returncode == 0
    frame = pd.read_csv(candidates, dtype=str)
    with Project(folder) as project:
        held = project.store.candidate_orders()
        first = project.store.pairs(1)
        seed = project.seed
    for query, documents in frame.groupby("query", sort=False)["document"]:
        assert held[query] == documents.tolist()
        order = initial_order(documents.tolist(), seed, query)
        pairs = first[first["query"] == query]
        assert set(zip(pairs["x"], pairs["y"], strict=True)) == {(d, order[-1]) for d in order[:-1]}


def driver_states(folder):
    with Project(folder) as project:
        return driver.sort_states(project)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--measure", "P@5"], "systems are ranked by ADR@k, AG@k or nDCG@k"),
        (["--measure", "ADR@0"], "the cutoff must be in [1, 1000]"),
        (["--runs", "OTHER"], "no run has a result for a query of the campaign"),
        (["--runs", "MISSING"], "MISSING"),
    ],
)
def test_init_refuses_bad_runs_or_measures_in_one_line_and_writes_nothing(tmp_path, extra, message):
    candidates, runs = collection(tmp_path)
    (tmp_path / "OTHER").write_text("sysX qZZ docA\n")
    extra = [str(tmp_path / e) if e in ("OTHER", "MISSING") else e for e in extra]
    if "--runs" not in extra and extra[0] == "--measure":
        extra = ["--runs", runs, *extra]
    done = crowdprefs("init", tmp_path / "p", "--candidates", candidates, *extra)
    assert done.returncode != 0
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert not (tmp_path / "p").exists()


def test_measure_without_runs_and_a_bad_systems_setting_are_refused(tmp_path):
    candidates, runs = collection(tmp_path)
    done = crowdprefs("init", tmp_path / "p", "--candidates", candidates, "--measure", "AG@5")
    assert done.returncode != 0 and "give --runs" in done.stderr
    done = crowdprefs(
        "init", tmp_path / "p", "--candidates", candidates, "--runs", runs, "--confidence", "1"
    )
    assert done.returncode != 0 and "--confidence must lie in (0.5, 1)" in done.stderr
    assert not (tmp_path / "p").exists()
    made = crowdprefs(
        "init", tmp_path / "r", "--candidates", candidates, "--runs", runs, "--measure", "ndcg@3",
        "--confidence", "0.9",
    )  # fmt: skip
    assert made.returncode == 0 and "ranking its systems by nDCG@3" in made.stdout
    assert tomllib.loads((tmp_path / "r" / CONFIG_NAME).read_text())["systems"] == {
        "runs": "runs.txt", "measure": "nDCG@3", "confidence": 0.9,
    }  # fmt: skip
    folder = tmp_path / "q"
    assert crowdprefs("init", folder, "--candidates", candidates, "--runs", runs).returncode == 0
    config = folder / CONFIG_NAME
    data = tomllib.loads(config.read_text())
    data["systems"]["confidence"] = 1.5
    config.write_text(tomli_w.dumps(data))
    done = crowdprefs("status", folder)
    assert done.returncode != 0 and "confidence" in done.stderr and "Traceback" not in done.stderr
    data["systems"] |= {"confidence": 0.9, "measure": "P@5"}
    config.write_text(tomli_w.dumps(data))
    done = crowdprefs("next", folder)
    assert done.returncode != 0 and "ADR@k, AG@k or nDCG@k" in done.stderr
    evaluated = crowdprefs("evaluate", "--truth", folder, "--runs", runs, "--confidence", "1.2")
    assert evaluated.returncode != 0 and "--confidence must lie in (0.5, 1)" in evaluated.stderr
