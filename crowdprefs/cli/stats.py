"""Commands ``crowdprefs stats test|power|stability|gawm`` over a system×query scores file."""

from __future__ import annotations

import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console, escape
from crowdprefs.cli.options import (
    MAX_RESAMPLES,
    MEANS,
    OUTPUT,
    PAIRWISE_TESTS,
    PROCEDURES,
    Alpha,
    Correction,
    OneSided,
    PlotFile,
    Scheduler,
    Seed,
    StudyJobs,
    count,
    finite,
    renamed,
)
from crowdprefs.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from crowdprefs.parallel import Runner

stats_app = typer.Typer(
    help="Significance tests, power and stability studies, GAWM and HITS over a scores file "
    "(system,query,measure,score as written by 'crowdprefs evaluate --format csv', or a wide "
    "CSV: first column system, one column per query).",
    no_args_is_help=True,
)
app.add_typer(stats_app, name="stats")

ScoresFile = Annotated[
    Path, typer.Option("--scores", help="Scores file: long CSV/JSON or wide CSV.")
]
Measures = Annotated[
    list[str] | None,
    typer.Option("--measure", "-m", help="Measure(s) to use (repeatable); default: all."),
]
StrataFile = Annotated[
    Path | None,
    typer.Option(
        "--strata",
        help="Query strata file (query first, stratum in the last column, e.g. MIREX "
        "metadata.txt with the genre); subsets then take strata with equal priors.",
    ),
]
StratumColumn = Annotated[
    int | None,
    typer.Option(
        "--stratum-column",
        callback=count(1, 1000),
        help="1-based column of the stratum (default: last).",
    ),
]
Procedures = Annotated[
    list[str] | None,
    typer.Option(
        "--procedure",
        "-p",
        help="Procedure(s), repeatable: "
        + "; ".join(f"{name} = {description}" for name, description in PROCEDURES.items())
        + ". Default: FT and W1.",
    ),
]
Samples = Annotated[
    int,
    typer.Option(
        "--samples", "-r", callback=count(1, MAX_RESAMPLES), help="Random subsets per size."
    ),
]
SizeStep = Annotated[
    int,
    typer.Option(
        "--size-step",
        callback=count(1, 10_000),
        help="Query subsets of size step, 2·step, 3·step, … are drawn.",
    ),
]
OutputFile = Annotated[
    Path | None, typer.Option(*OUTPUT, help="Also write the tidy table as CSV here.")
]


class Format(StrEnum):
    table = "table"
    csv = "csv"


class Axioms(StrEnum):
    A = "A"
    B = "B"
    uniform = "uniform"


Mean = StrEnum("Mean", {name: name for name in MEANS})
TestName = StrEnum("TestName", {name: name for name in (*PAIRWISE_TESTS, "friedman-tukey")})


def _matrices(path: Path, measures: list[str] | None, scale: float = 1.0) -> dict:
    from crowdprefs.evaluation.stats import read_scores

    matrices = read_scores(path)
    if measures:
        unknown = [m for m in measures if m not in matrices]
        if unknown:
            raise InputError(
                f"{path}: no measure {unknown[0]!r}; the file has {', '.join(matrices)}"
            )
        matrices = {m: matrices[m] for m in measures}
    if scale <= 0:
        raise InputError(f"--scale must be positive, got {scale}")
    return {name: matrix / scale for name, matrix in matrices.items()}


def _render(frame: pd.DataFrame, title: str, output_format: Format, digits: int = 4) -> None:
    import pandas as pd

    if output_format is Format.csv:
        from crowdprefs.io import csv_text

        sys.stdout.write(csv_text(frame))
        return
    table = Table(title=title)
    for column in frame.columns:
        numeric = pd.api.types.is_numeric_dtype(frame[column])
        table.add_column(str(column), justify="right" if numeric else "left")
    for row in frame.itertuples(index=False):
        table.add_row(*(f"{v:.{digits}f}" if isinstance(v, float) else escape(str(v)) for v in row))
    console.print(table)


