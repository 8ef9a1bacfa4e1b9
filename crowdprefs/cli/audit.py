"""Commands audit, import-answers and replay: auditing workers and recorded campaigns."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from crowdprefs.cli.app import app
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
    from crowdprefs.quality.audit import Audit, Sureness
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


#: Headings of the cells of :func:`crowdprefs.quality.iterations.table_2_cells`, in their order.
ITERATION_HEADS = (
    "iter.",
    "pairs",
    "answers",
    "workers",
    "earlier workers",
    "med. s",
    "crowd time",
    "since created",
    "agreement",
    "Krippendorff α",
    "Fleiss κ",
    "cost $",
)
#: The columns shown without --wide (they fit 80 columns).
NARROW = ("iter.", "pairs", "answers", "workers", "med. s", "crowd time", "agreement", "cost $")


def _iteration_table(result: Audit, title: str, heads: tuple[str, ...]) -> Table:
    """The iteration table with the columns ``heads`` (of :data:`ITERATION_HEADS`)."""
    from crowdprefs.quality.iterations import table_2_cells

    shown = [ITERATION_HEADS.index(head) for head in heads]
    table = Table(title=title)
    for i in shown:
        table.add_column(ITERATION_HEADS[i], justify="right")
    rows = result.iterations.to_dict(orient="records")
    for number, row in enumerate(rows, start=1):
        cells = table_2_cells(row)
        table.add_row(*(cells[i] for i in shown), end_section=number == len(rows) - 1)
    return table


def _natural_width(table: Table) -> int:
    """The width ``table`` takes when nothing is cut or wrapped."""
    from rich.measure import Measurement

    return Measurement.get(console, console.options.update_width(10_000), table).maximum


def _iteration_tables(result: Audit, title: str, wide: bool) -> list[Table]:
    """The iteration table: the columns that fit 80 columns; with ``wide`` every column, in a
    second table when one does not fit the terminal."""
    title = f"{escape(title)}: each iteration and the campaign in total"
    tables = [_iteration_table(result, title, ITERATION_HEADS if wide else NARROW)]
    if wide and _natural_width(tables[0]) > console.width:
        rest = ("iter.", *(head for head in ITERATION_HEADS if head not in NARROW))
        tables = [
            _iteration_table(result, title, NARROW),
            _iteration_table(result, "the other columns", rest),
        ]
    tables[-1].caption = (
        "med. s: median work time per answer; agreement: among each pair's answers; crowd time: "
        "first accept to last submit; since created: from the HITs' creation, waiting included"
        + ("" if wide else " (--wide: every column)")
    )
    return tables


#: Rows of the worker table shown (the lowest agreements); --json and --csv-dir give all.
WORKER_ROWS = 10


def _worker_table(workers: pd.DataFrame) -> Table:
    """The workers whose answers agree least with the pairs' verdicts: answers, agreement,
    share of "equal", position bias and median work time."""
    shown = workers.sort_values(
        ["verdict_agreement", "answers"], ascending=[True, False], na_position="last"
    ).head(WORKER_ROWS)
    table = Table(
        title=f"workers ({len(workers)})"
        + (f": the {WORKER_ROWS} lowest agreements" if len(workers) > WORKER_ROWS else ""),
        caption="agree.: with the pairs' verdicts (1 = always, ½ for 'equal' against a side); "
        "equal: share of 'equal' answers; bias: share of A − share of B (all workers: --json "
        "or --csv-dir)",
    )
    table.add_column("worker", overflow="fold")
    for head in ("answers", "agree.", "equal", "bias", "med. s"):
        table.add_column(head, justify="right", no_wrap=True)

    def cell(value: float, text: str) -> str:
        return "–" if value != value else text  # NaN: unknown

    for worker, row in shown.iterrows():
        table.add_row(
            escape(str(worker)),
            str(int(row["answers"])),
            cell(row["verdict_agreement"], f"{row['verdict_agreement']:.3f}"),
            cell(row["share_equal"], f"{row['share_equal']:.0%}"),
            cell(row["position_bias"], f"{row['position_bias']:+.2f}"),
            cell(row["median_seconds"], f"{row['median_seconds']:.1f}"),
        )
    return table


def _render(result: Audit, title: str, wide: bool) -> None:
    from crowdprefs.quality.agreement import agreement_summary
    from crowdprefs.quality.iterations import duration, money

    for table in _iteration_tables(result, title, wide):
        console.print(table)
    console.print(_worker_table(result.workers))
    flags = Table(title=f"flagged workers ({result.flags['worker_id'].nunique()})")
    flags.add_column("worker", overflow="fold")
    flags.add_column("flag", no_wrap=True)
    flags.add_column("evidence")
    for worker, flag, evidence in result.flags.itertuples(index=False):
        flags.add_row(escape(worker), flag, escape(evidence))
    console.print(flags)
    for name, confusion in result.reference.items():
        summary = agreement_summary(confusion)
        matrix = Table(
            title=f"reference (rows) vs workers (columns): {escape(name)}",
            caption="less: ranked before the other (more similar); greater: ranked after",
        )
        matrix.add_column("reference")
        totals = confusion.sum(axis=1)
        for column in confusion.columns:
            matrix.add_column(f"{column} ({int(confusion[column].sum())})", justify="right")
        for label, values in confusion.iterrows():
            matrix.add_row(
                f"{label} ({int(totals[label])})",
                *(f"{int(v)} ({v / totals[label]:.0%})" if totals[label] else "0" for v in values),
            )
        console.print(matrix)
        console.print(
            f"  complete {summary['complete']}, partial {summary['partial']}, none "
            f"{summary['none']}: agreement {summary['score']:.3f}"
        )
    for name, rates in result.transitivity.items():
        _render_rates(name, rates)
    if result.sureness is not None:
        _render_sureness(result.sureness)
    facts = result.facts
    if "machine" in facts:
        from crowdprefs.campaign.prior import audit_line

        console.print(audit_line(facts["machine"]), highlight=False, soft_wrap=True)
    median = facts["overall_median_seconds"]
    total = result.iterations.iloc[-1]
    cost = money(total["cost"])
    console.print(
        (
            "cost: unknown (the file has no reward: give --reward)"
            if cost == "unknown"
            else f"cost: ${cost} in total"
        )
        + f"; crowd time {duration(total['crowd_seconds'])}, time since the HITs were "
        f"created {duration(total['completion_seconds'])}"
    )
    console.print(
        f"{facts['answers']} answers ({facts['empty_answers']} empty, {facts['rejected_answers']}"
        f" rejected) by {facts['workers']} workers; {len(result.contradictions)} non-transitive "
        "verdict triples; median work time "
        + ("unknown" if median != median else f"{median:.1f} s")  # NaN: no work times
    )


#: Rows of each transitivity table shown (the highest rates); --json and --csv-dir give all.
TRANSITIVITY_ROWS = 10
#: Rows of the fragile verdicts and of the lists shown; --json, --csv-dir and --html give all.
SURENESS_ROWS = 10
VERDICT_WORDS = {1: "x more similar", 0: "equal", -1: "y more similar"}


def _count(value) -> str:
    import pandas as pd

    return "–" if pd.isna(value) else str(int(value))


def _render_sureness(sureness: Sureness) -> None:
    """The most fragile lists and verdicts, and how many one to three answers can change."""
    summary = sureness.summary
    within = summary["pairs_flips_within"]
    console.print(
        (
            "fragility"
            if summary["exact"]
            else "fragility (approximate: refits confirm an upper bound)"
        )
        + f": of {summary['pairs']} sorting verdicts, changing 1 / 2 / 3 answers can "
        f"change {within['1']} / {within['2']} / {within['3']} (removing them: "
        + " / ".join(str(v) for v in summary["pairs_removals_within"].values())
        + f"); {summary['lists_flips_within']['1']} of {summary['lists']} lists change with one "
        "changed answer",
        highlight=False,
    )
    lists = sureness.lists
    if not len(lists):
        console.print("no closed list to judge (a file's lists are replayed from its pivots)")
    else:
        stable = "expected_adr" in lists
        table = Table(
            title="how sure the lists are: the fewest answers that change a group boundary "
            "(the top group)"
            + (f", and {summary['resamples']} resampled crowds" if stable else ""),
            caption="list, top: answers removed / changed (–: no change of one pair reaches it)"
            + (
                "; kept: boundaries that reappear; same: whole lists rebuilt; ADR: mean "
                "(middle 90%)"
                if stable
                else ""
            )
            + ("" if summary["exact"] else "; approximate (bradley-terry)"),
        )
        heads = ["query", "groups", "list", "top"]
        heads += ["kept", "same", "expected ADR"] if stable else []
        for head in heads:
            table.add_column(head, justify="left" if head == "query" else "right")
        ordered = lists.sort_values(["flips", "removals"], kind="stable", na_position="last")
        for row in ordered.head(SURENESS_ROWS).itertuples(index=False):
            cells = [
                escape(str(row.query)),
                str(row.groups),
                f"{_count(row.removals)} / {_count(row.flips)}",
                f"{_count(row.top_removals)} / {_count(row.top_flips)}",
            ]
            if stable:
                adr = f"{row.expected_adr:.2f} ({row.adr_low:.2f}–{row.adr_high:.2f})"
                cells += [f"{row.boundaries_kept:.0%}", f"{row.same_list:.0%}", adr]
            table.add_row(*cells)
        console.print(table)
    fragile = sureness.pairs.head(SURENESS_ROWS)
    table = Table(title="the most fragile verdicts", caption="answers: more / equal / less")
    for head in ("query", "x", "y", "verdict", "answers", "changed", "removed"):
        table.add_column(head, justify="right" if head in ("changed", "removed") else "left")
    for row in fragile.itertuples(index=False):
        table.add_row(
            escape(str(row.query)), escape(str(row.x)), escape(str(row.y)),
            VERDICT_WORDS[int(row.verdict)], f"{row.more} / {row.equal} / {row.less}",
            _count(row.flips), _count(row.removals),
        )  # fmt: skip
    console.print(table)


def _render_rates(name: str, rates: pd.DataFrame) -> None:
    """One transitivity table (per query or per worker): the highest violation rates."""
    from crowdprefs.quality.transitivity import overall_rate

    judged = rates[rates["triples"] > 0].sort_values(
        ["rate", "triples"], ascending=False, kind="stable"
    )
    each, whose = ("query", "verdicts") if name == "queries" else ("worker", "own answers")
    rate = overall_rate(rates)
    table = Table(
        title=f"transitivity per {each} ({whose}): "
        + (f"{rate:.1%} of {int(judged['triples'].sum())} complete triples violated"
           if judged.size else "no complete triple"),
        caption=None
        if len(judged) <= TRANSITIVITY_ROWS
        else f"the {TRANSITIVITY_ROWS} highest rates of {len(judged)} (all: --json or --csv-dir)",
    )  # fmt: skip
    if judged.empty:
        console.print(table.title)
        return
    table.add_column(rates.index.name, overflow="fold")
    for column in ("triples", "violations", "rate"):
        table.add_column(column, justify="right")
    for key, row in judged.head(TRANSITIVITY_ROWS).iterrows():
        table.add_row(
            escape(str(key)), str(int(row["triples"])), str(int(row["violations"])),
            f"{row['rate']:.3f}",
        )  # fmt: skip
    console.print(table)


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
        _render(result, title, wide)


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
