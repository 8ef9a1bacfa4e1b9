"""The crowd model and its fit: workers drawn and sampled as the model says, parameters recovered
from simulated campaigns (with and without the lists), the lean to B measured against the sides
shown, bootstrap intervals, the predictive check, the saved file and ``crowd-model fit``."""

from __future__ import annotations

import dataclasses
import tomllib

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from crowdprefs.campaign import driver
from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.cli.app import app
from crowdprefs.crowds import get_crowd
from crowdprefs.demo import create_demo_project
from crowdprefs.errors import InputError
from crowdprefs.io import read_lists, write_lists
from crowdprefs.quality.crowd_fit import (
    FITTED,
    find_bots,
    fit_activity,
    fit_crowd_model,
    predictive_check,
    save_fit,
)
from crowdprefs.quality.crowd_model import (
    CrowdModel,
    WorkerPool,
    choice_shares,
    distinct_workers,
    load_crowd_model,
    simulate_answers,
)
from crowdprefs.quality.frames import project_answers
from crowdprefs.results_file import write_results

TRUE = CrowdModel(noise=0.9, equal_band=0.8, position_bias=0.3, median_seconds=15.0)


@pytest.fixture(scope="module")
def campaign(tmp_path_factory) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """A whole demo campaign answered by a crowd with known, non-default parameters: its
    answers, the truth that generated them and the lists it produced."""
    root = tmp_path_factory.mktemp("fit") / "demo"
    project = create_demo_project(root)
    settings = project.settings
    section = {
        "truth": "../truth.qrel",
        **{k: getattr(TRUE, k) for k in ("noise", "equal_band", "position_bias", "median_seconds")},
    }
    project.save_settings(dataclasses.replace(settings, sections={"simulated": section}))
    with project:
        driver.run(project, get_crowd("simulated", project))
        return project_answers(project), read_lists(root / "truth.qrel"), driver.lists(project)


@pytest.fixture(scope="module")
def fit(campaign):
    answers, truth, _ = campaign
    return fit_crowd_model(answers, truth, bootstrap=6)


def test_fit_with_the_truth_recovers_the_crowd_that_answered(fit):
    model = fit.model
    assert model.noise == pytest.approx(TRUE.noise, rel=0.1)
    assert model.equal_band == pytest.approx(TRUE.equal_band, rel=0.1)
    assert model.position_bias == pytest.approx(TRUE.position_bias, abs=0.06)
    assert model.noise_spread == pytest.approx(TRUE.noise_spread, abs=0.15)
    assert model.equal_spread == pytest.approx(TRUE.equal_spread, abs=0.15)
    assert 0.0 < model.careless_share < 0.15  # 5% expected; the pool of 80 drew a few
    assert model.median_seconds == pytest.approx(TRUE.median_seconds, rel=0.15)
    assert model.bots == 2 and model.bot_seconds == pytest.approx(8.0)
    assert 70 <= model.workers <= 80
    assert model.activity == pytest.approx(TRUE.activity, abs=0.3)
    assert sum(fit.gap_shares.values()) == pytest.approx(1.0)
    assert fit.gap_shares[0] > 0.2  # QuickSort compares many equally similar pairs


def test_every_fitted_parameter_has_a_bootstrap_interval(fit):
    assert set(fit.intervals) == set(FITTED) and len(fit.replicates) == 6
    for name, (low, high) in fit.intervals.items():
        assert low <= high, name
    low, high = fit.intervals["noise"]
    assert low - 0.1 <= fit.model.noise <= high + 0.1
    assert fit.workers["answers"].sum() == fit.answers
    assert fit.workers["careless"].between(0, 1).all()


def test_fit_without_the_lists_recovers_the_crowd_through_latent_gaps(campaign):
    answers, _, _ = campaign
    fitted = fit_crowd_model(answers)
    model = fitted.model
    assert model.noise == pytest.approx(TRUE.noise, rel=0.3)
    assert model.equal_band == pytest.approx(TRUE.equal_band, rel=0.3)
    assert model.position_bias == pytest.approx(TRUE.position_bias, abs=0.12)
    assert model.equal_band / model.noise == pytest.approx(TRUE.equal_band / TRUE.noise, rel=0.2)
    assert model.median_seconds == pytest.approx(TRUE.median_seconds, rel=0.15)
    assert model.bots == 2 and model.activity == pytest.approx(TRUE.activity, abs=0.4)
    assert sum(fitted.gap_shares.values()) == pytest.approx(1.0)
    assert fitted.gap_shares[0] > 0.2


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
        answers = answers.merge(pairs[["pair_id", "a_is_x"]], on="pair_id")
        fitted = fit_crowd_model(answers).model
        bands.append(fitted.equal_band / fitted.noise)
    assert bands[0] == pytest.approx(0.5 / 0.7, rel=0.25)
    assert bands[1] == pytest.approx(1.5 / 0.7, rel=0.25)


