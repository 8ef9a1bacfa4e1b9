"""Core commands: init, status, next, publish, collect, aggregate, run, export."""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console, escape, print_json
from crowdprefs.cli.next_step import chosen_crowd, crowd_option, hinting_next_step, next_step
from crowdprefs.cli.options import (
    DEFAULT_SEED,
    OUTPUT,
    Alpha,
    AnswersPerPair,
    CampaignCrowd,
    Candidates,
    Json,
    Margin,
    PartialLists,
    PartialPublish,
    ProjectDir,
    Reward,
    Rule,
    Seed,
    SimulatedOnReal,
    Ties,
    finite,
    one_of,
)
from crowdprefs.errors import BudgetError, InputError, StateError
from crowdprefs.progress import note, notes_heard

if TYPE_CHECKING:
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project, Settings


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
    project: Project, crowd_name: str, title: str, *, simulated_on_real: bool = False
) -> list[driver.IterationSummary]:
    """Run the campaign to the end, with a progress bar over closed queries and a live table
    (``simulated_on_real``: see :func:`crowdprefs.cli.prolific.crowd_backend`)."""
    from crowdprefs.campaign import driver
    from crowdprefs.cli.prolific import crowd_backend
    from crowdprefs.progress import make_progress
    from crowdprefs.quality.review import Reviewer

    crowd = crowd_backend(crowd_name, project, simulated_on_real=simulated_on_real)
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
        float | None, typer.Option(help="Spending limit in US$ (rewards plus fees).", parser=finite)
    ] = None,
    database: Annotated[
        str | None,
        typer.Option(
            help="Keep the state in this empty PostgreSQL database "
            "(postgresql://user@host/name; the password from PGPASSWORD or ~/.pgpass) "
            "instead of the file state.sqlite.",
            show_default=False,
        ),
    ] = None,
    prior: Annotated[
        Path | None,
        typer.Option(
            help="A model's similarity scores, CSV query,document,score (higher = more "
            "similar), for every candidate: the sort's pivots follow them, and with "
            "\\[prior] skip pairs the calibrated model is sure of are decided without humans.",
            show_default=False,
        ),
    ] = None,
    runs: Annotated[
        Path | None,
        typer.Option(
            help="Run files of the systems the lists will score (TREC runs or 'system query "
            "document' lines): each query's first pivot is its candidate at the systems' "
            "consensus k-th place, each batch asks only the pairs that can still change how two "
            "systems compare, and the campaign stops when their ranking is sure.",
            show_default=False,
        ),
    ] = None,
    measure: Annotated[
        str,
        typer.Option(help="--runs: the measure the systems are ranked by: ADR@k, AG@k, nDCG@k."),
    ] = "ADR@5",
    confidence: Annotated[
        float,
        typer.Option(
            help="--runs: stop when every pair of systems holds with this probability.",
            parser=finite,
        ),
    ] = 0.95,
) -> None:
    """Create a project folder from a candidates CSV (never overwrites an existing project).

    The seed fixes every random choice of the campaign: the candidates' initial orders, which
    side of a HIT shows which candidate, and the order of a batch. The state lives in the
    project's state.sqlite unless --database names a PostgreSQL database (for a study served
    by several processes or hosts).
    """
    from crowdprefs.campaign.aggregate import AggregationRule
    from crowdprefs.campaign.project import Settings, init_project

    settings = Settings(
        answers_per_pair=answers_per_pair,
        reward=reward,
        budget=budget,
        aggregation=AggregationRule(rule=rule, alpha=alpha, margin=margin, ties=ties),
    )
    if runs is None and (measure != "ADR@5" or confidence != 0.95):
        raise InputError("--measure and --confidence rank the systems of --runs: give --runs")
    if not 0.5 < confidence < 1:
        raise InputError(f"--confidence must lie in (0.5, 1), got {confidence}")
    with init_project(
        directory, candidates, seed=seed, settings=settings, database=database, prior=prior,
        runs=runs, measure=measure, confidence=confidence,
    ) as project:  # fmt: skip
        frame = project.store.candidates()
        console.print(
            f"created {directory}: {frame['query'].nunique()} queries, "
            f"{len(frame)} candidates, seed {seed}"
            + (f", state in {project.store.location}" if database else "")
            + (", machine prior fixed" if prior else "")
            + (f", ranking its systems by {project.section('systems')['measure']}" if runs else ""),
            soft_wrap=True,
        )
    warn_if_undecidable(settings)


