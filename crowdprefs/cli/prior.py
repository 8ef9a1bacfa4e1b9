"""Machine prior commands: ``crowdprefs prior chroma`` (the baseline chroma + DTW judge).

pandas, librosa and the judge are imported inside the commands: ``--help`` and every other
command start without them.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console, escape
from crowdprefs.cli.options import OUTPUT, finite

prior_app = typer.Typer(
    help="Score the candidates with a machine judge, for init --prior.", no_args_is_help=True
)
app.add_typer(prior_app, name="prior")


@prior_app.command()
def chroma(
    candidates: Annotated[
        Path, typer.Argument(help="CSV with columns query,document,audio,query_audio.")
    ],
    output: Annotated[
        Path, typer.Option(*OUTPUT, help="Write the scores here (CSV query,document,score).")
    ],
    seconds: Annotated[
        float,
        typer.Option(
            min=0.1, max=600, help="Score the first this many seconds of each clip.", parser=finite
        ),
    ] = 30.0,
) -> None:
    """Score each candidate by the chroma DTW alignment of its clip with its query's clip.

    A baseline machine judge, not a ground truth: chroma features (12 pitch classes per frame)
    of the query's and the candidate's clips, aligned by dynamic time warping, the candidate
    transposed to the best of 12 keys; the score is minus the alignment's cost per step (higher
    = more similar). Needs librosa: pip install 'crowdprefs\\[judge]'.
    """
    from crowdprefs.campaign.project import read_candidates
    from crowdprefs.files import output as checked_output
    from crowdprefs.files import write_atomic
    from crowdprefs.machine.chroma import chroma_scores
    from crowdprefs.progress import make_progress

    target = checked_output(output, {"CANDIDATES": candidates})
    started = time.perf_counter()
    frame = read_candidates(candidates)
    with make_progress() as progress:
        task = progress.add_task("chroma features and alignments", total=None)

        def on_clip(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        scores = chroma_scores(frame, seconds=seconds, on_clip=on_clip)
    from crowdprefs.io import csv_text

    write_atomic(target, csv_text(scores, float_format="%.6f"))
    console.print(
        f"{len(scores)} candidates of {scores['query'].nunique()} queries scored in "
        f"{time.perf_counter() - started:.1f} s: {escape(str(output))}",
        highlight=False,
        soft_wrap=True,
    )
