"""The tie-aware Bradley–Terry model with per-worker reliability and its maximiser: the
outcome probabilities, the problem of one fit, the log-posterior with its gradient and
curvature, the truncated Newton ascent and the groups of the fitted scores. The model, the
fit and the tests are described in :mod:`crowdprefs.campaign.bradley_terry`, which is the
place to fit it from (:func:`crowdprefs.campaign.bradley_terry.fit_bradley_terry`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import special

from crowdprefs.errors import InputError

TieModel = Literal["davidson", "rao-kupper"]
TIE_MODELS = ("davidson", "rao-kupper")
Reliability = bool | Literal["auto"]

SCORE_PRIOR_SD = 10.0
TIE_PRIOR_SD = 10.0
RELIABILITY_PRIOR_MEAN = 2.0
RELIABILITY_PRIOR_SD = 1.0
NOISE_PRIOR_SD = 1.0
_WORKER_PRECISION = np.array(
    [1 / RELIABILITY_PRIOR_SD**2, 1 / NOISE_PRIOR_SD**2, 1 / NOISE_PRIOR_SD**2]
)  # prior precision of each worker's (ρ, b_first, b_second)

_C = np.array([0.5, 0.0, -0.5])  # ∂(Davidson log-odds)/∂d for win, tie, loss
_T = np.array([0.0, 1.0, 0.0])  # ∂(Davidson log-odds)/∂τ
MIN_ANSWERS_PER_WORKER = 3  # below this median per worker, reliabilities are not identifiable
MIN_RELIABILITY_INFORMATION = 0.1  # median ρ information per worker, in prior precisions
_CHUNK = 1 << 22  # matrix entries stacked per solve (32 MB of float64)
BLAS_THREADS = 1  # the fit's matrices are small: more BLAS threads only add contention


def _model(
    d: np.ndarray, tau: float, ties: TieModel, derivatives: bool = True
) -> tuple[np.ndarray, ...]:
    """``(p, ∂ln p/∂d, ∂ln p/∂τ)``, each (n, 3) over (win, tie, loss), with τ = ln ν
    (Davidson) or ln(θ − 1) (Rao-Kupper); without ``derivatives`` only ``(p,)``. The
    derivatives are of ln p, exact where p underflows."""
    if ties == "davidson":
        half = d / 2
        top = np.maximum(np.abs(half), tau)
        p = np.empty((len(d), 3))
        p[:, 0], p[:, 1], p[:, 2] = np.exp(half - top), np.exp(tau - top), np.exp(-half - top)
        p /= (p[:, 0] + p[:, 1] + p[:, 2])[:, None]
        if not derivatives:
            return (p,)
        # ln p_o = c_o·d + t_o·τ − ln(e^{d/2} + e^{−d/2} + ν)
        dlog_dd = _C - ((p[:, 0] - p[:, 2]) / 2)[:, None]
        dlog_dtau = _T - p[:, 1:2]
        return p, dlog_dd, dlog_dtau
    h = np.logaddexp(0.0, tau)  # ln θ = ln(1 + e^τ) > 0
    win, loss = special.expit(d - h), special.expit(-d - h)
    log_tie = 2 * h + np.log(-np.expm1(-2 * h)) + d - np.logaddexp(d, h) - np.logaddexp(h + d, 0.0)
    p = np.stack([win, np.exp(log_tie), loss], axis=1)
    if not derivatives:
        return (p,)
    dh = special.expit(tau)
    lose_side, win_side = special.expit(h - d), special.expit(h + d)  # 1 − win, 1 − loss
    dlog_dd = np.stack([lose_side, lose_side - win_side, -win_side], axis=1)
    tie_dh = 2 / -np.expm1(-2 * h) - lose_side - win_side
    dlog_dtau = np.stack([-lose_side, tie_dh, -win_side], axis=1) * dh
    return p, dlog_dd, dlog_dtau


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
class _NullCovariance:
    """The inverse null information of every block's scores (module docstring), stacked per
    chunk of blocks of one size, and where each item sits: its chunk, block row and position."""

    matrices: tuple[np.ndarray, ...]
    chunk: np.ndarray
    row: np.ndarray
    position: np.ndarray

    def difference_variance(self, first: np.ndarray, second: np.ndarray) -> np.ndarray:
        """Var₀(s_first − s_second) of items of the same block."""
        variance = np.empty(len(first))
        for k, cov in enumerate(self.matrices):
            rows = np.flatnonzero(self.chunk[first] == k)
            block = self.row[first[rows]]
            i, j = self.position[first[rows]], self.position[second[rows]]
            variance[rows] = cov[block, i, i] + cov[block, j, j] - 2 * cov[block, i, j]
        return variance


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
    null_covariance: _NullCovariance = field(repr=False, compare=False)
    fallback: str | None = None  # why worker reliabilities were dropped (module docstring)
    with_reliability: bool = True  # whether worker reliabilities were fitted

    def difference_test(self, first, second) -> tuple[np.ndarray, np.ndarray]:
        """``(z, p)`` of the test of s_first = s_second for item pairs of the same block:
        z = (s_first − s_second) / √Var₀ with the null variance of the groups' test (module
        docstring) and the two-sided p-value 2·Φ(−|z|)."""
        first = np.asarray(first, dtype=np.int64)
        second = np.asarray(second, dtype=np.int64)
        variance = self.null_covariance.difference_variance(first, second)
        z = (self.scores[first] - self.scores[second]) / np.sqrt(variance)
        return z, 2 * special.ndtr(-np.abs(z))

    def verdicts(self, x, y, alpha: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
        """``(verdict, p)`` of the item pairs ``(x, y)``: +1 when s_x > s_y and the two-sided
        :meth:`difference_test` rejects s_x = s_y at level ``alpha``, −1 the other way round,
        0 ("equal") otherwise; with the test's p-values."""
        z, p = self.difference_test(x, y)
        return np.where(p < alpha, np.sign(z), 0).astype(np.int8), p


