"""MTC, the trained gain model, its JSON file and cross-fitting."""

from __future__ import annotations

import json

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
    assert (again.sigma, again.tau, again.judgments) == (model.sigma, model.tau, col.n_pairs)
    mean, var = model.moments(x)
    assert np.all((mean >= 0) & (mean <= 100)) and np.all(var > 0)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.update(format="other"), "format is not"),
        (lambda d: d.update(features=["fSYS"]), "features"),
        (lambda d: d.update(beta=d["beta"][:-1]), "beta has 6 values, expected 7"),
        (lambda d: d.update(theta=d["theta"] + [0.0]), "theta has"),
        (lambda d: d.update(spread=[0.0] * 7), "zero spread"),
        (lambda d: d.update(tau=-1), "negative"),
        (lambda d: d.update(variance_scale=0), "variance scale"),
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


def test_cross_fitted_model_never_sees_the_queries_it_predicts(trained, small):
    col, _, x, _ = trained
    truth = small[2]
    first = mtc.cross_fitted_estimator(col, x, truth, "fine", folds=3)
    fold = mtc.query_folds(col, 3)
    flipped = np.where(fold == 0, 100 - truth, truth)
    second = mtc.cross_fitted_estimator(col, x, flipped, "fine", folds=3)
    assert np.allclose(first.mean[fold == 0], second.mean[fold == 0])
    assert np.allclose(first.var[fold == 0], second.var[fold == 0])  # λ of the fold too
    assert not np.allclose(first.mean[fold != 0], second.mean[fold != 0])
    # copies of a query (same group) share a fold
    groups = np.array([f"g{i % 4}" for i in range(col.n_queries)])
    grouped = mtc.query_folds(col, 3, groups=groups)
    for label in np.unique(groups):
        assert np.unique(grouped[np.isin(col.query_of, np.flatnonzero(groups == label))]).size == 1


def test_trained_estimator_adds_the_models_system_errors(trained):
    col, meta, x, model = trained
    nothing = np.full(col.n_pairs, np.nan)
    with_errors = mtc.make_estimator("trained", col, "fine", meta, True, model=model)(nothing)
    without = mtc.make_estimator("trained", col, "fine", meta, False, model=model)(nothing)
    assert np.array_equal(with_errors.mean, without.mean) and without.system_cov is None
    assert model.variance_scale >= 1.0
    assert np.allclose(with_errors.var, without.var * model.variance_scale)
    quality = mtc.pair_statistics(col, without, "fine").mean
    expected = model.variance_scale * mtc.system_error_covariance(model.sigma, model.tau, quality)
    assert model.sigma > 0 and np.allclose(with_errors.system_cov, expected)
    with pytest.raises(InputError, match="needs a trained gain model"):
        mtc.make_estimator("trained", col, "fine", meta)
    with pytest.raises(InputError, match="for the fine scale, not broad"):
        mtc.make_estimator("trained", col, "broad", meta, model=model)
    with pytest.raises(InputError, match="20 judged pairs"):
        mtc.train_gain_model(col, x, np.where(np.arange(col.n_pairs) < 5, 50.0, np.nan), "fine")
    three_queries = np.where(col.query_of < 3, 50.0 + 10 * (np.arange(col.n_pairs) % 3), np.nan)
    assert np.count_nonzero(~np.isnan(three_queries)) >= 20  # enough for one fit, not for λ
    with pytest.raises(InputError, match="judgments in several queries"):
        mtc.train_gain_model(col, x, three_queries, "fine")
