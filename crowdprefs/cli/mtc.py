"""``crowdprefs mtc``: Minimal Test Collections (what to judge next, estimates, simulation)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console, err_console
from crowdprefs.errors import InputError

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from crowdprefs.evaluation import mtc

mtc_app = typer.Typer(
    help="Minimal Test Collections: rank systems by AG@k with few level judgments.",
    no_args_is_help=True,
)
app.add_typer(mtc_app, name="mtc")

Runs = Annotated[
    Path, typer.Option("--runs", help="Runs: 'system query document' or TREC runs (file/folder).")
]
Metadata = Annotated[
    Path | None,
    typer.Option("--metadata", help="'document artist genre' lines (needed by output/judge)."),
]
ScaleOpt = Annotated[str, typer.Option("--scale", help="Gain scale: fine (0-100) or broad (0-2).")]
EstimatorOpt = Annotated[
    str,
    typer.Option(
        "--estimator", help="Gain estimator: uniform, output, judge, fitted or trained (--model)."
    ),
]
ModelOpt = Annotated[
    Path | None,
    typer.Option("--model", help="Gain model of `mtc train` (for --estimator trained)."),
]
EffectsOpt = Annotated[
    bool,
    typer.Option(
        "--effects/--no-effects",
        help="Per-system random effects: correlated errors within a system (honest variances).",
    ),
]
TargetOpt = Annotated[float, typer.Option("--target", help="Target confidence in the ranking.")]
DeltaOpt = Annotated[
    float, typer.Option("--delta", help="Minimum effect δ (AG@k units, 0-1) for confidences.")
]
RuleOpt = Annotated[
    str, typer.Option("--rule", help="Ranking confidence: mean over pairs, or min (all pairs).")
]


def _scale(name: str) -> mtc.Scale:
    from crowdprefs.evaluation import mtc

    if name not in mtc.MAX_GAIN:
        raise InputError(f"unknown scale {name!r}; choose fine or broad")
    return name  # type: ignore[return-value]


def _rule(name: str) -> str:
    if name not in ("mean", "min"):
        raise InputError(f"unknown rule {name!r}; choose mean or min")
    return name


def _load(
    runs: Path, judgments: Path | None, metadata: Path | None, scale: mtc.Scale
) -> tuple[mtc.Collection, np.ndarray, mtc.PairMetadata | None]:
    from crowdprefs.evaluation import mtc
    from crowdprefs.io import read_levels, read_runs

    col = mtc.build_collection(read_runs(runs))
    gains = mtc.gains_vector(col, read_levels(judgments) if judgments else None, scale)
    meta = mtc.pair_metadata(col, mtc.read_metadata(metadata)) if metadata else None
    return col, gains, meta


def _model(path: Path | None) -> mtc.GainModel | None:
    from crowdprefs.evaluation import mtc

    if path is None:
        return None
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    return mtc.GainModel.from_json(path.read_text(encoding="utf-8", errors="replace"), str(path))


def _records(frame: pd.DataFrame) -> list[dict]:
    """Rows as JSON-ready dicts (NaN as null, numpy scalars as Python numbers)."""
    return json.loads(frame.to_json(orient="records"))


def _frame_table(frame: pd.DataFrame, title: str) -> Table:
    table = Table(title=title)
    for column in frame.columns:
        table.add_column(str(column), justify="left" if frame[column].dtype == object else "right")
    for row in frame.itertuples(index=False):
        table.add_row(
            *(
                f"{value:.4f}" if isinstance(value, float) and not math.isnan(value) else str(value)
                for value in row
            )
        )
    return table


@mtc_app.command("next")
def next_(
    runs: Runs,
    out: Annotated[Path, typer.Option("--out", help="Where to write the pairs to judge next.")],
    judgments: Annotated[
        Path | None, typer.Option("--judgments", help="Level judgments so far (query doc gain).")
    ] = None,
    metadata: Metadata = None,
    scale: ScaleOpt = "fine",
    estimator: EstimatorOpt = "judge",
    model: ModelOpt = None,
    effects: EffectsOpt = True,
    selection: Annotated[
        str, typer.Option("--selection", help="adaptive, or reference (static c·(S−c)).")
    ] = "adaptive",
    batch: Annotated[int, typer.Option("--batch", help="How many pairs to judge next.")] = 20,
    batch_size: Annotated[
        int, typer.Option("--batch-size", help="Pairs per query chunk (1 = global choice).")
    ] = 1,
    target: TargetOpt = 0.95,
    hits: Annotated[
        Path | None,
        typer.Option("--hits", help="Also write one level-judgment HIT (HTML) per pair here."),
    ] = None,
    audio_url: Annotated[
        str, typer.Option("--audio-url", help="Clip URL pattern for the HITs; {id} = clip id.")
    ] = "{id}.mp3",
    hit_scale: Annotated[
        str, typer.Option("--hit-scale", help="Question in the HITs: fine, broad or both.")
    ] = "both",
) -> None:
    """Write the query–candidate pairs to judge next ('query document' lines), optionally HITs."""
    from crowdprefs.evaluation import mtc
    from crowdprefs.files import write_atomic
    from crowdprefs.hits.render import LEVEL_SCALES, render_level_hit

    sc = _scale(scale)
    if hit_scale not in LEVEL_SCALES:  # checked before anything is written
        raise InputError(f"unknown --hit-scale {hit_scale!r}; choose {', '.join(LEVEL_SCALES)}")
    try:
        audio_url.format(id="clip")
    except (AttributeError, KeyError, IndexError, ValueError) as error:
        raise InputError(
            f"--audio-url {audio_url!r} is not a pattern with {{id}} as its only field ({error})"
        ) from None
    col, gains, meta = _load(runs, judgments, metadata, sc)
    est = mtc.make_estimator(estimator, col, sc, meta, effects, model=_model(model))(gains)
    stats = mtc.pair_statistics(col, est, sc)
    select = mtc.make_selector(selection, col, max(batch // batch_size, 1), batch_size, target)
    chosen = select(est, stats)[:batch]
    frame = col.pairs.iloc[chosen][["query", "document"]].reset_index(drop=True)
    write_atomic(out, frame.to_csv(sep="\t", header=False, index=False, lineterminator="\n"))
    if hits is not None:
        hits.mkdir(parents=True, exist_ok=True)
        for number, row in enumerate(frame.itertuples(index=False), start=1):
            clips = {
                "query": audio_url.format(id=row.query),
                "document": audio_url.format(id=row.document),
            }
            html = render_level_hit(row.query, row.document, clips, hit_scale)
            write_atomic(hits / f"level_{number:04d}.html", html)
    confidence = mtc.ranking_confidence(stats)
    err_console.print(
        f"{len(frame)} pairs to judge written to {out} (judged so far {int(est.judged.sum())} of "
        f"{col.n_pairs}; confidence in the ranking {confidence:.4f})"
    )


@mtc_app.command()
def estimate(
    runs: Runs,
    judgments: Annotated[
        Path | None, typer.Option("--judgments", help="Level judgments so far (query doc gain).")
    ] = None,
    metadata: Metadata = None,
    scale: ScaleOpt = "fine",
    estimator: EstimatorOpt = "judge",
    model: ModelOpt = None,
    effects: EffectsOpt = True,
    delta: DeltaOpt = 0.0,
    rule: RuleOpt = "mean",
    level: Annotated[float, typer.Option("--level", help="Level of the intervals.")] = 0.95,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Rank systems by estimated AG@k with intervals and per-pair confidences."""
    from crowdprefs.evaluation import mtc

    sc = _scale(scale)
    col, gains, meta = _load(runs, judgments, metadata, sc)
    est = mtc.make_estimator(estimator, col, sc, meta, effects, model=_model(model))(gains)
    stats = mtc.pair_statistics(col, est, sc)
    systems = mtc.system_table(col, stats, level)
    pairs = mtc.pair_table(col, stats, delta)
    confidence = mtc.ranking_confidence(stats, delta, _rule(rule))
    if as_json:
        payload = {
            "judgments": int(est.judged.sum()),
            "pairs_total": col.n_pairs,
            "confidence": confidence,
            "systems": _records(systems),
            "pairs": _records(pairs),
        }
        console.print_json(json.dumps(payload))
        return
    console.print(_frame_table(systems, f"AG@{col.k} estimates ({level:.0%} intervals)"))
    console.print(_frame_table(pairs, "System pairs"))
    console.print(
        f"judged {int(est.judged.sum())} of {col.n_pairs}; confidence in the ranking "
        f"({rule}) {confidence:.4f}"
    )


