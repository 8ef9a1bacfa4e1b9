"""Plan a campaign before paying: simulate it whole, many times, in memory.

A campaign is the modified QuickSort of the preference-judgments paper (§3.2, Table 1; see
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
* Answers follow the crowd model (:mod:`crowdprefs.quality.crowd_model`) worker by worker:
  each campaign draws its pool of workers, a pair's answers come from distinct workers drawn by
  activity weight (successive sampling), and each answer follows its worker's own noise, band
  and bias at the pair's gap (the pivot is shown as B in ``pivot_b_share`` of the pairs), so
  worker-level effects (a busy careless worker, a lean to B) carry over pairs as in a campaign.
* Verdicts use the project's :class:`~crowdprefs.campaign.aggregate.AggregationRule` after a fixed
  number of answers, or a :class:`~crowdprefs.campaign.adaptive.StoppingRule` (rounds of answers
  until decided); with a :class:`~crowdprefs.campaign.adaptive.FragilityRule`, pairs whose
  verdict a few changed answers flip get further rounds too, as the driver asks them
  (:func:`~crowdprefs.campaign.adaptive.wanted_next`).
* With ``flag_each_round`` (``[review] flag_each_round``), after each round the workers are
  flagged with the campaign's own rules (:func:`crowdprefs.quality.review.round_flags` over the
  answers so far, judged against the verdicts so far), blocked (never drawn again) and their
  answers dropped; the pairs left short are asked again in further rounds before they are
  decided (the driver gives up after three such rounds and waits; here they go on until every
  pair is complete). Dropped answers are paid, so they count in answers and cost.
* Cost uses :mod:`crowdprefs.campaign.budget` (each pair is one HIT with as many assignments as
  answers); each *round* (one publication of answers: a batch, or one more look of adaptive
  answers) takes the crowd model's round time, a latency plus the answers over the crowd's
  throughput (:func:`crowdprefs.quality.crowd_model.round_hours`); wall time is their sum.

Quality is reported with the cost: the ADR (the power-and-stability paper §3.4,
:func:`crowdprefs.evaluation.measures. average_dynamic_recall`) of each produced list against the
true list, the produced list being read as a ranking with its groups in a random internal order (the
preference-judgments paper §5.4), and the share of true order relations recovered (true pairs ``a``
more similar than ``b`` that the list puts in an earlier group) and of true ties kept (equally
similar pairs left in one group).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import special

from crowdprefs.campaign.adaptive import FragilityRule, StoppingRule, decide, wanted_next
from crowdprefs.campaign.aggregate import AggregationRule, inter_agreement, pair_verdicts, verdicts
from crowdprefs.campaign.budget import FeeModel
from crowdprefs.errors import InputError
from crowdprefs.evaluation.measures import Judged, average_dynamic_recall, judge
from crowdprefs.machine.link import Link, normal_scores
from crowdprefs.machine.policy import PriorPolicy, Triage, calibration_pairs, triage
from crowdprefs.machine.simulated import SimulatedPrior, realised_correlation, simulated_scores
from crowdprefs.machine.stopping import decide_with_prior
from crowdprefs.parallel import SERIAL, Runner
from crowdprefs.quality.crowd_model import CrowdModel, WorkerPool, distinct_workers, round_hours
from crowdprefs.quality.review import ReviewRules, round_flags
from crowdprefs.results_file import FRAME_COLUMNS
from crowdprefs.rng import counter_uniform

SUMMARY_COLUMNS = [
    "iterations",
    "rounds",
    "pairs",
    "answers",
    "cost",
    "wall_hours",
    "rounds_pipelined",
    "wall_hours_pipelined",
    "adr",
    "order_recovered",
    "ties_kept",
    "machine_pairs",
]

MACHINE_COLUMNS = [
    "audited",
    "wrong",
    "wrong_low",
    "wrong_high",
    "wrong_true",
    "human_flip",
    "prior_correlation",
]
"""Per campaign with a machine prior that skips (NaN otherwise): the audited machine verdicts
(pairs the selection chose that the audit sample asked anyway), the share of them the human
verdict differs from with its interval, the true share of wrong machine verdicts among the
skipped pairs (each one's chance that a human verdict of the design differs, from
:data:`TRUE_OVERTURN_DRAWS` simulated verdicts never paid for), the share of human verdicts
that a second, replicate crowd would flip (what the human design itself achieves), and the
realised Spearman correlation of the simulated scores with the truth."""

ITERATION_COLUMNS = [
    "iteration",
    "pairs",
    "answers",
    "rounds",
    "hours",
    "agreement",
    "A",
    "equal",
    "B",
]
"""Per iteration of a simulated campaign: pairs, answers, rounds, hours, the mean inter-agreement of
its pairs (the preference-judgments paper §5.3; pairs with two answers or more) and the answers'
A/equal/B counts."""

ANSWER_COLUMNS = [
    "iteration",
    "pair",
    "query",
    "x",
    "y",
    "a_is_x",
    "slot",
    "round",
    "worker",
    "choice",
    "seconds",
    "accepted_hours",
]
"""The answer log of a recorded simulated campaign (:func:`simulate_campaign` with ``record``):
codes of the query, of x and the pivot y (candidates of the collection), the worker (in the
campaign's :class:`~crowdprefs.quality.crowd_model.WorkerPool`), ``choice`` 0 = A, 1 = equal,
2 = B, the work time and the acceptance time in hours from the campaign's start."""


@dataclass(frozen=True)
class Design:
    """What a campaign buys: answers per pair (or an adaptive rule), the rule, reward and fees, how
    often the pivot is shown as variation B (the preference-judgments paper §4.2 randomised the
    sides), and whether careless workers are flagged, blocked and their answers dropped after each
    round (``flag_each_round``, with the ``[review]`` thresholds of ``review``), and whether
    fragile verdicts get further answers (``fragility``, the ``[fragility]`` setting)."""

    answers_per_pair: int = 10
    aggregation: AggregationRule = field(default_factory=AggregationRule)
    adaptive: StoppingRule | None = None
    reward: float = 0.02
    fees: FeeModel = field(default_factory=FeeModel)
    pivot_b_share: float = 0.5
    flag_each_round: bool = False
    review: ReviewRules = field(default_factory=ReviewRules)
    fragility: FragilityRule | None = None
    prior: SimulatedPrior | None = None
    machine: PriorPolicy = field(default_factory=PriorPolicy)

    def __post_init__(self) -> None:
        if self.answers_per_pair < 1:
            raise InputError(f"a pair needs at least one answer, got {self.answers_per_pair}")
        if not 0 <= self.reward < math.inf:
            raise InputError(f"the reward must be a number 0 or more, got {self.reward}")
        if not 0 <= self.pivot_b_share <= 1:
            raise InputError(
                f"the share of pivots shown as B must lie in [0, 1], got {self.pivot_b_share}"
            )
        whole_query = self.aggregation.decider.whole_query
        if self.adaptive is not None and whole_query:
            raise InputError(
                "adaptive answers stop each pair on its own answers; the "
                f"{self.aggregation.rule} rule decides pairs from every answer of the query: "
                "use one or the other"
            )
        if self.fragility is not None and self.fragility.aggregation != self.aggregation:
            raise InputError("the fragility rule must judge verdicts by the design's own rule")
        if self.machine.active and self.prior is None:
            raise InputError("skipping or weighing answers by a prior needs a prior to plan with")
        if self.machine.active and (self.flag_each_round or whole_query):
            raise InputError(
                "plan simulates a prior that skips pairs or weighs answers with the margin or "
                "mann-whitney rule and without flagging each round"
            )
        if self.flag_each_round and whole_query:
            raise InputError(
                f"plan cannot simulate flagging each round with the {self.aggregation.rule} rule "
                "(its fit would keep the dropped answers); the rule weighs each worker's "
                "reliability itself: plan one or the other"
            )

    @property
    def most_answers(self) -> int:
        """The most answers a pair can get."""
        most = self.answers_per_pair if self.adaptive is None else self.adaptive.maximum
        return most if self.fragility is None else max(most, self.fragility.maximum)


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


def _pivots(
    seg: np.ndarray,
    open_items: np.ndarray,
    rank: np.ndarray,
    item_at: np.ndarray,
    score: np.ndarray | None,
    segments: int,
) -> np.ndarray:
    """Each segment's pivot (−1 for a closed one): its open member latest in the initial order,
    or with a prior ``score`` the member of rank ``count // 2`` by ascending score, ties by
    initial order (:func:`crowdprefs.campaign.sorting.arranged`)."""
    pivot_of = np.full(segments, -1)
    if score is None:
        latest = np.full(segments, -1)
        np.maximum.at(latest, seg[open_items], rank[open_items])
        return np.where(latest >= 0, item_at[latest], -1)
    ranked = open_items[np.lexsort((rank[open_items], score[open_items], seg[open_items]))]
    starts = np.flatnonzero(np.r_[True, seg[ranked][1:] != seg[ranked][:-1]])
    sizes = np.diff(np.r_[starts, len(ranked)])
    chosen = ranked[starts + sizes // 2]
    pivot_of[seg[chosen]] = chosen
    return pivot_of


def sort_rounds(
    query: np.ndarray,
    position: np.ndarray,
    oracle: Callable[[np.ndarray, np.ndarray], np.ndarray],
    score: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, int]:
    """Run the modified QuickSort of every query at once; returns ``(group, iterations, pairs)``.

    ``query`` gives each candidate's query code (sorted ascending), ``position`` its place in
    its query's initial order, and ``oracle(x, y)`` the verdicts (+1: x more similar, 0, −1) of
    a batch of candidate-index pairs (``y`` the pivots). With a machine prior's ``score`` per
    candidate, pivots follow :func:`crowdprefs.campaign.sorting.arranged`. ``group`` is each
    candidate's group (1 = most similar) and ``iterations`` the number of batches each query
    needed.
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
        pivot_of = _pivots(seg, open_items, rank, item_at, score, len(count))
        x = open_items[pivot_of[seg[open_items]] != open_items]
        pivots = pivot_of[pivot_of >= 0]
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


class _Crowd:
    """One campaign's workers as arrays: each worker's answer shares at every whole gap
    between true groups (``table[worker, gap + offset]``), their activity weights and times.

    Answers are counter-based, keyed by the campaign seed, the pair (its two candidates) and the
    answer's slot: the same pair gets the same sides, workers and answers whatever the design,
    so designs compared on the same campaign seeds differ only by what they ask (paired)."""

    def __init__(self, model: CrowdModel, seed: int, widest_gap: int, rng: np.random.Generator):
        self.model = model
        self.seed = seed
        self.pool = WorkerPool.draw(model, seed)
        self.rng = rng
        self.blocked = np.zeros(len(self.pool.ids), dtype=bool)
        self.offset = widest_gap
        table = self.pool.shares(np.arange(-widest_gap, widest_gap + 1))
        self.cumulative = np.cumsum(table, axis=2)[:, :, :2]
        self.seconds = np.where(
            self.pool.kind == "bot",
            model.bot_seconds,
            np.where(
                self.pool.kind == "careless", model.careless_seconds, self.pool.median_seconds
            ),
        )

    def uniform(self, stream: int, key: np.ndarray, *more) -> np.ndarray:
        return counter_uniform(self.seed, stream, key, *more)

    def round_hours(self, index, answers) -> np.ndarray:
        """Hours of the campaign's round(s) ``index`` asking ``answers`` answers (the round's
        speed is keyed by its index, the same for every design)."""
        z = special.ndtri(self.uniform(16, np.asarray(index)))
        return round_hours(self.model, answers, z)

    def workers(self, key: np.ndarray, taken: np.ndarray, slot: int) -> np.ndarray:
        """The worker of answer ``slot`` of each pair (``taken``: the pairs' earlier workers),
        never a blocked one."""
        weight = np.where(self.blocked, 0.0, self.pool.weight)
        return distinct_workers(weight, taken, lambda t, rows: self.uniform(12, key[rows], slot, t))

    def answer(self, key: np.ndarray, slot: np.ndarray, worker: np.ndarray, gap_a: np.ndarray):
        """Each answer's choice (0 = A, 1 = equal, 2 = B) by ``worker`` at A's gap ``gap_a``."""
        edges = self.cumulative[worker, gap_a + self.offset]
        u = self.uniform(14, key, slot)
        return (u >= edges[:, 0]).astype(np.int64) + (u >= edges[:, 1])

    def work_seconds(self, key: np.ndarray, slot: np.ndarray, worker: np.ndarray) -> np.ndarray:
        z = special.ndtri(self.uniform(15, key, slot))
        return self.seconds[worker] * np.exp(self.model.answer_seconds_spread * z)


class _Flagger:
    """In-campaign flagging of one simulated campaign (``Design.flag_each_round``): every answer
    asked so far as an answers frame (:data:`~crowdprefs.results_file.FRAME_COLUMNS`), the
    verdicts of decided pairs, and the crowd's blocked workers."""

    COLUMNS = ("iteration", "pair_id", "query", "x", "y", "a_is_x", "worker_id", "choice")

    def __init__(self, crowd: _Crowd, design: Design, query: np.ndarray) -> None:
        self.crowd, self.design, self.query = crowd, design, query
        self.parts: dict[str, list[np.ndarray]] = {c: [] for c in (*self.COLUMNS, "seconds")}
        self.dropped = np.zeros(0, dtype=bool)
        self.decided: dict[int, int] = {}
        self.batch_start = 0

    def start(self) -> None:
        """A new batch begins: answers from here on are the current batch's."""
        self.batch_start = len(self.dropped)

    def add(self, iteration: int, key, x, y, a_is_x, worker, choice, seconds) -> None:
        """One round's answers (``choice`` as shown: 0 = A, 1 = equal, 2 = B)."""
        values = (iteration + np.zeros_like(key), key, self.query[x], x, y, a_is_x, worker, choice)
        for column, value in zip((*self.COLUMNS, "seconds"), (*values, seconds), strict=True):
            self.parts[column].append(np.asarray(value))
        self.dropped = np.concatenate([self.dropped, np.zeros(len(key), dtype=bool)])

    def decide(self, key: np.ndarray, verdict: np.ndarray) -> None:
        """The verdicts of a decided batch (they stay, as the driver stores them)."""
        self.decided.update(zip(key.tolist(), np.asarray(verdict).tolist(), strict=True))

    def frame(self) -> pd.DataFrame:
        data = {c: np.concatenate(v) for c, v in self.parts.items()}
        self.parts = {c: [v] for c, v in data.items()}
        side = 1 - data["choice"]  # A +1, equal 0, B −1, as shown
        n = len(side)
        frame = pd.DataFrame(
            {
                **{c: data[c] for c in self.COLUMNS if c != "choice"},
                "choice": np.array(["A", "equal", "B"], dtype=object)[data["choice"]],
                "score": np.where(data["a_is_x"], side, -side),
                "seconds": data["seconds"],
                "hit_id": data["pair_id"],
                "assignment_id": np.arange(n),
                "status": np.where(self.dropped, "rejected", "submitted"),
                "kind": "sort",
                "pivot_known": True,
                "background": "",
                "comment": "",
            }
        )
        return frame.reindex(columns=FRAME_COLUMNS)

    def flag(self) -> tuple[np.ndarray, np.ndarray]:
        """Flag after a round: block the workers newly flagged and drop their answers of the
        current batch (those of decided batches stay, as the store keeps them); returns the
        batch-relative indices and choices of the answers dropped."""
        frame = self.frame()
        pairs = pair_verdicts(frame, self.design.aggregation)
        known = pairs.index.map(self.decided)
        pairs["verdict"] = np.where(known.isna(), pairs["verdict"], known).astype(int)
        flags = round_flags(frame, pairs, self.design.review)
        new = flags["worker_id"].to_numpy(dtype=np.int64)
        new = new[~self.crowd.blocked[new]]
        if len(new) == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        self.crowd.blocked[new] = True
        drop = np.isin(frame["worker_id"].to_numpy(), new) & ~self.dropped
        drop[: self.batch_start] = False
        self.dropped |= drop
        index = np.flatnonzero(drop[self.batch_start :])
        return index, self.parts["choice"][0][self.batch_start :][index]


@dataclass
class _Fitted:
    """The ``bradley-terry`` rule in a simulated campaign: every answer so far (item codes of
    the sides shown as A and B, outcome for A, worker) and one fit on them per batch."""

    collection: Collection
    workers: int
    rule: AggregationRule
    parts: list[tuple[np.ndarray, ...]] = field(default_factory=list)

    def add(self, x, y, a_is_x, worker, choice) -> None:
        """Answers ``choice`` (0 = A, 1 = equal, 2 = B) of ``worker`` to pairs (x, y)."""
        self.parts.append(
            (np.where(a_is_x, x, y), np.where(a_is_x, y, x), 1 - choice, np.asarray(worker))
        )

    def verdicts(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Verdicts of the pairs (x, y) from one fit on every answer so far."""
        columns = zip(*self.parts, strict=True)
        first, second, outcome, worker = (np.concatenate(column) for column in columns)
        return self.rule.decider.coded_verdicts(
            first, second, outcome, worker, self.collection.query, x, y,
            n_items=len(self.collection.query), n_workers=self.workers, settings=self.rule,
        )[0]  # fmt: skip


@dataclass
class _Batch:
    """What one iteration asked and got (for the per-iteration table and the answer log)."""

    verdict: np.ndarray
    answers: np.ndarray
    rounds: int
    hours: float
    shown: np.ndarray  # (pairs, 3): A, equal, B answers
    per_round: np.ndarray  # (rounds, pairs): answers asked of each pair in each round
    log: list[dict[str, np.ndarray]]


@dataclass(frozen=True)
class Campaign:
    """One simulated campaign: totals, each candidate's produced group, each query's number of
    iterations, the per-iteration table (:data:`ITERATION_COLUMNS`), when recorded, the
    answer log (:data:`ANSWER_COLUMNS`) with the campaign's worker pool, and the workers
    blocked during the campaign."""

    summary: dict[str, float]
    group: np.ndarray
    iterations: np.ndarray
    per_iteration: pd.DataFrame
    answers: pd.DataFrame | None = None
    pool: WorkerPool | None = None
    blocked: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    """The workers (indices in the campaign's pool) blocked by ``flag_each_round``."""

    def lists(self, collection: Collection) -> pd.DataFrame:
        """The produced lists ``query, document, group``."""
        return pd.DataFrame(
            {
                "query": collection.queries[collection.query],
                "document": collection.documents,
                "group": self.group,
            }
        )


class _Machine:
    """The machine prior of one simulated campaign beyond the pivots: the calibrated links
    (fitted on the human answers and verdicts so far), the pairs it decides and the audit."""

    def __init__(self, collection: Collection, design: Design, score: np.ndarray, seed: int):
        self.z = normal_scores(collection.query, score)
        self.policy, self.bias, self.seed = design.machine, design.prior.position_bias, seed
        self.parts: list[tuple[np.ndarray, ...]] = []  # d, s, verdict, answer counts per pair
        self.audited = self.overturned = self.skipped = self.wrong = self.flips = 0
        self.calibrations = 0
        self.pending = False  # the next batch asked is a round's calibration
        self.current: np.ndarray | None = None  # positions of the round's calibration pairs
        self.answer_link: Link | None = None

    def shown(self, x: np.ndarray, y: np.ndarray, a_is_x: np.ndarray):
        """The pairs' score differences as the model reads them (its lean to the side shown
        first added) and sides (+1: x shown as A)."""
        side = np.where(a_is_x, 1.0, -1.0)
        return self.z[x] - self.z[y] + self.bias * side, side

    def triage(self, x, y, a_is_x, key) -> Triage | None:
        """:func:`~crowdprefs.machine.policy.triage` of the rest of a round with the human
        verdicts so far and the round's calibration pairs (``None`` without skipping, or for
        a batch that is asked whole: a calibration batch, or a round too small to triage)."""
        rule = self.policy.skip
        if rule is None or self.current is None:
            return None
        known = self.known()
        calibration = np.zeros(len(known[2]), dtype=bool)
        calibration[self.current] = True
        d, side = self.shown(x, y, a_is_x)
        return triage(known[:3], calibration, d, side, key, rule, self.seed)

    def known(self) -> tuple[np.ndarray, ...]:
        """Differences, sides, verdicts and answer counts of the pairs humans decided."""
        if not self.parts:
            return np.zeros(0), np.zeros(0), np.zeros(0, np.int64), np.zeros((0, 3), np.int64)
        return tuple(np.concatenate(column) for column in zip(*self.parts, strict=True))

    def calibration(self, key: np.ndarray) -> np.ndarray | None:
        """The calibration pairs of a round of the sort, asked first in a batch of their own
        (:func:`~crowdprefs.machine.policy.calibration_pairs`); ``None`` without skipping or
        for a round asked whole (:meth:`~crowdprefs.machine.overturn.SkipRule.calibrates`)."""
        rule = self.policy.skip
        if rule is None or not rule.calibrates(len(key)):
            return None
        self.calibrations += 1
        self.pending = True
        return calibration_pairs(key, rule.min_verdicts, self.seed)

    def pseudo(self, x, y, a_is_x) -> np.ndarray | None:
        """Pseudo-answers (more, equal, less) of the pairs for the stopping rule (``None``
        without a weight)."""
        if self.policy.weight <= 0 or self.answer_link is None:
            return None
        d, side = self.shown(x, y, a_is_x)
        return self.policy.weight * self.answer_link.probabilities(d, side)

    def learn(self, x, y, a_is_x, verdict, counts, sure: Triage | None, asked) -> None:
        """Human-decided pairs (``asked`` of the batch ``sure`` triaged, ``None``: not
        triaged): their verdicts and answers calibrate the links; a calibration batch's the
        triage of the rest of its round; the audited machine verdicts count for the audit's
        wrong share."""
        d, side = self.shown(x, y, a_is_x)
        start = sum(len(p[0]) for p in self.parts)
        self.parts.append((d, side, np.asarray(verdict), counts))
        self.current = np.arange(start, start + len(d)) if self.pending else None
        self.pending = False
        if sure is not None:
            checked = sure.audit[asked]
            self.audited += int(checked.sum())
            self.overturned += int((checked & (sure.verdict[asked] != verdict)).sum())
        if self.policy.weight > 0:
            all_d, all_s, _, all_counts = self.known()
            self.answer_link = Link.fit(all_d, all_s, all_counts)

    def summary(self) -> dict[str, float]:
        rule = self.policy.skip
        if rule is None:
            return {}
        estimate, low, high = rule.interval(self.overturned, self.audited)
        decided = sum(len(p[0]) for p in self.parts)
        return {
            "audited": self.audited,
            "wrong": estimate,
            "wrong_low": low,
            "wrong_high": high,
            "wrong_true": self.wrong / self.skipped if self.skipped else np.nan,
            "human_flip": self.flips / decided if decided else np.nan,
        }


TRUE_OVERTURN_DRAWS = 16
"""Human verdicts drawn per skipped pair for its true overturn chance (never paid for)."""


def _overturn_chance(
    key, gap, machine_verdict, crowd: _Crowd, design: Design, keys: int, pseudo=None
) -> float:
    """The expected number of ``machine_verdict`` s a human verdict of the design would
    overturn: for each pair, the share of :data:`TRUE_OVERTURN_DRAWS` fresh human verdicts
    (answers keyed beyond every pair's ``key``; with the prior's ``pseudo``-answers, as the
    campaign would have asked them) that differ, summed over the pairs."""
    draws = [
        _decide_batch(
            key + (r + 1) * keys, gap, crowd, design, (0, 0.0), False, pseudo=pseudo
        ).verdict
        for r in range(TRUE_OVERTURN_DRAWS)
    ]
    return float((np.array(draws) != machine_verdict).mean(axis=0).sum())


def _decide_batch(
    key: np.ndarray,
    gap: np.ndarray,
    crowd: _Crowd,
    design: Design,
    clock: tuple[int, float],
    record: bool,
    fitted: tuple[_Fitted, np.ndarray, np.ndarray] | None = None,
    flagger: tuple[_Flagger, int, np.ndarray, np.ndarray] | None = None,
    pseudo: np.ndarray | None = None,
) -> _Batch:
    """Collect answers for a batch of pairs (``key`` identifies each pair, ``gap`` = s_x − s_y
    in whole groups, y the pivot) round after round until decided (and, with a fragility rule,
    until no verdict is fragile below its maximum); ``clock`` gives the rounds
    and hours the campaign took before the batch; ``fitted``, for the ``bradley-terry`` rule,
    the campaign's answers so far and the pairs' x and y. With a ``flagger`` (the campaign's
    :class:`_Flagger`, the iteration and the pairs' ``x, y``), workers are flagged after each
    round, their answers dropped and the pairs left short asked again before any decision.
    ``pseudo``: the machine prior's pseudo-answers per pair for the stopping rule
    (:func:`crowdprefs.machine.stopping.decide_with_prior`)."""
    pairs = len(gap)
    a_is_x = crowd.uniform(11, key) < design.pivot_b_share  # the pivot y is shown as B
    gap_a = np.where(a_is_x, gap, -gap)
    workers = np.full((pairs, design.most_answers), -1, dtype=np.int64)
    shown = np.zeros((pairs, 3), dtype=np.int64)
    have = np.zeros(pairs, dtype=np.int64)  # answers that count
    used = np.zeros(pairs, dtype=np.int64)  # answers asked (dropped ones included)
    asked_rows: list[np.ndarray] = []
    rule = design.adaptive
    wanted = np.full(pairs, design.answers_per_pair if rule is None else rule.initial)
    rounds, hours, log, load = 0, 0.0, [], []
    if flagger is not None:
        flagger[0].start()
    while True:
        end = used + np.maximum(wanted - have, 0)
        if (end > used).any():
            if end.max() > workers.shape[1]:
                more = np.full((pairs, int(end.max()) - workers.shape[1]), -1, dtype=np.int64)
                workers = np.concatenate([workers, more], axis=1)
            for slot in range(int(used.min()), int(end.max())):
                rows = np.flatnonzero((used <= slot) & (slot < end))
                workers[rows, slot] = crowd.workers(key[rows], workers[rows, :slot], slot)
            slots = np.arange(workers.shape[1])
            row, slot = np.nonzero((slots >= used[:, None]) & (slots < end[:, None]))
            worker = workers[row, slot]
            choice = crowd.answer(key[row], slot, worker, gap_a[row])
            if fitted is not None:
                fitted[0].add(fitted[1][row], fitted[2][row], a_is_x[row], worker, choice)
            shown += np.bincount(row * 3 + choice, minlength=3 * pairs).reshape(pairs, 3)
            load.append(np.bincount(row, minlength=pairs))
            took = float(crowd.round_hours(clock[0] + rounds, len(row)))
            if record:
                seconds = crowd.work_seconds(key[row], slot, worker)
                latest = np.maximum(took - seconds / 3600, 0.0)
                log.append(
                    {
                        "row": row,
                        "slot": slot,
                        "round": np.full(len(row), rounds),
                        "worker": worker,
                        "choice": choice,
                        "seconds": seconds,
                        "accepted_hours": clock[1] + hours + latest * crowd.rng.random(len(row)),
                    }
                )
            rounds += 1
            hours += took
            have, used = have + end - used, end
            if flagger is not None:
                flags, iteration, x, y = flagger
                seconds = crowd.work_seconds(key[row], slot, worker)
                flags.add(iteration, key[row], x[row], y[row], a_is_x[row], worker, choice, seconds)
                asked_rows.append(row)
                index, dropped = flags.flag()
                if len(index):
                    gone = np.concatenate(asked_rows)[index]
                    shown -= np.bincount(gone * 3 + dropped, minlength=3 * pairs).reshape(pairs, 3)
                    have -= np.bincount(gone, minlength=pairs)
                    continue  # ask the replacements before deciding
        counts = np.where(a_is_x[:, None], shown, shown[:, ::-1])  # more, equal, less
        if rule is None:
            if fitted is None:
                verdict = verdicts(*counts.T, design.aggregation)[0]
            else:
                verdict = fitted[0].verdicts(fitted[1], fitted[2])
            if design.fragility is None:
                break
            decided = None
        elif pseudo is None:
            decided, verdict = decide(*counts.T, rule)
        else:
            decided, verdict = decide_with_prior(*counts.T, pseudo, rule)
        wanted = wanted_next(*counts.T, rule, design.fragility, decided)
        if (wanted <= have).all():  # every pair decided and none fragile below its maximum
            break
    for entry in log:
        entry["a_is_x"] = a_is_x[entry["row"]]
    if flagger is not None:
        flagger[0].decide(key, verdict)
    per_round = np.array(load) if load else np.zeros((0, pairs), dtype=np.int64)
    return _Batch(verdict, used, rounds, hours, shown, per_round, log)


class _Pipeline:
    """The rounds a campaign would take if each segment went on as soon as its own pairs were
    decided (the driver waits for the whole batch): a segment's pairs start in the round after
    its parent segment's last answers, so a pair's first answers are asked in parallel with
    other pairs' later ones. The pairs and answers are the same (they do not depend on when
    they are asked); only the rounds they fall in change."""

    def __init__(self, items: int) -> None:
        self.ready = np.zeros(items, dtype=np.int64)  # round at which an item's segment starts
        self.load = np.zeros(0, dtype=np.int64)  # answers asked in each round

    def add(self, x: np.ndarray, y: np.ndarray, per_round: np.ndarray) -> None:
        """A batch of pairs ``(x, y)`` (``y`` the pivot: one segment per pivot) and the answers
        each pair was asked in each of the batch's rounds."""
        start = self.ready[y]
        used = per_round > 0
        last = np.argmax(used[::-1], axis=0) if len(used) else 0  # a batch the machine decided
        rounds = np.where(used.any(axis=0), len(used) - last, 0)
        finish = np.zeros(len(self.ready), dtype=np.int64)
        np.maximum.at(finish, y, start + rounds)
        self.ready[x] = finish[y]
        self.ready[y] = finish[y]
        r, p = np.nonzero(used)
        at = start[p] + r
        if len(at) and at.max() >= len(self.load):
            self.load = np.concatenate([self.load, np.zeros(at.max() + 1 - len(self.load), int)])
        np.add.at(self.load, at, per_round[r, p])

    def hours(self, crowd: _Crowd) -> tuple[int, float]:
        """Rounds and wall hours (the crowd model's round times)."""
        load = self.load[self.load > 0]
        return len(load), float(np.sum(crowd.round_hours(np.arange(len(load)), load)))


def _widest_gap(collection: Collection) -> int:
    """The largest difference of true groups within a query."""
    if len(collection.group) == 0:
        return 0
    n = len(collection.queries)
    high = np.zeros(n, dtype=np.int64)
    low = np.full(n, np.iinfo(np.int64).max)
    np.maximum.at(high, collection.query, collection.group)
    np.minimum.at(low, collection.query, collection.group)
    return int((high - low).max())


def simulate_campaign(
    collection: Collection,
    design: Design,
    model: CrowdModel = CrowdModel(),
    seed: int = 0,
    record: bool = False,
    position: np.ndarray | None = None,
) -> Campaign:
    """One whole campaign on ``collection`` with the simulated crowd (seeded); ``record`` keeps
    the answer log and the worker pool. ``position`` is the candidates' initial order (which
    sets the pivots; e.g. :func:`~crowdprefs.quality.crowd_fit.recorded_pivot_order` replays a
    recording's pivots), random by default; drawn either way, so the rest is the same."""
    rng = np.random.default_rng([seed, 0x91A7])
    crowd = _Crowd(model, seed, _widest_gap(collection), rng)
    similarity = -collection.group
    drawn = rng.random(len(collection.query))
    position = drawn if position is None else np.asarray(position, dtype=float)
    totals = {"pairs": 0, "answers": 0, "cost": 0.0, "hours": 0.0, "rounds": 0, "machine": 0}
    flagger = _Flagger(crowd, design, collection.query) if design.flag_each_round else None
    pipeline = _Pipeline(len(collection.query))
    rows: list[dict] = []
    logs: list[pd.DataFrame] = []
    fitted = None
    if design.aggregation.decider.whole_query:
        fitted = _Fitted(collection, len(crowd.pool.weight), design.aggregation)

    score, machine = None, None
    if design.prior is not None:
        score = simulated_scores(collection.query, collection.group, design.prior, seed)
        if design.machine.active:
            machine = _Machine(collection, design, score, seed)

    def ask(x: np.ndarray, y: np.ndarray, key: np.ndarray, pseudo, clock) -> _Batch:
        return _decide_batch(
            key,
            similarity[x] - similarity[y],
            crowd,
            design,
            clock,
            record,
            None if fitted is None else (fitted, x, y),
            None if flagger is None else (flagger, len(rows) + 1, x, y),
            pseudo,
        )

    def oracle(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        key = x * len(collection.query) + y
        first = None if machine is None else machine.calibration(key)
        if first is None:
            return batch(x, y, key)
        verdict = np.zeros(len(x), dtype=np.int64)
        verdict[first] = batch(x[first], y[first], key[first])
        rest = np.setdiff1d(np.arange(len(x)), first)
        verdict[rest] = batch(x[rest], y[rest], key[rest])
        return verdict

    def batch(x_all: np.ndarray, y_all: np.ndarray, key_all: np.ndarray) -> np.ndarray:
        """One batch: the pairs the machine decides, and the others' human verdicts."""
        a_is_x = crowd.uniform(11, key_all) < design.pivot_b_share  # as _decide_batch draws it
        sure = None if machine is None else machine.triage(x_all, y_all, a_is_x, key_all)
        asked = np.arange(len(x_all)) if sure is None else np.flatnonzero(~sure.skip)
        x, y, key = x_all[asked], y_all[asked], key_all[asked]
        pseudo = None if machine is None else machine.pseudo(x, y, a_is_x[asked])
        batch = ask(x, y, key, pseudo, (totals["rounds"], totals["hours"]))
        verdict = np.zeros(len(x_all), dtype=np.int64)
        verdict[asked] = batch.verdict
        if machine is not None:
            counts = np.where(a_is_x[asked, None], batch.shown, batch.shown[:, ::-1])
            if machine.policy.skip is not None and len(x):  # a replicate crowd's verdicts
                again = _decide_batch(
                    key + (TRUE_OVERTURN_DRAWS + 1) * len(collection.query) ** 2,
                    similarity[x] - similarity[y], crowd, design, (0, 0.0), False, pseudo=pseudo,
                )  # fmt: skip
                machine.flips += int((again.verdict != batch.verdict).sum())
            machine.learn(x, y, a_is_x[asked], batch.verdict, counts, sure, asked)
        if sure is not None and sure.skip.any():
            skipped = np.flatnonzero(sure.skip)
            verdict[skipped] = sure.verdict[skipped]
            machine.skipped += len(skipped)
            machine.wrong += _overturn_chance(
                key_all[skipped], similarity[x_all[skipped]] - similarity[y_all[skipped]],
                sure.verdict[skipped], crowd, design, len(collection.query) ** 2,
                machine.pseudo(x_all[skipped], y_all[skipped], a_is_x[skipped]),
            )  # fmt: skip
        totals["machine"] += len(x_all) - len(x)
        answers = batch.answers
        totals["pairs"] += len(x)
        totals["answers"] += int(answers.sum())
        totals["cost"] += float(
            np.sum(design.fees.per_assignment(design.reward, answers) * answers)
        )
        totals["hours"] += batch.hours
        totals["rounds"] += batch.rounds
        per_round = np.zeros((batch.per_round.shape[0], len(x_all)), dtype=np.int64)
        per_round[:, asked] = batch.per_round
        pipeline.add(x_all, y_all, per_round)
        agreement = inter_agreement(*batch.shown.T)
        agreement = agreement[np.isfinite(agreement)]
        rows.append(
            {
                "iteration": len(rows) + 1,
                "pairs": len(x),
                "answers": int(answers.sum()),
                "rounds": batch.rounds,
                "hours": batch.hours,
                "agreement": float(agreement.mean()) if len(agreement) else np.nan,
                **dict(zip(("A", "equal", "B"), batch.shown.sum(axis=0).tolist(), strict=True)),
            }
        )
        for entry in batch.log:
            row = entry.pop("row")
            logs.append(
                pd.DataFrame(
                    {
                        "iteration": len(rows),
                        "pair": totals["pairs"] - len(x) + row,
                        "query": collection.query[x[row]],
                        "x": x[row],
                        "y": y[row],
                        **entry,
                    }
                )
            )
        return verdict

    group, iterations, _ = sort_rounds(collection.query, position, oracle, score)
    pipelined_rounds, pipelined_hours = pipeline.hours(crowd)
    summary = {
        "iterations": int(iterations.max()) if len(iterations) else 0,
        "rounds": totals["rounds"],
        "pairs": totals["pairs"],
        "answers": totals["answers"],
        "cost": round(totals["cost"], 2),
        "wall_hours": totals["hours"],
        "rounds_pipelined": pipelined_rounds,
        "wall_hours_pipelined": pipelined_hours,
        "adr": float(_campaign_adr(collection, group, np.random.default_rng([seed, 0xADE])).mean()),
        **_relations(collection, group),
        "machine_pairs": totals["machine"],
        **dict.fromkeys(MACHINE_COLUMNS, np.nan),
    }
    if machine is not None:
        summary |= machine.summary()
        summary["iterations"] += machine.calibrations
    if score is not None:
        summary["prior_correlation"] = realised_correlation(
            collection.query, collection.group, score
        )
    per_iteration = pd.DataFrame(rows, columns=ITERATION_COLUMNS)
    answers = None
    if record:
        answers = pd.concat(logs, ignore_index=True) if logs else pd.DataFrame()
        answers = answers.reindex(columns=ANSWER_COLUMNS)
    return Campaign(
        summary,
        group,
        iterations,
        per_iteration,
        answers,
        crowd.pool if record else None,
        np.flatnonzero(crowd.blocked),
    )


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
    """Per list, ADR of the produced lists against the true lists (the preference-judgments paper
    §5.4).

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


MAX_CAMPAIGNS = 10_000
"""The most campaigns simulated per design (each is a whole campaign: 10,000 take hours)."""


def simulate(
    truth: pd.DataFrame,
    design: Design,
    model: CrowdModel | Sequence[CrowdModel] = CrowdModel(),
    campaigns: int = 100,
    seed: int = 0,
    on_campaign: Callable[[int], None] | None = None,
    runner: Runner = SERIAL,
) -> pd.DataFrame:
    """Simulate ``campaigns`` whole campaigns; one row each with :data:`SUMMARY_COLUMNS`.

    Campaign ``i`` uses seed ``seed · 1000003 + i``: its initial orders, workers and answers, so
    two designs simulated with the same seed are compared on the same campaigns (paired), and
    the result is the same whichever ``runner`` runs them. With several models (e.g. bootstrap
    replicates of a fit) campaign ``i`` uses model ``i`` modulo their number. ``on_campaign(n)``
    follows the campaigns done.
    """
    frame = simulate_designs(truth, {"": design}, model, campaigns, seed, on_campaign, runner)
    return frame[SUMMARY_COLUMNS]


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Per column: mean, 95% interval of the mean (normal), and the 5%, 50%, 95% quantiles.

    Given the difference of two designs' per-campaign frames (same seeds), the interval is the
    paired one."""
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


def simulate_designs(
    truth: pd.DataFrame,
    designs: dict[str, Design],
    model: CrowdModel | Sequence[CrowdModel] = CrowdModel(),
    campaigns: int = 100,
    seed: int = 0,
    on_campaign: Callable[[int], None] | None = None,
    runner: Runner = SERIAL,
) -> pd.DataFrame:
    """:func:`simulate` for several designs on the same campaign seeds (paired): one row per
    design and campaign, ``design, campaign`` then :data:`SUMMARY_COLUMNS` and
    :data:`MACHINE_COLUMNS`. Every (design, campaign) is one task of ``runner``."""
    if not 1 <= campaigns <= MAX_CAMPAIGNS:
        raise InputError(
            f"campaigns must be a whole number in [1, {MAX_CAMPAIGNS}], got {campaigns}"
        )
    models = [model] if isinstance(model, CrowdModel) else list(model)
    shared = (Collection.from_truth(truth), list(designs.values()), models, seed)
    tasks = [(d, i) for d in range(len(designs)) for i in range(campaigns)]
    rows = runner.map(_campaign_summary, shared, tasks, on_campaign)
    frame = pd.DataFrame(rows, columns=SUMMARY_COLUMNS + MACHINE_COLUMNS)
    frame.insert(0, "campaign", np.tile(np.arange(campaigns), len(designs)))
    frame.insert(0, "design", np.repeat(list(designs), campaigns))
    return frame


def _campaign_summary(shared: tuple, task: tuple[int, int]) -> dict[str, float]:
    """One task of :func:`simulate_designs`: the summary of campaign ``i`` of design ``d``."""
    collection, designs, models, seed = shared
    d, i = task
    model = models[i % len(models)]
    return simulate_campaign(collection, designs[d], model, seed=seed * 1_000_003 + i).summary


def compare_designs(frame: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Designs side by side (from :func:`simulate_designs`): per design and measure the mean
    with its 95% interval and, against ``baseline``, the paired difference with its 95%
    interval (campaign by campaign on the same seeds). Indexed by ``(design, measure)``."""
    base = frame[frame["design"] == baseline].set_index("campaign")[SUMMARY_COLUMNS]
    parts = []
    for name, rows in frame.groupby("design", sort=False):
        values = rows.set_index("campaign")[SUMMARY_COLUMNS]
        summary = summarize(values)[["mean", "ci_low", "ci_high"]]
        delta = summarize(values - base.reindex(values.index))[["mean", "ci_low", "ci_high"]]
        summary[["delta", "delta_low", "delta_high"]] = delta.to_numpy()
        parts.append(summary.assign(design=name))
    table = pd.concat(parts).rename_axis("measure").reset_index()
    return table.set_index(["design", "measure"])
