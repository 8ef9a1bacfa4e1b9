"""MTC, correlated per-system errors."""

from __future__ import annotations

import numpy as np
from mtc_data import make_runs

from crowdprefs.evaluation import mtc


def test_system_error_covariance_sees_errors_shared_by_a_system(small):
    """Residuals off by +10 for every document of system 0 (mean b_s² = 100/6 ≈ 17) give a
    per-system error variance of that size; independent residuals give no shared error."""
    runs = make_runs(6, 60, 5, 12, seed=4)
    col = mtc.build_collection(runs)
    rng = np.random.default_rng(1)
    z = (col.incidence / col.retrieved_by).T
    noise = rng.normal(0, 5, col.n_pairs)
    variance = np.full(col.n_pairs, 25.0)
    quality = rng.normal(size=col.n_systems)
    planted = np.r_[10.0, np.zeros(col.n_systems - 1)]
    sigma, tau = mtc.fit_system_errors(z, z @ planted + noise, variance, quality, "fine")
    shared = mtc.system_error_covariance(sigma, tau, quality)
    assert 8 < np.diag(shared).mean() < 35
    assert mtc.fit_system_errors(z, noise, variance, quality, "fine") == (0.0, 0.0)
