"""The MTC commands as library calls on plain objects: the inputs read from files, the
estimator, what to judge next (with its level HITs), estimates with intervals, a simulation
against complete judgments, and training a gain model."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError
from crowdprefs.evaluation.mtc.collection import (
    MAX_GAIN,
    Collection,
    PairMetadata,
    Scale,
    build_collection,
    gains_vector,
    pair_metadata,
    read_metadata,
)
from crowdprefs.evaluation.mtc.effects import SystemEffects
from crowdprefs.evaluation.mtc.estimators import (
    FittedEstimator,
    GainEstimator,
    JudgeEstimator,
    OutputEstimator,
    UniformEstimator,
)
from crowdprefs.evaluation.mtc.selection import make_selector
from crowdprefs.evaluation.mtc.simulation import Simulation, simulate
from crowdprefs.evaluation.mtc.statistics import (
    pair_statistics,
    pair_table,
    ranking_confidence,
    system_table,
)
from crowdprefs.evaluation.mtc.trained import (
    TRAINED_FEATURES,
    GainModel,
    TrainedEstimator,
    train_gain_model,
    trained_features,
)
from crowdprefs.files import Output, OutputFolder, read_text, save_figure, write_atomic
from crowdprefs.hits.render import LEVEL_SCALES, render_level_hit
from crowdprefs.io import read_levels, read_runs
from crowdprefs.progress import make_progress

Rule = Literal["mean", "min"]


class MissingInput(InputError):
    """A step needs an input that was not given; ``what`` names it (``metadata``, ``model``)."""

    def __init__(self, message: str, what: str) -> None:
        super().__init__(message)
        self.what = what


# --------------------------------------------------------------------------- inputs


@dataclass(frozen=True, eq=False)
class Inputs:
    """A collection with its judged gains (NaN = unjudged) and document metadata, if any."""

    col: Collection
    gains: np.ndarray
    meta: PairMetadata | None
    scale: Scale


def check_scale(name: str) -> Scale:
    """``name`` as a :data:`Scale` (fine or broad)."""
    if name not in MAX_GAIN:
        raise InputError(f"unknown scale {name!r}; choose fine or broad")
    return name  # type: ignore[return-value]


def check_rule(name: str) -> Rule:
    """``name`` as a ranking-confidence rule: the mean over system pairs, or their minimum."""
    if name not in ("mean", "min"):
        raise InputError(f"unknown rule {name!r}; choose mean or min")
    return name  # type: ignore[return-value]


def load_inputs(
    runs: Path,
    judgments: Path | None = None,
    metadata: Path | None = None,
    scale: str = "fine",
    cutoff: int | None = None,
) -> Inputs:
    """Read the runs (``system query document`` or TREC), the level judgments (``query
    document gain`` or qrels) and the metadata (``document artist genre``) of a collection.

    The measure is AG@k with k the ``cutoff`` (each run cut to its first ``cutoff`` documents;
    at most the runs' depth), else the runs' depth (the most documents of a system on a query).
    """
    sc = check_scale(scale)
    ranked = read_runs(runs)
    if cutoff is not None:
        depth = int(ranked.groupby(["system", "query"], sort=False).size().max())
        if not 1 <= cutoff <= depth:
            raise InputError(
                f"the cutoff must lie in 1..{depth} (the runs' depth: the most documents of a "
                f"system on a query), got {cutoff}"
            )
        ranked = ranked.groupby(["system", "query"], sort=False).head(cutoff)
    col = build_collection(ranked)
    gains = gains_vector(col, read_levels(judgments) if judgments else None, sc)
    meta = pair_metadata(col, read_metadata(metadata)) if metadata else None
    return Inputs(col, gains, meta, sc)


def read_gain_model(path: Path) -> GainModel:
    """The :class:`GainModel` saved at ``path`` by :func:`train_model`."""
    if not path.exists():
        raise InputError(f"{path}: no such file")
    return GainModel.from_json(read_text(path, "model file")[0], str(path))


# --------------------------------------------------------------------------- estimator

ESTIMATORS = ("auto", "uniform", "output", "judge", "fitted", "trained")


@dataclass(frozen=True)
class Choice:
    """The estimator used and why (``auto`` resolved by what was given)."""

    name: str
    reason: str


#: Why ``auto`` takes each estimator: what it measured on new systems and new queries.
WHY = {
    "trained": "a trained gain model was given: on new systems and new queries it reached its "
    "stop after half the judgments of judge, as accurate after 120 judgments",
    "judge": "no trained gain model was given: with document metadata on the Fine scale it is "
    "the most accurate after 120 judgments on new systems and queries of the estimators that "
    "need no model",
    "fitted": "neither a trained gain model nor document metadata on the Fine scale was given: "
    "it learns the gains from the judgments alone",
}


def choose_estimator(
    name: str, scale: Scale, meta: PairMetadata | None, model: GainModel | None
) -> Choice:
    """``name``, or for ``auto``: ``trained`` with a model, else ``judge`` with metadata on the
    Fine scale, else ``fitted``, as measured on new systems and new queries
    (``benchmarks/mtc_transfer.py``, 48 splits of MIREX 2011): the trained model reached its
    stop after 0.50× the judgments of judge (paired standard error 0.05×), honest in every
    split, with accuracy after 120 judgments +0.003 ± 0.007; judge was the most accurate after
    120 of the estimators that need no model (fitted −0.022 ± 0.008, output −0.002 ± 0.005,
    uniform −0.089 ± 0.012)."""
    if name not in ESTIMATORS:
        raise InputError(f"unknown estimator {name!r}; choose one of {', '.join(ESTIMATORS)}")
    if name != "auto":
        return Choice(name, "asked for")
    if model is not None:
        return Choice("trained", WHY["trained"])
    if meta is not None and scale == "fine":
        return Choice("judge", WHY["judge"])
    return Choice("fitted", WHY["fitted"])


def make_estimator(
    name: str,
    col: Collection,
    scale: Scale = "fine",
    meta: PairMetadata | None = None,
    effects: bool = True,
    seed: int = 0,
    model: GainModel | None = None,
) -> GainEstimator:
    """The estimator ``name`` (one of :data:`ESTIMATORS`, ``auto`` by :func:`choose_estimator`),
    wrapped in :class:`SystemEffects` when ``effects`` (per-system error covariance from the
    judgments so far); ``trained`` applies ``model``, learning the per-system errors of the
    new systems from the judgments when ``effects``."""
    name = choose_estimator(name, scale, meta, model).name
    if name in ("output", "judge", "trained") and meta is None:
        raise MissingInput(
            f"estimator {name!r} needs document metadata (document artist genre)", "metadata"
        )
    if name == "trained":
        if model is None:
            raise MissingInput("estimator 'trained' needs a trained gain model", "model")
        if model.scale != scale:
            raise InputError(f"the model is for the {model.scale} scale, not {scale}")
        return TrainedEstimator(col, trained_features(col, meta), model, effects=effects)
    if name == "uniform":
        base: GainEstimator = UniformEstimator(col, scale)
    elif name == "output":
        base = OutputEstimator(col, meta, scale)
    elif name == "judge":
        base = JudgeEstimator(col, meta, scale)
    else:
        base = FittedEstimator(col, scale, meta, seed=seed)
    return SystemEffects(base, col, scale) if effects else base


@dataclass(frozen=True)
class Setup:
    """The estimator a workflow uses: its choice, the estimator, and a note when a trained
    model meets features outside its training range."""

    choice: Choice
    estimator: GainEstimator
    note: str | None


def set_up(
    inputs: Inputs, name: str, model: GainModel | None, effects: bool, seed: int = 0
) -> Setup:
    """:func:`choose_estimator` and :func:`make_estimator` on ``inputs``, with its note."""
    choice = choose_estimator(name, inputs.scale, inputs.meta, model)
    estimator = make_estimator(
        choice.name, inputs.col, inputs.scale, inputs.meta, effects, seed, model
    )
    return Setup(choice, estimator, clipped_note(estimator))


def clipped_note(estimator: GainEstimator) -> str | None:
    """For a trained model applied to features outside its training range, which ones and on
    how many pairs (they are clipped to the range); None otherwise."""
    if not isinstance(estimator, TrainedEstimator) or not estimator.outside.any():
        return None
    counts = estimator.outside.sum(axis=0)
    named = ", ".join(
        f"{feature} {count}" for feature, count in zip(TRAINED_FEATURES, counts, strict=True)
        if count
    )  # fmt: skip
    return (
        f"{int(estimator.outside.any(axis=1).sum())} of {len(estimator.outside)} pairs have "
        f"features outside the model's training range ({named} pairs), clipped to it; the "
        "model's errors on new systems were measured with the same clipping"
    )


# --------------------------------------------------------------------------- next


def check_clip_pattern(pattern: str) -> str:
    """``pattern`` if it is a clip URL pattern whose only field is ``{id}``."""
    try:
        pattern.format(id="clip")
    except (AttributeError, KeyError, IndexError, ValueError) as error:
        raise InputError(
            f"clip URL pattern {pattern!r} is not a pattern with {{id}} as its only field ({error})"
        ) from None
    return pattern


def check_hit_scale(scale: str) -> str:
    """``scale`` if it names the question of a level HIT: fine, broad or both."""
    if scale not in LEVEL_SCALES:
        raise InputError(f"unknown HIT scale {scale!r}; choose {', '.join(LEVEL_SCALES)}")
    return scale


def clips_of(pattern: str, query: str, document: str) -> dict[str, str]:
    """The clip URLs of a level HIT: ``pattern`` with ``{id}`` the query's, the document's id."""
    return {"query": pattern.format(id=query), "document": pattern.format(id=document)}


@dataclass(frozen=True)
class NextBatch:
    """What :func:`next_batch` chose and wrote: the pairs, where, and the state before them."""

    pairs: pd.DataFrame  # query, document
    judged: int  # pairs judged so far
    total: int  # distinct retrieved pairs
    confidence: float  # confidence in the ranking now (mean over system pairs)
    hits: tuple[Path, ...]  # the level HITs written
    estimator: Choice  # the estimator used, and why
    note: str | None  # features outside a trained model's range, if any


def next_batch(
    inputs: Inputs,
    out: Path,
    *,
    estimator: str = "auto",
    model: GainModel | None = None,
    effects: bool = True,
    selection: str = "adaptive",
    batch: int = 20,
    batch_size: int = 1,
    target: float = 0.95,
    hits: Path | OutputFolder | None = None,
    audio_url: str = "{id}.mp3",
    hit_scale: str = "both",
) -> NextBatch:
    """Choose the ``batch`` pairs to judge next and write them to ``out`` (``query document``
    lines, tab-separated); with ``hits``, also one level-judgment HIT per pair there
    (``level_NNNN.html``, clips at ``audio_url`` with ``{id}`` the clip id, the question on
    ``hit_scale``). Every option is checked and every HIT rendered before anything is written.
    """
    check_clip_pattern(audio_url)
    check_hit_scale(hit_scale)
    if batch < 1 or batch_size < 1:
        raise InputError(
            f"the batch and the batch size must be 1 or more, got {batch} and {batch_size}"
        )
    if not 0 < target < 1:
        raise InputError(f"the target confidence must lie in (0, 1), got {target}")
    col, scale = inputs.col, inputs.scale
    setup = set_up(inputs, estimator, model, effects)
    est = setup.estimator(inputs.gains)
    stats = pair_statistics(col, est, scale)
    select = make_selector(selection, col, max(batch // batch_size, 1), batch_size, target)
    frame = col.pairs.iloc[select(est, stats)[:batch]][["query", "document"]]
    frame = frame.reset_index(drop=True)
    pages = [
        render_level_hit(query, document, clips_of(audio_url, query, document), hit_scale)
        for query, document in (frame.itertuples(index=False) if hits is not None else ())
    ]
    names = [f"level_{number:04d}.html" for number in range(1, len(pages) + 1)]
    folder = hits if hits is None or isinstance(hits, OutputFolder) else OutputFolder(hits)
    written = [] if folder is None else folder.files(names)
    write_atomic(out, frame.to_csv(sep="\t", header=False, index=False, lineterminator="\n"))
    for page, html in zip(written, pages, strict=True):
        page.write(html)
    return NextBatch(
        frame, int(est.judged.sum()), col.n_pairs, ranking_confidence(stats),
        tuple(page.path for page in written),
        setup.choice, setup.note,
    )  # fmt: skip


# --------------------------------------------------------------------------- estimate


@dataclass(frozen=True)
class Ranking:
    """:func:`estimate_ranking`'s result: systems with intervals, pairs with confidences."""

    systems: pd.DataFrame  # rank, system, ag, sd, low, high
    pairs: pd.DataFrame  # better, worse, delta, sd, confidence
    confidence: float  # confidence in the ranking under the rule asked for
    judged: int
    total: int
    k: int
    estimator: Choice
    note: str | None

    def to_dict(self) -> dict:
        """JSON-ready: estimator, why, k (of AG@k), judgments, pairs_total, confidence, systems,
        pairs."""
        return {
            "estimator": self.estimator.name,
            "k": self.k,
            "why": self.estimator.reason,
            "note": self.note,
            "judgments": self.judged,
            "pairs_total": self.total,
            "confidence": self.confidence,
            "systems": records(self.systems),
            "pairs": records(self.pairs),
        }


def records(frame: pd.DataFrame) -> list[dict]:
    """Rows as JSON-ready dicts (NaN as null, numpy scalars as Python numbers)."""
    return json.loads(frame.to_json(orient="records"))


def estimate_ranking(
    inputs: Inputs,
    *,
    estimator: str = "auto",
    model: GainModel | None = None,
    effects: bool = True,
    delta: float = 0.0,
    rule: str = "mean",
    level: float = 0.95,
) -> Ranking:
    """Systems ranked by estimated AG@k with ``level`` intervals and every pair's confidence
    in its sign (the MTC paper §3, §5.2), from the judgments at hand."""
    rule = check_rule(rule)
    if not 0 < level < 1:
        raise InputError(f"the level of the intervals must lie in (0, 1), got {level}")
    col, scale = inputs.col, inputs.scale
    setup = set_up(inputs, estimator, model, effects)
    est = setup.estimator(inputs.gains)
    stats = pair_statistics(col, est, scale)
    return Ranking(
        system_table(col, stats, level),
        pair_table(col, stats, delta),
        ranking_confidence(stats, delta, rule),
        int(est.judged.sum()),
        col.n_pairs,
        col.k,
        setup.choice,
        setup.note,
    )


# --------------------------------------------------------------------------- simulate


@dataclass(frozen=True)
class SimulationReport:
    """:func:`run_simulation`'s result: the simulation and how it was set up."""

    sim: Simulation
    estimator: Choice
    note: str | None  # features outside a trained model's range; --compat's overconfidence
    selection: str
    effects: bool
    batches: int
    batch_size: int
    target: float
    total: int

    @property
    def stop(self) -> int:
        """The iteration the run stopped at: the first reaching the target, else the last."""
        reached = self.sim.first_reaching(self.target)
        return len(self.sim.log) - 1 if reached is None else reached

    @property
    def reached(self) -> bool:
        return self.sim.first_reaching(self.target) is not None

    @property
    def end(self) -> pd.Series:
        return self.sim.log.iloc[self.stop]

    def to_dict(self) -> dict:
        """JSON-ready: the setup, the numbers at the stop, the log and both calibrations."""
        end = self.end
        return {
            "estimator": self.estimator.name,
            "why": self.estimator.reason,
            "note": self.note,
            "selection": self.selection,
            "effects": self.effects,
            "batches": self.batches,
            "batch_size": self.batch_size,
            "target": self.target,
            "reached": self.reached,
            "judgments": int(end["judgments"]),
            "share": float(end["judgments"]) / self.total,
            "confidence": float(end["confidence"]),
            "accuracy": float(end["accuracy"]),
            "tau": float(end["tau"]),
            "log": records(self.sim.log),
            "calibration": records(self.sim.calibration(self.stop)),
            "calibration_pooled": records(self.sim.calibration(slice(0, self.stop + 1))),
        }


def run_simulation(
    inputs: Inputs,
    *,
    estimator: str = "auto",
    model: GainModel | None = None,
    effects: bool = True,
    selection: str = "adaptive",
    batches: int = 20,
    batch_size: int = 1,
    compat: bool = False,
    target: float = 0.95,
    rule: str = "mean",
    delta: float = 0.0,
    max_judgments: int | None = None,
    keep_going: bool = False,
    progress: bool = False,
) -> SimulationReport:
    """Simulate MTC with ``inputs.gains`` as the complete oracle (:func:`simulate`).

    ``compat`` reproduces the reference tool (reference selection, no per-system effects),
    overconfidence included. A ``trained`` model is measured the way it is used only when it
    was trained on other systems and other queries. ``progress`` shows a bar on stderr.
    """
    rule = check_rule(rule)
    col, truth, scale = inputs.col, inputs.gains, inputs.scale
    if compat:
        selection, effects = "reference", False
    setup = set_up(inputs, estimator, model, effects)
    est = setup.estimator
    select = make_selector(selection, col, batches, batch_size, target)
    settings = dict(
        target=target,
        rule=rule,
        delta=delta,
        max_judgments=max_judgments,
        stop_at_target=not keep_going,
    )
    if progress:
        with make_progress() as bar:
            task = bar.add_task("judging", total=max_judgments or col.n_pairs)
            sim = simulate(
                col, truth, est, select, scale, **settings,
                progress=lambda done: bar.update(task, completed=done),
            )  # fmt: skip
    else:
        sim = simulate(col, truth, est, select, scale, **settings)
    note = setup.note
    if compat:
        warning = (
            "the reference tool's behaviour (compat) stops overconfidently on new systems: "
            "the confidence it states may not be reached"
        )
        note = warning if note is None else f"{note}; {warning}"
    return SimulationReport(
        sim, setup.choice, note, selection, effects, batches, batch_size, target, col.n_pairs,
    )  # fmt: skip


def plot_simulation(log: pd.DataFrame, path: Path | Output, title: str) -> None:
    """A figure (PNG, PDF or SVG, by the extension) of the accuracy and the confidence in the
    ranking against judgments."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 4))
    axis.plot(log["judgments"], log["accuracy"], label="accuracy")
    axis.plot(log["judgments"], log["confidence"], label="confidence (mean)")
    axis.set_xlabel("judgments")
    axis.set_ylim(0.5, 1.0)
    axis.set_title(title)
    axis.grid(alpha=0.3)
    axis.legend()
    try:
        save_figure(figure, path, dpi=110, bbox_inches="tight")
    finally:
        plt.close(figure)


# --------------------------------------------------------------------------- train


def train_model(
    inputs: Inputs, out: Path, system_folds: int = 3, query_folds: int = 2
) -> GainModel:
    """Train a :class:`GainModel` on ``inputs`` (judgments and metadata) and write it to
    ``out`` (JSON). Its errors on new systems and queries are measured on ``system_folds`` ×
    ``query_folds`` held-out blocks of the collection (:func:`train_gain_model`)."""
    if system_folds < 2 or query_folds < 2:
        raise InputError(
            f"system and query folds must be at least 2 (got {system_folds}, {query_folds})"
        )
    if inputs.meta is None:
        raise MissingInput("training a gain model needs document metadata", "metadata")
    model = train_gain_model(
        inputs.col, inputs.meta, inputs.gains, inputs.scale,
        system_folds=system_folds, query_folds=query_folds,
    )  # fmt: skip
    write_atomic(out, model.to_json() + "\n")
    return model
