"""Core commands: init, status, next, publish, collect, aggregate, run, export."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console
from crowdprefs.cli.options import (
    DEFAULT_SEED,
    OUTPUT,
    Alpha,
    AnswersPerPair,
    Candidates,
    Crowd,
    Json,
    Margin,
    PartialLists,
    PartialPublish,
    ProjectDir,
    Reward,
    Rule,
    Seed,
)
from crowdprefs.errors import BudgetError, InputError

if TYPE_CHECKING:
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project


def _iteration_table(title: str) -> Table:
    table = Table(title=title)
    for name in ("iter.", "pairs", "answers", "cost $", "agree.", "med. s", "open q.", "time s"):
        table.add_column(name, justify="right")
    return table


def _add_row(table: Table, s: driver.IterationSummary) -> None:
    table.add_row(
        str(s.iteration),
        str(s.pairs),
        str(s.answers),
        f"{s.cost:.2f}",
        "-" if math.isnan(s.agreement) else f"{s.agreement:.3f}",
        "-" if math.isnan(s.median_seconds) else f"{s.median_seconds:.1f}",
        str(s.open_queries),
        f"{s.seconds:.2f}",
    )


def _add_total(table: Table, summaries: list[driver.IterationSummary]) -> None:
    if not summaries:
        return
    agreements = [s.agreement for s in summaries if not math.isnan(s.agreement)]
    table.add_row(
        "total",
        str(sum(s.pairs for s in summaries)),
        str(sum(s.answers for s in summaries)),
        f"{sum(s.cost for s in summaries):.2f}",
        f"{sum(agreements) / len(agreements):.3f}" if agreements else "-",
        "",
        str(summaries[-1].open_queries),
        f"{sum(s.seconds for s in summaries):.2f}",
        end_section=True,
    )


def run_with_progress(
    project: Project, crowd_name: str, title: str
) -> list[driver.IterationSummary]:
    """Run the campaign to the end, with a progress bar over closed queries and a live table."""
    from crowdprefs.campaign import driver
    from crowdprefs.crowds import get_crowd
    from crowdprefs.progress import make_progress

    crowd = get_crowd(crowd_name, project)
    total = len(project.store.candidates()["query"].unique())
    summaries: list[driver.IterationSummary] = []
    with make_progress(transient=True) as progress:
        task = progress.add_task("sorting", total=total)

        def report(summary: driver.IterationSummary) -> None:
            summaries.append(summary)
            progress.update(
                task,
                completed=total - summary.open_queries,
                description=f"iteration {summary.iteration}: {summary.pairs} pairs",
            )

        try:
            driver.run(project, crowd, on_iteration=report)
        finally:
            table = _iteration_table(title)
            for s in summaries:
                _add_row(table, s)
            _add_total(table, summaries)
            progress.stop()
            console.print(table)
    return summaries


@app.command()
def init(
    directory: ProjectDir,
    candidates: Candidates,
    seed: Seed = DEFAULT_SEED,
    answers_per_pair: AnswersPerPair = 10,
    rule: Rule = "mann-whitney",
    alpha: Alpha = 0.05,
    margin: Margin = 2,
    reward: Reward = 0.02,
    budget: Annotated[
        float | None, typer.Option(help="Spending limit in US$ (rewards plus fees).")
    ] = None,
) -> None:
    """Create a project folder from a candidates CSV (never overwrites an existing project).

    The seed fixes every random choice of the campaign: the candidates' initial orders, which
    side of a HIT shows which candidate, and the order of a batch.
    """
    from crowdprefs.campaign.aggregate import AggregationRule
    from crowdprefs.campaign.project import Settings, init_project

    settings = Settings(
        answers_per_pair=answers_per_pair,
        reward=reward,
        budget=budget,
        aggregation=AggregationRule(rule=rule, alpha=alpha, margin=margin),
    )
    with init_project(directory, candidates, seed=seed, settings=settings) as project:
        frame = project.store.candidates()
        console.print(
            f"created {directory}: {frame['query'].nunique()} queries, "
            f"{len(frame)} candidates, seed {seed}"
        )


@app.command()
def status(
    directory: ProjectDir,
    as_json: Json = False,
) -> None:
    """Per query: iterations, open segments, pairs judged, closed; totals: answers and cost."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project

    with Project(directory) as project:
        report = driver.status(project)
    if as_json:
        console.print_json(json.dumps(report))
        return
    table = Table(title=f"{directory}")
    for name in (
        "query",
        "candidates",
        "iterations",
        "open segments",
        "pairs judged",
        "pairs needed",
        "closed",
    ):
        table.add_column(name, justify="left" if name == "query" else "right")
    for q in report["queries"]:
        table.add_row(
            q["query"],
            str(q["candidates"]),
            str(q["iterations"]),
            str(q["open_segments"]),
            str(q["pairs_judged"]),
            str(q["pairs_needed"]),
            "yes" if q["closed"] else "no",
        )
    console.print(table)
    t = report["totals"]
    budget = "" if t["budget"] is None else f" of ${t['budget']:.2f}"
    console.print(
        f"{t['closed']}/{t['queries']} lists closed · iteration {t['iteration']} "
        f"({t['batch_status'] or 'none'}) · {t['pairs_judged']} pairs judged · "
        f"{t['answers']} answers · ${t['cost']:.2f} committed{budget}"
    )


