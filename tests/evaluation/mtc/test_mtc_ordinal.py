"""MTC, the cumulative logit (seed §4.1)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from statsmodels.miscmodels.ordinal_model import OrderedModel

from crowdprefs.evaluation import mtc


def test_ordinal_moments_match_the_level_distribution():
    eta = np.array([-2.0, 0.0, 1.5])
    mean, var = mtc.ordinal_moments(mtc.OUTPUT_ALPHA, eta, mtc.FINE_LABELS)
    for i, e in enumerate(eta):
        upper = np.r_[1.0, 1 / (1 + np.exp(-(mtc.OUTPUT_ALPHA + e))), 0.0]
        p = upper[:-1] - upper[1:]
        assert p.sum() == pytest.approx(1.0)
        assert mean[i] == pytest.approx(p @ mtc.FINE_LABELS)
        assert var[i] == pytest.approx(p @ (mtc.FINE_LABELS - mean[i]) ** 2)


def test_cumulative_logit_equals_statsmodels_ordered_model():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(250, 3))
    latent = x @ np.array([1.0, -0.5, 0.8]) + rng.logistic(size=250)
    y = np.digitize(latent, [-1.5, -0.3, 0.6, 1.8])
    params = mtc.fit_cumulative_logit(x, y, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = OrderedModel(y, x, distr="logit").fit(method="bfgs", disp=False)
    assert np.allclose(params, result.params, atol=2e-3)
    assert np.allclose(
        mtc.cumulative_logit_probabilities(x[:10], params),
        result.model.predict(result.params, exog=x[:10]),
        atol=1e-3,
    )
