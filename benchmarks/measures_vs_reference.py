"""Our measures against ir_measures (pytrec_eval) on large synthetic runs: time ratio, peak memory.

Both compute P@10, R@10, AP, nDCG@10 (ours: nDCG_trec@10) and R-precision (ours: BEP) for every
system × query, starting from the same pandas DataFrames. Each side runs in its own process so
that its peak resident memory is its own; the per-query values are checked equal on a sample.

    python benchmarks/measures_vs_reference.py [--systems 20 --queries 2000 --depth 100]

Prints our time as a ratio of theirs (target <= 1.0) and both peak memories.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np
import pandas as pd

OURS = ["P@10", "R@10", "AP", "nDCG_trec@10", "BEP"]
THEIRS = ["P@10", "R@10", "AP", "nDCG@10", "Rprec"]


def synthetic(systems: int, queries: int, depth: int, seed: int = 0):
    """Runs ``[system, query, document, rank]`` and levels ``[query, document, gain]``.

    Each query has a pool of ``3 * depth`` documents, two thirds judged with gains 0-3; every
    system returns ``depth`` of them.
    """
    rng = np.random.default_rng(seed)
    pool = 3 * depth
    judged = 2 * depth
    q_names = np.array([f"q{q}" for q in range(queries)])
    d_names = np.array([f"d{d}" for d in range(pool)])
    truth = pd.DataFrame(
        {
            "query": np.repeat(q_names, judged),
            "document": np.tile(d_names[:judged], queries),
            "gain": rng.integers(0, 4, queries * judged).astype(float),
        }
    )
    keys = rng.random((systems, queries, pool))
    picked = np.argsort(keys, axis=2)[:, :, :depth]
    runs = pd.DataFrame(
        {
            "system": np.repeat([f"s{s}" for s in range(systems)], queries * depth),
            "query": np.tile(np.repeat(q_names, depth), systems),
            "document": d_names[picked.reshape(-1)],
            "rank": np.tile(np.arange(1, depth + 1), systems * queries),
        }
    )
    return runs, truth


def ours(runs: pd.DataFrame, truth: pd.DataFrame) -> pd.DataFrame:
    from crowdprefs.evaluation.measures import score

    table = score(runs, truth, OURS)
    table["measure"] = table["measure"].map(dict(zip(OURS, THEIRS, strict=True)))
    return table


def theirs(runs: pd.DataFrame, truth: pd.DataFrame) -> pd.DataFrame:
    import ir_measures

    qrels = pd.DataFrame(
        {
            "query_id": truth["query"],
            "doc_id": truth["document"],
            "relevance": truth["gain"].astype(int),
        }
    )
    measures = [ir_measures.parse_measure(m) for m in THEIRS]
    rows = []
    for system, run in runs.groupby("system", sort=False):
        frame = pd.DataFrame(
            {"query_id": run["query"], "doc_id": run["document"], "score": -run["rank"] * 1.0}
        )
        for metric in ir_measures.iter_calc(measures, qrels, frame):
            rows.append((system, metric.query_id, str(metric.measure), metric.value))
    return pd.DataFrame(rows, columns=["system", "query", "measure", "score"])


def part(which: str, args: argparse.Namespace) -> None:
    """Child process: generate the data, time one side, report time, peak memory and a sample."""
    runs, truth = synthetic(args.systems, args.queries, args.depth)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    start = time.perf_counter()
    table = (ours if which == "ours" else theirs)(runs, truth)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    sample = table[table["query"].isin([f"q{q}" for q in range(0, args.queries, 97)])]
    print(
        json.dumps(
            {
                "seconds": seconds,
                "peak_mb": peak / 1024,
                "extra_mb": (peak - base) / 1024,
                "rows": len(table),
                "sample": sample.to_dict("records"),
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=20)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--json", action="store_true", help="end with the figures as JSON")
    parser.add_argument("--part", choices=["ours", "theirs"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.part:
        part(args.part, args)
        return
    results = {}
    for which in ("ours", "theirs"):
        command = [sys.executable, __file__, "--part", which]
        command += ["--systems", str(args.systems), "--queries", str(args.queries)]
        command += ["--depth", str(args.depth)]
        out = subprocess.run(command, check=True, capture_output=True, text=True).stdout
        results[which] = json.loads(out.strip().splitlines()[-1])
    joined = pd.DataFrame(results["ours"]["sample"]).merge(
        pd.DataFrame(results["theirs"]["sample"]),
        on=["system", "query", "measure"],
        how="outer",
        suffixes=("_ours", "_theirs"),
    )
    worst = float((joined["score_ours"] - joined["score_theirs"]).abs().max())
    rows = args.systems * args.queries * args.depth
    print(
        f"{args.systems} systems x {args.queries} queries x top {args.depth} = {rows:,} run rows; "
        f"measures {', '.join(THEIRS)}"
    )
    for which in ("ours", "theirs"):
        r = results[which]
        print(
            f"  {which:6}: {r['seconds']:8.2f} s  peak RSS {r['peak_mb']:8.0f} MB "
            f"(+{r['extra_mb']:.0f} MB while computing)  {r['rows']:,} scores"
        )
    ratio = results["ours"]["seconds"] / results["theirs"]["seconds"]
    print(f"time ratio ours/ir_measures: {ratio:.3f} (target <= 1.0)")
    print(f"largest difference on {len(joined)} sampled scores: {worst:.2e}")
    if args.json:
        figures = {
            "ours_seconds": results["ours"]["seconds"],
            "theirs_seconds": results["theirs"]["seconds"],
            "ratio": ratio,
            "largest_difference": worst,
            "ours_peak_gb": results["ours"]["peak_mb"] / 1024,
            "theirs_peak_gb": results["theirs"]["peak_mb"] / 1024,
        }
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
