"""MTC on new systems and new queries: every estimator under the transfer protocol (MIREX 2011).

A gain model is trained on last year's judged collection and applied to next year's
submissions: new systems on new queries. Each split of ``../shared/data/mirex2011-ams`` deals
the 18 systems and the 100 queries into disjoint halves (``mtc.transfer_split``): the trained
model learns from the judgments of 9 systems × 50 queries (``mtc train``) and every estimator
is simulated on the *other* 9 systems × the *other* 50 queries (``mtc simulate``), with that
part's judgments as the oracle. No number here comes from a system or a query a model was
fitted on.

Estimators: ``trained`` (the model of the training part; ``--estimator trained --model``),
``judge`` (L_judge + per-system effects, the default without a model), ``fitted``, ``output``,
``uniform`` (each with effects), all with adaptive selection of 20 judgments per iteration, and
``compat`` (the reference tool: L_judge, static weights, no effects). Per split: accuracy after
120 judgments, judgments to the stop (the confidence in the ranking first reaching 0.95),
accuracy at the stop and stated − realised there. Means over splits, with the paired standard
error of each estimator's difference to ``judge`` (the same splits), and the worst split.

The study is :func:`crowdprefs.evaluation.mtc.transfer_study` (also ``crowdprefs mtc
transfer``): each split is a task on its own process, and the numbers are the same for any
``--jobs`` (the CPU seconds aside).

Usage: ``python benchmarks/mtc_transfer.py [--splits 48] [--first 0] [--quick] [--csv F]
[--jobs N]`` (splits are seeded ``first``, ``first + 1``, ...; ``--quick`` leaves out
``fitted``, the slow one; ``--csv`` writes the per-split numbers; ``--jobs``: processes,
default ``CROWDPREFS_JOBS``, else every core).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from crowdprefs.evaluation import mtc
from crowdprefs.evaluation.mtc.transfer import BASELINE
from crowdprefs.io import read_levels, read_runs
from crowdprefs.parallel import Runner
from crowdprefs.progress import make_progress

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mirex2011-ams"
TARGET = 0.95


def load() -> tuple[mtc.Collection, mtc.PairMetadata, np.ndarray]:
    col = mtc.build_collection(read_runs(DATA / "runs.txt"))
    meta = mtc.pair_metadata(col, mtc.read_metadata(DATA / "metadata.txt"))
    truth = mtc.gains_vector(col, read_levels(DATA / "judgments.txt"), "fine")
    return col, meta, truth


def study(splits: int, quick: bool, first: int = 0, jobs: int | None = None) -> pd.DataFrame:
    """The per-split rows of :func:`mtc.transfer_study`, each split a task of ``jobs``
    processes; one line per split (its model) once all are done."""
    col, meta, truth = load()
    names = [n for n in mtc.TRANSFER_ESTIMATORS if not (quick and n == "fitted")]
    runner = Runner.from_options(jobs)
    with make_progress(transient=True) as progress:
        bar = progress.add_task(f"transfer splits {runner.where}", total=splits)
        frame = mtc.transfer_study(
            col, meta, truth, "fine", splits, first, names, target=TARGET, runner=runner,
            on_done=lambda done: progress.update(bar, completed=done),
        )  # fmt: skip
    systems, queries = col.n_systems - col.n_systems // 2, col.n_queries - col.n_queries // 2
    for seed, row in frame.groupby("split", sort=True).first().iterrows():
        print(f"  split {seed}: {systems} systems × {queries} queries, "
              f"{row.pairs} pairs; model σ {row.sigma:.2f}, τ {row.tau:.2f}, "
              f"ω {row.omega:.2f}, η {row.eta:.2f}, λ {row.scale:.2f}, "
              f"held-out RMSE {row.rmse:.1f}", flush=True)  # fmt: skip
    return frame


def report(frame: pd.DataFrame) -> dict[str, float]:
    """Print the table; its figures, as ``{estimator}_{column}``."""
    splits = frame["split"].nunique()
    print(
        f"\nTransfer: {splits} splits; every number on held-out systems AND held-out queries "
        f"(9 systems × 50 queries each); ± = paired standard error of the difference to "
        f"{BASELINE} over the same splits"
    )
    header = (
        f"{'estimator':9} | {'acc. after 120':>22} | {'judgments to stop':>24} | "
        f"{'ratio':>5} | {'acc. at stop (worst)':>20} | {'stated-realised':>22} | "
        f"{'stops at 0':>10} | {'CPU s/run':>9}"
    )
    print(header)
    print("-" * len(header))
    figures = {}
    for name, row in mtc.transfer_summary(frame, BASELINE).iterrows():
        if name == BASELINE:
            early_text, judged_text = f"{row.early:.3f}", f"{row.judgments:.0f}"
            gap_text = f"{row.gap:+.3f}"
        else:
            early_text = f"{row.early:.3f} ({row.early_diff:+.3f}±{row.early_se:.3f})"
            judged_text = f"{row.judgments:.0f} ({row.judgments_diff:+.0f}±{row.judgments_se:.0f})"
            gap_text = f"{row.gap:+.3f} ({row.gap_diff:+.3f}±{row.gap_se:.3f})"
            figures |= {
                f"{name}_d_early": row.early_diff,
                f"{name}_se_early": row.early_se,
                f"{name}_d_judgments": row.judgments_diff,
                f"{name}_se_judgments": row.judgments_se,
            }
        figures |= {
            f"{name}_early": row.early,
            f"{name}_judgments": row.judgments,
            f"{name}_ratio": row.ratio,
            f"{name}_accuracy": row.accuracy,
            f"{name}_worst": row.worst,
            f"{name}_gap": row.gap,
            f"{name}_zero_stops": row.zero_stops,
        }
        print(
            f"{name:9} | {early_text:>22} | {judged_text:>24} | {row.ratio:5.2f} | "
            f"{row.accuracy:.3f} ({row.worst:.3f}) | {gap_text:>22} | "
            f"{int(row.zero_stops):>10} | {row.seconds:9.2f}"
        )
    trained, base = (
        frame[frame.estimator == n].set_index("split")["judgments"] for n in ("trained", BASELINE)
    )
    model = frame[frame.estimator == "trained"]
    print(
        f"\ntrained stops before {BASELINE} on {(trained < base).sum()}/{splits} splits, "
        f"after it on {(trained > base).sum()}; honest stop = mean stated − realised ≤ 0.03 "
        f"and realised ≥ 0.85 in every split"
    )
    print(
        f"trained model: pairs with features outside the training range (clipped) "
        f"{model['outside'].mean():.1%} on average (max {model['outside'].max():.1%}); "
        f"error spread on held-out systems σ {model['sigma'].mean():.2f}, "
        f"τ {model['tau'].mean():.2f}, per query η {model['eta'].mean():.2f}, variance scale λ "
        f"{model['scale'].mean():.2f}; "
        f"training {model['training'].mean():.1f} CPU s"
    )
    return figures | {"trained_eta": model["eta"].mean()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--splits", type=int, default=48)
    parser.add_argument("--first", type=int, default=0, help="seed of the first split")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--csv", type=Path, help="also write the per-split numbers here")
    parser.add_argument("--json", action="store_true", help="end with the figures as JSON")
    parser.add_argument(
        "--jobs", "-j", type=int, help="processes (default: CROWDPREFS_JOBS, else every core)"
    )
    args = parser.parse_args()
    if not (DATA / "runs.txt").exists():
        print(f"{DATA} not found: nothing to measure")
        return
    start = time.perf_counter()
    frame = study(args.splits, args.quick, args.first, args.jobs)
    if args.csv:
        frame.to_csv(args.csv, index=False)
    figures = report(frame)
    print(f"\nwall {time.perf_counter() - start:.0f} s")
    if args.json:
        print(json.dumps({k: float(v) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
