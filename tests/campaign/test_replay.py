"""Replaying recorded campaigns: seed 002 Table 1, the round trip through an MTurk CSV, rules."""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pytest

from crowdprefs.campaign import driver
from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.campaign.project import Project
from crowdprefs.campaign.replay import replay_campaign
from crowdprefs.cli import main
from crowdprefs.crowds.simulated import SimulatedCrowd
from crowdprefs.demo import create_demo_project
from crowdprefs.io import read_lists
from crowdprefs.quality import audit as A
from crowdprefs.quality.frames import infer_iterations, project_answers, project_verdicts
from crowdprefs.results_file import Columns, read_results, write_results

T0 = pd.Timestamp("2010-04-14 10:00", tz="UTC")


def campaign_frame(batches: list[list[tuple]], query: str = "q") -> pd.DataFrame:
    """An answers frame from batches of ``(member, pivot, answers)``, answers a string over
    x/e/y (member preferred, equal, pivot preferred); batches are 4 hours apart."""
    rows = []
    pair = 0
    for iteration, batch in enumerate(batches, start=1):
        created = T0 + pd.Timedelta(hours=4 * iteration)
        for x, y, answers in batch:
            pair += 1
            a_is_x = pair % 2
            for k, answer in enumerate(answers):
                score = {"x": 1, "e": 0, "y": -1}[answer]
                side = score if a_is_x else -score
                rows.append(
                    {
                        "iteration": pd.NA,
                        "pair_id": pair,
                        "hit_id": f"H{pair}",
                        "created_at": created,
                        "max_assignments": len(answers),
                        "reward": 0.02,
                        "query": query,
                        "x": x,
                        "y": y,
                        "a_is_x": a_is_x,
                        "kind": "sort",
                        "expected": np.nan,
                        "pivot_known": True,
                        "worker_id": f"W{k}",
                        "assignment_id": f"A{pair}-{k}",
                        "status": "approved",
                        "choice": {1: "A", 0: "equal", -1: "B"}[side],
                        "score": score,
                        "seconds": 20.0 + k,
                        "listen_seconds": np.nan,
                        "accepted_at": created + pd.Timedelta(minutes=k),
                        "submitted_at": created + pd.Timedelta(minutes=k, seconds=20 + k),
                        "background": "",
                        "comment": "",
                    }
                )
    return pd.DataFrame(rows)


MORE, SAME, LESS = "x" * 10, "e" * 10, "y" * 10

TABLE_1 = [
    # iteration 1: pivot F; every document more similar except G (equal)
    [
        ("C", "F", MORE),
        ("D", "F", MORE),
        ("E", "F", MORE),
        ("A", "F", MORE),
        ("G", "F", SAME),
        ("B", "F", MORE),
    ],
    # iteration 2: pivot B of <C, D, E, A, B>
    [("C", "B", SAME), ("D", "B", LESS), ("E", "B", LESS), ("A", "B", SAME)],
    # iteration 3: <B | C, A> with pivot A, <D, E> with pivot E
    [("C", "A", SAME), ("D", "E", SAME)],
]


def groups(lists: pd.DataFrame) -> list[set]:
    return [set(g["document"]) for _, g in lists.sort_values("group").groupby("group")]


def reread(frame: pd.DataFrame, path, columns: Columns = Columns(), gap: float = 600.0):
    write_results(frame, path)
    return infer_iterations(read_results(path, columns), gap)


def test_table_1_of_seed_002(tmp_path):
    answers = reread(campaign_frame(TABLE_1), tmp_path / "t1.csv")
    assert sorted(answers["iteration"].unique()) == [1, 2, 3]
    result = replay_campaign(answers)
    assert groups(result.lists) == [{"A", "B", "C"}, {"D", "E"}, {"F", "G"}]
    assert result.issues.empty and result.closed == {"q": True}


