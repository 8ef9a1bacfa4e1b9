"""The simulated crowd at scale: one round against aggregating the same answers.

Target (the redesign issue): one round of the simulated crowd on a 10,000-query ×
30-candidate project (its first batch, every pair answered 10 times: about 2.9 million
answers) costs a few times the CPU of ``crowdprefs aggregate`` on those answers, and every
command stays ≤ 2 GB peak resident memory.

The project is built with the library (init, then the first batch) in a spawned child process;
every measured command then runs as its own process (``python -m crowdprefs ...``), its CPU
seconds (user + system) and peak resident memory read from the kernel's rusage of that child
(:func:`cli_scale.run_process`). The round is ``publish`` then ``collect`` (the simulated crowd
answers every pair at once); then ``aggregate`` decides the same answers, and ``status`` and
``next`` (building batch 2) follow. CPU seconds barely move when other programs share the
machine, so the round-to-aggregate ratio compares runs made under different loads.

    python benchmarks/simulated_crowd_scale.py [--queries 2000] [--candidates 30] [--keep DIR]

The default (2,000 queries) runs in well under a minute; ``--queries 10000`` is the full size
of the issue (a few minutes). On SQLite the round's floor is the database itself: inserting
2.9 million answers into the ``answers`` table and its indexes takes about 35 CPU-seconds
with nothing else around it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from multiprocessing import get_context
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from cli_scale import run_process  # noqa: E402


def build(root: Path, queries: int, candidates: int) -> int:
    """A project of ``queries`` × ``candidates`` (10 answers a pair) with its first batch
    built, not published; returns how many pairs the batch has."""
    import pandas as pd

    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Settings, init_project

    frame = pd.DataFrame(
        [(f"q{q:05d}", f"q{q:05d}-c{c:03d}") for q in range(queries) for c in range(candidates)],
        columns=["query", "document"],
    ).assign(audio=None, query_audio=None)
    project = init_project(root, frame, settings=Settings(answers_per_pair=10))
    iteration = driver.next_batch(project)
    with project:
        return len(project.store.pairs(iteration))


def built_copy(kept: Path, work: Path, queries: int, candidates: int) -> tuple[Path, int]:
    """A fresh copy at ``work`` of the project kept at ``kept`` (built there first, in a spawned
    child, when absent) and how many pairs its batch has."""
    done = kept.with_name(kept.name + ".built")
    if not done.exists():
        shutil.rmtree(kept, ignore_errors=True)
        kept.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        with get_context("spawn").Pool(1) as pool:
            pairs = pool.apply(build, (kept, queries, candidates))
        done.write_text(str(pairs))
        print(f"built {kept.name} in {time.perf_counter() - started:.0f} s", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(kept, work)
    return work, int(done.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=2000, help="10000: the issue's size")
    parser.add_argument("--candidates", type=int, default=30)
    parser.add_argument("--keep", metavar="DIR", help="build the project once into DIR")
    parser.add_argument("--json", action="store_true", help="end with one line of JSON")
    args = parser.parse_args()
    cli = [sys.executable, "-m", "crowdprefs"]
    run_process(
        [sys.executable, "-m", "compileall", "-q", str(Path(__file__).parents[1] / "crowdprefs")]
    )
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        keep = Path(args.keep) if args.keep else Path(tmp) / "built"
        name = f"sim-{args.queries}x{args.candidates}"
        project, pairs = built_copy(keep / name, Path(tmp) / name, args.queries, args.candidates)
        where = str(project)
        print(f"{args.queries} queries × {args.candidates} candidates: {pairs} pairs × 10 answers")
        steps = [
            ("status", ["status", where]),
            ("publish", ["publish", where]),
            ("collect", ["collect", where]),
            ("aggregate", ["aggregate", where]),
            ("status_after", ["status", where]),
            ("next", ["next", where]),
        ]
        for step, command in steps:
            wall, cpu, mb = run_process([*cli, *command])
            figures |= {f"{step}_s": wall, f"{step}_cpu": cpu, f"{step}_mb": mb}
            print(f"  {step:<13} {wall:7.1f} s wall, cpu {cpu:7.1f} s, peak {mb:6.0f} MB")
        round_cpu = figures["publish_cpu"] + figures["collect_cpu"]
        round_mb = max(figures["publish_mb"], figures["collect_mb"])
        aggregate_cpu, aggregate_mb = figures["aggregate_cpu"], figures["aggregate_mb"]
        figures |= {"pairs": pairs, "round_cpu": round_cpu, "round_mb": round_mb,
                    "cpu_ratio": round_cpu / aggregate_cpu}  # fmt: skip
        print(
            f"round (publish + collect): cpu {round_cpu:.1f} s, peak {round_mb:.0f} MB; "
            f"aggregate: cpu {aggregate_cpu:.1f} s, peak {aggregate_mb:.0f} MB; "
            f"round / aggregate: {round_cpu / aggregate_cpu:.1f}× cpu, "
            f"{round_mb / aggregate_mb:.1f}× memory"
        )
        peak = max(figures[f"{step}_mb"] for step, _ in steps)
        figures["peak_mb"] = peak
        print(f"largest peak of any command: {peak:.0f} MB")
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
