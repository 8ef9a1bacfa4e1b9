"""The workers' continuum of a recorded campaign: coded answers, bots, and the EM fit of the
hierarchical ordered-probit model over a grid of worker types (the model of
:mod:`crowdprefs.quality.crowd_fit`, whose module doc states it)."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError
from crowdprefs.quality.crowd_model import choice_shares

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


def _m_step(totals: np.ndarray, workers: int, gaps: tuple[float, ...]) -> Population:
    """The population whose moments match the expected type counts ``totals`` (per grid type,
    careless last) of ``workers`` workers, with the latent gaps' distribution ``gaps`` (the M
    step of the EM; each spread floored at half its grid step)."""
    honest = totals[:-1].reshape(len(NOISE_GRID), len(BAND_GRID), -1)
    grids = (np.log(NOISE_GRID), np.log(BAND_GRID), BIAS_GRID)
    steps = [
        np.diff(np.log(NOISE_GRID))[0],
        np.diff(np.log(BAND_GRID))[0],
        BIAS_GRID[1] - BIAS_GRID[0],
    ]
    moments = [
        _moments(honest.sum(axis=tuple(a for a in range(3) if a != d)), grids[d], steps[d] / 2)
        for d in range(3)
    ]
    return Population(
        noise=float(np.exp(moments[0][0])),
        noise_spread=moments[0][1],
        equal_band=float(np.exp(moments[1][0])),
        equal_spread=moments[1][1],
        position_bias=moments[2][0],
        bias_spread=moments[2][1],
        careless_share=float(np.clip(totals[-1] / workers, 1e-4, 0.5)),
        gaps=gaps,
    )


def _change(updated: Population, population: Population) -> float:
    """The largest change of a population parameter in one EM step (logs for scales)."""
    return max(
        abs(np.log(updated.noise / population.noise)),
        abs(np.log(updated.equal_band / population.equal_band)),
        abs(updated.position_bias - population.position_bias),
        abs(updated.noise_spread - population.noise_spread),
        abs(updated.equal_spread - population.equal_spread),
        abs(updated.bias_spread - population.bias_spread),
        abs(updated.careless_share - population.careless_share),
    )


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
        gaps = population.gaps
        if not known:
            gap_posterior = e_step_gaps(step.expected, np.asarray(population.gaps))
            gaps = tuple(_gap_prior(gap_posterior.sum(axis=0), data.oriented))
        updated = _m_step(step.totals, data.workers, gaps)
        change = _change(updated, population)
        population, log_like = updated, float(step.marginal.sum())
        if change < tolerance:
            break
    return _ContinuumFit(population, step.summaries, gap_posterior, log_like)
