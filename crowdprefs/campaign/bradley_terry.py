"""A tie-aware Bradley–Terry model with per-worker reliability, fitted on all answers at once.

Every candidate *i* of a query has a score ``s_i``; an answer compares a *first* candidate *i*
(shown left) with a *second* one *j*, and its outcome is a win for *i*, a tie ("equally
similar") or a win for *j*. With ``d = s_i − s_j`` the model gives the three outcomes the
probabilities ``p(d)``:

``davidson`` (Davidson, *On extending the Bradley-Terry model to accommodate ties in paired
comparison experiments*, JASA 1970), with ``π = exp(s)`` and tie parameter ν ≥ 0::

    p_win = π_i / (π_i + π_j + ν√(π_i π_j)) = e^{d/2} / (e^{d/2} + e^{−d/2} + ν)
    p_tie = ν√(π_i π_j) / (…)                = ν / (e^{d/2} + e^{−d/2} + ν)

``rao-kupper`` (Rao & Kupper, *Ties in paired-comparison experiments: a generalization of the
Bradley-Terry model*, JASA 1967), with tie parameter θ ≥ 1::

    p_win = π_i / (π_i + θ π_j) = σ(d − ln θ)
    p_tie = (θ² − 1) π_i π_j / ((π_i + θ π_j)(θ π_i + π_j))

A worker *w* follows the model with probability η_w (their *reliability*) and otherwise answers
from a personal distribution ``q_w`` over (first, equal, second) — a careless worker's coin, a
robot's constant "equal", a lean to the side shown first — in the spirit of Crowd-BT (Chen,
Bennett, Collins-Thompson & Horvitz, *Pairwise ranking aggregation in a crowdsourced setting*,
WSDM 2013) and crowd-kit's ``NoisyBradleyTerry``, extended to three outcomes::

    P(answer o of worker w on (i, j)) = η_w · p_o(s_i − s_j) + (1 − η_w) · q_{w,o}

All parameters — the scores of every query's candidates, one tie parameter shared by the crowd,
η_w = σ(ρ_w) and q_w = softmax(b_w,first, 0, b_w,second) of every worker — maximise the
log-likelihood Σ log P over *all* answers (L-BFGS with the analytic gradient, vectorised over
answers) plus weak Gaussian log-priors that keep the estimate finite when a candidate wins every
comparison or a worker answers little: s ~ N(0, 10²), ln ν or ln(θ − 1) ~ N(0, 10²),
ρ_w ~ N(2, 1) (η ≈ 0.88 until the answers say otherwise) and b_w ~ N(0, 1).

Groups of equally similar candidates: within a query, candidates are taken by decreasing score;
a candidate joins the current group unless its score is significantly below the score of the
group's first member: a two-sided test at level α of z = (s_head − s_k)/√Var, Var the variance
of the difference from the inverse expected Fisher information of the query's scores under the
null hypothesis of equal scores (every answer's information taken at d = 0, the other parameters
at their estimates, as in a score test). The information at the estimate would vanish when a
candidate wins every comparison and hide the clearest differences (the Hauck–Donner effect of
the Wald test). As with the Mann-Whitney rule, a clearer crowd or more answers separate more
groups. ``standard_errors`` are these null standard errors.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import optimize, special

from crowdprefs.errors import InputError

TieModel = Literal["davidson", "rao-kupper"]
TIE_MODELS = ("davidson", "rao-kupper")

SCORE_PRIOR_SD = 10.0
TIE_PRIOR_SD = 10.0
RELIABILITY_PRIOR_MEAN = 2.0
RELIABILITY_PRIOR_SD = 1.0
NOISE_PRIOR_SD = 1.0

_C = np.array([0.5, 0.0, -0.5])  # ∂(Davidson logit)/∂d for win, tie, loss
_T = np.array([0.0, 1.0, 0.0])  # ∂(Davidson logit)/∂τ


def _model(d: np.ndarray, tau: float, ties: TieModel) -> tuple[np.ndarray, ...]:
    """``(p, ∂p/∂d, ∂p/∂τ)``, each (n, 3) over (win, tie, loss), with τ = ln ν (Davidson) or
    ln(θ − 1) (Rao-Kupper)."""
    if ties == "davidson":
        logits = np.stack([d / 2, np.full_like(d, tau), -d / 2], axis=1)
        p = special.softmax(logits, axis=1)
        dp_dd = p * (_C[None, :] - (p @ _C)[:, None])
        dp_dtau = p * (_T - p[:, 1:2])
        return p, dp_dd, dp_dtau
    h = np.logaddexp(0.0, tau)  # ln θ = ln(1 + e^τ) > 0
    win, loss = special.expit(d - h), special.expit(-d - h)
    log_tie = 2 * h + np.log(-np.expm1(-2 * h)) + d - np.logaddexp(d, h) - np.logaddexp(h + d, 0.0)
    p = np.stack([win, np.exp(log_tie), loss], axis=1)
    g_win, g_loss = win * (1 - win), loss * (1 - loss)
    dh = special.expit(tau)
    dp_dd = np.stack([g_win, g_loss - g_win, -g_loss], axis=1)
    dp_dtau = np.stack([-g_win * dh, (g_win + g_loss) * dh, -g_loss * dh], axis=1)
    return p, dp_dd, dp_dtau


def _tie_parameter(tau: float, ties: TieModel) -> float:
    """ν = e^τ (Davidson) or θ = 1 + e^τ (Rao-Kupper) from the unconstrained τ."""
    return float(np.exp(tau)) if ties == "davidson" else float(1.0 + np.exp(tau))


def outcome_probabilities(difference, tie: float, ties: TieModel = "davidson") -> np.ndarray:
    """The model's ``(p_win, p_tie, p_loss)`` of the first candidate for score differences
    ``s_i − s_j`` (an (n, 3) array), given ν (Davidson, ≥ 0) or θ (Rao-Kupper, > 1); see the
    module docstring for the equations."""
    if ties not in TIE_MODELS:
        raise InputError(f"unknown tie model {ties!r}: use davidson or rao-kupper")
    if ties == "davidson" and tie <= 0 or ties == "rao-kupper" and tie <= 1:
        raise InputError(f"the {ties} tie parameter must be above {0 if ties == 'davidson' else 1}")
    tau = float(np.log(tie) if ties == "davidson" else np.log(tie - 1.0))
    return _model(np.atleast_1d(np.asarray(difference, dtype=float)), tau, ties)[0]


@dataclass(frozen=True)
class BradleyTerryFit:
    """A fitted model (see the module docstring). Arrays are indexed like the codes given to
    :func:`fit_bradley_terry`: items for ``scores``, ``standard_errors`` and ``groups`` (1 = most
    similar, numbered within each block), workers for ``reliability`` (η) and ``noise`` (q, an
    (n_workers, 3) array over first, equal, second)."""

    scores: np.ndarray
    standard_errors: np.ndarray
    groups: np.ndarray
    tie: float
    ties: TieModel
    reliability: np.ndarray
    noise: np.ndarray
    log_likelihood: float
    iterations: int
    converged: bool


def _noise(b: np.ndarray) -> np.ndarray:
    """q_w = softmax(b_first, 0, b_second) per worker."""
    return special.softmax(np.column_stack([b[:, 0], np.zeros(len(b)), b[:, 1]]), axis=1)


def fit_bradley_terry(
    first,
    second,
    outcome,
    worker=None,
    block=None,
    *,
    n_items: int | None = None,
    n_workers: int | None = None,
    ties: TieModel = "davidson",
    reliability: bool = True,
    alpha: float = 0.05,
    max_iter: int = 2000,
) -> BradleyTerryFit:
    """Fit the model on every answer at once (penalised maximum likelihood; module docstring).

    ``first``, ``second``: item codes (0 … n_items − 1) of each answer's candidates;
    ``outcome``: +1 the first preferred, 0 equal, −1 the second preferred; ``worker``: worker
    codes (0 … n_workers − 1; all answers from one worker when omitted); ``block``: per item, the
    code of its query (items are compared and grouped within their block; one block when
    omitted). ``reliability=False`` fits the plain tie model (η ≡ 1). ``alpha`` is the level of
    the test that separates groups.
    """
    if ties not in TIE_MODELS:
        raise InputError(f"unknown tie model {ties!r}: use davidson or rao-kupper")
    if not 0 < alpha < 1:
        raise InputError(f"alpha must lie between 0 and 1, got {alpha}")
    first = np.asarray(first, dtype=np.int64)
    second = np.asarray(second, dtype=np.int64)
    outcome = np.asarray(outcome, dtype=np.int64)
    if not len(first):
        raise InputError("there are no answers to fit")
    if not np.isin(outcome, (-1, 0, 1)).all():
        raise InputError("outcomes must be +1 (first preferred), 0 (equal) or -1")
    worker = np.zeros(len(first), np.int64) if worker is None else np.asarray(worker, np.int64)
    n = int(max(first.max(), second.max()) + 1) if n_items is None else n_items
    w = int(worker.max() + 1) if n_workers is None else n_workers
    block = np.zeros(n, np.int64) if block is None else np.asarray(block, np.int64)
    if (block[first] != block[second]).any():
        raise InputError("an answer compares candidates of two different queries")
    col = 1 - outcome  # 0 win, 1 tie, 2 loss (of the first candidate)
    rows = np.arange(len(first))
    n_free = n + 1 + (3 * w if reliability else 0)

    def unpack(theta: np.ndarray):
        s, tau = theta[:n], theta[n]
        if not reliability:
            return s, tau, None, None
        return s, tau, theta[n + 1 : n + 1 + w], theta[n + 1 + w :].reshape(w, 2)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        s, tau, rho, b = unpack(theta)
        p, dp_dd, dp_dtau = _model(s[first] - s[second], tau, ties)
        po, dpo_dd, dpo_dtau = p[rows, col], dp_dd[rows, col], dp_dtau[rows, col]
        grad = np.zeros(n_free)
        if reliability:
            eta_w, q_w = special.expit(rho), _noise(b)
            eta, qo = eta_w[worker], q_w[worker, col]
            prob = np.maximum(eta * po + (1 - eta) * qo, 1e-300)
            g_d, g_tau = eta * dpo_dd / prob, eta * dpo_dtau / prob
            grad[n + 1 : n + 1 + w] = np.bincount(
                worker, eta * (1 - eta) * (po - qo) / prob, minlength=w
            )
            g_b = np.empty((w, 2))
            for k, side in enumerate((0, 2)):  # b_first, b_second
                dq = qo * ((col == side) - q_w[worker, side])
                g_b[:, k] = np.bincount(worker, (1 - eta) * dq / prob, minlength=w)
            grad[n + 1 + w :] = g_b.ravel()
        else:
            prob = np.maximum(po, 1e-300)
            g_d, g_tau = dpo_dd / prob, dpo_dtau / prob
        grad[:n] = np.bincount(first, g_d, minlength=n) - np.bincount(second, g_d, minlength=n)
        grad[n] = g_tau.sum()
        value = np.log(prob).sum()
        # log-priors
        value -= (s @ s) / (2 * SCORE_PRIOR_SD**2) + tau**2 / (2 * TIE_PRIOR_SD**2)
        grad[:n] -= s / SCORE_PRIOR_SD**2
        grad[n] -= tau / TIE_PRIOR_SD**2
        if reliability:
            shift = rho - RELIABILITY_PRIOR_MEAN
            value -= (shift @ shift) / (2 * RELIABILITY_PRIOR_SD**2)
            value -= (b.ravel() @ b.ravel()) / (2 * NOISE_PRIOR_SD**2)
            grad[n + 1 : n + 1 + w] -= shift / RELIABILITY_PRIOR_SD**2
            grad[n + 1 + w :] -= b.ravel() / NOISE_PRIOR_SD**2
        return -value, -grad

    start = np.zeros(n_free)
    if reliability:
        start[n + 1 : n + 1 + w] = RELIABILITY_PRIOR_MEAN
    result = optimize.minimize(
        objective, start, jac=True, method="L-BFGS-B", options={"maxiter": max_iter}
    )
    s, tau, rho, b = unpack(result.x)
    eta_w = special.expit(rho) if reliability else np.ones(w)
    q_w = _noise(b) if reliability else np.full((w, 3), 1 / 3)

    eta = eta_w[worker][:, None]
    p = _model(s[first] - s[second], tau, ties)[0]
    p_obs = np.maximum(eta[:, 0] * p[rows, col] + (1 - eta[:, 0]) * q_w[worker, col], 1e-300)
    # Expected Fisher information of each answer about d = s_first − s_second, under d = 0.
    p0, dp0_dd, _ = _model(np.zeros(len(first)), tau, ties)
    prob0 = np.maximum(eta * p0 + (1 - eta) * q_w[worker], 1e-300)
    weight = ((eta * dp0_dd) ** 2 / prob0).sum(axis=1)
    standard_errors, groups = _groups(s, block, first, second, weight, alpha)
    return BradleyTerryFit(
        scores=s,
        standard_errors=standard_errors,
        groups=groups,
        tie=_tie_parameter(tau, ties),
        ties=ties,
        reliability=eta_w,
        noise=q_w,
        log_likelihood=float(np.log(p_obs).sum()),
        iterations=int(result.nit),
        converged=bool(result.success),
    )


def _groups(
    scores: np.ndarray,
    block: np.ndarray,
    first: np.ndarray,
    second: np.ndarray,
    weight: np.ndarray,
    alpha: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Standard errors and groups of every item (module docstring: Wald tests within a block).

    The information matrix of a block's scores is Σ weight·(e_i − e_j)(e_i − e_j)ᵀ plus the
    prior's precision; blocks of equal size are inverted together as one stacked array.
    """
    n = len(scores)
    blocks, local = np.unique(block, return_inverse=True)
    order = np.argsort(local, kind="stable")
    sizes = np.bincount(local, minlength=len(blocks))
    position = np.empty(n, np.int64)
    position[order] = np.arange(n) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    covariance: dict[int, np.ndarray] = {}
    for size in np.unique(sizes):
        chosen = np.flatnonzero(sizes == size)
        slot = np.full(len(blocks), -1)
        slot[chosen] = np.arange(len(chosen))
        info = np.zeros((len(chosen), size, size))
        info[:, np.arange(size), np.arange(size)] = 1 / SCORE_PRIOR_SD**2
        answer_slot = slot[local[first]]
        mine = answer_slot >= 0
        k, i, j, wt = answer_slot[mine], position[first][mine], position[second][mine], weight[mine]
        np.add.at(info, (k, i, i), wt)
        np.add.at(info, (k, j, j), wt)
        np.add.at(info, (k, i, j), -wt)
        np.add.at(info, (k, j, i), -wt)
        inverse = np.linalg.inv(info)
        for index, b in enumerate(chosen):
            covariance[int(b)] = inverse[index]
    z_critical = special.ndtri(1 - alpha / 2)
    standard_errors = np.empty(n)
    groups = np.empty(n, np.int64)
    for b in range(len(blocks)):
        members = order[np.cumsum(sizes)[b] - sizes[b] : np.cumsum(sizes)[b]]
        cov = covariance[b]
        standard_errors[members] = np.sqrt(np.diag(cov))
        ranked = np.argsort(-scores[members], kind="stable")  # local positions, best first
        head, group = ranked[0], 1
        for item in ranked:
            var = cov[head, head] + cov[item, item] - 2 * cov[head, item]
            if scores[members[head]] - scores[members[item]] > z_critical * np.sqrt(var):
                head, group = item, group + 1
            groups[members[item]] = group
    return standard_errors, groups
