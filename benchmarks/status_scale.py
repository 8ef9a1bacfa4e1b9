"""`status` and `next` on a large project: 1,000 queries × 50 candidates (target < 1 s, < 1 GB).

Builds the project, runs three iterations with the simulated crowd (about 150,000 pairs and
1.5 million answers), then times `driver.status` and `driver.next_batch` on it and reports peak
memory. The baseline for the ratio is the same calls on a 100-query project of the same shape.

    python benchmarks/status_scale.py [--queries 1000] [--candidates 50] [--iterations 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

import pandas as pd

from crowdprefs.campaign import driver
from crowdprefs.campaign.project import Project, Settings, init_project
from crowdprefs.crowds.simulated import SimulatedCrowd
from crowdprefs.quality.crowd_model import CrowdModel, random_truth


def build(root: Path, queries: int, candidates: int, iterations: int) -> Project:
    frame = pd.DataFrame(
        [(f"q{q:04d}", f"q{q:04d}-c{c:03d}") for q in range(queries) for c in range(candidates)],
        columns=["query", "document"],
    )
    frame["audio"] = None
    frame["query_audio"] = None
    project = init_project(root, frame, settings=Settings(answers_per_pair=10))
    crowd = SimulatedCrowd(random_truth(frame, 1), CrowdModel(), seed=1)
    driver.run(project, crowd, max_iterations=iterations)
    return project


def timed(call) -> tuple[float, float]:
    """Wall and CPU seconds of one call (CPU time is what matters on a shared machine)."""
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return time.perf_counter() - wall, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--candidates", type=int, default=50)
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument(
        "--json", action="store_true", help="End with one line of JSON: the figures measured."
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        for label, queries in (("baseline", max(1, args.queries // 10)), ("target", args.queries)):
            started = time.perf_counter()
            project = build(Path(tmp) / label, queries, args.candidates, args.iterations)
            built = time.perf_counter() - started
            fresh = Project(project.root)  # a new process would open the project like this
            status = timed(lambda p=fresh: driver.status(p))
            nxt = timed(lambda p=fresh: driver.next_batch(p))
            answers = fresh.store.conn.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
            results[label] = (status, nxt)
            counted = answers
            print(
                f"{label}: {queries} queries × {args.candidates} candidates, {answers} answers "
                f"(built in {built:.1f} s): status {status[0]:.3f} s wall / {status[1]:.3f} s CPU, "
                f"next {nxt[0]:.3f} s wall / {nxt[1]:.3f} s CPU"
            )
        ratio = results["target"][0][1] / results["baseline"][0][1]
        print(f"status CPU-time ratio target/baseline (10× the queries): {ratio:.1f}")
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"peak memory (whole run, RSS): {peak:.0f} MB")
        if args.json:
            (status, nxt) = results["target"]
            figures = {"answers": counted, "status_s": status[0], "next_s": nxt[0], "peak_mb": peak}
            print(json.dumps(figures))


if __name__ == "__main__":
    main()
