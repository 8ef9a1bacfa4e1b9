"""Skipping pairs on the machine's verdict, and auditing the verdicts it skipped.

A pair is *skippable* when the calibrated verdict link (a :class:`~crowdprefs.machine.link.Link`
fitted on one-hot human verdicts) gives its most probable verdict probability ≥ ``confidence``;
it then takes that machine verdict without human answers. A share ``audit_share`` of the
skippable pairs is asked anyway (:func:`audit_sample`, counter-based so a pair's membership is a
pure function of its key and the seed, never of the batch or the other pairs). On an audited pair
the human verdict is the one used, and the machine verdict it *overturns* (differs from) is
counted: the overturn share of the audited pairs estimates that of the skipped ones, with an exact
Clopper–Pearson interval (Clopper & Pearson 1934, *The use of confidence or fiducial limits
illustrated in the case of the binomial*, Biometrika 26; :func:`overturn_interval`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from crowdprefs.campaign.settings import check_values
from crowdprefs.errors import InputError
from crowdprefs.rng import counter_uniform

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
    """(estimate, low, high): the share of audited machine verdicts a human verdict overturned,
    with its exact two-sided Clopper–Pearson interval at ``level``; (nan, 0, 1) for no audit."""
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
    """When a pair takes the machine's verdict instead of human answers, and when that stops.

    ``confidence``: a pair is skippable when its most probable verdict has probability ≥ this
    (under the verdict link, posterior integrated). ``audit_share``: share of skippable pairs
    asked anyway. ``max_overturn``: the largest share of machine verdicts a human majority may
    overturn (the set error). ``min_verdicts``: no skipping before this many human verdicts are
    known to fit the verdict link on. ``level``: of the Clopper–Pearson interval.

    Skipping stops for the rest of the campaign (:meth:`stopped`) once the interval's *lower*
    bound exceeds ``max_overturn``: the audit then shows, at confidence ``level`` (one-sided
    ``(1 + level)/2``), that the machine overturns more than allowed. The choice gives the
    machine the benefit of the doubt: while the audit is small the interval is wide and skipping
    goes on, so the overturn share of the skipped verdicts is *not* guaranteed below
    ``max_overturn``; it is estimated, with its interval, for the report (:meth:`interval`).
    Verdicts skipped before the stop stay machine verdicts. Checking after every batch is a
    sequence of looks, which makes a stop more likely than one test would (also for a machine
    exactly at ``max_overturn``): the safe direction, costing only answers.
    """

    confidence: float = 0.6
    audit_share: float = 0.1
    max_overturn: float = 0.4
    min_verdicts: int = 30
    level: float = 0.95

    def __post_init__(self) -> None:
        check_values("prior", self)  # the ranges of crowdprefs.toml's [prior] keys

    def skippable(self, probabilities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per pair, from its (n, 3) verdict probabilities (more, equal, less): whether it is
        skippable, and its most probable verdict (+1, 0, −1; ties to the first column)."""
        p = np.asarray(probabilities, dtype=float)
        if p.ndim != 2 or p.shape[1] != 3:
            raise InputError(f"verdict probabilities must have shape (n, 3), got {p.shape}")
        best = p.argmax(axis=1) if len(p) else np.zeros(0, dtype=np.int64)
        top = p.max(axis=1) if len(p) else np.zeros(0)
        return top >= self.confidence, (1 - best).astype(np.int8)

    def ready(self, verdicts_known: int) -> bool:
        """Whether enough human verdicts are known to fit the verdict link and skip."""
        return verdicts_known >= self.min_verdicts

    def interval(self, overturned: int, audited: int) -> tuple[float, float, float]:
        """The audit's overturn share and interval at ``level`` (:func:`overturn_interval`)."""
        return overturn_interval(overturned, audited, self.level)

    def stopped(self, overturned: int, audited: int) -> bool:
        """Whether skipping stops for good: the interval's lower bound exceeds ``max_overturn``."""
        return self.interval(overturned, audited)[1] > self.max_overturn
