"""MTC, uniform, L_output, L_judge and the refitted model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from mtc_data import make_metadata

from crowdprefs.errors import InputError
from crowdprefs.evaluation import mtc


def test_uniform_moments_are_the_seeds():
    assert mtc.uniform_moments("fine") == (50.0, 850.0)
    e, v = mtc.uniform_moments("broad")
    assert (e, v) == (1.0, pytest.approx(2 / 3))
    levels = np.arange(101.0)
    assert v == pytest.approx(np.var(np.arange(3.0)))
    assert mtc.uniform_moments("fine")[1] == pytest.approx(levels.var())


def test_output_and_judge_features(small):
    _, col, _ = small
    meta = mtc.pair_metadata(col, make_metadata(col, 3))
    theta = mtc.output_features(col, meta)
    assert np.allclose(theta[:, 0], col.retrieved_by / col.n_systems)
    assert np.allclose(theta[:, 1], col.overlap)
    # shares within each query pool sum to 1 over distinct artists
    frame = pd.DataFrame({"q": col.query_of, "a": meta.artist, "f": theta[:, 3]})
    per_artist = frame.groupby(["q", "a"])["f"].first().groupby(level=0).sum()
    assert np.allclose(per_artist, 1.0)
    gains = np.full(col.n_pairs, np.nan)
    gains[0] = 80.0
    feats, defined = mtc.judge_features(col, gains, mtc.query_groups(col, meta.artist))
    # the judged pair's own gain is left out of its own features
    assert not defined[0]
    same_artist = np.flatnonzero(
        (col.query_of == col.query_of[0]) & (meta.artist == meta.artist[0])
    )
    for d in same_artist[1:]:
        assert feats[d, 2] == 80.0


def test_fitted_prediction_never_uses_the_pairs_own_judgment(small):
    _, col, truth = small
    meta = mtc.pair_metadata(col, make_metadata(col, 3))
    gains = truth.copy()
    gains[np.random.default_rng(0).random(col.n_pairs) < 0.3] = np.nan
    d = int(np.flatnonzero(~np.isnan(gains))[0])
    changed = gains.copy()
    changed[d] = 100.0 - gains[d]
    first = mtc.FittedEstimator(col, "fine", meta, folds=3, min_train=10).predict(gains)
    second = mtc.FittedEstimator(col, "fine", meta, folds=3, min_train=10).predict(changed)
    assert first[0][d] == pytest.approx(second[0][d])
    assert first[1][d] == pytest.approx(second[1][d])
    # the same holds for a whole fold: its model never sees the fold's judgments
    est = mtc.FittedEstimator(col, "fine", meta, folds=3, min_train=10)
    fold0 = est.fold == 0
    shuffled = gains.copy()
    shuffled[fold0] = np.where(np.isnan(gains[fold0]), np.nan, 100 - gains[fold0])
    est.predict(gains)
    params = est.models[0][0].copy()
    est._refit(shuffled)
    assert np.allclose(est.models[0][0], params)


def test_fitted_model_on_the_broad_scale_without_metadata(small):
    _, col, truth = small
    broad = np.digitize(truth, [34, 67]).astype(float)  # 0, 1, 2
    gains = np.where(np.arange(col.n_pairs) % 2 == 0, broad, np.nan)
    est = mtc.make_estimator("fitted", col, "broad", None, effects=True)(gains)
    assert est.judged.sum() == np.count_nonzero(~np.isnan(gains))
    assert np.all((est.mean >= 0) & (est.mean <= 2)) and np.all(est.var >= 0)
    assert np.all(est.var[~est.judged] > 0)
    with pytest.raises(InputError, match="Fine scale only"):
        mtc.make_estimator("output", col, "broad", mtc.pair_metadata(col, make_metadata(col, 3)))
