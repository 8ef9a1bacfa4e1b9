"""``crowdprefs demo``: every stage of the pipeline on synthetic melodies, in one command."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console, err_console
from crowdprefs.cli.options import DEFAULT_SEED
from crowdprefs.errors import InputError

DEMO_CROWDS = ("simulated", "mturk-fake", "web")
DEMO_MEASURES = ("ADR@5", "nDCG@5", "AG@5")


def _stage(title: str) -> None:
    console.rule(f"[bold]{title}", align="left")


@app.command()
def demo(
    directory: Annotated[
        Path, typer.Argument(help="Folder for the demo (created; resumed if it holds one).")
    ] = Path("crowdprefs-demo"),
    seed: Annotated[int, typer.Option(help="Seed of the melodies, the crowd and the sort.")] = (
        DEFAULT_SEED
    ),
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
    crowd_model: Annotated[
        Path | None,
        typer.Option(help="Simulated crowd model TOML (from 'crowdprefs crowd-model fit')."),
    ] = None,
    jobs: Annotated[int, typer.Option(min=1, help="Parallel audio jobs.")] = 2,
) -> None:
    """Run the whole pipeline on synthetic melodies with a simulated crowd, end to end.

    Stages: MIDI melodies and their variations (the hidden truth is their edit distance to the
    query), audio clips prepared for the HITs, every iteration of the campaign, HIT previews of
    the first batch, the worker audit, and synthetic systems scored against the crowd's lists and
    the truth. Writes candidates.csv, truth.qrel, midi/, project/ (with clips/), lists.qrel,
    preview/, audit.html, runs.txt and evaluation.csv in DIRECTORY.
    """
    if crowd not in DEMO_CROWDS:
        raise InputError(f"the demo runs with --crowd {', '.join(DEMO_CROWDS)}, not {crowd!r}")
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project
    from crowdprefs.cli.core import run_with_progress
    from crowdprefs.demo import create_demo_project, example_runs
    from crowdprefs.evaluation.evaluate import compare_lists, evaluate
    from crowdprefs.hits.render import write_preview
    from crowdprefs.io import read_lists, write_lists, write_runs
    from crowdprefs.quality import audit as auditing
    from crowdprefs.quality.crowd_model import load_crowd_model
    from crowdprefs.quality.report import render

    started = time.perf_counter()
    project_dir = directory / "project"
    if project_dir.exists():
        err_console.print(f"resuming the demo in {directory}")
        project = Project(project_dir)
    else:
        if directory.exists() and any(directory.iterdir()):
            raise InputError(f"{directory} exists and holds no demo; choose another folder")
        model = load_crowd_model(crowd_model) if crowd_model else None
        project = create_demo_project(directory, seed=seed, melodies=True, crowd_model=model)
    truth = read_lists(directory / "truth.qrel")

    with project:
        frame = project.store.candidates()
        sizes = frame.groupby("query").size()
        _stage("1. collection")
        groups = int(truth.groupby("query")["group"].max().sum())
        console.print(
            f"{len(sizes)} query melodies, {len(frame)} variations ({sizes.min()}–{sizes.max()} "
            f"per query) in {directory / 'midi'}; hidden truth: {groups} groups by melodic "
            "edit distance",
            soft_wrap=True,
        )

        if audio:
            from crowdprefs.campaign.clips import prepare_project

            _stage("2. audio clips")
            clips = prepare_project(project, jobs=jobs)
            failed = clips[clips["error"] != ""]
            if len(failed):
                raise InputError(f"{len(failed)} clip(s) failed: {failed['error'].iloc[0]}")
            seconds = project.store.candidates()["seconds"]
            console.print(
                f"{len(clips)} clips rendered, trimmed, loudness-normalised and encoded in "
                f"{project_dir / 'clips'}: {seconds.min():.1f}–{seconds.max():.1f} s, "
                f"mean {seconds.mean():.1f} s",
                soft_wrap=True,
            )

        _stage(f"3. campaign ({crowd} crowd)")
        if crowd == "web":
            from crowdprefs.web import run_web_demo

            run_web_demo(project)
        else:
            run_with_progress(project, crowd, f"demo campaign ({crowd} crowd)")
        lists = driver.lists(project)
        write_lists(lists, directory / "lists.qrel")
        quality = compare_lists(truth, lists, permutations=100, seed=seed, names=("truth", "crowd"))
        console.print(
            f"wrote {directory / 'lists.qrel'}: {int(lists.groupby('query')['group'].max().sum())} "
            f"groups; ADR of the crowd's lists against the truth {_adr(quality):.3f}; "
            f"{len(driver.query_contradictions(project))} non-transitive triples met",
            soft_wrap=True,
        )

        _stage("4. HIT previews")
        written = write_preview(project, 1, directory / "preview")
        console.print(
            f"the {len(written)} HITs of batch 1 rendered to {directory / 'preview'} "
            "(open index.html; add ?assignmentId=x to a HIT's address to answer it)",
            soft_wrap=True,
        )

        _stage("5. worker audit")
        result = auditing.audit_project(project, reference=truth)
        (directory / "audit.html").write_text(render(result, str(project_dir)), encoding="utf-8")
        _print_audit(result, project)

    _stage("6. evaluation")
    runs = example_runs(truth, seed=seed)
    write_runs(runs, directory / "runs.txt")
    by_crowd = evaluate(runs, lists, DEMO_MEASURES, test=None)
    by_truth = evaluate(runs, truth, DEMO_MEASURES, test=None)
    by_crowd.scores.to_csv(directory / "evaluation.csv", index=False)
    _print_evaluation(by_crowd.summary, by_truth.summary)
    console.print(f"demo finished in {time.perf_counter() - started:.1f} s")


def _adr(comparison) -> float:
    """Mean ADR of the crowd's lists scored against the truth (over within-group shuffles)."""
    return float(comparison.loc[comparison["truth"] == "truth", "mean"].iloc[0])