@app.command()
def migrate(
    directory: ProjectDir,
    to: Annotated[
        str,
        typer.Option(
            "--to",
            help="Where the state goes: a PostgreSQL database (postgresql://user@host/name, "
            "empty; the password from PGPASSWORD or ~/.pgpass), or 'sqlite' for the "
            "project's own state.sqlite.",
            show_default=False,
        ),
    ],
) -> None:
    """Copy the project's state to another database and point the project at it.

    Every table is copied in one transaction and counted on both sides before the project's
    crowdprefs.toml is changed; the old state is kept (a SQLite file is renamed to
    state.sqlite.moved). Stop 'crowdprefs serve' first.
    """
    from crowdprefs.campaign.project import migrate_state

    with console.status("copying the state…"):
        moved = migrate_state(directory, to)
    console.print(
        f"copied {moved.rows:,} rows of {moved.tables} tables from {moved.source} to "
        f"{moved.target}; {moved.kept}",
        soft_wrap=True,
    )


def warn_if_undecidable(settings: Settings) -> None:
    """Say on stderr when the project's rule can never split a pair with the answers a pair
    gets: every verdict would be equal and every list one group."""
    from crowdprefs.campaign.aggregate import fewest_deciding

    rule, answers = settings.aggregation, settings.answers_per_pair
    fewest = fewest_deciding(rule)
    if fewest is not None and answers >= fewest:
        return
    named = rule.decider.strength(rule)
    note(
        f"warning: with {answers} answer(s) per pair the {rule.rule} rule ({named}) never "
        "splits a pair: every verdict will be 'equal' and every list one group; "
        + (f"it needs {fewest} answers per pair" if fewest else "choose another rule")
        + " (answers_per_pair in the [crowd] section of crowdprefs.toml)"
    )


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
    kept = kept_report(directory, "status", STATUS_PARTS, _status_report)
    report, hint, machine = kept["report"], kept["hint"], kept["machine"]
    if as_json:
        print_json(report)
        return
    t = report["totals"]
    had = t["budget_had"]
    if t["budget"] is not None:
        budget = f"budget ${t['budget']:.2f}"
    elif had is None:
        budget = "no budget set"
    else:  # a budget removed from the settings stops spending
        budget = (
            f"no budget set; the project had ${had:.2f}, so nothing more is spent until it is set"
        )
    batch = f"batch {t['iteration']} is {t['batch_status']}" if t["iteration"] else "no batch yet"
    console.print(f"[bold]{escape(str(directory))}[/]: {t['queries']} queries", highlight=False)
    console.print(
        f"  lists:    {t['closed']} closed, {t['queries'] - t['closed']} open\n"
        f"  campaign: {batch}; {t['pairs_judged']} pairs judged, {t['answers']} answers\n"
        f"  cost:     ${t['cost']:.2f} committed ({budget})\n"
        f"  {escape(hint)}",
        highlight=False,
    )
    if machine is not None:
        console.print(f"  {escape(machine)}", highlight=False, soft_wrap=True)
    if report["systems"] is not None:
        r = report["systems"]
        console.print(
            f"  systems:  {r['undecided']} of {r['pairs']} pairs of {r['systems']} systems "
            f"undecided by {r['measure']} at {r['confidence']:g}; next batch: {r['next_pairs']} "
            f"pairs, {r['next_answers']} answers, ${r['next_cost']:.2f}",
            highlight=False,
            soft_wrap=True,
        )
    if queries:
        console.print(_queries_table(report["queries"], str(directory)))
    else:
        console.print("  (--queries lists every query)", style="dim", highlight=False)


