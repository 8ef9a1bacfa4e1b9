"""The transfer study: every estimator on new systems and new queries, over random splits.

A gain model is trained on last year's judged collection and applied to next year's
submissions. Each split (:func:`~.collection.transfer_split`, seeded by its number) deals the
systems and the queries into disjoint halves: the ``trained`` model learns from the judgments
of one half of the systems on one half of the queries, and every estimator is simulated on the
*other* systems × the *other* queries, with that part's judgments as the oracle. No number comes
from a system or a query a model was fitted on.

Each split is one task of a :class:`~crowdprefs.parallel.Runner`; its only randomness is its
seed, so the study's numbers are the same, to the last bit, for any runner (the CPU times
aside, :data:`TIMING`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError
from crowdprefs.evaluation.mtc.collection import Collection, PairMetadata, Scale, transfer_split
from crowdprefs.evaluation.mtc.selection import make_selector
from crowdprefs.evaluation.mtc.simulation import simulate
from crowdprefs.evaluation.mtc.trained import TrainedEstimator, train_gain_model
from crowdprefs.evaluation.mtc.workflow import MissingInput, make_estimator
from crowdprefs.parallel import SERIAL, Runner

#: The estimators of the study: ``compat`` is the reference tool (L_judge, static weights, no
#: per-system effects); the others have per-system effects and adaptive selection.
TRANSFER_ESTIMATORS = ("trained", "judge", "compat", "fitted", "output", "uniform")
#: The default set: all but ``fitted``, the slow one.
DEFAULT_ESTIMATORS = ("trained", "judge", "compat", "output", "uniform")
#: The estimator every other one is compared with, split by split.
BASELINE = "judge"
#: Judgments after which the accuracy is compared; pairs judged per iteration.
EARLY = 120
BATCHES = 20
#: The columns that time the work (CPU seconds of the process that ran the split).
TIMING = ("seconds", "training")
#: One row per split × estimator. ``outside``: share of pairs with features outside the trained
#: model's range (``trained`` only); ``training`` … ``rmse``: the split's trained model (NaN
#: when ``trained`` is not studied); ``early``: accuracy after :data:`EARLY` judgments;
#: ``judgments``, ``accuracy``, ``stated``: at the stop (the confidence first reaching the
#: target), ``reached``: 1 when the target was reached, ``gap``: stated − realised accuracy.
COLUMNS = (
    "split", "estimator", "seconds", "outside", "training", "sigma", "tau", "eta", "scale",
    "omega", "rmse", "pairs", "early", "judgments", "accuracy", "stated", "reached", "gap",
)  # fmt: skip

_NEEDS_METADATA = {"trained", "judge", "compat", "output"}


@dataclass(frozen=True, eq=False)
class _Study:
    """What every split shares (sent once to each worker)."""

    col: Collection
    meta: PairMetadata | None
    truth: np.ndarray
    scale: Scale
    estimators: tuple[str, ...]
    target: float


def check_estimators(names: Sequence[str], metadata: bool) -> tuple[str, ...]:
    """``names`` without repeats, each one of :data:`TRANSFER_ESTIMATORS` and, unless
    ``metadata`` is given, none that needs document metadata."""
    chosen = tuple(dict.fromkeys(names))
    if not chosen:
        raise InputError("no estimator to study")
    for name in chosen:
        if name not in TRANSFER_ESTIMATORS:
            raise InputError(
                f"unknown estimator {name!r}; choose among {', '.join(TRANSFER_ESTIMATORS)}"
            )
    lacking = [name for name in chosen if name in _NEEDS_METADATA]
    if lacking and not metadata:
        raise MissingInput(
            f"estimator {lacking[0]!r} needs document metadata (document artist genre)",
            "metadata",
        )
    return chosen


def transfer_study(
    col: Collection,
    meta: PairMetadata | None,
    truth: np.ndarray,
    scale: Scale,
    splits: int,
    first: int = 0,
    estimators: Sequence[str] = DEFAULT_ESTIMATORS,
    *,
    target: float = 0.95,
    runner: Runner = SERIAL,
    on_done: Callable[[int], None] | None = None,
) -> pd.DataFrame:
    """The study on the splits seeded ``first`` … ``first + splits − 1``: one row per split ×
    estimator (:data:`COLUMNS`), in that order; each split a task of ``runner``, ``on_done``
    called with the splits done. ``truth`` is the gain of every pair (the oracle)."""
    if splits < 1:
        raise InputError(f"the number of splits must be at least 1, got {splits}")
    if first < 0:
        raise InputError(f"the first split's seed must be at least 0, got {first}")
    if not 0 < target < 1:
        raise InputError(f"the target confidence must lie strictly between 0 and 1, got {target}")
    if col.n_systems < 3 or col.n_queries < 2:
        raise InputError(
            f"a transfer split needs at least 3 systems (2 to rank on new queries) and 2 "
            f"queries, got {col.n_systems} systems and {col.n_queries} queries"
        )
    if np.isnan(truth).any():
        missing = col.pairs.iloc[int(np.flatnonzero(np.isnan(truth))[0])]
        raise InputError(
            f"judgments: the oracle lacks ({missing.query}, {missing.document}); the study "
            "needs every retrieved pair judged"
        )
    study = _Study(col, meta, truth, scale, check_estimators(estimators, meta is not None), target)
    seeds = list(range(first, first + splits))
    rows = runner.map(_split, study, seeds, on_done)
    return pd.DataFrame([row for split in rows for row in split], columns=list(COLUMNS))


def _split(study: _Study, seed: int) -> list[dict]:
    """The rows of split ``seed``: train on one part, simulate every estimator on the other."""
    col, meta, truth, scale = study.col, study.meta, study.truth, study.scale
    (train_s, train_q), (test_s, test_q) = transfer_split(col, seed)
    test, test_pairs = col.subset(test_s, test_q)
    test_meta = None if meta is None else meta.take(test_pairs)
    test_truth = truth[test_pairs]
    model, trained = None, {}
    if "trained" in study.estimators:
        train, train_pairs = col.subset(train_s, train_q)
        start = time.process_time()
        model = train_gain_model(train, meta.take(train_pairs), truth[train_pairs], scale)
        trained = {
            "training": time.process_time() - start, "sigma": model.sigma, "tau": model.tau,
            "eta": model.eta, "scale": model.variance_scale, "omega": model.omega,
            "rmse": model.held_out_rmse,
        }  # fmt: skip
    rows = []
    for name in study.estimators:
        start = time.process_time()
        estimator = make_estimator(
            "judge" if name == "compat" else name, test, scale, test_meta,
            effects=name != "compat", model=model,
        )  # fmt: skip
        selection = "reference" if name == "compat" else "adaptive"
        numbers = _run(test, test_truth, estimator, selection, scale, study.target)
        outside = (
            float(estimator.outside.any(axis=1).mean())
            if isinstance(estimator, TrainedEstimator)
            else np.nan
        )
        rows.append(
            {"split": seed, "estimator": name, "seconds": time.process_time() - start,
             "outside": outside, **trained, "pairs": test.n_pairs, **numbers}
        )  # fmt: skip
    return rows


def _run(
    col: Collection, truth: np.ndarray, estimator, selection: str, scale: Scale, target: float
) -> dict[str, float]:
    """Simulate to the stop (and on to :data:`EARLY` judgments if it stops before)."""
    select = make_selector(selection, col, BATCHES, 1, target)
    sim = simulate(col, truth, estimator, select, scale, target=target)
    stop = sim.log.iloc[-1]
    if stop.judgments < EARLY:
        sim = simulate(
            col, truth, estimator, select, scale, target=target, stop_at_target=False,
            max_judgments=EARLY,
        )  # fmt: skip
    return {
        "early": float(sim.at(EARLY)["accuracy"]),
        "judgments": int(stop.judgments),
        "accuracy": float(stop.accuracy),
        "stated": float(stop.confidence),
        "reached": float(stop.confidence >= target),
        "gap": float(stop.confidence - stop.accuracy),
    }


def _paired(frame: pd.DataFrame, column: str, name: str, baseline: str) -> tuple[float, float]:
    """Mean and paired standard error over splits of ``name``'s ``column`` minus
    ``baseline``'s (NaN when the baseline is not in ``frame``)."""
    table = frame.pivot(index="split", columns="estimator", values=column)
    if baseline not in table:
        return np.nan, np.nan
    difference = (table[name] - table[baseline]).dropna()
    if difference.empty:
        return np.nan, np.nan
    return float(difference.mean()), float(difference.std(ddof=1) / np.sqrt(len(difference)))


