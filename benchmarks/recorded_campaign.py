"""A recorded campaign made with the simulator, shaped like the 2010 campaign of the
preference-judgments paper.

The repository has no real answers file of that campaign. This script simulates one campaign of
its design (11 queries, 118 candidates, 10 answers per pair, a vote margin of 2, the pivot shown
as B in 74% of the pairs) with a crowd drawn to look like the one the campaign and the issue
describe: 79 workers with Zipf-like activity (the busiest gives about 7% of the answers), a
continuum of noise (median wrong-side rate about 5%, 90th percentile about 20%) and of "equal"
tendency (workers' "equal" rates from a few percent to over 90%), rounds timed like Table 2
(a latency plus a throughput, fitted to its eight iterations: 1.26 h + answers / 130 per hour,
log spread 0.9). It writes

* ``results.csv``: every answer as an MTurk batch-results CSV (``crowd-model fit`` reads it);
* ``lists.qrel``: the lists the campaign produced (its "published lists");
* ``truth.qrel``: the latent truth that generated the answers;
* ``generator.toml``: the crowd that answered (``plan --crowd-model`` reads it);
* ``candidates.csv``.

Everything measured on these files is simulated, not the real campaign's numbers. The latent
truth has the Eval05 query sizes with groups of 1 to 4 candidates; the campaign seed is the
first (from ``--seed``) whose campaign asks between 250 and 300 pairs in 6 to 8 iterations (the
real one: 281 pairs, 8 iterations; this crowd's campaigns average about 255 pairs and 5.5
iterations).

Run: ``python benchmarks/recorded_campaign.py [--out benchmarks/out/recorded] [--seed 1]``;
with ``--json`` it also fits the crowd model to the recording as ``crowdprefs crowd-model fit
results.csv --lists lists.qrel --rule margin`` does, and ends with the figures as JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
import tomli_w

from crowdprefs.campaign.aggregate import AggregationRule, inter_agreement
from crowdprefs.files import write_atomic
from crowdprefs.io import write_lists
from crowdprefs.quality.crowd_model import CrowdModel
from crowdprefs.quality.planning import Collection, Design, simulate_campaign
from crowdprefs.results_file import write_results
from examples.melodies import QUERY_SIZES

GENERATOR = CrowdModel(
    workers=79,
    bots=0,
    careless_share=0.0,
    noise=2.4,
    noise_spread=0.6,
    equal_band=2.0,
    equal_spread=0.6,
    position_bias=0.0,
    bias_spread=0.15,
    activity=0.75,
    median_seconds=21.0,
    worker_seconds_spread=0.35,
    answer_seconds_spread=0.5,
    round_hours=1.26,
    answers_per_hour=130.0,
    round_spread=0.9,
)
"""The simulated crowd of the recording: chosen by hand (not fitted to anything) so that its
campaigns look like the 2010 one (about 50% "equal" answers, inter-agreement about 0.7 per pair,
workers' wrong-side rates against the produced lists: median about 5%, 90th percentile about
20%); in units of the gap between adjacent true groups."""

GROUP_SIZES = (1, 1, 2, 2, 3, 4)
"""Sizes the latent true groups are drawn from (uniformly), query after query."""

DESIGN = Design(
    answers_per_pair=10, aggregation=AggregationRule(rule="margin", margin=2), pivot_b_share=0.74
)
"""The 2010 campaign's design: 10 answers per pair, margin 2, pivot shown as B in 74%."""

START = datetime(2010, 4, 14, 9, 0, tzinfo=UTC)
CHOICES = np.array(["A", "equal", "B"], dtype=object)


@dataclass(frozen=True)
class Recording:
    """A recorded simulated campaign: its answers frame, produced lists, latent truth, seed."""

    answers: pd.DataFrame
    lists: pd.DataFrame
    truth: pd.DataFrame
    seed: int


def make_truth(seed: int = 2010) -> pd.DataFrame:
    """The latent truth: the Eval05 query sizes (4 to 23 candidates, 118 in all), each query's
    candidates cut into consecutive groups of :data:`GROUP_SIZES`."""
    rng = np.random.default_rng([seed, 0xDE30])
    rows = []
    for q, size in enumerate(QUERY_SIZES, start=1):
        query = f"q{q:02d}"
        documents = [f"{query}-v{i:02d}" for i in range(1, size + 1)]
        rng.shuffle(documents)
        group, placed = 1, 0
        while placed < size:
            members = min(size - placed, int(rng.choice(GROUP_SIZES)))
            rows.extend((query, documents[placed + i], group) for i in range(members))
            placed += members
            group += 1
    return pd.DataFrame(rows, columns=["query", "document", "group"])


