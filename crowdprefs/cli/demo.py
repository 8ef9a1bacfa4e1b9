"""``crowdprefs demo``: every stage of the pipeline on synthetic melodies, in one command."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console, err_console
from crowdprefs.cli.options import DEFAULT_SEED, CrowdModelFile, Jobs, Seed

if TYPE_CHECKING:
    from crowdprefs.demo import DemoResult


@app.command()
def demo(
    directory: Annotated[
        Path, typer.Argument(help="Folder for the demo (created; resumed if it holds one).")
    ] = Path("crowdprefs-demo"),
    seed: Seed = DEFAULT_SEED,
    crowd: Annotated[
        str,
        typer.Option(
            "--crowd",
            help="simulated; mturk-fake: the same simulated workers behind a local MTurk fake; "
            "web: simulated judges posting over HTTP to a local 'crowdprefs serve'.",
        ),
    ] = "simulated",
    audio: Annotated[
        bool, typer.Option(help="Render, trim and encode the melodies' clips (the slow stage).")
    ] = True,
    crowd_model: CrowdModelFile = None,
    jobs: Jobs = 2,
) -> None:
    """Run the whole pipeline on synthetic melodies with a simulated crowd, end to end.

    Stages: MIDI melodies and their variations (the hidden truth is their edit distance to the
    query), audio clips prepared for the HITs, every iteration of the campaign, HIT previews of
    the first batch, the worker audit, and synthetic systems scored against the crowd's lists and
    the truth. The seed draws the melodies, the crowd and the sort. Writes candidates.csv,
    truth.qrel, midi/, project/ (with clips/), lists.qrel, preview/, audit.html, runs.txt and
    evaluation.csv in DIRECTORY.
    """
    from crowdprefs.demo import DemoOptions, run_demo
    from crowdprefs.progress import make_progress

    options = DemoOptions(seed=seed, crowd=crowd, audio=audio, crowd_model=crowd_model, jobs=jobs)
    with make_progress(transient=True) as progress:
        task = progress.add_task("campaign", total=None)

        def advance(what: str, done: int, total: int) -> None:
            progress.update(task, description=what, completed=done, total=total)

        result = run_demo(directory, options, advance)
    _print(result)


def _stage(title: str) -> None:
    console.rule(f"[bold]{title}", align="left")


def _print(result: DemoResult) -> None:
    files = result.files
    if result.resumed:
        err_console.print(f"resumed the demo in {result.folder}")
    _stage("1. collection")
    low, high = result.per_query
    console.print(
        f"{result.queries} query melodies, {result.candidates} variations ({low}–{high} per "
        f"query) in {files['midi']}; hidden truth: {result.truth_groups} groups by melodic "
        "edit distance",
        soft_wrap=True,
    )
    if result.clips is not None:
        _stage("2. audio clips")
        clips = result.clips
        console.print(
            f"{clips.count} clips rendered, trimmed, loudness-normalised and encoded in "
            f"{files['clips']}: {clips.shortest:.1f}–{clips.longest:.1f} s, "
            f"mean {clips.mean:.1f} s",
            soft_wrap=True,
        )
    _stage(f"3. campaign ({result.crowd} crowd)")
    console.print(_iteration_table(result))
    if result.web is not None:
        console.print(
            f"{result.web.answers} answers posted over HTTP, {len(result.web.refused)} refused; "
            f"submit latency p95 {1000 * result.web.p95():.0f} ms"
        )
    console.print(
        f"wrote {files['lists']}: {result.list_groups} groups; ADR of the crowd's lists against "
        f"the truth {result.adr:.3f}; {result.contradictions} non-transitive triples met",
        soft_wrap=True,
    )
    _stage("4. HIT previews")
    console.print(
        f"the {result.previews} HITs of batch 1 rendered to {files['preview']} "
        "(open index.html; add ?assignmentId=x to a HIT's address to answer it)",
        soft_wrap=True,
    )
    _stage("5. worker audit")
    audit = result.audit
    total = audit.iterations.iloc[-1]
    flags = audit.flags
    console.print(
        f"{int(total['pairs'])} pairs, {audit.facts['workers']} workers, mean inter-agreement "
        f"{total['agreement']:.3f}; {flags['worker_id'].nunique()} workers flagged "
        f"({', '.join(sorted(set(flags['flag'])) or ['none'])}); report: {files['audit']}",
        soft_wrap=True,
    )
    console.print(
        f"against the planted bots and careless workers: precision {result.flag_precision:.2f}, "
        f"recall {result.flag_recall:.2f}",
        soft_wrap=True,
    )
    _stage("6. evaluation")
    console.print(_evaluation_table(result))
    console.print(f"demo finished in {result.seconds:.1f} s")


def _cell(value: float, digits: int) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def _iteration_table(result: DemoResult) -> Table:
    table = Table(title=f"demo campaign ({result.crowd} crowd)")
    for name in ("iter.", "pairs", "answers", "workers", "agree.", "med. s", "cost $"):
        table.add_column(name, justify="right")
    rows = result.iterations
    for row in rows.itertuples(index=False):
        table.add_row(
            str(row.iteration),
            str(row.pairs),
            str(row.answers),
            str(row.workers),
            _cell(row.agreement, 3),
            _cell(row.median_seconds, 1),
            f"{row.cost:.2f}",
        )
    table.add_row(
        "total",
        str(rows["pairs"].sum()),
        str(rows["answers"].sum()),
        "",
        _cell(rows["agreement"].mean(), 3),
        "",
        f"{rows['cost'].sum():.2f}",
        end_section=True,
    )
    return table


def _evaluation_table(result: DemoResult) -> Table:
    from crowdprefs.demo import DEMO_MEASURES

    table = Table(title="synthetic systems scored against the crowd's lists / the truth")
    table.add_column("system")
    for measure in DEMO_MEASURES:
        table.add_column(f"{measure} crowd / truth", justify="right")
    wide = result.evaluation.pivot(index="system", columns="measure")
    for system in wide.sort_values(("crowd", DEMO_MEASURES[0]), ascending=False).index:
        table.add_row(
            system,
            *(
                f"{wide.loc[system, ('crowd', m)]:.3f} / {wide.loc[system, ('truth', m)]:.3f}"
                for m in DEMO_MEASURES
            ),
        )
    return table
