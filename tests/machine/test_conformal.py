"""Conformal selection with false-discovery-rate control: its p-values, Benjamini–Hochberg, and
the promise on exchangeable data."""

from __future__ import annotations

import numpy as np
import pytest

from crowdprefs.errors import InputError
from crowdprefs.machine.conformal import p_values, select


def test_p_values_count_the_wrong_calibration_verdicts_at_most_as_uncertain():
    calibration = np.array([0.1, 0.2, 0.3, 0.4])
    wrong = np.array([False, True, False, True])
    p = p_values(np.array([0.05, 0.2, 0.35, 0.9]), calibration, wrong)
    assert p.tolist() == [1 / 5, 2 / 5, 2 / 5, 3 / 5]  # a tie counts against the candidate
    assert p_values(np.array([0.5]), np.zeros(0), np.zeros(0, bool)).tolist() == [1.0]
    with pytest.raises(InputError):
        p_values(np.array([0.5]), calibration, wrong[:2])


def test_benjamini_hochberg_takes_the_largest_rank_below_its_line():
    p = np.array([0.01, 0.04, 0.03, 0.5, 0.2])
    # α·k/m = 0.02, 0.04, 0.06, 0.08, 0.10: p_(3) = 0.04 ≤ 0.06 is the last one below
    assert select(p, 0.1).tolist() == [True, True, True, False, False]
    assert not select(np.array([0.5, 0.9]), 0.1).any()
    assert select(np.zeros(0), 0.1).size == 0
    with pytest.raises(InputError, match="level"):
        select(p, 0.0)


@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_the_share_of_wrong_selected_verdicts_is_at_most_alpha_in_expectation(alpha):
    """Exchangeable calibration and candidates, a model wrong with probability rising with its
    uncertainty: the mean false-discovery proportion over many draws stays ≤ α (Jin & Candès
    2023), and the selection is not empty."""
    rng = np.random.default_rng(4)
    proportions, sizes = [], []
    for _ in range(400):
        u = rng.random(260)
        wrong = rng.random(260) < 0.6 * u
        cal, test = slice(0, 60), slice(60, None)
        chosen = select(p_values(u[test], u[cal], wrong[cal]), alpha)
        sizes.append(chosen.sum())
        proportions.append(wrong[test][chosen].sum() / max(chosen.sum(), 1))
    assert np.mean(proportions) <= alpha + 2 * np.std(proportions) / np.sqrt(400)
    assert np.mean(sizes) > 10
