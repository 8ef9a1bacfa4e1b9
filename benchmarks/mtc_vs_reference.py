"""MTC on MIREX 2011 AMS (Fine): this implementation against the reference tool's behaviour.

Runs, on ``../shared/data/mirex2011-ams`` (MTC.md, "What the reference tool does"):

1. the compatibility mode (L_judge, static c·(S−c) weights, b = 1, n = 1): judgments to 0.95,
   accuracy, and its time against the reference tool's 69 s (wall and CPU time measured here);
2. the same reference curve continued to 600 judgments (accuracy at every judgment count);
3. the estimators that need no trained model, with per-system errors and adaptive selection
   of 20 judgments per iteration (L_judge, the default without a model, and the refitted
   model): the accuracy curve against the reference's from 0 to 600 judgments, accuracy at
   120, the stop (confidence reaching 0.95 vs realised accuracy) and calibration (stated
   confidence vs realised accuracy, per bin);
4. the same comparison over query-bootstrap collections (the 100 queries drawn with
   replacement, 20 seeded draws): one collection's curve moves by a pair or two with the luck
   of a few near-tied systems, so a method is better only if it is better on average here.

A trained gain model is measured only on systems and queries it was not trained on:
``benchmarks/mtc_transfer.py``. The refitted model is cross-fitted by query folds on the
judgments made so far; L_judge carries the reference coefficients (fitted by the seed's
authors on other MIREX editions).

Usage: ``python benchmarks/mtc_vs_reference.py [--quick]`` (``--quick`` skips the refitted
model, the slowest part, and draws 5 bootstrap collections).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from crowdprefs.evaluation import mtc
from crowdprefs.io import read_levels, read_runs

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mirex2011-ams"
REFERENCE_SECONDS = 69.0  # the reference tool, L_judge b=1 n=1, on this data (MTC.md)
CURVE_END = 600


def load() -> tuple[mtc.Collection, mtc.PairMetadata, np.ndarray]:
    col = mtc.build_collection(read_runs(DATA / "runs.txt"))
    meta = mtc.pair_metadata(col, mtc.read_metadata(DATA / "metadata.txt"))
    truth = mtc.gains_vector(col, read_levels(DATA / "judgments.txt"), "fine")
    return col, meta, truth


def reference_run(
    col: mtc.Collection, truth: np.ndarray, meta: mtc.PairMetadata, **kwargs
) -> mtc.Simulation:
    """The reference tool's method: L_judge, static c·(S−c) weights, one judgment at a time."""
    estimator = mtc.make_estimator("judge", col, "fine", meta, effects=False)
    return mtc.simulate(
        col, truth, estimator, mtc.make_selector("reference", col, 1, 1), "fine", **kwargs
    )


def our_run(
    col: mtc.Collection, truth: np.ndarray, meta: mtc.PairMetadata, model: str, **kwargs
) -> mtc.Simulation:
    """Ours: ``model`` with per-system errors, adaptive selection, 20 judgments per iteration."""
    estimator = mtc.make_estimator(model, col, "fine", meta, effects=True)
    return mtc.simulate(
        col, truth, estimator, mtc.make_selector("adaptive", col, 20, 1), "fine", **kwargs
    )


def resampled_collections(draws: int, seed: int = 0):
    """Collections of 100 queries drawn with replacement (a drawn query is renamed ``q#i`` and
    keeps its runs, judgments and metadata): (collection, metadata, truth)."""
    runs, levels = read_runs(DATA / "runs.txt"), read_levels(DATA / "judgments.txt")
    metadata = mtc.read_metadata(DATA / "metadata.txt")
    queries = runs["query"].unique()
    rng = np.random.default_rng(seed)
    for _ in range(draws):
        drawn = rng.choice(queries, size=len(queries), replace=True)
        renamed = [f"{q}#{i}" for i, q in enumerate(drawn)]
        rename = pd.DataFrame({"query": drawn, "renamed": renamed})

        def redraw(frame: pd.DataFrame, rename=rename) -> pd.DataFrame:
            merged = frame.merge(rename, on="query").drop(columns="query")
            return merged.rename(columns={"renamed": "query"})[frame.columns]

        col = mtc.build_collection(redraw(runs))
        drawn_meta = metadata.set_index("document").loc[drawn].reset_index(drop=True)
        drawn_meta["document"] = rename["renamed"]
        meta = mtc.pair_metadata(col, pd.concat([metadata, drawn_meta], ignore_index=True))
        yield col, meta, mtc.gains_vector(col, redraw(levels), "fine")


def stop_of(sim: mtc.Simulation, target: float = 0.95) -> tuple[float, float, float] | None:
    """(judgments, accuracy, confidence) where the confidence first reached ``target``."""
    first = sim.first_reaching(target)
    if first is None:
        return None
    row = sim.log.iloc[first]
    return row.judgments, row.accuracy, row.confidence


