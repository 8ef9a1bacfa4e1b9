"""Scores whose intervals include the ground truth's own uncertainty.

A system's mean over queries is usually given with an interval for the sampling of queries
alone, as if the ground truth were fixed. A crowdsourced truth is itself a sample: another crowd
would have made other lists (:mod:`crowdprefs.quality.stability`). Here each bootstrap replicate
*r* draws both: the crowd's workers (resampled lists L_r) and the queries (Q draws with
replacement, weights c_rq from the stream (seed, r)), and gives every system the mean

    m_r(s) = Σ_q c_rq · score(s, q; L_r) / Q.

The percentile interval of m_r over the replicates (Efron & Tibshirani 1993, ch. 13) holds both
sources of error; the same query draws on the published lists give the interval for queries
alone, so the ratio of the two widths shows what the truth's uncertainty adds. For each pair of
systems, ``kept`` is the share of resampled truths (all queries) under which the system ahead on
the published lists stays ahead (a tie counts half): what a reviewer needs to believe "A beats B
on a crowdsourced truth".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crowdprefs.evaluation import measures as M
from crowdprefs.parallel import SERIAL, Runner

if TYPE_CHECKING:
    from crowdprefs.quality.stability import Resampled

SUMMARY_COLUMNS = [
    "measure",
    "system",
    "mean",
    "ci_low",
    "ci_high",
    "truth_ci_low",
    "truth_ci_high",
    "widening",
]
PAIR_COLUMNS = ["measure", "system_a", "system_b", "difference", "kept"]


@dataclass(frozen=True)
class TruthUncertainty:
    """``summary`` (:data:`SUMMARY_COLUMNS`: the mean on the published lists, its interval for
    queries alone and for queries and truth, and their width ratio) and ``pairs``
    (:data:`PAIR_COLUMNS`: ``system_a`` is ahead on the published lists)."""

    summary: pd.DataFrame
    pairs: pd.DataFrame
    resamples: int


@dataclass(frozen=True)
class _Shared:
    runs: pd.DataFrame
    resampled: Resampled
    measures: tuple[M.Measure, ...]
    weights: np.ndarray  # replicates × queries: the query draws c_rq


def _scores(runs: pd.DataFrame, truth: pd.DataFrame, measures: Sequence[M.Measure]):
    """Scores as an array (measures × systems × queries), with the systems and queries."""
    data = M.judge(runs, truth, depth=M.depth_needed(measures))
    return np.stack([m(data) for m in measures]), list(data.systems), list(data.queries)


def _draws(seed: int, replicates: int, queries: int) -> np.ndarray:
    """The query weights c_rq (replicates × queries; module docstring), each replicate's from
    its own stream (seed, r)."""
    draws = [
        np.random.default_rng([seed, r, 1]).integers(0, queries, queries) for r in range(replicates)
    ]
    return np.stack([np.bincount(drawn, minlength=queries) for drawn in draws])


def _replicate(shared: _Shared, resample: int) -> tuple[np.ndarray, np.ndarray]:
    """``(truth only, truth and queries)``: the means (measures × systems) of one replicate."""
    scores, _, _ = _scores(shared.runs, shared.resampled.lists(resample), shared.measures)
    weights = shared.weights[resample]
    return scores.mean(axis=2), scores @ weights / len(weights)


def truth_uncertainty(
    runs: pd.DataFrame,
    resampled: Resampled,
    measures: Sequence[str | M.Measure] = ("ADR@5",),
    k: int | None = None,
    *,
    confidence: float = 0.95,
    seed: int = 0,
    runner: Runner = SERIAL,
    on_done=None,
) -> TruthUncertainty:
    """Score ``runs`` against every resampled truth of ``resampled`` (module docstring); the
    same result for any ``runner``."""
    parsed = tuple(M.parse_measures(measures, k))
    runs = runs[runs["query"].isin(set(resampled.documents["query"]))]
    published, systems, queries = _scores(runs, resampled.documents, parsed)
    count = len(resampled.groups)
    weights = _draws(seed, count, len(queries))
    shared = _Shared(runs, resampled, parsed, weights)
    replicates = runner.map(_replicate, shared, list(range(count)), on_done)
    truth_only = np.stack([r[0] for r in replicates])  # replicates × measures × systems
    joint = np.stack([r[1] for r in replicates])
    queries_only = np.einsum("msq,rq->rms", published, weights) / len(queries)
    tail = (1 - confidence) / 2
    low, high = np.quantile(queries_only, [tail, 1 - tail], axis=0)
    truth_low, truth_high = np.quantile(joint, [tail, 1 - tail], axis=0)
    mean = published.mean(axis=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        widening = (truth_high - truth_low) / (high - low)
    names = [str(m) for m in parsed]
    grid = pd.MultiIndex.from_product([names, systems], names=["measure", "system"])
    summary = pd.DataFrame(
        {
            "mean": mean.ravel(),
            "ci_low": low.ravel(),
            "ci_high": high.ravel(),
            "truth_ci_low": truth_low.ravel(),
            "truth_ci_high": truth_high.ravel(),
            "widening": widening.ravel(),
        },
        index=grid,
    ).reset_index()[SUMMARY_COLUMNS]
    rows = []
    for m, name in enumerate(names):
        a, b = np.triu_indices(len(systems), k=1)
        ahead = mean[m, a] >= mean[m, b]
        first, second = np.where(ahead, a, b), np.where(ahead, b, a)
        gap = truth_only[:, m, first] - truth_only[:, m, second]
        kept = (gap > 0).mean(axis=0) + (gap == 0).mean(axis=0) / 2
        rows.append(
            pd.DataFrame(
                {
                    "measure": name,
                    "system_a": np.asarray(systems)[first],
                    "system_b": np.asarray(systems)[second],
                    "difference": mean[m, first] - mean[m, second],
                    "kept": kept,
                }
            )
        )
    pairs = pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=PAIR_COLUMNS)
    return TruthUncertainty(summary, pairs.sort_values(["measure", "kept"], kind="stable"), count)
