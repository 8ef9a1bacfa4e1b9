"""Judgments against list accuracy at equal budget: QuickSort, random pairs, repeated sorting with
a final Bradley–Terry fit, and an active sampler, on simulated crowds.

Each simulated collection is an Eval05-sized truth (11 queries of 4–23 candidates, groups of 1–5;
:func:`crowdprefs.demo.make_collection` with its own seed) answered by a simulated crowd
(:class:`crowdprefs.quality.crowd_model.CrowdModel`: the default one, and one with 20% careless
workers and the two bots). The budget is the number of answers. Methods:

* ``QS …``: the modified QuickSort as crowdprefs runs it (:func:`crowdprefs.quality.planning.
  simulate_campaign`): Mann-Whitney, margin-2 or Bradley–Terry verdicts after k answers per
  pair (the ``bradley-terry`` rule: each batch decided by one fit on every answer so far, with
  worker reliability), and the adaptive rules (curtailed Mann-Whitney up to 10, the sequential
  default, and margin 2 with predictive curtailment: 2 answers, then one at a time up to 6,
  until the margin-2 verdict after 6 answers is predictable with probability 0.7). Each design
  spends what it spends: one point per design. ``QS BT … + final fit``
  is the same campaign's answers with the lists read from one more fit on all of them (its
  groups at α = 0.05) instead of from the sort.
* ``random + BT``: answers spread uniformly over every pair of every query (each pair once per
  cycle, cycles in a stratified random order), lists from the tie-aware Bradley–Terry fit with
  worker reliability (:func:`crowdprefs.campaign.bradley_terry.fit_bradley_terry`; its groups
  at α = 0.05).
* ``repeated QS + BT``: QuickSort passes from fresh random initial orders, one answer per
  comparison (the answer is the verdict), then one Bradley–Terry fit on all answers.
* ``active + BT``: after 150 answers spread uniformly, rounds choosing the next answers by expected
  information gain under the current fit (:mod:`crowdprefs.quality.sampling`), at least 50
  answers per round and a fifth of the answers so far (to stay fast), refitting each round.

Answers to the non-QuickSort methods follow the same crowd model as planning's simulator (each
worker's own noise, band and lean to B; workers drawn by activity weight, sides random), but a
worker may answer one pair twice when a method asks it again.

Accuracy of each produced list against the truth: ADR (produced groups read in a random internal
order, :func:`crowdprefs.quality.planning.list_adr`) and Kendall's τ-b between true and produced
groups (a list that puts everything in one group scores 0), averaged over queries; means with
95% intervals over the collections. Then, for each QuickSort design, the answers every other
method needs to reach the same mean accuracy (linear interpolation along its budget sweep) and
their ratio to the QuickSort design's answers.

Run: ``python benchmarks/equal_budget.py [--collections 30] [--seed 11] [--quick]`` (``--quick``:
6 collections, 3 budgets, 3 QuickSort designs); writes under ``benchmarks/out/``
``equal_budget.csv`` (per collection), ``equal_budget_table.csv``, ``equal_budget_ratios.csv``
and ``equal_budget.md``.
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from crowdprefs.campaign.adaptive import StoppingRule
from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.campaign.bradley_terry import fit_bradley_terry
from crowdprefs.demo import make_collection
from crowdprefs.parallel import Runner
from crowdprefs.quality.crowd_model import CrowdModel, WorkerPool
from crowdprefs.quality.planning import (
    Collection,
    Design,
    list_adr,
    simulate_campaign,
    sort_rounds,
)
from crowdprefs.quality.sampling import allocate_answers, answer_information, within_block_pairs

OUT = Path(__file__).parent / "out"
BUDGETS = (250, 500, 1000, 1500, 2000, 3000, 4000, 6000)
QUICK_BUDGETS = (250, 1000, 4000)
CROWDS = {
    "default": CrowdModel(),
    "careless 20%": CrowdModel(careless_share=0.2, bots=2),
}
MARGIN = AggregationRule(rule="margin", margin=2)
BT = AggregationRule(rule="bradley-terry")
QUICKSORT = {
    **{f"QS MW k={k}": Design(answers_per_pair=k) for k in (4, 6, 10, 16)},
    **{
        f"QS margin-2 k={k}": Design(answers_per_pair=k, aggregation=MARGIN) for k in (4, 6, 10, 16)
    },
    **{f"QS BT k={k}": Design(answers_per_pair=k, aggregation=BT) for k in (2, 3, 4, 6)},
    "QS MW curtailed ≤10": Design(adaptive=StoppingRule(method="curtail", step=1)),
    "QS sequential ≤10": Design(adaptive=StoppingRule()),
    "QS margin-2 predictive ≤6": Design(
        aggregation=MARGIN,
        adaptive=StoppingRule(
            method="curtail", initial=2, step=1, maximum=6, epsilon=0.3, aggregation=MARGIN
        ),
    ),
}
QUICK_QUICKSORT = ("QS MW k=10", "QS margin-2 k=10", "QS MW curtailed ≤10", "QS BT k=3")
FINAL_FIT = " + final fit"
SWEPT = ("random + BT", "repeated QS + BT", "active + BT")
WARM_UP = 150
ROUND = 50
GROWTH = 5


class Asker:
    """One collection's simulated crowd answering any pairs: ``ask(x, y)`` returns the answers'
    ``first`` (shown as A), ``second``, ``outcome`` (+1 A, 0 equal, −1 B) and ``worker``."""

    def __init__(self, collection: Collection, model: CrowdModel, seed: int) -> None:
        self.pool = WorkerPool.draw(model, seed)
        self.widest = int(collection.group.max())
        shares = self.pool.shares(np.arange(-self.widest, self.widest + 1))
        self.cumulative = np.cumsum(shares, axis=2)[:, :, :2]
        self.weight = self.pool.weight / self.pool.weight.sum()
        self.similarity = -collection.group
        self.rng = np.random.default_rng([seed, 0xB0D6])

    def ask(self, x: np.ndarray, y: np.ndarray) -> dict[str, np.ndarray]:
        worker = self.rng.choice(len(self.weight), size=len(x), p=self.weight)
        x_first = self.rng.random(len(x)) < 0.5
        first, second = np.where(x_first, x, y), np.where(x_first, y, x)
        gap = self.similarity[first] - self.similarity[second]
        edges = self.cumulative[worker, gap + self.widest]
        u = self.rng.random(len(x))
        outcome = 1 - ((u >= edges[:, 0]).astype(np.int64) + (u >= edges[:, 1]))
        return {"first": first, "second": second, "outcome": outcome, "worker": worker}


def joined(parts: list[dict[str, np.ndarray]], budget: int) -> dict[str, np.ndarray]:
    """The first ``budget`` answers of a sequence of asked batches."""
    return {k: np.concatenate([p[k] for p in parts])[:budget] for k in parts[0]}


def bt_groups(collection: Collection, asker: Asker, answers: dict[str, np.ndarray]):
    """The Bradley–Terry fit of the answers (worker reliability on) and its groups."""
    return fit_bradley_terry(
        answers["first"],
        answers["second"],
        answers["outcome"],
        answers["worker"],
        collection.query,
        n_items=len(collection.query),
        n_workers=len(asker.pool.ids),
    )


def final_fit(collection: Collection, campaign) -> np.ndarray:
    """The groups of one Bradley–Terry fit on every answer of a recorded QuickSort campaign."""
    log = campaign.answers
    a_is_x = log["a_is_x"].to_numpy(bool)
    x, y = log["x"].to_numpy(), log["y"].to_numpy()
    return fit_bradley_terry(
        np.where(a_is_x, x, y),
        np.where(a_is_x, y, x),
        1 - log["choice"].to_numpy(),
        log["worker"].to_numpy(),
        collection.query,
        n_items=len(collection.query),
        n_workers=len(campaign.pool.ids),
    ).groups


def kendall_tau_b(collection: Collection, group: np.ndarray) -> float:
    """Mean over queries of Kendall's τ-b between the true and the produced groups (0 for a
    query whose produced list is one group), vectorised over the pairs of every query."""
    i, j = within_block_pairs(collection.query)
    a = np.sign(collection.group[i] - collection.group[j])
    b = np.sign(group[i] - group[j])
    q, n = collection.query[i], len(collection.queries)
    s = np.bincount(q, weights=a * b, minlength=n)
    n0 = np.bincount(q, minlength=n)
    untied = np.bincount(q, weights=a != 0, minlength=n) * np.bincount(
        q, weights=b != 0, minlength=n
    )
    tau = np.divide(s, np.sqrt(untied), out=np.zeros(n), where=untied > 0)
    assert (n0 > 0).all()
    return float(tau.mean())


def accuracy(collection: Collection, group: np.ndarray, seed: int) -> dict[str, float]:
    produced = pd.DataFrame(
        {
            "query": collection.queries[collection.query],
            "document": collection.documents,
            "group": group,
        }
    )
    truth = produced.assign(group=collection.group)
    return {
        "adr": float(list_adr(produced, truth, seed).mean()),
        "tau": kendall_tau_b(collection, group),
    }


def uniform_pairs(collection: Collection, answers: int, rng: np.random.Generator):
    """``answers`` pairs spread uniformly: every pair of every query once per cycle, each cycle
    in a stratified random order (a query's pairs evenly spaced through it, so every query is
    asked from the start in proportion to its pairs)."""
    i, j = within_block_pairs(collection.query)
    q = collection.query[i]
    count = np.bincount(q)
    start = np.cumsum(count) - count
    cycles = []
    for _ in range(-(-answers // len(i))):
        order = np.lexsort((rng.random(len(i)), q))
        rank = np.empty(len(i))
        rank[order] = np.arange(len(i)) - start[q[order]]
        cycles.append(np.argsort((rank + rng.random(len(i))) / count[q]))
    order = np.concatenate(cycles)[:answers]
    return i[order], j[order]


def random_pairs(collection, asker, budgets, rng):
    x, y = uniform_pairs(collection, max(budgets), rng)
    parts = [asker.ask(x, y)]
    return {b: bt_groups(collection, asker, joined(parts, b)).groups for b in budgets}


def repeated_quicksort(collection, asker, budgets, rng):
    parts: list[dict[str, np.ndarray]] = []

    def oracle(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        got = asker.ask(x, y)
        parts.append(got)
        return np.where(got["first"] == x, got["outcome"], -got["outcome"])

    asked = 0
    while asked < max(budgets):
        asked += sort_rounds(collection.query, rng.random(len(collection.query)), oracle)[2]
    return {b: bt_groups(collection, asker, joined(parts, b)).groups for b in budgets}


def active(collection, asker, budgets, rng):
    i, j = within_block_pairs(collection.query)
    parts = [asker.ask(*uniform_pairs(collection, WARM_UP, rng))]
    total, result = WARM_UP, {}
    fit = bt_groups(collection, asker, joined(parts, total))
    for budget in budgets:
        while total < budget:
            d = fit.scores[i] - fit.scores[j]
            variance = fit.standard_errors[i] ** 2 + fit.standard_errors[j] ** 2
            eta = float(np.median(fit.reliability))
            info = answer_information(d, fit.tie, fit.ties, reliability=eta)
            batch = min(max(ROUND, total // GROWTH), budget - total)
            counts = allocate_answers(variance, info, batch, most_per_pair=5)
            parts.append(asker.ask(np.repeat(i, counts), np.repeat(j, counts)))
            total += int(counts.sum())
            fit = bt_groups(collection, asker, joined(parts, total))
        result[budget] = fit.groups
    return result


METHODS = {
    "random + BT": random_pairs,
    "repeated QS + BT": repeated_quicksort,
    "active + BT": active,
}


def one_collection(crowd: str, index: int, seed: int, budgets, designs) -> list[dict]:
    """Every method on simulated collection ``index`` of a crowd: one row per method and budget."""
    campaign_seed = seed * 1_000_003 + index
    _, truth = make_collection(campaign_seed)
    collection = Collection.from_truth(truth)
    model = CROWDS[crowd]
    rows = []
    for name in designs:
        design = QUICKSORT[name]
        fitted = design.aggregation.rule == "bradley-terry"
        campaign = simulate_campaign(collection, design, model, seed=campaign_seed, record=fitted)
        answers = campaign.summary["answers"]
        rows.append(
            {
                "method": name,
                "answers": answers,
                **accuracy(collection, campaign.group, campaign_seed),
            }
        )
        if fitted:
            group = final_fit(collection, campaign)
            rows.append(
                {
                    "method": name + FINAL_FIT,
                    "answers": answers,
                    **accuracy(collection, group, campaign_seed),
                }
            )
    for name, method in METHODS.items():
        asker = Asker(collection, model, campaign_seed)
        rng = np.random.default_rng([campaign_seed, list(METHODS).index(name) + 1])
        for budget, group in method(collection, asker, budgets, rng).items():
            rows.append(
                {"method": name, "answers": budget, **accuracy(collection, group, campaign_seed)}
            )
    return [{"crowd": crowd, "collection": index, **row} for row in rows]


def collection_task(shared: tuple, task: tuple[str, int]) -> list[dict]:
    """One task of the study: :func:`one_collection` of ``(crowd, index)``."""
    seed, budgets, designs = shared
    crowd, index = task
    return one_collection(crowd, index, seed, budgets, designs)


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """Per crowd, method and budget: mean answers and mean ADR, τ-b with 95% intervals."""
    frame = frame.assign(budget=np.where(frame["method"].isin(SWEPT), frame["answers"], 0))
    grouped = frame.groupby(["crowd", "method", "budget"], sort=False)
    table = grouped[["answers", "adr", "tau"]].mean()
    n = grouped.size()
    for measure in ("adr", "tau"):
        table[f"{measure}_ci"] = 1.959964 * grouped[measure].std(ddof=1) / np.sqrt(n)
    table["collections"] = n
    columns = ["crowd", "method", "answers", "adr", "adr_ci", "tau", "tau_ci", "collections"]
    return table.reset_index()[columns]


def answers_to_reach(curve: pd.DataFrame, measure: str, level: float) -> float:
    """Answers a swept method needs for mean ``measure`` ``level`` (linear interpolation between
    budgets; NaN when it stays below within the sweep, the first budget when already above)."""
    curve = curve.sort_values("answers")
    x, y = curve["answers"].to_numpy(float), curve[measure].to_numpy(float)
    above = np.flatnonzero(y >= level)
    if len(above) == 0:
        return float("nan")
    k = above[0]
    if k == 0:
        return x[0]
    return float(x[k - 1] + (level - y[k - 1]) * (x[k] - x[k - 1]) / (y[k] - y[k - 1]))


def equal_accuracy(table: pd.DataFrame) -> pd.DataFrame:
    """For every QuickSort design and measure: the answers each swept method needs to reach its
    mean accuracy, and their ratio to the design's answers."""
    rows = []
    for (crowd, method), point in table.groupby(["crowd", "method"], sort=False):
        if method in SWEPT:
            continue
        for measure in ("adr", "tau"):
            level = float(point[measure].iloc[0])
            row = {"crowd": crowd, "quicksort": method, "measure": measure, "level": level}
            row["qs_answers"] = float(point["answers"].iloc[0])
            for swept in SWEPT:
                curve = table[(table["crowd"] == crowd) & (table["method"] == swept)]
                need = answers_to_reach(curve, measure, level)
                row[f"{swept}: answers"] = need
                row[f"{swept}: ratio"] = need / row["qs_answers"]
            rows.append(row)
    return pd.DataFrame(rows)


