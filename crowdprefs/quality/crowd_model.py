"""Calibrate the simulated crowd from a recorded campaign's answers.

The simulated crowd (:mod:`crowdprefs.crowds.simulated`) answers "is A or B more similar?" by
perceiving ``d = g + noise·z − bias`` (``g`` the signed gap between the two candidates' true
groups, A's side positive) and answering "equal" when ``|d| < band``; careless workers answer at
random and bots "equal" in fixed time. :func:`fit_crowd_model` estimates, from an answers frame
(:func:`crowdprefs.crowds.results.read_results`, or any frame with ``pair_id, worker_id, choice``
(A/B/equal), ``seconds`` and optionally ``status, kind, created_at, accepted_at``):

* **bots**: workers with at least 5 answers, all "equal", whose times vary by at most 1 s (the
  two robots of seed ``002_b9503f18ee81843c.txt`` §4.2 answered "equal" in exactly 8 s);
  ``bot_seconds`` their median time.
* **per-pair difficulty, noise, equal band, position bias, careless share**: maximum likelihood
  of each pair's counts (A, equal, B) under a mixture over the unknown gap ``g ∈ {−4 … 4}``
  (weights symmetric in the sign: the side shown as A is random, seed 002 §4.2). The answer
  shares at each gap average the model's workers (their log-normal noise and band, normal
  bias, with the default spreads) over fixed quantile draws. The gap weights (the *difficulty
  distribution*: the share of pairs whose candidates are 0, 1, 2… groups apart) are a share of
  equal pairs and a geometric fall beyond (:func:`gap_weights`), fitted with the rest by
  Nelder-Mead from four starting points (the best optimum is kept).
* **times**: ``median_seconds`` the median of the honest workers' median times,
  ``worker_seconds_spread`` the standard deviation of their log medians,
  ``answer_seconds_spread`` that of each answer's log time around its worker's median;
  ``completion_hours`` the median time from a HIT's creation to its last accepted answer.
* **activity**: the Zipf exponent of answers per worker against the worker's rank (least
  squares on the log-log scale); ``workers`` the number of non-bot workers.

The spreads of noise, band and bias and the careless workers' time are not identifiable from
counts alone and keep their defaults (listed in the report).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import tomli_w
from scipy import optimize, special, stats

from crowdprefs.crowds.simulated import CrowdModel
from crowdprefs.errors import InputError
from crowdprefs.files import write_atomic

GAPS = np.arange(-4, 5)
"""Signed gaps (in true groups) the difficulty mixture ranges over."""

_DRAWS = 48
_MAX_RATIO = 0.75
"""Largest fall of the difficulty distribution per group of gap (see :func:`_mixture_fit`)."""


@dataclass(frozen=True)
class Fit:
    """A fitted crowd model and what the fit saw."""

    model: CrowdModel
    gap_shares: dict[int, float]
    log_likelihood: float
    pairs: int
    answers: int
    bots: list[str]

    def to_toml(self) -> dict[str, Any]:
        return {
            "simulated": self.model.to_dict(),
            "fit": {
                "pairs": self.pairs,
                "answers": self.answers,
                "log_likelihood": self.log_likelihood,
                "gap_shares": {str(g): s for g, s in self.gap_shares.items()},
                "bots": self.bots,
                "kept_default": ["noise_spread", "equal_spread", "bias_spread", "careless_seconds"],
            },
        }


def _answers(frame: pd.DataFrame) -> pd.DataFrame:
    missing = {"pair_id", "worker_id", "choice", "seconds"} - set(frame.columns)
    if missing:
        raise InputError(f"the answers lack column(s) {', '.join(sorted(missing))}")
    keep = frame["choice"].isin(["A", "B", "equal"])
    if "status" in frame.columns:
        keep &= frame["status"].fillna("submitted").ne("rejected")
    if "kind" in frame.columns:
        keep &= frame["kind"].fillna("sort").eq("sort")
    return frame[keep]


def find_bots(answers: pd.DataFrame) -> list[str]:
    """Workers with ≥ 5 answers, all "equal", in times that vary by at most one second."""
    per = answers.groupby("worker_id").agg(
        n=("choice", "size"),
        equal=("choice", lambda c: bool((c == "equal").all())),
        low=("seconds", "min"),
        high=("seconds", "max"),
    )
    bots = per[(per["n"] >= 5) & per["equal"] & (per["high"] - per["low"] <= 1.0)]
    return sorted(bots.index.astype(str))


def _worker_draws() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Standard-normal quantile points for the workers' noise, band and bias (decorrelated)."""
    z = special.ndtri((np.arange(_DRAWS) + 0.5) / _DRAWS)
    rng = np.random.default_rng(0xC0DE)
    noise, band, bias = z, rng.permutation(z), rng.permutation(z)
    # antithetic bias draws: the answer shares mirror exactly when the mean bias is 0
    return np.tile(noise, 2), np.tile(band, 2), np.concatenate([bias, -bias])


