"""Fleiss' κ: the vectorised form against statsmodels and the per-unit definition."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

from crowdprefs.quality.agreement import fleiss_kappa


def per_unit(counts: np.ndarray) -> float:
    """κ straight from the definition, unit by unit (units with fewer than two ratings out)."""
    rows = [row for row in np.asarray(counts, dtype=float) if row.sum() >= 2]
    agreement = [(row @ row - row.sum()) / (row.sum() * (row.sum() - 1)) for row in rows]
    shares = np.sum(rows, axis=0) / np.sum(rows)
    expected = shares @ shares
    return (np.mean(agreement) - expected) / (1 - expected)


@pytest.mark.parametrize("units", [1, 7, 5000])
@pytest.mark.parametrize("categories", [2, 3, 5])
@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float64])
def test_equal_ratings_per_unit_match_statsmodels(units, categories, dtype):
    rng = np.random.default_rng(units * categories)
    counts = rng.multinomial(9, rng.dirichlet(np.ones(categories)), size=units).astype(dtype)
    while (counts.sum(axis=0) == counts.sum()).any():  # κ needs two categories used: draw again
        counts = rng.multinomial(9, rng.dirichlet(np.ones(categories)), size=units).astype(dtype)
    assert fleiss_kappa(counts) == pytest.approx(statsmodels_fleiss(counts), abs=1e-12)


def test_unequal_ratings_use_each_unit_s_own_count_and_drop_single_ratings():
    rng = np.random.default_rng(5)
    counts = np.vstack([rng.multinomial(k, [0.2, 0.5, 0.3]) for k in rng.integers(0, 12, 3000)])
    assert (counts.sum(axis=1) < 2).any()
    assert fleiss_kappa(counts) == pytest.approx(per_unit(counts), abs=1e-12)
    assert fleiss_kappa(counts.astype(float)) == pytest.approx(per_unit(counts), abs=1e-12)
    # a transposed (non-contiguous) view gives the same value
    assert fleiss_kappa(np.ascontiguousarray(counts.T).T) == fleiss_kappa(counts)


def test_small_integer_types_do_not_overflow():
    counts = np.array([[200, 50, 0], [0, 125, 125], [250, 0, 0]], dtype=np.uint8)
    assert fleiss_kappa(counts) == pytest.approx(statsmodels_fleiss(counts.astype(float)))


def test_undefined_cases_are_nan():
    assert np.isnan(fleiss_kappa(np.zeros((0, 3))))
    assert np.isnan(fleiss_kappa(np.array([[1, 0, 0], [0, 1, 0]])))  # no unit rated twice
    assert np.isnan(fleiss_kappa(np.array([[4, 0, 0], [3, 0, 0]])))  # one category only