def check_tau() -> None:
    """The vectorised τ-b equals scipy's on a random query."""
    rng = np.random.default_rng(3)
    truth = pd.DataFrame({"query": "q", "document": [f"d{i}" for i in range(12)]})
    truth["group"] = rng.integers(1, 5, 12)
    collection = Collection.from_truth(truth)
    made = rng.integers(1, 4, 12)
    expected = stats.kendalltau(collection.group, made).statistic
    assert abs(kendall_tau_b(collection, made) - expected) < 1e-12


def markdown(table: pd.DataFrame, ratios: pd.DataFrame, seconds: float, args) -> str:
    lines = [
        "# Judgments against list accuracy at equal budget",
        "",
        f"{args.collections} simulated collections per crowd, seed {args.seed}, "
        f"{seconds:.0f} s. Means with 95% intervals.",
        "",
        "| crowd | method | answers | ADR | τ-b |",
        "|---|---|---:|---:|---:|",
    ]
    for r in table.itertuples(index=False):
        lines.append(
            f"| {r.crowd} | {r.method} | {r.answers:.0f} | {r.adr:.3f} ± {r.adr_ci:.3f} "
            f"| {r.tau:.3f} ± {r.tau_ci:.3f} |"
        )
    lines += ["", "## Answers needed for the same mean accuracy as each QuickSort design", ""]
    head = "| crowd | QuickSort design | measure | level | QS answers |"
    head += "".join(f" {s} (ratio) |" for s in SWEPT)
    lines += [head, "|---|---|---|---:|---:|" + "---:|" * len(SWEPT)]
    for r in ratios.to_dict("records"):
        cells = "".join(
            " > sweep |"
            if np.isnan(r[f"{s}: answers"])
            else f" {r[f'{s}: answers']:.0f} ({r[f'{s}: ratio']:.2f}) |"
            for s in SWEPT
        )
        lines.append(
            f"| {r['crowd']} | {r['quicksort']} | {r['measure']} | {r['level']:.3f} "
            f"| {r['qs_answers']:.0f} |{cells}"
        )
    return "\n".join(lines) + "\n"


