"""Plan a campaign before paying: simulate it whole, many times, in memory.

A campaign is the modified QuickSort of seed ``002_b9503f18ee81843c.txt`` (§3.2, Table 1; see
:mod:`crowdprefs.campaign.sorting`) run batch after batch with a simulated crowd. Here it runs
without SQLite, vectorised over every query and pair of a campaign:

* The sort keeps, per candidate, its segment (dense ids ordered left to right, queries one after
  another) and whether it is still to be placed (``todo``). A segment's todo members keep their
  initial relative order, so its pivot is the todo member latest in the initial order; one
  iteration compares every other todo member of every open segment with its pivot and splits
  each segment into more / equal (pivot and former pivots stay there) / less parts by a dense
  re-ranking of ``3·segment + part``. Starting from no verdicts no pair is ever needed twice, so
  this is :func:`crowdprefs.campaign.sorting.replay` batch for batch (the tests check it
  against replay).
* Answers follow the simulated crowd's model (:mod:`crowdprefs.crowds.simulated`): a worker
  perceives ``s_A − s_B + noise·z − bias`` and answers "equal" inside their band; careless
  workers answer at random, bots "equal" in fixed time. One difference, for speed: each answer's
  worker is drawn by activity weight independently (the driver's simulated crowd draws distinct
  workers per pair), so a pair's answer counts are multinomial with exact shares (integrated
  over the workers) and are drawn per pair, not per answer; with 80 workers the mix of answers
  is the same (tested).
* Verdicts use the project's :class:`~crowdprefs.campaign.aggregate.AggregationRule` after a fixed
  number of answers, or a :class:`~crowdprefs.campaign.adaptive.StoppingRule` (rounds of answers
  until decided).
* Cost uses :mod:`crowdprefs.campaign.budget` (each pair is one HIT with as many assignments as
  answers); wall time adds, per round of answers, the time until its last answer is submitted.

Quality is reported with the cost: the ADR (seed 001 §3.4, :func:`crowdprefs.evaluation.measures.
average_dynamic_recall`) of each produced list against the true list, the produced list being
read as a ranking with its groups in a random internal order (seed 002 §5.4), and the share of
true order relations recovered (true pairs ``a`` more similar than ``b`` that the list puts in an
earlier group) and of true ties kept (equally similar pairs left in one group).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import special

from crowdprefs.campaign.adaptive import StoppingRule, answers_wanted, decide
from crowdprefs.campaign.aggregate import AggregationRule, verdicts
from crowdprefs.campaign.budget import FeeModel
from crowdprefs.crowds.simulated import CrowdModel, WorkerPool
from crowdprefs.errors import InputError
from crowdprefs.evaluation.measures import Judged, average_dynamic_recall, judge

SUMMARY_COLUMNS = [
    "iterations",
    "pairs",
    "answers",
    "cost",
    "wall_hours",
    "adr",
    "order_recovered",
    "ties_kept",
]


@dataclass(frozen=True)
class Design:
    """What a campaign buys: answers per pair (or an adaptive rule), the rule, reward and fees."""

    answers_per_pair: int = 10
    aggregation: AggregationRule = field(default_factory=AggregationRule)
    adaptive: StoppingRule | None = None
    reward: float = 0.02
    fees: FeeModel = field(default_factory=FeeModel)


@dataclass(frozen=True)
class Collection:
    """A collection as arrays over its candidates (grouped by query, queries in order)."""

    queries: np.ndarray
    documents: np.ndarray
    query: np.ndarray  # query code of each candidate
    group: np.ndarray  # true group (1 = most similar)

    @classmethod
    def from_truth(cls, truth: pd.DataFrame) -> Collection:
        """From group qrels ``query, document, group`` (the hidden truth of the simulation)."""
        missing = {"query", "document", "group"} - set(truth.columns)
        if missing:
            raise InputError(f"the truth lacks column(s) {', '.join(sorted(missing))}")
        frame = truth.sort_values(["query", "document"], kind="stable", ignore_index=True)
        if frame.duplicated(["query", "document"]).any():
            row = frame[frame.duplicated(["query", "document"])].iloc[0]
            raise InputError(f"the truth lists {row['document']!r} twice for {row['query']!r}")
        queries, code = np.unique(frame["query"].astype(str).to_numpy(), return_inverse=True)
        return cls(
            queries=queries,
            documents=frame["document"].astype(str).to_numpy(),
            query=code.astype(np.int64),
            group=frame["group"].to_numpy(dtype=np.int64),
        )


def sort_rounds(
    query: np.ndarray,
    position: np.ndarray,
    oracle: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> tuple[np.ndarray, np.ndarray, int]:
    """Run the modified QuickSort of every query at once; returns ``(group, iterations, pairs)``.

    ``query`` gives each candidate's query code (sorted ascending), ``position`` its place in
    its query's initial order, and ``oracle(x, y)`` the verdicts (+1: x more similar, 0, −1) of
    a batch of candidate-index pairs. ``group`` is each candidate's group (1 = most similar) and
    ``iterations`` the number of batches each query needed.
    """
    n = len(query)
    seg = query.copy()
    todo = np.ones(n, dtype=bool)
    iterations = np.zeros(int(query.max()) + 1 if n else 0, dtype=np.int64)
    item_at = np.argsort(position, kind="stable")
    rank = np.empty(n, dtype=np.int64)
    rank[item_at] = np.arange(n)
    asked = 0
    while True:
        count = np.bincount(seg, weights=todo, minlength=int(seg.max()) + 1)
        open_items = np.flatnonzero(todo & (count[seg] >= 2))
        if len(open_items) == 0:
            break
        latest = np.full(len(count), -1)
        np.maximum.at(latest, seg[open_items], rank[open_items])
        pivot_of = np.where(latest >= 0, item_at[latest], -1)
        x = open_items[pivot_of[seg[open_items]] != open_items]
        pivots = pivot_of[latest >= 0]
        y = pivot_of[seg[x]]
        verdict = np.asarray(oracle(x, y))
        asked += len(x)
        part = np.ones(n, dtype=np.int64)
        part[x] = 1 - np.sign(verdict)
        todo[pivots] = False
        iterations += np.bincount(query[pivots], minlength=len(iterations)) > 0
        key = seg * 3 + part
        present = np.bincount(key, minlength=3 * len(count)) > 0
        seg = (np.cumsum(present) - 1)[key]
    start = np.full(len(iterations), np.iinfo(np.int64).max)
    np.minimum.at(start, query, seg)
    return seg - start[query] + 1, iterations, asked


@dataclass
class _Crowd:
    """The simulated crowd's workers as arrays: exact answer shares for pairs of latent gaps.

    Each answer's worker is drawn by activity weight independently, so a pair's answers are
    i.i.d. given its gap and the side shown as A, and its counts are multinomial with shares
    ``Σ_w weight_w · P_w(choice | gap)``: ``P_w(A) = Φ((g_A − bias_w − band_w) / noise_w)`` and
    ``P_w(B) = Φ((−g_A + bias_w − band_w) / noise_w)`` for honest workers, 1/3 each for careless
    ones, "equal" for bots (the model of :mod:`crowdprefs.crowds.simulated`).
    """

    model: CrowdModel
    pool: WorkerPool
    rng: np.random.Generator

    def __post_init__(self) -> None:
        pool = self.pool
        self.weight = pool.weight / pool.weight.sum()
        self.honest = pool.kind == "honest"
        careless = self.weight[pool.kind == "careless"].sum()
        self.floor = np.array([careless / 3, careless / 3 + self.weight[pool.kind == "bot"].sum()])
        self.seconds = np.where(
            pool.kind == "bot",
            self.model.bot_seconds,
            np.where(pool.kind == "careless", self.model.careless_seconds, pool.median_seconds),
        )

    def shares(self, gap: np.ndarray, a_is_x: np.ndarray) -> np.ndarray:
        """Shares (more, equal, less) from x's view for each pair (gap = s_x − s_y, in whole
        groups)."""
        gap_a = np.rint(np.where(a_is_x, gap, -gap)).astype(np.int64)
        low = int(gap_a.min()) if len(gap_a) else 0
        inverse = gap_a - low
        pool, w = self.pool, self.weight * self.honest
        g = np.arange(low, low + int(inverse.max(initial=0)) + 1, dtype=float)[:, None]
        p_a = special.ndtr((g - pool.bias - pool.band) / pool.noise) @ w + self.floor[0]
        p_b = special.ndtr((-g + pool.bias - pool.band) / pool.noise) @ w + self.floor[0]
        side = np.stack([p_a, 1 - p_a - p_b, p_b], axis=1)[inverse.reshape(-1)]
        return np.where(a_is_x[:, None], side, side[:, ::-1])

    def round_seconds(self, answers: int) -> float:
        """Time until the last of ``answers`` answers published together is submitted: the
        latest acceptance (uniform over ``completion_hours``) plus one answer's work time."""
        rng = self.rng
        latest = self.model.completion_hours * 3600 * rng.random() ** (1 / answers)
        worker = rng.choice(len(self.weight), p=self.weight)
        spread = self.model.answer_seconds_spread
        return float(latest + self.seconds[worker] * np.exp(spread * rng.standard_normal()))


