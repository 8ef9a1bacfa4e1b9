"""From a model's similarity scores to calibrated probabilities of the crowd's answers.

A machine prior is a score per (query, document) from any model. Its scale means nothing to the
campaign, so within each query the scores become *normal scores* (:func:`normal_scores`):
z = Φ⁻¹((rank − 0.5)/n), average ranks for ties (Hazen's plotting position). A pair (x, pivot y)
gets the difference d = z_x − z_y.

:class:`Link` ties d to the three outcomes of a pair (more: x more similar, equal, less) by an
ordinal (cumulative) logistic model with symmetric thresholds ±θ (McCullagh 1980, *Regression
models for ordinal data*, JRSS B 42; Agresti 2010, *Analysis of Ordinal Categorical Data*, ch. 3):
with η = β·d + γ·s (s = +1 when x was shown first as A, −1 when second, 0 unknown),

    P(more) = σ(η − θ),    P(less) = σ(−η − θ),    P(equal) = 1 − P(more) − P(less)
            = σ(η + θ)·σ(θ − η)·(1 − e^(−2θ)),

σ the logistic function and θ = exp(τ) > 0. It is fitted (:meth:`Link.fit`) online on the
campaign's own human outcomes, per pair answer counts or one-hot verdicts, by maximum a
posteriori with weakly informative Gaussian priors β, γ ~ N(0, 1) (Gelman et al. 2008, *A weakly
informative default prior distribution for logistic regression models*, Ann. Appl. Stat. 2) and
τ ~ N(log log 2, 2²) (centred on base rates 1/3 each; it only keeps θ finite when no or only
"equal" outcomes are seen). The covariance is the Laplace approximation, the inverse of minus the
log posterior's Hessian at the mode (Tierney & Kadane 1986, JASA 81). The log-likelihood is
concave in (β, γ, θ); the fit runs a trust-region Newton method on (β, γ, τ) with the exact
gradient and Hessian, vectorised over pairs.

:meth:`Link.probabilities` integrates the Laplace posterior out (two-dimensional Gauss–Hermite
quadrature over (η, τ), deterministic), so a link fitted on few outcomes is not confident. A useless
model (scores unrelated to the answers) gets β ≈ 0 and probabilities near the base rates; an
adversarial one gets β < 0, which the link learns: either way the probabilities stay calibrated,
and :meth:`Link.slope_interval` says how much the campaign trusts the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize, special

from crowdprefs.errors import InputError

SLOPE_SCALE = 1.0
"""Prior standard deviation of β and γ (logits per unit of normal-score difference)."""
LOG_THETA_MEAN = math.log(math.log(2.0))
"""Prior mean of τ = log θ: θ = log 2 gives each outcome probability 1/3 at d = s = 0."""
LOG_THETA_SCALE = 2.0
"""Prior standard deviation of τ = log θ."""
NODES = 9
"""Gauss–Hermite nodes per dimension of :meth:`Link.probabilities` (81 in all)."""


def normal_scores(query_codes: np.ndarray, score: np.ndarray) -> np.ndarray:
    """Per item, Φ⁻¹((rank − 0.5)/n) of its score's rank among the n items of its query.

    Ties get their average rank (:func:`query_ranks`); a query with one item gets 0.
    """
    codes = np.asarray(query_codes).ravel()
    values = np.asarray(score, dtype=float).ravel()
    if codes.shape != values.shape:
        raise InputError(f"{codes.size} query codes for {values.size} scores")
    if not np.isfinite(values).all():
        raise InputError("machine scores must be finite numbers")
    rank, size = query_ranks(codes, values)
    return special.ndtri((rank - 0.5) / size)


def query_ranks(codes: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per item, the average rank (1 = smallest, ties averaged) of its value among the items of
    its query, and the query's size. Vectorised: one sort of all items."""
    if values.size == 0:
        return np.zeros(0), np.zeros(0)
    order = np.lexsort((values, codes))
    c, v = codes[order], values[order]
    position = np.arange(v.size)
    new_query = np.r_[True, c[1:] != c[:-1]]
    new_run = new_query | np.r_[True, v[1:] != v[:-1]]
    query = np.cumsum(new_query) - 1
    run = np.cumsum(new_run) - 1
    start = np.maximum.accumulate(np.where(new_query, position, 0))
    rank = (position - start + 1).astype(float)
    mean_rank = np.bincount(run, weights=rank) / np.bincount(run)
    ranks, sizes = np.empty(v.size), np.empty(v.size)
    ranks[order] = mean_rank[run]
    sizes[order] = np.bincount(query)[query]
    return ranks, sizes


def _log_sigmoid(x: np.ndarray) -> np.ndarray:
    """log σ(x), without overflow."""
    return -np.logaddexp(0.0, -x)


def _dot(a: np.ndarray, b: np.ndarray) -> float:
    """Σ a·b without BLAS (whose threads cost more CPU than they save on one vector)."""
    return float(np.einsum("i,i->", a, b))


