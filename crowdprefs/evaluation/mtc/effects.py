"""Correlated per-system errors (MTC.md, "Why confidence 0.95 comes with accuracy 0.90"):
each system's unjudged documents share an error b_s, whose covariance Σ enters every variance
of AG@k and of differences. Σ = σ² m mᵀ + τ² I (+ ω² 11ᵀ) is fitted by empirical Bayes from
residuals: of the judgments at hand (:class:`SystemEffects`), or of held-out systems and
queries when a model is trained (:func:`fit_transfer_errors`, which also fits the spread η of
an error shared by each query's documents), and then updated by each judgment
(:func:`update_system_errors`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from crowdprefs.evaluation.mtc.collection import MAX_GAIN, Collection, Scale
from crowdprefs.evaluation.mtc.estimators import GainEstimator
from crowdprefs.evaluation.mtc.statistics import Estimates, pair_statistics, with_judgments


def quality_direction(quality: np.ndarray) -> np.ndarray:
    """m: the systems' estimated AG@k standardised (zeros when all are equal)."""
    spread = quality.std()
    return (quality - quality.mean()) / spread if spread > 0 else np.zeros(quality.size)


#: The error grid of the marginal-likelihood fits, in units of the maximum gain M.
ERROR_GRID = np.r_[0.0, np.geomspace(0.002, 0.2, 12)]
#: The grid of the per-query error η (× M): finer and wider than :data:`ERROR_GRID`, as the
#: documents of one query share much of their error (η ≈ 0.15 M on MIREX 2011).
QUERY_GRID = np.r_[0.0, np.geomspace(0.02, 0.4, 14)]
#: Noise scales λ tried by :func:`fit_transfer_errors`.
NOISE_SCALES = np.geomspace(0.5, 4.0, 13)
#: The per-system error sd assumed before a system error can be estimated (× M): the spread of
#: L_output's per-system mean residuals on MIREX 2011 (3.1 Fine points).
PRIOR_TAU = 0.03


def system_error_covariance(
    sigma: float, tau: float, quality: np.ndarray, omega: float = 0.0
) -> np.ndarray:
    """Σ = σ² m mᵀ + τ² I + ω² 11ᵀ, the covariance of per-system errors b = γ·m + u + c (S×S),
    with m the :func:`quality_direction`, γ ~ N(0, σ²), u ~ N(0, τ² I) and c ~ N(0, ω²): σ is
    the error shared by systems of similar quality (good systems retrieve better documents
    than predicted), τ what is proper to each system, ω a shift common to all (which cancels
    in differences)."""
    m = quality_direction(quality)
    s = quality.size
    return sigma**2 * np.outer(m, m) + tau**2 * np.eye(s) + omega**2 * np.ones((s, s))