def test_table_1_without_recorded_pivots_reports_the_ambiguity(tmp_path):
    answers = reread(campaign_frame(TABLE_1), tmp_path / "t1.csv", Columns(pivot="absent"))
    result = replay_campaign(answers)
    assert groups(result.lists) == [{"A", "B", "C"}, {"D", "E"}, {"F", "G"}]
    # <B | C, A>: two members to place and a former pivot; <D, E> has no former pivot
    assert result.issues["issue"].tolist() == ["ambiguous-pivot"]
    assert result.issues["iteration"].tolist() == [3]


def test_pivot_side_decides_two_member_segments_with_former_pivots(tmp_path):
    # P splits nothing off (M and N equal to it); then M is preferred to N
    batches = [[("M", "P", SAME), ("N", "P", SAME)], [("M", "N", MORE)]]
    recorded = campaign_frame(batches)  # the true pivot of <P | M, N> is N
    with_pivot = replay_campaign(reread(recorded, tmp_path / "a.csv"))
    assert groups(with_pivot.lists) == [{"M"}, {"N", "P"}]
    blind = reread(recorded, tmp_path / "b.csv", Columns(pivot="absent"))
    shown_b = recorded.loc[recorded["pair_id"] == 3, "a_is_x"].iloc[0] == 1  # N shown as B
    right, wrong = ("b", "a") if shown_b else ("a", "b")
    assert groups(replay_campaign(blind, pivot_side=right).lists) == [{"M"}, {"N", "P"}]
    assert groups(replay_campaign(blind, pivot_side=wrong).lists) == [{"M", "P"}, {"N"}]
    assert "ambiguous-pivot" in set(replay_campaign(blind).issues["issue"])


def test_another_rule_moves_the_ground_truth_and_says_where(tmp_path):
    batches = [list(b) for b in TABLE_1]
    batches[0][5] = ("B", "F", "xxx" + "e" * 7)  # 3-0 with 7 equal: p = 0.019 (Mann-Whitney)
    answers = reread(campaign_frame(batches), tmp_path / "r.csv")
    assert groups(replay_campaign(answers).lists) == [{"A", "B", "C"}, {"D", "E"}, {"F", "G"}]
    moved = replay_campaign(answers, AggregationRule(rule="margin", margin=4), partial=True)
    issues = moved.issues
    assert moved.closed == {"q": False}
    assert {"unneeded", "missing", "open"} <= set(issues["issue"])
    unneeded = issues[issues["issue"] == "unneeded"]
    assert (unneeded["iteration"] == 2).sum() == 4  # B's star: B now sits in F's segment
    assert set(moved.lists["document"]) == set("ABCDEFG")  # partial lists still cover all


# ------------------------------------------------------------------ the round trip


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """A campaign run by the simulated crowd, exported as an MTurk results CSV."""
    root = tmp_path_factory.mktemp("roundtrip")
    project = create_demo_project(root / "demo", seed=2010)
    driver.run(project, SimulatedCrowd.for_project(project))
    answers = project_answers(project)
    path = root / "results.csv"
    write_results(answers, path)
    pairs = project_verdicts(project, answers)
    expected = {
        "lists": driver.lists(project),
        "audit": A.audit(answers, pairs=pairs, fees=project.settings.fees),
        "pool": SimulatedCrowd.for_project(project).pool,
    }
    project.close()
    return path, expected


def sort_lists(lists: pd.DataFrame) -> pd.DataFrame:
    return lists.sort_values(["query", "document"], ignore_index=True)


def test_round_trip_gives_the_same_lists_table_2_and_flags(simulated):
    path, expected = simulated
    answers = infer_iterations(read_results(path), batch_gap=0)
    replayed = replay_campaign(answers)
    assert replayed.issues.empty
    pd.testing.assert_frame_equal(sort_lists(replayed.lists), sort_lists(expected["lists"]))
    result = A.audit(answers)
    pd.testing.assert_frame_equal(result.iterations, expected["audit"].iterations)
    pd.testing.assert_frame_equal(result.flags, expected["audit"].flags)
    pd.testing.assert_frame_equal(result.workers, expected["audit"].workers)
    pool = expected["pool"]
    planted = set(pool.ids[pool.kind != "honest"]) & set(answers["worker_id"])
    assert set(result.flags["worker_id"]) == planted


