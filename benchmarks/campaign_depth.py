"""How deep (iterations) a recorded 2010-style campaign goes, and whether the crowd fitted to it
predicts that depth.

For each recorded campaign (``benchmarks/recorded_campaign.py``'s simulated recordings, one per
generator seed), the crowd model is fitted as ``crowdprefs crowd-model fit results.csv --lists
lists.qrel --rule margin`` fits it, and the recorded design (10 answers, margin 2, the pivot
shown as B as recorded) is simulated on held-out seeds against the published lists, as ``plan
--truth lists.qrel --crowd-model fitted.toml`` would. It prints the recorded iterations and
pairs, the simulated mean, median and 90% range, the pairs per iteration (recorded and
simulated mean), and what drives the difference, each effect switched on or off:

* the recording's own crowd (the generator) on its latent truth: the depth the recording was
  one draw of, and where the recorded depth falls in it;
* (i) the truth used for planning: the generator on the published lists instead;
* (ii) "equal" answers: the fitted crowd with an "equal" band of almost nothing;
* (iii) inconsistent verdicts: a crowd that always reproduces the published lists;
* (iv) pivot luck: the fitted crowd (and the exact crowd) with the recording's own pivots (the
  initial order read back from which candidate was a pivot when), fresh answers;
* (v) the fit: the fitted crowd against the generator, both on the published lists.

Then whether any crowd (the fitted one with its noise and band scaled) reaches a deep
recording's depth at its pairs, and a calibration over unselected recordings (generator seeds
taken as they come): the mean recorded depth against the mean predicted one, and how often the
recorded depth falls in the predicted 90% range.

Run: ``python benchmarks/campaign_depth.py [--campaigns 200] [--seeds 3 6 14 60]
[--calibration 30] [--out benchmarks/out/depth]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
from recorded_campaign import DESIGN, GENERATOR, Recording, record, write

from crowdprefs.campaign.aggregate import verdicts
from crowdprefs.io import read_lists
from crowdprefs.quality.crowd_fit import fit_crowd_model, recorded_pivot_order, save_fit
from crowdprefs.quality.crowd_model import (
    CrowdModel,
    WorkerPool,
    distinct_workers,
    load_crowd_model,
)
from crowdprefs.quality.planning import Collection, simulate_campaign, sort_rounds
from crowdprefs.results_file import read_results
from crowdprefs.rng import counter_uniform

HELD_OUT = 1_000_000
"""Simulated campaigns use seeds from here on (recordings use small seeds)."""

Oracle = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass(frozen=True)
class Depth:
    """Iterations and pairs of simulated campaigns, and their mean pairs per iteration."""

    iterations: np.ndarray
    pairs: np.ndarray
    profile: np.ndarray

    def line(self, recorded: int | None = None) -> str:
        it, pairs = self.iterations, self.pairs
        text = (
            f"iterations {it.mean():4.2f} (median {np.median(it):.0f}, 90% "
            f"{np.percentile(it, 5):.0f}–{np.percentile(it, 95):.0f})  pairs {pairs.mean():5.1f} "
            f"(90% {np.percentile(pairs, 5):.0f}–{np.percentile(pairs, 95):.0f})"
        )
        if recorded is not None:
            text += f"  P(≥ {recorded}) {np.mean(it >= recorded):.3f}"
        return text


def profile_of(rows: list[np.ndarray]) -> np.ndarray:
    width = max(len(r) for r in rows)
    return np.mean([np.pad(r, (0, width - len(r))) for r in rows], axis=0)


def campaigns(truth: pd.DataFrame, model: CrowdModel, n: int, first: int = HELD_OUT) -> Depth:
    """``n`` whole campaigns of the recorded design (``simulate_campaign``, as plan runs them)."""
    collection = Collection.from_truth(truth)
    it, pairs, rows = [], [], []
    for i in range(n):
        campaign = simulate_campaign(collection, DESIGN, model, seed=first + i)
        it.append(campaign.summary["iterations"])
        pairs.append(campaign.summary["pairs"])
        rows.append(campaign.per_iteration["pairs"].to_numpy())
    return Depth(np.array(it), np.array(pairs), profile_of(rows))


def crowd_oracle(collection: Collection, model: CrowdModel, seed: int) -> Oracle:
    """Verdicts of the recorded design by a crowd drawn from ``model`` (its workers, activity and
    answer shares at each pair's gap in ``collection``'s groups), for :func:`sort_rounds`."""
    pool = WorkerPool.draw(model, seed)
    widest = int(collection.group.max() - collection.group.min())
    table = np.cumsum(pool.shares(np.arange(-widest, widest + 1)), axis=2)
    n, k = len(collection.group), DESIGN.answers_per_pair

    def oracle(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        key = x * n + y
        a_is_x = counter_uniform(seed, 11, key) < DESIGN.pivot_b_share
        gap = collection.group[y] - collection.group[x]  # s_x − s_y
        gap_a = np.where(a_is_x, gap, -gap)
        workers = np.full((len(x), k), -1, dtype=np.int64)
        for slot in range(k):
            draw = lambda t, rows: counter_uniform(seed, 12, key[rows], slot, t)  # noqa: E731,B023
            workers[:, slot] = distinct_workers(pool.weight, workers[:, :slot], draw)
        u = counter_uniform(seed, 14, key[:, None], np.arange(k)[None, :])
        edges = table[workers, (gap_a + widest)[:, None]]
        choice = (u >= edges[..., 0]).astype(int) + (u >= edges[..., 1])  # 0 A, 1 equal, 2 B
        counts = np.stack([(choice == c).sum(axis=1) for c in range(3)], axis=1)
        counts = np.where(a_is_x[:, None], counts, counts[:, ::-1])  # more, equal, less
        return verdicts(*counts.T, DESIGN.aggregation)[0]

    return oracle


def exact_oracle(collection: Collection) -> Oracle:
    """A crowd whose verdict always follows ``collection``'s groups (no noise, no inconsistency)."""
    return lambda x, y: np.sign(collection.group[y] - collection.group[x])