def test_the_lean_to_b_is_measured_against_the_sides_shown():
    """Pivots shown as B in 74% of pairs and usually more similar than the other candidate make
    B the usual answer of an unbiased crowd; the fit, reading the sides shown and the pivots,
    finds no lean to B."""
    rng = np.random.default_rng(3)
    n = 500
    better_pivot = rng.random(n) < 0.7
    pairs = pd.DataFrame(
        {
            "pair_id": np.arange(n),
            "query": "q",
            "x": np.where(better_pivot, "low", "high"),
            "y": np.where(better_pivot, "high", "low"),
            "a_is_x": (rng.random(n) < 0.74).astype(int),
            "answers_wanted": 8,
        }
    )
    model = CrowdModel(position_bias=0.0, bias_spread=0.05, careless_share=0.0, bots=0)
    similarity = {("q", "high"): -1.0, ("q", "low"): -3.0}
    answers = simulate_answers(pairs, similarity, WorkerPool.draw(model, 5), model, seed=5)
    answers = answers.merge(pairs[["pair_id", "query", "x", "y", "a_is_x"]], on="pair_id")
    shares = answers["choice"].value_counts(normalize=True)
    assert shares["B"] - shares["A"] > 0.1  # B looks favoured when sides are ignored
    fitted = fit_crowd_model(answers).model
    assert fitted.position_bias == pytest.approx(0.0, abs=0.1)


def test_distinct_workers_follow_the_weights_without_repeating():
    rng = np.random.default_rng(0)
    weight = np.array([8.0, 4.0, 2.0, 1.0, 1.0])
    taken = np.full((20_000, 4), -1)
    for slot in range(4):
        taken[:, slot] = distinct_workers(
            weight, taken[:, :slot], lambda t, rows: rng.random(len(rows))
        )
    assert all(len(set(row)) == 4 for row in taken[:200])
    first = np.bincount(taken[:, 0], minlength=5) / len(taken)
    np.testing.assert_allclose(first, weight / weight.sum(), atol=0.01)
    # second draw: P(j | first i) = w_j / (total − w_i)
    second = (taken[:, 0] == 0) & (taken[:, 1] == 1)
    assert second.mean() == pytest.approx(8 / 16 * 4 / 8, abs=0.01)


def test_activity_fit_reproduces_the_busiest_workers():
    """Answers drawn by successive sampling with Zipf weights (exponent 0.8) over 79 workers:
    the fit finds the exponent from the head of the answers per worker."""
    rng = np.random.default_rng(1)
    workers, pairs = 79, 280
    weight = 1.0 / np.arange(1, workers + 1) ** 0.8
    taken = np.full((pairs, 10), -1)
    for slot in range(10):
        taken[:, slot] = distinct_workers(
            weight, taken[:, :slot], lambda t, rows: rng.random(len(rows))
        )
    counts = np.bincount(taken.reshape(-1), minlength=workers)
    assert fit_activity(counts[counts > 0], np.full(pairs, 10)) == pytest.approx(0.8, abs=0.2)


def test_choice_shares_are_probabilities_and_mirror_with_the_gap():
    gap = np.arange(-3, 4, dtype=float)
    shares = choice_shares(0.7, 1.1, 0.0, gap)
    np.testing.assert_allclose(shares.sum(axis=1), 1.0)
    np.testing.assert_allclose(shares[::-1, ::-1], shares, atol=1e-12)
    assert shares[3, 1] == shares[:, 1].max()
    leaning = choice_shares(0.7, 1.1, 0.4, np.zeros(1))[0]
    assert leaning[2] > leaning[0]  # a positive bias leans to B


def test_predictive_check_compares_the_recording_with_its_simulations(campaign):
    """Fitted against the lists it produced, the model simulates the campaign it came from:
    pairs within 10%, iterations within 1.5, answer shares and agreement within 0.05."""
    answers, _, lists = campaign
    model = fit_crowd_model(answers, lists).model
    check = predictive_check(model, answers, lists, AggregationRule(), campaigns=12)
    assert check.attrs["design"].answers_per_pair == 10
    assert check.loc["pairs in iteration 1", "recorded"] == check.loc["pairs in iteration 1", "p5"]
    assert check.loc["pairs", "simulated"] == pytest.approx(check.loc["pairs", "recorded"], rel=0.1)
    assert abs(check.loc["iterations", "simulated"] - check.loc["iterations", "recorded"]) <= 1.5
    pivots = check.loc["iterations, recorded pivots"]  # fresh answers, the recording's pivots
    assert pivots["recorded"] == check.loc["iterations", "recorded"]
    assert 1 <= pivots["p5"] <= pivots["simulated"] <= pivots["p95"]
    for share in ("share A", "share equal", "share B", "agreement"):
        row = check.loc[share]
        assert row["simulated"] == pytest.approx(row["recorded"], abs=0.05), share


