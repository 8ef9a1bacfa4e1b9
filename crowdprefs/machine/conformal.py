"""Which pairs a machine decides, with a bound on the share of its wrong verdicts among *all*
it takes in a campaign, not only in expectation.

A round of the sort holds N pairs; a random draw of n of them (the calibration pairs) is asked
of humans, and each calibration pair has a machine verdict, an uncertainty u (1 − the verdict
link's probability of its verdict) and is *wrong* when the two verdicts differ. The machine may
take the other pairs of the round whose uncertainty is at most a threshold t.

Conditional on the round (every pair's u and whether its machine verdict is wrong), the
calibration pairs are a uniform draw, so among the M_t pairs with u ≤ t, the n_t calibration
pairs hold w_t of their W_t wrong ones with the hypergeometric law. The selected pairs then hold
V = W_t − w_t wrong verdicts, and

    V̄_t = max {V : P(Hypergeometric(M_t, w_t + V, n_t) ≤ w_t) > δ}

is an exact upper confidence bound (P(V > V̄_t) ≤ δ): the finite-population form of a
binomial upper bound (Clopper & Pearson 1934), as in *Learn Then Test* (Angelopoulos et al.
2021, risk control by multiple testing) with the selected set's realised share of wrong
verdicts as the risk.

The evidence is pooled over the campaign: each round that takes pairs adds its calibration
pairs below its threshold, their wrong ones and the pairs it took (``earlier``), and a later
round's bound is on the wrong verdicts among every pair the campaign's machine has taken, with
the pooled counts in the same law. Each stratum (round) is drawn at random, and a later round,
whose pairs are closer, is sampled at a larger share of its (smaller) population, so the pooled
draw weighs the harder pairs more than a uniform one would. :func:`select` tries the
thresholds at a few fixed quantiles of the round's uncertainties (not of the labels, so the grid
does not depend on the draw), takes the largest set whose pooled bound is ≤ α times the
campaign's taken pairs, and splits δ among the thresholds (Bonferroni). When the calibration is
too small to show it, nothing is taken.
"""

from __future__ import annotations

import math

import numpy as np

from crowdprefs.errors import InputError

THRESHOLDS = (0.2, 0.4, 0.6, 0.8, 1.0)
"""The quantiles of a round's uncertainties tried as thresholds (δ is split among them)."""


def calibration_needed(alpha: float, delta: float = 0.05) -> int:
    """The fewest calibration pairs below a threshold that can show a share ≤ ``alpha`` at all
    (every one right, beside infinitely many candidates: the bound tends to the binomial one,
    (1 − α)^n ≤ δ / thresholds); fewer can never take a pair."""
    if not 0 < alpha < 1:
        raise InputError(f"the selection's level must lie in (0, 1), got {alpha}")
    return math.ceil(math.log(delta / len(THRESHOLDS)) / math.log1p(-alpha))


def wrong_bound(wrong: np.ndarray, calibrated: np.ndarray, taken: np.ndarray, delta: float):
    """Per threshold, the exact upper bound (at confidence 1 − ``delta``) on the wrong machine
    verdicts among ``taken`` selected pairs, when ``wrong`` of the ``calibrated`` calibration
    pairs below the same threshold were wrong (hypergeometric: see the module)."""
    from scipy import stats  # loaded on first use: a project's settings are read without it

    wrong, calibrated, taken = (
        np.asarray(v, dtype=np.int64)[:, None] for v in (wrong, calibrated, taken)
    )
    v = np.arange(int(taken.max(initial=0)) + 1)[None, :]
    tail = stats.hypergeom.cdf(wrong, calibrated + taken, wrong + np.minimum(v, taken), calibrated)
    plausible = (tail > delta) & (v <= taken)
    return np.where(plausible, v, -1).max(axis=1)


def select(
    uncertainty: np.ndarray,
    calibration: np.ndarray,
    wrong: np.ndarray,
    alpha: float,
    delta: float = 0.05,
    earlier: tuple[int, int, int] = (0, 0, 0),
) -> tuple[np.ndarray, int, tuple[int, int, int]]:
    """The candidates (``uncertainty``) the machine decides, the bound on the wrong verdicts
    among every pair the campaign's machine takes, and this round's evidence (calibration pairs
    below the chosen threshold, the wrong ones, the pairs taken) to pool into ``earlier`` (the
    same counts summed over the campaign's earlier selections): the largest set below a
    threshold of :data:`THRESHOLDS` whose pooled :func:`wrong_bound` (at 1 − ``delta``/
    thresholds) is ≤ ``alpha`` times the taken pairs, given the ``calibration`` pairs'
    uncertainties and whether each was ``wrong``."""
    if not 0 < alpha < 1:
        raise InputError(f"the selection's level must lie in (0, 1), got {alpha}")
    uncertainty = np.asarray(uncertainty, dtype=float)
    calibration = np.asarray(calibration, dtype=float)
    wrong = np.asarray(wrong, dtype=bool)
    if calibration.shape != wrong.shape:
        raise InputError(f"{calibration.size} calibration uncertainties for {wrong.size} flags")
    chosen = np.zeros(uncertainty.size, dtype=bool)
    if uncertainty.size == 0 or calibration.size == 0:
        return chosen, 0, (0, 0, 0)
    cut = np.quantile(np.concatenate([uncertainty, calibration]), THRESHOLDS, method="lower")
    taken = (uncertainty[None, :] <= cut[:, None]).sum(axis=1)
    below = calibration[None, :] <= cut[:, None]
    counted, failed = below.sum(axis=1), (below & wrong).sum(axis=1)
    pooled_n, pooled_w, pooled_taken = earlier
    total = taken + pooled_taken
    bound = wrong_bound(failed + pooled_w, counted + pooled_n, total, delta / cut.size)
    safe = np.flatnonzero((taken > 0) & (bound <= alpha * total))
    if safe.size == 0:
        return chosen, 0, (0, 0, 0)
    best = safe[np.argmax(taken[safe])]
    evidence = (int(counted[best]), int(failed[best]), int(taken[best]))
    return uncertainty <= cut[best], int(bound[best]), evidence
