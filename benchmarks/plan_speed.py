"""How fast ``plan`` simulates whole campaigns: 100 campaigns of 1,000 queries × 30 candidates.

Target (issue 10): under a minute. Every answer is given by a worker of the campaign's pool
(distinct workers per pair, each with their own parameters). CPU time is printed with the wall
time: on the shared 2-core machine the wall time depends on everyone else's load (the load
average is printed too). Baseline in the same run: one campaign of the Eval05-sized demo
collection through the real driver (SQLite state, the simulated crowd backend), against the
in-memory simulation of :mod:`crowdprefs.quality.planning` on the same collection; the ratio is the
speed-up per campaign. Peak memory of the large run is reported too.

Run: ``python benchmarks/plan_speed.py [--campaigns 100]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from crowdprefs.campaign import driver
from crowdprefs.campaign.adaptive import StoppingRule
from crowdprefs.crowds import get_crowd
from crowdprefs.demo import create_demo_project, make_collection
from crowdprefs.quality.planning import Design, simulate


def large_truth(queries: int, candidates: int, seed: int = 1) -> pd.DataFrame:
    """``queries`` × ``candidates`` with groups of about three candidates."""
    rng = np.random.default_rng(seed)
    query = np.repeat([f"q{i:04d}" for i in range(queries)], candidates)
    document = np.tile([f"d{j:02d}" for j in range(candidates)], queries)
    group = rng.integers(1, candidates // 3 + 1, queries * candidates)
    return pd.DataFrame({"query": query, "document": document, "group": group})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, default=100)
    parser.add_argument(
        "--json", action="store_true", help="End with one line of JSON: the figures measured."
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        project = create_demo_project(Path(folder) / "demo")
        started = time.perf_counter()
        with project:
            driver.run(project, get_crowd("simulated", project))
        driver_seconds = time.perf_counter() - started
    _, truth = make_collection(2010)
    started = time.perf_counter()
    simulate(truth, Design(), campaigns=20)
    memory_seconds = (time.perf_counter() - started) / 20
    print(
        f"Eval05 demo, one campaign: driver {driver_seconds:.2f} s, in-memory "
        f"{memory_seconds:.3f} s: {driver_seconds / memory_seconds:.0f}x faster"
    )

    big = large_truth(1000, 30)
    figures = {}
    for name, design in (("fixed 10", Design()), ("sequential", Design(adaptive=StoppingRule()))):
        simulate(big.head(60), design, campaigns=1)  # builds the decision table once
        started, cpu = time.perf_counter(), time.process_time()
        frame = simulate(big, design, campaigns=args.campaigns)
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(
            f"1,000 queries x 30 candidates, {args.campaigns} campaigns, {name}: {seconds:.1f} s "
            f"wall, {cpu:.1f} s CPU ({cpu / 60:.2f} of the 60 s target), load average "
            f"{os.getloadavg()[0]:.1f}, peak RSS so far {peak:.0f} MiB; "
            f"mean {frame['pairs'].mean():.0f} pairs, {frame['answers'].mean():.0f} answers, "
            f"{frame['rounds'].mean():.1f} rounds, ADR {frame['adr'].mean():.3f}"
        )
        key = name.split()[0]
        figures |= {f"{key}_cpu": cpu, f"{key}_wall": seconds}
        figures |= {
            f"{key}_pairs": frame["pairs"].mean(),
            f"{key}_answers": frame["answers"].mean(),
        }
    figures["load_average"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
