"""The studies on every core: wall time of ``--jobs N`` against ``--jobs 1`` in the same run.

Each study runs as a user runs it, through the installed console script, once with ``--jobs 1``
(the baseline: one process, as before) and once with every core (or ``--jobs``), and the two
outputs are compared (they must be identical). Printed per study: the wall and CPU seconds of
each (CPU of the whole process tree), the speed-up, the peak memory of the whole process tree
(proportional set size: pages the workers share with the process they were forked from count
once; sampled every 0.05 s) and the cores the machine gives this process. Workloads:

* ``plan --campaigns 200``: the 2010-sized demo collection (``make_collection(2010)``), fixed
  10 answers against the sequential adaptive design (400 simulated campaigns in all);
* ``stats power``: the MIREX 2011 AMS power study of the power-and-stability paper (4 measures,
  sizes 5…100, ``--samples``), from ``../shared/data`` (skipped when absent);
* ``mtc transfer --splits 24``: the MTC transfer study on MIREX 2011 AMS (skipped when absent).

Each study also runs once at its smallest size (one campaign, sample or split): its time is the
command's fixed cost (start, reading the inputs, the report), which no number of jobs shortens,
and gives Amdahl's bound on the speed-up, printed beside the speed-up measured.

Run: ``python benchmarks/parallel_speedup.py [--jobs N] [--campaigns 200] [--samples 500]
[--splits 24] [--only plan]`` (``unset PYTHONDONTWRITEBYTECODE`` first; the load average is
printed: other work on the machine takes cores from the parallel run).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import psutil

from crowdprefs.demo import make_collection
from crowdprefs.io import write_lists
from crowdprefs.parallel import cores

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mirex2011-ams"


def measure(command: list[str], output: Path) -> dict[str, float]:
    """Run ``command``; its wall and CPU seconds and peak memory (PSS) in MB, of its process
    tree."""
    started = time.perf_counter()
    process = psutil.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak, cpu = 0, {}
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            try:
                tree = [process, *process.children(recursive=True)]
                rss = 0
                for member in tree:
                    try:
                        rss += member.memory_full_info().pss
                        times = member.cpu_times()
                        cpu[member.pid] = times.user + times.system
                    except psutil.Error:
                        pass
                peak = max(peak, rss)
            except psutil.Error:
                pass
            time.sleep(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, err = process.communicate()
    done.set()
    sampler.join()
    wall = time.perf_counter() - started
    if process.returncode != 0:
        sys.exit(f"{' '.join(command)} failed: {err.decode()[-500:]}")
    return {
        "wall": wall,
        "cpu": sum(cpu.values()),
        "rss_mb": peak / 2**20,
        "output": output.read_bytes(),
    }


def compare(
    key: str, name: str, command: Callable[[int], list[str]], size: int, output: Path, jobs: int
) -> dict[str, float]:
    """``command(size)`` with ``--jobs 1`` then ``--jobs jobs``, and ``command(1)`` (the
    command's fixed cost: start, reading, report); prints one line, returns the figures."""
    fixed = measure([*command(1), "--jobs", "1"], output)["wall"]
    base = measure([*command(size), "--jobs", "1"], output)
    par = measure([*command(size), "--jobs", str(jobs)], output)
    same = base.pop("output") == par.pop("output")
    speedup = base["wall"] / par["wall"]
    bound = base["wall"] / (fixed + (base["wall"] - fixed) / jobs)
    print(
        f"{name:28} | 1 job {base['wall']:6.1f} s ({base['cpu']:6.1f} CPU s, "
        f"{base['rss_mb']:4.0f} MB) | {jobs} jobs {par['wall']:6.1f} s "
        f"({par['cpu']:6.1f} CPU s, {par['rss_mb']:4.0f} MB) | ×{speedup:.2f} "
        f"(at most ×{bound:.2f}: {fixed:.1f} s fixed) | identical: {'yes' if same else 'NO'}",
        flush=True,
    )
    return {
        f"{key}_wall_1": base["wall"],
        f"{key}_wall_n": par["wall"],
        f"{key}_cpu_1": base["cpu"],
        f"{key}_cpu_n": par["cpu"],
        f"{key}_speedup": speedup,
        f"{key}_bound": bound,
        f"{key}_fixed": fixed,
        f"{key}_mb_1": base["rss_mb"],
        f"{key}_mb_n": par["rss_mb"],
        f"{key}_identical": float(same),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=cores())
    parser.add_argument("--campaigns", type=int, default=200)
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--splits", type=int, default=24)
    parser.add_argument("--only", choices=["plan", "power", "mtc"], action="append")
    parser.add_argument("--json", action="store_true", help="End with the figures as JSON.")
    args = parser.parse_args()
    script = str(Path(sys.executable).parent / "crowdprefs")  # this environment's program
    if not Path(script).is_file():
        sys.exit(f"the console script {script} is not installed (pip install -e .)")
    only = set(args.only or ["plan", "power", "mtc"])
    print(
        f"cores available: {cores()}; parallel runs use --jobs {args.jobs}; load average "
        f"{os.getloadavg()[0]:.2f}; 'at most': Amdahl's bound from the command's fixed cost"
    )
    figures: dict[str, float] = {"cores": cores(), "jobs": args.jobs}
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        if "plan" in only:
            candidates, truth = make_collection(2010)
            candidates.to_csv(root / "c.csv", index=False)
            write_lists(truth, root / "t.qrel")

            def plan(size: int) -> list[str]:
                return [
                    script, "plan", "--candidates", str(root / "c.csv"), "--truth",
                    str(root / "t.qrel"), "--campaigns", str(size), "--adaptive",
                    "sequential", "-o", str(root / "plan.csv"),
                ]  # fmt: skip

            name = f"plan --campaigns {args.campaigns}"
            figures |= compare("plan", name, plan, args.campaigns, root / "plan.csv", args.jobs)
        if not (DATA / "runs.txt").exists():
            print(f"{DATA} is absent: the MIREX studies are skipped")
        else:
            if "power" in only:
                sys.path.insert(0, str(Path(__file__).parent))
                from power_study import mirex_measures

                rows = [
                    matrix.stack().rename("score").reset_index().assign(measure=measure)
                    for measure, matrix in mirex_measures(DATA).items()
                ]
                scores = pd.concat(rows).set_axis(["system", "query", "score", "measure"], axis=1)
                scores.to_csv(root / "scores.csv", index=False)

                def power(size: int) -> list[str]:
                    return [
                        script, "stats", "power", "--scores", str(root / "scores.csv"),
                        "--strata", str(DATA / "metadata.txt"), "--samples", str(size),
                        "--format", "csv", "-o", str(root / "power.csv"),
                    ]  # fmt: skip

                name = f"stats power --samples {args.samples}"
                figures |= compare(
                    "power", name, power, args.samples, root / "power.csv", args.jobs
                )
            if "mtc" in only:

                def transfer(size: int) -> list[str]:
                    return [
                        script, "mtc", "transfer", "--runs", str(DATA / "runs.txt"),
                        "--judgments", str(DATA / "judgments.txt"), "--metadata",
                        str(DATA / "metadata.txt"), "--splits", str(size),
                        "-o", str(root / "transfer.csv"),
                    ]  # fmt: skip

                name = f"mtc transfer --splits {args.splits}"
                figures |= compare(
                    "mtc", name, transfer, args.splits, root / "transfer.csv", args.jobs
                )
    checked = [value for key, value in figures.items() if key.endswith("_identical")]
    figures["identical"] = min(checked, default=float("nan"))
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
