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
log-likelihood Σ log P over *all* answers plus weak Gaussian log-priors that keep the estimate
finite when a candidate wins every comparison or a worker answers little: s ~ N(0, 10²),
ln ν or ln(θ − 1) ~ N(0, 10²), ρ_w ~ N(2, 1) (η ≈ 0.88 until the answers say otherwise) and
b_w ~ N(0, 1). The maximiser is a truncated Newton method with a backtracking line search:
each step solves H·δ = ∇ log-posterior by conjugate gradients, the Hessian products taken by
differences of the analytic gradient, preconditioned by the block-diagonal expected
complete-data information (one dense block per query for its scores, one per worker for
(ρ_w, b_w), one for the tie parameter; the blocks of each size inverted at once as a stacked
array).

The work is linear in the answers. The model's probabilities depend on an answer only through
its ordered pair of candidates, so they are computed once per distinct pair; with
κ_{w,o} = e^{−ρ_w} q_{w,o}, P = η_w (p_o + κ_{w,o}), and an answer costs two look-ups (its
pair's p_o, its worker's κ) per evaluation. The gradient is Fisher's identity (Louis, *Finding
the observed information matrix when using the EM algorithm*, JRSS B 1982): with
r = p_o / (p_o + κ_{w,o}) the posterior probability that the answer followed the model, the
scores' gradient is Σ r ∂ln p_o/∂d summed per distinct pair, and the worker's
Σ (r − η_w) for ρ_w and Σ (1 − r)(1[o = k] − q_{w,k}) for b_{w,k} — two weighted counts per
evaluation (per pair × outcome, per worker × outcome). Nothing ever builds an items × items
or answers × parameters matrix. BLAS is held to ``BLAS_THREADS`` thread(s) during the fit
(threadpoolctl): its matrices are small, and more threads only contend for the cores.

Groups of equally similar candidates: within a query, candidates are taken by decreasing score;
a candidate joins the current group unless its score is significantly below the score of the
group's first member: a two-sided test at level α of z = (s_head − s_k)/√Var, Var the variance
of the difference from the inverse expected Fisher information of the query's scores under the
null hypothesis of equal scores (every answer's information taken at d = 0, the other parameters
at their estimates, as in a score test). The information at the estimate would vanish when a
candidate wins every comparison and hide the clearest differences (the Hauck–Donner effect of
the Wald test). As with the Mann-Whitney rule, a clearer crowd or more answers separate more
groups. ``standard_errors`` are these null standard errors.

The same test decides single pairs (:meth:`BradleyTerryFit.difference_test`, and
:func:`pair_verdicts`, the project's ``bradley-terry`` aggregation rule): x and y differ when
|s_x − s_y| / √Var₀(s_x − s_y) exceeds the two-sided critical value at level α, and the verdict
is the sign of s_x − s_y.

When worker reliabilities are not identifiable. With few answers per worker the mixture above
says almost nothing about each ρ_w (its posterior stays the prior) and the fit trades the tie
parameter against the workers' noise: on real data where each worker answered once the tie
parameter and the order of the candidates moved without any signal in the answers. The fit
measures this twice (``reliability="auto"``, the default): before fitting, the median number of
answers of the workers who answered (below :data:`MIN_ANSWERS_PER_WORKER`); after, the observed
information of each worker's answers about ρ_w (the marginal log-likelihood's curvature,
Σ_answers η_w(1 − η_w) − r(1 − r), the complete-data information less the missing
information, Louis 1982), whose median over the workers must reach
:data:`MIN_RELIABILITY_INFORMATION` times the prior precision 1/RELIABILITY_PRIOR_SD². When
either falls short, the plain model is fitted instead and :attr:`BradleyTerryFit.fallback`
says why in one line. Measured on simulated crowds (4 queries of 7 candidates, 10 answers per
pair, 10% careless workers, three seeds): the median information is 0.05 with one answer per
worker, 0.06–0.08 with two, 0.17 with five, 0.20–0.22 with the default Zipf crowd of 80
workers (median 6 answers) and 0.74–0.91 with 30 answers per worker.