def record(seed: int, model: CrowdModel = GENERATOR, design: Design = DESIGN) -> Recording:
    """Simulate one campaign and return it as an answers frame (the columns ``read_results``
    gives), with hours between iterations like the 2010 batches (1 to 6 h)."""
    truth = make_truth()
    collection = Collection.from_truth(truth)
    campaign = simulate_campaign(collection, design, model, seed=seed, record=True)
    log, pool = campaign.answers, campaign.pool
    rng = np.random.default_rng([seed, 0x2010])
    iterations = campaign.per_iteration
    pause = np.cumsum(np.r_[0.0, rng.uniform(1.0, 6.0, len(iterations) - 1)])  # before each
    opened = np.cumsum(np.r_[0.0, iterations["hours"].to_numpy()[:-1]])  # on the planner's clock
    index = log["iteration"].to_numpy() - 1
    shift, created = pause[index], (opened + pause)[index]
    seconds = np.maximum(np.round(log["seconds"].to_numpy()), 1.0)
    accepted = log["accepted_hours"].to_numpy() + shift
    a_is_x = log["a_is_x"].to_numpy(dtype=bool)
    side = np.array([1, 0, -1])[log["choice"].to_numpy()]

    def stamp(hours: np.ndarray) -> pd.Series:
        return pd.Series(pd.to_datetime(START) + pd.to_timedelta(hours, unit="h"))

    answers = pd.DataFrame(
        {
            "iteration": log["iteration"].astype("Int64"),
            "pair_id": log["pair"].to_numpy(),
            "hit_id": [f"HIT{p:04d}" for p in log["pair"]],
            "created_at": stamp(created),
            "max_assignments": float(design.answers_per_pair),
            "reward": design.reward,
            "query": collection.queries[log["query"].to_numpy()],
            "x": collection.documents[log["x"].to_numpy()],
            "y": collection.documents[log["y"].to_numpy()],
            "a_is_x": a_is_x.astype(int),
            "kind": "sort",
            "expected": np.nan,
            "pivot_known": True,
            "worker_id": pool.ids[log["worker"].to_numpy()],
            "assignment_id": [
                f"ASG{p:04d}-{k:02d}" for p, k in zip(log["pair"], log["slot"], strict=True)
            ],
            "status": "approved",
            "choice": CHOICES[log["choice"].to_numpy()],
            "score": np.where(a_is_x, side, -side).astype(float),
            "seconds": seconds,
            "listen_seconds": np.nan,
            "accepted_at": stamp(accepted),
            "submitted_at": stamp(accepted + seconds / 3600),
            "background": "",
            "comment": "",
        }
    )
    answers = answers.sort_values("submitted_at", ignore_index=True)
    lists = campaign.lists(collection)
    return Recording(answers, lists, truth, seed)


def find_recording(first_seed: int, tries: int = 200) -> Recording:
    """The first seed's campaign with 250–300 pairs over 6–8 iterations (the real: 281, 8)."""
    for seed in range(first_seed, first_seed + tries):
        recording = record(seed)
        pairs = recording.answers["pair_id"].nunique()
        iterations = recording.answers["iteration"].max()
        if 250 <= pairs <= 300 and 6 <= iterations <= 8:
            return recording
    raise SystemExit(f"no campaign of seeds {first_seed}…{first_seed + tries - 1} looks like 2010")


