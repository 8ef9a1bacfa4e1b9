"""Core commands: init, status, next, publish, collect, aggregate, run, export."""

from __future__ import annotations

import json
import math
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console, escape
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
    Ties,
)
from crowdprefs.errors import BudgetError, InputError, StateError
from crowdprefs.progress import note

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
    from crowdprefs.cli.prolific import crowd_backend
    from crowdprefs.progress import make_progress
    from crowdprefs.quality.review import Reviewer

    crowd = crowd_backend(crowd_name, project)
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
            driver.run(project, crowd, review=Reviewer(), on_iteration=report)
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
    ties: Ties = "davidson",
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
        aggregation=AggregationRule(rule=rule, alpha=alpha, margin=margin, ties=ties),
    )
    with init_project(directory, candidates, seed=seed, settings=settings) as project:
        frame = project.store.candidates()
        console.print(
            f"created {directory}: {frame['query'].nunique()} queries, "
            f"{len(frame)} candidates, seed {seed}"
        )


def next_step(
    project: Project,
    directory: Path,
    *,
    crowd: str = "",
    crowd_name: str | None = None,
    mturk: bool = False,
    totals: dict | None = None,
) -> str:
    """The command that takes the campaign on from where it stands (for hints after an error).

    ``crowd`` is the option naming the crowd (``--crowd web``, ``--fake``), repeated in the
    publish and collect commands; ``mturk`` names the MTurk ones (which build a batch too).
    With the ``crowd_name`` publishing to, a batch the budget cannot cover asks for more budget.
    ``totals`` are the campaign's totals when the caller already has them (``driver.status``).
    """
    from crowdprefs.campaign import driver

    last = project.store.last_batch()
    state = None if last is None else last["status"]
    where = shlex.quote(str(directory))
    crowd_commands = "crowdprefs mturk" if mturk else "crowdprefs"
    with_crowd = f" {crowd}" if crowd else ""
    if state == "built":
        step = f"{crowd_commands} publish {where}{with_crowd}"
        crowd_name = crowd_name or driver.partly_published(project, last["iteration"])
        quote = None if crowd_name is None else driver.publish_quote(project, crowd_name)
        if quote and quote.budget is not None and quote.committed + quote.cost > quote.budget:
            config = shlex.quote(str(directory / "crowdprefs.toml"))
            return f"raise budget in the [crowd] section of {config}, then: {step}"
        return f"next: {step}"
    if state == "published":
        if not crowd and not mturk and last["crowd"]:  # the crowd the batch was published to
            return f"next: {_collect_from(project, where, last['crowd'])}"
        return f"next: {crowd_commands} collect {where}{with_crowd}"
    if state == "collected":
        return f"next: crowdprefs aggregate {where}"
    totals = totals or driver.status(project)["totals"]
    if totals["closed"] == totals["queries"]:
        return f"every list is closed; next: crowdprefs export {where}"
    if mturk:
        return f"next: crowdprefs mturk publish {where}{with_crowd} (it builds the batch)"
    return f"next: crowdprefs next {where}"


def _collect_from(project: Project, where: str, crowd_name: str) -> str:
    """How a batch published to ``crowd_name`` is collected (its own commands and options)."""
    mturk_option = {"mturk": " --live", "mturk-fake": " --fake", "mturk-sandbox": ""}
    if crowd_name in mturk_option:
        return f"crowdprefs mturk collect {where}{mturk_option[crowd_name]}"
    if crowd_name == "web" and project.section("web").get("advance", True):
        return f"the judges answer; `crowdprefs serve {where}` moves the campaign on"
    return f"crowdprefs collect {where} --crowd {crowd_name}"


@contextmanager
def hinting_next_step(
    project: Project,
    directory: Path,
    *,
    crowd: str = "",
    crowd_name: str | None = None,
    mturk: bool = False,
) -> Iterator[None]:
    """A step taken out of order (:class:`StateError`) says which command comes next."""
    try:
        yield
    except StateError as error:
        hint = next_step(project, directory, crowd=crowd, crowd_name=crowd_name, mturk=mturk)
        raise StateError(f"{error}; {hint}") from None


def crowd_option(crowd: str) -> str:
    """The ``--crowd`` option as typed again in a hint (empty for the default crowd)."""
    return "" if crowd == "simulated" else f"--crowd {shlex.quote(crowd)}"


