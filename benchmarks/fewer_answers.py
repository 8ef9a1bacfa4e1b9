"""Fewer answers at equal quality: designs against the published one, on a fitted crowd.

For a crowd model and a hidden truth, simulates ``--campaigns`` (default 300) whole campaigns of
each design on the same campaign seeds (same initial orders, workers and, pair by pair, the same
answers), and prints per design: answers (mean, 95% interval, change against the published
design), ADR against the truth and ΔADR paired against the published design (mean, 95%
interval), rounds of answers and the campaign's wall time, as the driver runs batches and if
segments were pipelined (each going on as soon as its own pairs are decided), with the fitted
round timing and with the 2010 campaign's (fitted to its Table 2), and how long the simulation
took.

By default the crowd and the truth come from the recorded campaign made with the simulator
(``benchmarks/recorded_campaign.py``: no real 2010 answers file is at hand): the crowd model is
fitted to its answers against its lists (what ``crowdprefs crowd-model fit results.csv --lists
lists.qrel`` does) and its lists are the truth, as they would be for a real campaign's published
lists. ``--crowd-model`` and ``--truth`` take any fitted model and truth instead.

Run: ``python benchmarks/fewer_answers.py [--campaigns 300] [--crowd-model m.toml --truth t.qrel]
[--only TEXT]`` (the flagging design takes about 4 s per campaign, the others well under 0.1 s).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
from pathlib import Path

import numpy as np
import pandas as pd

from crowdprefs.campaign.adaptive import StoppingRule
from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.io import read_lists
from crowdprefs.quality.crowd_fit import fit_crowd_model
from crowdprefs.quality.crowd_model import CrowdModel, load_crowd_model
from crowdprefs.quality.planning import Design, simulate

MARGIN = AggregationRule(rule="margin", margin=2)


def designs() -> dict[str, Design]:
    """The published design first, then the alternatives (the issue's table, then predictive
    curtailment: ε, initial + step, maximum; then the best of those with careless workers
    flagged, blocked and their answers dropped after each round, ``[review] flag_each_round``)."""

    def curtail(
        maximum: int,
        epsilon: float = 0.0,
        initial: int = 4,
        step: int = 2,
        margin: int = 2,
        flag: bool = False,
    ) -> Design:
        rule = AggregationRule(rule="margin", margin=margin)
        stopping = StoppingRule(
            method="curtail",
            initial=initial,
            step=step,
            maximum=maximum,
            epsilon=epsilon,
            aggregation=rule,
        )
        return Design(maximum, rule, stopping, flag_each_round=flag)

    return {
        "published: 10 answers, margin 2": Design(10, MARGIN),
        "10 answers, Mann-Whitney 0.05": Design(10),
        "curtail, margin 2, 4+2…10": curtail(10),
        "curtail, margin 2, 4+2…8": curtail(8),
        "sequential (defaults)": Design(10, AggregationRule(), StoppingRule()),
        "curtail ε=0.15, margin 2, 3+1…10": curtail(10, 0.15, 3, 1),
        "curtail ε=0.10, margin 1, 3+1…9": curtail(9, 0.10, 3, 1, margin=1),
        "curtail ε=0.25, margin 2, 3+1…14": curtail(14, 0.25, 3, 1),
        "curtail ε=0.30, margin 2, 3+2…14": curtail(14, 0.30, 3, 2),
        "flag+block, curtail ε=0.30, 3+2…14": curtail(14, 0.30, 3, 2, flag=True),
    }


TABLE_2_TIMING = {"round_hours": 1.26, "answers_per_hour": 130.0, "round_spread": 0.9}
"""Round timing fitted to the eight iterations of the 2010 campaign (seed 002, Table 2)."""


def crowd_and_truth(args: argparse.Namespace) -> tuple[CrowdModel, pd.DataFrame, str]:
    if args.crowd_model and args.truth:
        return load_crowd_model(args.crowd_model), read_lists(args.truth), str(args.crowd_model)
    from recorded_campaign import find_recording

    recording = find_recording(1)
    fit = fit_crowd_model(recording.answers, recording.lists)
    where = f"fitted to the recorded simulated campaign (seed {recording.seed}) with its lists"
    return fit.model, recording.lists, where


def interval(values: np.ndarray) -> tuple[float, float, float]:
    mean = float(np.mean(values))
    half = 1.959964 * float(np.std(values, ddof=1)) / np.sqrt(len(values))
    return mean, mean - half, mean + half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, default=300)
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--crowd-model", type=Path)
    parser.add_argument("--truth", type=Path)
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        help="Run only the designs whose name contains this text (repeatable; the published "
        "design always runs, as the baseline).",
    )
    args = parser.parse_args()
    model, truth, where = crowd_and_truth(args)
    print(
        f"crowd model {where}; truth: {truth['query'].nunique()} queries, {len(truth)} candidates"
    )
    m = model
    print(
        f"  noise {m.noise:.2f} (log spread {m.noise_spread:.2f}), band {m.equal_band:.2f} "
        f"({m.equal_spread:.2f}), lean to B {m.position_bias:.2f} ± {m.bias_spread:.2f}, "
        f"careless {m.careless_share:.3f}, {m.workers} workers, activity {m.activity:.2f}, "
        f"rounds {m.round_hours:.2f} h + answers / {m.answers_per_hour:.0f} per hour"
    )
    results, seconds, slow = {}, {}, {}
    table_2 = dataclasses.replace(model, **TABLE_2_TIMING)
    chosen = {
        name: design
        for i, (name, design) in enumerate(designs().items())
        if i == 0 or not args.only or any(text in name for text in args.only)
    }
    for name, design in chosen.items():
        started = time.perf_counter()
        results[name] = simulate(truth, design, model, campaigns=args.campaigns, seed=args.seed)
        seconds[name] = time.perf_counter() - started
        slow[name] = simulate(truth, design, table_2, campaigns=args.campaigns, seed=args.seed)
    base = results["published: 10 answers, margin 2"]
    print(
        f"\n{args.campaigns} campaigns per design, paired on the same seeds; means with 95% "
        "intervals; wall hours with the fitted round timing (lockstep batches as the driver "
        "runs them / segments pipelined) and with the 2010 campaign's (Table 2)\n"
    )
    print(
        f"{'design':34s} {'answers':>19s} {'vs pub.':>7s} {'ADR':>6s} {'ΔADR paired':>24s} "
        f"{'rounds':>11s} {'wall h fitted':>13s} {'wall h T2':>11s} {'sim s':>6s}"
    )
    for name, frame in results.items():
        answers = interval(frame["answers"].to_numpy())
        delta = interval(frame["adr"].to_numpy() - base["adr"].to_numpy())
        change = answers[0] / base["answers"].mean() - 1
        print(
            f"{name:34s} {answers[0]:6.0f} ({answers[1]:5.0f}–{answers[2]:5.0f}) "
            f"{change:+7.1%} {frame['adr'].mean():6.3f} "
            f"{delta[0]:+.4f} ({delta[1]:+.4f}…{delta[2]:+.4f}) "
            f"{frame['rounds'].mean():5.1f}/{frame['rounds_pipelined'].mean():<5.1f} "
            f"{frame['wall_hours'].mean():6.1f}/{frame['wall_hours_pipelined'].mean():<6.1f} "
            f"{slow[name]['wall_hours'].mean():5.1f}/"
            f"{slow[name]['wall_hours_pipelined'].mean():<5.1f} "
            f"{seconds[name]:6.1f}"
        )


if __name__ == "__main__":
    main()
