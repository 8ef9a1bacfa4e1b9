"""``crowdprefs demo``: every stage of the pipeline on synthetic melodies, in one command."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console, err_console, escape
from crowdprefs.cli.options import DEFAULT_SEED, CrowdModelFile, Jobs, Seed

if TYPE_CHECKING:
    import pandas as pd


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
    query), audio clips prepared for the HITs, every iteration of the campaign (then the same
    campaign with the baseline chroma judge as a machine prior, when librosa is installed), HIT
    previews of the first batch, the worker audit, and synthetic systems scored against the
    crowd's lists and the truth, then ranked again by a campaign that knows them and asks only
    what can change their order. The seed draws the melodies, the crowd and the sort. Writes
    candidates.csv, truth.qrel, midi/, project/ (with clips/), lists.qrel, chroma.csv,
    project-prior/, project-ranked/, preview/, audit.html, runs.txt and evaluation.csv in
    DIRECTORY.
    """
    from crowdprefs.demo import DEMO_FILES, DemoOptions, run_demo
    from crowdprefs.progress import make_progress

    options = DemoOptions(seed=seed, crowd=crowd, audio=audio, crowd_model=crowd_model, jobs=jobs)
    files = {name: directory / path for name, path in DEMO_FILES.items()}
    if files["project"].exists():
        err_console.print(f"resuming the demo in {escape(str(directory))}", highlight=False)
    with make_progress(transient=True) as progress:
        task = progress.add_task("campaign", total=None, visible=False)

        def advance(what: str, done: int, total: int) -> None:
            progress.update(task, description=what, completed=done, total=total, visible=True)

        def ended(name: str, produced: dict) -> None:
            progress.update(task, visible=False)
            STAGE_PRINTERS[name](produced, files, crowd)

        result = run_demo(directory, options, advance, ended)
    console.print(f"demo finished in {result.seconds:.1f} s")


def _stage(title: str) -> None:
    console.rule(f"[bold]{title}", align="left")


def _collection(made: dict, files: dict[str, Path], crowd: str) -> None:
    _stage("1. collection")
    low, high = made["per_query"]
    console.print(
        f"{made['queries']} query melodies, {made['candidates']} variations ({low}–{high} per "
        f"query) in {files['midi']}; hidden truth: {made['truth_groups']} groups by melodic "
        "edit distance",
        soft_wrap=True,
    )


def _clips(made: dict, files: dict[str, Path], crowd: str) -> None:
    clips = made["clips"]
    if clips is None:
        return
    _stage("2. audio clips")
    console.print(
        f"{clips.count} clips rendered, trimmed, loudness-normalised and encoded in "
        f"{files['clips']}: {clips.shortest:.1f}–{clips.longest:.1f} s, mean {clips.mean:.1f} s",
        soft_wrap=True,
    )


def _campaign(made: dict, files: dict[str, Path], crowd: str) -> None:
    _stage(f"3. campaign ({crowd} crowd)")
    console.print(_iteration_table(made["iterations"], crowd))
    web = made["web"]
    if web is not None:
        console.print(
            f"{web.answers} answers posted over HTTP, {len(web.refused)} refused; "
            f"submit latency p95 {1000 * web.p95():.0f} ms"
        )
    console.print(
        f"wrote {files['lists']}: {made['list_groups']} groups; ADR of the crowd's lists against "
        f"the truth {made['adr']:.3f}; {made['contradictions']} non-transitive triples met",
        soft_wrap=True,
    )
    prior = made["prior"]
    if prior is None:
        return
    if prior.reason:
        console.print(f"with a machine prior: skipped ({escape(prior.reason)})", soft_wrap=True)
        return
    console.print(
        f"with a machine prior, the chroma + DTW judge (a baseline, not the truth; Spearman "
        f"{prior.correlation:+.2f} with the hidden truth), in {files['prior_project']}: "
        f"{prior.pairs[1]} pairs asked and {prior.answers[1]} answers against {prior.pairs[0]} "
        f"and {prior.answers[0]}; ADR {prior.adr[1]:.3f} against {prior.adr[0]:.3f}; "
        f"{escape(prior.machine)}",
        soft_wrap=True,
        highlight=False,
    )