def sorted_depth(
    collection: Collection, position: Callable[[int], np.ndarray], oracle: Callable[[int], Oracle]
) -> Callable[[int], Depth]:
    """Depth of ``n`` sorts with ``sort_rounds``: campaign ``i`` has initial order
    ``position(i)`` and verdicts ``oracle(i)``."""

    def run(n: int) -> Depth:
        it, pairs, rows = [], [], []
        for i in range(n):
            per: list[int] = []
            verdict = oracle(HELD_OUT + i)

            def counted(x: np.ndarray, y: np.ndarray, verdict: Oracle = verdict) -> np.ndarray:
                per.append(len(x))  # noqa: B023
                return verdict(x, y)

            _, iterations, asked = sort_rounds(collection.query, position(i), counted)
            it.append(int(iterations.max()))
            pairs.append(asked)
            rows.append(np.array(per))
        return Depth(np.array(it), np.array(pairs), profile_of(rows))

    return run


def fit(recording: Recording, folder: Path) -> tuple[CrowdModel, float]:
    """The crowd model ``crowd-model fit results.csv --lists lists.qrel`` fits to the
    recording written to ``folder`` (saved as ``fitted.toml`` and read back as ``plan
    --crowd-model`` reads it), and the fit's CPU seconds (no bootstrap: the saved model is the
    fit to all answers whatever the replicates)."""
    write(recording, folder)
    answers, lists = read_results(folder / "results.csv"), read_lists(folder / "lists.qrel")
    started = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    fitted = fit_crowd_model(answers, lists, bootstrap=0, seed=0)
    cpu = resource.getrusage(resource.RUSAGE_SELF).ru_utime - started
    save_fit(fitted, folder / "fitted.toml")
    return load_crowd_model(folder / "fitted.toml"), cpu


def late_verdicts(recording: Recording, after: int) -> dict[str, int]:
    """The recording's pairs after iteration ``after``: how many ended "equal" (an equal
    segment refined again) and how many strict, and how many compared their segment with a
    pivot at its end (no member on its other side: the segment did not split in two)."""
    answers = recording.answers
    late = answers[answers["iteration"] > after]
    pairs = late.groupby("pair_id").agg(
        iteration=("iteration", "first"), y=("y", "first"), lead=("score", "sum")
    )
    verdict = np.where(pairs["lead"] >= 2, 1, np.where(pairs["lead"] <= -2, -1, 0))
    sides = pd.Series(verdict, pairs.index).groupby([pairs["iteration"], pairs["y"]])
    at_end = sides.transform(lambda v: bool((v >= 0).all() or (v <= 0).all()))
    return {
        "pairs": len(pairs),
        "equal": int((verdict == 0).sum()),
        "strict": int((verdict != 0).sum()),
        "pivot at its segment's end": int(at_end.sum()),
    }


