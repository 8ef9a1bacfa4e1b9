"""The crowd-model fit at scale: bootstrap replicates are pure functions of (seed, replicate)
that can be pickled and run in any order, progress is reported, the vectorised pieces agree
with their plain definitions, and the activity fit is linear in the workers."""

from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest
from threadpoolctl import threadpool_limits

from crowdprefs.quality import crowd_fit as C
from crowdprefs.quality.crowd_model import CrowdModel

T0 = pd.Timestamp("2024-03-01", tz="UTC")


def answers(pairs: int = 60, per: int = 5, workers: int = 40, seed: int = 3) -> pd.DataFrame:
    """Random answers to ``pairs`` pairs by ``per`` distinct workers each, over 4 iterations."""
    rng = np.random.default_rng(seed)
    pair = np.repeat(np.arange(pairs), per)
    worker = np.concatenate([rng.choice(workers, per, replace=False) for _ in range(pairs)])
    created = T0 + pd.to_timedelta(pair % 4 * 10, unit="h")
    return pd.DataFrame(
        {
            "pair_id": pair,
            "worker_id": "w" + worker.astype(str),
            "choice": rng.choice(["A", "equal", "B"], len(pair), p=[0.4, 0.2, 0.4]),
            "a_is_x": (rng.random(len(pair)) < 0.5).astype(int),
            "seconds": rng.lognormal(np.log(12), 0.5, len(pair)).round(1),
            "iteration": pair % 4 + 1,
            "created_at": created,
            "accepted_at": created + pd.to_timedelta(rng.integers(60, 4000, len(pair)), "s"),
            "submitted_at": created + pd.to_timedelta(rng.integers(4000, 9000, len(pair)), "s"),
        }
    )


def test_replicates_are_pure_functions_of_the_seed_and_their_index(monkeypatch):
    shared = {}
    replicate = C.bootstrap_replicate

    def spy(given, r):
        shared["it"] = given
        return replicate(given, r)

    monkeypatch.setattr(C, "bootstrap_replicate", spy)
    done = []
    fit = C.fit_crowd_model(answers(), bootstrap=4, seed=7, on_replicate=done.append)
    assert done == [1, 2, 3, 4] and len(fit.replicates) == 4
    copy = pickle.loads(pickle.dumps(shared["it"]))  # what a process pool would receive
    with threadpool_limits(1):  # as every runner runs a task (a threaded BLAS sums otherwise)
        backwards = [replicate(copy, r) for r in (3, 2, 1, 0)][::-1]
    assert backwards == fit.replicates
    assert len({m.noise for m in fit.replicates}) > 1  # the replicates differ


def test_resampled_workers_take_their_answers_along():
    frame = answers()
    data = C._codes(frame, None)
    drawn = np.array([3, 3, 0, 7] + [1] * (data.workers - 4))
    sample, rows = data.resampled(drawn)
    for i, w in enumerate(drawn[:4]):
        own = np.flatnonzero(data.worker == w)
        np.testing.assert_array_equal(rows[sample.worker == i], own)
        np.testing.assert_array_equal(sample.pair[sample.worker == i], data.pair[own])
    assert sample.workers == len(drawn)


def test_time_fields_follow_their_definition():
    frame = answers().assign(seconds=lambda f: f["seconds"].where(f.index % 9 != 0, 0.0))
    careless = pd.Index(["w1", "w5"])
    got = C.fit_times(frame, careless, CrowdModel())
    ok = frame[frame["seconds"] > 0]
    median = ok.groupby("worker_id")["seconds"].median()
    enough = ok["worker_id"].value_counts() >= 3
    residual = np.log(ok["seconds"]) - np.log(ok["worker_id"].map(median))
    assert got["median_seconds"] == pytest.approx(median.median())
    assert got["worker_seconds_spread"] == pytest.approx(
        np.log(median[enough[enough].index]).std(ddof=1)
    )
    assert got["answer_seconds_spread"] == pytest.approx(residual.std(ddof=1))
    assert got["careless_seconds"] == pytest.approx(median[careless].median())


def test_inclusion_chances_sum_to_the_workers_drawn_and_match_sampling():
    weight = 1.0 / np.arange(1, 31) ** 1.2
    chances = C.inclusion_chances(weight, np.array([1, 5, 30, 40]))
    np.testing.assert_allclose(chances.sum(axis=1), [1, 5, 30, 30], rtol=1e-6)
    assert (np.diff(chances[1]) <= 0).all() and (chances[2:] == 1).all()
    rng = np.random.default_rng(0)  # successive sampling: the 5 largest Gumbel keys
    keys = np.log(weight) - np.log(-np.log(rng.random((20_000, len(weight)))))
    drawn = np.argsort(-keys, axis=1)[:, :5]
    seen = np.bincount(drawn.reshape(-1), minlength=len(weight)) / len(drawn)
    np.testing.assert_allclose(chances[1], seen, atol=0.03)


def test_activity_fit_of_many_workers_is_quick_and_small():
    """6,000 workers on 6,667 pairs of 9 answers: the former simulation held 6 × pairs × workers
    keys (1.9 GB); the fit now works per worker and distinct pair size."""
    rng = np.random.default_rng(2)
    counts = np.bincount(rng.integers(0, 6000, 60_003), minlength=6000)
    assert C.fit_activity(counts, np.full(6667, 9)) < 0.2  # uniform activity
