"""The crowd's activity and times fitted to a recorded campaign: the Zipf exponent of who
answers (successive sampling, Rosén's inclusion chances), the round timings and the work
times (see :mod:`crowdprefs.quality.crowd_fit`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import optimize
from scipy.stats import binom

from crowdprefs.quality.crowd_model import CrowdModel
from crowdprefs.quality.frames import infer_iterations


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