def _outcome_probabilities(eta: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """P(more), P(equal), P(less) stacked on a last axis, for broadcast η and θ."""
    more = special.expit(eta - theta)
    less = special.expit(-eta - theta)
    equal = special.expit(eta + theta) * special.expit(theta - eta) * -np.expm1(-2.0 * theta)
    return np.stack([more, equal, less], axis=-1)


def _check_pairs(d, s, counts=None) -> tuple[np.ndarray, ...]:
    """``d`` and ``s`` as float vectors of one length (``s`` broadcast), and ``counts`` (n, 3)."""
    d = np.atleast_1d(np.asarray(d, dtype=float))
    if d.ndim != 1:
        raise InputError(f"score differences must be a vector, got shape {d.shape}")
    s = np.broadcast_to(np.asarray(s, dtype=float), d.shape)
    if not (np.isfinite(d).all() and np.isfinite(s).all()):
        raise InputError("score differences and sides must be finite")
    if counts is None:
        return d, s
    counts = np.asarray(counts, dtype=float).reshape(-1, 3) if np.size(counts) else np.zeros((0, 3))
    if counts.shape != (d.size, 3):
        raise InputError(f"counts must have shape ({d.size}, 3), got {np.shape(counts)}")
    if not np.isfinite(counts).all() or (counts < 0).any():
        raise InputError("outcome counts must be finite and non-negative")
    return d, s, counts


class _Objective:
    """Minus the log posterior of (β, γ, τ), its gradient and Hessian (one pass per point)."""

    def __init__(self, d: np.ndarray, s: np.ndarray, counts: np.ndarray) -> None:
        self.d, self.s = np.ascontiguousarray(d), np.ascontiguousarray(s)
        self.more, self.equal, self.less = (np.ascontiguousarray(c) for c in counts.T)
        self.not_less = self.more + self.equal  # outcomes above the lower threshold
        self.not_more = self.less + self.equal
        self.products = np.stack([self.d * self.d, self.d * self.s, self.s * self.s])
        self.total_equal = float(self.equal.sum())
        self.cache: dict[tuple[float, ...], tuple[float, np.ndarray, np.ndarray]] = {}

    def evaluate(self, x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """(−log posterior, gradient, Hessian) at ``x = (β, γ, τ)``, cached for the last x.

        Per pair, with u = η − θ and v = η + θ: ℓ = more·log σ(u) + less·log σ(−v)
        + equal·(log σ(v) + log σ(−u) + log(1 − e^(−2θ))); ∂ℓ/∂η = (more + equal)·σ(−u)
        − (less + equal)·σ(v); ∂²ℓ/∂η² = −(more + equal)·w(u) − (less + equal)·w(v) with
        w = σ·(1 − σ); η is linear in (β, γ) and θ = e^τ (chain rule)."""
        key = tuple(float(v) for v in x)
        if key in self.cache:
            return self.cache[key]
        beta, gamma, tau = key
        theta = math.exp(tau)
        eta = beta * self.d + gamma * self.s
        up, down = eta - theta, eta + theta  # more iff η + noise > θ; less iff η + noise < −θ
        above_up, below_up = special.expit(up), special.expit(-up)  # σ(η − θ), σ(θ − η)
        above_down, below_down = special.expit(down), special.expit(-down)  # σ(η + θ), σ(−η − θ)
        loglik = (
            _dot(self.more, _log_sigmoid(up))
            + _dot(self.less, _log_sigmoid(-down))
            + _dot(self.equal, _log_sigmoid(down) + _log_sigmoid(-up))
            + self.total_equal * math.log(-math.expm1(-2 * theta))
        )
        g_eta = self.not_less * below_up - self.not_more * above_down
        g_theta = (
            _dot(self.equal, above_up + below_down)
            - _dot(self.more, below_up)
            - _dot(self.less, above_down)
            + self.total_equal * 2.0 / math.expm1(2 * theta)
        )
        a = self.not_less * (above_up * below_up)
        b = self.not_more * (above_down * below_down)
        h_ee, h_et = -(a + b), a - b
        h_tt = float(h_ee.sum()) - self.total_equal / math.sinh(theta) ** 2
        d, s = self.d, self.s
        dd, ds, ss = np.einsum("ki,i->k", self.products, h_ee)
        grad = np.array([_dot(d, g_eta), _dot(s, g_eta), theta * g_theta])
        d_t, s_t = theta * _dot(d, h_et), theta * _dot(s, h_et)
        t_t = theta * theta * h_tt + theta * g_theta
        hess = np.array([[dd, ds, d_t], [ds, ss, s_t], [d_t, s_t, t_t]])
        mean, precision = _prior()
        x = np.array(key)
        value = -loglik + 0.5 * precision @ (x - mean) ** 2
        out = (float(value), -grad + precision * (x - mean), -hess + np.diag(precision))
        self.cache.clear()
        self.cache[key] = out
        return out


def _prior() -> tuple[np.ndarray, np.ndarray]:
    """Prior mean and precision (diagonal) of (β, γ, τ)."""
    mean = np.array([0.0, 0.0, LOG_THETA_MEAN])
    scale = np.array([SLOPE_SCALE, SLOPE_SCALE, LOG_THETA_SCALE])
    return mean, scale**-2.0


@dataclass(frozen=True)
class Link:
    """A fitted ordinal logistic link (see the module doc) with its Laplace posterior.

    ``beta``, ``gamma``, ``theta``: the posterior mode; ``covariance``: the Laplace covariance of
    (β, γ, τ = log θ); ``n``: the outcomes the fit used (sum of the counts).
    """

    beta: float
    gamma: float
    theta: float
    covariance: np.ndarray = field(compare=False, repr=False)
    n: float = 0

    @classmethod
    def prior(cls) -> Link:
        """The link before any outcome: β = γ = 0, θ = log 2, the prior covariance."""
        mean, precision = _prior()
        return cls(0.0, 0.0, math.exp(mean[2]), np.diag(1.0 / precision), 0)

    @classmethod
    def fit(cls, d, s, counts) -> Link:
        """Posterior mode and Laplace covariance from per-pair outcome counts.

        ``d``: score differences z_x − z_y (n,); ``s``: side of x (+1 shown as A, −1 as B, 0
        unknown; scalar or (n,)); ``counts``: (n, 3) outcomes (more, equal, less) per row, answer
        counts or one-hot verdicts (a pair shown both ways takes one row per side). With no
        outcome it returns :meth:`prior`; separated or one-outcome data stay finite by the prior.
        """
        d, s, counts = _check_pairs(d, s, counts)
        total = float(counts.sum())
        if total == 0:
            return cls.prior()
        used = counts.sum(axis=1) > 0
        objective = _Objective(d[used], s[used], counts[used])
        start = _prior()[0]
        result = optimize.minimize(
            lambda x: objective.evaluate(x)[:2],
            start,
            jac=True,
            hess=lambda x: objective.evaluate(x)[2],
            method="trust-exact",
            options={"gtol": 1e-8, "maxiter": 200},
        )
        hessian = objective.evaluate(result.x)[2]
        try:
            covariance = np.linalg.inv(hessian)
            np.linalg.cholesky(covariance)
        except np.linalg.LinAlgError:
            covariance = np.linalg.pinv(hessian)
        beta, gamma, tau = (float(v) for v in result.x)
        return cls(beta, gamma, math.exp(tau), 0.5 * (covariance + covariance.T), total)

    def probabilities(self, d, s, *, integrate: bool = True) -> np.ndarray:
        """(n, 3) probabilities of more, equal, less for pairs with differences ``d``, sides ``s``.

        With ``integrate`` the Laplace posterior of (β, γ, τ) is integrated out:
        E[P(outcome | η, τ)] with (η, τ) jointly normal per pair (η = β·d + γ·s), by a
        ``NODES``² Gauss–Hermite product rule on their Cholesky factor; otherwise the mode is
        plugged in.
        """
        d, s = _check_pairs(d, s)
        eta = self.beta * d + self.gamma * s
        tau = math.log(self.theta)
        if not integrate:
            return _outcome_probabilities(eta, np.full(eta.shape, self.theta))
        cov = self.covariance
        var_eta = d * d * cov[0, 0] + 2 * d * s * cov[0, 1] + s * s * cov[1, 1]
        cross = d * cov[0, 2] + s * cov[1, 2]
        l11 = np.sqrt(np.maximum(var_eta, 0.0))
        l21 = np.divide(cross, l11, out=np.zeros_like(cross), where=l11 > 0)
        l22 = np.sqrt(np.maximum(cov[2, 2] - l21 * l21, 0.0))
        x, w = np.polynomial.hermite.hermgauss(NODES)
        z1, z2 = np.meshgrid(math.sqrt(2) * x, math.sqrt(2) * x, indexing="ij")
        weight = (np.outer(w, w) / math.pi).ravel()
        z1, z2 = z1.ravel(), z2.ravel()
        eta_k = eta[:, None] + l11[:, None] * z1
        tau_k = tau + l21[:, None] * z1 + l22[:, None] * z2
        return np.einsum("k,nkj->nj", weight, _outcome_probabilities(eta_k, np.exp(tau_k)))

    def slope_interval(self, level: float = 0.95) -> tuple[float, float]:
        """Wald interval of β from the Laplace posterior: how much the campaign trusts the model
        (entirely above 0: a useful model; containing 0: none shown; below 0: reversed)."""
        if not 0 < level < 1:
            raise InputError(f"level must be in (0, 1), got {level}")
        half = float(special.ndtri(0.5 + level / 2)) * math.sqrt(self.covariance[0, 0])
        return self.beta - half, self.beta + half
