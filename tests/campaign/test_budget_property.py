"""The budget holds whatever happens between commands: no sequence of setting changes (reward,
fees, answers per pair), commands killed half-way and resumed, or partial publishes makes the
spending pass the budget. The spending is counted here, apart from the project: each HIT the
crowd is handed is priced at the settings of the moment, by MTurk's rule written out again
(:func:`price`), so a HIT stored at a wrong price fails the test even where the budget check
and the committed cost agree with each other."""

from __future__ import annotations

import shutil
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from crowdprefs.campaign import driver
from crowdprefs.campaign.budget import FeeModel
from crowdprefs.campaign.project import Project
from crowdprefs.crowds import get_crowd
from crowdprefs.demo import create_demo_project
from crowdprefs.errors import BudgetError, StateError

BUDGET = 6.0


class Killed(Exception):
    """The process died in the middle of a command."""


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    root = tmp_path_factory.mktemp("budget")
    with create_demo_project(root, answers_per_pair=3) as project:
        project.save_settings(replace(project.settings, budget=BUDGET))
    return root  # the project and the truth its simulated crowd reads beside it


money = st.floats(0, 0.2, allow_nan=False).map(lambda x: round(x, 3))
changes = st.one_of(
    st.tuples(st.just("reward"), money),
    st.tuples(st.just("fees"), st.tuples(st.floats(0, 1).map(lambda x: round(x, 2)), money)),
    st.tuples(st.just("answers"), st.integers(1, 6)),
    st.tuples(st.just("step"), st.booleans()),
    st.tuples(st.just("kill"), st.integers(0, 30)),
)


def change_settings(project: Project, what: str, value) -> None:
    settings = project.settings
    if what == "reward":
        settings = replace(settings, reward=value)
    elif what == "fees":
        settings = replace(settings, fees=FeeModel(rate=value[0], rate_10_or_more=value[0],
                                                   minimum=value[1]))  # fmt: skip
    else:
        settings = replace(settings, answers_per_pair=value)
    project.save_settings(settings)


def price(reward: float, rate: float, rate_10_or_more: float, minimum: float, size: int) -> float:
    """What one HIT of ``size`` assignments costs on MTurk: each assignment its reward and a
    commission of ``rate`` (``rate_10_or_more`` from 10 assignments), at least ``minimum``,
    none on an unpaid assignment."""
    if reward == 0:
        return 0.0
    commission = max(minimum, reward * (rate_10_or_more if size >= 10 else rate))
    return size * (reward + commission)


def step(project: Project, partial: bool, spent: list[float], kill_after: int | None = None):
    """One command of the campaign where it stands, adding to ``spent`` what each HIT handed to
    the crowd costs at the settings of the moment; with ``kill_after``, the crowd dies after
    publishing that many pairs of the batch."""
    crowd = get_crowd("simulated", project)
    publish = crowd.publish
    fees = project.settings.fees
    terms = (project.settings.reward, fees.rate, fees.rate_10_or_more, fees.minimum)

    def counted(project, pairs):
        pairs = pairs if kill_after is None else pairs.iloc[:kill_after]
        publish(project, pairs)
        spent.extend(price(*terms, int(size)) for size in pairs["answers_wanted"])
        if kill_after is not None:
            raise Killed

    crowd.publish = counted
    last = project.store.last_batch()
    state = None if last is None else last["status"]
    try:
        if state in (None, "aggregated"):
            driver.next_batch(project)
        elif state == "built":
            driver.publish(project, crowd, partial=partial or kill_after is not None)
        elif state == "published":
            driver.collect(project, crowd)
        else:
            driver.aggregate(project)
    except (BudgetError, StateError, Killed):
        pass


@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(changes, min_size=1, max_size=16))
def test_no_sequence_of_changes_kills_and_resumes_spends_past_the_budget(
    template, tmp_path_factory, actions
):
    copy = tmp_path_factory.mktemp("run") / "copy"
    shutil.copytree(template, copy)
    root = copy / "project"
    spent: list[float] = []
    for what, value in actions:
        with Project(root) as project:  # every command opens the project anew: a resume
            if what == "step":
                step(project, value, spent)
            elif what == "kill":
                step(project, True, spent, kill_after=value)
            else:
                change_settings(project, what, value)
            committed = driver.committed_cost(project)
        assert round(sum(spent), 2) <= BUDGET + 1e-9  # in cents, as the project counts
        assert committed == pytest.approx(sum(spent), abs=0.006)
    event("spent" if committed > 0 else "spent nothing")
    event("at the budget" if committed > BUDGET - 0.5 else "below the budget")
