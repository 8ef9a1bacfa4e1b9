"""Commands audit, import-answers and replay: auditing workers and recorded campaigns."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from crowdprefs.cli.app import app
from crowdprefs.cli.audit_render import render_audit
from crowdprefs.cli.console import console, err_console, escape, print_json
from crowdprefs.cli.options import (
    DEFAULT_SEED,
    MAX_RESAMPLES,
    OUTPUT,
    Alpha,
    AnswersFormat,
    BatchGap,
    ColumnsFile,
    FeeMinimum,
    FeeRate,
    FileQuery,
    Json,
    Margin,
    ProjectDir,
    ResultsFile,
    RewardPaid,
    Rule,
    Scheduler,
    Seed,
    StudyJobs,
    Ties,
    Wide,
    column_options,
    count,
    fee_model,
    one_of,
)
from crowdprefs.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from crowdprefs.campaign.aggregate import AggregationRule
    from crowdprefs.quality.sorted_campaign import SortedCampaign
    from crowdprefs.results_file import Columns


def _results(path: Path, columns: Columns) -> pd.DataFrame:
    """A results file read with ``columns``, each answer's listening judged from the play-log
    fields the file has (:func:`crowdprefs.quality.flags.listening_columns`); a file without
    the HIT column is told about the long format."""
    from crowdprefs.campaign.answers import LISTENING_FIELDS
    from crowdprefs.quality.flags import listening_columns
    from crowdprefs.results_file import read_results, read_table

    with err_console.status(f"reading {path}"):
        try:
            frame = read_results(path, columns, keep=LISTENING_FIELDS)
        except InputError as error:
            if columns.hit in read_table(path)[0].columns:
                raise
            raise InputError(
                f"{error}; a file of one answer per row without HIT ids reads with --format long "
                "(columns worker,query,left,right,label)"
            ) from None
    logs = frame.columns.intersection(list(LISTENING_FIELDS))
    if logs.empty:
        return frame
    listened = frame.drop(columns=logs).join(listening_columns(frame[logs]))
    listened.attrs = dict(frame.attrs)
    return listened


def _timed(answers: pd.DataFrame, batch_gap: float, one_batch: bool) -> pd.DataFrame:
    """The answers numbered in batches from their HITs' creation times; a file without any
    creation or accept time is one batch when ``one_batch``, else numbered from its pivots
    (:func:`~crowdprefs.quality.frames.iterations_from_pivots`), said in one line on stderr."""
    import numpy as np
    import pandas as pd

    from crowdprefs.quality.frames import infer_iterations, iterations_from_pivots

    times = "creation or accept time (--created-column, --accept-column)"
    missing = answers["created_at"].isna()
    if missing.all() and one_batch:
        err_console.print(
            f"the file has no HIT {times}: its answers are audited as one batch", highlight=False
        )
        return answers.assign(iteration=pd.array(np.ones(len(answers), int), dtype="Int64"))
    if missing.all():
        numbered, ambiguous = iterations_from_pivots(answers)
        err_console.print(
            f"the file has no HIT {times}: its iterations are numbered from the pivots its "
            f"pairs show ({int(numbered['iteration'].max())} iterations"
            + (f"; {ambiguous} segment(s) with more than one possible pivot" if ambiguous else "")
            + ")",
            highlight=False,
        )
        return numbered
    if missing.any():
        hit = answers.loc[missing, "hit_id"].iloc[0]
        raise InputError(
            f"{answers.attrs['source']}: HIT {hit} has no {times} to place it in a batch"
        )
    return infer_iterations(answers, batch_gap)


def _recorded(path: Path, columns: Columns, batch_gap: float) -> pd.DataFrame:
    """A recorded QuickSort campaign's results file, in batches (replay)."""
    answers = _timed(_results(path, columns), batch_gap, one_batch=False)
    report_reading(answers)
    return answers


