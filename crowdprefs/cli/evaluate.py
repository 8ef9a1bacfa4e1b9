"""Commands ``evaluate`` (score systems against a ground truth) and ``compare-lists``."""

from __future__ import annotations

import json
import re
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console, err_console, escape
from crowdprefs.cli.options import (
    MAX_CUTOFF,
    MAX_RESAMPLES,
    Alpha,
    Correction,
    OneSided,
    Runs,
    Scheduler,
    Seed,
    StudyJobs,
    Wide,
    count,
    finite,
)
from crowdprefs.errors import InputError

if TYPE_CHECKING:
    import pandas as pd
    from rich.progress import Progress

    from crowdprefs.evaluation.truth_uncertainty import TruthUncertainty
    from crowdprefs.parallel import Runner
    from crowdprefs.quality.stability import Resampled

DEFAULTS = ["AG", "nDCG", "ANDCG", "ADR"]
MATRIX_MAX_SYSTEMS = 30


class Format(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"


class Test(StrEnum):
    wilcoxon = "wilcoxon"
    t = "t"
    sign = "sign"
    mann_whitney = "mann-whitney"
    none = "none"


class TruthKind(StrEnum):
    auto = "auto"
    lists = "lists"
    levels = "levels"


def _split_measures(values: list[str]) -> list[str]:
    """Measure names from repeated options/arguments, each possibly a comma-separated list
    (commas inside parentheses belong to the parameters)."""
    names: list[str] = []
    for value in values:
        names += [n for n in re.split(r",(?![^()]*\))|\s+", value) if n]
    return names


def _records(frame: pd.DataFrame) -> list[dict]:
    return json.loads(frame.to_json(orient="records"))


def _summary_table(summary: pd.DataFrame, wide: bool) -> Table:
    """Systems ranked by the first measure: each measure's mean and its 95% interval, as
    ``mean ±half-width`` (``mean [low, high]`` when ``wide``)."""
    import pandas as pd

    measures = list(pd.unique(summary["measure"]))
    table_wide = summary.pivot(index="system", columns="measure")
    order = table_wide[("rank", measures[0])].sort_values(kind="stable").index
    shape = "mean [95% CI]" if wide else "mean ±95% CI half-width"
    table = Table(title=f"Ranked by {escape(measures[0])}: {shape}")
    table.add_column("rank", justify="right")
    table.add_column("system", overflow="fold")
    for measure in measures:
        table.add_column(escape(measure), justify="right", overflow="fold")
    n = int(summary["n"].max())
    digits = {m: 2 if table_wide[("mean", m)].abs().max() >= 10 else 3 for m in measures}
    for system in order:
        cells = []
        for m in measures:
            mean, low, high = (
                table_wide.loc[system, (k, m)] for k in ("mean", "ci_low", "ci_high")
            )
            d = digits[m]
            cells.append(
                f"{mean:.{d}f} [dim]\\[{low:.{d}f}, {high:.{d}f}][/]"
                if wide
                else f"{mean:.{d}f}[dim]±{(high - low) / 2:.{d}f}[/]"
            )
        table.add_row(str(table_wide.loc[system, ("rank", measures[0])]), escape(system), *cells)
    table.caption = f"{len(order)} systems × {n} queries" + ("" if wide else " (--wide: intervals)")
    return table


def _tests_table(tests: pd.DataFrame, summary: pd.DataFrame, measure: str) -> Table:
    """Significance matrix: ▲ the row system is significantly better than the column one."""
    part = tests[tests["measure"] == measure]
    systems = summary[summary["measure"] == measure].sort_values("rank")["system"].tolist()
    mark = {}
    for row in part.itertuples():
        if row.significant:
            better, worse = (
                (row.system_a, row.system_b) if row.difference > 0 else (row.system_b, row.system_a)
            )
            mark[(better, worse)], mark[(worse, better)] = "[green]▲", "[red]▼"
    table = Table(box=None, padding=(0, 1))
    table.add_column("", no_wrap=True)
    for i, _ in enumerate(systems, start=1):
        table.add_column(str(i), justify="center")
    for i, a in enumerate(systems, start=1):
        table.add_row(
            f"{i} {escape(a)}",
            *("" if a == b else mark.get((a, b), "[dim]·") for b in systems),
        )
    return table


def _project_truth(
    folder: Path,
    resamples: int,
    seed: int,
    runner: Runner,
    progress: Progress,
    open_campaign: bool = False,
) -> tuple[pd.DataFrame, Resampled | None]:
    """A project's closed lists as the truth, and with ``resamples`` its resampled crowds'
    (a task of ``progress``); with ``open_campaign`` no closed list is not an error."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project
    from crowdprefs.quality.sorted_campaign import SortedCampaign
    from crowdprefs.quality.stability import resample_groups

    with Project(folder) as project:
        lists = driver.lists(project)
        if lists.empty:
            if open_campaign and not resamples:
                return lists, None
            raise InputError(f"{folder} has no closed list yet")
        if not resamples:
            return lists, None
        campaign = SortedCampaign.of_project(project)
    task = progress.add_task(f"resampling the crowd {runner.where}", total=resamples)
    resampled = resample_groups(
        campaign.answers,
        campaign.pairs,
        campaign.orders,
        campaign.rule,
        resamples=resamples,
        seed=seed,
        runner=runner,
        on_done=lambda done: progress.update(task, completed=done),
        scores=campaign.scores,
    )
    return resampled.documents, resampled


def _uncertainty_table(uncertainty: TruthUncertainty, wide: bool) -> Table:
    """Each system's mean with its interval for queries alone and for queries and truth."""
    summary = uncertainty.summary
    table = Table(
        title=f"With the ground truth's uncertainty ({uncertainty.resamples} resampled crowds): "
        "95% intervals"
    )
    for name, justify in (("measure", "left"), ("system", "left"), ("mean", "right"),
                          ("queries", "right"), ("queries + truth", "right"),
                          ("widening", "right")):  # fmt: skip
        table.add_column(name, justify=justify, overflow="fold")
    for row in summary.itertuples():
        table.add_row(
            escape(row.measure),
            escape(row.system),
            f"{row.mean:.3f}",
            f"[{row.ci_low:.3f}, {row.ci_high:.3f}]",
            f"[{row.truth_ci_low:.3f}, {row.truth_ci_high:.3f}]",
            f"×{row.widening:.2f}",
        )
    return table


def _kept_table(uncertainty: TruthUncertainty, most: int = 20) -> Table:
    """The pairs of systems whose order the resampled truths keep least often."""
    pairs = uncertainty.pairs.sort_values("kept", kind="stable").head(most)
    table = Table(
        title="How often the system ahead stays ahead under a resampled truth (least first)"
    )
    for name in ("measure", "ahead", "behind", "difference", "kept"):
        table.add_column(
            name, justify="left" if name in ("measure", "ahead", "behind") else "right"
        )
    for row in pairs.itertuples():
        table.add_row(
            escape(row.measure),
            escape(row.system_a),
            escape(row.system_b),
            f"{row.difference:+.3f}",
            f"{row.kept:.0%}",
        )
    if len(uncertainty.pairs) > most:
        table.caption = f"{most} of {len(uncertainty.pairs)} pairs (--format json: all)"
    return table


def _write(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _open_standings(
    folder: Path, runs: pd.DataFrame, names: list[str], k: int, args, resamples: int = 0
) -> list:
    """On a project whose sort is unfinished: per measure systems can be ranked by (ADR, AG,
    nDCG at a cutoff), where the systems stand over drawn finished lists; ``[]`` when every
    list is closed. ``resamples`` (``--truth-resamples``) needs a closed list."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project
    from crowdprefs.campaign.ranking import project_standing
    from crowdprefs.campaign.systems import MEASURES, parse_rank_measure
    from crowdprefs.evaluation.measures import parse_measure

    confidence, samples, seed = args
    with Project(folder) as project:
        totals = driver.status(project)["totals"]
        if totals["closed"] == totals["queries"]:
            return []
        if resamples and not totals["closed"]:
            raise InputError(
                f"{folder} has no closed list yet: --truth-resamples resamples closed lists "
                "(without it, the unfinished lists are scored)"
            )
        standings = []
        for name in names:
            parsed = parse_measure(name, k)
            if parsed.name not in MEASURES or parsed.params or parsed.cutoff is None:
                err_console.print(
                    f"note: {parsed} is not scored on the unfinished lists (ADR@k, AG@k and "
                    "nDCG@k are)"
                )
                continue
            measure = parse_rank_measure(f"{parsed.name}@{parsed.cutoff}")
            standings.append(
                project_standing(
                    project,
                    runs=runs,
                    measure=measure,
                    confidence=confidence,
                    samples=samples,
                    iteration=seed,
                )  # fmt: skip
            )
    return standings


def _open_tables(standing, confidence: float) -> tuple[Table, Table]:
    """The systems with their intervals and the pairs of systems with P(order holds)."""
    systems = standing.systems_frame(confidence)
    left = Table(
        title=f"{standing.measure} on the unfinished lists ({standing.drawn.shape[0]} drawn "
        f"finished lists): mean and {confidence:.0%} interval"
    )
    for column, justify in (("system", "left"), ("mean", "right"), ("interval", "right")):
        left.add_column(column, justify=justify)
    for row in systems.itertuples():
        left.add_row(escape(str(row.system)), f"{row.mean:.3f}", f"[{row.low:.3f}, {row.high:.3f}]")
    pairs = standing.pairs_frame()
    right = Table(
        title=f"{standing.measure}: how sure each order is once the lists are finished "
        f"(least sure first; decided at {confidence:g})"
    )
    for column in ("order", "P(holds)", "decided"):
        right.add_column(column, justify="left" if column == "order" else "right")
    for row in pairs.itertuples():
        right.add_row(
            f"{escape(str(row.system_a))} {row.order} {escape(str(row.system_b))}",
            f"{row.holds:.3f}",
            "yes" if row.decided else "no",
        )
    return left, right


def _open_payload(standings: list, confidence: float) -> list[dict]:
    """The unfinished lists' figures for ``--format json``."""
    return [
        {
            "measure": str(standing.measure),
            "draws": int(standing.drawn.shape[0]),
            "systems": _records(standing.systems_frame(confidence)),
            "pairs": _records(standing.pairs_frame()),
        }
        for standing in standings
    ]


def _show_open(standings: list, confidence: float, output_format: Format) -> None:
    """Print the unfinished lists' figures (table, JSON or CSV of the systems)."""
    import pandas as pd

    if output_format is Format.json:
        _write(json.dumps({"unfinished": _open_payload(standings, confidence)}, indent=1) + "\n")
    elif output_format is Format.csv:
        frames = [s.systems_frame(confidence).assign(measure=str(s.measure)) for s in standings]
        frame = pd.concat(frames, ignore_index=True)[["measure", "system", "mean", "low", "high"]]
        _write(frame.to_csv(index=False, lineterminator="\n"))
    else:
        for standing in standings:
            for table in _open_tables(standing, confidence):
                console.print(table)


def _show_result(
    result, uncertainty, standings: list, output_format: Format, wide: bool, confidence: float,
    testing: tuple[Test, float, bool],
) -> None:  # fmt: skip
    """Write ``evaluate``'s scores (csv), everything (json), or the tables: the summary, each
    measure's significance matrix (``testing``: the test, its level and sidedness), the truth's
    uncertainty and the unfinished lists' standings."""
    import pandas as pd

    test, alpha, one_sided = testing
    if output_format is Format.csv:
        from crowdprefs.io import csv_text

        _write(csv_text(result.scores))
    elif output_format is Format.json:
        payload = {
            "scores": _records(result.scores),
            "summary": _records(result.summary),
            "tests": _records(result.tests),
        }
        if standings:
            payload["unfinished"] = _open_payload(standings, confidence)
        if uncertainty is not None:
            payload["truth_uncertainty"] = {
                "resamples": uncertainty.resamples,
                "summary": _records(uncertainty.summary),
                "pairs": _records(uncertainty.pairs),
            }
        _write(json.dumps(payload, indent=1) + "\n")
    else:
        console.print(_summary_table(result.summary, wide))
        if not result.tests.empty:
            sided = "one-sided" if one_sided else "two-sided"
            for name in pd.unique(result.summary["measure"]):
                title = f"{name}: {test.value} ({sided}), α = {alpha:g}; ▲ row better than column"
                if result.summary["system"].nunique() <= MATRIX_MAX_SYSTEMS:
                    console.print(f"[italic]{escape(title)}", highlight=False)
                    console.print(_tests_table(result.tests, result.summary, name))
                else:
                    count = int(result.tests[result.tests["measure"] == name]["significant"].sum())
                    console.print(f"{name}: {count} significant pairs (see --format json)")
        if uncertainty is not None:
            console.print(_uncertainty_table(uncertainty, wide))
            console.print(_kept_table(uncertainty))
        _show_open(standings, confidence, output_format)


@app.command()
def evaluate(
    truth: Annotated[
        Path,
        typer.Option(
            "--truth",
            help="Ground truth: ordered lists (tag query document group), level judgments "
            "(query document gain, or TREC qrels), or a project folder (its closed lists).",
        ),
    ],
    runs: Runs,
    measure: Annotated[
        list[str] | None,
        typer.Option(
            "--measure",
            "-m",
            help="Measure(s), e.g. ADR@5 AG@5 'nDCG(b=2)@5' nDCG_trec@10 P@5 R@5 F@5 BEP Fmax AP. "
            "Repeatable or comma-separated.",
            show_default=f"{' '.join(DEFAULTS)} at --k",
        ),
    ] = None,
    more: Annotated[
        list[str] | None,
        typer.Argument(
            help="More measures (so that '--measure ADR@5 AG@5' works).",
            metavar="MEASURE",
            show_default=False,
        ),
    ] = None,
    k: Annotated[
        int,
        typer.Option(
            "--k", callback=count(1, MAX_CUTOFF), help="Cutoff of the measures given without one."
        ),
    ] = 5,
    truth_kind: Annotated[
        TruthKind,
        typer.Option("--truth-kind", help="How to read --truth (auto detects by its fields)."),
    ] = TruthKind.auto,
    test: Annotated[
        Test, typer.Option("--test", "-t", help="Pairwise test between systems ('none' to skip).")
    ] = Test.wilcoxon,
    alpha: Alpha = 0.05,
    one_sided: OneSided = False,
    correction: Correction = None,
    output_format: Annotated[
        Format,
        typer.Option(
            "--format",
            help="table: ranking and significance matrices; csv: the long score table "
            "system,query,measure,score (input of 'crowdprefs stats'); json: scores, summary "
            "and tests.",
        ),
    ] = Format.table,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Save a figure (PNG, PDF or SVG): per-system means with intervals, PR curves.",
        ),
    ] = None,
    rel: Annotated[
        float,
        typer.Option(
            "--rel", help="Minimum gain of a relevant document for the PR curves.", parser=finite
        ),
    ] = 1.0,
    wide: Wide = False,
    truth_resamples: Annotated[
        int,
        typer.Option(
            "--truth-resamples",
            callback=count(0, MAX_RESAMPLES),
            help="With a project as --truth: score the systems against this many resampled "
            "crowds' lists too, for intervals that include the ground truth's own uncertainty "
            "and how often each pair of systems keeps its order (0: off).",
        ),
    ] = 0,
    confidence: Annotated[
        float,
        typer.Option(
            help="With a project whose lists are unfinished: the probability at which a pair "
            "of systems' order counts as decided.",
            parser=finite,
        ),
    ] = 0.95,
    samples: Annotated[
        int,
        typer.Option(
            callback=count(10, MAX_RESAMPLES),
            help="With a project whose lists are unfinished: finished lists drawn for the "
            "intervals and the probabilities.",
        ),
    ] = 1000,
    seed: Seed = 0,
    jobs: StudyJobs = None,
    scheduler: Scheduler = None,
) -> None:
    """Score systems against a ground truth: means with intervals, ranking, pairwise tests.

    Per system × query scores (--format csv), the mean of each measure with its 95% confidence
    interval, the ranking, significance matrices of the pairwise tests, and plots. With a
    project as --truth and --truth-resamples N, the workers are resampled N times (bootstrap),
    the lists rebuilt from the resampled verdicts, and every system scored against them: each
    mean gets an interval for queries and truth together beside the one for queries alone.

    A project whose lists are unfinished (a campaign stopped when its systems' ranking was
    sure) is scored over finished lists drawn from its verdicts (ADR@k, AG@k, nDCG@k): each
    system's mean with an interval, and for each pair of systems the probability that their
    order holds once the lists are finished, decided or not at --confidence."""

    from crowdprefs.evaluation import evaluate as E
    from crowdprefs.evaluation.measures import parse_measures
    from crowdprefs.files import output
    from crowdprefs.io import read_runs, read_truth
    from crowdprefs.parallel import Runner
    from crowdprefs.progress import make_progress

    figure = output(plot, {"--truth": truth, "--runs": runs}, plot=True)
    names = _split_measures((measure or []) + (more or [])) or [f"{m}@{k}" for m in DEFAULTS]
    parse_measures(names, k)  # a bad measure is refused before any work
    if truth_resamples and not truth.is_dir():
        raise InputError(
            f"--truth-resamples resamples a crowd's answers: give a project folder as --truth "
            f"(not {truth}; 'crowdprefs replay --project' makes one of a results file)"
        )
    if not 0.5 < confidence < 1:
        raise InputError(f"--confidence must lie in (0.5, 1), got {confidence}")
    uncertainty = None
    standings: list = []
    with make_progress() as progress:
        step = progress.add_task("reading runs and ground truth", total=4)
        run_table = read_runs(runs)
        if truth.is_dir():
            standings = _open_standings(
                truth, run_table, names, k, (confidence, samples, seed), truth_resamples
            )
            truth_table, resampled = _project_truth(
                truth, truth_resamples, seed, Runner.from_options(jobs, scheduler), progress,
                open_campaign=bool(standings),
            )  # fmt: skip
            if truth_table.empty:  # no list is closed: the unfinished lists alone
                _show_open(standings, confidence, output_format)
                return
        else:
            truth_table, resampled = read_truth(truth, truth_kind.value), None
        if resampled is not None:
            from crowdprefs.evaluation.truth_uncertainty import truth_uncertainty

            runner = Runner.from_options(jobs, scheduler)
            scoring = progress.add_task(
                f"scoring against {truth_resamples} resampled truths {runner.where}",
                total=truth_resamples,
            )
            uncertainty = truth_uncertainty(
                run_table,
                resampled,
                names,
                k,
                seed=seed,
                runner=runner,
                on_done=lambda done: progress.update(scoring, completed=done),
            )
        progress.update(step, advance=1, description="scoring")
        result = E.evaluate(
            run_table,
            truth_table,
            names,
            k=k,
            test=None if test is Test.none else test.value,
            alpha=alpha,
            one_sided=one_sided,
            correction=correction,
        )
        progress.update(step, advance=2, description="plotting")
        if figure is not None:
            E.plot(result.summary, figure, E.pr_curves(run_table, truth_table, rel=rel))
        progress.update(step, advance=1)
    if result.ignored_rows:
        err_console.print(
            f"note: ignored {result.ignored_rows} run line(s) of queries not in the ground truth"
        )
    if standings:
        err_console.print(
            "note: the scores below are on the closed lists only; the unfinished lists follow"
        )
    _show_result(
        result, uncertainty, standings, output_format, wide, confidence, (test, alpha, one_sided)
    )
    if figure is not None:
        err_console.print(f"figure saved to {escape(str(figure))}")