def _plot(log: pd.DataFrame, path: Path, title: str) -> None:
    import matplotlib

    from crowdprefs.files import atomic_path

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
        with atomic_path(path) as temporary:
            figure.savefig(temporary, dpi=110, bbox_inches="tight")
    finally:
        plt.close(figure)


@mtc_app.command()
def simulate(
    runs: Runs,
    judgments: Annotated[
        Path, typer.Option("--judgments", help="ALL judgments (the oracle): query doc gain.")
    ],
    metadata: Metadata = None,
    scale: ScaleOpt = "fine",
    estimator: EstimatorOpt = "judge",
    model: ModelOpt = None,
    effects: EffectsOpt = True,
    selection: Annotated[
        str, typer.Option("--selection", help="adaptive, or reference (static c·(S−c)).")
    ] = "adaptive",
    batches: Annotated[
        int, typer.Option("--batches", help="Chunks judged per iteration (b).")
    ] = 20,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Pairs per query chunk (n).")] = 1,
    compat: Annotated[
        bool,
        typer.Option(
            "--compat",
            help="Reproduce the reference tool: reference selection, no random effects.",
        ),
    ] = False,
    target: TargetOpt = 0.95,
    rule: RuleOpt = "mean",
    delta: DeltaOpt = 0.0,
    max_judgments: Annotated[
        int | None,
        typer.Option("--max-judgments", help="Stop after this many judgments at the latest."),
    ] = None,
    keep_going: Annotated[
        bool, typer.Option("--keep-going", help="Do not stop at the target (draw the curve).")
    ] = False,
    plot: Annotated[
        Path | None, typer.Option("--plot", help="PNG of accuracy and confidence vs judgments.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Simulate MTC against complete judgments: judgments needed, accuracy, τ, calibration."""
    from crowdprefs.evaluation import mtc
    from crowdprefs.progress import make_progress

    sc = _scale(scale)
    col, truth, meta = _load(runs, judgments, metadata, sc)
    if compat:
        selection, effects = "reference", False
    gain_model = _model(model)
    cross_fitted = estimator == "trained" and gain_model is None and meta is not None
    if cross_fitted:
        est: mtc.GainEstimator = mtc.cross_fitted_estimator(
            col, mtc.trained_features(col, meta), truth, sc, effects=effects
        )
        err_console.print(
            "trained model cross-fitted by query folds on the oracle's judgments: each query's "
            "gains come from a model trained on the other folds' queries only"
        )
    else:
        est = mtc.make_estimator(estimator, col, sc, meta, effects, model=gain_model)
    select = mtc.make_selector(selection, col, batches, batch_size, target)
    limit = col.n_pairs if max_judgments is None else max_judgments
    with make_progress() as progress:
        task = progress.add_task("judging", total=limit)
        sim = mtc.simulate(
            col,
            truth,
            est,
            select,
            sc,
            target=target,
            rule=_rule(rule),  # type: ignore[arg-type]
            delta=delta,
            max_judgments=max_judgments,
            stop_at_target=not keep_going,
            progress=lambda done: progress.update(task, completed=done),
        )
    reached = sim.first_reaching(target)
    stop = len(sim.log) - 1 if reached is None else reached
    end = sim.log.iloc[stop]
    calibration = sim.calibration(stop)
    pooled = sim.calibration(slice(0, stop + 1))
    if plot is not None:
        _plot(sim.log, plot, f"MTC: {estimator}, {selection} selection")
    if as_json:
        payload = {
            "estimator": estimator,
            "cross_fitted": cross_fitted,
            "selection": selection,
            "effects": effects,
            "batches": batches,
            "batch_size": batch_size,
            "target": target,
            "reached": reached is not None,
            "judgments": int(end["judgments"]),
            "share": float(end["judgments"]) / col.n_pairs,
            "confidence": float(end["confidence"]),
            "accuracy": float(end["accuracy"]),
            "tau": float(end["tau"]),
            "log": _records(sim.log),
            "calibration": _records(calibration),
            "calibration_pooled": _records(pooled),
        }
        console.print_json(json.dumps(payload))
        return
    shown = sim.log if len(sim.log) <= 40 else sim.log.iloc[:: max(len(sim.log) // 30, 1)]
    console.print(_frame_table(shown, "Iterations"))
    console.print(_frame_table(calibration, "Accuracy versus confidence (pairs at the stop)"))
    console.print(
        _frame_table(pooled, "Accuracy versus confidence (pairs of every iteration to the stop)")
    )
    status = "reached" if reached is not None else "not reached"
    console.print(
        f"target {target} {status}: {int(end['judgments'])} judgments "
        f"({end['judgments'] / col.n_pairs:.1%}), confidence {end['confidence']:.4f}, "
        f"accuracy {end['accuracy']:.4f}, tau {end['tau']:.4f}"
    )


@mtc_app.command()
def train(
    runs: Runs,
    judgments: Annotated[
        Path, typer.Option("--judgments", help="Level judgments to train on (query doc gain).")
    ],
    metadata: Annotated[Path, typer.Option("--metadata", help="'document artist genre' lines.")],
    out: Annotated[Path, typer.Option("--out", help="Where to write the model (JSON).")],
    scale: ScaleOpt = "fine",
    folds: Annotated[
        int, typer.Option("--folds", help="Query folds of the cross-validated check.")
    ] = 5,
) -> None:
    """Train a gain model on a judged collection, for `--estimator trained --model` elsewhere.

    A cumulative logit on output-based features of documents and of the systems retrieving
    them (mtc.TRAINED_FEATURES), with the per-system error spread of its residuals. Prints a
    query-fold cross-validated check: RMSE and mean (gain − E)²/Var on held-out queries.
    """
    import numpy as np

    from crowdprefs.evaluation import mtc
    from crowdprefs.files import write_atomic

    sc = _scale(scale)
    if folds < 2:
        raise InputError(f"--folds must be at least 2 (got {folds})")
    col, gains, meta = _load(runs, judgments, metadata, sc)
    x = mtc.trained_features(col, meta)
    model = mtc.train_gain_model(col, x, gains, sc)
    held_out = mtc.cross_fitted_estimator(col, x, gains, sc, folds=folds)
    judged = ~np.isnan(gains)
    error = gains[judged] - held_out.mean[judged]
    write_atomic(out, model.to_json() + "\n")
    console.print(f"gain model on the {sc} scale, trained on {model.judgments} judgments")
    table = Table()
    table.add_column("feature")
    table.add_column("coefficient (per sd)", justify="right")
    for name, beta in zip(mtc.TRAINED_FEATURES, model.params, strict=False):
        table.add_row(name, f"{beta:+.3f}")
    console.print(table)
    console.print(
        f"per-system error sd: sigma {model.sigma:.3f}, tau {model.tau:.3f} (gain points); "
        f"variance scale {model.variance_scale:.3f}; "
        f"held-out queries ({folds} folds): RMSE {np.sqrt(np.mean(error**2)):.3f}, "
        f"mean (gain - E)^2/Var {np.mean(error**2 / held_out.var[judged]):.3f} (1 = calibrated)"
    )
    err_console.print(f"model written to {out}")