def read_answers(
    path: Path,
    fmt: str,
    query: str | None,
    columns: Columns,
    batch_gap: float | None = None,
    *,
    fallback: str | None = None,
) -> pd.DataFrame:
    """An answers file in format ``fmt`` (``results``, ``long`` or ``crowdkit``) as the audit's
    answers frame; a results file is placed in batches when ``batch_gap`` is given; a long or
    crowdkit file without a query column holds ``query``'s answers, else ``fallback``'s, else
    is refused (:func:`crowdprefs.exchange.read_preferences`)."""
    from crowdprefs.exchange import MissingQuery, read_preferences
    from crowdprefs.quality.answer_files import preference_answers

    if fmt == "results":
        answers = _results(path, columns)
        if batch_gap is not None:
            answers = _timed(answers, batch_gap, one_batch=True)
    else:
        try:
            read = read_preferences(path, fmt, query=query, fallback=fallback)
        except MissingQuery as error:
            raise InputError(f"{error} with --query") from None
        answers = preference_answers(read, str(path))
    report_reading(answers)
    return answers


def recorded_campaign(
    frame: pd.DataFrame, rule: AggregationRule, *, replayable: bool
) -> SortedCampaign:
    """The answers of a file as a campaign: replayed with ``rule`` when they record a
    QuickSort campaign (a results file with the pivots; its closed lists are judged), else
    only aggregated (no lists)."""
    from crowdprefs.campaign.aggregate import pair_verdicts
    from crowdprefs.quality.sorted_campaign import SortedCampaign

    if replayable and frame["pivot_known"].any():
        campaign = SortedCampaign.of_recording(frame, rule)
        if campaign.orders:
            return campaign
    return SortedCampaign(frame, pair_verdicts(frame, rule), {}, rule)


def report_reading(answers: pd.DataFrame) -> None:
    """Say how the file was read (its encoding is noted by the reader): the identity of an
    answer and the rows whose answer is empty."""
    empty = answers.attrs.get("empty_rows", [])
    err_console.print(
        f"{len(answers)} answers, each identified by {escape(answers.attrs['identity'])}"
    )
    if empty:
        shown = ", ".join(map(str, empty[:10])) + (" ..." if len(empty) > 10 else "")
        err_console.print(
            f"[yellow]{len(empty)} row(s) have an empty answer[/] (rows {shown}): kept in the "
            "worker profiles, left out of aggregation"
        )


def _cost_line(
    answers: pd.DataFrame, reward: float | None, rate: float | None, minimum: float | None
) -> tuple[float | None, str]:
    """``(total, line)``: what the recorded answers cost, or that it is unknown."""
    from crowdprefs.quality.iterations import answer_costs, money, round_dollars

    costs = answer_costs(answers, fee_model(rate, minimum), reward)
    total = money(round_dollars(costs))
    if total == "unknown":
        return None, "cost: unknown (the file has no reward: give --reward)"
    return float(total), f"cost: ${total} for {len(answers)} answers"


