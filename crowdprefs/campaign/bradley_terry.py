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
:func:`fit_verdicts`, the project's ``bradley-terry`` aggregation rule): x and y differ when
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

import numpy as np
from threadpoolctl import threadpool_limits

from crowdprefs.campaign.bradley_terry_fragility import VerdictFragility, verdict_fragility
from crowdprefs.campaign.bradley_terry_model import (
    BLAS_THREADS,
    MIN_ANSWERS_PER_WORKER,
    MIN_RELIABILITY_INFORMATION,
    NOISE_PRIOR_SD,
    RELIABILITY_PRIOR_MEAN,
    RELIABILITY_PRIOR_SD,
    SCORE_PRIOR_SD,
    TIE_MODELS,
    TIE_PRIOR_SD,
    BradleyTerryFit,
    Reliability,
    TieModel,
    _fitted,
    _log_posterior,  # noqa: F401 (the model's internals, here for their tests)
    _maximise,
    _Problem,
    _reliability_information,
    outcome_probabilities,
)
from crowdprefs.errors import InputError
from crowdprefs.moved import moved_names

__all__ = [
    "BLAS_THREADS", "MIN_ANSWERS_PER_WORKER", "MIN_RELIABILITY_INFORMATION", "NOISE_PRIOR_SD",
    "RELIABILITY_PRIOR_MEAN", "RELIABILITY_PRIOR_SD", "SCORE_PRIOR_SD", "TIE_MODELS",
    "TIE_PRIOR_SD", "BradleyTerryFit", "Reliability", "TieModel", "VerdictFragility",
    "fallback_line", "fit_bradley_terry", "fit_verdicts", "outcome_probabilities",
    "verdict_fragility",
]  # fmt: skip


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


def fit_verdicts(
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


__getattr__ = moved_names(__name__, {"pair_verdicts": f"{__name__}:fit_verdicts"})
"""``pair_verdicts``, the old name of :func:`fit_verdicts` (the one ``pair_verdicts`` is
:func:`crowdprefs.campaign.aggregate.pair_verdicts`)."""
