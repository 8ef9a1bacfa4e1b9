"""MTC on new systems and new queries: every estimator under the transfer protocol (MIREX 2011).

A gain model is trained on last year's judged collection and applied to next year's
submissions: new systems on new queries. Each split of ``../shared/data/mirex2011-ams`` deals
the 18 systems and the 100 queries into disjoint halves (``mtc.transfer_split``): the trained
model learns from the judgments of 9 systems × 50 queries (``mtc train``) and every estimator
is simulated on the *other* 9 systems × the *other* 50 queries (``mtc simulate``), with that
part's judgments as the oracle. No number here comes from a system or a query a model was
fitted on.

Estimators: ``trained`` (the model of the training part; ``--estimator trained --model``),
``judge`` (L_judge + per-system effects, the default without a model), ``fitted``, ``output``,
``uniform`` (each with effects), all with adaptive selection of 20 judgments per iteration, and
``compat`` (the reference tool: L_judge, static weights, no effects). Per split: accuracy after
120 judgments, judgments to the stop (the confidence in the ranking first reaching 0.95),
accuracy at the stop and stated − realised there. Means over splits, with the paired standard
error of each estimator's difference to ``judge`` (the same splits), and the worst split.

Usage: ``python benchmarks/mtc_transfer.py [--splits 48] [--first 0] [--quick] [--csv F]``
(splits are seeded ``first``, ``first + 1``, ...; ``--quick`` leaves out ``fitted``, the slow
one; ``--csv`` writes the per-split numbers).
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
TARGET = 0.95
EARLY = 120  # judgments at which accuracy is compared
BASELINE = "judge"


def load() -> tuple[mtc.Collection, mtc.PairMetadata, np.ndarray]:
    col = mtc.build_collection(read_runs(DATA / "runs.txt"))
    meta = mtc.pair_metadata(col, mtc.read_metadata(DATA / "metadata.txt"))
    truth = mtc.gains_vector(col, read_levels(DATA / "judgments.txt"), "fine")
    return col, meta, truth


def run(col: mtc.Collection, truth: np.ndarray, estimator, selection: str) -> dict[str, float]:
    """Simulate to the stop (and on to ``EARLY`` judgments if it stops before)."""
    select = mtc.make_selector(selection, col, 20, 1)
    sim = mtc.simulate(col, truth, estimator, select, "fine", target=TARGET)
    stop = sim.log.iloc[-1]
    if stop.judgments < EARLY:
        sim = mtc.simulate(
            col, truth, estimator, select, "fine", stop_at_target=False, max_judgments=EARLY
        )
    return {
        "early": sim.at(EARLY)["accuracy"],
        "judgments": stop.judgments,
        "accuracy": stop.accuracy,
        "stated": stop.confidence,
        "reached": float(stop.confidence >= TARGET),
    }


def estimators(col, meta, model) -> dict[str, tuple[object, str]]:
    def make(name: str, effects: bool = True):
        return mtc.make_estimator(name, col, "fine", meta, effects, model=model)

    return {
        "trained": (make("trained"), "adaptive"),
        "judge": (make("judge"), "adaptive"),
        "compat": (make("judge", effects=False), "reference"),
        "fitted": (make("fitted"), "adaptive"),
        "output": (make("output"), "adaptive"),
        "uniform": (make("uniform"), "adaptive"),
    }


def study(splits: int, quick: bool, first: int = 0) -> pd.DataFrame:
    col, meta, truth = load()
    rows = []
    for seed in range(first, first + splits):
        (train_s, train_q), (test_s, test_q) = mtc.transfer_split(col, seed)
        train, train_pairs = col.subset(train_s, train_q)
        test, test_pairs = col.subset(test_s, test_q)
        start = time.perf_counter()
        model = mtc.train_gain_model(train, meta.take(train_pairs), truth[train_pairs], "fine")
        trained_in = time.perf_counter() - start
        test_meta, test_truth = meta.take(test_pairs), truth[test_pairs]
        for name, (estimator, selection) in estimators(test, test_meta, model).items():
            if quick and name == "fitted":
                continue
            start = time.perf_counter()
            numbers = run(test, test_truth, estimator, selection)
            seconds = time.perf_counter() - start
            outside = estimator.outside.any(axis=1).mean() if name == "trained" else np.nan
            rows.append(
                {"split": seed, "estimator": name, "seconds": seconds, "outside": outside,
                 "training": trained_in, "sigma": model.sigma, "tau": model.tau,
                 "eta": model.eta, "scale": model.variance_scale, **numbers}
            )  # fmt: skip
        print(f"  split {seed}: {test.n_systems} systems × {test.n_queries} queries, "
              f"{test.n_pairs} pairs; model σ {model.sigma:.2f}, τ {model.tau:.2f}, "
              f"ω {model.omega:.2f}, η {model.eta:.2f}, λ {model.variance_scale:.2f}, "
              f"held-out RMSE {model.held_out_rmse:.1f}", flush=True)  # fmt: skip
    return pd.DataFrame(rows)


def paired(frame: pd.DataFrame, column: str, name: str) -> tuple[float, float]:
    """Mean and paired standard error over splits of ``name``'s ``column`` minus BASELINE's."""
    table = frame.pivot(index="split", columns="estimator", values=column)
    difference = table[name] - table[BASELINE]
    return float(difference.mean()), float(difference.std(ddof=1) / np.sqrt(len(difference)))


def report(frame: pd.DataFrame) -> dict[str, float]:
    """Print the table; its figures, as ``{estimator}_{column}``."""
    splits = frame["split"].nunique()
    print(
        f"\nTransfer: {splits} splits; every number on held-out systems AND held-out queries "
        f"(9 systems × 50 queries each); ± = paired standard error of the difference to "
        f"{BASELINE} over the same splits"
    )
    header = (
        f"{'estimator':9} | {'acc. after 120':>22} | {'judgments to stop':>24} | "
        f"{'ratio':>5} | {'acc. at stop (worst)':>20} | {'stated-realised':>22} | "
        f"{'stops at 0':>10} | {'s/run':>5}"
    )
    print(header)
    print("-" * len(header))
    order = ["trained", "judge", "compat", "fitted", "output", "uniform"]
    base_judgments = frame[frame.estimator == BASELINE]["judgments"].mean()
    figures = {}
    for name in [n for n in order if n in set(frame.estimator)]:
        part = frame[frame.estimator == name]
        early, judgments = part["early"].mean(), part["judgments"].mean()
        if name == BASELINE:
            early_text, judged_text = f"{early:.3f}", f"{judgments:.0f}"
            gap_text = f"{part['gap'].mean():+.3f}"
        else:
            d_early, se_early = paired(frame, "early", name)
            d_judged, se_judged = paired(frame, "judgments", name)
            d_gap, se_gap = paired(frame, "gap", name)
            early_text = f"{early:.3f} ({d_early:+.3f}±{se_early:.3f})"
            judged_text = f"{judgments:.0f} ({d_judged:+.0f}±{se_judged:.0f})"
            gap_text = f"{part['gap'].mean():+.3f} ({d_gap:+.3f}±{se_gap:.3f})"
            figures |= {
                f"{name}_d_early": d_early,
                f"{name}_se_early": se_early,
                f"{name}_d_judgments": d_judged,
                f"{name}_se_judgments": se_judged,
            }
        figures |= {
            f"{name}_early": early,
            f"{name}_judgments": judgments,
            f"{name}_ratio": judgments / base_judgments,
            f"{name}_accuracy": part["accuracy"].mean(),
            f"{name}_worst": part["accuracy"].min(),
            f"{name}_gap": part["gap"].mean(),
            f"{name}_zero_stops": (part["judgments"] == 0).sum(),
        }
        print(
            f"{name:9} | {early_text:>22} | {judged_text:>24} | "
            f"{judgments / base_judgments:5.2f} | "
            f"{part['accuracy'].mean():.3f} ({part['accuracy'].min():.3f}) | "
            f"{gap_text:>22} | {int((part['judgments'] == 0).sum()):>10} | "
            f"{part['seconds'].mean():5.2f}"
        )
    trained, base = (
        frame[frame.estimator == n].set_index("split")["judgments"] for n in ("trained", BASELINE)
    )
    model = frame[frame.estimator == "trained"]
    print(
        f"\ntrained stops before {BASELINE} on {(trained < base).sum()}/{splits} splits, "
        f"after it on {(trained > base).sum()}; honest stop = mean stated − realised ≤ 0.03 "
        f"and realised ≥ 0.85 in every split"
    )
    print(
        f"trained model: pairs with features outside the training range (clipped) "
        f"{model['outside'].mean():.1%} on average (max {model['outside'].max():.1%}); "
        f"error spread on held-out systems σ {model['sigma'].mean():.2f}, "
        f"τ {model['tau'].mean():.2f}, per query η {model['eta'].mean():.2f}, variance scale λ "
        f"{model['scale'].mean():.2f}; "
        f"training {model['training'].mean():.1f} s"
    )
    return figures | {"trained_eta": model["eta"].mean()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--splits", type=int, default=48)
    parser.add_argument("--first", type=int, default=0, help="seed of the first split")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--csv", type=Path, help="also write the per-split numbers here")
    parser.add_argument("--json", action="store_true", help="end with the figures as JSON")
    args = parser.parse_args()
    if not (DATA / "runs.txt").exists():
        print(f"{DATA} not found: nothing to measure")
        return
    start = time.perf_counter()
    frame = study(args.splits, args.quick, args.first)
    frame = frame.assign(gap=frame["stated"] - frame["accuracy"])
    if args.csv:
        frame.to_csv(args.csv, index=False)
    figures = report(frame)
    print(f"\nwall {time.perf_counter() - start:.0f} s")
    if args.json:
        print(json.dumps({k: float(v) for k, v in figures.items()}))


if __name__ == "__main__":
    main()
