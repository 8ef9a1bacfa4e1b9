"""The field's exchange formats from the command line: ``export --format``, ``import-answers
--format`` and ``audit --answers --format``, through the console script (the ``cli`` fixture)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crowdprefs import exchange
from crowdprefs.campaign import driver
from crowdprefs.campaign.project import Project
from crowdprefs.demo import create_demo_project, example_runs
from crowdprefs.io import read_lists

LAB = "worker,query,left,right,label\n" + "".join(
    f"w{w},q{q},{left},{right},{label}\n"
    for q in (1, 2)
    for left, right in (("a", "b"), ("a", "c"), ("b", "c"), ("c", "d"))
    for w, label in enumerate(("left", "left", "equal", "right", "left"))
)


@pytest.fixture
def demo(tmp_path, monkeypatch) -> Path:
    """A demo project (11 queries, simulated crowd, seed 2010) with batch 1 built, published
    and collected; the current folder holds it as ``project`` and its ``candidates.csv``."""
    create_demo_project(tmp_path).close()
    monkeypatch.chdir(tmp_path)
    return Path("project")


def collected(cli, project: Path) -> None:
    for step in ("next", "publish", "collect"):
        code, _, err = cli(step, project)
        assert code == 0, err


def fresh(cli, name: str) -> Path:
    """A new project of the demo's candidates and seed, with batch 1 built (nothing asked)."""
    code, _, err = cli("init", name, "--candidates", "candidates.csv", "--seed", 2010)
    assert code == 0, err
    assert cli("next", name)[0] == 0
    return Path(name)


def stored(project: Path) -> pd.DataFrame:
    """Every answer of a project as (worker, query, x, y, score, seconds, status), sorted."""
    with Project(project) as opened:
        answers = opened.store.answers(include_rejected=True)
    columns = ["worker_id", "query", "x", "y", "score", "seconds", "status"]
    return answers[columns].sort_values(columns[:4]).reset_index(drop=True)


def test_long_answers_round_trip_into_a_fresh_project(cli, demo):
    collected(cli, demo)
    code, out, err = cli("export", demo, "--format", "long", "-o", "a.csv")
    assert code == 0, err
    assert "answers to a.csv" in out
    copy = fresh(cli, "copy")
    code, out, err = cli("import-answers", copy, "a.csv", "--format", "long")
    assert code == 0, err
    assert "already stored" in out
    code, out, _ = cli("import-answers", copy, "a.csv", "--format", "long")
    assert code == 0 and " 0 new answers stored" in out  # rerunning adds nothing
    assert cli("export", copy, "--format", "long", "-o", "b.csv")[0] == 0
    first, second = (pd.read_csv(p).sort_values(["query", "left", "right", "worker"]) for p in
                     ("a.csv", "b.csv"))  # fmt: skip
    pd.testing.assert_frame_equal(first.reset_index(drop=True), second.reset_index(drop=True))
    assert len(first) > 100 and set(first["label"]) == {"left", "right", "equal"}


def test_results_round_trip_keeps_every_answer_and_collects_the_batch(cli, demo):
    collected(cli, demo)
    code, out, err = cli("export", demo, "--format", "results", "-o", "r.csv")
    assert code == 0, err
    copy = fresh(cli, "copy")
    code, out, err = cli("import-answers", copy, "r.csv")
    assert code == 0, err
    assert "batch 1 is complete and collected" in out
    pd.testing.assert_frame_equal(stored(demo), stored(copy))
    assert cli("aggregate", demo)[0] == 0 and cli("aggregate", copy)[0] == 0
    with Project(demo) as a, Project(copy) as b:
        verdicts = [p.store.pairs(1)[["query", "x", "y", "verdict"]] for p in (a, b)]
    pd.testing.assert_frame_equal(*verdicts)


