"""Fit the crowd model to a recorded campaign, with bootstrap intervals and a predictive check.

:func:`fit_crowd_model` takes an answers frame (:func:`crowdprefs.results_file.read_results`,
:func:`crowdprefs.quality.frames.project_answers`, or any frame with ``pair_id, worker_id, choice``
(A/B/equal), ``a_is_x``, ``seconds`` and optionally ``x, y, query, status, kind, iteration,
created_at, accepted_at, submitted_at``) and estimates every field of
:class:`~crowdprefs.quality.crowd_model.CrowdModel`:

* **bots**: workers with at least 5 answers, all "equal", whose times vary by at most 1 s (the
  two robots of the preference-judgments paper §4.2 answered "equal" in exactly 8 s).
* **the workers' continuum** (noise, "equal" band and lean to B of each worker, the careless
  share): a hierarchical ordered-probit model. Worker *w* has ``(log noise, log band, bias)``
  drawn from independent normals (the model's medians and spreads), or is careless (answers at
  random) with probability ``careless_share``. Pair *p* has a gap ``g = s_x − s_y`` in whole true
  groups, *y* its pivot; the answer's probabilities follow the side really shown as A
  (``a_is_x``), so a lean to B is estimated against the sides shown, not assumed away by
  random sides. With the published lists the gaps are known (``lists``); otherwise they are
  latent, with a distribution over −4 … 4: ``P(0)``, a share on x's side and a geometric fall
  per group (at most :data:`MAX_RATIO`, since a crowd twice as noisy with groups twice as far
  apart fits counts almost as well). Workers are integrated over a grid of types
  (:data:`NOISE_GRID` × :data:`BAND_GRID` × :data:`BIAS_GRID` plus "careless"), the population
  weights being the discretised normals; the fit is EM over the population (closed-form moment
  updates) with, for latent gaps, mean-field posteriors of each pair's gap (variational EM, as
  for Dawid and Skene's confusion matrices, here with a parametric worker).
* **activity**: the Zipf exponent whose successive sampling of distinct workers per pair (as the
  simulation draws them) reproduces the recorded answers per worker at the head of the
  distribution (the workers giving the first half of the answers; least squares of the log
  counts by rank, common random numbers over exponents; each worker's chance of being drawn
  by Rosén's approximation, so the search is linear in the workers).
* **times**: ``median_seconds`` the median of the workers' median times,
  ``worker_seconds_spread`` the standard deviation of their log medians (workers with 3 answers
  or more), ``answer_seconds_spread`` that of each answer's log time around its worker's
  median; ``careless_seconds`` the median time of the workers the fit finds careless (the
  honest median when none); ``completion_hours`` the median time from a HIT's creation to its
  last accepted answer; ``round_hours``, ``answers_per_hour`` and ``round_spread`` by least
  squares of each iteration's log duration (creation to last submission) on ``log(round_hours
  + answers / answers_per_hour)``, one round per iteration (the fixed design).

Confidence intervals: percentile intervals of a bootstrap over workers (resampled with their
answers; each refit starts from the fit to all answers), the round-timing fields resampling
iterations and the completion time resampling HITs. Each replicate is
:func:`bootstrap_replicate`, a pure function of the seed and its index; the fit is linear in
the answers and in the workers (the workers integrated over the type grid a block at a time).

:func:`predictive_check` simulates the recorded design on the recorded candidates with the
fitted model (one bootstrap replicate per simulated campaign when given) and compares pairs per
iteration, iterations, agreement and answer shares with the recording.

A field the recording cannot inform keeps its default and :attr:`Fit.kept` says why (no work
times, fewer than three timed iterations, no bots…), never shown as fitted; ``activity`` at the
search's upper bound is said too (:data:`ACTIVITY_BOUND`).
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd
import tomli_w
from scipy import optimize
from scipy.stats import binom

from crowdprefs.campaign.aggregate import AggregationRule, inter_agreement, tally
from crowdprefs.errors import InputError
from crowdprefs.files import write_atomic
from crowdprefs.parallel import SERIAL, Runner
from crowdprefs.quality.crowd_model import CrowdModel, choice_shares
from crowdprefs.quality.frames import infer_iterations
from crowdprefs.quality.planning import MAX_CAMPAIGNS, Collection, Design, simulate_campaign

NOISE_GRID = np.exp(np.linspace(np.log(0.08), np.log(8.0), 15))
BAND_GRID = np.exp(np.linspace(np.log(0.03), np.log(15.0), 15))
BIAS_GRID = np.linspace(-1.5, 1.5, 13)
"""The grid of worker types the fit integrates over (noise, band, lean to B)."""

LATENT_GAPS = 4
"""Unknown gaps range over −4 … 4 whole groups."""

MAX_RATIO = 0.75
"""Largest fall per group of the latent gap distribution (see the module doc)."""

REFIT_ITERATIONS = 40
"""EM iterations of a bootstrap refit (it starts from the fit to all the answers)."""

CHOICES = ("A", "equal", "B")

FITTED = (
    "noise",
    "noise_spread",
    "equal_band",
    "equal_spread",
    "position_bias",
    "bias_spread",
    "careless_share",
    "activity",
    "median_seconds",
    "worker_seconds_spread",
    "answer_seconds_spread",
    "careless_seconds",
    "completion_hours",
    "round_hours",
    "answers_per_hour",
    "round_spread",
)
"""The model fields the fit estimates with bootstrap intervals (``workers``, ``bots`` and
``bot_seconds`` are counted; ``think_seconds`` keeps its default)."""


# --------------------------------------------------------------------------- answers


@dataclass(frozen=True)
class _Answers:
    """A recording's usable answers as codes: pair, worker, choice (0 A, 1 equal, 2 B) and
    whether the pair's x was shown as A; ``gap`` per pair (x − y, whole groups) when known."""

    pair: np.ndarray
    worker: np.ndarray
    choice: np.ndarray
    a_is_x: np.ndarray
    pairs: int
    workers: int
    gap: np.ndarray | None
    oriented: bool

    def by_worker(self) -> tuple[np.ndarray, np.ndarray]:
        """The answers' rows sorted by worker (stable) and where each worker's rows start
        (``workers + 1`` bounds): the index :meth:`resampled` draws from."""
        order = np.argsort(self.worker, kind="stable")
        return order, np.searchsorted(self.worker[order], np.arange(self.workers + 1))

    def resampled(
        self, drawn: np.ndarray, grouped: tuple[np.ndarray, np.ndarray] | None = None
    ) -> tuple[_Answers, np.ndarray]:
        """The answers of the ``drawn`` workers (codes drawn with replacement; a worker drawn
        twice counts as two), worker *i* of the result being ``drawn[i]``, and the rows taken
        (``grouped``: :meth:`by_worker`, computed when not given)."""
        order, start = grouped if grouped is not None else self.by_worker()
        sizes = start[drawn + 1] - start[drawn]
        ends = np.cumsum(sizes)
        within = np.arange(ends[-1] if len(ends) else 0) - np.repeat(ends - sizes, sizes)
        rows = order[np.repeat(start[drawn], sizes) + within]
        sample = replace(
            self,
            pair=self.pair[rows],
            worker=np.repeat(np.arange(len(drawn)), sizes),
            choice=self.choice[rows],
            a_is_x=self.a_is_x[rows],
            workers=len(drawn),
        )
        return sample, rows


