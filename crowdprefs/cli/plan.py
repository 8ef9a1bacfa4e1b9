"""Planning commands: ``plan`` (simulate a campaign before paying) and ``crowd-model fit``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console
from crowdprefs.cli.options import (
    COLUMNS,
    OUTPUT,
    SEQUENTIAL_ALPHA,
    SEQUENTIAL_FUTILITY,
    AColumn,
    Alpha,
    AnswerColumn,
    AnswersPerPair,
    AValue,
    BColumn,
    BValue,
    Candidates,
    CrowdModelFile,
    EqualValue,
    Margin,
    PivotColumn,
    QueryColumn,
    ResultsFile,
    Reward,
    Rule,
    Seed,
    results_columns,
)
from crowdprefs.errors import InputError

crowd_model_app = typer.Typer(
    help="Calibrate the simulated crowd from recorded answers.", no_args_is_help=True
)
app.add_typer(crowd_model_app, name="crowd-model")

_LABELS = {
    "iterations": ("iterations", "{:.1f}"),
    "pairs": ("pairs", "{:.0f}"),
    "answers": ("answers", "{:.0f}"),
    "cost": ("cost $ (fees incl.)", "{:.2f}"),
    "wall_hours": ("wall time h", "{:.1f}"),
    "adr": ("ADR vs truth", "{:.3f}"),
    "order_recovered": ("order relations recovered", "{:.3f}"),
    "ties_kept": ("true ties kept", "{:.3f}"),
}


@app.command()
def plan(
    candidates: Candidates,
    truth: Annotated[
        Path | None,
        typer.Option(
            help="Group qrels of a hidden truth to simulate against (default: a random truth of "
            "about three candidates per group)."
        ),
    ] = None,
    answers_per_pair: AnswersPerPair = 10,
    adaptive: Annotated[
        str, typer.Option(help="Adaptive answers: off, curtail or sequential.")
    ] = "off",
    initial: Annotated[int, typer.Option(help="Adaptive: answers asked first.")] = 4,
    step: Annotated[int, typer.Option(help="Adaptive: answers added per round.")] = 2,
    alpha: Annotated[
        float,
        typer.Option(
            "--false-different-rate",
            help="Sequential: the stated rate of truly equal pairs declared different.",
        ),
    ] = SEQUENTIAL_ALPHA,
    futility: Annotated[
        float, typer.Option(help="Sequential: stop as equal below this chance to separate.")
    ] = SEQUENTIAL_FUTILITY,
    rule: Rule = "mann-whitney",
    level: Alpha = 0.05,
    margin: Margin = 2,
    reward: Reward = 0.02,
    crowd_model: CrowdModelFile = None,
    campaigns: Annotated[int, typer.Option(help="Campaigns to simulate.")] = 100,
    seed: Seed = 0,
    csv_out: Annotated[
        Path | None, typer.Option(*OUTPUT, help="Also write one row per campaign to this CSV.")
    ] = None,
) -> None:
    """Estimate a campaign's cost, duration and list quality before any money is spent.

    Simulates the campaign many times with the simulated crowd: iterations, pairs, answers,
    cost, wall time, and how well the lists recover the hidden truth."""
    from crowdprefs.campaign.adaptive import StoppingRule, nominal_level
    from crowdprefs.campaign.aggregate import AggregationRule
    from crowdprefs.campaign.project import read_candidates
    from crowdprefs.crowds.simulated import CrowdModel, random_truth
    from crowdprefs.io import read_lists
    from crowdprefs.progress import make_progress
    from crowdprefs.quality.crowd_model import load_crowd_model
    from crowdprefs.quality.planning import Design, simulate, summarize

    frame = read_candidates(candidates)
    hidden = read_lists(truth) if truth else random_truth(frame, seed)
    known = set(zip(hidden["query"], hidden["document"], strict=True))
    pairs = zip(frame["query"], frame["document"], strict=True)
    lacking = [(q, d) for q, d in pairs if (q, d) not in known]
    if lacking:
        raise InputError(
            f"{truth}: no group for query {lacking[0][0]!r}, document {lacking[0][1]!r}"
        )
    hidden = hidden.merge(frame[["query", "document"]], on=["query", "document"])
    aggregation = AggregationRule(rule=rule, alpha=level, margin=margin)
    stopping = None
    if adaptive != "off":
        stopping = StoppingRule(
            method=adaptive,  # type: ignore[arg-type]
            initial=min(initial, answers_per_pair),
            step=step,
            maximum=answers_per_pair,
            alpha=alpha,
            futility=futility,
            aggregation=aggregation,
        )
    design = Design(answers_per_pair, aggregation, stopping, reward)
    model = load_crowd_model(crowd_model) if crowd_model else CrowdModel()
    with make_progress(transient=True) as progress:
        task = progress.add_task("simulating campaigns", total=campaigns)
        results = simulate(
            hidden,
            design,
            model,
            campaigns=campaigns,
            seed=seed,
            on_campaign=lambda _: progress.advance(task),
        )
    if csv_out:
        results.to_csv(csv_out, index_label="campaign")
    summary = summarize(results)
    what = "fixed" if stopping is None else stopping.method
    title = (
        f"{campaigns} simulated campaigns: {frame['query'].nunique()} queries, {len(frame)} "
        f"candidates, {what} answers (max {answers_per_pair}), {aggregation.rule}"
    )
    table = Table(title=title)
    table.add_column("measure")
    for name in ("mean", "95% CI of mean", "5%", "median", "95%"):
        table.add_column(name, justify="right")
    for column, row in summary.iterrows():
        label, fmt = _LABELS[str(column)]
        if math.isnan(row["mean"]):
            continue
        table.add_row(
            label,
            fmt.format(row["mean"]),
            f"{fmt.format(row['ci_low'])}–{fmt.format(row['ci_high'])}",
            fmt.format(row["p5"]),
            fmt.format(row["median"]),
            fmt.format(row["p95"]),
        )
    console.print(table)
    if stopping is not None and stopping.method == "sequential":
        per_look, worst = nominal_level(stopping)
        console.print(
            f"sequential rule: per-look Mann-Whitney level {per_look:.4f}; false 'different' "
            f"rate on truly equal pairs at most {worst:.3f} (stated {stopping.alpha})"
        )


@crowd_model_app.command("fit")
def fit(
    results: ResultsFile,
    output: Annotated[
        Path, typer.Option(*OUTPUT, help="TOML file to write the fitted model to.")
    ] = Path("crowd-model.toml"),
    query_column: QueryColumn = COLUMNS["query"],
    a_column: AColumn = COLUMNS["a"],
    b_column: BColumn = COLUMNS["b"],
    answer_column: AnswerColumn = COLUMNS["answer"],
    a_value: AValue = COLUMNS["a_value"],
    b_value: BValue = COLUMNS["b_value"],
    equal_value: EqualValue = COLUMNS["equal_value"],
    pivot_column: PivotColumn = COLUMNS["pivot"],
) -> None:
    """Fit the simulated crowd to a recorded campaign, for 'plan --crowd-model'.

    The model's difficulty, accuracy, 'equal' tendency, position bias, work times, bots and
    activity are fitted to the recorded answers and saved as TOML."""
    from crowdprefs.crowds.results import read_results
    from crowdprefs.quality.crowd_model import fit_crowd_model, save_fit

    columns = results_columns(
        query_column,
        a_column,
        b_column,
        answer_column,
        a_value,
        b_value,
        equal_value,
        pivot_column,
    )
    answers = read_results(results, columns)
    fitted = fit_crowd_model(answers)
    save_fit(fitted, output)
    model = fitted.model
    table = Table(title=f"crowd model fitted to {results} ({fitted.pairs} pairs)")
    table.add_column("parameter")
    table.add_column("value", justify="right")
    for name, value in model.to_dict().items():
        table.add_row(name, f"{value:.3g}" if isinstance(value, float) else str(value))
    shares = " ".join(f"{g}:{s:.2f}" for g, s in fitted.gap_shares.items())
    table.add_row("pairs by true gap (groups)", shares)
    console.print(table)
    console.print(f"wrote {output}")
