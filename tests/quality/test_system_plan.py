"""Planning a campaign that knows its systems: the system-driven campaign beside the full sort."""

from __future__ import annotations

import numpy as np
from console_script import crowdprefs

from crowdprefs.campaign import systems as S
from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.demo import example_runs, make_collection
from crowdprefs.io import write_lists, write_runs
from crowdprefs.quality.crowd_model import CrowdModel
from crowdprefs.quality.planning import Collection, Design, simulate_campaign
from crowdprefs.quality.system_plan import compare_campaigns, sort_campaign

DESIGN = Design(10, AggregationRule(rule="margin", margin=2))


def setup(sizes=(12, 15, 10, 14, 11, 13)):
    candidates, truth = make_collection(2010, sizes=sizes)
    collection = Collection.from_truth(truth)
    runs = example_runs(truth)
    found = S.retrieved(runs, collection.queries, collection.documents, collection.query, 5)
    return candidates, truth, collection, runs, found


def test_the_full_sort_is_the_planned_campaign():
    """Same pivots, crowd and answers as plan's own simulation: the same lists and answers."""
    _, _, collection, _, _ = setup()
    full, _, _ = sort_campaign(collection, DESIGN, CrowdModel(), seed=3)
    planned = simulate_campaign(collection, DESIGN, CrowdModel(), seed=3)
    np.testing.assert_array_equal(full.partial.groups(), planned.group)
    assert full.answers == planned.summary["answers"]


def test_the_system_driven_campaign_asks_a_subset_and_its_lists_coarsen_the_finished_ones():
    _, _, collection, _, found = setup()
    outcome = compare_campaigns(collection, DESIGN, CrowdModel(), found, S.RankMeasure("ADR", 5), 4)
    driven, full = outcome.driven.partial, outcome.finished.partial
    assert outcome.driven.answers < outcome.full.answers
    assert outcome.driven.answers < outcome.finished.answers
    # whatever the finished sort (same first pivots, answers) put in different segments of the
    # driven state keeps their order
    same_query = collection.query[:, None] == collection.query[None, :]
    before = same_query & (driven.segment[:, None] < driven.segment[None, :])
    assert (full.segment[:, None] < full.segment[None, :])[before].all()
    summary = outcome.summary
    assert summary["stopped"] in ("decided", "nothing matters")
    assert summary["decided"] + summary["undecided"] == 10  # five systems
    assert summary["decided_wrong"] <= summary["decided"]


def test_first_pivots_take_the_consensus_kth_place_never_below_the_median():
    query = np.array([0] * 8 + [1] * 3 + [2] * 6)
    score = np.array([8, 7, 6, 5, 4, 3, 2, 1, 3, 2, 1, 0.5, 0.5, 0.5, 0.5, 0, 0], dtype=float)
    position = np.arange(len(query)) % 5
    # query 0: the 3rd place (k = 3); query 1: the median of 3; query 2: candidates 11-14 tie,
    # ranked by descending initial position (14, 13, 12, 11), so the 3rd place is 12
    np.testing.assert_array_equal(S.first_pivots(query, score, 3, position), [2, 9, 12])
    np.testing.assert_array_equal(S.first_pivots(query, score, 1, position), [0, 8, 14])


def test_random_first_pivots_make_the_full_sorts_own_campaign():
    """Without the consensus pivots the driven campaign starts as the full sort, and the lists it
    is checked on are the full sort's; with them, those lists are another finished campaign."""
    _, _, collection, _, found = setup()
    measure = S.RankMeasure("ADR", 5)
    same = compare_campaigns(
        collection, DESIGN, CrowdModel(), found, measure, 4, consensus_pivots=False
    )
    assert same.finished is same.full
    other = compare_campaigns(collection, DESIGN, CrowdModel(), found, measure, 4)
    assert other.full.answers == same.full.answers
    assert not np.array_equal(other.finished.verdicts, other.full.verdicts)


def test_a_budget_stops_the_system_driven_campaign():
    _, _, collection, _, found = setup()
    outcome = compare_campaigns(
        collection, DESIGN, CrowdModel(), found, S.RankMeasure("ADR", 5), 4, budget_share=0.2,
        max_pairs=20,
    )  # fmt: skip
    assert outcome.driven.answers <= 0.2 * outcome.full.answers
    assert outcome.summary["stopped"] == "budget"


def test_plan_with_runs_shows_the_system_driven_campaign_beside_the_full_sort(tmp_path):
    candidates, truth, _, runs, _ = setup()
    candidates.to_csv(tmp_path / "c.csv", index=False)
    write_lists(truth, tmp_path / "t.qrel")
    write_runs(runs, tmp_path / "runs.txt")
    done = crowdprefs(
        "plan", "--candidates", tmp_path / "c.csv", "--truth", tmp_path / "t.qrel",
        "--campaigns", "2", "--runs", tmp_path / "runs.txt", "--measure", "ndcg@3",
        "--confidence", "0.9",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "ranking 5 systems by nDCG@3" in done.stdout
    assert "full sort" in done.stdout and "system-driven" in done.stdout
    assert "decided pairs that the finished lists order otherwise" in done.stdout


def test_plan_refuses_bad_ranking_options_in_one_line(tmp_path):
    candidates, truth, _, runs, _ = setup()
    candidates.to_csv(tmp_path / "c.csv", index=False)
    write_runs(runs, tmp_path / "runs.txt")
    base = ["plan", "--candidates", tmp_path / "c.csv", "--campaigns", "1"]
    for extra, message in [
        (["--measure", "AG@5"], "give --runs"),
        (["--runs", tmp_path / "runs.txt", "--measure", "P@5"], "ADR@k, AG@k or nDCG@k"),
        (["--runs", tmp_path / "runs.txt", "--confidence", "1.5"], "--confidence must lie in"),
        (["--runs", tmp_path / "absent.txt"], "absent.txt"),
    ]:
        done = crowdprefs(*base, *extra)
        assert done.returncode != 0
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and message in lines[0] and "Traceback" not in done.stderr