def recorded_profile(recording: Recording) -> np.ndarray:
    return recording.answers.groupby("iteration")["pair_id"].nunique().to_numpy()


def show_profile(label: str, profile: np.ndarray, width: int) -> None:
    cells = " ".join(f"{v:5.1f}" for v in np.pad(profile, (0, max(0, width - len(profile)))))
    print(f"    {label:34s} {cells}")


def study(seed: int, n: int, out: Path) -> dict[str, float]:
    """The depth study of the recording of generator seed ``seed`` (module doc)."""
    recording = record(seed)
    model, cpu = fit(recording, out / f"seed{seed}")
    lists = recording.lists
    collection = Collection.from_truth(lists)
    recorded = recorded_profile(recording)
    depth = len(recorded)
    print(
        f"\nrecording of seed {seed}: {depth} iterations, {recorded.sum()} pairs; "
        f"fit {cpu:.2f} s CPU"
    )
    print(
        f"  fitted: noise {model.noise:.2f} (spread {model.noise_spread:.2f}), band "
        f"{model.equal_band:.2f} ({model.equal_spread:.2f}), bias {model.position_bias:+.2f}, "
        f"careless {model.careless_share:.3f}, activity {model.activity:.2f}"
    )
    order = recorded_pivot_order(recording.answers, collection)
    rng = np.random.default_rng([seed, 0xDE9])
    random_order = lambda i: rng.random(len(collection.group))  # noqa: E731
    flat = replace(model, equal_band=1e-3, careless_share=0.0, bots=0)
    runs = {
        "plan: fitted crowd, lists": lambda: campaigns(lists, model, n),
        "generator, latent truth": lambda: campaigns(recording.truth, GENERATOR, n),
        "(i) generator, lists": lambda: campaigns(lists, GENERATOR, n),
        "(ii) fitted, no 'equal'": lambda: campaigns(lists, flat, n),
        "(iii) exact crowd, lists": sorted_depth(
            collection, random_order, lambda i: exact_oracle(collection)
        ),
        "(iv) fitted, recorded pivots": sorted_depth(
            collection, lambda i: order, lambda i: crowd_oracle(collection, model, i)
        ),
        "(iv) exact crowd, recorded pivots": sorted_depth(
            collection, lambda i: order, lambda i: exact_oracle(collection)
        ),
        "(iv) fitted, random pivots (check)": sorted_depth(
            collection, random_order, lambda i: crowd_oracle(collection, model, i)
        ),
    }
    results = {}
    for label, run in runs.items():
        result = run() if label.startswith(("plan", "gen", "(i)", "(ii)")) else run(n)
        results[label] = result
        print(f"  {label:36s} {result.line(depth)}")
    width = max(depth, *(len(r.profile) for r in results.values()))
    print("  pairs per iteration:")
    show_profile("recorded", recorded.astype(float), width)
    for label in (
        "plan: fitted crowd, lists",
        "generator, latent truth",
        "(iv) fitted, recorded pivots",
    ):
        show_profile(label, results[label].profile, width)
    plan = results["plan: fitted crowd, lists"]
    after = int(np.percentile(plan.iterations, 50))
    print(
        f"  recorded pairs after iteration {after} (the simulated median): "
        f"{late_verdicts(recording, after)}"
    )
    return {
        "seed": seed,
        "recorded iterations": depth,
        "recorded pairs": int(recorded.sum()),
        "plan iterations": plan.iterations.mean(),
        "plan pairs": plan.pairs.mean(),
        "pivots iterations": results["(iv) fitted, recorded pivots"].iterations.mean(),
        "generator iterations": results["generator, latent truth"].iterations.mean(),
        "fit cpu": cpu,
    }


SCALES = (0.25, 0.5, 1.0, 2.0, 4.0)
"""Multipliers of the fitted noise and "equal" band tried by :func:`any_crowd`."""