def test_crowdkit_and_choix_hold_one_query_with_ties_dropped_or_split(cli, demo):
    collected(cli, demo)
    code, _, err = cli("export", demo, "--format", "crowdkit", "-o", "ck.csv")
    assert code == 2 and "--query" in err and "--format long" in err and not Path("ck.csv").exists()
    long = exchange.read_preferences(_export(cli, demo, "long"))
    query = long["query"].iloc[0]
    mine = long[long["query"] == query]
    code, out, err = cli("export", demo, "--format", "crowdkit", "--query", query, "-o", "ck.csv")
    assert code == 0, err
    frame = pd.read_csv("ck.csv", dtype=str)
    assert list(frame.columns) == ["worker", "left", "right", "label"]
    assert len(frame) == (mine["label"] != "equal").sum()
    assert (frame["label"] == frame["left"]).sum() == (mine["label"] == "left").sum()
    cli("export", demo, "--format", "crowdkit", "--query", query, "--split-ties", "-o", "s.csv")
    assert len(pd.read_csv("s.csv")) == len(mine) + (mine["label"] == "equal").sum()
    code, _, err = cli("export", demo, "--format", "choix", "--query", query, "-o", "c.json")
    assert code == 0, err
    data = json.loads(Path("c.json").read_text())
    assert data["query"] == query and data["items"] == sorted(data["items"])
    winners = [data["items"][w] for w, _ in data["comparisons"]]
    assert winners == frame["label"].tolist()
    # the crowd-kit file back into a fresh project: the decided answers of that query
    copy = fresh(cli, "copy")
    code, _, err = cli("import-answers", copy, "ck.csv", "--format", "crowdkit")
    assert code == 2 and "--query" in err
    code, out, err = cli("import-answers", copy, "ck.csv", "--format", "crowdkit", "--query", query)
    assert code == 0, err
    again = exchange.read_preferences(_export(cli, copy, "long"))
    decided = mine[mine["label"] != "equal"].drop(columns="seconds")
    assert sorted(map(tuple, again.drop(columns="seconds").to_numpy())) == sorted(
        map(tuple, decided.to_numpy())
    )


def _export(cli, project: Path, fmt: str) -> Path:
    path = Path(f"{project.name}-{fmt}.out")
    code, _, err = cli("export", project, "--format", fmt, "-o", path)
    assert code == 0, err
    return path


def test_the_open_batch_goes_to_another_tool_and_its_answers_come_back(cli, demo):
    code, _, err = cli("export", demo, "--format", "pairs", "-o", "pairs.csv")
    assert code == 1 and "no batch is open" in err and f"crowdprefs next {demo}" in err
    assert cli("next", demo)[0] == 0
    code, out, err = cli("export", demo, "--format", "pairs", "-o", "pairs.csv")
    assert code == 0, err
    pairs = pd.read_csv("pairs.csv", dtype={"answers_wanted": int})
    assert list(pairs.columns) == ["query", "left", "right", "answers_wanted"]
    assert f"the {len(pairs)} pairs of batch 1" in out
    # a lab asks every pair of the file as many times as wanted, in its own tool
    lab = pairs.loc[pairs.index.repeat(pairs["answers_wanted"])].reset_index(drop=True)
    lab["worker"] = "lab-" + (lab.groupby(["query", "left", "right"]).cumcount() + 1).astype(str)
    lab["label"] = np.resize(["left", "right", "equal", "left"], len(lab))
    lab[exchange.PREFERENCE_COLUMNS].to_csv("lab.csv", index=False)
    code, out, err = cli("import-answers", demo, "lab.csv", "--format", "long")
    assert code == 0, err
    assert "batch 1 is complete and collected" in out
    assert cli("aggregate", demo)[0] == 0
    with Project(demo) as opened:
        answers = opened.store.answers()
    assert len(answers) == len(lab) and set(answers["worker_id"]) == set(lab["worker"])


def compat(lists: pd.DataFrame, run: pd.DataFrame, p: float) -> pd.Series:
    """Clarke, Vtyurina & Smucker's compatibility of each query's run with the partial order of
    the lists, normalised (RBO of the run against the ideal ranking over RBO of the ideal: the
    listed documents by group, a group's documents in the run's order), from crowdprefs' lists."""
    values = {}
    for query, ranked in run.groupby("query", sort=False):
        listed = lists[lists["query"] == query]
        order = {doc: rank for rank, doc in enumerate(ranked["document"])}
        listed = listed.assign(at=listed["document"].map(order).fillna(np.inf))
        ideal = listed.sort_values(["group", "at"], kind="stable")["document"].tolist()
        ranking = ranked["document"].tolist()
        depth = max(len(ranking), len(ideal))
        values[query] = _rbo(ranking, ideal, p, depth) / _rbo(ideal, ideal, p, depth)
    return pd.Series(values)


def _rbo(ranking: list[str], ideal: list[str], p: float, depth: int) -> float:
    weights = p ** np.arange(depth)
    overlap = [len(set(ranking[: i + 1]) & set(ideal[: i + 1])) / (i + 1) for i in range(depth)]
    return float(np.dot(weights, overlap) / weights.sum())


