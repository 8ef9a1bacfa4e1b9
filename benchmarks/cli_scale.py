"""The CLI at scale, as a user lives it: whole `crowdprefs` processes on large projects.

Targets (the redesign issue): `status` and `next` on a 1,000-query × 50-candidate project
≤ 3× the start-up of a bare typer app with as many commands; aggregating a whole first batch
of 10,000 queries × 50 candidates (490,000 pairs × 10 answers) ≤ 10 s and ≤ 1 GB peak; every
command on that 10,000-query project ≤ 2 GB peak.

Each project is built in this process with the library (init, then iterations with the
simulated crowd); every measured command then runs as its own process
(`python -m crowdprefs ...`), timed by wall clock, its peak resident memory read from the
kernel's rusage of that child (`os.wait4`). The baseline is a bare typer app's `--help`,
run the same way in the same run.

    python benchmarks/cli_scale.py [--queries 1000] [--big-queries 10000] [--candidates 50]
                                   [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pandas as pd

from crowdprefs.campaign import driver
from crowdprefs.campaign.project import Project, Settings, init_project
from crowdprefs.crowds.simulated import CrowdModel, SimulatedCrowd, random_truth

BARE_TYPER = textwrap.dedent(
    """
    import typer
    app = typer.Typer(add_completion=False)
    for i in range({commands}):
        app.command(f"command-{{i}}")(lambda directory: None)
    app()
    """
)


def run_process(command: list[str]) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of one child process (its output discarded)."""
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        error = child.stderr.read().decode(errors="replace").strip().splitlines()
        raise SystemExit(f"{' '.join(command[2:])} failed: {error[-1] if error else '?'}")
    return wall, usage.ru_maxrss / 1024


def median_run(command: list[str], repeat: int) -> tuple[float, float]:
    runs = [run_process(command) for _ in range(repeat)]
    return statistics.median(w for w, _ in runs), max(m for _, m in runs)


def build(root: Path, queries: int, candidates: int, iterations: int, aggregate_last: bool):
    """A project of ``queries`` × ``candidates`` after ``iterations`` batches answered by the
    simulated crowd (10 answers a pair); the last batch left collected but not aggregated
    unless ``aggregate_last``."""
    frame = pd.DataFrame(
        [(f"q{q:05d}", f"q{q:05d}-c{c:03d}") for q in range(queries) for c in range(candidates)],
        columns=["query", "document"],
    )
    project = init_project(root, frame, settings=Settings(answers_per_pair=10))
    crowd = SimulatedCrowd(random_truth(frame, 1), CrowdModel(), seed=1)
    for done in range(iterations):
        driver.next_batch(project)
        driver.publish(project, crowd)
        driver.collect(project, crowd)
        if done < iterations - 1 or aggregate_last:
            driver.aggregate(project)
    return project


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--big-queries", type=int, default=10000)
    parser.add_argument("--candidates", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cli = [sys.executable, "-m", "crowdprefs"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        bare = tmp / "bare.py"
        bare.write_text(BARE_TYPER.format(commands=40))
        baseline, _ = median_run([sys.executable, str(bare), "--help"], args.repeat)
        print(f"baseline: bare typer app --help {baseline:.3f} s")
        help_time, help_mb = median_run([*cli, "--help"], args.repeat)
        print(
            f"crowdprefs --help: {help_time:.3f} s ({help_time / baseline:.1f}×), {help_mb:.0f} MB"
        )

        started = time.perf_counter()
        mid = build(tmp / "mid", args.queries, args.candidates, 3, aggregate_last=True)
        print(
            f"built {args.queries} × {args.candidates} after 3 iterations in "
            f"{time.perf_counter() - started:.0f} s"
        )
        for command in (["status"], ["next"]):
            wall, mb = median_run([*cli, *command, str(mid.root)], args.repeat)
            print(
                f"{args.queries} queries: {command[0]} {wall:.2f} s ({wall / baseline:.1f}× the "
                f"bare app), peak {mb:.0f} MB"
            )

        started = time.perf_counter()
        big = build(tmp / "big", args.big_queries, args.candidates, 1, aggregate_last=False)
        pairs = len(Project(big.root).store.pairs(1))
        print(
            f"built {args.big_queries} × {args.candidates}, first batch collected "
            f"({pairs} pairs × 10 answers) in {time.perf_counter() - started:.0f} s"
        )
        wall, mb = run_process([*cli, "aggregate", str(big.root)])
        print(f"{args.big_queries} queries: aggregate {wall:.1f} s, peak {mb:.0f} MB")
        for command in (["status"], ["next"], ["export", "--partial", "-o", str(tmp / "l.qrel")]):
            wall, mb = run_process([*cli, *command[:1], str(big.root), *command[1:]])
            print(f"{args.big_queries} queries: {command[0]} {wall:.1f} s, peak {mb:.0f} MB")


if __name__ == "__main__":
    main()