def test_find_bots():
    answers = pd.DataFrame(
        {
            "worker_id": ["bot"] * 6 + ["slow"] * 6 + ["few"] * 3,
            "choice": ["equal"] * 15,
            "seconds": [8.0] * 6 + [8.0, 20.0, 9.0, 30.0, 8.0, 11.0] + [8.0] * 3,
        }
    )
    assert find_bots(answers) == ["bot"]


def test_fit_needs_enough_pairs_and_placed_candidates(campaign):
    answers = pd.DataFrame(
        {"pair_id": [1, 1], "worker_id": ["a", "b"], "choice": ["A", "equal"], "seconds": [3, 4]}
    )
    with pytest.raises(InputError, match="at least 10"):
        fit_crowd_model(answers)
    with pytest.raises(InputError, match="lack"):
        fit_crowd_model(answers.drop(columns="seconds"))
    recorded, truth, _ = campaign
    with pytest.raises(InputError, match="do not place"):
        fit_crowd_model(recorded, truth[truth["query"] != truth["query"].iloc[0]])


def test_saved_fit_round_trips(tmp_path, fit):
    save_fit(fit, tmp_path / "m.toml")
    assert load_crowd_model(tmp_path / "m.toml") == fit.model
    saved = tomllib.loads((tmp_path / "m.toml").read_text())
    assert saved["fit"]["intervals"]["noise"] == list(fit.intervals["noise"])
    (tmp_path / "bad.toml").write_text("[simulated]\nspeed = 3\n")
    with pytest.raises(InputError, match="speed"):
        load_crowd_model(tmp_path / "bad.toml")
    (tmp_path / "negative.toml").write_text("[simulated]\nnoise = -1\n")
    with pytest.raises(InputError, match="noise"):
        load_crowd_model(tmp_path / "negative.toml")
    with pytest.raises(InputError, match="not found"):
        load_crowd_model(tmp_path / "missing.toml")


def test_crowd_model_fit_command_prints_intervals_and_the_predictive_check(tmp_path, campaign):
    answers, _, lists = campaign
    write_results(answers, tmp_path / "results.csv")
    write_lists(lists, tmp_path / "lists.qrel")
    runner = CliRunner()
    args = ["crowd-model", "fit", str(tmp_path / "results.csv"), "-o", str(tmp_path / "m.toml")]
    result = runner.invoke(
        app,
        [*args, "--lists", str(tmp_path / "lists.qrel"), "--bootstrap", "3", "--campaigns", "4"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    assert "95% interval" in result.output and "predictive check" in result.output
    assert "pairs in iteration 1" in result.output
    model = load_crowd_model(tmp_path / "m.toml")
    assert model.position_bias == pytest.approx(TRUE.position_bias, abs=0.12)
    candidates = lists[["query", "document"]]
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


def test_values_the_fit_did_not_fit_say_so(tmp_path, campaign):
    """A spread of 0 (one work time for every answer) and a value at a search bound (activity
    just short of ACTIVITY_BOUND, the rounds' bounds) are reported as not fitted."""
    from console_script import crowdprefs

    from crowdprefs.quality.crowd_fit import ACTIVITY_BOUND, unfitted

    answers, _, _ = campaign
    write_results(answers.assign(seconds=20.0), tmp_path / "constant.csv")
    ran = crowdprefs(
        "crowd-model", "fit", tmp_path / "constant.csv", "--bootstrap", "0",
        "-o", tmp_path / "m.toml",
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    not_fitted = tomllib.loads((tmp_path / "m.toml").read_text())["fit"]["not_fitted"]
    for name in ("answer_seconds_spread", "worker_seconds_spread"):
        assert not_fitted[name] == "a spread of 0: the recording shows no variation to fit"
    assert "a spread of 0" in " ".join(ran.stdout.split())

    honest = answers[["worker_id", "seconds"]]
    times = pd.DataFrame({"answers": [100.0, 50, 20], "hours": [3.0, 2, 1]})
    near = CrowdModel(activity=ACTIVITY_BOUND - 0.005, answers_per_hour=float(np.exp(10.0)))
    kept = unfitted(honest, [], times, np.ones(3), near)
    assert kept["activity"] == f"at the search's bound {ACTIVITY_BOUND:g}"
    assert kept["answers_per_hour"].startswith("at the search's bound 2.2e+04")
    assert "activity" not in unfitted(honest, [], times, np.ones(3), CrowdModel(activity=3.9))
