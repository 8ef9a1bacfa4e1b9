"""How well the audit's flags find the simulated crowd's planted workers, and how fast it runs.

1. Flags: runs ``--campaigns`` whole demo campaigns (11 queries, 118 candidates, 10 answers per
   pair) with the default simulated crowd, each with its own seed, and prints the precision and
   recall of :func:`crowdprefs.quality.flags.flag_workers` against the planted careless workers and
   bots (:class:`crowdprefs.crowds.simulated.WorkerPool`), overall and for workers with at least 5
   answers, and per rule.
2. Speed: the vectorised Krippendorff's α (ordinal) against the ``krippendorff`` package, and
   Fleiss' κ against statsmodels, on ``--units`` pairs of 10 answers; and the whole audit of a
   synthetic campaign of one million answers, with peak memory.

Run: ``python benchmarks/audit_flags.py [--campaigns 10] [--units 100000]``
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

import krippendorff
import numpy as np
import pandas as pd
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss

from crowdprefs.campaign import driver
from crowdprefs.crowds.simulated import SimulatedCrowd
from crowdprefs.demo import create_demo_project
from crowdprefs.quality import audit as A
from crowdprefs.quality.agreement import fleiss_kappa, krippendorff_alpha
from crowdprefs.quality.flags import flag_quality, flag_workers
from crowdprefs.quality.frames import project_answers, project_verdicts
from crowdprefs.results_file import FRAME_COLUMNS


def flag_study(campaigns: int) -> dict:
    totals = {"all": [0, 0, 0], ">=5 answers": [0, 0, 0]}  # flagged, planted, true positives
    by_rule: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1, campaigns + 1):
            project = create_demo_project(Path(tmp) / f"c{seed}", seed=seed)
            crowd = SimulatedCrowd.for_project(project)
            driver.run(project, crowd)
            answers = project_answers(project)
            flags = flag_workers(answers, project_verdicts(project, answers))
            kinds = pd.Series(crowd.pool.kind, index=crowd.pool.ids)
            counts = answers.groupby("worker_id").size()
            kinds = kinds[kinds.index.isin(counts.index)]
            for name, chosen in (("all", kinds), (">=5 answers", kinds[counts[kinds.index] >= 5])):
                q = flag_quality(flags[flags["worker_id"].isin(chosen.index)], chosen)
                totals[name] = [
                    t + v
                    for t, v in zip(
                        totals[name], (q["flagged"], q["planted"], q["true_positives"]), strict=True
                    )
                ]
            for flag, group in flags.groupby("flag"):
                bad = kinds.reindex(group["worker_id"]).ne("honest").sum()
                stats = by_rule.setdefault(flag, [0, 0])
                stats[0] += len(group)
                stats[1] += int(bad)
            project.close()
    print(f"flags over {campaigns} simulated demo campaigns (seeds 1..{campaigns}):")
    for name, (flagged, planted, hits) in totals.items():
        print(
            f"  workers {name:>12}: planted {planted:4d}, flagged {flagged:4d}, "
            f"precision {hits / max(flagged, 1):.3f}, recall {hits / max(planted, 1):.3f}"
        )
    for flag, (n, bad) in sorted(by_rule.items()):
        print(f"  rule {flag:>16}: {n:4d} flags, {bad / n:.3f} on planted workers")
    flagged, planted, hits = totals["all"]
    return {
        "planted": planted,
        "flagged": flagged,
        "precision": hits / max(flagged, 1),
        "recall": hits / max(planted, 1),
    }


def synthetic(pairs: int, per: int, rng: np.random.Generator) -> pd.DataFrame:
    """A campaign of ``pairs`` pairs (queries of 10 pairs) × ``per`` answers by 2,000 workers."""
    n = pairs * per
    pair_id = np.repeat(np.arange(pairs), per)
    choice = rng.choice(np.array(["A", "equal", "B"], dtype=object), n, p=[0.25, 0.5, 0.25])
    return pd.DataFrame(
        {
            "iteration": pd.array(pair_id % 8 + 1, dtype="Int64"),
            "pair_id": pair_id,
            "hit_id": pair_id.astype(str),
            "created_at": pd.Timestamp("2010-04-14", tz="UTC")
            + pd.to_timedelta(pair_id % 8, unit="h"),
            "max_assignments": per,
            "reward": 0.02,
            "query": "q" + (pair_id // 10).astype(str),  # 10,000 queries of 11 documents
            "x": "d" + (pair_id % 10).astype(str),
            "y": "pivot",
            "a_is_x": 1,
            "kind": "sort",
            "expected": np.nan,
            "pivot_known": True,
            "worker_id": "w" + rng.integers(0, 2000, n).astype(str),
            "assignment_id": np.arange(n).astype(str),
            "status": "approved",
            "choice": choice,
            "score": pd.Series(choice).map({"A": 1, "equal": 0, "B": -1}).to_numpy(),
            "seconds": rng.lognormal(3, 0.5, n).round(1),
            "listen_seconds": np.nan,
            "accepted_at": pd.Timestamp("2010-04-14", tz="UTC"),
            "submitted_at": pd.Timestamp("2010-04-15", tz="UTC"),
            "background": "",
            "comment": "",
        }
    )[list(FRAME_COLUMNS)]


def speed(units: int) -> dict:
    rng = np.random.default_rng(1)
    counts = rng.multinomial(10, [0.25, 0.5, 0.25], size=units).astype(float)
    data = np.full((10, units), np.nan)
    for k in range(3):  # reliability data: each unit's 10 values, coders in order
        start = counts[:, :k].sum(axis=1).astype(int)
        for j in range(10):
            data[j, (j >= start) & (j < start + counts[:, k])] = k
    started = time.perf_counter()
    ours = krippendorff_alpha(counts)
    t_ours = time.perf_counter() - started
    started = time.perf_counter()
    theirs = krippendorff.alpha(
        reliability_data=data, level_of_measurement="ordinal", value_domain=[0, 1, 2]
    )
    t_theirs = time.perf_counter() - started
    print(
        f"Krippendorff ordinal α on {units} pairs × 10 answers: {t_ours * 1e3:.1f} ms vs "
        f"krippendorff {t_theirs * 1e3:.1f} ms (ratio {t_theirs / t_ours:.1f}x); "
        f"|Δα| = {abs(ours - theirs):.1e}"
    )
    figures = {"alpha_ratio": t_theirs / t_ours, "alpha_difference": abs(ours - theirs)}
    started = time.perf_counter()
    ours = fleiss_kappa(counts)
    t_ours = time.perf_counter() - started
    started = time.perf_counter()
    theirs = statsmodels_fleiss(counts)
    t_theirs = time.perf_counter() - started
    print(
        f"Fleiss κ: {t_ours * 1e3:.1f} ms vs statsmodels {t_theirs * 1e3:.1f} ms "
        f"(ratio {t_theirs / t_ours:.1f}x); |Δκ| = {abs(ours - theirs):.1e}"
    )

    pairs = 100_000
    frame = synthetic(pairs, 10, rng)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    result = A.audit(frame)
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        f"whole audit of {len(frame):,} answers ({pairs:,} pairs, {result.facts['workers']} "
        f"workers): {elapsed:.1f} s, peak RSS {peak / 2**10:.0f} MiB "
        f"(+{(peak - before) / 2**10:.0f} MiB during the audit)"
    )
    return figures | {"audit_answers": len(frame), "audit_s": elapsed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, default=10)
    parser.add_argument("--units", type=int, default=100_000)
    parser.add_argument(
        "--json", action="store_true", help="End with one line of JSON: the figures measured."
    )
    args = parser.parse_args()
    figures = flag_study(args.campaigns) | speed(args.units)
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
