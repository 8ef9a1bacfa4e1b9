"""One whole planned campaign: the vectorised modified QuickSort over every query (the
preference-judgments paper §3.2) with the simulated crowd, its totals and its lists' quality
(see :mod:`crowdprefs.quality.planning`)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from crowdprefs.campaign.aggregate import inter_agreement
from crowdprefs.evaluation.measures import Judged, average_dynamic_recall
from crowdprefs.machine.simulated import realised_correlation, simulated_scores
from crowdprefs.quality.crowd_model import CrowdModel
from crowdprefs.quality.plan_batch import (
    TRUE_OVERTURN_DRAWS,
    _Batch,
    _overturn_chance,
    decide_batch,
)
from crowdprefs.quality.plan_crowd import (
    PlanCrowd,
    _Fitted,
    _Flagger,
    _Machine,
    _Pipeline,
    widest_gap,
)
from crowdprefs.quality.plan_designs import (
    ANSWER_COLUMNS,
    ITERATION_COLUMNS,
    MACHINE_COLUMNS,
    Campaign,
    Collection,
    Design,
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


class _Run:
    """One campaign under way: its simulated crowd, flagger, fit and machine prior, and the
    totals, per-iteration rows and answer log of the batches asked so far."""

    def __init__(
        self, collection: Collection, design: Design, model: CrowdModel, seed: int, record: bool
    ) -> None:
        self.collection, self.design, self.seed, self.record = collection, design, seed, record
        self.rng = np.random.default_rng([seed, 0x91A7])
        self.crowd = PlanCrowd(model, seed, widest_gap(collection), self.rng)
        self.similarity = -collection.group
        self.drawn = self.rng.random(len(collection.query))
        self.totals = dict(pairs=0, answers=0, cost=0.0, hours=0.0, rounds=0, machine=0)
        self.flagger = (
            _Flagger(self.crowd, design, collection.query) if design.flag_each_round else None
        )
        self.pipeline = _Pipeline(len(collection.query))
        self.rows: list[dict] = []
        self.logs: list[pd.DataFrame] = []
        self.fitted = None
        if design.aggregation.decider.whole_query:
            self.fitted = _Fitted(collection, len(self.crowd.pool.weight), design.aggregation)
        self.score, self.machine = None, None
        if design.prior is not None:
            self.score = simulated_scores(collection.query, collection.group, design.prior, seed)
            if design.machine.active:
                self.machine = _Machine(collection, design, self.score, seed)

    def ask(self, x: np.ndarray, y: np.ndarray, key: np.ndarray, pseudo, clock) -> _Batch:
        """The human verdicts of pairs ``(x, y)`` (:func:`decide_batch`)."""
        return decide_batch(
            key,
            self.similarity[x] - self.similarity[y],
            self.crowd,
            self.design,
            clock,
            self.record,
            None if self.fitted is None else (self.fitted, x, y),
            None if self.flagger is None else (self.flagger, len(self.rows) + 1, x, y),
            pseudo,
        )

    def oracle(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """The sort's verdicts of pairs ``(x, y)``: the machine's calibration pairs first."""
        key = x * len(self.collection.query) + y
        first = None if self.machine is None else self.machine.calibration(key)
        if first is None:
            return self.batch(x, y, key)
        verdict = np.zeros(len(x), dtype=np.int64)
        verdict[first] = self.batch(x[first], y[first], key[first])
        rest = np.setdiff1d(np.arange(len(x)), first)
        verdict[rest] = self.batch(x[rest], y[rest], key[rest])
        return verdict

    def batch(self, x_all: np.ndarray, y_all: np.ndarray, key_all: np.ndarray) -> np.ndarray:
        """One batch: the pairs the machine decides, and the others' human verdicts."""
        machine, similarity = self.machine, self.similarity
        a_is_x = self.crowd.uniform(11, key_all) < self.design.pivot_b_share  # as asked
        sure = None if machine is None else machine.triage(x_all, y_all, a_is_x, key_all)
        asked = np.arange(len(x_all)) if sure is None else np.flatnonzero(~sure.skip)
        x, y, key = x_all[asked], y_all[asked], key_all[asked]
        pseudo = None if machine is None else machine.pseudo(x, y, a_is_x[asked])
        batch = self.ask(x, y, key, pseudo, (self.totals["rounds"], self.totals["hours"]))
        verdict = np.zeros(len(x_all), dtype=np.int64)
        verdict[asked] = batch.verdict
        if machine is not None:
            counts = np.where(a_is_x[asked, None], batch.shown, batch.shown[:, ::-1])
            if machine.policy.skip is not None and len(x):  # a replicate crowd's verdicts
                again = decide_batch(
                    key + (TRUE_OVERTURN_DRAWS + 1) * len(self.collection.query) ** 2,
                    similarity[x] - similarity[y], self.crowd, self.design, (0, 0.0), False,
                    pseudo=pseudo,
                )  # fmt: skip
                machine.flips += int((again.verdict != batch.verdict).sum())
            machine.learn(x, y, a_is_x[asked], batch.verdict, counts, sure, asked)
        if sure is not None and sure.skip.any():
            skipped = np.flatnonzero(sure.skip)
            verdict[skipped] = sure.verdict[skipped]
            machine.skipped += len(skipped)
            machine.wrong += _overturn_chance(
                key_all[skipped], similarity[x_all[skipped]] - similarity[y_all[skipped]],
                sure.verdict[skipped], self.crowd, self.design, len(self.collection.query) ** 2,
                machine.pseudo(x_all[skipped], y_all[skipped], a_is_x[skipped]),
            )  # fmt: skip
        self.totals["machine"] += len(x_all) - len(x)
        per_round = np.zeros((batch.per_round.shape[0], len(x_all)), dtype=np.int64)
        per_round[:, asked] = batch.per_round
        self.pipeline.add(x_all, y_all, per_round)
        self.tally(x, y, batch)
        return verdict

    def tally(self, x: np.ndarray, y: np.ndarray, batch: _Batch) -> None:
        """Add the human batch of pairs ``(x, y)`` to the totals, the per-iteration rows and,
        recording, the answer log."""
        totals, answers = self.totals, batch.answers
        totals["pairs"] += len(x)
        totals["answers"] += int(answers.sum())
        fees = self.design.fees.per_assignment(self.design.reward, answers)
        totals["cost"] += float(np.sum(fees * answers))
        totals["hours"] += batch.hours
        totals["rounds"] += batch.rounds
        agreement = inter_agreement(*batch.shown.T)
        agreement = agreement[np.isfinite(agreement)]
        self.rows.append(
            {
                "iteration": len(self.rows) + 1,
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
            self.logs.append(
                pd.DataFrame(
                    {
                        "iteration": len(self.rows),
                        "pair": totals["pairs"] - len(x) + row,
                        "query": self.collection.query[x[row]],
                        "x": x[row],
                        "y": y[row],
                        **entry,
                    }
                )
            )

    def summary(self, group: np.ndarray, iterations: np.ndarray) -> dict[str, float]:
        """The campaign's totals and the quality of its produced ``group`` s (a summary row)."""
        collection, totals = self.collection, self.totals
        pipelined_rounds, pipelined_hours = self.pipeline.hours(self.crowd)
        adr = _campaign_adr(collection, group, np.random.default_rng([self.seed, 0xADE]))
        summary = {
            "iterations": int(iterations.max()) if len(iterations) else 0,
            "rounds": totals["rounds"],
            "pairs": totals["pairs"],
            "answers": totals["answers"],
            "cost": round(totals["cost"], 2),
            "wall_hours": totals["hours"],
            "rounds_pipelined": pipelined_rounds,
            "wall_hours_pipelined": pipelined_hours,
            "adr": float(adr.mean()),
            **_relations(collection, group),
            "machine_pairs": totals["machine"],
            **dict.fromkeys(MACHINE_COLUMNS, np.nan),
        }
        if self.machine is not None:
            summary |= self.machine.summary()
            summary["iterations"] += self.machine.calibrations
        if self.score is not None:
            summary["prior_correlation"] = realised_correlation(
                collection.query, collection.group, self.score
            )
        return summary


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
    run = _Run(collection, design, model, seed, record)
    position = run.drawn if position is None else np.asarray(position, dtype=float)
    group, iterations, _ = sort_rounds(collection.query, position, run.oracle, run.score)
    answers = None
    if record:
        answers = pd.concat(run.logs, ignore_index=True) if run.logs else pd.DataFrame()
        answers = answers.reindex(columns=ANSWER_COLUMNS)
    return Campaign(
        run.summary(group, iterations),
        group,
        iterations,
        pd.DataFrame(run.rows, columns=ITERATION_COLUMNS),
        answers,
        run.crowd.pool if record else None,
        np.flatnonzero(run.crowd.blocked),
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
