"""MTC run against complete judgments (the MTC paper §5): judgments needed, accuracy, τ,
calibration."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError
from crowdprefs.evaluation.mtc.collection import Collection, Scale
from crowdprefs.evaluation.mtc.selection import Selector
from crowdprefs.evaluation.mtc.statistics import (
    Estimates,
    calibration_table,
    pair_statistics,
    pair_table,
    sign_accuracy,
    sign_agreement,
    upper_pairs,
    with_judgments,
)

Estimator = Callable[[np.ndarray], Estimates]


@dataclass(frozen=True)
class Simulation:
    """Outcome of :func:`simulate`: per-iteration log, the order of judgments, final pairs."""

    log: pd.DataFrame  # iteration, judgments, confidence, min_confidence, accuracy, tau
    order: np.ndarray  # pair positions in the order they were judged
    pairs: pd.DataFrame  # final pair table with a ``correct`` column
    stopped: bool  # the target was reached
    confidences: np.ndarray  # iterations × system pairs (A < B): stated confidence
    correct: np.ndarray  # iterations × system pairs: sign_agreement (1 right, ½ a tie, 0 wrong)

    def first_reaching(self, target: float) -> int | None:
        """The first iteration whose confidence in the ranking reached ``target``."""
        hits = np.flatnonzero(self.log["confidence"].to_numpy() >= target)
        return int(hits[0]) if hits.size else None

    def calibration(self, iterations: slice | int = slice(None)) -> pd.DataFrame:
        """:func:`calibration_table` of the pairs at one iteration, or pooled over a slice."""
        return calibration_table(
            self.confidences[iterations].ravel(), self.correct[iterations].ravel()
        )

    def at(self, judgments: int) -> pd.Series:
        """The log row in force after ``judgments`` judgments (the last one not past it)."""
        rows = self.log[self.log["judgments"] <= judgments]
        return rows.iloc[-1]


def simulate(
    col: Collection,
    truth: np.ndarray,
    estimator: Estimator,
    selector: Selector,
    scale: Scale,
    target: float = 0.95,
    rule: Literal["mean", "min"] = "mean",
    delta: float = 0.0,
    max_judgments: int | None = None,
    stop_at_target: bool = True,
    initial: np.ndarray | None = None,
    progress: Callable[[int], None] | None = None,
) -> Simulation:
    """Run MTC against a complete oracle ``truth`` (gain of every pair; the MTC paper §5).

    Each iteration estimates all gains, logs the confidence in the ranking and the accuracy
    and τ against the ranking under all judgments, stops when the confidence reaches
    ``target`` (unless ``stop_at_target`` is false) or ``max_judgments`` is reached, and
    otherwise judges the pairs the selector returns. ``initial`` holds known gains (NaN =
    unjudged) to start from.
    """
    if np.isnan(truth).any():
        missing = col.pairs.iloc[int(np.flatnonzero(np.isnan(truth))[0])]
        raise InputError(
            f"judgments: the oracle lacks ({missing.query}, {missing.document}); "
            "simulation needs every retrieved pair judged"
        )
    full = pair_statistics(col, with_judgments(truth, truth, truth), scale).mean
    gains = np.full(col.n_pairs, np.nan) if initial is None else initial.copy()
    limit = col.n_pairs if max_judgments is None else max_judgments
    order: list[np.ndarray] = []
    records, confidences, correct = [], [], []
    a, b = upper_pairs(col.n_systems)
    reached = False
    for iteration in range(col.n_pairs + 1):
        est = estimator(gains)
        stats = pair_statistics(col, est, scale)
        pair_conf = stats.confidence(delta)[a, b]
        conf = float(pair_conf.mean() if rule == "mean" else pair_conf.min())
        accuracy, tau = sign_accuracy(stats, full)
        done = int(est.judged.sum())
        confidences.append(pair_conf)
        correct.append(sign_agreement(stats.diff[a, b], full[a] - full[b]))
        records.append((iteration, done, conf, float(pair_conf.min()), accuracy, tau))
        if progress is not None:
            progress(done)
        reached = reached or conf >= target
        if (reached and stop_at_target) or done >= limit or est.judged.all():
            break
        batch = selector(est, stats)[: limit - done]
        if batch.size == 0:
            break
        gains[batch] = truth[batch]
        order.append(batch)
    log = pd.DataFrame(
        records,
        columns=["iteration", "judgments", "confidence", "min_confidence", "accuracy", "tau"],
    )
    pairs = pair_table(col, stats, delta)
    pairs["correct"] = correct[-1]
    done_order = np.concatenate(order) if order else np.array([], dtype=int)
    return Simulation(log, done_order, pairs, reached, np.array(confidences), np.array(correct))
