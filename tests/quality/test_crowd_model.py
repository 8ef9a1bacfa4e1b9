"""Calibrating the simulated crowd: parameters recovered from simulated campaigns, the saved
file round-trips, and ``crowd-model fit`` reads an MTurk results CSV."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from crowdprefs.campaign import driver
from crowdprefs.cli.app import app
from crowdprefs.crowds import get_crowd
from crowdprefs.crowds.results import write_results
from crowdprefs.crowds.simulated import CrowdModel, WorkerPool, simulate_answers
from crowdprefs.demo import create_demo_project
from crowdprefs.errors import InputError
from crowdprefs.quality.audit import project_answers
from crowdprefs.quality.crowd_model import (
    GAPS,
    answer_shares,
    find_bots,
    fit_crowd_model,
    load_crowd_model,
    save_fit,
)

TRUE = CrowdModel(noise=0.9, equal_band=0.8, position_bias=0.3, median_seconds=15.0)


@pytest.fixture(scope="module")
def campaign_answers(tmp_path_factory) -> pd.DataFrame:
    """A whole demo campaign answered by a crowd with known, non-default parameters."""
    project = create_demo_project(tmp_path_factory.mktemp("fit") / "demo")
    settings = project.settings
    section = {
        "truth": "../truth.qrel",
        **{k: getattr(TRUE, k) for k in ("noise", "equal_band", "position_bias", "median_seconds")},
    }
    project.save_settings(dataclasses.replace(settings, sections={"simulated": section}))
    with project:
        driver.run(project, get_crowd("simulated", project))
        return project_answers(project)


@pytest.fixture(scope="module")
def fit(campaign_answers):
    return fit_crowd_model(campaign_answers)


def test_fit_recovers_the_crowd_that_answered(fit):
    model = fit.model
    assert model.noise == pytest.approx(TRUE.noise, rel=0.3)
    assert model.equal_band == pytest.approx(TRUE.equal_band, rel=0.3)
    assert model.position_bias == pytest.approx(TRUE.position_bias, abs=0.12)
    assert model.median_seconds == pytest.approx(TRUE.median_seconds, rel=0.15)
    assert model.bots == 2 and model.bot_seconds == pytest.approx(8.0)
    assert 40 <= model.workers <= 80
    assert model.activity == pytest.approx(TRUE.activity, abs=0.4)
    assert sum(fit.gap_shares.values()) == pytest.approx(1.0)
    assert fit.gap_shares[0] > 0.2  # QuickSort compares many equally similar pairs


@pytest.mark.slow
def test_fit_tells_an_eager_crowd_from_a_cautious_one():
    """Random pairs of a known truth: a crowd with a narrow "equal" band answers "equal" less,
    and the fit sees it. Without the truth the scale of the gaps is only weakly identified, so
    what is checked is the "equal" tendency relative to the noise (band / noise)."""
    rng = np.random.default_rng(2)
    n = 600
    pairs = pd.DataFrame(
        {
            "pair_id": np.arange(n),
            "query": "q",
            "x": [f"d{i}" for i in rng.integers(0, 12, n)],
            "y": [f"d{i}" for i in rng.integers(0, 12, n)],
            "a_is_x": rng.integers(0, 2, n),
            "answers_wanted": 8,
        }
    )
    similarity = {("q", f"d{i}"): -float(i // 3) for i in range(12)}
    bands = []
    for band in (0.5, 1.5):
        model = CrowdModel(equal_band=band, bots=0)
        answers = simulate_answers(pairs, similarity, WorkerPool.draw(model, 9), model, seed=9)
        fitted = fit_crowd_model(answers).model
        bands.append(fitted.equal_band / fitted.noise)
    assert bands[0] == pytest.approx(0.5 / 0.7, rel=0.25)
    assert bands[1] == pytest.approx(1.5 / 0.7, rel=0.25)


def test_answer_shares_are_probabilities_and_mirror_with_the_gap():
    shares = answer_shares(0.7, 1.1, 0.0, 0.05, CrowdModel())
    assert shares.shape == (len(GAPS), 3)
    np.testing.assert_allclose(shares.sum(axis=1), 1.0)
    np.testing.assert_allclose(shares[::-1, ::-1], shares, atol=1e-12)
    assert shares[len(GAPS) // 2, 1] == shares[:, 1].max()


def test_find_bots():
    answers = pd.DataFrame(
        {
            "worker_id": ["bot"] * 6 + ["slow"] * 6 + ["few"] * 3,
            "choice": ["equal"] * 15,
            "seconds": [8.0] * 6 + [8.0, 20.0, 9.0, 30.0, 8.0, 11.0] + [8.0] * 3,
        }
    )
    assert find_bots(answers) == ["bot"]


def test_fit_needs_enough_pairs():
    answers = pd.DataFrame(
        {"pair_id": [1, 1], "worker_id": ["a", "b"], "choice": ["A", "equal"], "seconds": [3, 4]}
    )
    with pytest.raises(InputError, match="at least 10"):
        fit_crowd_model(answers)
    with pytest.raises(InputError, match="lack"):
        fit_crowd_model(answers.drop(columns="seconds"))


def test_saved_fit_round_trips(tmp_path, fit):
    save_fit(fit, tmp_path / "m.toml")
    assert load_crowd_model(tmp_path / "m.toml") == fit.model
    (tmp_path / "bad.toml").write_text("[simulated]\nspeed = 3\n")
    with pytest.raises(InputError, match="speed"):
        load_crowd_model(tmp_path / "bad.toml")
    with pytest.raises(InputError, match="not found"):
        load_crowd_model(tmp_path / "missing.toml")


def test_crowd_model_fit_command_reads_a_results_csv(tmp_path, campaign_answers):
    write_results(campaign_answers, tmp_path / "results.csv")
    runner = CliRunner()
    result = runner.invoke(
        app, ["crowd-model", "fit", str(tmp_path / "results.csv"), "-o", str(tmp_path / "m.toml")]
    )
    assert result.exit_code == 0, result.output
    model = load_crowd_model(tmp_path / "m.toml")
    assert model.position_bias == pytest.approx(TRUE.position_bias, abs=0.12)
    candidates = campaign_answers[["query", "x"]].drop_duplicates()
    candidates.columns = ["query", "document"]
    candidates.to_csv(tmp_path / "c.csv", index=False)
    planned = runner.invoke(
        app,
        [
            "plan",
            "--candidates",
            str(tmp_path / "c.csv"),
            "--crowd-model",
            str(tmp_path / "m.toml"),
            "--campaigns",
            "3",
        ],
    )
    assert planned.exit_code == 0, planned.output