def usable_answers(frame: pd.DataFrame) -> pd.DataFrame:
    """The answers a fit uses: A, B or equal, not rejected, sorting pairs only."""
    missing = {"pair_id", "worker_id", "choice", "seconds"} - set(frame.columns)
    if missing:
        raise InputError(f"the answers lack column(s) {', '.join(sorted(missing))}")
    keep = frame["choice"].isin(CHOICES)
    if "status" in frame.columns:
        keep &= frame["status"].fillna("submitted").ne("rejected")
    if "kind" in frame.columns:
        keep &= frame["kind"].fillna("sort").eq("sort")
    return frame[keep]


def find_bots(answers: pd.DataFrame) -> list[str]:
    """Workers with ≥ 5 answers, all "equal", in times that vary by at most one second."""
    per = (
        answers[["worker_id", "seconds"]]
        .assign(equal=answers["choice"].eq("equal"))
        .groupby("worker_id")
        .agg(
            n=("equal", "size"),
            equal=("equal", "all"),
            low=("seconds", "min"),
            high=("seconds", "max"),
        )
    )
    bots = per[(per["n"] >= 5) & per["equal"] & (per["high"] - per["low"] <= 1.0)]
    return sorted(bots.index.astype(str))


def list_gaps(answers: pd.DataFrame, lists: pd.DataFrame) -> pd.Series:
    """Per answer, ``s_x − s_y`` in whole groups of the lists (group 1 most similar)."""
    group = lists.set_index(["query", "document"])["group"]
    if group.index.duplicated().any():
        query, document = group.index[group.index.duplicated()][0]
        raise InputError(f"the lists place {document!r} twice for query {query!r}")
    gx = pd.MultiIndex.from_arrays([answers["query"], answers["x"]]).map(group)
    gy = pd.MultiIndex.from_arrays([answers["query"], answers["y"]]).map(group)
    absent = np.isnan(np.asarray(gx, dtype=float)) | np.isnan(np.asarray(gy, dtype=float))
    if absent.any():
        row = answers[absent].iloc[0]
        raise InputError(
            f"the lists do not place {row['x']!r} and {row['y']!r} of query {row['query']!r}"
        )
    return pd.Series(np.asarray(gy, dtype=np.int64) - np.asarray(gx, dtype=np.int64), answers.index)


def _codes(honest: pd.DataFrame, lists: pd.DataFrame | None) -> _Answers:
    pair, _ = pd.factorize(honest["pair_id"])
    worker, _ = pd.factorize(honest["worker_id"].astype(str))
    choice = pd.Categorical(honest["choice"], categories=CHOICES).codes.astype(np.int64)
    a_is_x = honest["a_is_x"].astype(int).to_numpy() == 1
    gap = None
    if lists is not None:
        per_answer = list_gaps(honest, lists).to_numpy()
        gap = np.zeros(pair.max() + 1, dtype=np.int64)
        gap[pair] = per_answer
    oriented = bool(honest["pivot_known"].astype(bool).all()) if "pivot_known" in honest else True
    return _Answers(
        pair.astype(np.int64),
        worker.astype(np.int64),
        choice,
        a_is_x,
        int(pair.max()) + 1,
        int(worker.max()) + 1,
        gap,
        oriented,
    )


# --------------------------------------------------------------------------- the continuum


def _logsumexp(values: np.ndarray, axis: int) -> np.ndarray:
    top = values.max(axis=axis, keepdims=True)
    return np.squeeze(top, axis) + np.log(np.exp(values - top).sum(axis=axis))


@dataclass(frozen=True)
class Population:
    """The workers' distribution: medians and log spreads of noise and band, mean and spread
    of the lean to B, careless share; and the gap distribution of the compared pairs
    (``gaps[j]`` for gap ``j − LATENT_GAPS``, x's side positive)."""

    noise: float = 0.7
    noise_spread: float = 0.5
    equal_band: float = 1.0
    equal_spread: float = 0.5
    position_bias: float = 0.0
    bias_spread: float = 0.3
    careless_share: float = 0.05
    gaps: tuple[float, ...] = ()

    def log_weights(self) -> np.ndarray:
        """Log prior weight of every grid type, the careless type last."""
        parts = []
        for grid, centre, spread in (
            (np.log(NOISE_GRID), np.log(self.noise), self.noise_spread),
            (np.log(BAND_GRID), np.log(self.equal_band), self.equal_spread),
            (BIAS_GRID, self.position_bias, self.bias_spread),
        ):
            log_w = -0.5 * ((grid - centre) / spread) ** 2
            parts.append(log_w - _logsumexp(log_w, 0))
        honest = (
            parts[0][:, None, None] + parts[1][None, :, None] + parts[2][None, None, :]
        ).reshape(-1)
        return np.append(honest + np.log1p(-self.careless_share), np.log(self.careless_share))


def _type_log_shares(widest: int) -> np.ndarray:
    """``log P(choice | gap_A)`` of every grid type (careless last): ``(types, gaps, 3)``."""
    noise, band, bias = np.meshgrid(NOISE_GRID, BAND_GRID, BIAS_GRID, indexing="ij")
    gap = np.arange(-widest, widest + 1, dtype=float)
    shares = choice_shares(
        noise.reshape(-1, 1), band.reshape(-1, 1), bias.reshape(-1, 1), gap[None, :]
    )
    shares = np.concatenate([shares, np.full((1, len(gap), 3), 1.0 / 3.0)])
    return np.log(np.clip(shares, 1e-12, 1.0))


def _moments(weights: np.ndarray, grid: np.ndarray, floor: float) -> tuple[float, float]:
    total = weights.sum()
    mean = float((weights * grid).sum() / total)
    spread = float(np.sqrt((weights * (grid - mean) ** 2).sum() / total))
    return mean, float(max(spread, floor))


