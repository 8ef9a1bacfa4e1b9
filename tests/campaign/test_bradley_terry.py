"""The tie-aware Bradley–Terry model with worker reliabilities."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import optimize, stats

from crowdprefs.campaign import bradley_terry as bt
from crowdprefs.errors import InputError
from crowdprefs.quality.crowd_model import CrowdModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from preference_crowd import all_pairs, crowd_answers, truth_lists  # noqa: E402

TRUTH = truth_lists(
    {
        f"q{k}": [[f"a{k}", f"b{k}"], [f"c{k}"], [f"d{k}", f"e{k}", f"f{k}"], [f"g{k}"]]
        for k in range(4)
    }
)


def coded(answers: pd.DataFrame) -> dict:
    """The integer codes :func:`fit_bradley_terry` takes, for answers on ``TRUTH``'s items."""
    items = pd.Series(
        np.arange(len(TRUTH)), index=pd.MultiIndex.from_frame(TRUTH[["query", "document"]])
    )
    workers, names = pd.factorize(answers["worker"])
    return {
        "first": items.loc[list(zip(answers["query"], answers["left"], strict=True))].to_numpy(),
        "second": items.loc[list(zip(answers["query"], answers["right"], strict=True))].to_numpy(),
        "outcome": answers["label"].map({"left": 1, "equal": 0, "right": -1}).to_numpy(),
        "worker": workers,
        "block": pd.factorize(TRUTH["query"])[0],
        "names": names,
    }


def fit(answers: pd.DataFrame, **options) -> tuple[bt.BradleyTerryFit, pd.Index]:
    codes = coded(answers)
    names = codes.pop("names")
    return bt.fit_bradley_terry(**codes, n_items=len(TRUTH), **options), names


def relation_accuracy(groups: np.ndarray) -> float:
    """The share of candidate pairs whose relation (more, equal, less similar) the groups get
    right against ``TRUTH``, averaged over queries."""
    shares = []
    for _, query in TRUTH.assign(found=groups).groupby("query"):
        true, found = query["group"].to_numpy(), query["found"].to_numpy()
        upper = np.triu_indices(len(true), 1)
        same = np.sign(np.subtract.outer(true, true)) == np.sign(np.subtract.outer(found, found))
        shares.append(same[upper].mean())
    return float(np.mean(shares))


def test_the_probabilities_are_davidsons_and_rao_kuppers_formulas():
    pi_i, pi_j = 3.0, 0.5
    d = np.log(pi_i / pi_j)
    nu = 0.8
    denominator = pi_i + pi_j + nu * np.sqrt(pi_i * pi_j)
    davidson = [pi_i / denominator, nu * np.sqrt(pi_i * pi_j) / denominator, pi_j / denominator]
    assert bt.outcome_probabilities(d, nu, "davidson")[0] == pytest.approx(davidson)
    theta = 1.7
    rao_kupper = [
        pi_i / (pi_i + theta * pi_j),
        (theta**2 - 1) * pi_i * pi_j / ((pi_i + theta * pi_j) * (theta * pi_i + pi_j)),
        pi_j / (theta * pi_i + pi_j),
    ]
    assert bt.outcome_probabilities(d, theta, "rao-kupper")[0] == pytest.approx(rao_kupper)
    far = bt.outcome_probabilities([-40.0, 40.0], theta, "rao-kupper")
    assert np.isfinite(far).all() and far.sum(axis=1) == pytest.approx([1.0, 1.0])


@pytest.mark.parametrize("ties", bt.TIE_MODELS)
@pytest.mark.parametrize("reliability", [True, False])
def test_the_log_posterior_s_gradient_and_curvature_are_exact(ties, reliability):
    rng = np.random.default_rng(3)
    first = rng.integers(0, 6, 200)
    second = (first + rng.integers(1, 6, 200)) % 6
    problem = bt._Problem.build(
        first, second, rng.integers(0, 3, 200), rng.integers(0, 5, 200), 6, 5, ties,
        reliability, np.zeros(6, int),
    )  # fmt: skip
    theta = rng.normal(0, 1, problem.size)
    value, grad, curvature = bt._log_posterior(theta, problem, order=2)
    assert bt._log_posterior(theta, problem, order=0) == value
    error = optimize.check_grad(
        lambda t: bt._log_posterior(t, problem, 0),
        lambda t: bt._log_posterior(t, problem)[1],
        theta,
    )
    assert error < 1e-5 * np.linalg.norm(grad)
    # the curvature product is minus the Hessian: compare with differences of the gradient
    v = rng.normal(0, 1, problem.size)
    h = 1e-5
    numeric = -(
        bt._log_posterior(theta + h * v, problem)[1] - bt._log_posterior(theta - h * v, problem)[1]
    ) / (2 * h)
    assert curvature.times(v) == pytest.approx(numeric, rel=1e-4, abs=1e-4)
    # the preconditioner is the inverse of a positive definite matrix
    r = rng.normal(0, 1, problem.size)
    assert r @ curvature.precondition(r) > 0