def test_round_trip_through_the_cli(simulated, tmp_path, capsys, monkeypatch):
    path, expected = simulated
    output = tmp_path / "lists.qrel"
    argv = ["crowdprefs", "replay", str(path), "--batch-gap", "0", "--output", str(output)]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 0
    assert "11/11 lists closed" in capsys.readouterr().out
    pd.testing.assert_frame_equal(sort_lists(read_lists(output)), sort_lists(expected["lists"]))
    argv = ["crowdprefs", "audit", "--answers", str(path), "--batch-gap", "0", "--json"]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as stop:
        main()
    data = json.loads(capsys.readouterr().out)
    rows = expected["audit"].iterations
    assert [r["pairs"] for r in data["iterations"]] == rows["pairs"].tolist()
    assert data["iterations"][-1]["agreement"] == pytest.approx(rows["agreement"].iloc[-1])
    assert {f["worker_id"] for f in data["flags"]} == set(expected["audit"].flags["worker_id"])


def test_a_batch_published_in_two_parts_completes_its_stars_later(tmp_path):
    batches = [TABLE_1[0], TABLE_1[1][:2], TABLE_1[1][2:], TABLE_1[2]]
    answers = reread(campaign_frame(batches), tmp_path / "parts.csv", Columns(pivot="absent"))
    assert sorted(answers["iteration"].unique()) == [1, 2, 3, 4]
    result = replay_campaign(answers)
    assert groups(result.lists) == [{"A", "B", "C"}, {"D", "E"}, {"F", "G"}]
    assert result.issues[["iteration", "issue"]].values.tolist() == [
        [2, "missing"],  # B compared with C and D only so far
        [4, "ambiguous-pivot"],
    ]


# ------------------------------------------------------------------ honest outputs


def test_replay_with_open_lists_writes_the_closed_ones_and_fails_unless_partial(cli, tmp_path):
    closed = campaign_frame(TABLE_1, query="done")
    still = campaign_frame(TABLE_1[:2], query="open").assign(
        hit_id=lambda f: "O" + f["hit_id"], assignment_id=lambda f: "O" + f["assignment_id"]
    )
    path = tmp_path / "mixed.csv"
    write_results(pd.concat([closed, still], ignore_index=True), path)
    output = tmp_path / "lists.txt"
    code, out, err = cli("replay", path, "-o", output)
    assert code != 0
    assert "1 of 2 lists are still open (open)" in err and "--partial" in err
    assert set(read_lists(output)["query"]) == {"done"}
    code, out, err = cli("replay", path, "-o", output, "--partial")
    assert code == 0, err
    assert set(read_lists(output)["query"]) == {"done", "open"}


def test_informational_notes_are_not_called_differences(cli, tmp_path):
    path = tmp_path / "parts.csv"
    write_results(campaign_frame(TABLE_1), path)
    code, out, err = cli("replay", path, "--pivot-column", "absent")
    assert code == 0, err
    assert "0 difference(s) from the recording, 1 note(s)" in out
    assert "disagree" not in out


# ------------------------------------------------------------------ a recording as a project