def _gap_prior(expected: np.ndarray, oriented: bool) -> np.ndarray:
    """The latent gap distribution maximising the expected log-likelihood of gap counts
    ``expected`` (over −G … G): P(0) free, a share on x's side (½ when the pivot is unknown)
    and a geometric fall per group up to :data:`MAX_RATIO` (grid search)."""
    g = LATENT_GAPS
    zero, plus, minus = expected[g], expected[g + 1 :], expected[:g][::-1]
    total = expected.sum()
    share = plus.sum() / max(plus.sum() + minus.sum(), 1e-12) if oriented else 0.5
    share = float(np.clip(share, 0.02, 0.98))
    away = plus + minus
    ratios = np.linspace(0.02, MAX_RATIO, 75)
    steps = np.arange(g)
    shape = ratios[:, None] ** steps[None, :]
    shape /= shape.sum(axis=1, keepdims=True)
    ratio = ratios[int(np.argmax(np.log(shape) @ away))]
    fall = ratio**steps / (ratio**steps).sum()
    p0 = float(np.clip(zero / max(total, 1e-12), 0.01, 0.99))
    side = (1 - p0) * fall
    return np.concatenate([side[::-1] * (1 - share), [p0], side * share])


WORKER_BLOCK = 1024
"""Workers integrated over the type grid at a time (bounds the fit's memory to a block's
posteriors, not every worker's)."""


PRUNE = 40.0
"""Grid types whose prior weight, times the best likelihood (1), is below ``e^−PRUNE`` times
the careless type's share of a worker's marginal likelihood are left out of that worker's
integral (their posterior is below ``e^−PRUNE``)."""

CACHED_CELLS = 4_000_000
"""With known gaps, the workers' log-likelihoods of every type are kept across EM iterations
when there are at most this many (32 MB); more are recomputed a block at a time."""


@dataclass(frozen=True)
class _ContinuumFit:
    population: Population
    workers: np.ndarray  # (workers, 5): posterior sums (_type_summaries) of every worker
    gap_posterior: np.ndarray  # (pairs, 2G + 1) or one-hot over the known gaps
    log_likelihood: float

    @property
    def careless(self) -> np.ndarray:
        """Each worker's posterior chance of being careless."""
        return self.workers[:, 3]


def _type_summaries() -> np.ndarray:
    """``(types + 1, 5)``: each grid type's log noise, log band and bias (0 for the careless
    type), whether it is the careless type and whether it is honest."""
    noise, band, bias = (
        grid.reshape(-1)
        for grid in np.meshgrid(np.log(NOISE_GRID), np.log(BAND_GRID), BIAS_GRID, indexing="ij")
    )
    honest = np.stack([noise, band, bias, np.zeros_like(noise), np.ones_like(noise)], axis=1)
    return np.vstack([honest, [0.0, 0.0, 0.0, 1.0, 0.0]])


@dataclass(frozen=True)
class _Integrated:
    """The workers integrated over the type grid: each worker's log marginal likelihood, the
    summed posterior of every type, ``E log P`` of each (gap, choice) under each worker's
    posterior (only when asked) and each worker's posterior summaries (:func:`_type_summaries`)."""

    marginal: np.ndarray
    totals: np.ndarray
    expected: np.ndarray | None
    summaries: np.ndarray


def _integrate(
    stats: np.ndarray,
    log_weights: np.ndarray,
    flat: np.ndarray,
    expected: bool,
    cached: np.ndarray | None = None,
) -> _Integrated:
    """Integrate every worker (``stats``: ``(workers, gaps × 3)`` choice counts) over the
    types (``flat``: ``(types, gaps × 3)`` log shares; ``log_weights`` their prior), a block of
    :data:`WORKER_BLOCK` workers at a time; ``cached``: ``stats @ flat.T`` when already known)."""
    workers, cells = stats.shape
    right = np.hstack([flat, _type_summaries()]) if expected else _type_summaries()
    transposed = np.ascontiguousarray(flat.T)
    marginal = np.empty(workers)
    totals = np.zeros(len(log_weights))
    means = np.empty((workers, right.shape[1]))
    answers = stats.sum(axis=1)
    for first in range(0, workers, WORKER_BLOCK):
        block = slice(first, min(first + WORKER_BLOCK, workers))
        # a type's likelihood is at most 1 and the careless type's (last) is 3^−answers:
        # types whose prior is below that by e^PRUNE hold no posterior worth adding
        floor = log_weights[-1] - answers[block].max(initial=0.0) * np.log(3.0) - PRUNE
        keep = np.flatnonzero(log_weights >= floor)
        joint = stats[block] @ transposed[:, keep] if cached is None else cached[block][:, keep]
        joint += log_weights[keep]
        top = joint.max(axis=1)
        joint -= top[:, None]
        np.exp(joint, out=joint)
        total = joint.sum(axis=1)
        joint /= total[:, None]  # the block's posteriors
        marginal[block] = top + np.log(total)
        totals[keep] += joint.sum(axis=0)
        means[block] = joint @ right[keep]
    if not expected:
        return _Integrated(marginal, totals, None, means)
    return _Integrated(marginal, totals, means[:, :cells], means[:, cells:])