def any_crowd(seed: int, n: int, out: Path) -> None:
    """Could any crowd reach the recording's depth at its pairs? The fitted crowd with its noise
    and band scaled by :data:`SCALES` (with and without 20% careless workers) on the lists: the
    deepest mean depth, and the deepest whose mean pairs are within 5% of the recorded."""
    recording = record(seed)
    model, _ = fit(recording, out / f"seed{seed}")
    recorded = recorded_profile(recording)
    rows = []
    for noise in SCALES:
        for band in (0.1, *SCALES):
            for careless in (0.0, 0.2):
                changed = replace(
                    model,
                    noise=model.noise * noise,
                    equal_band=model.equal_band * band,
                    careless_share=careless,
                )
                result = campaigns(recording.lists, changed, n)
                rows.append((noise, band, careless, result.iterations.mean(), result.pairs.mean()))
    table = pd.DataFrame(rows, columns=["noise ×", "band ×", "careless", "iterations", "pairs"])
    close = table[(table["pairs"] / recorded.sum() - 1).abs() <= 0.05]
    print(
        f"\nany crowd? recording of seed {seed}: {len(recorded)} iterations, {recorded.sum()} "
        f"pairs; {len(table)} crowds, {n} campaigns each"
    )
    print("  deepest:", table.loc[table["iterations"].idxmax()].round(2).to_dict())
    if len(close):
        deepest = close.loc[close["iterations"].idxmax()].round(2).to_dict()
        print("  deepest within 5% of its pairs:", deepest)


def calibration(recordings: int, n: int, out: Path) -> pd.DataFrame:
    """Unselected recordings (generator seeds 1, 2, …): recorded against predicted depth."""
    rows = []
    for seed in range(1, recordings + 1):
        recording = record(seed)
        model, _ = fit(recording, out / "calibration")
        plan = campaigns(recording.lists, model, n)
        it, pairs = plan.iterations, plan.pairs
        recorded = recorded_profile(recording)
        rows.append(
            {
                "seed": seed,
                "recorded iterations": len(recorded),
                "predicted iterations": it.mean(),
                "inside 90%": np.percentile(it, 5) <= len(recorded) <= np.percentile(it, 95),
                "recorded pairs": recorded.sum(),
                "predicted pairs": pairs.mean(),
            }
        )
    return pd.DataFrame(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, default=200)
    parser.add_argument("--seeds", type=int, nargs="*", default=[3, 6, 14, 60])
    parser.add_argument("--calibration", type=int, default=30, help="unselected recordings")
    parser.add_argument("--grid", type=int, nargs="*", default=[14], help="any_crowd seeds")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/depth"))
    parser.add_argument("--json", action="store_true", help="end with the figures as JSON")
    args = parser.parse_args()
    figures: dict[str, float] = {}
    started = time.process_time()
    summary = pd.DataFrame([study(seed, args.campaigns, args.out) for seed in args.seeds])
    print("\nsummary (means over the held-out campaigns):")
    print(summary.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    for row in summary.to_dict("records"):
        for name, column in (
            ("recorded", "recorded iterations"),
            ("plan", "plan iterations"),
            ("pivots", "pivots iterations"),
            ("generator", "generator iterations"),
            ("recorded_pairs", "recorded pairs"),
            ("plan_pairs", "plan pairs"),
        ):
            figures[f"seed{row['seed']}_{name}"] = float(row[column])
    if args.calibration:
        table = calibration(args.calibration, max(50, args.campaigns // 4), args.out)
        gap = table["recorded iterations"] - table["predicted iterations"]
        print(f"\ncalibration over {len(table)} unselected recordings:")
        print(
            f"  recorded iterations {table['recorded iterations'].mean():.2f} vs predicted "
            f"{table['predicted iterations'].mean():.2f} (recorded − predicted: mean "
            f"{gap.mean():+.2f}, sd {gap.std():.2f}); recorded inside the predicted 90% range "
            f"in {table['inside 90%'].mean():.0%}"
        )
        ratio = table["predicted pairs"] / table["recorded pairs"] - 1
        print(
            f"  recorded pairs {table['recorded pairs'].mean():.1f} vs predicted "
            f"{table['predicted pairs'].mean():.1f} (per recording: mean {ratio.mean():+.1%}, "
            f"sd {ratio.std():.1%})"
        )
        figures |= {
            "calibration_recordings": float(len(table)),
            "calibration_recorded": float(table["recorded iterations"].mean()),
            "calibration_predicted": float(table["predicted iterations"].mean()),
            "calibration_gap_sd": float(gap.std()),
            "calibration_inside": float(table["inside 90%"].mean()),
            "calibration_pairs": float(ratio.mean()),
        }
        for k, rows in table.groupby("recorded iterations"):
            print(
                f"  recordings of {k} iterations: {len(rows):2d}, predicted "
                f"{rows['predicted iterations'].mean():.2f}"
            )
    for seed in args.grid:
        any_crowd(seed, max(40, args.campaigns // 5), args.out)
    print(f"\nCPU {time.process_time() - started:.0f} s")
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
