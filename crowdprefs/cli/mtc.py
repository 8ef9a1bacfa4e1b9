"""``crowdprefs mtc``: Minimal Test Collections (what to judge next, estimates, simulation).

Each command parses its options, calls one function of :mod:`crowdprefs.evaluation.mtc` and
prints what it returns; the library (numpy, pandas, scipy) is imported inside the commands so
that the CLI starts without it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console, err_console, escape, print_json
from crowdprefs.cli.options import (
    MAX_CUTOFF,
    OUTPUT,
    Scheduler,
    StudyJobs,
    count,
    finite,
    renamed,
    seed_value,
)
from crowdprefs.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from crowdprefs.evaluation.mtc import Choice

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
    typer.Option(
        "--metadata",
        help="'document artist genre' lines (needed by the output, judge and trained estimators).",
    ),
]
OracleJudgments = Annotated[
    Path, typer.Option("--judgments", help="ALL judgments (the oracle): query doc gain.")
]
ScaleOpt = Annotated[str, typer.Option("--scale", help="Gain scale: fine (0-100) or broad (0-2).")]
EstimatorOpt = Annotated[
    str,
    typer.Option(
        "--estimator",
        help="Gain estimator: auto (trained with --model, else judge with --metadata on the "
        "Fine scale, else fitted), uniform, output, judge, fitted or trained.",
    ),
]
ModelOpt = Annotated[
    Path | None,
    typer.Option(
        "--model",
        help="Gain model of `mtc train` on other systems and queries (used by auto/trained).",
    ),
]
EffectsOpt = Annotated[
    bool,
    typer.Option(
        "--effects/--no-effects",
        help="Per-system errors: the errors of a system's documents are correlated (honest "
        "variances); a trained model learns them from the judgments.",
    ),
]
CutoffOpt = Annotated[
    int | None,
    typer.Option(
        "--cutoff",
        callback=count(1, MAX_CUTOFF),
        help="k of AG@k: each run's first k documents count (default: the runs' depth, the "
        "most documents of a system on a query).",
        show_default=False,
    ),
]
TargetOpt = Annotated[
    float, typer.Option("--target", help="Target confidence in the ranking.", parser=finite)
]
DeltaOpt = Annotated[
    float,
    typer.Option(
        "--delta", help="Minimum effect δ (AG@k units, 0-1) for confidences.", parser=finite
    ),
]
CombineOpt = Annotated[
    str,
    typer.Option(
        "--combine",
        help="How the pairs' confidences give the confidence in the ranking: mean over the "
        "pairs, or min (every pair at once).",
    ),
]
#: ``--rule`` names how a pair's answers give its verdict (init, plan, audit, replay)
RENAMED = renamed({"--rule": "--combine"})
SelectionOpt = Annotated[
    str, typer.Option("--selection", help="adaptive, or reference (static c·(S−c)).")
]

#: The option that gives each input a library step may find missing.
OPTION_OF = {"metadata": "--metadata FILE", "model": "--model FILE (written by `mtc train`)"}


@contextmanager
def _option_hints() -> Iterator[None]:
    """Name the option that supplies an input the library found missing."""
    from crowdprefs.evaluation.mtc import MissingInput

    try:
        yield
    except MissingInput as error:
        raise InputError(f"{error}: give {OPTION_OF[error.what]}") from None


def _flagged(flag: str, check: Callable[[str], str], value: str) -> None:
    """``check(value)``, its error prefixed with the option that gave the value."""
    try:
        check(value)
    except InputError as error:
        raise InputError(f"{flag}: {error}") from None


def _say_estimator(choice: Choice, note: str | None) -> None:
    """Which estimator is used and why, and any note on a trained model's features (stderr)."""
    err_console.print(f"estimator: {choice.name} ({escape(choice.reason)})")
    if note is not None:
        err_console.print(f"note: {escape(note)}")


def _model(path: Path | None):
    from crowdprefs.evaluation import mtc

    return None if path is None else mtc.read_gain_model(path)


def _frame_table(frame: pd.DataFrame, title: str) -> Table:
    table = Table(title=title)
    for column in frame.columns:
        table.add_column(str(column), justify="left" if frame[column].dtype == object else "right")
    for row in frame.itertuples(index=False):
        table.add_row(
            *(
                f"{value:.4f}"
                if isinstance(value, float) and not math.isnan(value)
                else escape(str(value))
                for value in row
            )
        )
    return table