@stats_app.command("test")
def test_command(
    scores: ScoresFile,
    measure: Measures = None,
    test: Annotated[
        TestName, typer.Option("--test", "-t", help="Pairwise test, or MIREX's Friedman-Tukey.")
    ] = TestName("wilcoxon"),
    alpha: Alpha = 0.05,
    one_sided: OneSided = False,
    correction: Correction = None,
    output_format: Annotated[
        Format, typer.Option("--format", help="Output format.")
    ] = Format.table,
) -> None:
    """Test every pair of systems per measure (Wilcoxon, t, sign, Mann-Whitney, Friedman-Tukey)."""
    import pandas as pd

    from crowdprefs.evaluation.stats import friedman, friedman_tukey, pairwise_tests

    if test.value == "friedman-tukey" and (one_sided or correction):
        raise InputError("--one-sided and --correction apply to the pairwise tests, not to FT")
    tables = []
    for name, matrix in _matrices(scores, measure).items():
        if test.value == "friedman-tukey":
            result = friedman(matrix)
            if output_format is Format.table:
                console.print(
                    f"{escape(name)}: Friedman χ² = {result.statistic:.3f}, "
                    f"df = {len(matrix) - 1}, p = {result.p:.3g}"
                )
            table = friedman_tukey(matrix, alpha)
        else:
            table = pairwise_tests(matrix, test.value, alpha, one_sided, correction)
        table.insert(0, "measure", name)
        tables.append(table)
    frame = pd.concat(tables, ignore_index=True)
    if output_format is Format.table:
        count = int(frame.significant.sum())
        console.print(f"{count} of {len(frame)} pairs significant")
    _render(frame, f"{test.value} tests, α = {alpha}", output_format)


def _study(
    kind: str,
    scores: Path,
    measure: list[str] | None,
    strata: Path | None,
    stratum_column: int | None,
    procedure: list[str] | None,
    samples: int,
    step: int,
    seed: int,
    plot: Path | None,
    output: Path | None,
    output_format: Format,
    runner: Runner,
) -> None:
    from crowdprefs.evaluation import power as P
    from crowdprefs.files import output as output_file

    inputs = {"--scores": scores, "--strata": strata}
    table_file, figure = output_file(output, inputs), output_file(plot, inputs, plot=True)
    matrices = _matrices(scores, measure)
    strata_series = None if strata is None else P.read_strata(strata, stratum_column)
    n_queries = next(iter(matrices.values())).shape[1]
    if step < 1:
        raise InputError(f"--size-step must be at least 1, got {step}")
    sizes = P.default_sizes(n_queries, step, stability=kind == "stability")
    study = P.power_study if kind == "power" else P.stability_study
    chosen = procedure or ("FT", "W1")
    table = study(matrices, strata_series, sizes, samples, chosen, seed, runner=runner)
    if table_file is not None:
        from crowdprefs.io import csv_text

        table_file.write(csv_text(table))
        console.print(f"wrote {escape(str(table_file))}")
    if figure is not None:
        value = "power" if kind == "power" else "conflicts"
        title = f"evaluation {kind} ({samples} samples per size)"
        P.plot_curves(table, value, figure, title=title)
        if output_format is Format.table:
            console.print(f"wrote {escape(str(figure))}")
    if output_format is Format.csv:
        _render(table, kind, output_format)
        return
    value = "power" if kind == "power" else "conflicts"
    wide = table.pivot_table(
        index="size", columns=["measure", "procedure"], values=value, sort=False
    )
    wide.columns = [f"{m} {p}" for m, p in wide.columns]
    _render((100 * wide).reset_index().round(1), f"{value} (% of system pairs)", output_format, 1)
    if kind == "stability":
        last = table[table["size"] == table["size"].max()].copy()
        shares = ["power", "conflicts", "stable", "swaps", "significant_swaps"]
        last[shares] = 100 * last[shares]
        title = "largest disjoint subsets (% of system pairs)"
        _render(last[["measure", "procedure", "size", *shares]], title, output_format, 2)


def _runner(jobs: int | None, scheduler: str | None) -> Runner:
    from crowdprefs.parallel import Runner

    return Runner.from_options(jobs, scheduler)


@stats_app.command("power")
def power_command(
    scores: ScoresFile,
    measure: Measures = None,
    strata: StrataFile = None,
    stratum_column: StratumColumn = None,
    procedure: Procedures = None,
    samples: Samples = 500,
    step: SizeStep = 5,
    seed: Seed = 0,
    plot: PlotFile = None,
    output: OutputFile = None,
    output_format: Annotated[
        Format, typer.Option("--format", help="Output format.")
    ] = Format.table,
    jobs: StudyJobs = None,
    scheduler: Scheduler = None,
) -> None:
    """Power: the share of system pairs found significant in query subsets of growing size."""
    _study(
        "power", scores, measure, strata, stratum_column, procedure, samples, step, seed, plot,
        output, output_format, _runner(jobs, scheduler),
    )  # fmt: skip