def _previews(made: dict, files: dict[str, Path], crowd: str) -> None:
    _stage("4. HIT previews")
    console.print(
        f"the {made['previews']} HITs of batch 1 rendered to {files['preview']} "
        "(open index.html; add ?assignmentId=x to a HIT's address to answer it)",
        soft_wrap=True,
    )


def _audit(made: dict, files: dict[str, Path], crowd: str) -> None:
    _stage("5. worker audit")
    audit = made["audit"]
    total = audit.iterations.iloc[-1]
    flags = audit.flags
    console.print(
        f"{int(total['pairs'])} pairs, {audit.facts['workers']} workers, mean inter-agreement "
        f"{total['agreement']:.3f}; {flags['worker_id'].nunique()} workers flagged "
        f"({', '.join(sorted(set(flags['flag'])) or ['none'])}); report: {files['audit']}",
        soft_wrap=True,
    )
    console.print(
        f"against the planted bots and careless workers: precision "
        f"{made['flag_precision']:.2f}, recall {made['flag_recall']:.2f}",
        soft_wrap=True,
    )
    sure = audit.sureness.summary
    console.print(
        f"how sure the lists are: one changed answer changes {sure['pairs_flips_within']['1']} "
        f"of {sure['pairs']} verdicts; {sure['resamples']} resampled crowds rebuild "
        f"{sure['boundaries_kept']:.0%} of the group boundaries (expected ADR against the "
        f"published lists {sure['expected_adr']:.3f})",
        soft_wrap=True,
    )


def _evaluation(made: dict, files: dict[str, Path], crowd: str) -> None:
    _stage("6. evaluation")
    console.print(_evaluation_table(made["evaluation"]))
    ranked = made["ranked"]
    if ranked is None:
        return
    full, asked = ranked.answers
    console.print(
        f"knowing the systems (init --runs, ADR@5), in {files['ranked_project']}: {asked} "
        f"answers against {full} ({asked / full:.0%}); ranking {' > '.join(ranked.order)} "
        f"(the full campaign's: {' > '.join(ranked.full_order)}, Kendall τ {ranked.tau:.2f}); "
        f"{ranked.decided[0]} of {ranked.decided[1]} pairs of systems decided at 0.95",
        soft_wrap=True,
        highlight=False,
    )


#: What ``demo`` prints as each stage of :data:`crowdprefs.demo.STAGES` ends.
STAGE_PRINTERS = {
    "collection": _collection,
    "clips": _clips,
    "campaign": _campaign,
    "previews": _previews,
    "audit": _audit,
    "evaluation": _evaluation,
}


def _cell(value: float, digits: int) -> str:
    return "-" if math.isnan(value) else f"{value:.{digits}f}"


def _iteration_table(rows: pd.DataFrame, crowd: str) -> Table:
    table = Table(title=f"demo campaign ({crowd} crowd)")
    for name in ("iter.", "pairs", "answers", "workers", "agree.", "med. s", "cost $"):
        table.add_column(name, justify="right")
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


def _evaluation_table(evaluation: pd.DataFrame) -> Table:
    from crowdprefs.demo import DEMO_MEASURES

    table = Table(title="synthetic systems scored against the crowd's lists / the truth")
    table.add_column("system")
    for measure in DEMO_MEASURES:
        table.add_column(f"{measure} crowd / truth", justify="right")
    wide = evaluation.pivot(index="system", columns="measure")
    for system in wide.sort_values(("crowd", DEMO_MEASURES[0]), ascending=False).index:
        table.add_row(
            system,
            *(
                f"{wide.loc[system, ('crowd', m)]:.3f} / {wide.loc[system, ('truth', m)]:.3f}"
                for m in DEMO_MEASURES
            ),
        )
    return table