def _noise(b: np.ndarray) -> np.ndarray:
    """q_w = softmax(b_first, 0, b_second) per worker."""
    return special.softmax(np.column_stack([b[:, 0], np.zeros(len(b)), b[:, 1]]), axis=1)


@dataclass(frozen=True)
class _Blocks:
    """Where each query's scores sit in stacked dense matrices: queries of one size together,
    in chunks of at most ``_CHUNK`` entries. Per chunk: ``members`` (blocks × size item codes),
    and for the distinct pairs inside it their ``pairs`` indices and flat (i, i), (j, j),
    (i, j), (j, i) positions in the stacked matrices."""

    chunks: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], ...]

    @classmethod
    def build(cls, block: np.ndarray, first: np.ndarray, second: np.ndarray) -> _Blocks:
        """The layout for items coded by ``block`` and compared in pairs ``(first, second)``."""
        codes, local = np.unique(block, return_inverse=True)
        order = np.argsort(local, kind="stable")
        sizes = np.bincount(local, minlength=len(codes))
        starts = np.cumsum(sizes) - sizes
        position = np.empty(len(block), np.int64)
        position[order] = np.arange(len(block)) - np.repeat(starts, sizes)
        pair_block = local[first]
        chunks = []
        for size in np.unique(sizes):
            chosen = np.flatnonzero(sizes == size)
            per_chunk = max(1, _CHUNK // (size * size))
            for part in np.array_split(chosen, -(-len(chosen) // per_chunk)):
                members = order[starts[part][:, None] + np.arange(size)[None, :]]
                slot = np.full(len(codes), -1)
                slot[part] = np.arange(len(part))
                inside = np.flatnonzero(slot[pair_block] >= 0)
                base = slot[pair_block[inside]] * size * size
                i, j = position[first[inside]], position[second[inside]]
                flat = np.concatenate(
                    [
                        base + i * size + i,
                        base + j * size + j,
                        base + i * size + j,
                        base + j * size + i,
                    ]
                )
                chunks.append((members, inside, flat))
        return cls(tuple(chunks))

    def matrices(self, weight: np.ndarray, chunk: int) -> np.ndarray:
        """The stacked Σ weight·(e_i − e_j)(e_i − e_j)ᵀ + prior precision of one chunk
        (``weight`` per distinct pair)."""
        members, inside, flat = self.chunks[chunk]
        count, size = members.shape
        w = weight[inside]
        weights = np.concatenate([w, w, -w, -w]).astype(float)  # float even when empty
        info = np.bincount(flat, weights, minlength=count * size * size).astype(float)
        info = info.reshape(count, size, size)
        info[:, np.arange(size), np.arange(size)] += 1 / SCORE_PRIOR_SD**2
        return info


@dataclass(frozen=True)
class _Problem:
    """The answers, reduced to what the likelihood needs. The model's probabilities depend on
    an answer only through its ordered pair of candidates (``pair_first``, ``pair_second``:
    the m distinct pairs) and the noise through its worker, so each answer is two flat indices:
    ``pair_outcome`` = pair·3 + outcome into (m, 3) arrays and ``worker_outcome`` =
    worker·3 + outcome into (w, 3) ones (outcome 0 first preferred, 1 equal, 2 second
    preferred), the answers sorted by pair for locality. Without worker reliability only the
    ``counts`` per (pair, outcome) matter."""

    pair_first: np.ndarray
    pair_second: np.ndarray
    pair_outcome: np.ndarray
    worker_outcome: np.ndarray
    counts: np.ndarray  # answers per (pair, outcome), flat
    worker_counts: np.ndarray  # answers per (worker, outcome), (w, 3)
    n: int
    w: int
    ties: TieModel
    reliability: bool
    blocks: _Blocks
    work: dict = field(default_factory=dict, repr=False, compare=False)  # per-answer buffers

    @classmethod
    def build(cls, first, second, col, worker, n, w, ties, reliability, block) -> _Problem:
        """The problem of answers ``(first, second, col, worker)`` on items coded by ``block``."""
        key = first * n + second
        order = np.argsort(key * 3 + col)
        key, col, worker = key[order], col[order], worker[order]
        new = np.empty(len(key), bool)
        new[0], new[1:] = True, key[1:] != key[:-1]
        pair = np.cumsum(new) - 1
        pair_first, pair_second = first[order][new], second[order][new]
        pair_outcome = pair * 3 + col
        worker_outcome = worker * 3 + col
        counts = np.bincount(pair_outcome, minlength=3 * len(pair_first)).astype(float)
        worker_counts = np.bincount(worker_outcome, minlength=3 * w).astype(float).reshape(w, 3)
        blocks = _Blocks.build(block, pair_first, pair_second)
        return cls(
            pair_first, pair_second, pair_outcome, worker_outcome, counts, worker_counts,
            n, w, ties, reliability, blocks,
        )  # fmt: skip

    @property
    def size(self) -> int:
        return self.n + 1 + (3 * self.w if self.reliability else 0)

    def unpack(self, theta: np.ndarray):
        s, tau = theta[: self.n], theta[self.n]
        if not self.reliability:
            return s, tau, None, None
        return s, tau, theta[self.n + 1 : self.n + 1 + self.w], theta[self.n + 1 + self.w :]


def _answer_terms(
    theta: np.ndarray, pb: _Problem, derivatives: bool, posterior: bool = True, value: bool = True
):
    """``(p, model derivatives, η, q, ln L, r)``: the model's (m, 3) probabilities of every
    pair; with ``derivatives`` ∂ln p/∂(d, τ); the workers' η and q; with ``value`` the
    log-likelihood ln L = Σ ln P over answers, P = η·p_o + (1 − η)·q_o = η·(p_o + κ_o) with
    κ_o = e^{−ρ}·q_o; with ``posterior`` per answer the posterior probability
    r = p_o / (p_o + κ_o) that it followed the model (in a buffer of ``pb`` that the next call
    overwrites). Without reliability only ``p`` and its derivatives are computed."""
    s, tau, rho, b = pb.unpack(theta)
    p, *model_derivatives = _model(s[pb.pair_first] - s[pb.pair_second], tau, pb.ties, derivatives)
    if not pb.reliability:
        return p, model_derivatives, None, None, None, None
    eta = special.expit(rho)
    log_q = special.log_softmax(np.column_stack([b[::2], np.zeros(pb.w), b[1::2]]), axis=1)
    q = np.exp(log_q)
    if not pb.work:
        pb.work.update(follow=np.empty(len(pb.pair_outcome)), mixed=np.empty(len(pb.pair_outcome)))
    follow, mixed = pb.work["follow"], pb.work["mixed"]
    np.take(p.ravel(), pb.pair_outcome, out=follow)
    # κ = e^{−ρ}·q, its exponent capped far beyond any estimate (finite for any θ tried)
    kappa = np.exp(np.minimum(log_q - rho[:, None], 700.0))
    np.take(kappa.ravel(), pb.worker_outcome, out=mixed)
    mixed += follow
    np.maximum(mixed, 1e-300, out=mixed)
    answered = pb.worker_counts.sum(axis=1)
    log_likelihood = (
        float(np.log(mixed).sum() + answered @ special.log_expit(rho)) if value else None
    )
    r = np.divide(follow, mixed, out=follow) if posterior else None
    return p, model_derivatives, eta, q, log_likelihood, r


def _log_posterior(theta: np.ndarray, pb: _Problem, order: int = 1):
    """The log-posterior at ``theta`` (``order`` 0); with ``order`` 1 ``(value, gradient)``,
    with 2 also the curvature for a Newton step (:class:`_Curvature`); with −1 the gradient
    alone. The gradient is Fisher's identity: the expected gradient of the complete-data
    log-posterior (whether each answer followed the model known) given the answers, with the
    posterior probabilities r of following the model as weights (Louis, *Finding the observed
    information matrix when using the EM algorithm*, JRSS B 1982)."""
    s, tau, rho, b = pb.unpack(theta)
    n, w = pb.n, pb.w
    p, derivatives, eta, q, log_likelihood, r = _answer_terms(
        theta, pb, order != 0, order != 0, order >= 0
    )
    prior = (s @ s) / (2 * SCORE_PRIOR_SD**2) + tau**2 / (2 * TIE_PRIOR_SD**2)
    if pb.reliability:
        shift = rho - RELIABILITY_PRIOR_MEAN
        prior += (shift @ shift) / (2 * RELIABILITY_PRIOR_SD**2) + (b @ b) / (2 * NOISE_PRIOR_SD**2)
    value = None
    if order >= 0:
        if pb.reliability:
            value = log_likelihood - prior
        else:
            value = float(pb.counts @ np.log(np.maximum(p, 1e-300)).ravel()) - prior
    if order == 0:
        return value
    dlog_dd, dlog_dtau = derivatives
    if pb.reliability:
        followed = np.bincount(pb.pair_outcome, r, minlength=len(pb.counts)).reshape(-1, 3)
    else:
        followed = pb.counts.reshape(-1, 3)
    g_pair = np.einsum("ij,ij->i", followed, dlog_dd)
    grad = np.empty(pb.size)
    grad[:n] = np.bincount(pb.pair_first, g_pair, minlength=n)
    grad[:n] -= np.bincount(pb.pair_second, g_pair, minlength=n)
    grad[:n] -= s / SCORE_PRIOR_SD**2
    grad[n] = float((followed * dlog_dtau).sum()) - tau / TIE_PRIOR_SD**2
    worker_followed = None
    if pb.reliability:
        # ∂/∂ρ_w = Σ (r − η_w); ∂/∂b_wk = Σ (1 − r)(1[outcome k] − q_wk) over w's answers
        worker_followed = np.bincount(pb.worker_outcome, r, minlength=3 * w).reshape(w, 3)
        noise = pb.worker_counts - worker_followed
        columns = np.column_stack(
            [
                worker_followed.sum(axis=1) - eta * pb.worker_counts.sum(axis=1),
                noise[:, 0] - q[:, 0] * noise.sum(axis=1),
                noise[:, 2] - q[:, 2] * noise.sum(axis=1),
            ]
        )
        _set_worker_columns(
            grad, columns - np.column_stack([shift, b.reshape(w, 2)]) * _WORKER_PRECISION, pb
        )
    if order == -1:
        return grad
    if order == 1:
        return value, grad
    curvature = _Curvature(theta, grad, pb, p, derivatives, followed, eta, q, worker_followed)
    return value, grad, curvature


class _Curvature:
    """The log-posterior's curvature at θ for a Newton step: products with the observed
    information −∇²ℓ·v, by finite differences of the analytic gradient along v (Hessian-free
    Newton; Nocedal & Wright, *Numerical Optimization*, §7.1), and as preconditioner the inverse
    of the block-diagonal part (each query's scores, the tie parameter, each worker's three
    parameters) of the expected complete-data information given the answers (Louis 1982): each
    pair's Fisher information about d (Σ_o p_o (∂ln p_o/∂d)²) times the answers expected to
    have followed the model (Σ r), each worker's η(1 − η) per answer for ρ and the multinomial
    information diag(q) − qqᵀ per answer expected to be noise for b, plus the prior
    precision; positive definite everywhere, and computed from the gradient's sums alone."""

    def __init__(
        self, theta, grad, pb: _Problem, p, derivatives, followed, eta, q, worker_followed
    ) -> None:
        self.theta, self.grad, self.pb = theta, grad, pb
        dlog_dd, dlog_dtau = derivatives
        expected = followed.sum(axis=1)
        weight = expected * (p * dlog_dd**2).sum(axis=1)
        self.score_inverses = [
            np.linalg.inv(pb.blocks.matrices(weight, chunk))
            for chunk in range(len(pb.blocks.chunks))
        ]
        tie_information = expected @ (p * dlog_dtau**2).sum(axis=1)
        self.tie_inverse = 1 / (tie_information + 1 / TIE_PRIOR_SD**2)
        if pb.reliability:
            answered = pb.worker_counts.sum(axis=1)
            noise = answered - worker_followed.sum(axis=1)
            info = np.zeros((pb.w, 3, 3))
            info[:, 0, 0] = answered * eta * (1 - eta)
            sides = q[:, [0, 2]]
            info[:, 1:, 1:] = noise[:, None, None] * (
                sides[:, :, None] * np.eye(2) - sides[:, :, None] * sides[:, None, :]
            )
            info += np.diag(_WORKER_PRECISION)
            self.worker_inverses = np.linalg.inv(info)

    def times(self, v: np.ndarray) -> np.ndarray:
        """−∇²ℓ(θ)·v ≈ (∇ℓ(θ) − ∇ℓ(θ + εv))/ε."""
        epsilon = 1e-6 / np.abs(v).max()
        return (self.grad - _log_posterior(self.theta + epsilon * v, self.pb, order=-1)) / epsilon

    def precondition(self, r: np.ndarray) -> np.ndarray:
        """The block-diagonal inverse times r."""
        pb = self.pb
        out = np.empty_like(r)
        for inverse, (members, _, _) in zip(self.score_inverses, pb.blocks.chunks, strict=True):
            out[members] = np.einsum("kij,kj->ki", inverse, r[members])
        out[pb.n] = r[pb.n] * self.tie_inverse
        if pb.reliability:
            per = np.einsum("wij,wj->wi", self.worker_inverses, _worker_columns(r, pb))
            _set_worker_columns(out, per, pb)
        return out


def _worker_columns(v: np.ndarray, pb: _Problem) -> np.ndarray:
    """The workers' (ρ, b_first, b_second) entries of a parameter vector as a (w, 3) array."""
    n, w = pb.n, pb.w
    return np.column_stack([v[n + 1 : n + 1 + w], v[n + 1 + w :].reshape(w, 2)])


def _set_worker_columns(v: np.ndarray, columns: np.ndarray, pb: _Problem) -> None:
    n, w = pb.n, pb.w
    v[n + 1 : n + 1 + w] = columns[:, 0]
    v[n + 1 + w :] = columns[:, 1:].ravel()


def _direction(grad: np.ndarray, curvature: _Curvature, max_steps: int = 50) -> np.ndarray:
    """The Newton step H⁻¹g (H = −∇²ℓ) by preconditioned conjugate gradients, to a relative
    residual of min(0.1, √‖g‖) (a truncated Newton step, Nocedal & Wright §7.1). CG stops at
    the first direction of negative curvature (far from the maximum, where ℓ is not concave);
    without any positive step the preconditioned gradient (a Fisher-scoring step) is taken."""
    norm = np.linalg.norm(grad)
    target = min(0.1, np.sqrt(norm)) * norm
    x = np.zeros_like(grad)
    r = grad.copy()
    z = curvature.precondition(r)
    direction = z.copy()
    rz = r @ z
    for _ in range(max_steps):
        product = curvature.times(direction)
        bend = direction @ product
        if bend <= 0:
            break
        step = rz / bend
        x += step * direction
        r -= step * product
        if np.linalg.norm(r) <= target:
            break
        z = curvature.precondition(r)
        rz, previous = r @ z, rz
        direction = z + (rz / previous) * direction
    return x if x.any() else curvature.precondition(grad)


def _reliability_information(theta: np.ndarray, pb: _Problem) -> np.ndarray:
    """Per worker, the observed information of their answers about ρ_w at θ:
    Σ η_w(1 − η_w) − r(1 − r) over their answers (the complete-data information less the
    missing information, Louis 1982; r the posterior probability of following the model)."""
    _, _, eta, _, _, r = _answer_terms(theta, pb, False, True, False)
    missing = np.bincount(pb.worker_outcome // 3, r * (1 - r), minlength=pb.w)
    return pb.worker_counts.sum(axis=1) * eta * (1 - eta) - missing


def _maximise(
    pb: _Problem, max_iter: int, tolerance: float, start: np.ndarray | None = None
) -> tuple[np.ndarray, int, bool]:
    """The truncated Newton ascent from ``start`` (default the prior means):
    ``(θ, iterations, converged)``."""
    if start is not None:
        theta = start.copy()
    else:
        theta = np.zeros(pb.size)
        if pb.reliability:
            theta[pb.n + 1 : pb.n + 1 + pb.w] = RELIABILITY_PRIOR_MEAN
    value, grad, curvature = _log_posterior(theta, pb, order=2)
    iterations = 0
    while iterations < max_iter:
        step = _direction(grad, curvature)
        gain = float(grad @ step)
        if gain / 2 < tolerance:
            return theta, iterations, True
        length = 1.0  # backtrack until the log-posterior rises enough (Armijo); NaN does not
        while not (
            _log_posterior(theta + length * step, pb, order=0) >= value + 1e-4 * length * gain
        ):
            length /= 2
            if length < 1e-12:  # no ascent left along the step: as close as the numbers allow
                return theta, iterations, True
        theta = theta + length * step
        iterations += 1
        value, grad, curvature = _log_posterior(theta, pb, order=2)
    return theta, iterations, False


def _fitted(
    theta: np.ndarray,
    pb: _Problem,
    alpha: float,
    iterations: int,
    converged: bool,
    fallback: str | None = None,
) -> BradleyTerryFit:
    """The fit's summary at the maximum ``theta``: tie parameter, workers, log-likelihood,
    standard errors and groups."""
    s, tau, rho, b = pb.unpack(theta)
    w = pb.w
    p, _, _, _, log_likelihood, _ = _answer_terms(theta, pb, False, False)
    if pb.reliability:
        eta_w, q_w = special.expit(rho), _noise(b.reshape(w, 2))
    else:
        eta_w, q_w = np.ones(w), np.full((w, 3), 1 / 3)
        log_likelihood = float(pb.counts @ np.log(np.maximum(p, 1e-300)).ravel())
    # Expected Fisher information of each answer about d = s_first − s_second under d = 0: a
    # function of its worker only, summed per distinct pair.
    p0, dlog0_dd, _ = _model(np.zeros(1), tau, pb.ties)
    prob0 = np.maximum(eta_w[:, None] * p0 + (1 - eta_w[:, None]) * q_w, 1e-300)
    per_worker = ((eta_w[:, None] * p0 * dlog0_dd) ** 2 / prob0).sum(axis=1)
    per_answer = (per_worker[:, None] * np.ones(3)).ravel()  # by worker·3 + outcome
    if pb.reliability:
        weight = np.bincount(
            pb.pair_outcome // 3, per_answer[pb.worker_outcome], minlength=len(pb.pair_first)
        )
    else:
        weight = pb.counts.reshape(-1, 3).sum(axis=1) * per_worker[0]
    standard_errors, groups, null_covariance = _groups(s, pb.blocks, weight, alpha)
    return BradleyTerryFit(
        scores=s,
        standard_errors=standard_errors,
        groups=groups,
        tie=_tie_parameter(tau, pb.ties),
        ties=pb.ties,
        reliability=eta_w,
        noise=q_w,
        log_likelihood=log_likelihood,
        iterations=iterations,
        converged=converged,
        null_covariance=null_covariance,
        fallback=fallback,
        with_reliability=pb.reliability,
    )


def _groups(
    scores: np.ndarray, blocks: _Blocks, weight: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray, _NullCovariance]:
    """Standard errors, groups and null covariances of every item (module docstring: tests
    within a query), the walk down each query's ranking taken for all queries of a chunk at
    once."""
    z_critical = special.ndtri(1 - alpha / 2)
    standard_errors = np.empty(len(scores))
    groups = np.empty(len(scores), np.int64)
    where = np.empty((3, len(scores)), np.int64)  # chunk, block row, position of each item
    matrices = []
    for chunk, (members, _, _) in enumerate(blocks.chunks):
        covariances = np.linalg.inv(blocks.matrices(weight, chunk))
        matrices.append(covariances)
        count, size = members.shape
        rows = np.arange(count)
        where[0, members] = chunk
        where[1, members] = rows[:, None]
        where[2, members] = np.arange(size)[None, :]
        variances = np.diagonal(covariances, axis1=1, axis2=2)
        standard_errors[members] = np.sqrt(variances)
        block_scores = scores[members]
        ranked = np.argsort(-block_scores, axis=1, kind="stable")  # positions, best first
        head, group = ranked[:, 0], np.ones(count, np.int64)
        for item in ranked.T:
            var = variances[rows, head] + variances[rows, item] - 2 * covariances[rows, head, item]
            apart = block_scores[rows, head] - block_scores[rows, item] > z_critical * np.sqrt(var)
            head = np.where(apart, item, head)
            group += apart
            groups[members[rows, item]] = group
    return standard_errors, groups, _NullCovariance(tuple(matrices), *where)
