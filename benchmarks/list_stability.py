"""How sure are the lists? Fragility, stability and the systems' intervals with the truth's
uncertainty, on the demo's campaign and on a 2010-shaped recorded campaign (issue 29).

Two campaigns, both answered by simulated crowds (say so beside every figure):

* **demo**: a demo-sized collection (``create_demo_project``: 11 queries, 118 candidates, 10
  answers per pair, Mann-Whitney at α = 0.05), answered by the default simulated crowd;
* **2010-shaped**: the recording of ``benchmarks/recorded_campaign.py`` (the 2010 design: 10
  answers per pair, a vote margin of 2; a crowd drawn to look like the 2010 one), replayed from
  its answers file as ``crowdprefs audit --answers`` does.

For each: how many published verdicts, and lists, 1, 2, 3 removed (or changed) answers can change
(:mod:`crowdprefs.quality.fragility`, exact); how stable the lists are over ``--resamples``
bootstrap crowds (:mod:`crowdprefs.quality.stability`): the mean share of group boundaries that
reappear, the share of resamples rebuilding a whole list, the mean expected ADR of a resampled
list against the published one; and how much the synthetic systems' 95% intervals of ADR@5
widen when the truth's uncertainty is included (median over systems of the width ratio; the
demo's five systems of decreasing quality, :func:`crowdprefs.demo.example_runs`, on each
campaign's truth).

Speed: the CPU seconds of ``--resamples`` resamples of the 2010-shaped campaign, one process,
against the plain way of doing the same (per resample: draw the workers, build the resampled
answers frame, re-aggregate and replay it with :func:`crowdprefs.campaign.replay.replay_campaign`),
timed on ``--baseline`` resamples and scaled; the ratio is the speed-up.

    python benchmarks/list_stability.py [--resamples 1000] [--baseline 20] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.campaign.replay import replay_campaign
from crowdprefs.evaluation.truth_uncertainty import truth_uncertainty
from crowdprefs.quality import fragility
from crowdprefs.quality.sorted_campaign import SortedCampaign
from crowdprefs.quality.stability import resample_groups, stability

sys.path.insert(0, str(Path(__file__).parent))  # the recorded campaign's script beside this one

MARGIN_2 = AggregationRule(rule="margin", margin=2)


def cpu() -> float:
    return time.process_time()


def demo_campaign(folder: Path) -> tuple[SortedCampaign, pd.DataFrame]:
    """The demo's finished campaign (simulated crowd) and its truth."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project
    from crowdprefs.crowds import get_crowd
    from crowdprefs.demo import create_demo_project
    from crowdprefs.io import read_lists

    project = create_demo_project(folder)
    with project:
        driver.run(project, get_crowd("simulated", project))
    with Project(folder / "project", lock=False) as project:
        campaign = SortedCampaign.of_project(project)
    return campaign, read_lists(folder / "truth.qrel")


def recorded_campaign() -> tuple[SortedCampaign, pd.DataFrame]:
    """The 2010-shaped recording replayed with the margin-2 rule, and its latent truth."""
    from recorded_campaign import find_recording

    recording = find_recording(1)
    return SortedCampaign.of_recording(recording.answers, MARGIN_2), recording.truth


def plain_resample(campaign: SortedCampaign, seed: int, resample: int) -> pd.DataFrame:
    """The plain way: one resampled crowd's answers frame, re-aggregated and replayed."""
    answers = campaign.answers
    workers = answers["worker_id"].unique()
    drawn = np.random.default_rng([seed, resample]).choice(workers, len(workers))
    frames = {worker: part for worker, part in answers.groupby("worker_id")}
    resampled = pd.concat([frames[w] for w in drawn], ignore_index=True)
    return replay_campaign(resampled, campaign.rule, partial=True).lists


