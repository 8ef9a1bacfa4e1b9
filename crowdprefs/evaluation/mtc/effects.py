"""Correlated per-system errors (MTC.md, "Why confidence 0.95 comes with accuracy 0.90"):
each system's unjudged documents share an error b_s, whose covariance Σ enters every variance
of AG@k and of differences. Σ = σ² m mᵀ + τ² I (+ ω² 11ᵀ) is fitted by empirical Bayes from
residuals: of the judgments at hand (:class:`SystemEffects`), or of held-out systems and
queries when a model is trained (:func:`fit_transfer_errors`), and then updated by each
judgment (:func:`update_system_errors`)."""

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


def _evidence(
    a: np.ndarray, h: np.ndarray, m: np.ndarray, sigma: np.ndarray, tau: np.ndarray,
    omega: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """−½(log|I + ΣA| − hᵀ(I + ΣA)⁻¹Σh) at every grid point (σ, τ, ω): the part of the log
    marginal likelihood of r ~ N(0, zΣzᵀ + V) that depends on Σ, with A = zᵀV⁻¹z and
    h = zᵀV⁻¹r computed in S dimensions."""
    s = a.shape[0]
    covs = (
        sigma[:, None, None] ** 2 * np.outer(m, m)
        + tau[:, None, None] ** 2 * np.eye(s)
        + omega[:, None, None] ** 2 * np.ones((s, s))
    )
    inner = np.eye(s) + covs @ a
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
    score = _evidence(
        z.T @ (z * w[:, None]), z.T @ (w * residual), quality_direction(quality), sigma, tau,
        np.zeros(sigma.size),
    )  # fmt: skip
    best = int(np.argmax(score))
    return (float(sigma[best]), float(tau[best])) if score[best] > 0 else (0.0, 0.0)


@dataclass(frozen=True)
class HeldOut:
    """Residuals of one block of held-out systems × held-out queries: z (judged pairs × the
    block's systems), residual gain − E, the predicted variance V, and the block's m."""

    z: np.ndarray
    residual: np.ndarray
    noise: np.ndarray
    direction: np.ndarray


def fit_transfer_errors(blocks: list[HeldOut], scale: Scale) -> tuple[float, float, float, float]:
    """σ, τ, ω of :func:`system_error_covariance` and the noise scale λ (ε_d ~ N(0, λV_d))
    that maximise the marginal likelihood of residuals on held-out systems and queries.

    Each block has its own systems, drawn from the same Σ, and its own common shift. The full
    log likelihood per block is −½(n log λ + rᵀ(λV)⁻¹r + log|I + ΣA/λ| − hᵀ(I + ΣA/λ)⁻¹Σh/λ²)
    (:func:`_evidence` with A/λ, h/λ), summed over blocks and maximised over a grid.
    """
    grid = MAX_GAIN[scale] * ERROR_GRID
    sigma, tau, omega = (g.ravel() for g in np.meshgrid(grid, grid, grid, indexing="ij"))
    best, chosen = -np.inf, (0.0, 0.0, 0.0, 1.0)
    for lam in NOISE_SCALES:
        score = np.zeros(sigma.size)
        for block in blocks:
            w = 1.0 / (lam * np.maximum(block.noise, 1e-6 * MAX_GAIN[scale] ** 2))
            a = block.z.T @ (block.z * w[:, None])
            h = block.z.T @ (w * block.residual)
            base = block.residual.size * np.log(lam) + (w * block.residual**2).sum()
            score += _evidence(a, h, block.direction, sigma, tau, omega) - 0.5 * base
        i = int(np.argmax(score))
        if score[i] > best:
            best, chosen = score[i], (float(sigma[i]), float(tau[i]), float(omega[i]), float(lam))
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
