"""Budget property: whatever the batch sizes, retries and replacements, MTurk is never asked to
spend more than the budget (the cost of every HIT's MaxAssignments, counted on the fake)."""

from __future__ import annotations

import re
import tomllib

import numpy as np
import pytest
import tomli_w
from console_script import crowdprefs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mturk_campaign import make_project, start_fake

from crowdprefs.campaign import driver
from crowdprefs.campaign.budget import FeeModel, batch_cost
from crowdprefs.campaign.project import CONFIG_NAME, Project
from crowdprefs.crowds.mturk.crowd import MTurkCrowd
from crowdprefs.demo import create_demo_project
from crowdprefs.errors import BudgetError
from crowdprefs.quality.review import Reviewer


def _spent(fake, reward: float, fees: FeeModel) -> float:
    sizes = np.array([h["MaxAssignments"] for h in fake.hits()], dtype=int)
    return float(np.sum(fees.per_assignment(reward, sizes) * sizes)) if len(sizes) else 0.0


@pytest.mark.slow
@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    answers=st.integers(1, 6),
    reward=st.sampled_from([0.01, 0.02, 0.05, 0.25]),
    budget=st.floats(0.0, 4.0),
    partial=st.booleans(),
    retries=st.integers(1, 3),
    careless=st.sampled_from([0.0, 0.6]),
)
def test_spending_never_crosses_the_budget(
    tmp_path_factory, answers, reward, budget, partial, retries, careless
):
    root = tmp_path_factory.mktemp("budget")
    project = make_project(
        root,
        answers=answers,
        checks={"share": 0.5},
        simulated={"truth": "../truth.qrel", "careless_share": careless},
    )
    config = project.root / CONFIG_NAME
    data = tomllib.loads(config.read_text())
    data["crowd"].update({"reward": reward, "budget": budget})
    config.write_text(tomli_w.dumps(data))
    project.close()
    project = Project(root / "project")
    fake, url = start_fake(project)
    crowd = MTurkCrowd(project, target="fake", endpoint_url=url)
    stopped = False
    for _ in range(40):
        if driver.next_batch(project) is None:
            break
        status = project.store.last_batch()["status"]
        try:
            for _ in range(retries):  # a retried step must not spend twice
                if status == "built":
                    driver.publish(project, crowd, partial=partial)
                elif status == "published":
                    driver.collect(project, crowd, Reviewer())
            if status == "collected":
                driver.aggregate(project)
        except BudgetError:
            stopped = True
        if stopped or project.store.last_batch()["status"] == status:
            break
        assert _spent(fake, reward, project.settings.fees) <= budget + 1e-9
    spent = _spent(fake, reward, project.settings.fees)
    assert spent <= budget + 1e-9
    assert abs(spent - driver.committed_cost(project)) < 0.006  # the state agrees with MTurk
    if not fake.hits():
        assert stopped and batch_cost(reward, [answers], project.settings.fees) > 0
    fake.stop()
    project.close()


def _charged(fake, fees: FeeModel) -> float:
    """What MTurk charges for every HIT: its MaxAssignments at the reward it was created with."""
    return sum(
        h["MaxAssignments"] * float(fees.per_assignment(float(h["Reward"]), h["MaxAssignments"]))
        for h in fake.hits()
    )


def test_lowering_the_reward_never_lets_spending_pass_the_budget(tmp_path):
    """HITs already published keep the price they were published at: a lower reward for the
    next batch must not make the past look cheaper and let the budget be crossed."""
    project = make_project(tmp_path / "r", answers=3)
    config = project.root / CONFIG_NAME
    data = tomllib.loads(config.read_text())
    data["crowd"]["reward"] = 0.05
    config.write_text(tomli_w.dumps(data))
    project.close()
    project = Project(tmp_path / "r" / "project")
    fake, url = start_fake(project)
    crowd = MTurkCrowd(project, target="fake", endpoint_url=url)
    driver.run_iteration(project, crowd, review=Reviewer())
    spent = _charged(fake, project.settings.fees)
    assert driver.committed_cost(project) == pytest.approx(spent, abs=0.006)
    # a budget just above what batch 1 cost, and a reward five times lower for batch 2
    data["crowd"].update({"reward": 0.01, "budget": round(spent + 0.03, 2)})
    config.write_text(tomli_w.dumps(data))
    project.close()
    project = Project(tmp_path / "r" / "project")
    assert driver.committed_cost(project) == pytest.approx(spent, abs=0.006)
    driver.next_batch(project)
    with pytest.raises(BudgetError, match="cross the budget"):
        driver.publish(project, crowd, partial=True)
    assert _charged(fake, project.settings.fees) <= project.settings.budget + 1e-9
    fake.stop()
    project.close()


def test_unpaid_answers_cost_nothing_and_paid_ones_pay_the_minimum_fee():
    fees = FeeModel()
    assert batch_cost(0.0, [1, 1, 1], fees) == 0.0  # a volunteer web campaign
    assert batch_cost(0.02, [1, 1, 1], fees) == 0.09  # $0.02 + the $0.01 minimum, three times


def test_hits_of_ten_or_more_assignments_pay_the_higher_commission():
    """MTurk's 40% commission starts at 10 assignments (the 2010 design's size), 20% below."""
    fees = FeeModel()
    assert batch_cost(0.10, [9], fees) == 1.08
    assert batch_cost(0.10, [10], fees) == 1.40
    assert batch_cost(0.10, [11], fees) == 1.54
    assert batch_cost(0.10, [9, 10, 11, 1], fees) == 1.08 + 1.40 + 1.54 + 0.12


def test_a_batch_of_the_2010_design_costing_exactly_the_budget_is_published(tmp_path):
    """10 answers per pair at $0.10 cost $1.40 a pair through the console script: a budget of
    exactly the batch's cost publishes it, one cent less is refused."""
    create_demo_project(tmp_path, answers_per_pair=10).close()
    root = tmp_path / "project"
    built = crowdprefs("next", root)
    cost = round(int(re.search(r"batch 1: (\d+) pairs", built.stdout)[1]) * 1.40, 2)
    config = tomllib.loads((root / CONFIG_NAME).read_text())
    for budget in (round(cost - 0.01, 2), cost):
        config["crowd"] |= {"reward": 0.10, "budget": budget}
        (root / CONFIG_NAME).write_text(tomli_w.dumps(config))
        published = crowdprefs("publish", root)
        if budget < cost:
            assert published.returncode == 1, published.stderr
            assert f"this batch costs ${cost:.2f}" in published.stderr
            assert f"the budget of ${budget:.2f}" in published.stderr
    assert published.returncode == 0, published.stderr
    assert f"${cost:.2f} committed (budget ${cost:.2f})" in crowdprefs("status", root).stdout
