"""``[fragility]``: further answers for the pairs whose verdict one answer would flip."""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import fields
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tomli_w
from console_script import crowdprefs

from crowdprefs.campaign import driver
from crowdprefs.campaign.adaptive import (
    FragilityRule,
    StoppingRule,
    answers_wanted,
    fragile,
    wanted_next,
)
from crowdprefs.campaign.aggregate import AggregationRule, fewest_changes
from crowdprefs.campaign.project import Project
from crowdprefs.campaign.settings import CONFIG_NAME, SCHEMA
from crowdprefs.demo import create_demo_project
from crowdprefs.errors import InputError

MARGIN = AggregationRule(rule="margin", margin=2)


def test_the_section_reads_like_adaptive_and_is_off_by_default():
    assert set(SCHEMA["fragility"]) == {f.name for f in fields(FragilityRule)} - {"aggregation"}
    assert FragilityRule.from_section({}, 10, MARGIN) is None
    assert FragilityRule.from_section({"min_flips": 0, "step": 3}, 10, MARGIN) is None
    rule = FragilityRule.from_section({"min_flips": 2}, 7, MARGIN)
    assert (rule.min_flips, rule.step, rule.maximum, rule.aggregation) == (2, 2, 14, MARGIN)
    for section, says in [
        ({"min_flip": 2}, "unknown [fragility] setting min_flip (did you mean 'min_flips'?)"),
        ({"min_flips": 2, "step": 0}, "[fragility] step must be a whole number in [1, 1000]"),
        ({"min_flips": 1}, "[fragility] min_flips = 1 asks no further answers"),
    ]:
        with pytest.raises(InputError) as refused:
            FragilityRule.from_section(section, 10, MARGIN)
        assert says in str(refused.value) and "\n" not in str(refused.value)
    with pytest.raises(InputError, match="turn one of them off"):
        FragilityRule.from_section({"min_flips": 2}, 10, AggregationRule(rule="bradley-terry"))


def test_fragile_pairs_want_a_step_more_up_to_the_maximum_and_both_rules_the_larger():
    rule = FragilityRule(min_flips=2, step=2, maximum=12, aggregation=MARGIN)
    # margin 2: leads of 1, 2 and 3 flip with one changed answer; 0 and 4 take two
    more = np.array([5, 6, 6, 7, 7, 7, 0])
    equal = np.array([5, 3, 2, 0, 0, 5, 0])
    less = np.array([0, 1, 2, 3, 4, 0, 1])
    flips = fewest_changes(more, equal, less, MARGIN)[1]
    np.testing.assert_array_equal(fragile(more, equal, less, rule), (flips >= 0) & (flips < 2))
    n = more + equal + less
    expected = np.where(fragile(more, equal, less, rule), np.minimum(n + 2, 12), n)
    np.testing.assert_array_equal(wanted_next(more, equal, less, None, rule), expected)
    assert wanted_next([7], [0], [5], None, rule)[0] == 12  # lead 2, 12 answers: at its maximum
    assert not fragile([0], [0], [0], rule)[0]  # no answers yet: no verdict to flip
    stopping = StoppingRule("curtail", initial=4, step=3, maximum=10, aggregation=MARGIN)
    both = wanted_next(more, equal, less, stopping, rule)
    alone = answers_wanted(more, equal, less, stopping)
    np.testing.assert_array_equal(both, np.maximum(alone, expected))
    np.testing.assert_array_equal(wanted_next(more, equal, less, stopping, None), alone)


# ------------------------------------------------------------------- through the console script


def demo(root: Path, fragility: dict | None = None, **crowd) -> Path:
    """The demo project under ``root`` with a ``[fragility]`` section and ``[crowd]`` values."""
    create_demo_project(root).close()
    path = root / "project" / CONFIG_NAME
    data = tomllib.loads(path.read_text())
    data["crowd"].update(crowd)
    if fragility is not None:
        data["fragility"] = fragility
    path.write_text(tomli_w.dumps(data))
    return root / "project"


def counts_of(project: Project) -> pd.DataFrame:
    """Per pair of the store: ``kind, answers_wanted, more, equal, less``, and the HIT's size."""
    store = project.store
    pairs = store.pairs().set_index("pair_id")[["iteration", "kind", "answers_wanted"]]
    counts = pd.concat([store.answer_counts(int(i)) for i in pairs["iteration"].unique()])
    sizes = store.hits().set_index("pair_id")["max_assignments"].rename("size")
    return pairs.join(counts).join(sizes)


def one_line(done, says: str) -> None:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode not in (0, None) and "Traceback" not in done.stderr, done.stderr
    assert len(lines) == 1 and lines[0].startswith("error: ") and says in lines[0], done.stderr