def answer_shares(
    noise: np.ndarray, band: np.ndarray, bias: np.ndarray, careless: np.ndarray, base: CrowdModel
) -> np.ndarray:
    """Shares (A, equal, B) at each gap of :data:`GAPS` for broadcast parameter arrays.

    Averages the honest workers' ``P(d > band)`` and ``P(d < −band)`` over the model's
    log-normal noise and band and normal bias (default spreads), then mixes in careless answers.
    Returns an array of shape ``parameters.shape + (len(GAPS), 3)``.
    """
    zn, zb, zs = _worker_draws()
    noise = np.asarray(noise)[..., None, None] * np.exp(base.noise_spread * zn)
    band = np.asarray(band)[..., None, None] * np.exp(base.equal_spread * zb)
    bias = np.asarray(bias)[..., None, None] + base.bias_spread * zs
    gap = GAPS[:, None].astype(float)
    p_a = special.ndtr((gap - bias - band) / noise).mean(axis=-1)
    p_b = special.ndtr((-gap + bias - band) / noise).mean(axis=-1)
    honest = np.stack([p_a, 1 - p_a - p_b, p_b], axis=-1)
    c = np.asarray(careless)[..., None, None]
    return (1 - c) * honest + c / 3


def gap_weights(equal_pairs: float, ratio: float) -> np.ndarray:
    """Shares of pairs whose candidates are 0, 1, … 4 true groups apart: ``equal_pairs`` at 0,
    the rest falling geometrically by ``ratio`` per group."""
    rest = ratio ** np.arange(len(GAPS) // 2)
    return np.concatenate([[equal_pairs], (1 - equal_pairs) * rest / rest.sum()])


def _mixture_fit(counts: np.ndarray, weight: np.ndarray, base: CrowdModel):
    """Maximum likelihood by Nelder-Mead (four starting points) over noise, band, bias, careless
    share and the difficulty distribution; returns (parameters, gap weights, log-likelihood).

    The gap weights fall geometrically beyond gap 0, by a ratio of at most ``_MAX_RATIO``: free
    (or flat) weights would let a crowd twice as noisy with groups twice as far apart fit as
    well, while the plan's truths put adjacent groups one unit apart; sorted lists compare close
    candidates more often than distant ones (the demo's QuickSort pairs fall by about 0.5).
    """
    constant = special.gammaln(counts.sum(1) + 1) - special.gammaln(counts + 1).sum(1)
    split = np.where(GAPS == 0, 1.0, 2.0)

    def unpack(theta: np.ndarray) -> tuple[tuple[float, float, float, float], np.ndarray]:
        params = (
            float(np.exp(theta[0])),
            float(np.exp(theta[1])),
            float(theta[2]),
            float(special.expit(theta[3]) * 0.5),
        )
        return params, gap_weights(special.expit(theta[4]), special.expit(theta[5]) * _MAX_RATIO)

    def log_likelihood(theta: np.ndarray) -> float:
        params, folded = unpack(theta)
        shares = np.clip(answer_shares(*params, base), 1e-12, 1)  # (G, 3)
        signed = np.concatenate([folded[:0:-1], folded]) / split
        joint = counts @ np.log(shares).T + constant[:, None] + np.log(signed)
        top = joint.max(axis=1)
        total = top + np.log(np.exp(joint - top[:, None]).sum(axis=1))
        return float((total * weight).sum())

    best = None
    starts = (
        (0.5, 0.7, 0.1, 0.05, 0.4, 0.3),
        (0.7, 1.1, 0.15, 0.05, 0.4, 0.5),
        (1.0, 1.0, 0.1, 0.1, 0.3, 0.5),
        (1.3, 0.6, 0.0, 0.1, 0.2, 0.6),
    )
    for start in starts:
        noise, band, bias, careless, equal_pairs, ratio = start
        theta = np.array(
            [
                np.log(noise),
                np.log(band),
                bias,
                special.logit(careless * 2),
                special.logit(equal_pairs),
                special.logit(ratio / _MAX_RATIO),
            ]
        )
        result = optimize.minimize(
            lambda t: -log_likelihood(t),
            theta,
            method="Nelder-Mead",
            options={"xatol": 1e-3, "fatol": 1e-3, "maxiter": 1500},
        )
        if best is None or result.fun < best.fun:
            best = result
    params, folded = unpack(best.x)
    return params, folded, -float(best.fun)


def _zipf_exponent(per_worker: pd.Series) -> float:
    counts = np.sort(per_worker.to_numpy())[::-1].astype(float)
    if len(counts) < 3:
        return CrowdModel.activity
    rank = np.arange(1, len(counts) + 1)
    slope = stats.linregress(np.log(rank), np.log(counts)).slope
    return float(max(0.0, -slope))


def fit_crowd_model(frame: pd.DataFrame, base: CrowdModel = CrowdModel()) -> Fit:
    """Fit the simulated crowd's parameters to a recorded campaign (see the module doc)."""
    answers = _answers(frame)
    if answers.empty:
        raise InputError("no usable answers (A, B or equal) to fit a crowd model to")
    bots = find_bots(answers)
    honest = answers[~answers["worker_id"].astype(str).isin(bots)]
    table = pd.crosstab(honest["pair_id"], honest["choice"]).reindex(
        columns=["A", "equal", "B"], fill_value=0
    )
    table = table[table.sum(axis=1) >= 2]
    if len(table) < 10:
        raise InputError(
            f"only {len(table)} pair(s) have two or more answers; a crowd model needs at least 10"
        )
    distinct, weight = np.unique(table.to_numpy(), axis=0, return_counts=True)
    (noise, band, bias, careless), gap_weights, log_like = _mixture_fit(
        distinct.astype(float), weight.astype(float), base
    )

    seconds = honest["seconds"].astype(float)
    ok = seconds > 0
    worker_median = seconds[ok].groupby(honest["worker_id"][ok]).median()
    enough = honest[ok].groupby("worker_id").size() >= 3
    spread = np.log(worker_median[enough[enough].index]).std(ddof=1)
    residual = np.log(seconds[ok]) - np.log(honest["worker_id"][ok].map(worker_median))
    bot_times = answers.loc[answers["worker_id"].astype(str).isin(bots), "seconds"]
    completion = base.completion_hours
    if {"created_at", "accepted_at"} <= set(answers.columns):
        created = pd.to_datetime(answers["created_at"], utc=True, errors="coerce")
        accepted = pd.to_datetime(answers["accepted_at"], utc=True, errors="coerce")
        span = (accepted - created).dt.total_seconds().groupby(answers["pair_id"]).max() / 3600
        if span.notna().any():
            completion = float(span.median())

    model = replace(
        base,
        workers=max(1, int(honest["worker_id"].nunique())),
        bots=len(bots),
        bot_seconds=float(bot_times.median()) if len(bot_times) else base.bot_seconds,
        careless_share=float(careless),
        noise=float(noise),
        equal_band=float(band),
        position_bias=float(bias),
        median_seconds=float(worker_median.median()) if len(worker_median) else 0.0,
        worker_seconds_spread=float(spread) if np.isfinite(spread) else base.worker_seconds_spread,
        answer_seconds_spread=float(residual.std(ddof=1))
        if len(residual) > 1
        else base.answer_seconds_spread,
        activity=_zipf_exponent(honest.groupby("worker_id").size()),
        completion_hours=completion,
    )
    return Fit(
        model=model,
        gap_shares={int(g): float(w) for g, w in enumerate(gap_weights)},
        log_likelihood=log_like,
        pairs=len(table),
        answers=int(len(honest)),
        bots=bots,
    )


def save_fit(fit: Fit, path: str | os.PathLike) -> None:
    """Write the fit as TOML (``[simulated]`` model fields, ``[fit]`` report), atomically.

    The ``[simulated]`` table can be pasted into a project's ``crowdprefs.toml``.
    """
    write_atomic(path, tomli_w.dumps(fit.to_toml()))


def load_crowd_model(path: str | os.PathLike) -> CrowdModel:
    """The :class:`CrowdModel` of a TOML file's ``[simulated]`` table (from :func:`save_fit`)."""
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"crowd model file not found: {path}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: invalid TOML: {error}") from None
    section = dict(data.get("simulated", {}))
    section.pop("truth", None)
    section.pop("seed", None)
    try:
        return CrowdModel.from_dict(section)
    except InputError as error:
        raise InputError(f"{path}: {error}") from None
    except TypeError as error:
        raise InputError(f"{path}: invalid crowd model: {error}") from None