@app.command()
def status(
    directory: ProjectDir,
    queries: Annotated[
        bool, typer.Option("--queries", help="Also list every query (one row each).")
    ] = False,
    as_json: Json = False,
) -> None:
    """The campaign's progress: lists closed, iteration, answers and cost, and what comes next.

    With --queries, a row per query: candidates, iterations, open segments, pairs judged and
    pairs still needed. --json gives the whole report (every query included).
    """
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project

    with Project(directory) as project:
        report = driver.status(project)
        hint = next_step(project, directory, totals=report["totals"])
    if as_json:
        console.print_json(json.dumps(report))
        return
    t = report["totals"]
    budget = "no budget set" if t["budget"] is None else f"budget ${t['budget']:.2f}"
    batch = f"batch {t['iteration']} is {t['batch_status']}" if t["iteration"] else "no batch yet"
    console.print(f"[bold]{escape(str(directory))}[/]: {t['queries']} queries", highlight=False)
    console.print(
        f"  lists:    {t['closed']} closed, {t['queries'] - t['closed']} open\n"
        f"  campaign: {batch}; {t['pairs_judged']} pairs judged, {t['answers']} answers\n"
        f"  cost:     ${t['cost']:.2f} committed ({budget})\n"
        f"  {escape(hint)}",
        highlight=False,
    )
    if queries:
        console.print(_queries_table(report["queries"], str(directory)))
    else:
        console.print("  (--queries lists every query)", style="dim", highlight=False)


def _queries_table(rows: list[dict], title: str) -> Table:
    table = Table(title=escape(title))
    table.add_column("query", overflow="fold")
    for name in ("cand.", "iter.", "open seg.", "judged", "needed", "closed"):
        table.add_column(name, justify="right", no_wrap=True)
    for q in rows:
        table.add_row(
            escape(q["query"]),
            str(q["candidates"]),
            str(q["iterations"]),
            str(q["open_segments"]),
            str(q["pairs_judged"]),
            str(q["pairs_needed"]),
            "yes" if q["closed"] else "no",
        )
    return table


@app.command("next")
def next_(directory: ProjectDir) -> None:
    """Build the next batch of pairs (idempotent: returns the open batch until it is aggregated)."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project

    with Project(directory) as project:
        iteration = driver.next_batch(project)
        if iteration is None:
            console.print(
                f"every list is closed: nothing to ask; {next_step(project, directory)}",
                highlight=False,
            )
            return
        pairs, queries = project.store.batch_size(iteration)
    console.print(f"batch {iteration}: {pairs} pairs over {queries} queries")


@app.command()
def publish(
    directory: ProjectDir,
    crowd: Crowd = "simulated",
    partial: PartialPublish = False,
) -> None:
    """Publish the open batch to a crowd, after checking the budget."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project
    from crowdprefs.cli.prolific import crowd_backend

    again = f"crowdprefs publish {shlex.quote(str(directory))} {crowd_option(crowd)}".strip()
    with Project(directory) as project:
        backend = crowd_backend(crowd, project)
        hint = {"crowd": crowd_option(crowd), "crowd_name": backend.name}
        with hinting_next_step(project, directory, **hint):
            try:
                count = driver.publish(project, backend, partial=partial)
            except BudgetError as error:
                if partial:
                    raise
                raise BudgetError(
                    f"{error}; or publish what fits with '{again} --partial'"
                ) from None
        console.print(f"published {count} pairs to the {crowd} crowd")
        waiting = project.store.last_batch()
        if waiting["status"] == "built":
            left = driver.publish_quote(project, backend.name)
            note(
                f"{left.hits} pairs of batch {waiting['iteration']} wait for budget "
                f"(${left.cost:.2f} more): the batch is collected once all of it is published. "
                f"Raise budget in the [crowd] section of "
                f"{directory / 'crowdprefs.toml'}, then run '{again}' again."
            )


@app.command()
def collect(directory: ProjectDir, crowd: Crowd = "simulated") -> None:
    """Collect the answers of the published batch."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project
    from crowdprefs.cli.prolific import crowd_backend
    from crowdprefs.quality.review import Reviewer

    with Project(directory) as project:
        backend = crowd_backend(crowd, project)
        hint = {"crowd": crowd_option(crowd), "crowd_name": backend.name}
        with hinting_next_step(project, directory, **hint):
            new = driver.collect(project, backend, Reviewer())
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
        with hinting_next_step(project, directory):
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
    """Write the ordered lists as group qrels: tag query document group (1 = most similar).

    Lists whose sort is still open are left out unless --partial (their open segments are then
    written as groups too).
    """
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project
    from crowdprefs.io import write_lists

    if fmt != "qrels":
        raise InputError(f"unknown export format {fmt!r}: use qrels")
    with Project(directory) as project:
        totals = driver.status(project)["totals"]
        still_open = totals["queries"] - totals["closed"]
        if still_open and not partial:
            hint = next_step(project, directory, totals=totals)
            if not totals["closed"]:
                raise StateError(
                    f"no list is closed yet ({still_open} open); export them as they stand "
                    f"with --partial, or finish the campaign; {hint}"
                )
            note(
                f"{still_open} of {totals['queries']} lists are still open and left out "
                f"(--partial exports them as they stand); {hint}"
            )
        frame = driver.lists(project, partial=partial)
    write_lists(frame, output)
    console.print(f"wrote {frame['query'].nunique()} lists ({len(frame)} documents) to {output}")