def test_a_recorded_campaign_becomes_a_project_that_carries_on(cli, tmp_path):
    path = tmp_path / "open.csv"
    write_results(campaign_frame(TABLE_1[:2]), path)  # the last batch was never asked
    project = tmp_path / "project"
    code, out, err = cli("replay", path, "--project", project)
    assert code == 0, err
    assert "0 of 1 lists closed" in err and f"crowdprefs next {project}" in err
    code, out, err = cli("status", project)
    # 100 answers at $0.02 + MTurk's fee for HITs of 10 (40 %, at least $0.01)
    assert code == 0 and "0 closed, 1 open" in out and "$3.00 committed" in out
    code, out, err = cli("next", project)
    assert code == 0, err
    with Project(project) as opened:
        asked = opened.store.pairs(3)
        assert opened.store.pairs(1)["x"].tolist() == [x for x, _, _ in TABLE_1[0]]
    # the open segments left are <C, A> with former pivot B and <D, E>: their pivots are asked
    assert {frozenset(p) for p in zip(asked["x"], asked["y"], strict=True)} == {
        frozenset("CA"),
        frozenset("DE"),
    }


def test_a_closed_recording_as_a_project_exports_audits_and_evaluates(cli, tmp_path):
    path = tmp_path / "closed.csv"
    write_results(campaign_frame(TABLE_1), path)
    project = tmp_path / "project"
    code, _, err = cli("replay", path, "--project", project)
    assert code == 0 and "1 of 1 lists closed" in err, err
    lists = tmp_path / "lists.txt"
    code, _, err = cli("export", project, "-o", lists)
    assert code == 0, err
    assert groups(read_lists(lists)) == [{"A", "B", "C"}, {"D", "E"}, {"F", "G"}]
    code, out, err = cli("audit", project, "--json")
    assert code == 0, err
    total = json.loads(out)["iterations"][-1]
    assert total["answers"] == 120 and total["cost"] == pytest.approx(120 * 0.03)
    runs = tmp_path / "runs.txt"
    runs.write_text("good q A\ngood q B\ngood q D\nbad q F\nbad q G\nbad q D\n")
    code, out, err = cli("evaluate", "--truth", lists, "--runs", runs, "-m", "ADR@3")
    assert code == 0, err
    assert out.index("good") < out.index("bad")


def test_a_project_needs_a_reward_when_the_file_has_none(cli, tmp_path):
    path = tmp_path / "closed.csv"
    write_results(campaign_frame(TABLE_1).assign(reward=np.nan), path)
    code, _, err = cli("replay", path, "--project", tmp_path / "p")
    assert code != 0 and "give --reward" in err
    assert not (tmp_path / "p").exists()


def test_a_bradley_terry_project_is_replayed_with_the_same_rule_through_the_cli(cli, tmp_path):
    root = tmp_path / "demo"
    create_demo_project(root).close()  # writes the candidates and the truth
    project = root / "bt"
    code, out, err = cli(
        "init", project, "--candidates", root / "candidates.csv",
        "--rule", "bradley-terry", "--ties", "rao-kupper",
    )  # fmt: skip
    assert code == 0, err
    toml = project / "crowdprefs.toml"
    toml.write_text(toml.read_text() + '\n[simulated]\ntruth = "../truth.qrel"\n')
    with Project(project) as opened:
        assert opened.settings.aggregation == AggregationRule(
            rule="bradley-terry", ties="rao-kupper"
        )
        driver.run(opened, SimulatedCrowd.for_project(opened))
        expected = driver.lists(opened)
        write_results(project_answers(opened), tmp_path / "results.csv")
    output = tmp_path / "lists.qrel"
    args = ["replay", tmp_path / "results.csv", "--batch-gap", "0", "-o", output]
    code, out, err = cli(*args, "--rule", "bradley-terry", "--ties", "rao-kupper")
    assert code == 0, err
    assert "11/11 lists closed" in out
    pd.testing.assert_frame_equal(sort_lists(read_lists(output)), sort_lists(expected))
    code, _, err = cli(*args, "--rule", "bradley-terry", "--ties", "equal")
    assert code != 0 and "'equal' is not one of davidson, rao-kupper" in err


# ------------------------------------------------------------------ the query among its candidates


