"""A batch belongs to the crowd it was published to (issue 28, class 6): a bare ``publish`` or
``collect`` goes to the campaign's crowd, every hint names that crowd's commands, and the
simulated crowd never answers a project holding other crowds' answers unless
``--simulated-on-real`` says so. ``prolific publish`` recruits only for a batch the judges'
site offers. Through the ``crowdprefs`` command line (the ``cli`` fixture)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from crowdprefs.campaign import driver
from crowdprefs.campaign.project import Project
from crowdprefs.crowds import get_crowd
from crowdprefs.demo import create_demo_project
from crowdprefs.quality.crowd_model import simulate_answers


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """The demo project (simulated crowd's truth beside it), as the relative path ``project``."""
    create_demo_project(tmp_path, answers_per_pair=3).close()
    monkeypatch.chdir(tmp_path)
    return Path("project")


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def state(root: Path) -> str:
    return hashlib.sha256((root / "state.sqlite").read_bytes()).hexdigest()


def crowds_answering(root: Path) -> set[str]:
    with Project(root) as opened:
        return set(opened.store.answer_crowds())


def test_a_campaign_answered_on_mturk_goes_on_there_and_refuses_the_simulated_crowd(cli, project):
    assert cli("mturk", "publish", project, "--fake")[0] == 0
    code, out, err = cli("mturk", "collect", project, "--fake")
    assert code == 0, err
    assert cli("aggregate", project)[0] == 0
    code, out, _ = cli("status", project)
    assert f"next: crowdprefs mturk publish {project} --fake (it builds the batch)" in out
    assert cli("next", project)[0] == 0
    code, out, _ = cli("status", project)
    assert f"next: crowdprefs publish {project} --crowd mturk-fake" in out

    before = state(project)
    code, _, err = cli("publish", project, "--crowd", "simulated")
    line = one_line(err)
    assert code == 2 and "answers of other crowds" in line and "of the mturk-fake crowd" in line
    assert "--simulated-on-real" in line and state(project) == before
    code, _, err = cli("run", project, "--crowd", "simulated")
    assert code == 2 and "--simulated-on-real" in one_line(err)
    assert crowds_answering(project) == {"mturk-fake"}

    code, out, err = cli("publish", project)  # bare: the campaign's crowd
    assert code == 0 and "to the mturk-fake crowd" in out, err
    code, out, err = cli("collect", project)
    assert code == 0 and "new answers" in out, err
    assert crowds_answering(project) == {"mturk-fake"}


def test_the_simulated_crowd_mixes_in_only_when_told(cli, project):
    with Project(project) as opened:
        driver.next_batch(opened)
        pairs = opened.store.pairs(1)
        crowd = get_crowd("simulated", opened)
        answers = simulate_answers(pairs, crowd.similarity, crowd.pool, crowd.model, crowd.seed)
        opened.store.add_answers("lab", answers.drop(columns="crowd"))  # a results file's
        assert opened.store.advance_batch(1, "collected")
        driver.aggregate(opened)
    code, out, _ = cli("status", project)
    assert f"next: crowdprefs next {project}" in out
    assert cli("next", project)[0] == 0
    code, out, _ = cli("status", project)
    assert (
        f"import its answers with 'crowdprefs import-answers {project} RESULTS.csv --crowd lab'"
        in out
    )
    before = state(project)
    code, _, err = cli("publish", project)  # no crowd of this command answers the campaign
    line = one_line(err)
    assert code == 1 and "go to the lab crowd" in line and "import-answers" in line
    assert state(project) == before
    code, out, err = cli("publish", project, "--crowd", "simulated", "--simulated-on-real")
    assert code == 0 and "to the simulated crowd" in out, err
    assert cli("collect", project)[0] == 0
    assert crowds_answering(project) == {"lab", "simulated"}


def test_a_web_batch_names_its_own_crowd_to_a_command_of_another(cli, project):
    assert cli("next", project)[0] == 0
    assert cli("publish", project, "--crowd", "web")[0] == 0
    code, out, _ = cli("status", project)
    assert f"`crowdprefs serve {project}` moves the campaign on" in out
    code, _, err = cli("mturk", "collect", project, "--fake")
    line = one_line(err)
    assert code == 1 and "belongs to the web crowd" in line
    assert f"next: the judges answer; `crowdprefs serve {project}`" in line
    assert f"mturk collect {project} --fake" not in line  # never itself
    assert f"the next batch can go to mturk-fake: crowdprefs mturk publish {project} --fake" in line
    code, _, err = cli("collect", project, "--crowd", "simulated")
    assert code == 1 and "belongs to the web crowd" in one_line(err)
    code, out, err = cli("collect", project)  # bare: the batch's own crowd
    assert code == 0 and "batch 1 is published" in out, err


def test_prolific_recruits_only_for_a_batch_on_the_judges_site(cli, project):
    assert cli("next", project)[0] == 0
    before = state(project)
    code, _, err = cli("prolific", "publish", project, "--fake")
    line = one_line(err)
    assert code == 1 and "batch 1 is not on the judges' site" in line
    assert f"start 'crowdprefs serve {project}'" in line and state(project) == before
    assert cli("mturk", "publish", project, "--fake")[0] == 0
    code, _, err = cli("prolific", "publish", project, "--fake")
    assert code == 1 and "belongs to the mturk-fake crowd, not the judges' site" in one_line(err)