STATUS_PARTS = {"report": dict, "hint": str, "machine": (str, type(None))}
"""A kept ``status`` report: the report, its next step and the machine prior's line."""


def _status_report(project: Project, directory: Path) -> dict:
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.prior import audit_line

    report = driver.status(project)
    hint = next_step(project, directory, totals=report["totals"])
    machine = None if report["machine"] is None else audit_line(report["machine"])
    return {"report": report, "hint": hint, "machine": machine}


def kept_report(
    directory: Path,
    command: str,
    parts: dict[str, type | tuple[type, ...]],
    make: Callable[[Project, Path], dict],
) -> dict:
    """The report of a ``command`` that only reads: the one kept while the project is as it
    was (:mod:`crowdprefs.campaign.kept_reports`), its notes said again; else the one ``make``
    makes of the opened project, with the notes said meanwhile, kept when making it changed
    nothing."""
    from crowdprefs.campaign import kept_reports

    kept = kept_reports.cached(directory, command, parts)
    if kept is not None:
        for message, style in kept["notes"]:
            note(message, style)
        return kept
    from crowdprefs.campaign.project import Project  # the store, only when it is read

    with notes_heard() as notes, Project(directory) as project:
        revision = project.store.revision
        report = {**make(project, directory), "notes": notes}
        unchanged = project.store.revision == revision
    if unchanged:
        kept_reports.keep(directory, command, revision, project.settings.sections, report)
    return report


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
    kept = kept_report(directory, "next", NEXT_PARTS, _next_batch)
    console.print(kept["line"], highlight=kept["highlight"])


NEXT_PARTS = {"line": str, "highlight": bool}
"""A kept ``next`` report (of the open batch): the line it prints."""


def _next_batch(project: Project, directory: Path) -> dict:
    from crowdprefs.campaign import driver

    iteration = driver.next_batch(project)
    if iteration is None:
        line = f"every list is closed: nothing to ask; {next_step(project, directory)}"
        return {"line": line, "highlight": False}
    pairs, queries = project.store.batch_size(iteration)
    if iteration == 1:  # later batches load no pandas: status and next stay quick
        warn_if_undecidable(project.settings)
    return {"line": f"batch {iteration}: {pairs} pairs over {queries} queries", "highlight": True}


@app.command()
def publish(
    directory: ProjectDir,
    crowd: CampaignCrowd = None,
    partial: PartialPublish = False,
    simulated_on_real: SimulatedOnReal = False,
) -> None:
    """Publish the open batch to a crowd, after checking the budget.

    Without --crowd, the batch goes to the crowd the campaign's batches go to (the simulated
    crowd for a new campaign). The simulated crowd never answers a project holding other
    crowds' answers unless --simulated-on-real says so.
    """
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project
    from crowdprefs.cli.prolific import crowd_backend

    with Project(directory) as project:
        crowd = chosen_crowd(project, directory, crowd)
        again = f"crowdprefs publish {shlex.quote(str(directory))} {crowd_option(crowd)}".strip()
        backend = crowd_backend(crowd, project, simulated_on_real=simulated_on_real)
        hint = {"crowd_name": backend.name}
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
def collect(directory: ProjectDir, crowd: CampaignCrowd = None) -> None:
    """Collect the answers of the published batch.

    Without --crowd, from the crowd the batch was published to.
    """
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project
    from crowdprefs.cli.prolific import crowd_backend
    from crowdprefs.quality.review import Reviewer

    with Project(directory) as project:
        backend = crowd_backend(chosen_crowd(project, directory, crowd), project)
        hint = {"crowd_name": backend.name}
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
def run(
    directory: ProjectDir,
    crowd: CampaignCrowd = None,
    simulated_on_real: SimulatedOnReal = False,
) -> None:
    """Run iterations until every list is closed or the budget stops the campaign.

    Without --crowd, with the crowd the campaign's batches go to; see publish for
    --simulated-on-real.
    """
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project

    with Project(directory) as project:
        crowd = chosen_crowd(project, directory, crowd)
        try:
            run_with_progress(
                project, crowd, f"campaign {directory}", simulated_on_real=simulated_on_real
            )
        except BudgetError as error:
            raise BudgetError(f"stopped: {error}") from None
        report = driver.status(project)["totals"]
        console.print(f"{report['closed']}/{report['queries']} lists closed")


