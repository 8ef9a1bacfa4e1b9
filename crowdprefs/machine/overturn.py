"""Skipping pairs on the machine's verdict (:class:`SkipRule`), and auditing it.

Which pairs the machine decides is chosen by a selection that bounds the share of wrong machine
verdicts over the campaign (:mod:`crowdprefs.machine.conformal`). A share ``audit_share`` of the
selected pairs is asked of humans anyway (:func:`audit_sample`, counter-based so a pair's
membership is a pure function of its key and the seed, never of the batch or the other
pairs). On an audited pair the human verdict is the one used, and the machine verdict it
differs from is counted *wrong*: the wrong share of the audited pairs estimates that of the
skipped ones, with an exact Clopper–Pearson interval (Clopper & Pearson 1934, *The use of
confidence or fiducial limits illustrated in the case of the binomial*, Biometrika 26;
:func:`overturn_interval`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import lazy_loader

from crowdprefs.campaign.settings import check_values
from crowdprefs.errors import InputError
from crowdprefs.rng import counter_uniform

np = lazy_loader.load("numpy")  # imported on first use

AUDIT_STREAM = 0x4A0D17
"""The counter-based stream of :func:`audit_sample` (distinct from the other streams' keys)."""


def audit_sample(keys: np.ndarray, share: float, seed: int) -> np.ndarray:
    """Which pairs are audited: ``counter_uniform(seed, AUDIT_STREAM, *key) < share`` per pair.

    ``keys``: one non-negative integer per pair (n,), or several (n, k) (e.g. query and pair
    codes). A pair's membership depends only on its key, the seed and the share, and growing the
    share only adds pairs.
    """
    if not 0 <= share <= 1:
        raise InputError(f"audit share must be in [0, 1], got {share}")
    keys = np.asarray(keys)
    if keys.ndim not in (1, 2) or (keys.size and not np.issubdtype(keys.dtype, np.integer)):
        raise InputError(f"audit keys must be integers, one row per pair, got {keys.dtype}")
    if keys.size and (keys < 0).any():
        raise InputError("audit keys must be non-negative")
    columns = [keys] if keys.ndim == 1 else list(keys.T)
    return counter_uniform(seed, AUDIT_STREAM, *columns) < share


def overturn_interval(
    overturned: int, audited: int, level: float = 0.95
) -> tuple[float, float, float]:
    """(estimate, low, high): the share of audited machine verdicts a human verdict overturned
    (differs from), with its exact two-sided Clopper–Pearson interval at ``level``; (nan, 0, 1)
    for no audit."""
    if not 0 < level < 1:
        raise InputError(f"level must be in (0, 1), got {level}")
    if not 0 <= overturned <= audited:
        raise InputError(f"overturned ({overturned}) must be in [0, audited ({audited})]")
    if audited == 0:
        return math.nan, 0.0, 1.0
    from scipy import stats  # loaded on first use: a project's settings are read without it

    ci = stats.binomtest(int(overturned), int(audited)).proportion_ci(level, method="exact")
    return overturned / audited, float(ci.low), float(ci.high)


@dataclass(frozen=True)
class SkipRule:
    """When a pair takes the machine's verdict instead of human answers.

    ``max_wrong``: α, the level of :func:`crowdprefs.machine.conformal.select`: at most that
    share of the machine verdicts a campaign takes differ from the verdict the human design
    would give, with confidence ``level`` (default 0.3, about the share of its own verdicts the
    human design gives differently with a second crowd, on the crowd it was chosen on).
    ``min_verdicts``: the calibration pairs each round of the sort asks first, at random,
    before the rest of the round is triaged (a round of at most this many pairs is asked
    whole). ``audit_share``: the share of the selected pairs asked anyway (the audit sample: an
    independent check of the machine verdicts). ``level``: of the selection's bound, the
    audit's Clopper–Pearson interval and the slope's interval.
    """

    max_wrong: float = 0.3
    audit_share: float = 0.1
    min_verdicts: int = 30
    level: float = 0.95

    def __post_init__(self) -> None:
        check_values("prior", self)  # the ranges of crowdprefs.toml's [prior] keys

    def calibrates(self, pairs: int) -> bool:
        """Whether a round of ``pairs`` needed pairs is calibrated and triaged (more pairs
        than the calibration asks), rather than asked whole."""
        return pairs > self.min_verdicts

    def calibration_needed(self) -> int:
        """The fewest calibration pairs a round needs before the machine can take any pair
        (:func:`crowdprefs.machine.conformal.calibration_needed` at ``max_wrong`` and
        ``level``)."""
        from crowdprefs.machine.conformal import calibration_needed

        return calibration_needed(self.max_wrong, 1 - self.level)

    def interval(self, wrong: int, audited: int) -> tuple[float, float, float]:
        """The audit's share of wrong machine verdicts and its interval at ``level``
        (:func:`overturn_interval`)."""
        return overturn_interval(wrong, audited, self.level)
