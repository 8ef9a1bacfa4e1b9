"""Conformal selection of the pairs a machine decides, with false-discovery-rate control.

*Conformal Labeling* (Huang et al. 2025, *Selective labeling with false discovery rate
control*) after *conformal selection* (Jin & Candès 2023, *Selection by prediction with
conformal p-values*, JMLR 24): a calibration set of n items has both a machine verdict and the
human one; each has an uncertainty u (here 1 − the verdict link's probability of its verdict)
and is *wrong* when the two verdicts differ. For a candidate j, the hypothesis "the machine's
verdict of j is wrong" gets the conformal p-value

    p_j = (1 + #{i ≤ n : wrong_i and u_i ≤ u_j}) / (n + 1)

(:func:`p_values`), which is valid (P(p_j ≤ t) ≤ t when j is wrong) when the calibration items
and the candidates are exchangeable. Benjamini–Hochberg at level α on the candidates' p-values
(:func:`select`) then keeps the expected share of wrong machine verdicts among those selected
(the false discovery rate) at most α, whatever the model (the p-values are PRDS: Jin & Candès,
Thm. 3).
"""

from __future__ import annotations

import numpy as np

from crowdprefs.errors import InputError


def p_values(uncertainty: np.ndarray, calibration: np.ndarray, wrong: np.ndarray) -> np.ndarray:
    """Conformal p-values of the candidates' ``uncertainty`` against the ``calibration``
    uncertainties and whether each calibration verdict was ``wrong`` (ties count against the
    candidate: conservative)."""
    calibration = np.asarray(calibration, dtype=float)
    wrong = np.asarray(wrong, dtype=bool)
    if calibration.shape != wrong.shape:
        raise InputError(f"{calibration.size} calibration uncertainties for {wrong.size} flags")
    errors = np.sort(calibration[wrong])
    count = np.searchsorted(errors, np.asarray(uncertainty, dtype=float), side="right")
    return (1.0 + count) / (calibration.size + 1.0)


def select(p: np.ndarray, alpha: float) -> np.ndarray:
    """Benjamini–Hochberg at level ``alpha``: the candidates whose p-value is at most
    α·k/m, k the largest rank (1 = smallest p) with p_(k) ≤ α·k/m (Benjamini & Hochberg 1995)."""
    if not 0 < alpha < 1:
        raise InputError(f"the selection's level must lie in (0, 1), got {alpha}")
    p = np.asarray(p, dtype=float)
    m = p.size
    chosen = np.zeros(m, dtype=bool)
    if m == 0:
        return chosen
    ordered = np.sort(p)
    below = np.flatnonzero(ordered <= alpha * np.arange(1, m + 1) / m)
    if below.size:
        chosen = p <= ordered[below[-1]]
    return chosen