@dataclass(frozen=True)
class Campaign:
    """One simulated campaign: totals, each candidate's produced group and each query's
    number of iterations."""

    summary: dict[str, float]
    group: np.ndarray
    iterations: np.ndarray

    def lists(self, collection: Collection) -> pd.DataFrame:
        """The produced lists ``query, document, group``."""
        return pd.DataFrame(
            {
                "query": collection.queries[collection.query],
                "document": collection.documents,
                "group": self.group,
            }
        )


def _decide_batch(
    gap: np.ndarray, crowd: _Crowd, design: Design
) -> tuple[np.ndarray, np.ndarray, float]:
    """Collect answers for a batch of pairs until decided: ``(verdict, answers, wall seconds)``."""
    pairs = len(gap)
    a_is_x = crowd.rng.integers(0, 2, pairs).astype(bool)
    shares = crowd.shares(gap, a_is_x)
    counts = np.zeros((pairs, 3), dtype=np.int64)  # more, equal, less
    have = np.zeros(pairs, dtype=np.int64)
    rule = design.adaptive
    wanted = np.full(pairs, design.answers_per_pair if rule is None else rule.initial)
    wall = 0.0
    while True:
        new = wanted - have
        asking = new > 0
        if asking.any():
            counts[asking] += crowd.rng.multinomial(new[asking], shares[asking])
            wall += crowd.round_seconds(int(new.sum()))
        have = wanted
        if rule is None:
            return verdicts(*counts.T, design.aggregation)[0], have, wall
        decided, verdict = decide(*counts.T, rule)
        if decided.all():
            return verdict, have, wall
        wanted = answers_wanted(*counts.T, rule)


