"""The cumulative-logit (ordinal logistic) model of a gain (the MTC paper §4.1): its moments, its
fit (ML or MAP, checked against statsmodels' ``OrderedModel``) and a model on observed levels."""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from crowdprefs.evaluation.mtc.collection import Scale


def ordinal_moments(
    alpha: np.ndarray, eta: np.ndarray, labels: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """E and Var of a gain under the cumulative logit of the MTC paper (§4.1, MTC.md).

    P(G ≥ L_{l+1}) = logistic(α_l + η) for l = 1..len(α), P(G ≥ L_1) = 1;
    p_l = P(G ≥ L_l) − P(G ≥ L_{l+1}); E = Σ p_l L_l; V = Σ p_l L_l² − E².
    """
    upper = expit(alpha[None, :] + np.asarray(eta, dtype=float)[:, None])
    ones, zeros = np.ones((len(upper), 1)), np.zeros((len(upper), 1))
    p = np.hstack([ones, upper]) - np.hstack([upper, zeros])
    mean = p @ labels
    return mean, np.maximum(p @ labels**2 - mean**2, 0.0)


def fit_cumulative_logit(
    x: np.ndarray,
    y: np.ndarray,
    n_levels: int,
    offset: np.ndarray | None = None,
    prior_mean: np.ndarray | None = None,
    prior_precision: np.ndarray | None = None,
) -> np.ndarray:
    """Cumulative logit (the MTC paper's §4.1 ordinal logistic framework), ML or MAP.

    P(y ≤ j | x) = logistic(κ_j − x·β − o), j = 0..J−2, with κ_0 = θ_0 and
    κ_j = κ_{j−1} + exp(θ_j) (the parametrisation of statsmodels' ``OrderedModel``, whose
    estimates these are without prior and offset o). Returns (β, θ). A Gaussian prior adds
    ½ Σ precision·(params − mean)² to the negative log-likelihood (then levels may be absent
    from ``y``); without one every level 0..J−1 must occur.
    """
    n, m = x.shape
    offset = np.zeros(n) if offset is None else offset
    lower_index, upper_index = y - 1, y  # κ index below and above each observation
    at_top, at_bottom = y == n_levels - 1, y == 0
    center = np.zeros(m + n_levels - 1) if prior_mean is None else prior_mean
    precision = np.zeros(m + n_levels - 1) if prior_precision is None else prior_precision

    def objective(params: np.ndarray) -> tuple[float, np.ndarray]:
        beta, theta = params[:m], params[m:]
        steps = np.exp(theta[1:])
        kappa = theta[0] + np.r_[0.0, np.cumsum(steps)]
        eta = x @ beta + offset
        upper = np.where(at_top, np.inf, kappa[np.minimum(upper_index, n_levels - 2)] - eta)
        lower = np.where(at_bottom, -np.inf, kappa[np.maximum(lower_index, 0)] - eta)
        su, sl = expit(upper), expit(lower)
        p = np.maximum(su - sl, 1e-300)
        du, dl = su * (1 - su) / p, sl * (1 - sl) / p  # σ'(u)/p and σ'(l)/p; 0 at ±inf
        grad_kappa = -np.bincount(upper_index[~at_top], du[~at_top], n_levels - 1) + np.bincount(
            lower_index[~at_bottom], dl[~at_bottom], n_levels - 1
        )
        tail = np.cumsum(grad_kappa[::-1])[::-1]  # Σ_{j ≥ i} ∂/∂κ_j
        gap = params - center
        value = -np.log(p).sum() + 0.5 * (precision * gap) @ gap
        gradient = np.r_[x.T @ (du - dl), tail[0], steps * tail[1:]] + precision * gap
        return value, gradient

    if prior_mean is not None:
        start = prior_mean
    else:
        share = np.cumsum(np.bincount(y, minlength=n_levels))[:-1] / n
        kappa = np.log(share / (1 - share))
        start = np.r_[np.zeros(m), kappa[0], np.log(np.maximum(np.diff(kappa), 1e-3))]
    result = minimize(objective, start, jac=True, method="BFGS", options={"maxiter": 500})
    return result.x


def cumulative_logit_probabilities(
    x: np.ndarray, params: np.ndarray, offset: np.ndarray | None = None
) -> np.ndarray:
    """P(y = j | x) (n × J) under the parameters of :func:`fit_cumulative_logit`."""
    n, m = x.shape
    beta, theta = params[:m], params[m:]
    kappa = theta[0] + np.r_[0.0, np.cumsum(np.exp(theta[1:]))]
    eta = x @ beta + (0.0 if offset is None else offset)
    below = expit(kappa[None, :] - eta[:, None])
    return np.hstack([below, np.ones((n, 1))]) - np.hstack([np.zeros((n, 1)), below])


def gain_levels(gains: np.ndarray, scale: Scale) -> np.ndarray:
    """Ordinal level of each gain: Fine in ten bins [0,10), ..., [90,100]; Broad as is."""
    if scale == "broad":
        return np.round(gains).astype(int)
    return np.minimum(gains // 10, 9).astype(int)


def fit_level_model(
    x: np.ndarray, gains: np.ndarray, scale: Scale, l2: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """A ridge cumulative logit on the observed levels of ``gains`` (:func:`gain_levels`).

    Returns the parameters of :func:`fit_cumulative_logit`, each observed level's value (the
    mean gain of its training rows) and spread (their variance); None with fewer than two
    levels observed.
    """
    present, y = np.unique(gain_levels(gains, scale), return_inverse=True)
    if present.size < 2:
        return None
    count = np.bincount(y)
    value = np.bincount(y, gains) / count
    spread = np.bincount(y, gains**2) / count - value**2
    precision = np.r_[np.full(x.shape[1], l2), np.zeros(present.size - 1)]
    params = fit_cumulative_logit(x, y, present.size, None, np.zeros_like(precision), precision)
    return params, value, spread


def level_moments(
    x: np.ndarray, params: np.ndarray, value: np.ndarray, spread: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """E and Var of the gain under a :func:`fit_level_model` model: a mixture of its levels."""
    p = cumulative_logit_probabilities(x, params)
    mean = p @ value
    return mean, np.maximum(p @ (value**2 + spread) - mean**2, 0.0)