def test_ir_measures_compat_scores_the_exported_preference_qrels_as_the_lists_say(cli, demo):
    ir_measures = pytest.importorskip("ir_measures")
    with Project(demo) as opened:
        driver.run(opened, driver_crowd(opened))
        lists = driver.lists(opened)
    code, out, err = cli("export", demo, "--format", "preference-qrels", "-o", "pref.qrel")
    assert code == 0, err
    assert "11 lists" in out
    runs = example_runs(read_lists(Path("truth.qrel")), seed=3)
    measure = ir_measures.Compat(p=0.8)
    qrels = list(ir_measures.read_trec_qrels("pref.qrel"))
    for system, run in runs.groupby("system"):
        scored = [
            ir_measures.ScoredDoc(row.query, row.document, float(len(run) - rank))
            for rank, row in enumerate(run.itertuples())
        ]
        theirs = {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, scored)}
        ours = compat(lists, run, 0.8)
        assert ours.to_dict() == pytest.approx(theirs), system
    assert min(theirs.values()) < 1.0  # the runs are not all ideal


def driver_crowd(project: Project):
    from crowdprefs.crowds import get_crowd

    return get_crowd("simulated", project)


def test_a_plain_lab_csv_is_audited_without_a_project(cli, tmp_path):
    path = tmp_path / "lab.csv"
    path.write_text(LAB, encoding="utf-8")
    code, out, err = cli("audit", "--answers", path, "--format", "long", columns=80)
    assert code == 0, err
    assert "40 answers, each identified by (worker, query, left, right)" in err
    assert "workers (5)" in out and "equal" in out and "bias" in out
    assert max(map(len, out.splitlines())) <= 80
    code, out, err = cli("audit", "--answers", path, "--format", "long", "--json")
    workers = {w["worker_id"]: w for w in json.loads(out)["workers"]}
    assert workers["w2"]["share_equal"] == 1.0 and workers["w3"]["share_B"] == 1.0
    # the same answers as one query of crowd-kit's frame
    frame = pd.read_csv(path)
    one = frame[(frame["query"] == "q1") & (frame["label"] != "equal")]
    crowdkit = one.assign(label=np.where(one["label"] == "left", one["left"], one["right"]))
    crowdkit[["worker", "left", "right", "label"]].to_csv(tmp_path / "ck.csv", index=False)
    code, out, err = cli("audit", "--answers", tmp_path / "ck.csv", "--format", "crowdkit",
                         "--query", "q1", "--json")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["facts"]["answers"] == len(one)


def test_a_results_file_without_times_is_one_batch_and_without_hits_points_to_long(cli, tmp_path):
    rows = [line.split(",") for line in LAB.splitlines()[1:]]
    text = "HIT,worker,query,a,b,choice\n" + "".join(
        f"{q}{a}{b},{w},{q},{a},{b},{dict(left='A', right='B', equal='E')[label]}\n"
        for w, q, a, b, label in rows
    )
    path = tmp_path / "lab.csv"
    path.write_text(text, encoding="utf-8")
    options = ["--worker-column", "worker", "--query-column", "query", "--a-column", "a",
               "--b-column", "b", "--answer-column", "choice", "--equal-value", "E"]  # fmt: skip
    code, out, err = cli("audit", "--answers", path, *options, "--hit-column", "HIT")
    assert code == 0, err
    assert "no HIT creation or accept time (--created-column, --accept-column)" in err
    assert "one batch" in err
    code, _, err = cli("audit", "--answers", path, *options)
    assert code == 2 and "--hit-column" in err and "--format long" in err
    code, _, err = cli("audit", "--answers", path, "--format", "crowdkit")
    assert code == 2 and "lack column(s) left, right, label" in err and str(path) in err


def test_bad_format_options_are_refused_in_one_line(cli, demo, tmp_path):
    code, _, err = cli("export", demo, "--format", "xml")
    assert code == 2 and "'xml' is not one of qrels, preference-qrels, long" in err
    code, _, err = cli("export", demo, "--format", "long", "--query", "q")
    assert code == 2 and "--query picks the query of --format crowdkit or choix" in err
    code, _, err = cli("export", demo, "--format", "long", "--partial")
    assert code == 2 and "--partial applies to the lists" in err
    code, _, err = cli("audit", demo, "--format", "long")
    assert code == 2 and "describe an --answers file" in err
    assert not Path("answers.csv").exists() and not Path("lists.qrel").exists()