def _write_project(frame: pd.DataFrame, result, root: Path, settings, seed: int) -> None:
    """``replay --project``: the recorded campaign as a project (``settings`` checked first by
    :func:`~crowdprefs.campaign.replay.recorded_settings`), and what it holds."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.replay import recorded_project

    with err_console.status(f"writing the project {root}"):
        made = recorded_project(frame, result, root, settings, seed)
    with made:
        lists = driver.lists(made)
    same = set(map(tuple, lists.to_numpy().tolist())) == set(
        map(tuple, result.lists[result.lists["query"].isin(lists["query"])].to_numpy().tolist())
    )
    closed = lists["query"].nunique()
    err_console.print(
        f"wrote the project {escape(str(root))}: {frame['iteration'].max()} batches, {closed} of "
        f"{len(result.closed)} lists closed"
        + ("" if same else " (they differ from the replay's: see 'crowdprefs status')")
        + (
            f"; carry on with: crowdprefs next {escape(str(root))}"
            if closed < len(result.closed)
            else ""
        ),
        soft_wrap=True,
    )


@app.command("audit")
@column_options
def audit_command(
    directory: Annotated[
        Path | None, typer.Argument(help="The project folder (omit with --answers).")
    ] = None,
    answers: Annotated[
        Path | None,
        typer.Option(
            help="Audit answers recorded elsewhere, without a project: a results CSV, or "
            "another layout named by --format."
        ),
    ] = None,
    fmt: AnswersFormat = "results",
    query: FileQuery = None,
    reference: Annotated[
        Path | None,
        typer.Option(
            help="Reference lists (group qrels, e.g. an expert's): how the verdicts and single "
            "answers agree with them."
        ),
    ] = None,
    split_by: Annotated[
        Path | None,
        typer.Option(
            help="CSV worker_id,attribute to split the single-answer table by "
            "(default: the stated musical background)."
        ),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(
            help="Write an HTML report here; its long tables show their first 200 rows and are "
            "written whole beside it as STEM.NAME.csv (linked from the page)."
        ),
    ] = None,
    as_json: Json = False,
    wide: Wide = False,
    csv_dir: Annotated[
        Path | None, typer.Option(help="Write every table as CSV into this folder.")
    ] = None,
    rule: Rule = "mann-whitney",
    alpha: Alpha = 0.05,
    margin: Margin = 2,
    ties: Ties = "davidson",
    batch_gap: BatchGap = 600.0,
    reward: RewardPaid = None,
    fee_rate: FeeRate = None,
    fee_minimum: FeeMinimum = None,
    columns: Columns = None,
    columns_file: ColumnsFile = None,
    resamples: Annotated[
        int,
        typer.Option(
            "--resamples",
            callback=count(0, MAX_RESAMPLES),
            help="Bootstrap crowds (workers resampled with their answers) the lists are rebuilt "
            "from, to show how stable they are (0: skip).",
        ),
    ] = 200,
    seed: Seed = 0,
    jobs: StudyJobs = None,
    scheduler: Scheduler = None,
) -> None:
    """Audit the workers and how sure the lists are: agreement, flags, transitivity, fragility.

    Transitivity: three candidates whose three pairs were all judged form a complete triple; it
    violates transitivity when no weak order fits the judgments (a > b and b > c but a ≤ c;
    a = b and b = c but a ≠ c; a > b = c but a ≤ c). The audit gives the share of violated
    triples per query (over its verdicts) and per worker (over their own answers; weak
    preferences are often intransitive).

    How sure: for every verdict, the fewest of its answers whose removal, or whose change to
    another choice, changes it under the rule (exact for margin and Mann-Whitney); for every
    closed list, the fewest that change a group boundary or the top group; and over --resamples
    bootstrap crowds, how often each boundary reappears and the expected ADR of a resampled list
    against the published one.

    With a PROJECT the verdicts, rule, reward and fees are the project's; with --answers the
    answers are aggregated with --rule, iterations are inferred from HIT creation times (one
    batch when the file has none), the lists are replayed from the recorded pivots, and the cost
    comes from the file's rewards (else --reward) and the fee options.
    """
    from crowdprefs.campaign.aggregate import AggregationRule
    from crowdprefs.campaign.project import Project
    from crowdprefs.files import OutputFolder
    from crowdprefs.files import output as output_file
    from crowdprefs.io import read_lists
    from crowdprefs.parallel import Runner
    from crowdprefs.progress import make_progress
    from crowdprefs.quality import audit as auditing

    inputs = {
        "PROJECT": directory, "--answers": answers, "--reference": reference,
        "--split-by": split_by, "--columns": columns_file,
    }  # fmt: skip
    report = output_file(html, inputs)
    if report is not None:  # the page's whole tables go beside it, checked now too
        from crowdprefs.quality.report import table_files

        report_tables = table_files(report)
    tables = None if csv_dir is None else OutputFolder(csv_dir, inputs=inputs)
    if (directory is None) == (answers is None):
        raise InputError("give either a project folder or --answers results.csv (not both)")
    if directory is not None and (fmt != "results" or query is not None):
        raise InputError("--format and --query describe an --answers file: give one")
    lists = read_lists(reference) if reference else None
    by = None if split_by is None else auditing.read_worker_attribute(split_by)
    runner = Runner.from_options(jobs, scheduler)
    if answers is not None:  # read (with its own status line) before the progress bar starts
        frame = read_answers(answers, fmt, query, columns, batch_gap)
    with make_progress(transient=True) as progress:
        task = progress.add_task(f"resampling the crowd {runner.where}", total=resamples)
        sure = {
            "resamples": resamples, "seed": seed, "runner": runner,
            "on_resample": lambda done: progress.update(task, completed=done),
        }  # fmt: skip
        if directory is not None:
            with Project(directory) as project:
                result = auditing.audit_project(project, reference=lists, split_by=by, **sure)
            title = str(directory)
        else:
            aggregation = AggregationRule(rule=rule, alpha=alpha, margin=margin, ties=ties)
            campaign = recorded_campaign(frame, aggregation, replayable=fmt == "results")
            result = auditing.audit(
                frame,
                pairs=campaign.pairs,
                rule=aggregation,
                fees=fee_model(fee_rate, fee_minimum),
                reward=reward,
                reference=lists,
                split_by=by,
                sureness=auditing.how_sure(campaign, **sure),
                aggregated=True,
            )
            title = str(answers)
    if tables is not None:
        written = result.write_csv(tables)
        err_console.print(f"wrote {len(written)} tables to {escape(str(tables))}")
    if report is not None:
        from crowdprefs.quality.report import write_report

        write_report(result, title, report, report_tables)
        err_console.print(
            f"wrote the report to {escape(str(report))} and its {len(report_tables)} "
            f"long tables beside it ({escape(report.path.stem)}.*.csv)"
        )
    if as_json:
        print_json(result.to_json())
    else:
        render_audit(result, title, wide)


@app.command("import-answers")
@column_options
def import_answers_command(
    directory: ProjectDir,
    results: Annotated[
        Path,
        typer.Argument(
            metavar="ANSWERS",
            help="The answers file: an MTurk batch-results CSV by default (other platforms' "
            "exports: the column options or --columns; other layouts: --format).",
        ),
    ],
    fmt: AnswersFormat = "results",
    query: FileQuery = None,
    crowd: Annotated[
        str | None,
        typer.Option(
            help="Crowd name the answers are stored under (the key that makes a rerun add "
            "nothing); default: mturk for a results file, lab for the other formats.",
            show_default=False,
        ),
    ] = None,
    batch_gap: BatchGap = 600.0,
    columns: Columns = None,
) -> None:
    """Store the answers of a file in a project (rerunning it adds nothing).

    Each answer is matched to the pair of the project it answers (by HIT id, else by query and
    the two candidates); the whole file is refused, naming the row, when one matches no pair or
    would exceed the answers a pair wants. Answers of the long and crowdkit formats are
    identified by their worker, query and candidates (a worker's second answer to a pair is
    refused); a file without a query column holds the answers of --query (default: the
    project's only query). 'crowdprefs export PROJECT --format pairs' writes the open batch's
    questions for another tool. Into a project without batches (e.g. one init-ed from a
    campaign's published lists), a results file is a recorded campaign: its batches (HIT
    creation times, --batch-gap) become the project's, with the recorded pivots, aggregated
    with the project's rule.
    """
    from crowdprefs.campaign.project import Project
    from crowdprefs.crowds.results import import_answers

    with Project(directory) as project:
        queries = project.store.query_names()
        only = queries[0] if fmt != "results" and len(queries) == 1 else None
        fresh = fmt == "results" and project.store.last_batch() is None
        frame = read_answers(
            results, fmt, query, columns, batch_gap if fresh else None, fallback=only
        )
        summary = import_answers(project, frame, crowd or ("mturk" if fmt == "results" else "lab"))
    if "closed" in summary:
        batches = len(summary["iterations"])
        console.print(
            f"the project had no batch: stored the file as a recorded campaign of {batches} "
            f"batch{'es' if batches != 1 else ''}, {summary['closed']} of {summary['queries']} "
            "lists closed"
        )
    batch = summary["batch_collected"]
    console.print(
        f"{summary['rows']} rows: {summary['new']} new answers stored, "
        f"{summary['already_stored']} already stored, {len(summary['empty_rows'])} empty "
        f"(not stored); iterations {', '.join(map(str, summary['iterations']))}"
        + (f"; batch {batch} is complete and collected" if batch else "")
    )


@app.command("replay")
@column_options
def replay_command(
    results: ResultsFile,
    rule: Rule = "mann-whitney",
    alpha: Alpha = 0.05,
    margin: Margin = 2,
    ties: Ties = "davidson",
    pivot_side: Annotated[
        str,
        typer.Option(
            callback=lambda value: one_of(value, ("a", "b")),
            help="Pivot of a two-member segment when unrecorded: variation a or b.",
        ),
    ] = "b",
    output: Annotated[
        Path | None, typer.Option(*OUTPUT, help="Write the lists here (group qrels).")
    ] = None,
    partial: Annotated[
        bool,
        typer.Option(
            "--partial",
            help="Also list queries whose sort is still open (else -o with open lists writes "
            "the closed ones and exits with an error).",
        ),
    ] = False,
    as_json: Json = False,
    batch_gap: BatchGap = 600.0,
    reward: RewardPaid = None,
    fee_rate: FeeRate = None,
    fee_minimum: FeeMinimum = None,
    project: Annotated[
        Path | None,
        typer.Option(
            "--project",
            help="Also write the recorded campaign as a project in this new folder (its "
            "batches, answers and verdicts), to carry on with status, audit, export, evaluate "
            "and next.",
        ),
    ] = None,
    seed: Seed = DEFAULT_SEED,
    columns: Columns = None,
    columns_file: ColumnsFile = None,
) -> None:
    """Rebuild the lists of a recorded QuickSort campaign with any aggregation rule.

    With --project the campaign becomes a project whose lists and open segments are the
    replay's; --reward and the fee options become its prices (the file's reward when it has
    one)."""
    from crowdprefs.campaign.aggregate import AggregationRule
    from crowdprefs.campaign.replay import recorded_settings, replay_campaign
    from crowdprefs.files import output as output_file
    from crowdprefs.io import write_lists

    out = output_file(output, {"RESULTS": results, "--columns": columns_file})
    frame = _recorded(results, columns, batch_gap)
    aggregation = AggregationRule(rule=rule, alpha=alpha, margin=margin, ties=ties)
    fees = fee_model(fee_rate, fee_minimum)
    settings = (
        None if project is None else recorded_settings(frame, project, aggregation, reward, fees)
    )
    result = replay_campaign(frame, aggregation, pivot_side, partial=partial)
    if out is not None:
        write_lists(result.lists, out, tag=f"replay-{rule}")
    closed = sum(result.closed.values())
    cost = _cost_line(frame, reward, fee_rate, fee_minimum)
    if as_json:
        print_json(
            {
                "closed": result.closed,
                "iterations": int(frame["iteration"].max()),
                "lists": result.lists.to_dict(orient="records"),
                "issues": result.issues.to_dict(orient="records"),
                "cost": cost[0],
            }
        )
    from crowdprefs.campaign.replay import NOTES

    notes = result.issues["issue"].isin(NOTES)
    unneeded = result.issues[result.issues["issue"] == "unneeded"]
    shown = result.issues.drop(unneeded.index)
    if not as_json and len(shown):
        table = Table(title="where the replay departs from the recording, and notes")
        for head in ("iter.", "query", "issue", "detail"):
            table.add_column(head)
        for iteration, query, issue, detail in shown.itertuples(index=False):
            table.add_row(str(iteration), escape(query), issue, escape(detail))
        console.print(table)
    if not as_json and len(unneeded):
        iterations = sorted({int(i) for i in unneeded["iteration"]})
        queries = unneeded["query"].nunique()
        console.print(
            f"unneeded: {len(unneeded)} recorded pair(s) the replayed segments did not need, "
            f"in {queries} quer{'y' if queries == 1 else 'ies'}, iteration(s) "
            f"{', '.join(map(str, iterations))} (--json lists them)",
            highlight=False,
        )
    groups = result.lists.groupby("query")["group"].max()
    if not as_json:
        console.print(
            f"{int(frame['iteration'].max())} iterations; {closed}/{len(result.closed)} lists "
            f"closed ({int(groups.sum())} groups); {int((~notes).sum())} difference(s) from the "
            f"recording, {int(notes.sum())} note(s)" + (f"; wrote {output}" if output else "")
        )
        console.print(cost[1])
    if project is not None:
        _write_project(frame, result, project, settings, seed)
    still_open = [query for query, done in result.closed.items() if not done]
    if output is not None and still_open and not partial:
        raise InputError(
            f"{len(still_open)} of {len(result.closed)} lists are still open "
            f"({', '.join(still_open[:5])}{' ...' if len(still_open) > 5 else ''}): {output} "
            "holds the closed ones only (--partial also writes the open ones as they stand)"
        )
