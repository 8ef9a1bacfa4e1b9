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
(``benchmarks/recorded_campaign.py``): the crowd model is fitted to its answers against its lists
(what ``crowdprefs crowd-model fit results.csv --lists lists.qrel`` does) and its lists are the
truth, as they would be for a real campaign's published lists. ``--crowd real`` does the same
with the real 2010 MTurk campaign beside the repository (``../shared/data/sigir2010``: its
``judgments.csv`` against its published ``MTurk.qrel``). ``--crowd latent`` uses the crowd that
answered the recording against its latent truth, ``--crowd default`` the default simulated crowd
on the demo collection (repeatable: each crowd runs every chosen design); ``--crowd-model`` and
``--truth`` take any fitted model and truth.

Run: ``python benchmarks/fewer_answers.py [--campaigns 300] [--crowd fitted|real|latent|default]
[--crowd-model m.toml --truth t.qrel] [--only KEY] [--json]`` (the flagging design takes about
1 s per campaign and round timing, the others well under 0.1 s; each design's time goes to
standard error as it finishes). ``--json`` ends with one line of figures named
``CROWD_DESIGN_FIGURE`` (``fitted_eps30_answers``), as ``benchmarks/readme_numbers.py`` reads
them.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crowdprefs.campaign.adaptive import StoppingRule
from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.demo import make_collection
from crowdprefs.io import read_lists
from crowdprefs.parallel import Runner
from crowdprefs.quality.crowd_fit import fit_crowd_model
from crowdprefs.quality.crowd_model import CrowdModel, load_crowd_model
from crowdprefs.quality.planning import Design, simulate
from crowdprefs.results_file import Columns, read_results

if TYPE_CHECKING:
    from recorded_campaign import Recording

MARGIN = AggregationRule(rule="margin", margin=2)


def designs() -> dict[str, tuple[str, Design]]:
    """Key → (name, design): the published design first, then the alternatives (fixed designs,
    predictive curtailment as ε, initial + step … maximum, the sequential rule, then the best
    curtailment with careless workers flagged, blocked and their answers dropped after each round,
    ``[review] flag_each_round``)."""

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
        "published": ("published: 10 answers, margin 2", Design(10, MARGIN)),
        "mann_whitney": ("10 answers, Mann-Whitney 0.05", Design(10)),
        "curtail10": ("curtail, margin 2, 4+2…10", curtail(10)),
        "curtail8": ("curtail, margin 2, 4+2…8", curtail(8)),
        "sequential": ("sequential (defaults)", Design(10, AggregationRule(), StoppingRule())),
        "eps15": ("curtail ε=0.15, margin 2, 3+1…10", curtail(10, 0.15, 3, 1)),
        "eps10": ("curtail ε=0.10, margin 1, 3+1…9", curtail(9, 0.10, 3, 1, margin=1)),
        "eps25": ("curtail ε=0.25, margin 2, 3+1…14", curtail(14, 0.25, 3, 1)),
        "eps30": ("curtail ε=0.30, margin 2, 3+2…14", curtail(14, 0.30, 3, 2)),
        "eps30_flag": ("flag+block, curtail ε=0.30, 3+2…14", curtail(14, 0.30, 3, 2, flag=True)),
    }


TABLE_2_TIMING = {"round_hours": 1.26, "answers_per_hour": 130.0, "round_spread": 0.9}
"""Round timing fitted to the eight iterations of the 2010 campaign (its paper's Table 2)."""

CROWDS = ("fitted", "real", "latent", "default")
"""``fitted``: the crowd model fitted to the recorded simulated campaign's answers against its
lists, with those lists as the truth (what a real campaign's published lists allow); ``real``:
the same fit on the real 2010 campaign (:data:`SIGIR2010`); ``latent``:
the crowd that answered the recording, against its latent truth; ``default``: the default
simulated crowd on the demo collection."""


SIGIR2010 = Path(__file__).resolve().parents[2] / "shared" / "data" / "sigir2010"
"""The real 2010 MTurk campaign beside the repository (``judgments.csv``, ``MTurk.qrel``)."""