def describe(recording: Recording) -> dict[str, float]:
    """What the recording looks like, in the terms of the 2010 campaign's description."""
    answers = recording.answers
    group = recording.lists.set_index(["query", "document"])["group"]
    gx = pd.MultiIndex.from_arrays([answers["query"], answers["x"]]).map(group).to_numpy()
    gy = pd.MultiIndex.from_arrays([answers["query"], answers["y"]]).map(group).to_numpy()
    separated = gx != gy
    wrong = separated & (np.sign(answers["score"].to_numpy()) == np.sign(gx - gy))
    per_worker = pd.DataFrame(
        {
            "worker": answers["worker_id"],
            "wrong": wrong,
            "separated": separated,
            "equal": answers["choice"] == "equal",
        }
    ).groupby("worker")
    counts = per_worker.size().sort_values(ascending=False)
    busy = counts.index[counts >= 10]
    wrong_rate = (per_worker["wrong"].sum() / per_worker["separated"].sum())[busy]
    equal_rate = per_worker["equal"].mean()[busy]
    sides = answers.groupby("pair_id")["a_is_x"].first()
    shares = answers["choice"].value_counts(normalize=True)
    counts_x = answers.pivot_table(index="pair_id", columns="score", aggfunc="size", fill_value=0)
    counts_x = counts_x.reindex(columns=[1.0, 0.0, -1.0], fill_value=0)
    agreement = inter_agreement(*counts_x.to_numpy().T)
    return {
        "pairs": answers["pair_id"].nunique(),
        "iterations": int(answers["iteration"].max()),
        "answers": len(answers),
        "workers": answers["worker_id"].nunique(),
        "top worker share": counts.iloc[0] / len(answers),
        "pivot shown as B": float(sides.mean()),
        "agreement": float(np.nanmean(agreement)),
        "share A": shares.get("A", 0.0),
        "share equal": shares.get("equal", 0.0),
        "share B": shares.get("B", 0.0),
        "wrong-side rate, median (workers with >= 10 answers)": float(wrong_rate.median()),
        "wrong-side rate, 90th percentile": float(wrong_rate.quantile(0.9)),
        "equal rate, lowest": float(equal_rate.min()),
        "equal rate, highest": float(equal_rate.max()),
    }


def write(recording: Recording, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    write_results(recording.answers, folder / "results.csv")
    write_lists(recording.lists, folder / "lists.qrel", tag="recorded")
    write_lists(recording.truth, folder / "truth.qrel", tag="truth")
    write_atomic(folder / "generator.toml", tomli_w.dumps({"simulated": GENERATOR.to_dict()}))
    recording.truth[["query", "document"]].to_csv(folder / "candidates.csv", index=False)


def fit_figures(folder: Path) -> dict[str, float]:
    """The figures of ``crowd-model fit`` (its defaults) on the recording written to ``folder``:
    fitted values with 95% intervals, the predictive check (means, 5%–95%) and the seconds."""
    from crowdprefs.io import read_lists
    from crowdprefs.quality.crowd_fit import fit_crowd_model, predictive_check
    from crowdprefs.results_file import read_results

    started = time.perf_counter()
    answers, lists = read_results(folder / "results.csv"), read_lists(folder / "lists.qrel")
    fitted = fit_crowd_model(answers, lists, bootstrap=50, seed=0)
    check = predictive_check(fitted.replicates, answers, lists, DESIGN.aggregation, 200, 0)
    figures = {"fit_seconds": time.perf_counter() - started}
    for name in ("position_bias", "careless_share", "activity"):
        low, high = fitted.intervals[name]
        figures |= {name: getattr(fitted.model, name), f"{name}_low": low, f"{name}_high": high}
    for statistic in ("pairs", "iterations", "agreement", "share equal"):
        row, key = check.loc[statistic], statistic.replace(" ", "_")
        figures |= {f"check_{key}": row["simulated"], f"check_{key}_recorded": row["recorded"]}
        figures |= {f"check_{key}_p5": row["p5"], f"check_{key}_p95": row["p95"]}
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/recorded"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="also fit it; end with JSON figures")
    args = parser.parse_args()
    recording = find_recording(args.seed)
    write(recording, args.out)
    print(f"recorded simulated campaign (seed {recording.seed}) written to {args.out}")
    for name, value in describe(recording).items():
        print(f"  {name}: {value:.3f}" if isinstance(value, float) else f"  {name}: {value}")
    per = recording.answers.groupby("iteration")["pair_id"].nunique()
    print("  pairs per iteration: " + ", ".join(str(n) for n in per))
    if args.json:
        described = describe(recording)
        figures = {
            "pairs": described["pairs"],
            "iterations": described["iterations"],
            "workers": described["workers"],
            "top_worker_share": described["top worker share"],
            "pivot_b": described["pivot shown as B"],
            "agreement": described["agreement"],
            "share_equal": described["share equal"],
            "wrong_median": described["wrong-side rate, median (workers with >= 10 answers)"],
            "wrong_p90": described["wrong-side rate, 90th percentile"],
            "equal_lowest_percent": 100 * described["equal rate, lowest"],
            "equal_highest_percent": 100 * described["equal rate, highest"],
            **fit_figures(args.out),
        }
        print(
            json.dumps(
                {"per_iteration": ", ".join(str(n) for n in per)}
                | {k: float(v) for k, v in figures.items()}
            )
        )


if __name__ == "__main__":
    main()