@pytest.mark.parametrize("ties", bt.TIE_MODELS)
def test_a_known_ordering_is_recovered_from_simulated_answers(ties):
    answers, _ = crowd_answers(TRUTH, all_pairs(TRUTH), model=CrowdModel(workers=30, bots=0))
    result, _ = fit(answers, ties=ties)
    assert result.converged
    truth = TRUTH.assign(score=result.scores, group_found=result.groups)
    for _, query in truth.groupby("query"):
        tau = stats.kendalltau(-query["group"], query["score"]).statistic
        assert tau > 0.8
        # every candidate of a more similar true group scores above those two groups below
        means = query.groupby("group")["score"].agg(["min", "max"])
        assert (means["min"].to_numpy()[:-2] > means["max"].to_numpy()[2:]).all()
    assert (truth["group_found"] == truth["group"]).all()
    assert result.tie > (1 if ties == "rao-kupper" else 0)


def test_careless_workers_get_low_reliability_and_robots_an_equal_noise():
    model = CrowdModel(workers=30, bots=2, careless_share=0.2)
    answers, pool = crowd_answers(TRUTH, all_pairs(TRUTH), model=model)
    result, names = fit(answers)
    kind = pd.Series(pool.kind, index=pool.ids).reindex(names).to_numpy()
    reliability = result.reliability
    assert (kind == "careless").sum() >= 3
    assert reliability[kind == "careless"].max() < np.median(reliability[kind == "honest"])
    assert (
        reliability[kind == "careless"].mean() < 0.55 < 0.8 < np.mean(reliability[kind == "honest"])
    )
    answered = answers["worker"].value_counts().reindex(names).to_numpy()
    robots = (kind == "bot") & (answered >= 20)
    assert robots.any()
    assert (reliability[robots] < 0.5).all()
    assert (result.noise[robots, 1] > 0.75).all()  # when not following the model: "equal"
    # trusting every answer instead gets more candidate pairs wrong (more, equal or less)
    trusting, _ = fit(answers, reliability=False)
    assert relation_accuracy(result.groups) > relation_accuracy(trusting.groups) + 0.05


def test_answers_all_equal_make_one_group_and_a_large_tie_parameter():
    result = bt.fit_bradley_terry(
        [0, 0, 1] * 3, [1, 2, 2] * 3, [0] * 9, np.repeat([0, 1, 2], 3), ties="davidson"
    )
    assert result.groups.tolist() == [1, 1, 1]
    assert result.scores == pytest.approx(0.0, abs=1e-6)
    assert result.tie > 5


def test_without_ties_davidsons_parameter_shrinks_and_groups_separate():
    first, second = np.array([0, 1, 0] * 20), np.array([1, 2, 2] * 20)
    result = bt.fit_bradley_terry(first, second, np.ones(60, int), reliability=False)
    assert result.tie < 0.05
    assert result.groups.tolist() == [1, 2, 3]
    assert result.scores[0] > result.scores[1] > result.scores[2]


def test_bad_inputs_end_in_one_line():
    with pytest.raises(InputError, match="unknown tie model 'gauss'"):
        bt.fit_bradley_terry([0], [1], [1], ties="gauss")
    with pytest.raises(InputError, match="outcomes must be"):
        bt.fit_bradley_terry([0], [1], [2])
    with pytest.raises(InputError, match="two different queries"):
        bt.fit_bradley_terry([0], [1], [1], block=[0, 1])
    with pytest.raises(InputError, match="no answers"):
        bt.fit_bradley_terry([], [], [])
    with pytest.raises(InputError, match="must be above 1"):
        bt.outcome_probabilities(0.0, 0.5, "rao-kupper")


def test_a_query_without_answers_keeps_its_prior_scores():
    fit = bt.fit_bradley_terry([0, 0], [1, 1], [1, 0], block=[0, 0, 1, 1, 1], n_items=5)
    assert fit.scores[0] > fit.scores[1]
    assert np.allclose(fit.scores[2:], fit.scores[2])  # nothing known of the second query


def test_the_difference_test_uses_the_null_covariance_of_the_groups():
    answers, _ = crowd_answers(TRUTH, all_pairs(TRUTH), model=CrowdModel(workers=30, bots=0))
    result, _ = fit(answers)
    first, second = np.array([0, 2, 7, 9]), np.array([1, 6, 8, 12])  # pairs within a query
    z, p = result.difference_test(first, second)
    variance = (result.scores[first] - result.scores[second]) ** 2 / z**2
    # a candidate's own null variance is its squared standard error, so Var(s_i − s_j) lies
    # within (se_i − se_j)² … (se_i + se_j)² by Cauchy–Schwarz
    se_i, se_j = result.standard_errors[first], result.standard_errors[second]
    assert ((se_i - se_j) ** 2 - 1e-12 <= variance).all()
    assert (variance <= (se_i + se_j) ** 2 + 1e-12).all()
    assert np.allclose(p, 2 * stats.norm.sf(np.abs(z)))
    # the groups' test is this test: the first candidate of group 2 differs from group 1's head
    top = TRUTH.index[(TRUTH["query"] == "q0")].to_numpy()
    ranked = top[np.argsort(-result.scores[top], kind="stable")]
    head, boundary = ranked[0], ranked[np.argmax(result.groups[ranked] == 2)]
    assert result.difference_test([head], [boundary])[1][0] < 0.05