def test_a_fragility_project_ends_with_no_verdict_one_answer_flips_below_its_maximum(tmp_path):
    plain = demo(tmp_path / "plain")
    fragile_project = demo(tmp_path / "fragile", {"min_flips": 2, "step": 2, "maximum": 16})
    for project in (plain, fragile_project):
        done = crowdprefs("run", project)
        assert done.returncode == 0, done.stderr
    with Project(plain) as project:
        before = counts_of(project)
        spent = driver.status(project)["totals"]
    with Project(fragile_project) as project:
        after = counts_of(project)
        totals = driver.status(project)["totals"]
        aggregation = project.settings.aggregation
        verdicts = project.store.pairs().set_index("pair_id")["verdict"]
    assert totals["closed"] == spent["closed"] == 11
    sort = after[after["kind"] == "sort"]
    n = sort[["more", "equal", "less"]].sum(axis=1)
    assert (n == sort["answers_wanted"]).all() and (sort["size"] == sort["answers_wanted"]).all()
    flips = fewest_changes(sort["more"], sort["equal"], sort["less"], aggregation)[1]
    weak = (flips >= 0) & (flips < 2)
    assert (n[weak] == 16).all() and weak.sum() < (n == 16).sum()  # fragile only at the maximum
    assert set(n) <= {10, 12, 14, 16} and (n > 10).any()
    plain_flips = fewest_changes(before["more"], before["equal"], before["less"], aggregation)[1]
    assert ((plain_flips >= 0) & (plain_flips < 2)).mean() > weak.mean()
    assert totals["answers"] > spent["answers"] and totals["cost"] > spent["cost"]
    # aggregation decided as usual, on every answer the pair got
    from crowdprefs.campaign.aggregate import verdicts as decide

    expected = decide(sort["more"], sort["equal"], sort["less"], aggregation)[0]
    np.testing.assert_array_equal(verdicts.reindex(sort.index), expected)


def test_a_further_round_the_budget_cannot_pay_is_refused_and_changes_nothing(tmp_path):
    # batch 1: 107 pairs × 10 answers × $0.03 = $32.10; two more answers for a pair do not fit
    project = demo(tmp_path / "p", {"min_flips": 2}, budget=32.2)
    for step in ("next", "publish"):
        done = crowdprefs(step, project)
        assert done.returncode == 0, done.stderr
    one_line(crowdprefs("collect", project), "budget")
    with Project(project) as opened:
        first = counts_of(opened)
        cost = driver.committed_cost(opened)
        assert opened.store.last_batch()["status"] == "published"
    assert (first["answers_wanted"] == 10).all() and (first["size"] == 10).all()
    assert (first[["more", "equal", "less"]].sum(axis=1) == 10).all()
    assert cost == pytest.approx(32.10)
    one_line(crowdprefs("collect", project), "budget")  # again: still refused, nothing written
    with Project(project) as opened:
        pd.testing.assert_frame_equal(counts_of(opened), first)
        assert driver.committed_cost(opened) == cost
        settings = opened.settings
        opened.save_settings(dataclasses.replace(settings, budget=200.0))
    done = crowdprefs("collect", project)  # with the budget raised the batch completes
    assert done.returncode == 0, done.stderr
    with Project(project) as opened:
        assert opened.store.last_batch()["status"] == "collected"
        assert (counts_of(opened)["answers_wanted"] > 10).any()


@pytest.mark.parametrize(
    ("section", "says"),
    [
        ({"min_flips": -1}, "[fragility] min_flips must be a whole number in [0, 1000], got -1"),
        ({"min_flips": 2.5}, "[fragility] min_flips must be a whole number"),
        ({"min_flips": 2, "maximum": 0}, "[fragility] maximum must be a whole number in [1, 2000]"),
        ({"min_flip": 2}, "unknown [fragility] setting min_flip (did you mean 'min_flips'?)"),
        ({"min_flips": 1}, "[fragility] min_flips = 1 asks no further answers"),
    ],
)
def test_bad_fragility_settings_are_refused_in_one_line(tmp_path, section, says):
    project = demo(tmp_path / "p", section)
    state = (project / "state.sqlite").read_bytes()
    one_line(crowdprefs("run", project), says)
    assert (project / "state.sqlite").read_bytes() == state


def test_fragility_with_the_bradley_terry_rule_is_refused_before_a_batch(tmp_path):
    project = demo(tmp_path / "p", {"min_flips": 2})
    path = project / CONFIG_NAME
    data = tomllib.loads(path.read_text())
    data["aggregation"]["rule"] = "bradley-terry"
    path.write_text(tomli_w.dumps(data))
    one_line(crowdprefs("run", project), "turn one of them off")
    with Project(project) as opened:
        assert opened.store.last_batch() is None