def figures(name: str, campaign: SortedCampaign, truth: pd.DataFrame, resamples: int) -> dict:
    from crowdprefs.demo import example_runs

    out: dict[str, float] = {}
    pairs = fragility.pair_fragility(campaign.pairs, campaign.rule)
    lists = fragility.list_fragility(campaign.pairs, campaign.orders, campaign.rule)
    summary = fragility.summary(pairs, lists)
    out[f"{name}_pairs"] = summary["pairs"]
    out[f"{name}_lists"] = summary["lists"]
    for k in ("1", "2", "3"):
        out[f"{name}_pairs_flips_{k}"] = summary["pairs_flips_within"][k]
        out[f"{name}_pairs_removals_{k}"] = summary["pairs_removals_within"][k]
        out[f"{name}_lists_flips_{k}"] = summary["lists_flips_within"][k]
        out[f"{name}_lists_removals_{k}"] = summary["lists_removals_within"][k]
        out[f"{name}_top_flips_{k}"] = summary["top_groups_flips_within"][k]
    start = cpu()
    resampled = resample_groups(
        campaign.answers, campaign.pairs, campaign.orders, campaign.rule, resamples=resamples
    )
    out[f"{name}_resample_cpu_s"] = cpu() - start
    table, _ = stability(resampled)
    out[f"{name}_boundaries_kept"] = float(table["boundaries_kept"].mean())
    out[f"{name}_same_list"] = float(table["same_list"].mean())
    out[f"{name}_same_top"] = float(table["same_top"].mean())
    out[f"{name}_expected_adr"] = float(table["expected_adr"].mean())
    published = resampled.documents
    runs = example_runs(truth[truth["query"].isin(published["query"])])
    start = cpu()
    uncertainty = truth_uncertainty(runs, resampled, ["ADR@5"])
    out[f"{name}_scoring_cpu_s"] = cpu() - start
    out[f"{name}_widening_median"] = float(uncertainty.summary["widening"].median())
    out[f"{name}_widening_max"] = float(uncertainty.summary["widening"].max())
    out[f"{name}_pairs_kept_below_95"] = int((uncertainty.pairs["kept"] < 0.95).sum())
    out[f"{name}_system_pairs"] = len(uncertainty.pairs)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--baseline", type=int, default=20, help="Resamples the plain way.")
    parser.add_argument(
        "--json", action="store_true", help="End with one line of JSON: the figures measured."
    )
    args = parser.parse_args()
    load = os.getloadavg()[0]
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        demo, demo_truth = demo_campaign(Path(folder) / "demo")
    recorded, recorded_truth = recorded_campaign()
    out = {"resamples": args.resamples, "load_average": load}
    out |= figures("demo", demo, demo_truth, args.resamples)
    out |= figures("rec", recorded, recorded_truth, args.resamples)
    start = cpu()
    for r in range(args.baseline):
        plain_resample(recorded, 0, r)
    plain = (cpu() - start) / args.baseline * args.resamples
    out["plain_cpu_s"] = plain
    out["speedup"] = plain / out["rec_resample_cpu_s"]
    for name, title in (("demo", "demo (Mann-Whitney)"), ("rec", "2010-shaped (margin 2)")):
        print(
            f"{title}: {out[f'{name}_pairs']} verdicts, of which 1/2/3 changed answers change "
            f"{out[f'{name}_pairs_flips_1']}/{out[f'{name}_pairs_flips_2']}/"
            f"{out[f'{name}_pairs_flips_3']} (removed: {out[f'{name}_pairs_removals_1']}/"
            f"{out[f'{name}_pairs_removals_2']}/{out[f'{name}_pairs_removals_3']}); lists that "
            f"one changed answer changes: {out[f'{name}_lists_flips_1']} of "
            f"{out[f'{name}_lists']} (top group: {out[f'{name}_top_flips_1']})"
        )
        print(
            f"  {args.resamples} resampled crowds: boundaries reappear "
            f"{out[f'{name}_boundaries_kept']:.0%}, whole list {out[f'{name}_same_list']:.0%}, "
            f"top group {out[f'{name}_same_top']:.0%}, expected ADR "
            f"{out[f'{name}_expected_adr']:.3f}; ADR@5 intervals widen ×"
            f"{out[f'{name}_widening_median']:.2f} (median; max "
            f"×{out[f'{name}_widening_max']:.2f}),"
            f" {out[f'{name}_pairs_kept_below_95']} of {out[f'{name}_system_pairs']} system "
            "pairs keep their order in < 95% of resamples"
        )
    print(
        f"speed, 2010-shaped: {args.resamples} resamples in {out['rec_resample_cpu_s']:.2f} CPU s "
        f"(plain way: {plain:.1f} s, ×{out['speedup']:.0f}); scoring 5 systems against them "
        f"{out['rec_scoring_cpu_s']:.1f} s; load {load:.2f}"
    )
    if args.json:
        print(json.dumps(out))


if __name__ == "__main__":
    main()