@pytest.mark.parametrize("ties", bt.TIE_MODELS)
def test_pair_verdicts_are_the_sign_of_significant_score_differences(ties):
    answers, _ = crowd_answers(TRUTH, all_pairs(TRUTH), model=CrowdModel(workers=30, bots=0))
    codes = coded(answers)
    codes.pop("names")
    x = np.array([0, 0, 3, 2])  # q0: a vs b (equal), a vs g, d vs c, c vs a
    y = np.array([1, 6, 2, 0])
    verdict, p = bt.fit_verdicts(
        **codes, x=x, y=y, n_items=len(TRUTH), n_workers=codes["worker"].max() + 1, ties=ties
    )
    assert verdict.tolist() == [0, 1, -1, -1]
    assert p[0] > 0.05 and (p[1:] < 0.05).all()


def test_the_old_name_of_fit_verdicts_still_answers_with_a_warning():
    with pytest.warns(
        DeprecationWarning, match=r"bradley_terry\.pair_verdicts moved to .*fit_verdicts"
    ):
        assert bt.pair_verdicts is bt.fit_verdicts


def one_answer_each(answers: pd.DataFrame) -> pd.DataFrame:
    """The same answers, each given by a worker of its own."""
    return answers.assign(worker=[f"once{k}" for k in range(len(answers))])


def test_with_one_answer_per_worker_the_fit_drops_reliabilities_and_says_so():
    answers, _ = crowd_answers(TRUTH, all_pairs(TRUTH), model=CrowdModel(workers=30, bots=0))
    once = one_answer_each(answers)
    result, _ = fit(once)
    plain, _ = fit(once, reliability=False)
    assert result.fallback is not None and "\n" not in result.fallback
    assert "median 1 answer per worker" in result.fallback
    assert not result.with_reliability and (result.reliability == 1).all()
    assert result.scores == pytest.approx(plain.scores)
    assert result.tie == pytest.approx(plain.tie)
    assert (result.groups == plain.groups).all()
    # forcing the reliabilities still fits them, without a word
    forced, _ = fit(once, reliability=True)
    assert forced.fallback is None and forced.with_reliability
    # 30 answers per worker: identifiable, no fallback
    busy, _ = fit(answers)
    assert busy.fallback is None and busy.with_reliability
    assert (busy.reliability < 1).all()


def test_little_information_about_the_workers_also_falls_back():
    # four answers per worker pass the count, but random answers on four equal candidates look
    # the same whether a worker follows the model or not: nothing is learnt about ρ_w
    rng = np.random.default_rng(1)
    first = rng.integers(0, 4, 240)
    second = (first + rng.integers(1, 4, 240)) % 4
    outcome, worker = rng.integers(-1, 2, 240), np.arange(240) // 4
    result = bt.fit_bradley_terry(first, second, outcome, worker)
    assert result.fallback is not None and "information" in result.fallback
    assert not result.with_reliability
    plain = bt.fit_bradley_terry(first, second, outcome, worker, reliability=False)
    assert result.scores == pytest.approx(plain.scores)
    with pytest.raises(InputError, match="reliability must be"):
        bt.fit_bradley_terry(first, second, outcome, worker, reliability="sometimes")


def test_the_replay_command_says_the_fallback_once(tmp_path):
    import subprocess

    from console_script import crowdprefs

    root = Path(__file__).resolve().parents[2]
    subprocess.run(
        [sys.executable, root / "benchmarks" / "recorded_campaign.py", "--out", tmp_path],
        check=True,
        capture_output=True,
    )
    recorded = pd.read_csv(tmp_path / "results.csv", dtype=str, keep_default_na=False)
    assert recorded["WorkerId"].value_counts().median() >= 10
    once = tmp_path / "once.csv"
    recorded.assign(WorkerId=[f"W{k:05d}" for k in range(len(recorded))]).to_csv(once, index=False)
    for path, warned in ((once, True), (tmp_path / "results.csv", False)):
        run = crowdprefs(
            "replay", path, "--rule", "bradley-terry", "--partial", "-o", tmp_path / "lists.qrel",
            cwd=tmp_path,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        lines = [row for row in run.stderr.splitlines() if "not identifiable" in row]
        assert len(lines) == warned  # one line, though every iteration refits
        if warned:
            assert "median 1 answer per worker" in lines[0]
            assert "fitted without them" in lines[0]
