"""MTC on MIREX 2011 AMS (Fine): this implementation against the reference tool's behaviour.

Runs, on ``../shared/data/mirex2011-ams`` (MTC.md, "What the reference tool does"):

1. the compatibility mode (L_judge, static c·(S−c) weights, b = 1, n = 1): judgments to 0.95,
   accuracy, and its time against the reference tool's 69 s (wall and CPU time measured here);
2. the same reference curve continued to 600 judgments (accuracy at every judgment count);
3. our methods (L_judge or the cross-fitted model, per-system random effects, adaptive
   selection, 20 judgments per iteration): the accuracy curve against the reference's from 0
   to 600 judgments, accuracy at 120, the honest stop (confidence reaching 0.95 vs realised
   accuracy) and calibration (stated confidence vs realised accuracy, per bin).

The fitted model is cross-fitted by query folds: every gain it predicts is for a query whose
judgments it never saw. Usage: ``python benchmarks/mtc_vs_reference.py [--quick]``
(``--quick`` skips the fitted model, the slowest part).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from crowdprefs import mtc
from crowdprefs.io import read_levels, read_runs

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mirex2011-ams"
REFERENCE_SECONDS = 69.0  # the reference tool, L_judge b=1 n=1, on this data (MTC.md)
CURVE_END = 600


def load() -> tuple[mtc.Collection, mtc.PairMetadata, np.ndarray]:
    col = mtc.build_collection(read_runs(DATA / "runs.txt"))
    meta = mtc.pair_metadata(col, mtc.read_metadata(DATA / "metadata.txt"))
    truth = mtc.gains_vector(col, read_levels(DATA / "judgments.txt"), "fine")
    return col, meta, truth


def curve(sim: mtc.Simulation, end: int = CURVE_END) -> np.ndarray:
    """Accuracy in force after 0..end judgments (a step function of the log)."""
    done = sim.log["judgments"].to_numpy()
    rows = np.searchsorted(done, np.arange(end + 1), side="right") - 1
    return sim.log["accuracy"].to_numpy()[rows]


def calibration_report(table: pd.DataFrame, label: str) -> float:
    """Print the table; return the largest |accuracy − stated| over bins with ≥ 10 pairs."""
    print(f"  calibration, {label}:")
    print(table.round(3).to_string(index=False).replace("\n", "\n    ").join(["    ", ""]))
    big = table[table["pairs"] >= 10]
    return float((big["accuracy"] - big["stated"]).abs().max()) if len(big) else float("nan")


def main(quick: bool) -> None:
    if not (DATA / "runs.txt").exists():
        print(f"{DATA} not found: nothing to measure")
        return
    col, meta, truth = load()
    print(f"MIREX 2011: {col.n_systems} systems, {col.n_queries} queries, {col.n_pairs} pairs")

    # 1. compatibility mode, timed
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    est = mtc.make_estimator("judge", col, "fine", meta, effects=False)
    compat = mtc.simulate(col, truth, est, mtc.make_selector("reference", col, 1, 1), "fine")
    wall, cpu = time.perf_counter() - start_wall, time.process_time() - start_cpu
    last = compat.log.iloc[-1]
    print("\n[1] compatibility mode, L_judge b=1 n=1 (reference tool: 186 judgments, 0.9020)")
    print(
        f"  judgments {int(last.judgments)}, confidence {last.confidence:.4f}, "
        f"accuracy {last.accuracy:.4f}, tau {last.tau:.4f}"
    )
    print(
        f"  time: wall {wall:.2f} s, CPU {cpu:.2f} s; speed-up vs the reference's "
        f"{REFERENCE_SECONDS:.0f} s: {REFERENCE_SECONDS / wall:.0f}x (wall), "
        f"{REFERENCE_SECONDS / cpu:.0f}x (CPU)"
    )
    max_gap = calibration_report(compat.calibration(len(compat.log) - 1), "reference at its stop")
    print(f"  largest |accuracy - stated| in bins with >= 10 pairs: {max_gap:.3f}")

    # 2. the reference's curve to 600 judgments
    reference = mtc.simulate(
        col,
        truth,
        mtc.make_estimator("judge", col, "fine", meta, effects=False),
        mtc.make_selector("reference", col, 1, 1),
        "fine",
        max_judgments=CURVE_END,
        stop_at_target=False,
    )
    ref_curve = curve(reference)

    # 3. ours
    methods = [("judge", "L_judge + random effects, adaptive")]
    if not quick:
        methods.append(("fitted", "cross-fitted model + random effects, adaptive"))
    for name, label in methods:
        print(f"\n[3] {label} (b = 20 pairs per iteration)")
        start = time.perf_counter()
        sim = mtc.simulate(
            col,
            truth,
            mtc.make_estimator(name, col, "fine", meta, effects=True),
            mtc.make_selector("adaptive", col, 20, 1),
            "fine",
        )
        seconds = time.perf_counter() - start
        ours = curve(sim, min(CURVE_END, int(sim.log["judgments"].iloc[-1])))
        ref_part = ref_curve[: ours.size]
        below = np.flatnonzero(ours < ref_part - 1e-12)
        print(f"  time {seconds:.1f} s")
        for j in (0, 60, 120, 186, 300, 600):
            if j < ours.size:
                print(f"  after {j:4d}: accuracy {ours[j]:.4f} (reference {ref_curve[j]:.4f})")
        print(
            f"  curve 0..{ours.size - 1}: at or above the reference at "
            f"{ours.size - below.size}/{ours.size} judgment counts; mean accuracy "
            f"{ours.mean():.4f} vs {ref_part.mean():.4f}; worst shortfall "
            f"{(ref_part - ours).max():.4f}"
        )
        stop = sim.first_reaching(0.95)
        if stop is None:
            print("  confidence 0.95 never reached")
            continue
        row = sim.log.iloc[stop]
        print(
            f"  honest stop: confidence {row.confidence:.4f} reached after {int(row.judgments)} "
            f"judgments ({row.judgments / col.n_pairs:.1%}); accuracy {row.accuracy:.4f}, "
            f"tau {row.tau:.4f}; |accuracy - confidence| = {abs(row.accuracy - row.confidence):.3f}"
        )
        gap_stop = calibration_report(sim.calibration(stop), "pairs at the stop")
        gap_pool = calibration_report(
            sim.calibration(slice(0, stop + 1)), "pairs of every iteration up to the stop"
        )
        print(
            f"  largest |accuracy - stated| in bins with >= 10 pairs: at the stop {gap_stop:.3f}, "
            f"pooled {gap_pool:.3f}"
        )


if __name__ == "__main__":
    main(quick="--quick" in sys.argv[1:])
