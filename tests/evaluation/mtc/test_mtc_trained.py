"""MTC, the trained gain model: training on held-out systems and queries, its JSON file, and
learning the errors of new systems from the judgments."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest
from mtc_data import make_metadata

from crowdprefs.errors import InputError
from crowdprefs.evaluation import mtc


def test_trained_features_average_the_retrieving_systems_profiles(small):
    _, col, _ = small
    meta = mtc.pair_metadata(col, make_metadata(col, 3))
    popularity, genre_rate = mtc.system_profiles(col, meta)
    same_genre = (meta.genre == meta.query_genre) & (meta.genre >= 0)
    x = mtc.trained_features(col, meta)
    assert x.shape == (col.n_pairs, len(mtc.TRAINED_FEATURES))
    for s in range(col.n_systems):
        mine = col.incidence[s] > 0
        assert popularity[s] == pytest.approx(np.mean(col.retrieved_by[mine] / col.n_systems))
        assert genre_rate[s] == pytest.approx(np.mean(same_genre[mine]))
    for d in (0, 7, col.n_pairs - 1):
        systems = np.flatnonzero(col.incidence[:, d])
        assert x[d, 5] == pytest.approx(popularity[systems].mean())
        assert x[d, 6] == pytest.approx(genre_rate[systems].mean())
        assert x[d, 0] == col.retrieved_by[d] / col.n_systems and x[d, 2] == same_genre[d]


def test_gain_model_round_trips_through_json(trained):
    col, _, x, model = trained
    again = mtc.GainModel.from_json(model.to_json())
    for got, want in zip(again.moments(x), model.moments(x), strict=True):
        assert np.array_equal(got, want)
    numbers = ("sigma", "tau", "omega", "eta", "variance_scale", "held_out_rmse", "judgments")
    assert [getattr(again, n) for n in numbers] == [getattr(model, n) for n in numbers]
    assert np.array_equal(again.low, model.low) and np.array_equal(again.high, model.high)
    assert model.judgments == col.n_pairs
    mean, var = model.moments(x)
    assert np.all((mean >= 0) & (mean <= 100)) and np.all(var > 0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(format="other"), "format is not"),
        (lambda d: d.update(version=2), "version 2 is not 3; train it again"),
        (lambda d: d.update(features=["fSYS"]), "features"),
        (lambda d: d.update(beta=d["beta"][:-1]), "beta has 6 values, expected 7"),
        (lambda d: d.update(theta=d["theta"] + [0.0]), "theta has"),
        (lambda d: d.update(low=d["low"][:3]), "low has 3 values, expected 7"),
        (lambda d: d.update(spread=[0.0] * 7), "spread holds a value of 0 or less"),
        (lambda d: d.update(tau=-1), "negative"),
        (lambda d: d.update(eta=-1), "negative"),
        (lambda d: d.pop("eta"), "eta"),
        (lambda d: d.update(variance_scale=0), "variance scale"),
        (lambda d: d.update(low=d["high"], high=d["low"]), "upside down"),
        (lambda d: d.pop("values"), "values"),
    ],
)
def test_a_damaged_gain_model_is_an_input_error(trained, change, message):
    data = json.loads(trained[3].to_json())
    change(data)
    with pytest.raises(InputError, match=message):
        mtc.GainModel.from_json(json.dumps(data), "m.json")
    with pytest.raises(InputError, match="m.json: not a crowdprefs MTC gain model"):
        mtc.GainModel.from_json("{not json", "m.json")


def test_the_error_model_is_measured_on_systems_and_queries_it_was_not_fitted_on(small):
    """Each held-out block's residuals come from a model that saw neither its systems nor its
    queries: changing the judgments of a block's own pairs changes nothing but its residuals."""
    _, col, truth = small
    meta = mtc.pair_metadata(col, make_metadata(col, 3))
    first = mtc.held_out_residuals(col, meta, truth, "fine", seed=4)
    assert len(first) == 6 and all(block.z.shape[1] == 2 for block in first)
    rng = np.random.default_rng(4)  # the same deal as held_out_residuals
    systems = mtc.trained.deal(col.n_systems, 3, rng)
    queries = mtc.trained.deal(col.n_queries, 2, rng)
    _, block = col.subset(systems == 0, queries == 0)  # the first block
    changed = truth.copy()
    changed[block] = 100 - truth[block]
    second = mtc.held_out_residuals(col, meta, changed, "fine", seed=4)
    # the block's predictions are unchanged: residual + gain is the same prediction E
    predicted_first = truth[block] - first[0].residual
    predicted_second = changed[block] - second[0].residual
    assert np.allclose(predicted_first, predicted_second)
    assert np.array_equal(first[0].noise, second[0].noise)
    others = np.concatenate([b.residual for b in first[1:]])
    assert not np.allclose(others, np.concatenate([b.residual for b in second[1:]]))