def resampling_study(label: str, draws: int, models: tuple[str, ...]) -> dict[str, float]:
    """Section 4: the reference and ours over ``draws`` bootstrap collections; the figures of
    their stops."""
    figures = {}
    print(f"\n{label}")
    names = ("reference", *models)
    curves: dict[str, list[np.ndarray]] = {name: [] for name in names}
    stops: dict[str, list[tuple[float, float, float]]] = {name: [] for name in names}
    pooled: dict[str, list[tuple[np.ndarray, np.ndarray]]] = {name: [] for name in models}
    for col, meta, truth in resampled_collections(draws):
        runs = {
            "reference": reference_run(
                col, truth, meta, max_judgments=CURVE_END, stop_at_target=False
            )
        }
        for model in models:
            runs[model] = our_run(col, truth, meta, model, stop_at_target=False, max_judgments=3000)
        for name, sim in runs.items():
            curves[name].append(curve(sim))
            stop = stop_of(sim)
            if stop is not None:
                stops[name].append(stop)
                if name in pooled:
                    first = sim.first_reaching(0.95)
                    pooled[name].append((sim.confidences[: first + 1], sim.correct[: first + 1]))
    ref = np.array(curves["reference"])
    for model in models:
        own = np.array(curves[model])
        print(f"  {model} (reference in brackets):")
        for j in (0, 60, 120, 186, 300, 600):
            print(
                f"    after {j:4d}: mean accuracy {own[:, j].mean():.4f} ({ref[:, j].mean():.4f});"
                f" worst {own[:, j].min():.4f} ({ref[:, j].min():.4f})"
            )
        mean_own, mean_ref = own.mean(axis=0), ref.mean(axis=0)
        print(
            f"    mean curve 0..{CURVE_END}: {mean_own.mean():.4f} vs {mean_ref.mean():.4f}; at or "
            f"above the reference's mean curve at {(mean_own >= mean_ref - 1e-12).sum()}/"
            f"{mean_own.size} counts; collections ahead on average: "
            f"{(own.mean(axis=1) > ref.mean(axis=1)).sum()}/{draws}; at or above the "
            f"reference everywhere: {(own >= ref - 1e-12).all(axis=1).sum()}/{draws}"
        )
    for name in names:
        if stops[name]:
            done, accuracy, confidence = np.array(stops[name]).T
            figures |= {
                f"bootstrap_{name}_judgments": done.mean(),
                f"bootstrap_{name}_reached": len(done),
                f"bootstrap_{name}_accuracy": accuracy.mean(),
                f"bootstrap_{name}_worst_gap": np.abs(accuracy - confidence).max(),
            }
            print(
                f"  {name}: confidence 0.95 reached in {len(done)}/{draws}: judgments "
                f"{done.mean():.0f} (range {done.min():.0f}-{done.max():.0f}), accuracy "
                f"{accuracy.mean():.4f} at confidence {confidence.mean():.4f}; largest "
                f"|accuracy - confidence| {np.abs(accuracy - confidence).max():.3f}"
            )
    for model in models:
        if pooled[model]:
            conf = np.concatenate([c.ravel() for c, _ in pooled[model]])
            correct = np.concatenate([k.ravel() for _, k in pooled[model]])
            table = mtc.calibration_table(conf, correct)
            gap = calibration_report(
                table, f"{model}, every iteration to the stop, all collections"
            )
            print(f"  largest |accuracy - stated| in bins with >= 10 pairs: {gap:.3f}")
    return figures


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


def report_method(
    col: mtc.Collection, sim: mtc.Simulation, ref_curve: np.ndarray, seconds: float
) -> dict[str, float]:
    """Section 3's lines for one run: the curve against the reference, the stop, calibration;
    its figures (the stop's only when it stops)."""
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
    figures = {
        "after_120": ours[120],
        "at_or_above": ours.size - below.size,
        "counts": ours.size,
        "mean": ours.mean(),
        "reference_mean": ref_part.mean(),
    }
    stop = sim.first_reaching(0.95)
    if stop is None:
        print("  confidence 0.95 never reached")
        return figures
    row = sim.log.iloc[stop]
    figures |= {
        "judgments": row.judgments,
        "percent": 100 * row.judgments / col.n_pairs,
        "accuracy": row.accuracy,
        "confidence": row.confidence,
    }
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
    return figures


def main(quick: bool, as_json: bool = False) -> None:
    if not (DATA / "runs.txt").exists():
        print(f"{DATA} not found: nothing to measure")
        return
    col, meta, truth = load()
    print(f"MIREX 2011: {col.n_systems} systems, {col.n_queries} queries, {col.n_pairs} pairs")

    # 1. compatibility mode, timed
    start_wall, start_cpu = time.perf_counter(), time.process_time()
    compat = reference_run(col, truth, meta)
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
    ref_curve = curve(
        reference_run(col, truth, meta, max_judgments=CURVE_END, stop_at_target=False)
    )
    figures = {
        "compat_judgments": last.judgments,
        "compat_percent": 100 * last.judgments / col.n_pairs,
        "compat_accuracy": last.accuracy,
        "compat_confidence": last.confidence,
        "reference_after_120": ref_curve[120],
    }

    # 3. ours
    methods = [("judge", "L_judge + per-system errors, adaptive (the default without a model)")]
    if not quick:
        methods.append(("fitted", "refitted model (cross-fitted) + per-system errors, adaptive"))
    for name, label in methods:
        print(f"\n[3] {label} (b = 20 pairs per iteration)")
        start = time.perf_counter()
        sim = our_run(col, truth, meta, name, stop_at_target=False, max_judgments=3000)
        ran = report_method(col, sim, ref_curve, time.perf_counter() - start)
        figures |= {f"{name}_{key}": value for key, value in ran.items()}
    draws = 5 if quick else 20
    figures |= resampling_study(
        f"[4] over {draws} query-bootstrap collections (seeded)", draws, ("judge",)
    )
    if as_json:
        print(json.dumps({k: float(v) for k, v in figures.items()}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="Skip the refitted model (the slowest part); draw 5 bootstrap collections.",
    )
    parser.add_argument("--json", action="store_true", help="End with the figures as JSON.")
    args = parser.parse_args()
    main(quick=args.quick, as_json=args.json)