#: ``export --format``: each format and the file it writes when -o is not given.
EXPORT_FORMATS = {
    "qrels": "lists.qrel",
    "preference-qrels": "lists.grades.qrel",
    "long": "answers.csv",
    "results": "results.csv",
    "crowdkit": "crowdkit.csv",
    "choix": "choix.json",
    "pairs": "pairs.csv",
}
LIST_FORMATS = ("qrels", "preference-qrels")
ONE_QUERY_FORMATS = ("crowdkit", "choix")


@app.command()
def export(
    directory: ProjectDir,
    output: Annotated[
        Path | None,
        typer.Option(
            *OUTPUT,
            help="File to write; default: lists.qrel (qrels), lists.grades.qrel, answers.csv "
            "(long), results.csv, crowdkit.csv, choix.json or pairs.csv.",
            show_default=False,
        ),
    ] = None,
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            callback=lambda value: one_of(value, tuple(EXPORT_FORMATS)),
            help=f"What to write: {', '.join(EXPORT_FORMATS)} (see above).",
        ),
    ] = "qrels",
    partial: PartialLists = False,
    query: Annotated[
        str | None,
        typer.Option(
            "--query",
            help="The query whose answers a crowdkit or choix file holds (they hold one; "
            "default: the only query answered).",
            show_default=False,
        ),
    ] = None,
    split_ties: Annotated[
        bool,
        typer.Option(
            "--split-ties",
            help="Write each 'equal' answer as two comparisons, one won by each side "
            "(crowdkit, choix; default: left out).",
        ),
    ] = False,
) -> None:
    """Write the ordered lists, the answers or the open batch's pairs in the field's formats.

    - qrels: the lists as group qrels, tag query document group (1 = most similar).
    - preference-qrels: the lists as graded TREC qrels, query 0 document grade (the first
    group graded highest), which ir_measures' Compat scores as the groups order them.
    - long: every usable answer as worker,query,left,right,label,seconds (left: the candidate
    shown as A; label: left, right or equal), as 'import-answers --format long' and 'audit
    --answers --format long' read it.
    - results: every answer (rejected and empty ones too) as a results CSV with HIT, worker,
    times and choice; 'import-answers' reads it back.
    - crowdkit: one query's answers as crowd-kit's worker,left,right,label (label: the
    preferred item), for crowdkit.aggregation.BradleyTerry.
    - choix: one query's answers as JSON {query, items, comparisons}, each comparison
    \\[winner, loser] indices into items, for choix.ilsr_pairwise.
    - pairs: the open batch's pairs as query,left,right,answers_wanted (left: shown as A), to
    ask them with another tool; the answers come back with 'import-answers --format long'.

    crowd-kit and choix know no ties: an 'equal' answer is left out, or with --split-ties
    written as two comparisons, one won by each side (half a win each).

    Lists whose sort is still open are left out unless --partial (their open segments are then
    written as groups too).
    """
    from crowdprefs.campaign.project import Project
    from crowdprefs.files import output as output_file
    from crowdprefs.files import write_atomic

    out = output_file(output or Path(EXPORT_FORMATS[fmt]), {"PROJECT": directory})
    if query is not None and fmt not in ONE_QUERY_FORMATS:
        raise InputError("--query picks the query of --format crowdkit or choix")
    if split_ties and fmt not in ONE_QUERY_FORMATS:
        raise InputError("--split-ties applies to --format crowdkit and choix")
    if partial and fmt not in LIST_FORMATS:
        raise InputError("--partial applies to the lists (--format qrels or preference-qrels)")
    with Project(directory) as project:
        if fmt in LIST_FORMATS:
            _export_lists(project, directory, fmt, partial, out)
            return
        text, what = _export_text(project, directory, fmt, query, split_ties)
    write_atomic(out, text)
    console.print(f"wrote {what} to {escape(str(out))}", highlight=False)