def test_training_needs_enough_systems_and_judgments(trained):
    col, meta, x, _ = trained
    gains = np.where(np.arange(col.n_pairs) < 5, 50.0, np.nan)
    with pytest.raises(InputError, match="20 judged pairs"):
        mtc.train_gain_model(col, meta, gains, "fine")
    two, pairs = col.subset(np.arange(col.n_systems) < 2, np.ones(col.n_queries, dtype=bool))
    with pytest.raises(InputError, match="runs of 3 systems and 2 queries or more"):
        mtc.train_gain_model(two, meta.take(pairs), np.full(two.n_pairs, 50.0), "fine")


def test_fit_transfer_errors_finds_errors_proper_to_each_system():
    """Blocks of 4 new systems whose documents are off by b_s ~ N(0, 8²) each, plus a common
    shift per block: τ near 8 Fine points, and λ near 1 for noise of the stated variance; no
    query error where there is none."""
    rng = np.random.default_rng(0)
    blocks = []
    for _ in range(12):
        z = np.eye(4)[rng.integers(0, 4, 400)]  # each pair retrieved by one system
        queries = np.eye(20)[rng.integers(0, 20, 400)]
        shift = rng.normal(0, 8, 4) + rng.normal(0, 10)
        noise = np.full(400, 400.0)
        residual = z @ shift + rng.normal(0, 20, 400)
        blocks.append(mtc.HeldOut(z, residual, noise, np.zeros(4), queries))
    sigma, tau, omega, eta, scale = mtc.fit_transfer_errors(blocks, "fine")
    assert 5 < tau < 13 and 0.8 < scale < 1.25 and omega > 3 and eta < 3


def test_fit_transfer_errors_finds_errors_shared_by_a_querys_documents():
    """Each query's documents off by q_j ~ N(0, 12²) on top of noise of the stated variance:
    η near 12 and λ near 1 (the query error is not taken for noise)."""
    rng = np.random.default_rng(2)
    blocks = []
    for _ in range(12):
        z = np.eye(4)[rng.integers(0, 4, 400)]
        which = rng.integers(0, 20, 400)
        residual = rng.normal(0, 12, 20)[which] + rng.normal(0, 20, 400)
        blocks.append(mtc.HeldOut(z, residual, np.full(400, 400.0), np.zeros(4), np.eye(20)[which]))
    sigma, tau, omega, eta, scale = mtc.fit_transfer_errors(blocks, "fine")
    assert 8 < eta < 17 and 0.8 < scale < 1.25 and tau < 3


def test_update_system_errors_is_gaussian_conditioning():
    """Posterior of b given r = z b + ε against the joint Gaussian (b, r) conditioned directly."""
    rng = np.random.default_rng(1)
    prior = mtc.system_error_covariance(3.0, 2.0, rng.normal(size=5), omega=4.0)
    z = rng.random((30, 5)) * (rng.random((30, 5)) < 0.4)
    noise = rng.uniform(100, 400, 30)
    residual = rng.normal(0, 20, 30)
    mean, post = mtc.update_system_errors(prior, z, residual, noise)
    cross = prior @ z.T  # Cov(b, r)
    joint = z @ prior @ z.T + np.diag(noise)  # Var(r)
    assert np.allclose(mean, cross @ np.linalg.solve(joint, residual))
    assert np.allclose(post, prior - cross @ np.linalg.solve(joint, cross.T))