def error_covariances(
    m: np.ndarray, n_queries: int, sigma: np.ndarray, tau: np.ndarray, omega: np.ndarray,
    eta: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """Σ at every grid point (G × K × K, K = S + ``n_queries``): the per-system block of
    :func:`system_error_covariance` and, for the queries, η² I (per-query errors)."""
    s = m.size
    covs = np.zeros((sigma.size, s + n_queries, s + n_queries))
    covs[:, :s, :s] = (
        sigma[:, None, None] ** 2 * np.outer(m, m)
        + tau[:, None, None] ** 2 * np.eye(s)
        + omega[:, None, None] ** 2 * np.ones((s, s))
    )
    covs[:, s:, s:] = eta[:, None, None] ** 2 * np.eye(n_queries)
    return covs


def _evidence(a: np.ndarray, h: np.ndarray, covs: np.ndarray) -> np.ndarray:
    """−½(log|I + ΣA| − hᵀ(I + ΣA)⁻¹Σh) for every Σ of ``covs`` (G × K × K): the part of the
    log marginal likelihood of r ~ N(0, zΣzᵀ + V) that depends on Σ, with A = zᵀV⁻¹z and
    h = zᵀV⁻¹r computed in K dimensions."""
    inner = np.eye(a.shape[0]) + covs @ a
    sign, logdet = np.linalg.slogdet(inner)
    quad = np.einsum("i,gi->g", h, np.linalg.solve(inner, (covs @ h)[..., None])[..., 0])
    return np.where(sign > 0, -0.5 * (logdet - quad), -np.inf)


def fit_system_errors(
    z: np.ndarray,
    residual: np.ndarray,
    noise: np.ndarray,
    quality: np.ndarray,
    scale: Scale,
) -> tuple[float, float]:
    """σ and τ of :func:`system_error_covariance` from the residuals of judged pairs.

    Model: r_d = z_d·b + ε_d, ε_d ~ N(0, V_d), z_d = X_{·d}/c_d (the mean over the systems
    retrieving d). σ and τ maximise the marginal likelihood r ~ N(0, z Σ zᵀ + V) over a grid
    (:func:`_evidence`); (0, 0) unless some Σ explains the residuals better than none.
    """
    w = 1.0 / np.maximum(noise, 1e-6 * MAX_GAIN[scale] ** 2)
    grid = MAX_GAIN[scale] * ERROR_GRID
    sigma, tau = (g.ravel() for g in np.meshgrid(grid, grid, indexing="ij"))
    none = np.zeros(sigma.size)
    covs = error_covariances(quality_direction(quality), 0, sigma, tau, none, none)
    score = _evidence(z.T @ (z * w[:, None]), z.T @ (w * residual), covs)
    best = int(np.argmax(score))
    return (float(sigma[best]), float(tau[best])) if score[best] > 0 else (0.0, 0.0)


@dataclass(frozen=True)
class HeldOut:
    """Residuals of one block of held-out systems × held-out queries: z (judged pairs × the
    block's systems), residual gain − E, the predicted variance V, the block's m, and the
    query of each judged pair (one-hot, judged pairs × the block's queries)."""

    z: np.ndarray
    residual: np.ndarray
    noise: np.ndarray
    direction: np.ndarray
    queries: np.ndarray


def _transfer_scores(
    blocks: list[HeldOut], scale: Scale, lam: float, sigma: np.ndarray, tau: np.ndarray,
    omega: np.ndarray, eta: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """The log marginal likelihood of the held-out residuals (up to a constant) at every grid
    point: per block, −½(n log λ + rᵀ(λV)⁻¹r + log|I + ΣA/λ| − hᵀ(I + ΣA/λ)⁻¹Σh/λ²) with
    the design [z, queries] (:func:`_evidence`), summed over blocks. The query columns are
    left out while every η is 0 (the likelihood is the same)."""
    score = np.zeros(sigma.size)
    for block in blocks:
        design = np.hstack([block.z, block.queries]) if eta.any() else block.z
        w = 1.0 / (lam * np.maximum(block.noise, 1e-6 * MAX_GAIN[scale] ** 2))
        a = design.T @ (design * w[:, None])
        h = design.T @ (w * block.residual)
        n_queries = design.shape[1] - block.z.shape[1]
        covs = error_covariances(block.direction, n_queries, sigma, tau, omega, eta)
        base = block.residual.size * np.log(lam) + (w * block.residual**2).sum()
        score += _evidence(a, h, covs) - 0.5 * base
    return score


def fit_transfer_errors(
    blocks: list[HeldOut], scale: Scale
) -> tuple[float, float, float, float, float]:
    """σ, τ, ω of :func:`system_error_covariance`, the spread η of per-query errors and the
    noise scale λ (ε_d ~ N(0, λV_d)) that maximise the
    marginal likelihood of residuals on held-out systems and queries
    (:func:`_transfer_scores`).

    Each block has its own systems, drawn from the same Σ, its own common shift and its own
    queries, each with an error q_j ~ N(0, η²) shared by its documents (a query whose
    candidates are all more alike than their features tell). Coordinate ascent over grids:
    (σ, τ, ω, λ) with η = 0, then (η, λ), then (σ, τ, ω) again.
    """
    grid = MAX_GAIN[scale] * ERROR_GRID
    sigma, tau, omega = (g.ravel() for g in np.meshgrid(grid, grid, grid, indexing="ij"))
    none = np.zeros(sigma.size)
    best, chosen = -np.inf, (0.0, 0.0, 0.0, 0.0, 1.0)
    for lam in NOISE_SCALES:
        score = _transfer_scores(blocks, scale, lam, sigma, tau, omega, none)
        i = int(np.argmax(score))
        if score[i] > best:
            best = score[i]
            chosen = (float(sigma[i]), float(tau[i]), float(omega[i]), 0.0, float(lam))
    s, t, o, _, _ = chosen
    etas = MAX_GAIN[scale] * QUERY_GRID
    ones = np.ones(etas.size)
    for lam in NOISE_SCALES:
        score = _transfer_scores(blocks, scale, lam, s * ones, t * ones, o * ones, etas)
        i = int(np.argmax(score))
        if score[i] > best:
            best, chosen = score[i], (s, t, o, float(etas[i]), float(lam))
    eta, lam = chosen[3], chosen[4]
    score = _transfer_scores(blocks, scale, lam, sigma, tau, omega, none + eta)
    i = int(np.argmax(score))
    if score[i] > best:
        chosen = (float(sigma[i]), float(tau[i]), float(omega[i]), eta, lam)
    return chosen


def update_system_errors(
    prior: np.ndarray, z: np.ndarray, residual: np.ndarray, noise: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The posterior of per-system errors b ~ N(0, Σ₀) given judged residuals
    r = z b + ε, ε ~ N(0, diag V): covariance Σ₀(I + AΣ₀)⁻¹ = (Σ₀⁻¹ + A)⁻¹ (also for a singular
    Σ₀) and mean Σ_post h, with A = zᵀV⁻¹z and h = zᵀV⁻¹r."""
    w = 1.0 / noise
    a = z.T @ (z * w[:, None])
    post = prior @ np.linalg.inv(np.eye(len(prior)) + a @ prior)
    post = (post + post.T) / 2
    return post @ (z.T @ (w * residual)), post


class SystemEffects(GainEstimator):
    """Wrap an estimator with correlated per-system errors (MTC.md, "Honest variances").

    The residuals of the judged pairs against the wrapped estimator's predictions (which never
    use a pair's own judgment) give the covariance Σ of per-system errors b_s
    (:func:`fit_system_errors`); an unjudged pair's gain is off by mean_{s∋d} b_s, so Σ
    enters every variance of AG@k and of differences (:func:`pair_statistics`) and the errors
    of one system's documents are no longer taken as independent. The expectations are left
    as the wrapped estimator gives them: moving them by the posterior mean of b was tried and
    dropped, because with a few judgments per system that mean is noise (over query-bootstrap
    collections of MIREX 2011 it lowered the accuracy curve from 0.927 to 0.849 on average and
    to 0.09 in the worst case; ``benchmarks/mtc_vs_reference.py``).

    τ is never below τ₀ = :data:`PRIOR_TAU`·M, and until ``min_judged`` pairs are judged (too
    few residuals to fit Σ) Σ = τ₀² I. The residuals are those of the systems judged most,
    which tell little of the errors of the systems judged least: on new systems and queries
    (``benchmarks/mtc_transfer.py``, 24 splits) the wrapped estimators' variances alone stopped
    on zero judgments in 3 splits, uniform stopped once at accuracy 0.639 (three poor systems
    with 7–14 judgments each taken for average ones) and fitted once at 0.833.
    """

    def __init__(
        self, base: GainEstimator, col: Collection, scale: Scale, min_judged: int = 20
    ) -> None:
        self.base, self.col, self.scale, self.min_judged = base, col, scale, min_judged
        self.z = col.mean_over_systems.T
        self.tau_floor = PRIOR_TAU * MAX_GAIN[scale]

    def predict(self, gains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.base.predict(gains)

    def __call__(self, gains: np.ndarray) -> Estimates:
        mean, var = self.predict(gains)
        est = with_judgments(mean, var, gains)
        if est.judged.sum() < self.min_judged:
            return with_system_errors(self.col, est, 0.0, self.tau_floor, self.scale)
        quality = pair_statistics(self.col, est, self.scale).mean
        judged = est.judged
        sigma, tau = fit_system_errors(
            self.z[judged], gains[judged] - mean[judged], var[judged], quality, self.scale
        )
        return with_system_errors(self.col, est, sigma, max(tau, self.tau_floor), self.scale)


def with_system_errors(
    col: Collection, est: Estimates, sigma: float, tau: float, scale: Scale
) -> Estimates:
    """``est`` with the per-system error covariance Σ(σ, τ) of :func:`system_error_covariance`,
    its direction m from the systems' AG@k under ``est``."""
    quality = pair_statistics(col, est, scale).mean
    cov = system_error_covariance(sigma, tau, quality)
    return Estimates(est.mean, est.var, est.judged, cov)
