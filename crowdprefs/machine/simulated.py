"""A simulated machine judge for planning: scores with a chosen Spearman correlation to the truth.

``plan --prior-correlation r`` asks what a model of quality *r* would save before the researcher
has one. The scores follow a Gaussian copula: within each query, the truth's normal scores
``z`` (its groups ranked, ties sharing their average rank, mapped through Φ⁻¹) are mixed with
independent noise, ``score = ρ·z + √(1 − ρ²)·ε``. For a bivariate normal, Spearman's correlation is
``(6/π)·asin(ρ/2)`` (Kendall & Gibbons 1990); the truth's ties make the realised value smaller, so
ρ is found by bisection on the mean within-query Spearman correlation of fixed replicate draws
(:func:`copula_rho`). A negative *r* is a model that ranks against the truth (an adversarial
prior).

A pairwise machine judge may also favour the clip shown first (a position bias, reported for
audio-language judges): ``position_bias`` adds that many score units to the side shown as A
when the model's verdict on a pair is read (:class:`SimulatedPrior`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import special

from crowdprefs.errors import InputError
from crowdprefs.machine.link import normal_scores, query_ranks
from crowdprefs.rng import counter_uniform

REPLICATES = 16
"""Draws of the collection over which the realised correlation is averaged in the bisection."""


@dataclass(frozen=True)
class SimulatedPrior:
    """A model whose scores have Spearman correlation ``correlation`` with the truth (mean over
    queries), with a ``position_bias`` toward the side shown as A, in score units."""

    correlation: float
    position_bias: float = 0.0

    def __post_init__(self) -> None:
        if not -1 <= self.correlation <= 1:
            raise InputError(f"the prior's correlation must lie in [-1, 1], got {self.correlation}")
        if not -10 <= self.position_bias <= 10:
            raise InputError(
                f"the prior's position bias must lie in [-10, 10], got {self.position_bias}"
            )


def spearman_by_query(query: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Spearman's correlation of ``a`` and ``b`` within each query (Pearson's on average
    ranks); NaN where either is constant."""
    ra, rb = (
        query_ranks(query, np.asarray(a, float))[0],
        query_ranks(query, np.asarray(b, float))[0],
    )
    sizes = np.bincount(query)
    ca = ra - (np.bincount(query, ra) / sizes)[query]
    cb = rb - (np.bincount(query, rb) / sizes)[query]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.bincount(query, ca * cb) / np.sqrt(
            np.bincount(query, ca * ca) * np.bincount(query, cb * cb)
        )


def _scores(z: np.ndarray, rho: float, noise: np.ndarray) -> np.ndarray:
    return rho * z + np.sqrt(max(1 - rho * rho, 0.0)) * noise


def copula_rho(query: np.ndarray, group: np.ndarray, correlation: float) -> float:
    """The copula's ρ whose scores have mean within-query Spearman ``correlation`` with the
    truth (averaged over :data:`REPLICATES` fixed draws), by bisection; remembered per
    collection, so the campaigns of a plan compute it once."""
    return _copula_rho(query.tobytes(), group.astype(np.int64).tobytes(), correlation)


@lru_cache(maxsize=64)
def _copula_rho(query_bytes: bytes, group_bytes: bytes, correlation: float) -> float:
    query = np.frombuffer(query_bytes, dtype=np.int64)
    group = np.frombuffer(group_bytes, dtype=np.int64)
    z = normal_scores(query, -group)
    keys = np.arange(len(query))
    noise = [special.ndtri(counter_uniform(0x5C0E, r, keys)) for r in range(REPLICATES)]

    def realised(rho: float) -> float:
        values = [spearman_by_query(query, _scores(z, rho, e), -group.astype(float)) for e in noise]
        return float(np.nanmean(values))

    target = float(np.clip(correlation, -realised(1.0), realised(1.0)))
    low, high = -1.0, 1.0
    for _ in range(40):
        middle = (low + high) / 2
        low, high = (middle, high) if realised(middle) < target else (low, middle)
    return (low + high) / 2


def simulated_scores(
    query: np.ndarray, group: np.ndarray, prior: SimulatedPrior, seed: int, rho: float | None = None
) -> np.ndarray:
    """One campaign's model scores (counter-based: keyed by ``seed`` and the candidate), at the
    copula's ``rho`` (computed by :func:`copula_rho` when not given)."""
    rho = copula_rho(query, group, prior.correlation) if rho is None else rho
    noise = special.ndtri(counter_uniform(seed, 0x5C0F, np.arange(len(query))))
    return _scores(normal_scores(query, -group), rho, noise)


def realised_correlation(query: np.ndarray, group: np.ndarray, score: np.ndarray) -> float:
    """The mean within-query Spearman correlation of ``score`` with the truth."""
    return float(np.nanmean(spearman_by_query(query, score, -group.astype(float))))