def fit_continuum(
    data: _Answers,
    start: Population | None = None,
    tolerance: float = 1e-4,
    iterations: int = 300,
    start_gaps: np.ndarray | None = None,
) -> _ContinuumFit:
    """EM fit of the workers' continuum (module doc) to coded answers, from the population
    ``start`` and, for latent gaps, the pairs' gap posteriors ``start_gaps`` when given (a
    bootstrap refit starts from the fit to all answers).

    Every step is linear in the answers and in the workers (each worker integrated over the
    type grid, a block at a time): no per-worker Python loop."""
    known = data.gap is not None
    widest = int(np.abs(data.gap).max()) if known else LATENT_GAPS
    widest = max(widest, 1)
    log_shares = _type_log_shares(widest)  # (K+1, nG, 3)
    types = log_shares.shape[0]
    flat = log_shares.reshape(types, -1)
    n_gaps = 2 * widest + 1
    cells = n_gaps * 3
    sign = np.where(data.a_is_x, 1, -1)
    if known:
        gap_a = data.gap[data.pair] * sign + widest
        gap_posterior = np.zeros((data.pairs, n_gaps))
        gap_posterior[np.arange(data.pairs), data.gap + widest] = 1.0
    else:
        # column j of a pair (x-gap j − G) is A-gap j − G when x is A, else G − j
        column = np.where(data.a_is_x[:, None], np.arange(n_gaps), np.arange(n_gaps)[::-1])
        # each answer's (worker, A-gap, choice) cell for every column j of its pair
        cell = data.worker[:, None] * cells + column * 3 + data.choice[:, None]
    population = start or Population(gaps=tuple(np.full(n_gaps, 1.0 / n_gaps)))
    if not known and len(population.gaps) != n_gaps:
        population = replace(population, gaps=tuple(np.full(n_gaps, 1.0 / n_gaps)))
    steps = [
        np.diff(np.log(NOISE_GRID))[0],
        np.diff(np.log(BAND_GRID))[0],
        BIAS_GRID[1] - BIAS_GRID[0],
    ]

    def e_step_gaps(expected: np.ndarray, prior: np.ndarray) -> np.ndarray:
        """Gap posteriors given ``E log P`` per worker (``(workers, gaps × 3)``)."""
        value = expected.reshape(-1)[cell]  # (answers, nG)
        log_q = np.log(prior)[None, :] + np.stack(
            [np.bincount(data.pair, value[:, j], minlength=data.pairs) for j in range(n_gaps)],
            axis=1,
        )
        return np.exp(log_q - _logsumexp(log_q, 1)[:, None])

    if not known and start_gaps is not None and start_gaps.shape == (data.pairs, n_gaps):
        gap_posterior = start_gaps
    elif not known:  # start from every worker being the population's average worker
        average = np.exp(population.log_weights()) @ flat
        gap_posterior = e_step_gaps(
            np.broadcast_to(average, (data.workers, cells)), np.asarray(population.gaps)
        )

    def worker_stats() -> np.ndarray:
        """Expected counts of each worker's choices at each A-gap: ``(workers, gaps × 3)``."""
        if known:
            index = (data.worker * n_gaps + gap_a) * 3 + data.choice
            counts = np.bincount(index, minlength=data.workers * cells)
        else:
            weights = gap_posterior[data.pair]  # x-gap j of an answer sits in its cell j
            counts = np.bincount(cell.reshape(-1), weights.reshape(-1), data.workers * cells)
        return counts.reshape(data.workers, cells).astype(float)

    log_like = -np.inf
    fixed = worker_stats() if known else None
    cached = None  # the known gaps' log-likelihoods of every worker and type, when small
    if known and fixed.shape[0] * types <= CACHED_CELLS:
        cached = fixed @ flat.T
    for _ in range(iterations):
        observed = fixed if known else worker_stats()
        step = _integrate(observed, population.log_weights(), flat, not known, cached)
        honest = step.totals[:-1].reshape(len(NOISE_GRID), len(BAND_GRID), -1)
        grids = (np.log(NOISE_GRID), np.log(BAND_GRID), BIAS_GRID)
        moments = [
            _moments(honest.sum(axis=tuple(a for a in range(3) if a != d)), grids[d], steps[d] / 2)
            for d in range(3)
        ]
        careless = float(np.clip(step.totals[-1] / data.workers, 1e-4, 0.5))
        gaps = population.gaps
        if not known:
            gap_posterior = e_step_gaps(step.expected, np.asarray(population.gaps))
            gaps = tuple(_gap_prior(gap_posterior.sum(axis=0), data.oriented))
        updated = Population(
            noise=float(np.exp(moments[0][0])),
            noise_spread=moments[0][1],
            equal_band=float(np.exp(moments[1][0])),
            equal_spread=moments[1][1],
            position_bias=moments[2][0],
            bias_spread=moments[2][1],
            careless_share=careless,
            gaps=gaps,
        )
        change = max(
            abs(np.log(updated.noise / population.noise)),
            abs(np.log(updated.equal_band / population.equal_band)),
            abs(updated.position_bias - population.position_bias),
            abs(updated.noise_spread - population.noise_spread),
            abs(updated.equal_spread - population.equal_spread),
            abs(updated.bias_spread - population.bias_spread),
            abs(updated.careless_share - population.careless_share),
        )
        population, log_like = updated, float(step.marginal.sum())
        if change < tolerance:
            break
    return _ContinuumFit(population, step.summaries, gap_posterior, log_like)


# --------------------------------------------------------------------------- activity and times


def _head(counts: np.ndarray, share: float = 0.5) -> int:
    """How many of the busiest workers give the first ``share`` of the answers (at least 3)."""
    cumulative = np.cumsum(counts) / counts.sum()
    return int(min(len(counts), max(3, np.searchsorted(cumulative, share) + 1)))


ACTIVITY_BOUND = 4.0
"""The largest Zipf exponent :func:`fit_activity` searches."""

ACTIVITY_TOLERANCE = 0.01
"""How near :data:`ACTIVITY_BOUND` an exponent counts as stopped at it: the bounded search ends
within a few times its ``xatol`` (10⁻³) of the bound, not on it."""

ROUND_BOUNDS = {"round_hours": (-6.0, 5.0), "answers_per_hour": (-3.0, 10.0)}
"""The natural-log bounds :func:`fit_rounds` searches ``round_hours`` and ``answers_per_hour``
within."""


