"""MTC, simulation against complete judgments."""

from __future__ import annotations

import numpy as np
import pytest
from mtc_data import make_metadata

from crowdprefs.errors import InputError
from crowdprefs.evaluation import mtc


def test_simulation_with_uniform_estimates_stops_at_target_and_is_exact_at_the_end(small):
    _, col, truth = small
    est = mtc.UniformEstimator(col)
    select = mtc.make_selector("reference", col, 3, 2)
    sim = mtc.simulate(col, truth, est, select, "fine", target=1.01)
    assert sim.log["judgments"].iloc[-1] == col.n_pairs
    assert sim.log["accuracy"].iloc[-1] == 1.0
    assert sorted(sim.order.tolist()) == list(range(col.n_pairs))
    stop = mtc.simulate(col, truth, est, select, "fine", target=0.9)
    assert stop.stopped and stop.log["confidence"].iloc[-1] >= 0.9
    assert (stop.log["confidence"].iloc[:-1] < 0.9).all()
    assert stop.log["judgments"].diff().dropna().le(6).all()


def test_simulation_needs_a_complete_oracle(small):
    _, col, truth = small
    partial = truth.copy()
    partial[3] = np.nan
    with pytest.raises(InputError, match="lacks"):
        mtc.simulate(
            col,
            partial,
            mtc.UniformEstimator(col),
            mtc.make_selector("reference", col, 1, 1),
            "fine",
        )


def test_adaptive_simulation_with_the_fitted_model_runs_to_the_end(small):
    _, col, truth = small
    meta = mtc.pair_metadata(col, make_metadata(col, 3))
    est = mtc.make_estimator("fitted", col, "fine", meta, effects=True)
    select = mtc.make_selector("adaptive", col, 5, 1)
    sim = mtc.simulate(col, truth, est, select, "fine", target=0.999)
    assert sim.log["judgments"].is_monotonic_increasing
    assert sim.log["confidence"].between(0.5, 1.0).all()
    assert sim.log["accuracy"].iloc[-1] >= 0.8
