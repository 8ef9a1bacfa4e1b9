"""Aggregation of 1,000,000 pairs × 10 answers vs. a per-pair scipy loop.

Targets (issue 2): ≤ 5 s for the million pairs, ≥ 50× the scipy loop. The scipy loop is timed on
a sample of pairs and scaled to the million (running it whole would take many minutes); CPU time
is reported beside wall time because the machine may be shared.

    python benchmarks/aggregate_speed.py [--pairs 1000000] [--answers 10] [--loop-sample 5000]
"""

from __future__ import annotations

import argparse
import json
import time
import tracemalloc

import numpy as np
from scipy.stats import mannwhitneyu

from crowdprefs.campaign.aggregate import verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--answers", type=int, default=10)
    parser.add_argument("--loop-sample", type=int, default=5000)
    parser.add_argument(
        "--json", action="store_true", help="End with one line of JSON: the figures measured."
    )
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    counts = rng.multinomial(args.answers, [0.25, 0.5, 0.25], size=args.pairs)

    tracemalloc.start()
    wall, cpu = time.perf_counter(), time.process_time()
    verdict, p = verdicts(*counts.T)
    ours_wall, ours_cpu = time.perf_counter() - wall, time.process_time() - cpu
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()

    sample = counts[: args.loop_sample]
    wall, cpu = time.perf_counter(), time.process_time()
    loop_p = np.empty(len(sample))
    for i, (more, equal, less) in enumerate(sample):
        x = np.repeat([1, 0, -1], [more, equal, less])
        loop_p[i] = mannwhitneyu(x, -x).pvalue
    loop_wall = (time.perf_counter() - wall) * args.pairs / len(sample)
    loop_cpu = (time.process_time() - cpu) * args.pairs / len(sample)
    assert np.allclose(loop_p, p[: len(sample)], rtol=1e-12, atol=1e-15)

    print(f"{args.pairs:,} pairs × {args.answers} answers")
    print(
        f"vectorised: {ours_wall:.2f} s wall, {ours_cpu:.2f} s CPU, "
        f"peak {peak / 2**20:.0f} MiB traced"
    )
    print(
        f"scipy loop (scaled from {len(sample):,} pairs): "
        f"{loop_wall:.0f} s wall, {loop_cpu:.0f} s CPU"
    )
    print(f"speed-up: {loop_wall / ours_wall:.0f}× wall, {loop_cpu / ours_cpu:.0f}× CPU")
    print(f"verdicts: {np.bincount(verdict + 1, minlength=3).tolist()} (less, equal, more)")
    if args.json:
        figures = {
            "cpu_s": ours_cpu,
            "wall_s": ours_wall,
            "cpu_speedup": loop_cpu / ours_cpu,
            "wall_speedup": loop_wall / ours_wall,
            "peak_mib": peak / 2**20,
        }
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