def simulate_campaign(
    collection: Collection,
    design: Design,
    model: CrowdModel = CrowdModel(),
    seed: int = 0,
) -> Campaign:
    """One whole campaign on ``collection`` with the simulated crowd (seeded)."""
    rng = np.random.default_rng([seed, 0x91A7])
    crowd = _Crowd(model, WorkerPool.draw(model, seed), rng)
    similarity = -collection.group.astype(float)
    position = rng.random(len(collection.query))
    totals = {"pairs": 0, "answers": 0, "cost": 0.0, "wall": 0.0}

    def oracle(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        verdict, answers, wall = _decide_batch(similarity[x] - similarity[y], crowd, design)
        totals["pairs"] += len(x)
        totals["answers"] += int(answers.sum())
        totals["cost"] += float(
            np.sum(design.fees.per_assignment(design.reward, answers) * answers)
        )
        totals["wall"] += wall
        return verdict

    group, iterations, _ = sort_rounds(collection.query, position, oracle)
    summary = {
        "iterations": int(iterations.max()) if len(iterations) else 0,
        "pairs": totals["pairs"],
        "answers": totals["answers"],
        "cost": round(totals["cost"], 2),
        "wall_hours": totals["wall"] / 3600,
        "adr": float(_campaign_adr(collection, group, rng).mean()),
        **_relations(collection, group),
    }
    return Campaign(summary, group, iterations)


def _campaign_adr(collection: Collection, group: np.ndarray, rng: np.random.Generator):
    """Per query, ADR of the produced lists against the truth (like :func:`list_adr`, which the
    tests check it against), built straight into a
    :class:`~crowdprefs.evaluation.measures.Judged`: every list ranks exactly the judged
    candidates, groups in order, members in a random order."""
    code, truth = collection.query, collection.group
    n_queries = len(collection.queries)
    order = np.lexsort((rng.random(len(code)), group, code))
    sizes = np.bincount(code, minlength=n_queries)
    start = np.r_[0, np.cumsum(sizes)[:-1]]
    rank = np.arange(len(code)) - start[code[order]]
    width = int(sizes.max())
    gain_of = (truth.max() + 1 - truth).astype(float)
    by_truth = np.lexsort((truth, code))
    better = np.empty(len(code), dtype=np.int64)
    first_of = np.r_[
        True,
        (code[by_truth][1:] != code[by_truth][:-1]) | (truth[by_truth][1:] != truth[by_truth][:-1]),
    ]
    run_start = np.maximum.accumulate(np.where(first_of, np.arange(len(code)), 0))
    better[by_truth] = run_start - start[code[by_truth]]
    gain = np.zeros((1, n_queries, width))
    judged = np.zeros((1, n_queries, width), dtype=bool)
    best = np.full((1, n_queries, width), -1, dtype=np.int64)
    gain[0, code[order], rank] = gain_of[order]
    judged[0, code[order], rank] = True
    best[0, code[order], rank] = better[order]
    ideal = np.zeros((n_queries, width))
    ideal[code[by_truth], np.arange(len(code)) - start[code[by_truth]]] = gain_of[by_truth]
    data = Judged(
        systems=np.array(["campaign"]),
        queries=collection.queries,
        gain=gain,
        judged=judged,
        better=best,
        ideal=ideal,
        n_judged=sizes,
        length=sizes[None, :],
    )
    return average_dynamic_recall(data)[0]


def _relations(collection: Collection, group: np.ndarray) -> dict[str, float]:
    """Share of true strict order relations recovered and of true ties kept in one group."""
    code = collection.query
    start = np.searchsorted(code, np.arange(len(collection.queries)))
    slot = np.arange(len(code)) - start[code]
    width = int(slot.max()) + 1
    truth = np.full((len(collection.queries), width), -1)
    made = np.full((len(collection.queries), width), -1)
    truth[code, slot] = collection.group
    made[code, slot] = group
    valid = (truth[:, :, None] >= 0) & (truth[:, None, :] >= 0)
    valid &= ~np.eye(width, dtype=bool)[None]
    ahead = valid & (truth[:, :, None] < truth[:, None, :])
    tied = valid & (truth[:, :, None] == truth[:, None, :])
    recovered = ahead & (made[:, :, None] < made[:, None, :])
    kept = tied & (made[:, :, None] == made[:, None, :])
    return {
        "order_recovered": float(recovered.sum() / max(ahead.sum(), 1)),
        "ties_kept": float(kept.sum() / max(tied.sum(), 1)) if tied.any() else float("nan"),
    }


def list_adr(produced: pd.DataFrame, truth: pd.DataFrame, seed: int = 0) -> np.ndarray:
    """Per list, ADR of the produced lists against the true lists (seed 002 §5.4).

    Each produced list is read as a ranking: groups in order, members of a group in a random
    order (``seed``). Several produced versions (a ``campaign`` column) are scored at once as
    systems; returns an array (versions × queries), queries sorted.
    """
    rng = np.random.default_rng([seed, 0xADE])
    runs = produced.assign(_tie=rng.random(len(produced)))
    if "campaign" not in runs.columns:
        runs = runs.assign(campaign=0)
    runs = runs.sort_values(["campaign", "query", "group", "_tie"], ignore_index=True)
    runs["rank"] = runs.groupby(["campaign", "query"]).cumcount() + 1
    runs = runs.rename(columns={"campaign": "system"})[["system", "query", "document", "rank"]]
    return average_dynamic_recall(judge(runs, truth[["query", "document", "group"]]))


def simulate(
    truth: pd.DataFrame,
    design: Design,
    model: CrowdModel = CrowdModel(),
    campaigns: int = 100,
    seed: int = 0,
    on_campaign: Callable[[int], None] | None = None,
) -> pd.DataFrame:
    """Simulate ``campaigns`` whole campaigns; one row each with :data:`SUMMARY_COLUMNS`.

    Campaign ``i`` uses seed ``seed · 1000003 + i``: its initial orders, workers and answers.
    """
    if campaigns < 1:
        raise InputError(f"simulate at least one campaign, got {campaigns}")
    collection = Collection.from_truth(truth)
    rows = []
    for i in range(campaigns):
        rows.append(simulate_campaign(collection, design, model, seed=seed * 1_000_003 + i).summary)
        if on_campaign:
            on_campaign(i)
    return pd.DataFrame(rows)[SUMMARY_COLUMNS]


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Per column: mean, 95% interval of the mean (normal), and the 5%, 50%, 95% quantiles."""
    values = frame[SUMMARY_COLUMNS]
    mean = values.mean()
    half = 1.959964 * values.std(ddof=1).fillna(0) / np.sqrt(len(values))
    return pd.DataFrame(
        {
            "mean": mean,
            "ci_low": mean - half,
            "ci_high": mean + half,
            "p5": values.quantile(0.05),
            "median": values.quantile(0.5),
            "p95": values.quantile(0.95),
        }
    )