def _export_lists(project: Project, directory: Path, fmt: str, partial: bool, out) -> None:
    """``export`` of the lists: closed ones (all with ``partial``) as group or graded qrels."""
    from crowdprefs.campaign import driver
    from crowdprefs.io import write_lists, write_preference_qrels

    report = driver.status(project)
    totals = report["totals"]
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
    (write_lists if fmt == "qrels" else write_preference_qrels)(frame, out)
    console.print(
        f"wrote {frame['query'].nunique()} lists ({len(frame)} documents) to {escape(str(out))}",
        highlight=False,
    )
    if partial and still_open:
        console.print(_unsorted_line(driver.sort_states(project)), highlight=False, soft_wrap=True)
    if report["machine"] is not None:  # the lists hold machine verdicts: how far to trust them
        from crowdprefs.campaign.prior import audit_line

        console.print(escape(audit_line(report["machine"])), highlight=False, soft_wrap=True)


def _unsorted_line(states: dict) -> str:
    """Which groups of the exported lists are unsorted parts (open segments: their members'
    order was not asked), per query, as ``query: group numbers``."""
    parts = []
    for query, state in states.items():
        groups = [str(g) for g, segment in enumerate(state.segments, start=1) if not segment.closed]
        if groups:
            parts.append(f"{escape(query)} group{'s' * (len(groups) > 1)} {', '.join(groups)}")
    return f"unsorted groups (their members' order was not asked), in {len(parts)} lists: " + (
        "; ".join(parts)
    )


def _export_text(
    project: Project, directory: Path, fmt: str, query: str | None, split_ties: bool
) -> tuple[str, str]:
    """``(text, what it holds)`` of ``export`` in an answers format or ``pairs``."""
    from crowdprefs import exchange
    from crowdprefs.quality.answer_files import open_pairs, project_preferences

    if fmt == "pairs":
        with hinting_next_step(project, directory):
            pairs = open_pairs(project)
        batch = project.store.last_batch()["iteration"]
        from crowdprefs.io import csv_text

        text = csv_text(pairs)
        return text, f"the {len(pairs)} pairs of batch {batch}"
    if fmt == "results":
        from crowdprefs.quality.frames import project_answers
        from crowdprefs.results_file import results_text

        answers = project_answers(project)
        if answers.empty:
            raise InputError(f"{directory} has no answers yet")
        return results_text(answers), f"{len(answers)} answers"
    answers = project_preferences(project)
    if fmt == "long":
        return exchange.long_csv(answers), f"{len(answers)} answers"
    queries = answers["query"].unique()
    if query is None and len(queries) > 1:
        raise InputError(
            f"a {fmt} file holds one query's answers and {directory} has answers for "
            f"{len(queries)} queries: name one with --query (--format long writes them all)"
        )
    ties = "split" if split_ties else "drop"
    query = queries[0] if query is None else query
    if fmt == "crowdkit":
        text = exchange.crowdkit_csv(answers, query=query, ties=ties)
        return text, f"{text.count(chr(10)) - 1} comparisons of query {escape(query)}"
    text = exchange.choix_json(answers, query=query, ties=ties)
    return text, f"the comparisons of query {escape(query)}"