Fragility of a verdict (:func:`verdict_fragility`): the fewest answers of the query whose
removal, or whose change to another choice, changes the verdict of a pair — approximated to
first order and checked by refitting (see the function).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy import special
from threadpoolctl import threadpool_limits

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
    reliability: Reliability = "auto",
    alpha: float = 0.05,
    max_iter: int = 500,
    tolerance: float = 1e-8,
) -> BradleyTerryFit:
    """Fit the model on every answer at once (penalised maximum likelihood; module docstring).

    ``first``, ``second``: item codes (0 … n_items − 1) of each answer's candidates;
    ``outcome``: +1 the first preferred, 0 equal, −1 the second preferred; ``worker``: worker
    codes (0 … n_workers − 1; all answers from one worker when omitted); ``block``: per item,
    the code of its query (items are compared and grouped within their block; one block when
    omitted). ``reliability``: ``"auto"`` fits worker reliabilities unless they are not
    identifiable (module docstring; then the plain model, with the reason in ``fallback``),
    ``True`` always fits them, ``False`` fits the plain tie model (η ≡ 1). ``alpha`` is the
    level of the test that separates groups. The fit stops when the step's predicted gain of
    log-posterior (half the Newton decrement gᵀH⁻¹g) is below ``tolerance``. BLAS runs on
    ``BLAS_THREADS`` thread(s) during the fit: its matrices are small, and more threads only
    compete for the cores.
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
    if reliability != "auto" and reliability not in (True, False):
        raise InputError(f"reliability must be true, false or 'auto', got {reliability!r}")
    answered = np.bincount(worker, minlength=w)
    answered = answered[answered > 0]
    fallback = None
    if reliability == "auto" and np.median(answered) < MIN_ANSWERS_PER_WORKER:
        median = float(np.median(answered))
        fallback = (
            f"worker reliabilities are not identifiable: median {median:g} "
            f"answer{'' if median == 1 else 's'} per worker (fewer than "
            f"{MIN_ANSWERS_PER_WORKER}); fitted without them"
        )
    with threadpool_limits(BLAS_THREADS):
        fitted = reliability is True or reliability == "auto" and fallback is None
        pb = _Problem.build(first, second, 1 - outcome, worker, n, w, ties, bool(fitted), block)
        theta, iterations, converged = _maximise(pb, max_iter, tolerance)
        if reliability == "auto" and fitted:
            information = _reliability_information(theta, pb)[pb.worker_counts.sum(axis=1) > 0]
            median = float(np.median(information)) * RELIABILITY_PRIOR_SD**2
            if median < MIN_RELIABILITY_INFORMATION:
                fallback = (
                    "worker reliabilities are not identifiable: the answers carry "
                    f"{max(median, 0.0):.2g}× the prior's information about each (median; "
                    f"below {MIN_RELIABILITY_INFORMATION:g}×); fitted without them"
                )
                pb = _Problem.build(first, second, 1 - outcome, worker, n, w, ties, False, block)
                theta, iterations, converged = _maximise(pb, max_iter, tolerance)
        return _fitted(theta, pb, alpha, iterations, converged, fallback)


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


def pair_verdicts(
    first,
    second,
    outcome,
    worker,
    block,
    x,
    y,
    *,
    n_items: int,
    n_workers: int,
    ties: TieModel = "davidson",
    alpha: float = 0.05,
    reliability: Reliability = "auto",
) -> tuple[np.ndarray, np.ndarray]:
    """Verdicts of the item pairs ``(x, y)`` from one fit on every answer (the arguments before
    them as for :func:`fit_bradley_terry`): :meth:`BradleyTerryFit.verdicts` at level
    ``alpha``."""
    fit = fit_bradley_terry(
        first, second, outcome, worker, block,
        n_items=n_items, n_workers=n_workers, ties=ties, alpha=alpha, reliability=reliability,
    )  # fmt: skip
    return fit.verdicts(x, y, alpha)


_REPORTED: set[str] = set()  # the kinds of fallback already reported in this process


def fallback_line(fit: BradleyTerryFit) -> str | None:
    """The fit's :attr:`~BradleyTerryFit.fallback` line the first time a fallback of its kind
    (too few answers per worker, too little information) is reported in this process, else
    ``None``: a campaign refits at every iteration and an audit several times, and the user
    reads the line once."""
    if fit.fallback is None:
        return None
    kind = "answers" if "per worker" in fit.fallback else "information"
    if kind in _REPORTED:
        return None
    _REPORTED.add(kind)
    return fit.fallback


@dataclass(frozen=True)
class VerdictFragility:
    """Per target pair (:func:`verdict_fragility`): ``removals`` and ``flips``, the number of
    answers whose removal, resp. change to another choice, changes the verdict (−1: none found),
    and whether a refit confirmed it (``removals_confirmed``, ``flips_confirmed``): a
    confirmed count is an upper bound on the true fewest; an unconfirmed one is the first-order
    estimate alone. ``removed`` and ``flipped`` name the answers counted (indices into the
    answers given; for flips with their new outcomes, +1, 0 or −1)."""

    removals: np.ndarray
    flips: np.ndarray
    removals_confirmed: np.ndarray
    flips_confirmed: np.ndarray
    removed: list[np.ndarray]  # per pair, the answers (indices) the count removes
    flipped: list[tuple[np.ndarray, np.ndarray]]  # per pair, the answers and their new outcomes


def _parameters(fit: BradleyTerryFit) -> np.ndarray:
    """The parameter vector θ at which ``fit`` stopped (to start a refit from it)."""
    tau = np.log(fit.tie) if fit.ties == "davidson" else np.log(fit.tie - 1.0)
    if not fit.with_reliability:
        return np.concatenate([fit.scores, [tau]])
    eta = np.clip(fit.reliability, 1e-12, 1 - 1e-12)
    q = np.maximum(fit.noise, 1e-300)
    b = np.log(q[:, [0, 2]] / q[:, 1:2])
    return np.concatenate([fit.scores, [tau], special.logit(eta), b.ravel()])


def _sorted_moves(moves: np.ndarray, toward: float, limit: int) -> np.ndarray:
    """The indices of the ``limit`` largest moves in direction ``toward`` (±1), largest first,
    only those that move that way."""
    signed = moves * toward
    order = np.argsort(-signed, kind="stable")[:limit]
    return order[signed[order] > 0]


def _crossing(z_path: np.ndarray, toward: float, z_critical: float, verdict: int) -> int:
    """The fewest steps of ``z_path`` (z after 1, 2, … changes) whose verdict differs from
    ``verdict``, or −1."""
    changed = z_path * toward > z_critical if verdict == 0 else z_path * verdict <= z_critical
    hit = np.flatnonzero(changed)
    return int(hit[0]) + 1 if len(hit) else -1


def verdict_fragility(
    fit: BradleyTerryFit,
    first,
    second,
    outcome,
    worker,
    block,
    x,
    y,
    *,
    alpha: float = 0.05,
    refit_up_to: int = 3,
    probe_up_to: int = 0,
    max_answers: int = 50,
) -> VerdictFragility:
    """How few answers of a query change the verdicts of its pairs ``(x, y)``: the approximate
    maximum influence perturbation (Broderick, Giordano & Meager, *An automatic finite-sample
    robustness metric: when can dropping a little data make a big difference?*, 2020; for
    pairwise leaderboards, Huang et al. 2025), with refits as a bound.

    ``fit`` is :func:`fit_bradley_terry` on the answers ``(first, second, outcome, worker)``
    with items coded by ``block`` (as given to it; ``None``: one query); ``alpha`` the
    verdicts' level. The verdict of (x, y) is sign(z) when |z| > z_c, z = d/√V,
    d = s_x − s_y, V = Var₀(d) (module docstring), z_c = Φ⁻¹(1 − α/2); "equal" otherwise.
    Only the answers of the pair's query are candidates.

    First order. Let θ = (the query's scores, τ) and Σ the inverse of the log-posterior's
    observed information in θ at the estimate (the workers' parameters and the other queries'
    scores held; the expected information instead where the observed is not positive
    definite). Answer i on (a, b) with outcome o of worker w contributes the gradient
    ∇ln P_i = r_o·(∂ln p_o/∂d · (e_a − e_b), ∂ln p_o/∂τ), r_o = η_w p_o / (η_w p_o +
    (1 − η_w) q_{w,o}) the posterior weight that it followed the model (1 without
    reliabilities). Removing it moves θ by −Σ ∇ln P_i, so with c = (e_x − e_y, 0)::

        Δd_i = −cᵀ Σ ∇ln P_i        Δτ_i = −e_τᵀ Σ ∇ln P_i
        ΔV_i = w_i (cᵀ Σ₀ u_i)² + ∂V/∂τ · Δτ_i,   ∂V/∂τ = −Σ_j ∂w_j/∂τ (cᵀ Σ₀ u_j)²

    (Σ₀ the query's null covariance, u_i = e_a − e_b, w_i the answer's null information).
    Changing its outcome to o' takes ∇ln P_i(o) − ∇ln P_i(o') away instead, with
    ΔV_i = ∂V/∂τ · Δτ_i (o' the other outcome that moves z most toward the other verdict).
    Greedy: the query's answers, at most ``max_answers``, by decreasing single move of z
    toward the other verdict (for an "equal" verdict each direction, the better kept); after
    the first k, z ≈ (d + ΣΔd)/√(V + ΣΔV), and the count is the first k at which the verdict
    changes.

    Bound. For counts up to ``refit_up_to`` the model is refitted (the same tie model and
    reliability setting, started from ``fit``'s estimate; with reliabilities a change is
    checked again from the prior means, as the rule fits) without, resp. with changed, the
    first k answers of the greedy order. When the verdict changes the count is *confirmed*,
    an upper bound on the true fewest, and shorter prefixes are refitted while they still
    change it; when not, longer prefixes up to ``refit_up_to``, and a refuted estimate is
    reported as ``refit_up_to + 1``, unconfirmed. Counts above ``refit_up_to`` (or none) are
    estimates alone, unless ``probe_up_to`` > 0 refits that many first prefixes anyway: the
    first-order moves miss the jumps of a small query where a removal leaves a candidate
    winning every comparison (the scores then run to the prior). At most about
    ``refit_up_to`` (+ ``probe_up_to``) refits per pair, kind and direction, each a few
    Newton steps. Measured against every subset refitted (80 random queries of 3–4
    candidates and 6–12 answers; 725 pair × kind cases that removing up to 3 answers or
    changing up to 2 changes): a confirmed count is never below the true fewest, and equals it
    in 70% of the cases without reliabilities and 67% with them (81% and 73% with
    ``probe_up_to=1``). On the simulated 2010 campaign (2570 answers, 257 pairs: about 14 CPU
    seconds with reliabilities, 3 without) the probes confirmed nothing more and took 1.5–2.5
    times as long, hence off by default.
    """
    first = np.asarray(first, np.int64)
    second = np.asarray(second, np.int64)
    outcome = np.asarray(outcome, np.int64)
    worker = np.asarray(worker, np.int64)
    x, y = np.atleast_1d(np.asarray(x, np.int64)), np.atleast_1d(np.asarray(y, np.int64))
    n, w = len(fit.scores), len(fit.reliability)
    block = np.zeros(n, np.int64) if block is None else np.asarray(block, np.int64)
    z_critical = float(special.ndtri(1 - alpha / 2))
    tau = float(_parameters(fit)[n])
    col = 1 - outcome
    rows = np.arange(len(first))
    d = fit.scores[first] - fit.scores[second]
    eta, noise = fit.reliability[worker][:, None], fit.noise[worker]

    def gradients(d_shift: float, tau_shift: float) -> tuple[np.ndarray, ...]:
        """``(p, r·∂ln p/∂d, r·∂ln p/∂τ)`` per answer and outcome: ∂ln P/∂(d, τ)."""
        p, g, h = _model(d + d_shift, tau + tau_shift, fit.ties)
        r = eta * p / np.maximum(eta * p + (1 - eta) * noise, 1e-300)
        return p, r * g, r * h, r

    p, rg, rh, r = gradients(0.0, 0.0)
    step = 1e-5
    up_d, down_d = gradients(step, 0.0), gradients(-step, 0.0)
    up_t, down_t = gradients(0.0, step), gradients(0.0, -step)
    # observed information per answer (its outcome): −∂²ln P/∂(d, τ)², by differences
    observed = np.stack(
        [
            (down_d[1] - up_d[1])[rows, col],
            (down_t[1] - up_t[1])[rows, col],
            (down_t[2] - up_t[2])[rows, col],
        ]
    ) / (2 * step)
    g, h = _model(d, tau, fit.ties)[1:]
    r_o = r[rows, col]
    expected = r_o * np.stack([(p * g * g).sum(1), (p * g * h).sum(1), (p * h * h).sum(1)])

    def null_weights(shift: float) -> np.ndarray:
        """Each answer's null information about d (module docstring) at τ + ``shift``."""
        p0, g0, _ = _model(np.zeros(1), tau + shift, fit.ties)
        eta_w = fit.reliability[:, None]
        prob0 = np.maximum(eta_w * p0 + (1 - eta_w) * fit.noise, 1e-300)
        return ((eta_w * p0 * g0) ** 2 / prob0).sum(axis=1)[worker]

    null_weight = null_weights(0.0)
    null_slope = (null_weights(step) - null_weights(-step)) / (2 * step)
    verdict, _ = fit.verdicts(x, y, alpha)
    start = _parameters(fit)

    def refit_verdict(
        target: int, chosen: np.ndarray, kind: str, new_col: np.ndarray, cold: bool = False
    ) -> int:
        """The verdict of pair ``target`` refitted without (with changed) answers ``chosen``,
        from ``fit``'s estimate or, ``cold``, from the prior means as the rule fits."""
        keep = np.ones(len(first), bool)
        changed_outcome = outcome.copy()
        if kind == "removals":
            keep[chosen] = False
        else:
            changed_outcome[chosen] = 1 - new_col[chosen]
        pb = _Problem.build(
            first[keep], second[keep], 1 - changed_outcome[keep], worker[keep], n, w,
            fit.ties, fit.with_reliability, block,
        )  # fmt: skip
        with threadpool_limits(BLAS_THREADS):
            theta, iterations, converged = _maximise(pb, 500, 1e-8, None if cold else start)
            refitted = _fitted(theta, pb, alpha, iterations, converged)
        return int(refitted.verdicts(x[target : target + 1], y[target : target + 1], alpha)[0][0])

    def confirm(target: int, order: np.ndarray, count: int, kind: str, new_col) -> tuple:
        """:func:`search`, its confirmation checked from the prior means when the fit has
        worker reliabilities (the mixture may have other maxima than the one near ``fit``)."""
        count, confirmed, chosen = search(target, order, count, kind, new_col)
        if confirmed and fit.with_reliability:
            confirmed = refit_verdict(target, chosen, kind, new_col, cold=True) != verdict[target]
        return count, confirmed, chosen

    def search(target: int, order: np.ndarray, count: int, kind: str, new_col) -> tuple:
        """``(count, confirmed, answers)`` for the greedy ``order`` and its estimated count."""
        if count < 1 or count > refit_up_to:  # far by the estimate: probe the nearest anyway
            for shorter in range(1, min(probe_up_to, refit_up_to, len(order)) + 1):
                if refit_verdict(target, order[:shorter], kind, new_col) != verdict[target]:
                    return shorter, True, order[:shorter]
            return count, False, order[: max(count, 0)]
        if refit_verdict(target, order[:count], kind, new_col) != verdict[target]:
            while (
                count > 1
                and refit_verdict(target, order[: count - 1], kind, new_col) != verdict[target]
            ):
                count -= 1
            return count, True, order[:count]
        for longer in range(count + 1, min(refit_up_to, len(order)) + 1):
            if refit_verdict(target, order[:longer], kind, new_col) != verdict[target]:
                return longer, True, order[:longer]
        return refit_up_to + 1, False, order[: refit_up_to + 1]  # the estimate was refuted

    found: dict[str, list] = {"removals": [None] * len(x), "flips": [None] * len(x)}
    for code in np.unique(block[x]):
        targets = np.flatnonzero(block[x] == code)
        items = np.flatnonzero(block == code)
        local = np.full(n, -1)
        local[items] = np.arange(len(items))
        inside = np.flatnonzero(block[first] == code)
        if not len(inside):
            continue
        a, b = local[first[inside]], local[second[inside]]
        size = len(items)
        curvature = _extended(a, b, size, observed[:, inside], observed[2].sum())
        if np.linalg.eigvalsh(curvature)[0] <= 0:
            curvature = _extended(a, b, size, expected[:, inside], expected[2].sum())
        contrast = np.zeros((size + 1, len(targets) + 1))  # each c, and e_τ last
        contrast[local[x[targets]], np.arange(len(targets))] += 1
        contrast[local[y[targets]], np.arange(len(targets))] -= 1
        contrast[size, len(targets)] = 1
        spread = np.linalg.solve(curvature, contrast)
        on_pair, on_tau = spread[a] - spread[b], spread[size]

        null = np.linalg.solve(_information(a, b, size, null_weight[inside]), contrast[:size, :-1])
        variance = (contrast[:size, :-1] * null).sum(axis=0)
        null = null[a] - null[b]  # cᵀΣ₀u_i
        variance_slope = -(null_slope[inside, None] * null**2).sum(axis=0)  # ∂V/∂τ
        difference = fit.scores[x[targets]] - fit.scores[y[targets]]
        z = difference / np.sqrt(variance)
        removal = _moves(on_pair, on_tau, rg[inside, col[inside]], rh[inside, col[inside]])
        remove_d = removal[:, :-1]
        remove_v = null_weight[inside, None] * null**2 + removal[:, -1:] * variance_slope
        flip_d, flip_v = [], []
        for other in range(3):  # the answer's outcome changed to ``other``
            change = _moves(
                on_pair,
                on_tau,
                rg[inside, col[inside]] - rg[inside, other],
                rh[inside, col[inside]] - rh[inside, other],
            )
            flip_d.append(change[:, :-1])
            flip_v.append(change[:, -1:] * variance_slope)
        flip_d, flip_v = np.stack(flip_d), np.stack(flip_v)  # (3, answers, targets)
        across = np.arange(len(inside))
        for t, target in enumerate(targets):
            directions = [-1.0 if verdict[target] > 0 else 1.0] if verdict[target] else [1.0, -1.0]
            for toward in directions:
                moved = (difference[t] + remove_d[:, t]) / np.sqrt(
                    np.maximum(variance[t] + remove_v[:, t], 1e-300)
                )
                order = _sorted_moves(moved - z[t], toward, max_answers)
                path = (difference[t] + np.cumsum(remove_d[order, t])) / np.sqrt(
                    np.maximum(variance[t] + np.cumsum(remove_v[order, t]), 1e-300)
                )
                count = _crossing(path, toward, z_critical, verdict[target])
                removal = confirm(target, inside[order], count, "removals", col)
                # flips: each answer to the other outcome moving z most that way
                moved = (difference[t] + flip_d[:, :, t]) / np.sqrt(
                    np.maximum(variance[t] + flip_v[:, :, t], 1e-300)
                )
                gain = (moved - z[t]) * toward
                gain[col[inside], across] = -np.inf
                new = np.argmax(gain, axis=0)
                order = _sorted_moves(gain[new, across], 1.0, max_answers)
                path = (difference[t] + np.cumsum(flip_d[new[order], order, t])) / np.sqrt(
                    np.maximum(variance[t] + np.cumsum(flip_v[new[order], order, t]), 1e-300)
                )
                count = _crossing(path, toward, z_critical, verdict[target])
                new_col = col.copy()
                new_col[inside] = new
                flip = (*confirm(target, inside[order], count, "flips", new_col), new_col)
                for kind, candidate in (("removals", removal), ("flips", flip)):
                    if _better(candidate, found[kind][target]):
                        found[kind][target] = candidate
    counts, confirmed, removed, flipped = {}, {}, [], []
    for kind in found:
        chosen = [c if c is not None else (-1, False, np.zeros(0, np.int64)) for c in found[kind]]
        counts[kind] = np.array([c[0] for c in chosen], np.int64)
        confirmed[kind] = np.array([c[1] for c in chosen], bool)
        for c in chosen:
            if kind == "removals":
                removed.append(c[2])
            else:
                flipped.append((c[2], 1 - c[3][c[2]] if len(c) > 3 else np.zeros(0, np.int64)))
    return VerdictFragility(
        counts["removals"], counts["flips"], confirmed["removals"], confirmed["flips"],
        removed, flipped,
    )  # fmt: skip


def _information(a: np.ndarray, b: np.ndarray, size: int, weight: np.ndarray) -> np.ndarray:
    """Σ weight·(e_a − e_b)(e_a − e_b)ᵀ over answers on local items (a, b), plus the scores'
    prior precision."""
    info = np.zeros((size, size))
    np.add.at(info, (a, a), weight)
    np.add.at(info, (b, b), weight)
    np.add.at(info, (a, b), -weight)
    np.add.at(info, (b, a), -weight)
    return info + np.eye(size) / SCORE_PRIOR_SD**2


def _moves(
    on_pair: np.ndarray, on_tau: np.ndarray, grad_d: np.ndarray, grad_tau: np.ndarray
) -> np.ndarray:
    """The first-order moves of each quantity (columns: vᵀθ with v = Σ·contrast) when the
    answers' log-likelihood gradients (``grad_d`` on their pair's d, ``grad_tau`` on τ) are
    taken away: −(v_a − v_b)·grad_d − v_τ·grad_tau, (answers, quantities)."""
    return -(on_pair * grad_d[:, None] + on_tau[None, :] * grad_tau[:, None])


def _extended(
    a: np.ndarray, b: np.ndarray, size: int, weights: np.ndarray, tau_total: float
) -> np.ndarray:
    """The information of a query's scores and the tie parameter τ (last row and column):
    ``weights`` (3, answers) per answer on local items (a, b) about (d, d), (d, τ), (τ, τ);
    ``tau_total`` the (τ, τ) information of every answer; plus the priors' precisions."""
    info = np.zeros((size + 1, size + 1))
    info[:size, :size] = _information(a, b, size, weights[0])
    cross = np.bincount(a, weights[1], size) - np.bincount(b, weights[1], size)
    info[:size, size] = info[size, :size] = cross
    info[size, size] = tau_total + 1 / TIE_PRIOR_SD**2
    return info


def _better(found: tuple, best: tuple | None) -> bool:
    """Whether ``found`` (count, confirmed, …) beats ``best``: any count over none, a confirmed
    count over an unconfirmed one, else the smaller."""
    if found[0] < 0:
        return False
    if best is None or best[0] < 0:
        return True
    if found[1] != best[1]:
        return found[1]
    return found[0] < best[0]