def test_trained_estimator_learns_the_new_systems_errors(trained):
    """Without judgments: the model's moments, its prior Σ and its query error η²; with
    judgments of one system's pairs all 30 points above the model, that system's other pairs
    move up and its error narrows."""
    col, meta, x, model = trained
    nothing = np.full(col.n_pairs, np.nan)
    learning = mtc.make_estimator("trained", col, "fine", meta, True, model=model)
    static = mtc.make_estimator("trained", col, "fine", meta, False, model=model)
    before, plain = learning(nothing), static(nothing)
    assert np.array_equal(before.mean, plain.mean) and plain.system_cov is None
    assert before.learning and not plain.learning
    assert before.query_var == model.eta**2 and plain.query_var == 0
    quality = col.per_system(plain.mean)
    expected = mtc.system_error_covariance(model.sigma, model.tau, quality, model.omega)
    assert np.allclose(before.system_cov, expected)
    assert model.tau >= 3.0  # the floor PRIOR_TAU·M
    learning = mtc.make_estimator(  # the systems alone (the query errors have their own test)
        "trained", col, "fine", meta, True, model=replace(model, eta=0.0)
    )
    own = np.flatnonzero((col.incidence[0] > 0) & (col.retrieved_by == 1))
    gains = nothing.copy()
    gains[own[:10]] = np.minimum(plain.mean[own[:10]] + 30, 100)
    after = learning(gains)
    rest = own[10:]
    assert (after.mean[rest] > plain.mean[rest]).all()
    quality = col.per_system(np.where(np.isnan(gains), plain.mean, gains))
    prior = mtc.system_error_covariance(model.sigma, model.tau, quality, model.omega)
    assert after.system_cov[0, 0] < prior[0, 0] - 10  # its error narrows
    with pytest.raises(InputError, match="needs a trained gain model"):
        mtc.make_estimator("trained", col, "fine", meta)
    with pytest.raises(InputError, match="for the fine scale, not broad"):
        mtc.make_estimator("trained", col, "broad", meta, model=model)


def test_residuals_of_one_query_tell_less_of_a_system_than_independent_ones(trained):
    """One system's pairs of a single query judged 30 points above the model: with a query
    error η, part of that is taken for the query's error, so the system's other pairs move up
    less and its error narrows less than with η = 0; the query error widens the differences
    of that system, whose unjudged pairs in the query are now fewer than the others'."""
    col, meta, _, model = trained
    model = replace(model, eta=15.0)
    learning = mtc.make_estimator("trained", col, "fine", meta, True, model=model)
    without = mtc.make_estimator("trained", col, "fine", meta, True, model=replace(model, eta=0.0))
    nothing = np.full(col.n_pairs, np.nan)
    a, b = (mtc.pair_statistics(col, e(nothing), "fine") for e in (learning, without))
    assert np.allclose(a.diff_var, b.diff_var) and np.allclose(a.diff, b.diff)
    query = np.flatnonzero((col.query_of == 0) & (col.incidence[0] > 0))
    gains = nothing.copy()
    gains[query] = np.minimum(learning.mean[query] + 30, 100)
    after, plain = learning(gains), without(gains)
    rest = np.flatnonzero((col.incidence[0] > 0) & np.isnan(gains) & (col.retrieved_by == 1))
    assert (after.mean[rest] - learning.mean[rest] > 0).all()
    assert (after.mean[rest] < plain.mean[rest]).all()
    assert after.system_cov[0, 0] > plain.system_cov[0, 0]
    stats, plain_stats = (mtc.pair_statistics(col, e, "fine") for e in (after, plain))
    assert (stats.diff_var[0, 1:] > plain_stats.diff_var[0, 1:]).all()


def test_features_outside_the_training_range_are_clipped_and_said(trained):
    col, meta, x, model = trained
    narrow = replace(model, low=np.percentile(x, 10, axis=0), high=np.percentile(x, 90, axis=0))
    estimator = mtc.make_estimator("trained", col, "fine", meta, model=narrow)
    clipped = np.clip(x, narrow.low, narrow.high)
    assert np.allclose(estimator.mean, narrow.moments(clipped)[0])
    assert np.array_equal(estimator.outside, (x < narrow.low) | (x > narrow.high))
    note = mtc.clipped_note(estimator)
    outside = int(estimator.outside.any(axis=1).sum())
    assert note.startswith(f"{outside} of {col.n_pairs} pairs have features outside")
    assert "clipped to it" in note and "sysGEN" in note
    assert mtc.clipped_note(mtc.make_estimator("trained", col, "fine", meta, model=model)) is None