@app.command("compare-lists")
def compare_lists(
    a: Annotated[Path, typer.Argument(help="First set of ordered lists (group qrels).")],
    b: Annotated[Path, typer.Argument(help="Second set of ordered lists (group qrels).")],
    permutations: Annotated[
        int,
        typer.Option(
            "--permutations",
            callback=count(1, 1_000_000),
            help="Random orders of each group of the lists acting as results.",
        ),
    ] = 1000,
    seed: Seed = 0,
    output_format: Annotated[
        Format,
        typer.Option(
            "--format",
            help="Output as a table, CSV or JSON (with --runs: JSON {lists, rankings}; CSV "
            "holds the ADR table only).",
        ),
    ] = Format.table,
    runs: Annotated[
        Path | None,
        typer.Option(
            "--runs",
            help="Also rank these systems' runs against each set of lists and give Kendall's τ "
            "between the two rankings (TREC runs or 'system query document' lines).",
        ),
    ] = None,
    measure: Annotated[
        list[str] | None,
        typer.Option(
            "--measure",
            "-m",
            help="Measure(s) ranking the systems of --runs; repeatable or comma-separated.",
        ),
    ] = None,
) -> None:
    """How far two sets of ordered lists agree: average dynamic recall (ADR) of each vs the other.

    The lists read as results are ranked with each group in a random order; the table gives the
    minimum, mean and maximum ADR over the permutations. With --runs, the systems are also
    ranked by their mean score against each set of lists (on the queries both hold) and the two
    rankings compared with Kendall's τ-b: 1 when the lists rank the systems alike, and the
    number of system pairs they order oppositely."""
    from crowdprefs.evaluation import evaluate as E
    from crowdprefs.evaluation.rankings import ranking_agreement
    from crowdprefs.io import read_lists, read_runs
    from crowdprefs.progress import make_progress

    if measure and runs is None:
        raise InputError("--measure ranks the systems of --runs: give --runs too")
    names = _split_measures(measure or []) or ["AG@5"]
    with make_progress() as progress:
        step = progress.add_task("comparing lists", total=1)
        lists = read_lists(a), read_lists(b)
        table = E.compare_lists(
            *lists, permutations=permutations, seed=seed, names=(a.stem, b.stem)
        )
        ranked = None if runs is None else ranking_agreement(read_runs(runs), *lists, names)
        progress.update(step, advance=1)
    if output_format is Format.csv:
        from crowdprefs.io import csv_text

        _write(csv_text(table))
    elif output_format is Format.json:
        records = _records(table)
        payload = records if ranked is None else {"lists": records, "rankings": _records(ranked)}
        _write(json.dumps(payload, indent=1) + "\n")
    else:
        out = Table(title=f"ADR between ordered lists ({permutations} permutations within groups)")
        for column in ("ground truth", "results", "mean ADR", "[min, max]", "queries"):
            out.add_column(
                column, justify="left" if column in ("ground truth", "results") else "right"
            )
        for row in table.itertuples():
            out.add_row(
                escape(row.truth),
                escape(row.results),
                f"{row.mean:.3f}",
                f"[{row.min:.3f}, {row.max:.3f}]",
                str(row.queries),
            )
        console.print(out)
        if ranked is not None:
            console.print(_tau_table(ranked, a.stem, b.stem))


def _tau_table(ranked: pd.DataFrame, a: str, b: str) -> Table:
    """Kendall's τ between the system rankings two sets of lists give, per measure."""
    table = Table(title=f"systems ranked against {escape(a)} and against {escape(b)}")
    for column in ("measure", "systems", "queries", "Kendall τ", "p", "swapped pairs"):
        table.add_column(column, justify="left" if column == "measure" else "right")
    for row in ranked.itertuples():
        table.add_row(
            escape(row.measure),
            str(row.systems),
            str(row.queries),
            "–" if row.tau != row.tau else f"{row.tau:.3f}",  # NaN: a ranking is all ties
            "–" if row.p_value != row.p_value else f"{row.p_value:.3g}",
            str(row.swaps),
        )
    return table