def transfer_summary(frame: pd.DataFrame, baseline: str = BASELINE) -> pd.DataFrame:
    """Per estimator (rows, in :data:`TRANSFER_ESTIMATORS` order) over the splits of a
    :func:`transfer_study` frame: the means of ``early``, ``judgments``, ``accuracy``, ``gap``,
    ``reached`` and ``seconds``; ``worst`` accuracy at the stop; ``zero_stops`` (splits stopped
    before any judgment); ``ratio`` of judgments to the baseline's; and for ``early``,
    ``judgments`` and ``gap`` the paired difference to ``baseline`` over the same splits
    (``*_diff``) with its standard error (``*_se``; NaN for the baseline itself)."""
    rows = {}
    present = set(frame["estimator"])
    base = frame.loc[frame["estimator"] == baseline, "judgments"]
    base_judgments = float(base.mean()) if len(base) else np.nan
    for name in [n for n in TRANSFER_ESTIMATORS if n in present]:
        part = frame[frame["estimator"] == name]
        row = {
            "splits": int(part["split"].nunique()),
            "early": float(part["early"].mean()),
            "judgments": float(part["judgments"].mean()),
            "ratio": float(part["judgments"].mean() / base_judgments),
            "accuracy": float(part["accuracy"].mean()),
            "worst": float(part["accuracy"].min()),
            "gap": float(part["gap"].mean()),
            "reached": float(part["reached"].mean()),
            "zero_stops": int((part["judgments"] == 0).sum()),
            "seconds": float(part["seconds"].mean()),
        }
        for column in ("early", "judgments", "gap"):
            difference, error = (
                (np.nan, np.nan) if name == baseline else _paired(frame, column, name, baseline)
            )
            row |= {f"{column}_diff": difference, f"{column}_se": error}
        rows[name] = row
    summary = pd.DataFrame.from_dict(rows, orient="index")
    summary.index.name = "estimator"
    return summary