@app.command("next")
def next_(directory: ProjectDir) -> None:
    """Build the next batch of pairs (idempotent: returns the open batch until it is aggregated)."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project

    with Project(directory) as project:
        iteration = driver.next_batch(project)
        if iteration is None:
            console.print("every list is closed: nothing to ask")
            return
        pairs = project.store.pairs(iteration)
        console.print(
            f"batch {iteration}: {len(pairs)} pairs over {pairs['query'].nunique()} queries"
        )


@app.command()
def publish(
    directory: ProjectDir,
    crowd: Crowd = "simulated",
    partial: PartialPublish = False,
) -> None:
    """Publish the open batch to a crowd, after checking the budget."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project
    from crowdprefs.crowds import get_crowd

    with Project(directory) as project:
        count = driver.publish(project, get_crowd(crowd, project), partial=partial)
        console.print(f"published {count} pairs to the {crowd} crowd")


@app.command()
def collect(directory: ProjectDir, crowd: Crowd = "simulated") -> None:
    """Collect the answers of the published batch."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project
    from crowdprefs.crowds import get_crowd

    with Project(directory) as project:
        new = driver.collect(project, get_crowd(crowd, project))
        batch = project.store.last_batch()
        console.print(
            f"collected {new} new answers; batch {batch['iteration']} is {batch['status']}"
        )


@app.command()
def aggregate(directory: ProjectDir) -> None:
    """Turn the collected batch's answers into verdicts with the project's rule."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project

    with Project(directory) as project:
        result = driver.aggregate(project)
        counts = result["verdict"].value_counts()
        console.print(
            f"aggregated {len(result)} pairs: {counts.get(1, 0)} more, {counts.get(0, 0)} equal, "
            f"{counts.get(-1, 0)} less; mean agreement {result['agreement'].mean():.3f}"
        )


@app.command()
def run(directory: ProjectDir, crowd: Crowd = "simulated") -> None:
    """Run iterations until every list is closed or the budget stops the campaign."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project

    with Project(directory) as project:
        try:
            run_with_progress(project, crowd, f"campaign {directory}")
        except BudgetError as error:
            raise BudgetError(f"stopped: {error}") from None
        report = driver.status(project)["totals"]
        console.print(f"{report['closed']}/{report['queries']} lists closed")


@app.command()
def export(
    directory: ProjectDir,
    output: Annotated[Path, typer.Option(*OUTPUT, help="File to write.")] = Path("lists.qrel"),
    fmt: Annotated[
        str, typer.Option("--format", help="Output format: qrels (tag query document group).")
    ] = "qrels",
    partial: PartialLists = False,
) -> None:
    """Write the ordered lists as group qrels: tag query document group (1 = most similar)."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project
    from crowdprefs.io import write_lists

    if fmt != "qrels":
        raise InputError(f"unknown export format {fmt!r}: use qrels")
    with Project(directory) as project:
        frame = driver.lists(project, partial=partial)
    write_lists(frame, output)
    console.print(f"wrote {frame['query'].nunique()} lists ({len(frame)} documents) to {output}")
