"""Flagging during a web campaign: a flagged judge gets no further question and their answers
are handed out again to other judges."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta

import pytest
from test_web import ANSWER_A, ANSWER_B, invite, make_web_project

from crowdprefs.campaign.driver import advance
from crowdprefs.campaign.project import Project
from crowdprefs.crowds.web import WebCrowd
from crowdprefs.quality.review import Reviewer
from crowdprefs.web import assign
from crowdprefs.web.security import token_hash

CLOCK = [datetime.now(UTC)]


def answer_all(project: Project, judge, settings, form) -> int:
    """The judge answers every question handed to them, each in its own time after hearing
    the clips; returns how many."""
    done = 0
    while (a := assign.next_assignment(project, judge, settings, at=CLOCK[0])) is not None:
        CLOCK[0] += timedelta(seconds=30 + 7 * done)
        assert assign.submit(project, judge, a.assignment_id, a.csrf, form, settings, CLOCK[0])
        done += 1
    return done


def test_a_flagged_judge_gets_no_further_question_and_is_replaced(tmp_path):
    root = make_web_project(tmp_path)
    tokens = invite(root, 4)
    with Project(root) as project:
        judges = [project.store.web_judge(token_hash(t)) for t in tokens]
        listed = judges[0].judge_id  # blocked by [review] block, a rule of the flag set
        sections = dict(project.settings.sections)
        sections["review"] = {"flag_each_round": True, "block": [listed]}
        project.save_settings(dataclasses.replace(project.settings, sections=sections))
        settings = assign.WebSettings.from_project(project)
        assert advance(project, WebCrowd(), Reviewer()) == "waiting"
        pairs = len(project.store.pairs(1))
        assert answer_all(project, judges[0], settings, ANSWER_A) == pairs
        for judge in judges[1:]:
            answer_all(project, judge, settings, ANSWER_B)
        # The batch is complete: the review flags the listed judge and drops their answers.
        assert advance(project, WebCrowd(), Reviewer()) == "waiting"
        assert project.store.blocked_workers("web") == {listed}
        answers = project.store.answers(1, include_rejected=True)
        theirs = answers[answers["worker_id"] == listed]
        assert len(theirs) == pairs and (theirs["status"] == "rejected").all()
        decisions = project.store.reviews("web").set_index("assignment_id")["decision"]
        assert (theirs["assignment_id"].map(decisions) == "drop").all()
        assert len(project.store.missing_answers(1)) == pairs
        # The blocked judge is refused; the others answer the pairs again and the batch closes.
        assert assign.next_assignment(project, judges[0], settings, at=CLOCK[0]) is None
        replaced = sum(answer_all(project, j, settings, ANSWER_B) for j in judges[1:])
        assert replaced == pairs
        assert project.store.missing_answers(1).empty
        state = advance(project, WebCrowd(), Reviewer())
        batch = project.store.last_batch()
        assert batch["iteration"] == 2, (state, batch, project.store.reviews("web").to_dict())
        assert assign.next_assignment(project, judges[0], settings, at=CLOCK[0]) is None


def test_a_judge_blocked_while_holding_a_question_cannot_answer_it(tmp_path):
    root = make_web_project(tmp_path)
    first, second = invite(root, 2)
    with Project(root) as project:
        settings = assign.WebSettings.from_project(project)
        assert advance(project, WebCrowd(), Reviewer()) == "waiting"
        judge, other = (project.store.web_judge(token_hash(t)) for t in (first, second))
        held = assign.next_assignment(project, judge, settings, at=CLOCK[0])
        project.store.decide_web_workers([(judge.judge_id, "careless")], [], CLOCK[0].isoformat())
        # The pair's slot goes back to the pool at the next hand-out, not when it expires.
        assert assign.next_assignment(project, other, settings, at=CLOCK[0]) is not None
        assert project.store.web_question(held.assignment_id).assignment.status == "released"
        CLOCK[0] += timedelta(seconds=40)
        with pytest.raises(assign.Gone, match="no longer taken"):
            assign.submit(
                project, judge, held.assignment_id, held.csrf, ANSWER_A, settings, CLOCK[0]
            )
        assert project.store.answers(1, include_rejected=True).empty