@mtc_app.command("next")
def next_(
    runs: Runs,
    out: Annotated[
        Path, typer.Option("--output", "-o", help="Where to write the pairs to judge next.")
    ],
    judgments: Annotated[
        Path | None, typer.Option("--judgments", help="Level judgments so far (query doc gain).")
    ] = None,
    metadata: Metadata = None,
    scale: ScaleOpt = "fine",
    cutoff: CutoffOpt = None,
    estimator: EstimatorOpt = "auto",
    model: ModelOpt = None,
    effects: EffectsOpt = True,
    selection: SelectionOpt = "adaptive",
    batch: Annotated[
        int,
        typer.Option("--batch", callback=count(1, 100_000), help="How many pairs to judge next."),
    ] = 20,
    batch_size: Annotated[
        int,
        typer.Option(
            "--batch-size",
            callback=count(1, 10_000),
            help="Pairs per query chunk (1 = global choice).",
        ),
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
    from crowdprefs.files import OutputFolder, output

    _flagged("--hit-scale", mtc.check_hit_scale, hit_scale)  # before anything is read
    _flagged("--audio-url", mtc.check_clip_pattern, audio_url)
    read = {"--runs": runs, "--judgments": judgments, "--metadata": metadata, "--model": model}
    written = output(out, read)
    pages = None if hits is None else OutputFolder(hits, inputs=read)
    with _option_hints():
        inputs = mtc.load_inputs(runs, judgments, metadata, scale, cutoff)
        chosen = mtc.next_batch(
            inputs, written, estimator=estimator, model=_model(model), effects=effects,
            selection=selection, batch=batch, batch_size=batch_size, target=target, hits=pages,
            audio_url=audio_url, hit_scale=hit_scale,
        )  # fmt: skip
    _say_estimator(chosen.estimator, chosen.note)
    err_console.print(
        f"{len(chosen.pairs)} pairs to judge written to {escape(str(out))} (judged so far "
        f"{chosen.judged} of {chosen.total}; confidence in the ranking {chosen.confidence:.4f})"
    )


@mtc_app.command(cls=RENAMED)
def estimate(
    runs: Runs,
    judgments: Annotated[
        Path | None, typer.Option("--judgments", help="Level judgments so far (query doc gain).")
    ] = None,
    metadata: Metadata = None,
    scale: ScaleOpt = "fine",
    cutoff: CutoffOpt = None,
    estimator: EstimatorOpt = "auto",
    model: ModelOpt = None,
    effects: EffectsOpt = True,
    delta: DeltaOpt = 0.0,
    combine: CombineOpt = "mean",
    level: Annotated[
        float, typer.Option("--level", help="Level of the intervals.", parser=finite)
    ] = 0.95,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Rank systems by estimated AG@k with intervals and per-pair confidences."""
    from crowdprefs.evaluation import mtc

    with _option_hints():
        inputs = mtc.load_inputs(runs, judgments, metadata, scale, cutoff)
        ranking = mtc.estimate_ranking(
            inputs, estimator=estimator, model=_model(model), effects=effects, delta=delta,
            rule=combine, level=level,
        )  # fmt: skip
    if as_json:
        print_json(ranking.to_dict())
        return
    console.print(
        _frame_table(ranking.systems, f"AG@{ranking.k} estimates ({level:.0%} intervals)")
    )
    console.print(_frame_table(ranking.pairs, "System pairs"))
    console.print(
        f"judged {ranking.judged} of {ranking.total}; confidence in the ranking "
        f"({combine}) {ranking.confidence:.4f}"
    )


@mtc_app.command(cls=RENAMED)
def simulate(
    runs: Runs,
    judgments: OracleJudgments,
    metadata: Metadata = None,
    scale: ScaleOpt = "fine",
    cutoff: CutoffOpt = None,
    estimator: EstimatorOpt = "auto",
    model: ModelOpt = None,
    effects: EffectsOpt = True,
    selection: SelectionOpt = "adaptive",
    batches: Annotated[
        int,
        typer.Option(
            "--batches", callback=count(1, 100_000), help="Chunks judged per iteration (b)."
        ),
    ] = 20,
    batch_size: Annotated[
        int,
        typer.Option("--batch-size", callback=count(1, 10_000), help="Pairs per query chunk (n)."),
    ] = 1,
    compat: Annotated[
        bool,
        typer.Option(
            "--compat",
            help="Reproduce the reference tool: reference selection, no per-system errors "
            "(and its overconfident stops).",
        ),
    ] = False,
    target: TargetOpt = 0.95,
    combine: CombineOpt = "mean",
    delta: DeltaOpt = 0.0,
    max_judgments: Annotated[
        int | None,
        typer.Option(
            "--max-judgments",
            callback=count(1, 100_000_000),
            help="Stop after this many judgments at the latest.",
        ),
    ] = None,
    keep_going: Annotated[
        bool, typer.Option("--keep-going", help="Do not stop at the target (draw the curve).")
    ] = False,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot", help="Figure of accuracy and confidence vs judgments (PNG, PDF, SVG)."
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
) -> None:
    """Simulate MTC against complete judgments: judgments needed, accuracy, τ, calibration."""
    from crowdprefs.evaluation import mtc
    from crowdprefs.files import output

    figure = output(
        plot,
        {"--runs": runs, "--judgments": judgments, "--metadata": metadata, "--model": model},
        plot=True,
    )
    with _option_hints():
        inputs = mtc.load_inputs(runs, judgments, metadata, scale, cutoff)
        report = mtc.run_simulation(
            inputs, estimator=estimator, model=_model(model), effects=effects,
            selection=selection, batches=batches, batch_size=batch_size, compat=compat,
            target=target, rule=combine, delta=delta, max_judgments=max_judgments,
            keep_going=keep_going, progress=True,
        )  # fmt: skip
    _say_estimator(report.estimator, report.note)
    if figure is not None:
        title = f"MTC: {report.estimator.name}, {report.selection} selection"
        mtc.plot_simulation(report.sim.log, figure, title)
    if as_json:
        print_json(report.to_dict())
        return
    log, stop, end = report.sim.log, report.stop, report.end
    shown = log if len(log) <= 40 else log.iloc[:: max(len(log) // 30, 1)]
    console.print(_frame_table(shown, "Iterations"))
    console.print(
        _frame_table(report.sim.calibration(stop), "Accuracy versus confidence (pairs at the stop)")
    )
    console.print(
        _frame_table(
            report.sim.calibration(slice(0, stop + 1)),
            "Accuracy versus confidence (pairs of every iteration to the stop)",
        )
    )
    status = "reached" if report.reached else "not reached"
    console.print(
        f"target {target} {status}: {int(end['judgments'])} judgments "
        f"({end['judgments'] / report.total:.1%}), confidence {end['confidence']:.4f}, "
        f"accuracy {end['accuracy']:.4f}, tau {end['tau']:.4f}"
    )


@mtc_app.command()
def train(
    runs: Runs,
    judgments: Annotated[
        Path, typer.Option("--judgments", help="Level judgments to train on (query doc gain).")
    ],
    metadata: Annotated[Path, typer.Option("--metadata", help="'document artist genre' lines.")],
    out: Annotated[Path, typer.Option("--output", "-o", help="Where to write the model (JSON).")],
    scale: ScaleOpt = "fine",
    system_folds: Annotated[
        int,
        typer.Option(
            "--system-folds",
            callback=count(2, 100),
            help="System folds of the held-out measurement.",
        ),
    ] = 3,
    query_folds: Annotated[
        int,
        typer.Option(
            "--query-folds",
            callback=count(2, 100),
            help="Query folds of the held-out measurement.",
        ),
    ] = 2,
) -> None:
    """Train a gain model on a judged collection, for new systems and queries elsewhere.

    A cumulative logit on output-based features of documents and of the systems retrieving
    them, with the errors it makes on systems and queries it was not fitted on (measured on
    held-out system folds × query folds of this collection); use it with --model.
    """
    from crowdprefs.evaluation import mtc
    from crowdprefs.files import output

    written = output(out, {"--runs": runs, "--judgments": judgments, "--metadata": metadata})
    if system_folds < 2 or query_folds < 2:
        raise InputError(
            f"--system-folds and --query-folds must be at least 2 (got {system_folds}, "
            f"{query_folds})"
        )
    with _option_hints():
        inputs = mtc.load_inputs(runs, judgments, metadata, scale)
        model = mtc.train_model(inputs, written, system_folds, query_folds)
    console.print(f"gain model on the {model.scale} scale, trained on {model.judgments} judgments")
    table = Table()
    table.add_column("feature")
    table.add_column("coefficient (per sd)", justify="right")
    table.add_column("training range", justify="right")
    for name, beta, low, high in zip(
        mtc.TRAINED_FEATURES, model.params, model.low, model.high, strict=False
    ):
        table.add_row(name, f"{beta:+.3f}", f"{low:.3f} to {high:.3f}")
    console.print(table)
    console.print(
        f"on held-out systems and queries ({system_folds} system folds × {query_folds} query "
        f"folds): RMSE {model.held_out_rmse:.3f} gain points; per-system error sd sigma "
        f"{model.sigma:.3f}, tau {model.tau:.3f}, common shift omega {model.omega:.3f}; "
        f"per-query error sd eta {model.eta:.3f}; variance scale {model.variance_scale:.3f}"
    )
    err_console.print(f"model written to {escape(str(out))}")


@mtc_app.command()
def transfer(
    runs: Runs,
    judgments: OracleJudgments,
    metadata: Metadata = None,
    scale: ScaleOpt = "fine",
    splits: Annotated[
        int,
        typer.Option(
            "--splits",
            callback=count(1, 10_000),
            help="Random splits, seeded --first, --first + 1, …",
        ),
    ] = 48,
    first: Annotated[
        int, typer.Option("--first", callback=seed_value, help="Seed of the first split.")
    ] = 0,
    estimators: Annotated[
        list[str] | None,
        typer.Option(
            "--estimator",
            help="Estimator to study (repeat the option for several): trained, judge, compat "
            "(the reference tool), fitted, output or uniform (default: all but fitted, the slow "
            "one).",
            show_default=False,
        ),
    ] = None,
    target: TargetOpt = 0.95,
    csv_out: Annotated[
        Path | None,
        typer.Option(
            *OUTPUT,
            help="Also write one row per split and estimator to this CSV (without the CPU "
            "times: the same file for any --jobs).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    jobs: StudyJobs = None,
    scheduler: Scheduler = None,
) -> None:
    """Every estimator on new systems and new queries, over random splits of a judged collection.

    Each split deals the systems and the queries into disjoint halves: a gain model is trained
    on one half of the systems × one half of the queries (`mtc train`), and every estimator is
    simulated on the other systems × the other queries (`mtc simulate`, 20 judgments per
    iteration). Per estimator: accuracy after 120 judgments, judgments to the stop, accuracy and
    stated − realised there, each with its paired difference to judge over the same splits."""
    from crowdprefs.parallel import Runner

    runner = Runner.from_options(jobs, scheduler)
    from crowdprefs.evaluation import mtc
    from crowdprefs.evaluation.mtc.transfer import BASELINE, EARLY, TIMING
    from crowdprefs.files import output
    from crowdprefs.progress import make_progress

    out = output(csv_out, {"--runs": runs, "--judgments": judgments, "--metadata": metadata})
    with _option_hints():
        names = mtc.check_estimators(estimators or mtc.DEFAULT_ESTIMATORS, metadata is not None)
        inputs = mtc.load_inputs(runs, judgments, metadata, scale)
        with make_progress(transient=True) as progress:
            task = progress.add_task(f"transfer splits {runner.where}", total=splits)
            frame = mtc.transfer_study(
                inputs.col, inputs.meta, inputs.gains, inputs.scale, splits, first, names,
                target=target, runner=runner,
                on_done=lambda done: progress.update(task, completed=done),
            )  # fmt: skip
    if out is not None:
        from crowdprefs.io import csv_text

        out.write(csv_text(frame.drop(columns=list(TIMING))))
    summary = mtc.transfer_summary(frame)
    col = inputs.col
    systems, queries = col.n_systems - col.n_systems // 2, col.n_queries - col.n_queries // 2
    if as_json:
        print_json(
            {
                "splits": splits, "first": first, "target": target, "baseline": BASELINE,
                "early": EARLY, "systems": systems, "queries": queries,
                "summary": summary.reset_index().to_dict(orient="records"),
                "rows": frame.to_dict(orient="records"),
            }
        )  # fmt: skip
        return
    console.print(_transfer_table(summary, splits, first, systems, queries))


def _transfer_table(
    summary: pd.DataFrame, splits: int, first: int, systems: int, queries: int
) -> Table:
    """The summary of :func:`~crowdprefs.evaluation.mtc.transfer_summary` as a table."""
    from crowdprefs.evaluation.mtc.transfer import BASELINE, EARLY

    def paired(row: pd.Series, column: str, fmt: str) -> str:
        text = fmt.format(row[column])
        if math.isnan(row[f"{column}_diff"]):
            return text
        signed = fmt if "+" in fmt else fmt.replace("{:", "{:+")
        se = row[f"{column}_se"]
        error = "–" if math.isnan(se) else fmt.replace("+", "").format(se)
        return f"{text} ({signed.format(row[f'{column}_diff'])}±{error})"

    table = Table(
        title=f"MTC transfer: {splits} splits (seeds {first}–{first + splits - 1}), each "
        f"estimator on {systems} systems × {queries} queries none of its training saw; "
        f"(±) = paired difference to {BASELINE} over the same splits ± its standard error"
    )
    for column in (
        "estimator", f"accuracy after {EARLY}", "judgments to stop", "ratio",
        "accuracy at stop (worst)", "stated − realised", "target reached", "CPU s/run",
    ):  # fmt: skip
        table.add_column(column, justify="left" if column == "estimator" else "right")
    for name, row in summary.iterrows():
        ratio = "–" if math.isnan(row["ratio"]) else f"{row['ratio']:.2f}"
        table.add_row(
            escape(str(name)),
            paired(row, "early", "{:.3f}"),
            paired(row, "judgments", "{:.0f}"),
            ratio,
            f"{row['accuracy']:.3f} ({row['worst']:.3f})",
            paired(row, "gap", "{:+.3f}"),
            f"{row['reached']:.0%}",
            f"{row['seconds']:.2f}",
        )
    return table