def inclusion_chances(weight: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """``(len(sizes), workers)``: each worker's chance to be among ``k`` distinct workers drawn
    by successive sampling with ``weight``, for every ``k`` of ``sizes`` (Rosén's approximation
    ``1 − exp(−w t)``, ``t`` set so that the chances sum to ``k``; bisection on ``log t``)."""
    w = np.asarray(weight, dtype=float) / np.sum(weight)
    k = np.asarray(sizes, dtype=float)[:, None]
    full = k[:, 0] >= len(w)
    k = np.minimum(k, len(w) - 0.5)
    low = np.log(k)  # sum(1 − exp(−w t)) ≤ t
    high = np.log(-np.log1p(-k / len(w)) / w.min())  # every chance ≥ k / workers
    for _ in range(60):
        middle = (low + high) / 2
        above = (-np.expm1(-w[None, :] * np.exp(middle))).sum(axis=1, keepdims=True) > k
        high = np.where(above, middle, high)
        low = np.where(above, low, middle)
    chances = -np.expm1(-w[None, :] * np.exp((low + high) / 2))
    chances[full] = 1.0
    return chances


def fit_activity(per_worker: np.ndarray, per_pair: np.ndarray, seed: int = 0) -> float:
    """The Zipf exponent of activity whose successive sampling of distinct workers (``per_pair``
    answers per pair, ``len(per_worker)`` workers) reproduces the busiest workers' recorded
    answers (the module doc); 0 when fewer than three workers answered.

    A worker's answers are simulated as binomial draws over the pairs of each size, with their
    chances of being drawn (:func:`inclusion_chances`) and common uniform numbers for every
    exponent (inverse CDF): linear in the workers and in the distinct pair sizes, whatever the
    number of pairs."""
    counts = np.sort(np.asarray(per_worker, dtype=float))[::-1]
    workers = len(counts)
    if workers < 3:
        return 0.0
    per_pair = np.minimum(np.asarray(per_pair, dtype=np.int64), workers)
    sizes, pairs = np.unique(per_pair, return_counts=True)
    head = _head(counts)
    rng = np.random.default_rng([seed, 0xAC7])
    reps = 6
    uniform = rng.random((reps, len(sizes), workers))
    log_rank = np.log(np.arange(1, workers + 1))

    def loss(exponent: float) -> float:
        chances = inclusion_chances(np.exp(-exponent * log_rank), sizes)
        drawn = binom.ppf(uniform, pairs[None, :, None], chances[None, :, :]).sum(axis=1)
        expected = np.sort(drawn, axis=1)[:, ::-1].mean(axis=0)
        return float(np.sum((np.log(counts[:head]) - np.log(expected[:head] + 0.5)) ** 2))

    result = optimize.minimize_scalar(
        loss, bounds=(0.0, ACTIVITY_BOUND), method="bounded", options={"xatol": 1e-3}
    )
    return float(result.x)


def _iteration_of(answers: pd.DataFrame) -> pd.Series | None:
    """The iteration of each answer: the frame's own, else inferred from HIT creation times."""
    if "iteration" in answers.columns and answers["iteration"].notna().all():
        return answers["iteration"].astype(int)
    if "created_at" in answers.columns and answers["created_at"].notna().all():
        return infer_iterations(answers.assign(iteration=pd.NA))["iteration"].astype(int)
    return None


def iteration_times(answers: pd.DataFrame) -> pd.DataFrame:
    """Per iteration: ``answers`` and ``hours`` from its first HIT's creation to its last
    submission (empty when the frame has no times)."""
    iteration = _iteration_of(answers)
    if iteration is None or not {"created_at", "submitted_at"} <= set(answers.columns):
        return pd.DataFrame(columns=["answers", "hours"])
    created = pd.to_datetime(answers["created_at"], utc=True, errors="coerce")
    submitted = pd.to_datetime(answers["submitted_at"], utc=True, errors="coerce")
    per = pd.DataFrame({"iteration": iteration, "created": created, "submitted": submitted})
    per = per.groupby("iteration").agg(
        answers=("created", "size"), start=("created", "min"), end=("submitted", "max")
    )
    per["hours"] = (per["end"] - per["start"]).dt.total_seconds() / 3600
    per = per[np.isfinite(per["hours"]) & (per["hours"] > 0)]
    return per[["answers", "hours"]].astype(float)


def fit_rounds(times: pd.DataFrame, base: CrowdModel) -> dict[str, float]:
    """``round_hours``, ``answers_per_hour``, ``round_spread`` by least squares of each
    iteration's log duration (:func:`iteration_times`) on ``log(round_hours + answers /
    answers_per_hour)``; the defaults when fewer than three iterations are timed."""
    if len(times) < 3:
        return {
            "round_hours": base.round_hours,
            "answers_per_hour": base.answers_per_hour,
            "round_spread": base.round_spread,
        }
    hours, n = times["hours"].to_numpy(), times["answers"].to_numpy()

    def residual(theta: np.ndarray) -> np.ndarray:
        return np.log(hours) - np.log(np.exp(theta[0]) + n * np.exp(-theta[1]))

    start = np.array([np.log(max(hours.min() / 2, 0.05)), np.log(max(n.sum() / hours.sum(), 1.0))])
    low, high = zip(*ROUND_BOUNDS.values(), strict=True)
    result = optimize.least_squares(residual, start, bounds=(low, high))
    spread = float(np.sqrt(np.sum(result.fun**2) / max(len(n) - 2, 1)))
    return {
        "round_hours": float(np.exp(result.x[0])),
        "answers_per_hour": float(np.exp(result.x[1])),
        "round_spread": spread,
    }


def _time_fields(
    seconds: np.ndarray, worker: np.ndarray, careless: np.ndarray, base: CrowdModel
) -> dict[str, float]:
    """:func:`fit_times` on coded answers: each answer's ``seconds`` and ``worker`` code, and
    whether each worker code is careless (``careless[w]``)."""
    ok = seconds > 0
    seconds, worker = seconds[ok], worker[ok]
    order = np.lexsort((seconds, worker))
    seconds, worker = seconds[order], worker[order]
    present, first, n = np.unique(worker, return_index=True, return_counts=True)
    median = (seconds[first + (n - 1) // 2] + seconds[first + n // 2]) / 2  # per present worker
    log_median = np.log(median)
    enough = log_median[n >= 3]
    spread = float(enough.std(ddof=1)) if len(enough) > 1 else np.nan
    residual = np.log(seconds) - np.repeat(log_median, n)
    slow = median[careless[present]] if len(present) else median
    middle = float(np.median(median)) if len(median) else base.median_seconds
    return {
        "median_seconds": middle,
        "worker_seconds_spread": spread if np.isfinite(spread) else base.worker_seconds_spread,
        "answer_seconds_spread": float(residual.std(ddof=1))
        if len(residual) > 1
        else base.answer_seconds_spread,
        "careless_seconds": float(np.median(slow)) if len(slow) else middle,
    }


def fit_times(answers: pd.DataFrame, careless: pd.Index, base: CrowdModel) -> dict[str, float]:
    """The answer-time fields of the model (module doc) from honest workers' answers;
    ``careless`` names the workers the fit finds careless."""
    code, ids = pd.factorize(answers["worker_id"].astype(str))
    return _time_fields(answers["seconds"].astype(float).to_numpy(), code, ids.isin(careless), base)


def hit_hours(answers: pd.DataFrame) -> np.ndarray:
    """Per HIT, hours from its creation to its last accepted answer (empty without times)."""
    if not {"created_at", "accepted_at"} <= set(answers.columns):
        return np.zeros(0)
    created = pd.to_datetime(answers["created_at"], utc=True, errors="coerce")
    accepted = pd.to_datetime(answers["accepted_at"], utc=True, errors="coerce")
    span = (accepted - created).dt.total_seconds().groupby(answers["pair_id"]).max() / 3600
    return span.dropna().to_numpy()


# --------------------------------------------------------------------------- the whole fit


@dataclass(frozen=True)
class Fit:
    """A fitted crowd model, its bootstrap intervals and what the fit saw.

    ``intervals`` maps each fitted field (:data:`FITTED`) to its 95% bootstrap interval;
    ``replicates`` are the bootstrap models; ``gap_shares`` the shares of compared pairs whose
    candidates are 0, 1, 2… groups apart; ``workers`` one row per honest worker (answers,
    posterior means of noise, band and lean to B, and the chance of being careless)."""

    model: CrowdModel
    intervals: dict[str, tuple[float, float]]
    replicates: list[CrowdModel]
    gap_shares: dict[int, float]
    log_likelihood: float
    pairs: int
    answers: int
    bots: list[str]
    workers: pd.DataFrame
    with_lists: bool
    kept: dict[str, str] = dataclasses.field(default_factory=dict)
    """Fields the recording could not inform (the default kept, or ``activity`` at its
    bound), each with why; they have no interval."""

    def to_toml(self) -> dict[str, Any]:
        return {
            "simulated": self.model.to_dict(),
            "fit": {
                "pairs": self.pairs,
                "answers": self.answers,
                "gaps_from": "lists" if self.with_lists else "answers",
                "log_likelihood": self.log_likelihood,
                "gap_shares": {str(g): s for g, s in self.gap_shares.items()},
                "bots": self.bots,
                "bootstrap_replicates": len(self.replicates),
                "intervals": {k: list(v) for k, v in self.intervals.items()},
                "not_fitted": dict(sorted(self.kept.items())),
            },
        }


def _model_of(
    continuum: _ContinuumFit, base: CrowdModel, per_worker, per_pair, seed: int
) -> CrowdModel:
    """``base`` with the continuum's population and the activity fitted to the answer counts."""
    p = continuum.population
    return replace(
        base,
        noise=p.noise,
        noise_spread=p.noise_spread,
        equal_band=p.equal_band,
        equal_spread=p.equal_spread,
        position_bias=p.position_bias,
        bias_spread=p.bias_spread,
        careless_share=p.careless_share,
        activity=fit_activity(per_worker, per_pair, seed),
    )


def _gap_shares(continuum: _ContinuumFit) -> dict[int, float]:
    expected = continuum.gap_posterior.mean(axis=0)
    widest = (len(expected) - 1) // 2
    folded = expected[widest:].copy()
    folded[1:] += expected[:widest][::-1]
    return {g: float(s) for g, s in enumerate(folded)}


def _worker_table(continuum: _ContinuumFit, ids: pd.Index, data: _Answers) -> pd.DataFrame:
    means = continuum.workers
    noise, band, bias = (means[:, :3] / np.maximum(means[:, 4:], 1e-300)).T
    return pd.DataFrame(
        {
            "answers": np.bincount(data.worker, minlength=data.workers),
            "noise": np.exp(noise),
            "band": np.exp(band),
            "bias": bias,
            "careless": continuum.careless,
        },
        index=pd.Index(ids, name="worker_id"),
    ).sort_values("answers", ascending=False)


@dataclass(frozen=True)
class BootstrapShared:
    """What every bootstrap replicate reads (:func:`bootstrap_replicate`): the coded answers,
    their rows by worker, each answer's work time, the fit to all answers, the counted model,
    the timed iterations and the HITs' hours; picklable, so replicates can run in processes."""

    data: _Answers
    grouped: tuple[np.ndarray, np.ndarray]
    seconds: np.ndarray
    start: Population
    start_gaps: np.ndarray
    counted: CrowdModel
    per_pair: np.ndarray
    times: pd.DataFrame
    hours: np.ndarray
    seed: int


def bootstrap_replicate(shared: BootstrapShared, r: int) -> CrowdModel:
    """Bootstrap replicate ``r``: workers resampled with their answers and refitted (from the fit
    to all answers), iterations and HITs resampled for the timing fields. A pure function of
    ``shared`` and ``r`` (its random numbers come from ``(seed, r)``), so replicates may run in
    any order or process."""
    data, base = shared.data, shared.counted
    rng = np.random.default_rng([shared.seed, 0xB007, r])
    drawn = rng.integers(0, data.workers, data.workers)
    sample, rows = data.resampled(drawn, shared.grouped)
    refit = fit_continuum(
        sample,
        start=shared.start,
        tolerance=1e-3,
        iterations=REFIT_ITERATIONS,
        start_gaps=shared.start_gaps,
    )

    times, hours = shared.times, shared.hours
    timed = times.iloc[rng.integers(0, len(times), len(times))] if len(times) else times
    spans = rng.choice(hours, len(hours)) if len(hours) else hours
    fields = {
        **_time_fields(shared.seconds[rows], sample.worker, refit.careless > 0.5, base),
        **fit_rounds(timed, base),
        "completion_hours": float(np.median(spans)) if len(spans) else base.completion_hours,
    }
    counts = np.bincount(sample.worker, minlength=sample.workers)
    return _model_of(refit, replace(base, **fields), counts, shared.per_pair, shared.seed + r + 1)


def fit_crowd_model(
    frame: pd.DataFrame,
    lists: pd.DataFrame | None = None,
    base: CrowdModel = CrowdModel(),
    bootstrap: int = 0,
    seed: int = 0,
    *,
    runner: Runner = SERIAL,
    on_replicate: Callable[[int], None] | None = None,
) -> Fit:
    """Fit the crowd model to a recorded campaign (see the module doc).

    ``lists`` (``query, document, group``: the campaign's published lists) fixes each pair's
    gap; without them the gaps are latent. ``bootstrap`` replicates over workers give the
    intervals (none when 0; each one :func:`bootstrap_replicate`, a task of ``runner``);
    ``on_replicate`` is called after each with the number of replicates done.
    """
    if not 0 <= bootstrap <= MAX_CAMPAIGNS:
        raise InputError(
            f"the bootstrap replicates must be a whole number in [0, {MAX_CAMPAIGNS}], "
            f"got {bootstrap}"
        )
    answers = usable_answers(frame)
    if answers.empty:
        raise InputError("no usable answers (A, B or equal) to fit a crowd model to")
    if "a_is_x" not in answers.columns:
        answers = answers.assign(a_is_x=1)
    if lists is not None and not {"query", "x", "y"} <= set(answers.columns):
        raise InputError("fitting against lists needs the answers' query, x and y")
    bots = find_bots(answers)
    honest = answers[~answers["worker_id"].astype(str).isin(bots)]
    per_pair_all = honest.groupby("pair_id").size()
    honest = honest[honest["pair_id"].isin(per_pair_all.index[per_pair_all >= 2])]
    if honest["pair_id"].nunique() < 10:
        raise InputError(
            f"only {honest['pair_id'].nunique()} pair(s) have two or more answers; "
            "a crowd model needs at least 10"
        )
    data = _codes(honest, lists)
    ids = pd.Index(pd.factorize(honest["worker_id"].astype(str))[1])
    continuum = fit_continuum(data)
    per_worker = np.bincount(data.worker, minlength=data.workers)
    per_pair = np.bincount(data.pair, minlength=data.pairs)
    workers = _worker_table(continuum, ids, data)
    careless = workers.index[workers["careless"] > 0.5]
    bot_times = answers.loc[answers["worker_id"].astype(str).isin(bots), "seconds"]
    times = iteration_times(answers)
    hours = hit_hours(honest)
    counted = replace(
        base,
        workers=max(1, data.workers),
        bots=len(bots),
        bot_seconds=float(bot_times.median()) if len(bot_times) else base.bot_seconds,
        **fit_times(honest, careless, base),
        **fit_rounds(times, base),
        completion_hours=float(np.median(hours)) if len(hours) else base.completion_hours,
    )
    model = _model_of(continuum, counted, per_worker, per_pair, seed)

    shared = BootstrapShared(
        data=data,
        grouped=data.by_worker(),
        seconds=honest["seconds"].astype(float).to_numpy(),
        start=continuum.population,
        start_gaps=continuum.gap_posterior,
        counted=counted,
        per_pair=per_pair,
        times=times,
        hours=hours,
        seed=seed,
    )
    replicates = runner.map(bootstrap_replicate, shared, range(bootstrap), on_replicate)
    kept = unfitted(honest, bots, times, hours, model)
    intervals = {}
    if replicates:
        for name in (name for name in FITTED if name not in kept):
            values = np.array([getattr(m, name) for m in replicates], dtype=float)
            low, high = np.percentile(values, [2.5, 97.5])
            intervals[name] = (float(low), float(high))
    return Fit(
        model=model,
        intervals=intervals,
        replicates=replicates,
        gap_shares=_gap_shares(continuum),
        log_likelihood=continuum.log_likelihood,
        pairs=data.pairs,
        answers=len(honest),
        bots=bots,
        workers=workers,
        with_lists=lists is not None,
        kept=kept,
    )


def unfitted(
    honest: pd.DataFrame,
    bots: list[str],
    times: pd.DataFrame,
    hours: np.ndarray,
    model: CrowdModel,
) -> dict[str, str]:
    """The fields of ``model`` the recording could not inform, each with why (the conditions
    under which :func:`fit_times`, :func:`fit_rounds` and the completion time keep the
    default), a value the search stopped at a bound of (``activity`` near
    :data:`ACTIVITY_BOUND`, the rounds' :data:`ROUND_BOUNDS`) and a spread fitted as 0 (the
    recording shows no variation, e.g. one work time for every answer)."""
    kept = {"think_seconds": "not identifiable from answers"}
    if not bots:
        kept["bot_seconds"] = "no bot found"
    seconds = honest["seconds"].astype(float)
    timed = honest["worker_id"][seconds > 0]
    if timed.empty:
        for name in ("median_seconds", "careless_seconds"):
            kept[name] = "no work times in the file"
    if (timed.value_counts() >= 3).sum() < 2:
        kept["worker_seconds_spread"] = "fewer than 2 workers with 3 timed answers"
    if len(timed) < 2:
        kept["answer_seconds_spread"] = "fewer than 2 work times"
    if len(times) < 3:
        for name in ("round_hours", "answers_per_hour", "round_spread"):
            kept[name] = f"{len(times)} timed iteration(s), 3 needed (creation and submit times)"
    if len(hours) == 0:
        kept["completion_hours"] = "no HIT creation and accept times"
    if model.activity >= ACTIVITY_BOUND - ACTIVITY_TOLERANCE:
        kept["activity"] = f"at the search's bound {ACTIVITY_BOUND:g}"
    for name, bounds in ROUND_BOUNDS.items():
        value = float(np.log(getattr(model, name)))
        edge = next((b for b in bounds if abs(value - b) < 1e-3), None)
        if name not in kept and edge is not None:
            kept[name] = f"at the search's bound {np.exp(edge):.3g}"
    for field in dataclasses.fields(model):
        spread = field.name.endswith("_spread")
        if spread and field.name not in kept and getattr(model, field.name) <= 1e-9:
            kept[field.name] = "a spread of 0: the recording shows no variation to fit"
    return kept


def save_fit(fit: Fit, path: str | os.PathLike) -> None:
    """Write the fit as TOML (``[simulated]`` model fields, ``[fit]`` report), atomically.

    The ``[simulated]`` table can be pasted into a project's ``crowdprefs.toml``.
    """
    write_atomic(path, tomli_w.dumps(fit.to_toml()))


# --------------------------------------------------------------------------- predictive check


def recorded_design(answers: pd.DataFrame, aggregation: AggregationRule) -> Design:
    """The design a recording used: its answers per pair (the median), the rule given, and its
    share of pairs showing the pivot as B."""
    per_pair = answers.groupby("pair_id").size()
    sides = answers.groupby("pair_id")["a_is_x"].first().astype(int)
    oriented = "pivot_known" not in answers.columns or answers["pivot_known"].astype(bool).all()
    return Design(
        answers_per_pair=int(round(per_pair.median())),
        aggregation=aggregation,
        pivot_b_share=float(sides.mean()) if oriented else 0.5,
    )


def campaign_statistics(answers: pd.DataFrame) -> dict[str, float]:
    """Iterations, pairs (in all and per iteration), mean inter-agreement per pair (the
    preference-judgments paper §5.3) and the answers' A/equal/B shares of a recorded campaign."""
    iteration = _iteration_of(answers)
    if iteration is None:
        raise InputError("the answers have no iterations and no HIT creation times to infer them")
    per = answers.assign(iteration=iteration)
    pairs = per.groupby("iteration")["pair_id"].nunique()
    swapped = per["choice"].replace({"A": "B", "B": "A"})
    on_x = per["choice"].where(per["a_is_x"].astype(int) == 1, swapped)  # A: x preferred
    counts = tally(per["pair_id"], on_x, CHOICES)
    agreement = inter_agreement(counts["A"], counts["equal"], counts["B"])
    shares = per["choice"].value_counts(normalize=True).reindex(list(CHOICES), fill_value=0.0)
    return {
        "iterations": float(len(pairs)),
        "pairs": float(pairs.sum()),
        **{f"pairs in iteration {i}": float(n) for i, n in enumerate(pairs.to_numpy(), 1)},
        "agreement": float(np.nanmean(agreement)),
        **{f"share {c}": float(shares[c]) for c in CHOICES},
    }


def simulated_statistics(per_iteration: pd.DataFrame) -> dict[str, float]:
    """:func:`campaign_statistics` of a simulated campaign (its per-iteration table)."""
    answers = per_iteration[["A", "equal", "B"]].to_numpy().sum(axis=0)
    weights = per_iteration["pairs"].to_numpy(dtype=float)
    agreement = per_iteration["agreement"].to_numpy(dtype=float)
    ok = np.isfinite(agreement)
    return {
        "iterations": float(len(per_iteration)),
        "pairs": float(weights.sum()),
        **{f"pairs in iteration {i}": n for i, n in enumerate(weights, 1)},
        "agreement": float(np.average(agreement[ok], weights=weights[ok])) if ok.any() else np.nan,
        **{f"share {c}": float(a / answers.sum()) for c, a in zip(CHOICES, answers, strict=True)},
    }


def predictive_check(
    models: CrowdModel | Sequence[CrowdModel],
    frame: pd.DataFrame,
    lists: pd.DataFrame,
    aggregation: AggregationRule,
    campaigns: int = 200,
    seed: int = 0,
    runner: Runner = SERIAL,
    on_done: Callable[[int], None] | None = None,
) -> pd.DataFrame:
    """Simulate the recorded design on the recorded candidates, with ``lists`` as the truth, and
    compare with the recording: one row per statistic (:func:`campaign_statistics`) with the
    recorded value, the simulated mean, its 5% and 95% quantiles and the simulated share of
    campaigns at or below the recorded value; and :data:`PIVOTS_ROW`, the iterations of as many
    campaigns with the recording's own pivots (one campaign's depth owes much to its pivots'
    luck: ``benchmarks/campaign_depth.py``). Campaign ``i`` uses model ``i`` modulo their
    number (bootstrap replicates make it a posterior predictive check) and seed
    ``seed · 7919 + i``, whichever ``runner`` runs it; ``on_done(n)`` follows the campaigns."""
    if not 1 <= campaigns <= MAX_CAMPAIGNS:
        raise InputError(
            f"the predictive check's campaigns must be a whole number in [1, {MAX_CAMPAIGNS}], "
            f"got {campaigns}"
        )
    answers = usable_answers(frame)
    if "a_is_x" not in answers.columns:
        answers = answers.assign(a_is_x=1)
    recorded = campaign_statistics(answers)
    design = recorded_design(answers, aggregation)
    documents = pd.concat(
        [
            answers[["query", "x"]].set_axis(["query", "document"], axis=1),
            answers[["query", "y"]].set_axis(["query", "document"], axis=1),
        ]
    ).drop_duplicates()
    truth = lists.merge(documents, on=["query", "document"])
    if len(truth) < len(documents):
        raise InputError("the lists do not place every candidate of the recorded answers")
    pool = [models] if isinstance(models, CrowdModel) else list(models)
    collection = Collection.from_truth(truth)
    tasks = [(i, False) for i in range(campaigns)] + [(i, True) for i in range(campaigns)]
    shared = (collection, design, pool, seed, recorded_pivot_order(answers, collection))
    rows = runner.map(_simulated_campaign, shared, tasks, on_done)
    simulated = pd.DataFrame(rows[:campaigns])
    pivots = PIVOTS_ROW, pd.DataFrame(rows[campaigns:])["iterations"]
    depth = int(max(recorded["iterations"], simulated["iterations"].max()))
    per_iteration = [f"pairs in iteration {i}" for i in range(1, depth + 1)]
    names = ["iterations", pivots[0], "pairs", *per_iteration, "agreement"]
    names += [f"share {c}" for c in CHOICES]
    recorded = {**recorded, pivots[0]: recorded["iterations"]}
    simulated[pivots[0]] = pivots[1].to_numpy()
    simulated = simulated.reindex(columns=names)
    simulated[per_iteration] = simulated[per_iteration].fillna(0.0)
    table = pd.DataFrame(
        {
            "recorded": pd.Series(recorded).reindex(names).fillna(0.0),
            "simulated": simulated.mean(),
            "p5": simulated.quantile(0.05),
            "p95": simulated.quantile(0.95),
            "at_or_below": (simulated <= pd.Series(recorded).reindex(names).fillna(0.0)).mean(),
        }
    )
    table.index.name = "statistic"
    table.attrs["design"] = design
    table.attrs["campaigns"] = campaigns
    return table


PIVOTS_ROW = "iterations, recorded pivots"
"""The predictive check's row of campaigns with fresh answers but the recording's own pivots
(:func:`recorded_pivot_order`): how much of the recorded depth its pivots explain."""


def _simulated_campaign(shared: tuple, task: tuple[int, bool]) -> dict[str, float]:
    """One task of :func:`predictive_check`: the statistics of simulated campaign ``i``, with
    random pivots or the recording's."""
    collection, design, pool, seed, order = shared
    i, recorded_pivots = task
    campaign = simulate_campaign(
        collection, design, pool[i % len(pool)], seed=seed * 7919 + i,
        position=order if recorded_pivots else None,
    )  # fmt: skip
    return simulated_statistics(campaign.per_iteration)


def recorded_pivot_order(answers: pd.DataFrame, collection: Collection) -> np.ndarray:
    """An initial order of ``collection``'s candidates (``position`` of
    :func:`~crowdprefs.quality.planning.sort_rounds`) under which the sort picks the recorded
    pivots (``query, y, iteration`` of the answers, ``y`` the pivot): a segment's pivot is its
    todo member latest in the initial order, so a candidate that was a pivot at an earlier
    iteration comes later, and one never a pivot comes first. With the recorded verdicts it
    replays the recorded campaign; with fresh answers it tells its pivots' luck from its
    answers' (the recorded depth against campaigns with the same pivots)."""
    first = answers.groupby(["query", "y"])["iteration"].min()
    keys = pd.MultiIndex.from_arrays([collection.queries[collection.query], collection.documents])
    return -np.nan_to_num(first.reindex(keys).to_numpy(dtype=float), nan=np.inf)
