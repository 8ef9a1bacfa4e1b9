"""MTC, MIREX 2011 regression targets (the reference tool's numbers; skipped without the data)."""

from __future__ import annotations

import numpy as np
import pytest

from crowdprefs.evaluation import mtc


def test_mirex_collection_facts(mirex):
    col, meta, truth = mirex
    assert (col.n_systems, col.n_queries, col.k, col.n_pairs) == (18, 100, 5, 6322)
    assert col.overlap == pytest.approx(0.702444, abs=1e-6)
    assert np.bincount(col.retrieved_by.astype(int))[1:].tolist() == [
        4761, 949, 343, 130, 77, 41, 13, 3, 4, 1,
    ]  # fmt: skip
    full = col.incidence @ truth
    assert full.max() == 29321 and full.min() == 15193


def test_mirex_output_without_judgments_matches_the_reference(mirex):
    """Ranking without judgments (seed §5.2): the reference's confidence 0.9350, accuracy 0.9020."""
    col, meta, truth = mirex
    stats = mtc.pair_statistics(
        col, mtc.OutputEstimator(col, meta)(np.full(col.n_pairs, np.nan)), "fine"
    )
    assert round(mtc.ranking_confidence(stats), 4) == 0.9350
    accuracy, tau = mtc.sign_accuracy(stats, col.incidence @ truth)
    assert round(accuracy, 4) == 0.9020 and round(tau, 4) == 0.8039


@pytest.mark.parametrize(
    ("estimator", "size", "judgments", "accuracy"),
    [("judge", 1, 186, 0.9020), ("judge", 20, 600, 0.9085), ("output", 5, 330, 0.9085)],
)
def test_mirex_compat_mode_reproduces_the_reference_tool(
    mirex, estimator, size, judgments, accuracy
):
    col, meta, truth = mirex
    est = mtc.make_estimator(estimator, col, "fine", meta, effects=False)
    select = mtc.make_selector("reference", col, 1, size)
    sim = mtc.simulate(col, truth, est, select, "fine", target=0.95)
    assert sim.stopped
    assert sim.log["judgments"].iloc[-1] == judgments
    assert round(sim.log["accuracy"].iloc[-1], 4) == accuracy


def test_mirex_trained_model_beats_the_reference_on_held_out_queries(mirex):
    """The trained model, cross-fitted by query folds (no query predicted by a model that saw
    its judgments), with adaptive selection of 20 per iteration: MTC.md's targets."""
    col, meta, truth = mirex
    est = mtc.cross_fitted_estimator(col, mtc.trained_features(col, meta), truth, "fine")
    select = mtc.make_selector("adaptive", col, 20, 1)
    sim = mtc.simulate(col, truth, est, select, "fine", stop_at_target=False, max_judgments=300)
    assert round(sim.log["accuracy"].iloc[0], 4) == 0.9477  # reference: 0.9020
    assert sim.at(120)["accuracy"] >= 0.94  # reference: 0.9216
    stop = sim.log.iloc[sim.first_reaching(0.95)]
    assert stop.judgments == 280 and abs(stop.accuracy - stop.confidence) <= 0.03
    reference = mtc.simulate(
        col, truth, mtc.make_estimator("judge", col, "fine", meta, effects=False),
        mtc.make_selector("reference", col, 1, 1), "fine", stop_at_target=False,
        max_judgments=200,
    )  # fmt: skip
    for done in range(0, 201, 10):
        assert sim.at(done)["accuracy"] >= reference.at(done)["accuracy"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("estimator", "size", "judgments", "accuracy"),
    [("output", 20, 380, 0.8954), ("uniform", 20, 3300, 0.8889)],
)
def test_mirex_compat_mode_slower_rows(mirex, estimator, size, judgments, accuracy):
    col, meta, truth = mirex
    est = mtc.make_estimator(estimator, col, "fine", meta, effects=False)
    sim = mtc.simulate(col, truth, est, mtc.make_selector("reference", col, 1, size), "fine")
    assert sim.log["judgments"].iloc[-1] == judgments
    assert round(sim.log["accuracy"].iloc[-1], 4) == accuracy
