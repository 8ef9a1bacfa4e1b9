"""What a machine prior saves, and what a useless or adversarial one costs: paired campaigns.

For a crowd model fitted to recorded answers and a truth, simulates ``--campaigns`` (default 300)
whole campaigns of each design on the same campaign seeds (same initial orders, workers and,
pair by pair, the same answers; :func:`crowdprefs.quality.planning.simulate_designs`):

* ``2010``: the published design, 10 answers a pair and a vote margin of 2;
* ``human``: the best human-only design of ``benchmarks/fewer_answers.py`` at equal lists
  (curtailment with ε = 0.10, margin 1, 3 + 1 … 9 answers);
* ``prior r=…``: the same rule from 2 answers, with a simulated model whose scores have
  Spearman correlation r with the truth (:mod:`crowdprefs.machine.simulated`), used as the
  defaults of ``[prior]`` use it: pivots nearest the segment's median score, 3 pseudo-answers
  of the calibrated answer link in each pair's stopping rule, and skipping with an audit
  (:class:`crowdprefs.machine.overturn.SkipRule` defaults: confidence 0.6, audit share 0.1,
  max overturn 0.4, 30 verdicts before the first skip); r = 0.7, 0 (useless), −0.5
  (adversarial), and 0.7 with a position bias of 0.5 score deviations toward the clip shown
  first;
* ``pivots r=0.7``: the human design with the prior's pivots only (what the pivots alone save).

It prints per design: answers (mean, 95% interval) and the change against the human design,
ADR against the truth and ΔADR paired against the 2010 design and against the human design
(mean, 95% interval), wall hours (fitted round timing) and their ratio to the human design's,
pairs asked of humans and decided by the prior, and, for the skipping designs, the audit's
estimate of the overturn share, the true one (every skipped pair's chance of being overturned,
from 16 fresh simulated human verdicts never paid for) and how often the audit's 95% interval
covered it.

The crowd and the truth are those of ``benchmarks/fewer_answers.py --crowd fitted``: the crowd
model fitted to the recorded simulated campaign shaped like 2010's
(``benchmarks/recorded_campaign.py``) with its lists as the truth. The ``[prior]`` defaults were
chosen on campaign seed 7; the figures come from held-out seeds (``--seed``, default 2026).

Run: ``python benchmarks/machine_prior.py [--campaigns 300] [--seed 2026] [--json]``; ``--json``
ends with one line of figures named ``DESIGN_FIGURE`` (``r07_answers``), as
``benchmarks/readme_numbers.py`` reads them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time

import numpy as np
import pandas as pd
from fewer_answers import crowd_and_truth, interval

from crowdprefs.campaign.adaptive import StoppingRule
from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.machine.overturn import SkipRule
from crowdprefs.machine.policy import PriorPolicy
from crowdprefs.machine.simulated import SimulatedPrior
from crowdprefs.parallel import Runner
from crowdprefs.quality.planning import Design, simulate_designs

MARGIN_1 = AggregationRule(rule="margin", margin=1)
HUMAN_RULE = StoppingRule(
    method="curtail", initial=3, step=1, maximum=9, epsilon=0.10, aggregation=MARGIN_1
)
PRIOR_RULE = dataclasses.replace(HUMAN_RULE, initial=2)
POLICY = PriorPolicy(SkipRule(), weight=3.0)


def designs() -> dict[str, tuple[str, Design]]:
    """Key → (name, design), the 2010 design first (the baseline of the pairing)."""
    human = Design(9, MARGIN_1, HUMAN_RULE)

    def prior(r: float, bias: float = 0.0) -> Design:
        return Design(9, MARGIN_1, PRIOR_RULE, prior=SimulatedPrior(r, bias), machine=POLICY)

    return {
        "published": ("2010: 10 answers, margin 2", Design(10, AggregationRule("margin"))),
        "human": ("human: curtail ε=0.10, m1, 3+1…9", human),
        "pivots07": ("pivots only, r=0.7", dataclasses.replace(human, prior=SimulatedPrior(0.7))),
        "r07": ("prior r=0.7", prior(0.7)),
        "r07_bias": ("prior r=0.7, position bias 0.5", prior(0.7, 0.5)),
        "r0": ("prior r=0 (useless)", prior(0.0)),
        "r_05": ("prior r=-0.5 (adversarial)", prior(-0.5)),
    }


def figures_of(frame: pd.DataFrame) -> dict[str, dict[str, float]]:
    """Per design: its figures, paired with the 2010 and the human designs campaign by
    campaign."""
    by = {key: rows.set_index("campaign") for key, rows in frame.groupby("design", sort=False)}
    base, human = by["published"], by["human"]
    out = {}
    for key, rows in by.items():
        answers, low, high = interval(rows["answers"].to_numpy())
        delta = interval((rows["adr"] - base["adr"]).to_numpy())
        versus = interval((rows["adr"] - human["adr"]).to_numpy())
        skipped = rows[rows["overturn_true"].notna()]
        true = skipped["overturn_true"]
        covered = (skipped["overturn_low"] <= true) & (true <= skipped["overturn_high"])
        out[key] = {
            "answers": answers,
            "answers_low": low,
            "answers_high": high,
            "vs_human": answers / human["answers"].mean() - 1,
            "adr": rows["adr"].mean(),
            "delta": delta[0],
            "delta_low": delta[1],
            "delta_high": delta[2],
            "delta_human": versus[0],
            "delta_human_low": versus[1],
            "delta_human_high": versus[2],
            "wall": rows["wall_hours"].mean(),
            "wall_ratio": rows["wall_hours"].mean() / human["wall_hours"].mean(),
            "iterations": rows["iterations"].mean(),
            "pairs": rows["pairs"].mean(),
            "machine_pairs": rows["machine_pairs"].mean(),
            "correlation": rows["prior_correlation"].mean(),
            "overturn": rows["overturn"].mean(),
            "overturn_true": true.mean() if len(true) else np.nan,
            "coverage": covered.mean() if len(true) else np.nan,
            "covered_campaigns": float(len(true)),
            "stopped": rows["skip_stopped"].mean(),
        }
    return out


def print_table(names: dict[str, str], figures: dict[str, dict[str, float]]) -> None:
    print(
        f"{'design':32s} {'answers':>18s} {'vs hum.':>7s} {'ΔADR vs 2010':>24s} "
        f"{'ΔADR vs human':>24s} {'wall h':>12s} {'pairs h/m':>11s} {'overturn a/t cov':>17s}"
    )
    for key, f in figures.items():
        audit = (
            f"{f['overturn']:4.0%}/{f['overturn_true']:4.0%} {f['coverage']:4.0%}"
            if f["covered_campaigns"]
            else ""
        )
        print(
            f"{names[key]:32s} {f['answers']:5.0f} ({f['answers_low']:5.0f}–"
            f"{f['answers_high']:5.0f}) {f['vs_human']:+7.1%} "
            f"{f['delta']:+.4f} ({f['delta_low']:+.4f}…{f['delta_high']:+.4f}) "
            f"{f['delta_human']:+.4f} ({f['delta_human_low']:+.4f}…{f['delta_human_high']:+.4f}) "
            f"{f['wall']:5.1f} ×{f['wall_ratio']:4.2f} "
            f"{f['pairs']:5.0f}/{f['machine_pairs']:<5.1f} {audit}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, default=300)
    parser.add_argument("--seed", type=int, default=2026, help="campaign seeds (held out: not 7)")
    parser.add_argument("--jobs", type=int, help="processes (default: every core)")
    parser.add_argument("--json", action="store_true", help="end with the figures as JSON")
    args = parser.parse_args()
    runner = Runner.from_options(args.jobs)
    model, truth, where = crowd_and_truth("fitted")
    chosen = designs()
    print(
        f"crowd model {where}; truth: {truth['query'].nunique()} queries, {len(truth)} "
        f"candidates; {args.campaigns} campaigns per design on seeds {args.seed} (held out), "
        f"run {runner.where}",
        flush=True,
    )
    started = time.perf_counter()
    frame = simulate_designs(
        truth,
        {key: design for key, (_, design) in chosen.items()},
        model,
        campaigns=args.campaigns,
        seed=args.seed,
        runner=runner,
    )
    seconds = time.perf_counter() - started
    figures = figures_of(frame)
    print(f"simulated in {seconds:.0f} s\n", file=sys.stderr)
    print_table({key: name for key, (name, _) in chosen.items()}, figures)
    if args.json:
        flat = {
            f"{key}_{name}": value
            for key, values in figures.items()
            for name, value in values.items()
        }
        print(json.dumps({k: (None if v != v else v) for k, v in flat.items()}))


if __name__ == "__main__":
    main()