def test_a_query_among_its_own_candidates_is_an_ordinary_candidate_in_every_command(tmp_path):
    """The 2010 campaign lists every query as one of its own candidates: init, run (with
    attention checks, which never pair the query with itself), export in every format, replay,
    audit, crowd-model fit, plan and import-answers take it; a pair of one document is refused."""
    from console_script import crowdprefs

    candidates = tmp_path / "candidates.csv"
    candidates.write_text("query,document\nq,q\nq,a\nq,b\nq,c\nq,d\nq,e\nr,r\nr,a\nr,b\nr,c\n")
    project = tmp_path / "p"
    ran = crowdprefs("init", project, "--candidates", candidates, "--answers-per-pair", "5")
    assert ran.returncode == 0, ran.stderr
    with open(project / "crowdprefs.toml", "a") as config:
        config.write("\n[checks]\nshare = 0.5\n")
    ran = crowdprefs("run", project)
    assert ran.returncode == 0 and "2/2 lists closed" in ran.stdout, ran.stderr
    with Project(project) as opened:
        pairs = opened.store.pairs()
    assert not (pairs["x"] == pairs["y"]).any()
    sort = pairs[pairs["kind"] == "sort"]
    assert ((sort["x"] == sort["query"]) | (sort["y"] == sort["query"])).any()  # sorted as any
    assert (pairs["kind"] == "check").any()
    outputs = {}
    for fmt in ("qrels", "preference-qrels", "long", "results", "crowdkit", "choix"):
        outputs[fmt] = tmp_path / f"out.{fmt}"
        one = ("--query", "q") if fmt in ("crowdkit", "choix") else ()
        ran = crowdprefs("export", project, "--format", fmt, *one, "-o", outputs[fmt])
        assert ran.returncode == 0, (fmt, ran.stderr)
    lists = read_lists(outputs["qrels"])
    assert set(zip(lists["query"], lists["document"], strict=True)) >= {("q", "q"), ("r", "r")}
    assert "q" in json.loads(outputs["choix"].read_text())["items"]

    replayed = tmp_path / "replayed.qrel"
    ran = crowdprefs("replay", outputs["results"], "--batch-gap", "0", "-o", replayed)
    assert ran.returncode == 0, ran.stderr
    pd.testing.assert_frame_equal(sort_lists(read_lists(replayed)), sort_lists(lists))
    for args in (
        ("audit", "--answers", outputs["results"]),
        ("audit", "--answers", outputs["long"], "--format", "long"),
        ("crowd-model", "fit", outputs["results"], "--lists", outputs["qrels"], "-o",
         tmp_path / "crowd.toml"),
        ("plan", "--candidates", candidates, "--truth", outputs["qrels"], "--campaigns", "2",
         "--answers-per-pair", "5"),
    ):  # fmt: skip
        ran = crowdprefs(*args)
        assert ran.returncode == 0, (args, ran.stderr)

    other = tmp_path / "other"
    assert crowdprefs("init", other, "--candidates", candidates).returncode == 0
    assert crowdprefs("next", other).returncode == 0
    asked = tmp_path / "asked.csv"
    assert crowdprefs("export", other, "--format", "pairs", "-o", asked).returncode == 0
    questions = pd.read_csv(asked)
    assert ((questions["left"] == questions["query"]) | (questions["right"] == "q")).any()
    answers = questions.loc[questions.index.repeat(10)].assign(
        worker=[f"W{k}" for k in range(10)] * len(questions), label="left"
    )
    answers[["worker", "query", "left", "right", "label"]].to_csv(tmp_path / "a.csv", index=False)
    ran = crowdprefs("import-answers", other, tmp_path / "a.csv", "--format", "long")
    assert ran.returncode == 0, ran.stderr

    for text, says in [  # one document on both sides stays refused
        ("worker,query,left,right,label\nW1,q,a,a,left\n", "left and right are the same item"),
    ]:
        (tmp_path / "same.csv").write_text(text)
        ran = crowdprefs("audit", "--answers", tmp_path / "same.csv", "--format", "long")
        assert ran.returncode != 0 and says in ran.stderr and "Traceback" not in ran.stderr