COLUMNS_2010 = Columns(
    answer="Answer.radio", a_value="a", b_value="b", equal_value="s", background="Answer.bground"
)
"""How the 2010 HITs named their columns (docs/tasks/recorded.md)."""


@functools.cache
def recording_of_2010() -> Recording:
    """The recorded simulated campaign shaped like 2010's (once per run: two crowds use it)."""
    from recorded_campaign import find_recording

    return find_recording(1)


def crowd_and_truth(crowd: str) -> tuple[CrowdModel, pd.DataFrame, str]:
    """The crowd model, the truth and a description of both, for one of :data:`CROWDS`."""
    if crowd == "default":
        return CrowdModel(), make_collection()[1], "the default crowd on the demo collection"
    if crowd == "real":
        if not (SIGIR2010 / "judgments.csv").exists():
            raise SystemExit(f"--crowd real needs the real 2010 campaign in {SIGIR2010}")
        lists = read_lists(SIGIR2010 / "MTurk.qrel")
        fit = fit_crowd_model(read_results(SIGIR2010 / "judgments.csv", COLUMNS_2010), lists)
        return fit.model, lists, "fitted to the real 2010 MTurk campaign with its published lists"
    from recorded_campaign import GENERATOR

    recording = recording_of_2010()
    if crowd == "latent":
        where = f"the crowd of the recorded simulated campaign (seed {recording.seed})"
        return GENERATOR, recording.truth, where + " against its latent truth"
    fit = fit_crowd_model(recording.answers, recording.lists)
    where = f"fitted to the recorded simulated campaign (seed {recording.seed}) with its lists"
    return fit.model, recording.lists, where


def interval(values: np.ndarray) -> tuple[float, float, float]:
    mean = float(np.mean(values))
    half = 1.959964 * float(np.std(values, ddof=1)) / np.sqrt(len(values))
    return mean, mean - half, mean + half