@stats_app.command("stability")
def stability_command(
    scores: ScoresFile,
    measure: Measures = None,
    strata: StrataFile = None,
    stratum_column: StratumColumn = None,
    procedure: Procedures = None,
    samples: Samples = 500,
    step: SizeStep = 5,
    seed: Seed = 0,
    plot: PlotFile = None,
    output: OutputFile = None,
    output_format: Annotated[
        Format, typer.Option("--format", help="Output format.")
    ] = Format.table,
    jobs: StudyJobs = None,
    scheduler: Scheduler = None,
) -> None:
    """Stability: conflicts and swaps between disjoint query subsets, up to half the queries."""
    _study(
        "stability", scores, measure, strata, stratum_column, procedure, samples, step, seed,
        plot, output, output_format, _runner(jobs, scheduler),
    )  # fmt: skip


@stats_app.command("gawm", cls=renamed({"--scale": "--divide-by"}))
def gawm_command(
    scores: ScoresFile,
    measure: Measures = None,
    axioms: Annotated[
        Axioms,
        typer.Option(
            "--axioms",
            help="Weights: A, topics by how they separate systems and systems by how they "
            "conform to the topics' ease; B, systems by how they separate topics; uniform, the "
            "plain mean.",
        ),
    ] = Axioms.A,
    system_mean: Annotated[
        Mean, typer.Option("--system-mean", help="Mean function for system performance E_s.")
    ] = Mean("arithmetic"),
    topic_mean: Annotated[
        Mean, typer.Option("--topic-mean", help="Mean function for topic ease E_t.")
    ] = Mean("arithmetic"),
    divide_by: Annotated[
        float,
        typer.Option(
            "--divide-by",
            help="Divide every score by this first (GAWM needs scores in [0, 1]).",
            parser=finite,
        ),
    ] = 1.0,
    tol: Annotated[
        float, typer.Option("--tol", help="Convergence threshold.", parser=finite)
    ] = 1e-9,
    max_iter: Annotated[
        int, typer.Option("--max-iter", callback=count(1, 1_000_000), help="Maximum iterations.")
    ] = 1000,
    loto: Annotated[
        bool, typer.Option("--loto", help="Also run the leave-one-topic-out predictive check.")
    ] = False,
    output_format: Annotated[
        Format, typer.Option("--format", help="Output format.")
    ] = Format.table,
) -> None:
    """Adaptive-weight means (GAWM) of the systems beside the plain mean and HITS, correlated.

    GAWM weighs each topic by how well it separates the systems, and each system by how it
    conforms to (axioms A) or separates (axioms B) the topics, until the weights settle."""
    from crowdprefs.evaluation import gawm as G

    for name, matrix in _matrices(scores, measure, divide_by).items():
        result = G.gawm(matrix, axioms.value, system_mean.value, topic_mean.value, tol, max_iter)
        systems_hits, _ = G.hits(matrix)
        probability = G.p_better(matrix, result.topics.weight)
        best = result.systems.score.idxmax()
        frame = (
            result.systems.assign(
                hits_authority=systems_hits.authority,
                rank=result.systems.score.rank(ascending=False, method="min").astype(int),
                rank_mean=result.systems["mean"].rank(ascending=False, method="min").astype(int),
                p_best_better=probability.loc[best],
            )
            .sort_values("score", ascending=False)
            .rename_axis("system")
            .reset_index()
        )
        if output_format is Format.csv:
            frame.insert(0, "measure", name)
        status = "converged" if result.converged else "did NOT converge"
        if output_format is Format.table:
            console.print(
                f"{escape(name)}: GAWM axioms {axioms.value}, system mean {system_mean.value}, "
                f"topic mean {topic_mean.value}: {status} after {result.iterations} iterations"
            )
        _render(frame, f"GAWM systems ({name})", output_format)
        if output_format is Format.table:
            correlations = G.correlations(matrix, result).rename("pearson").reset_index()
            _render(
                correlations.rename(columns={"index": "pair"}), "correlations", output_format, 3
            )
            if loto:
                table = G.leave_one_topic_out(
                    matrix, axioms.value, system_mean.value, topic_mean.value, tol, max_iter
                )
                console.print(
                    f"leave-one-topic-out mean Kendall τ with the held-out topic: "
                    f"mean {table.tau_mean.mean():.3f}, GAWM {table.tau_gawm.mean():.3f}"
                )