def _print_audit(result, project) -> None:
    from crowdprefs.crowds import get_crowd
    from crowdprefs.quality import audit as auditing

    table = result.iterations
    total = table.iloc[-1]
    flags = result.flags
    console.print(
        f"{int(total['pairs'])} pairs, {result.facts['workers']} workers, mean inter-agreement "
        f"{total['agreement']:.3f}; {flags['worker_id'].nunique()} workers flagged "
        f"({', '.join(sorted(set(flags['flag'])) or ['none'])}); report: audit.html",
        soft_wrap=True,
    )
    crowd = get_crowd("simulated", project)
    kinds = dict(zip(crowd.pool.ids, crowd.pool.kind, strict=True))
    quality = auditing.flag_quality(flags, _series(kinds))
    console.print(
        f"against the planted bots and careless workers: precision {quality['precision']:.2f}, "
        f"recall {quality['recall']:.2f}",
        soft_wrap=True,
    )


def _series(mapping: dict):
    import pandas as pd

    return pd.Series(mapping)


def _print_evaluation(by_crowd, by_truth) -> None:
    table = Table(title="synthetic systems scored against the crowd's lists (and the truth)")
    table.add_column("system")
    for measure in DEMO_MEASURES:
        table.add_column(f"{measure} crowd", justify="right")
        table.add_column("truth", justify="right")
    crowd = by_crowd.pivot(index="system", columns="measure", values="mean")
    truth = by_truth.pivot(index="system", columns="measure", values="mean")
    for system in crowd.sort_values(DEMO_MEASURES[0], ascending=False).index:
        cells = []
        for measure in DEMO_MEASURES:
            cells += [f"{crowd.loc[system, measure]:.3f}", f"{truth.loc[system, measure]:.3f}"]
        table.add_row(system, *cells)
    console.print(table)