def compare(
    model: CrowdModel,
    truth: pd.DataFrame,
    chosen: dict[str, tuple[str, Design]],
    campaigns: int,
    seed: int,
    runner: Runner,
) -> dict[str, dict[str, float]]:
    """Per design key: its figures over ``campaigns`` campaigns, paired with the published
    design on the same seeds; wall hours with the model's round timing and with the 2010
    campaign's, lockstep and pipelined."""
    table_2 = dataclasses.replace(model, **TABLE_2_TIMING)
    runs = {}
    for key, (_, design) in chosen.items():
        started = time.perf_counter()
        frame = simulate(truth, design, model, campaigns=campaigns, seed=seed, runner=runner)
        seconds = time.perf_counter() - started
        slow = simulate(truth, design, table_2, campaigns=campaigns, seed=seed, runner=runner)
        runs[key] = (frame, slow, seconds)
        print(f"  {key}: {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    base, base_slow, _ = runs["published"]
    figures = {}
    for key, (frame, slow, seconds) in runs.items():
        answers, low, high = interval(frame["answers"].to_numpy())
        delta = interval(frame["adr"].to_numpy() - base["adr"].to_numpy())
        figures[key] = {
            "answers": answers,
            "answers_low": low,
            "answers_high": high,
            "fewer": 1 - answers / base["answers"].mean(),
            "adr": frame["adr"].mean(),
            "delta": delta[0],
            "delta_low": delta[1],
            "delta_high": delta[2],
            "rounds": frame["rounds"].mean(),
            "rounds_pipelined": frame["rounds_pipelined"].mean(),
            "wall": frame["wall_hours"].mean(),
            "wall_pipelined": frame["wall_hours_pipelined"].mean(),
            "wall_t2": slow["wall_hours"].mean(),
            "wall_t2_pipelined": slow["wall_hours_pipelined"].mean(),
            "wall_ratio": frame["wall_hours"].mean() / base["wall_hours"].mean(),
            "wall_t2_ratio": slow["wall_hours"].mean() / base_slow["wall_hours"].mean(),
            "wall_t2_pipelined_ratio": slow["wall_hours_pipelined"].mean()
            / base_slow["wall_hours"].mean(),
            "seconds": seconds,
        }
    return figures


def print_table(names: dict[str, str], figures: dict[str, dict[str, float]]) -> None:
    print(
        f"{'design':34s} {'answers':>19s} {'vs pub.':>7s} {'ADR':>6s} {'ΔADR paired':>24s} "
        f"{'rounds':>11s} {'wall h fitted':>13s} {'wall h T2':>11s} {'sim s':>6s}"
    )
    for key, f in figures.items():
        print(
            f"{names[key]:34s} {f['answers']:6.0f} ({f['answers_low']:5.0f}–"
            f"{f['answers_high']:5.0f}) {-f['fewer']:+7.1%} {f['adr']:6.3f} "
            f"{f['delta']:+.4f} ({f['delta_low']:+.4f}…{f['delta_high']:+.4f}) "
            f"{f['rounds']:5.1f}/{f['rounds_pipelined']:<5.1f} "
            f"{f['wall']:6.1f}/{f['wall_pipelined']:<6.1f} "
            f"{f['wall_t2']:5.1f}/{f['wall_t2_pipelined']:<5.1f} {f['seconds']:6.1f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaigns", type=int, default=300)
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--jobs", type=int, help="processes (default: every core)")
    parser.add_argument(
        "--crowd",
        action="append",
        choices=CROWDS,
        help="Crowd and truth to compare on (repeatable; default: fitted).",
    )
    parser.add_argument("--crowd-model", type=Path, help="A fitted crowd model (with --truth).")
    parser.add_argument("--truth", type=Path, help="The truth's lists (with --crowd-model).")
    parser.add_argument(
        "--only",
        action="append",
        choices=list(designs()),
        help="Run only this design (repeatable; the published design always runs, as the "
        "baseline).",
    )
    parser.add_argument("--json", action="store_true", help="end with the figures as JSON")
    args = parser.parse_args()
    if (args.crowd_model is None) != (args.truth is None):
        parser.error("--crowd-model and --truth go together")
    runner = Runner.from_options(args.jobs)
    print(f"campaigns run {runner.where}")
    chosen = {
        key: entry
        for key, entry in designs().items()
        if key == "published" or not args.only or key in args.only
    }
    names = {key: name for key, (name, _) in chosen.items()}
    crowds = {}
    if args.crowd_model:
        where = str(args.crowd_model)
        crowds["given"] = (load_crowd_model(args.crowd_model), read_lists(args.truth), where)
    for crowd in args.crowd or ([] if args.crowd_model else ["fitted"]):
        crowds[crowd] = crowd_and_truth(crowd)
    out = {}
    for crowd, (m, truth, where) in crowds.items():
        print(
            f"\ncrowd model {where}; truth: {truth['query'].nunique()} queries, "
            f"{len(truth)} candidates\n"
            f"  noise {m.noise:.2f} (log spread {m.noise_spread:.2f}), band {m.equal_band:.2f} "
            f"({m.equal_spread:.2f}), lean to B {m.position_bias:.2f} ± {m.bias_spread:.2f}, "
            f"careless {m.careless_share:.3f}, {m.workers} workers, activity {m.activity:.2f}, "
            f"rounds {m.round_hours:.2f} h + answers / {m.answers_per_hour:.0f} per hour"
        )
        figures = compare(m, truth, chosen, args.campaigns, args.seed, runner)
        print(
            f"\n{args.campaigns} campaigns per design, paired on the same seeds; means with 95% "
            "intervals; wall hours with the fitted round timing (lockstep batches as the driver "
            "runs them / segments pipelined) and with the 2010 campaign's (Table 2)\n"
        )
        print_table(names, figures)
        out |= {
            f"{crowd}_{key}_{name}": value
            for key, values in figures.items()
            for name, value in values.items()
        }
    if args.json:
        print(json.dumps({key: float(value) for key, value in out.items()}))


if __name__ == "__main__":
    main()