def slug(name: str) -> str:
    """A name as a JSON key: ``QS margin-2 k=4`` → ``margin_2_k_4``."""
    name = name.lower().replace("qs ", "").replace(" + bt", "").replace("final fit", "fit")
    return re.sub(r"[^a-z0-9]+", "_", name.replace("≤10", "")).strip("_")


def figures(ratios: pd.DataFrame) -> dict[str, float]:
    """The Benchmarks page's figures: each ratio as ``crowd_design_measure_method``, and the
    range of the Bradley–Terry rule's designs (lists from the sort) against random pairs by ADR."""
    out = {
        f"{slug(r['crowd'])}_{slug(r['quicksort'])}_{r['measure']}_{slug(s)}": r[f"{s}: ratio"]
        for r in ratios.to_dict("records")
        for s in SWEPT
    }
    rule = ratios[
        ratios["quicksort"].str.startswith("QS BT")
        & ~ratios["quicksort"].str.endswith(FINAL_FIT)
        & (ratios["measure"] == "adr")
    ]["random + BT: ratio"]
    return {**out, "bt_rule_adr_random_low": rule.min(), "bt_rule_adr_random_high": rule.max()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--collections", type=int, default=30)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--quick", action="store_true", help="few collections and budgets")
    parser.add_argument("--jobs", type=int, help="processes (default: every core)")
    parser.add_argument("--json", action="store_true", help="end with the figures as JSON")
    args = parser.parse_args()
    if args.quick:
        args.collections = min(args.collections, 6)
    budgets = QUICK_BUDGETS if args.quick else BUDGETS
    designs = QUICK_QUICKSORT if args.quick else tuple(QUICKSORT)
    check_tau()
    runner = Runner.from_options(args.jobs)
    started = time.perf_counter()
    tasks = [(crowd, index) for crowd in CROWDS for index in range(args.collections)]

    def done(count: int) -> None:
        print(f"  {count}/{len(tasks)} collections: {time.perf_counter() - started:.0f} s")

    shared = (args.seed, budgets, designs)
    print(f"{len(tasks)} collections {runner.where}", flush=True)
    rows = [row for part in runner.map(collection_task, shared, tasks, done) for row in part]
    seconds = time.perf_counter() - started
    frame = pd.DataFrame(rows)
    table = summarise(frame)
    ratios = equal_accuracy(table)
    OUT.mkdir(exist_ok=True)
    frame.to_csv(OUT / "equal_budget.csv", index=False)
    table.to_csv(OUT / "equal_budget_table.csv", index=False)
    ratios.to_csv(OUT / "equal_budget_ratios.csv", index=False)
    text = markdown(table, ratios, seconds, args)
    (OUT / "equal_budget.md").write_text(text, encoding="utf-8")
    print(text)
    if args.json:
        print(json.dumps(figures(ratios)))


if __name__ == "__main__":
    main()
