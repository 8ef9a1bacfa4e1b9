"""The Bradley–Terry fit's work per answer: distinct pairs, vectorised groups, BLAS threads."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special
from threadpoolctl import threadpool_info

from crowdprefs.campaign import bradley_terry as bt


def answers(queries: int, per_query: int, seed: int = 11) -> dict[str, np.ndarray]:
    """Davidson answers on queries of six candidates (scores in three tied levels) by twelve
    workers, three of whom answer at random."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, queries * 6).astype(float)
    query = np.repeat(np.arange(queries), per_query)
    first = query * 6 + rng.integers(0, 6, len(query))
    second = query * 6 + (first % 6 + rng.integers(1, 6, len(query))) % 6
    worker = rng.integers(0, 12, len(query))
    p = bt.outcome_probabilities(truth[first] - truth[second], 1.0)
    p[worker < 3] = 1 / 3
    outcome = 1 - (rng.random(len(query))[:, None] > p.cumsum(axis=1)).sum(axis=1)
    return {
        "first": first,
        "second": second,
        "outcome": outcome,
        "worker": worker,
        "block": np.repeat(np.arange(queries), 6),
    }


def test_the_answers_reduce_to_their_distinct_ordered_pairs():
    data = answers(5, 200)
    problem = bt._Problem.build(
        data["first"], data["second"], 1 - data["outcome"], data["worker"], 30, 12,
        "davidson", True, data["block"],
    )  # fmt: skip
    pairs = set(zip(data["first"].tolist(), data["second"].tolist(), strict=True))
    assert len(problem.pair_first) == len(pairs) <= 5 * 30
    assert problem.counts.sum() == len(data["first"])
    # each answer points at its own pair, outcome and worker
    order = np.lexsort((1 - data["outcome"], data["second"], data["first"]))
    pair = problem.pair_outcome // 3
    assert (problem.pair_first[pair] == data["first"][order]).all()
    assert (problem.pair_second[pair] == data["second"][order]).all()
    assert (problem.pair_outcome % 3 == 1 - data["outcome"][order]).all()
    assert (problem.worker_outcome % 3 == 1 - data["outcome"][order]).all()


def test_the_order_of_the_answers_does_not_matter():
    data = answers(8, 150)
    fit = bt.fit_bradley_terry(**data)
    shuffled = np.random.default_rng(2).permutation(len(data["first"]))
    again = bt.fit_bradley_terry(**{k: v[shuffled] if k != "block" else v for k, v in data.items()})
    assert again.scores == pytest.approx(fit.scores, abs=1e-4)  # within the stopping rule
    assert again.reliability == pytest.approx(fit.reliability, abs=1e-4)
    assert (again.groups == fit.groups).all()
    assert again.log_likelihood == pytest.approx(fit.log_likelihood, rel=1e-7)


def test_the_log_likelihood_is_the_sum_over_answers_of_the_mixture_probability():
    data = answers(4, 100)
    fit = bt.fit_bradley_terry(**data)
    p = bt.outcome_probabilities(fit.scores[data["first"]] - fit.scores[data["second"]], fit.tie)
    col = 1 - data["outcome"]
    eta = fit.reliability[data["worker"]]
    rows = np.arange(len(col))
    mixture = eta * p[rows, col] + (1 - eta) * fit.noise[data["worker"], col]
    assert fit.log_likelihood == pytest.approx(np.log(mixture).sum(), rel=1e-12)


def sequential_groups(scores, covariance, alpha):
    """The groups' walk of the module docstring, one candidate at a time."""
    z = special.ndtri(1 - alpha / 2)
    ranked = np.argsort(-scores, kind="stable")
    head, group, groups = ranked[0], 1, np.empty(len(scores), int)
    for item in ranked:
        var = covariance[head, head] + covariance[item, item] - 2 * covariance[head, item]
        if scores[head] - scores[item] > z * np.sqrt(var):
            head, group = item, group + 1
        groups[item] = group
    return groups


@pytest.mark.parametrize("alpha", [0.05, 0.3])
def test_the_vectorised_groups_walk_each_query_as_the_definition_does(alpha):
    data = answers(40, 60)
    fit = bt.fit_bradley_terry(**data, alpha=alpha)
    assert len(np.unique(fit.groups)) > 1
    for query in range(40):
        items = np.arange(query * 6, query * 6 + 6)
        i, j = np.meshgrid(items, items, indexing="ij")
        variance = fit.null_covariance.difference_variance(i.ravel(), j.ravel()).reshape(6, 6)
        # back from Var(s_i − s_j) to a covariance with the same differences
        se2 = fit.standard_errors[items] ** 2
        covariance = (se2[:, None] + se2[None, :] - variance) / 2
        expected = sequential_groups(fit.scores[items], covariance, alpha)
        assert (fit.groups[items] == expected).all()


def test_blas_runs_on_the_documented_threads_during_the_fit(monkeypatch):
    seen = []
    maximise = bt._maximise

    def spying(*args, **kwargs):
        seen.extend(pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas")
        return maximise(*args, **kwargs)

    monkeypatch.setattr(bt, "_maximise", spying)
    bt.fit_bradley_terry(**answers(2, 50))
    assert seen and set(seen) == {bt.BLAS_THREADS}
