"""Rank the systems before the lists are finished: the system-driven campaign against the full
sort, on the same simulated campaigns (``crowdprefs.quality.system_plan``).

Two collections (both read from ``../shared/data``; the script exits saying so when absent):

* ``mirex``: MIREX 2011 AMS, its 18 real systems' top-5 runs on 100 queries; the truth lists
  are the FINE scores in ten-point bands (group 1 = FINE 90-100), 6,322 candidates.
* ``2010``: the 2010 collection (its published lists ``MTurk.qrel`` as the truth, 11 queries,
  118 candidates) with sets of 10 synthetic systems of graded quality: system ``i`` of a set
  ranks each query's candidates by true similarity plus normal noise of s.d. 0.3 + 0.3·i
  groups and returns its top 5.

The crowd is the crowd model fitted to the real 2010 answers (``judgments.csv``) against their
published lists; every pair gets 10 answers aggregated by a vote margin of 2 (the 2010 design).
Campaign seeds start at 1000 (held out: the method was tuned on seeds 0-5). Per campaign the
system-driven campaign starts, as ``init --runs`` does, from each query's first pivot at the
systems' consensus 5th place (``--random-first-pivots``: the full sort's random ones) and stops
when every pair of systems is decided at ``--confidence`` (or, with ``--budget-share``, when the
next batch would pass that share of the full sort's answers); its ranking is checked on the lists
the same campaign finishes as (the full sort from its first pivots), its answers against the
full sort's.

Printed per collection: answers as a share of the full sort's (mean, range), Kendall τ of the
systems' ranking against the full sort's (min, mean), pairs of systems significant on the full
sort (Wilcoxon over queries, 0.05) ordered otherwise, pairs declared decided and how many do not
hold on the finished lists (the worst system set's share), the τ between the full sorts of two
campaigns (other initial orders and answers: the noise floor of a full sort itself), the
answers of the same campaign that never declares a pair decided (it sorts every segment that can
change a pair of systems: for ADR@k each query's top k, a quickselect) and the share of the full
sort's pairs its first pivots alone ask (each query's first pass: the floor of any campaign that
sorts every query), as shares of the full sort, and the
seconds to choose the first and the second batch (fit, completion, scores, priorities, the
slowest campaign's) against the 1 s target.

Run: ``python benchmarks/system_ranking.py [--collection mirex 2010] [--campaigns 10]
[--sets 20] [--budget-share 0.3] [--batch-share 0.16] [--samples 100] [--random-first-pivots]
[--json]``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from crowdprefs.campaign import systems as S
from crowdprefs.campaign.adaptive import StoppingRule
from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.io import read_lists
from crowdprefs.quality.crowd_fit import fit_crowd_model
from crowdprefs.quality.crowd_model import CrowdModel
from crowdprefs.quality.planning import Collection, Design
from crowdprefs.quality.system_plan import compare_campaigns, sort_campaign

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
MARGIN = AggregationRule(rule="margin", margin=2)
DESIGN = Design(10, MARGIN)
ANSWERS = {
    "fixed": DESIGN,
    "curtail": Design(10, MARGIN, StoppingRule("curtail", 4, 2, 10, aggregation=MARGIN)),
    "predictive": Design(
        14, MARGIN, StoppingRule("curtail", 3, 2, 14, epsilon=0.3, aggregation=MARGIN)
    ),
}
"""``--answers``: the 2010 design (10 answers, margin 2), its exact curtailment (4 + 2 … 10:
the same verdicts for the same answers, fewer of them) and the predictive curtailment
``benchmarks/fewer_answers.py`` recommends (ε = 0.30, 3 + 2 … 14)."""
MEASURE = S.RankMeasure("ADR", 5)
FIRST_SEED = 1000


def crowd_of_2010() -> CrowdModel:
    """The crowd model fitted to the real 2010 answers against the published lists."""
    raw = pd.read_csv(DATA / "sigir2010" / "judgments.csv", encoding="latin-1", dtype=str)
    answers = pd.DataFrame(
        {
            "pair_id": raw["HITId"],
            "worker_id": raw["WorkerId"],
            "query": raw["Input.query"],
            "x": raw["Input.docA"],
            "y": raw["Input.docB"],
            "a_is_x": 1,
            "choice": raw["Answer.radio"].map({"a": "A", "b": "B", "s": "equal"}),
            "seconds": pd.to_numeric(raw["WorkTimeInSeconds"]),
        }
    )
    return fit_crowd_model(answers, read_lists(DATA / "sigir2010" / "MTurk.qrel")).model


def mirex() -> tuple[Collection, pd.DataFrame]:
    """MIREX 2011 AMS: truth lists from FINE bands and the real runs."""
    folder = DATA / "mirex2011-ams"
    judged = pd.read_csv(
        folder / "judgments.txt", sep="\t", header=None, names=["query", "document", "fine"],
        dtype={"query": str, "document": str},
    )  # fmt: skip
    band = -(judged["fine"] // 10).clip(upper=9)
    judged["group"] = band.groupby(judged["query"]).rank(method="dense").astype(int)
    runs = pd.read_csv(
        folder / "runs.txt", sep="\t", header=None, names=["system", "query", "document"], dtype=str
    )
    runs["rank"] = runs.groupby(["system", "query"]).cumcount() + 1
    return Collection.from_truth(judged[["query", "document", "group"]]), runs


def synthetic_runs(collection: Collection, seed: int, systems: int = 10) -> pd.DataFrame:
    """``systems`` systems of graded quality (module doc), top 5 per query."""
    rng = np.random.default_rng([seed, 2010])
    frames = []
    for i in range(systems):
        noisy = -collection.group + (0.3 + 0.3 * i) * rng.standard_normal(len(collection.group))
        order = np.lexsort((-noisy, collection.query))
        rank = np.arange(len(order)) - np.searchsorted(
            collection.query[order], collection.query[order]
        )
        keep = rank < MEASURE.k
        frames.append(
            pd.DataFrame(
                {
                    "system": f"sys{i:02d}",
                    "query": collection.queries[collection.query[order][keep]],
                    "document": collection.documents[order][keep],
                    "rank": rank[keep] + 1,
                }
            )
        )
    return pd.concat(frames, ignore_index=True)


def choice_seconds(
    collection: Collection, runs: S.Retrieved, samples: int, rounds: int = 0
) -> float:
    """Seconds to choose a batch as the campaign does (the verdict model fitted to the verdicts
    so far, completion from the systems' consensus, scores, pairs, priorities), the median of
    three: on the untouched lists (``rounds`` 0) or after ``rounds`` rounds of splits with the
    true verdicts."""
    partial = S.Partial.start(collection.query, np.arange(len(collection.query)))
    x_all, y_all = [np.zeros(0, np.int64)] * 2
    for _ in range(rounds):
        x, y = partial.needed()
        partial = partial.split(x, y, np.sign(collection.group[y] - collection.group[x]))
        x_all, y_all = np.concatenate([x_all, x]), np.concatenate([y_all, y])
    verdict = np.sign(collection.group[y_all] - collection.group[x_all])
    keys = x_all * len(collection.query) + y_all
    order = np.argsort(keys)
    took = []
    for _ in range(3):
        started = time.perf_counter()
        score = S.consensus(runs, len(collection.query))
        model = S.VerdictModel.fit(score[x_all] - score[y_all], verdict)
        rng = np.random.default_rng(0)
        known = (keys[order], verdict[order])
        groups = S.complete(partial, samples, rng, model, MEASURE.k, known, score)
        drawn = S.scores(groups, collection.query, runs, MEASURE)
        pairs = S.system_pairs(drawn, 0.95)
        S.choose(partial, S.priorities(partial, runs, MEASURE, drawn, pairs))
        took.append(time.perf_counter() - started)
    return float(np.median(took))


def study(name: str, cases, model, args) -> dict[str, float]:
    """Run every (collection, runs, seed) case; print one line each and the summary."""
    rows, slowest, slowest_second = [], 0.0, 0.0
    for collection, runs_frame, seed in cases:
        runs = S.retrieved(
            runs_frame, collection.queries, collection.documents, collection.query, MEASURE.k
        )
        started = time.perf_counter()
        design = ANSWERS[args.answers]
        outcome = compare_campaigns(
            collection, design, model, runs, MEASURE, seed, confidence=args.confidence,
            samples=args.samples, budget_share=args.budget_share,
            max_pairs=None if args.batch_share is None else max(
                1, int(args.batch_share * len(collection.query))
            ),
            informed=not args.uninformed, consensus_pivots=not args.random_first_pivots,
        )  # fmt: skip
        seconds = time.perf_counter() - started
        first = choice_seconds(collection, runs, args.samples)
        second = choice_seconds(collection, runs, args.samples, rounds=1)
        slowest = max(slowest, first)
        slowest_second = max(slowest_second, second)
        selected, _, _ = sort_campaign(
            collection, design, model, seed, runs, MEASURE, confidence=1.0, samples=args.samples,
            informed=not args.uninformed, pivots=None if args.random_first_pivots else runs,
        )  # fmt: skip
        other, _, _ = sort_campaign(collection, design, model, seed + 7919)
        fixed, fixed_finished = outcome.full, outcome.finished
        if design is not DESIGN:  # the 2010 design's full sort, and its finished lists
            fixed = sort_campaign(collection, DESIGN, model, seed)[0]
            fixed_finished = sort_campaign(
                collection, DESIGN, model, seed, measure=MEASURE,
                pivots=None if args.random_first_pivots else runs,
            )[0]  # fmt: skip
        fixed_scores = S.scores(
            fixed_finished.partial.groups()[None], collection.query, runs, MEASURE
        )
        tau_fixed = stats.kendalltau(
            outcome.drawn.mean(axis=(0, 2)), fixed_scores[0].mean(axis=1)
        ).statistic
        floor = stats.kendalltau(
            outcome.exact.mean(axis=1),
            S.scores(other.partial.groups()[None], collection.query, runs, MEASURE)[0].mean(axis=1),
        ).statistic
        row_full = outcome.summary["full_answers"]
        first_pass = int((np.bincount(collection.query) - 1).sum())
        row = outcome.summary | {
            "seed": seed,
            "seconds": seconds,
            "choice_first": first,
            "full_vs_full": floor,
            "select_share": selected.answers / max(row_full, 1),
            "first_pass_share": first_pass / max(len(outcome.full.verdicts), 1),
            "finished_share": outcome.finished.answers / max(row_full, 1),
            "share_of_fixed": outcome.driven.answers / max(fixed.answers, 1),
            "tau_vs_fixed": tau_fixed,
        }
        rows.append(row)
        print(
            f"  {name} seed {seed}: answers {row['answers']}/{row['full_answers']} "
            f"({row['answer_share']:.1%}), τ {row['kendall_tau']:.3f}, significant swapped "
            f"{row['significant_swapped']}/{row['significant_pairs']}, decided "
            f"{row['decided']} (wrong {row['decided_wrong']}), stopped: {row['stopped']}; τ of "
            f"two full sorts {floor:.3f}; every segment that matters {row['select_share']:.1%}, "
            f"first pivots {row['first_pass_share']:.1%}; "
            f"{seconds:.1f} s",
            flush=True,
        )
    frame = pd.DataFrame(rows)
    decided = frame["decided"].sum()
    held = 1 - frame["decided_wrong"] / frame["decided"].where(frame["decided"] > 0)
    figures = {
        "campaigns": len(frame),
        "share_mean": frame["answer_share"].mean(),
        "share_max": frame["answer_share"].max(),
        "tau_min": frame["kendall_tau"].min(),
        "tau_mean": frame["kendall_tau"].mean(),
        "tau_at_least_095": (frame["kendall_tau"] >= 0.95).mean(),
        "significant_swapped": int(frame["significant_swapped"].sum()),
        "significant_pairs": int(frame["significant_pairs"].sum()),
        "decided": int(decided),
        "decided_wrong": int(frame["decided_wrong"].sum()),
        "held_worst_set": float(held.min()) if held.notna().any() else float("nan"),
        "all_decided": (frame["stopped"] == "decided").mean(),
        "choice_seconds_first": slowest,
        "choice_seconds_second": slowest_second,
        "full_vs_full_tau_mean": frame["full_vs_full"].mean(),
        "full_vs_full_tau_min": frame["full_vs_full"].min(),
        "select_share_mean": frame["select_share"].mean(),
        "first_pass_share_mean": frame["first_pass_share"].mean(),
        "finished_share_mean": frame["finished_share"].mean(),
        "share_of_fixed_mean": frame["share_of_fixed"].mean(),
        "share_of_fixed_max": frame["share_of_fixed"].max(),
        "tau_vs_fixed_mean": frame["tau_vs_fixed"].mean(),
        "tau_vs_fixed_min": frame["tau_vs_fixed"].min(),
        "held_pooled": 1 - frame["decided_wrong"].sum() / decided if decided else float("nan"),
    }
    print(
        f"{name}: {figures['campaigns']} campaigns; answers {figures['share_mean']:.1%} of the "
        f"full sort (max {figures['share_max']:.1%}); Kendall τ min {figures['tau_min']:.3f}, "
        f"mean {figures['tau_mean']:.3f} (≥ 0.95 in {figures['tau_at_least_095']:.0%}); "
        f"significant pairs swapped {figures['significant_swapped']}/"
        f"{figures['significant_pairs']}; decided pairs wrong {figures['decided_wrong']}/"
        f"{figures['decided']} (worst set holds {figures['held_worst_set']:.1%}); every pair "
        f"decided in {figures['all_decided']:.0%}; two full sorts of other campaigns agree to τ "
        f"{figures['full_vs_full_tau_mean']:.3f} (min {figures['full_vs_full_tau_min']:.3f}); "
        f"sorting every segment that can change a pair of systems (none ever decided) takes "
        f"{figures['select_share_mean']:.1%}, the first pivots alone "
        f"{figures['first_pass_share_mean']:.1%} of the full sort's pairs; "
        "choosing the first batch "
        f"{figures['choice_seconds_first']:.2f} s, the second "
        f"{figures['choice_seconds_second']:.2f} s = "
        f"{max(figures['choice_seconds_first'], figures['choice_seconds_second']):.2f}× the 1 s "
        "target",
        flush=True,
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--collection", nargs="+", default=["mirex", "2010"])
    parser.add_argument("--campaigns", type=int, default=10, help="MIREX campaigns")
    parser.add_argument("--sets", type=int, default=20, help="2010 synthetic system sets")
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--budget-share", type=float, default=None)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument(
        "--batch-share",
        type=float,
        default=None,
        help="pairs per batch at most, as a share of the collection's candidates",
    )
    parser.add_argument(
        "--uninformed", action="store_true", help="draw unknown verdicts without the consensus"
    )
    parser.add_argument(
        "--random-first-pivots",
        action="store_true",
        help="start from the full sort's random first pivots, not the systems' consensus",
    )
    parser.add_argument(
        "--answers",
        choices=sorted(ANSWERS),
        default="fixed",
        help="answers per pair of both campaigns: the 2010 design or a curtailment of it",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not DATA.is_dir():
        raise SystemExit(f"{DATA} is absent: this benchmark needs the shared data")
    model = crowd_of_2010()
    figures = {}
    if "mirex" in args.collection:
        collection, runs = mirex()
        cases = [(collection, runs, FIRST_SEED + i) for i in range(args.campaigns)]
        figures["mirex"] = study("MIREX 2011", cases, model, args)
    if "2010" in args.collection:
        truth = read_lists(DATA / "sigir2010" / "MTurk.qrel")
        collection = Collection.from_truth(truth)
        cases = [
            (collection, synthetic_runs(collection, FIRST_SEED + i), FIRST_SEED + i)
            for i in range(args.sets)
        ]
        figures["y2010"] = study("2010 + synthetic systems", cases, model, args)
    if args.json:
        flat = {
            f"{name}_{key}": value for name, part in figures.items() for key, value in part.items()
        }
        print(json.dumps(flat))


if __name__ == "__main__":
    main()
