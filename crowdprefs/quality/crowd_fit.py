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

from crowdprefs.campaign.aggregate import AggregationRule, inter_agreement, tally
from crowdprefs.errors import InputError
from crowdprefs.files import write_atomic
from crowdprefs.parallel import SERIAL, Runner
from crowdprefs.quality.activity_fit import (
    ACTIVITY_BOUND,
    ACTIVITY_TOLERANCE,
    ROUND_BOUNDS,
    _iteration_of,
    _time_fields,
    fit_activity,
    fit_rounds,
    fit_times,
    hit_hours,
    inclusion_chances,
    iteration_times,
)
from crowdprefs.quality.continuum_fit import (
    BAND_GRID,
    BIAS_GRID,
    CACHED_CELLS,
    CHOICES,
    LATENT_GAPS,
    MAX_RATIO,
    NOISE_GRID,
    PRUNE,
    REFIT_ITERATIONS,
    WORKER_BLOCK,
    Population,
    _Answers,
    _codes,
    _ContinuumFit,
    find_bots,
    fit_continuum,
    list_gaps,
    usable_answers,
)
from crowdprefs.quality.crowd_model import CrowdModel
from crowdprefs.quality.planning import MAX_CAMPAIGNS, Collection, Design, simulate_campaign

__all__ = [
    "ACTIVITY_BOUND",
    "ACTIVITY_TOLERANCE",
    "BAND_GRID",
    "BIAS_GRID",
    "BootstrapShared",
    "CACHED_CELLS",
    "CHOICES",
    "FITTED",
    "Fit",
    "LATENT_GAPS",
    "MAX_RATIO",
    "NOISE_GRID",
    "PIVOTS_ROW",
    "PRUNE",
    "Population",
    "REFIT_ITERATIONS",
    "ROUND_BOUNDS",
    "WORKER_BLOCK",
    "bootstrap_replicate",
    "campaign_statistics",
    "find_bots",
    "fit_activity",
    "fit_continuum",
    "fit_crowd_model",
    "fit_rounds",
    "fit_times",
    "hit_hours",
    "inclusion_chances",
    "iteration_times",
    "list_gaps",
    "predictive_check",
    "recorded_design",
    "recorded_pivot_order",
    "save_fit",
    "simulated_statistics",
    "unfitted",
    "usable_answers",
]

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
