"""The simulated side of one planned campaign: its crowd of workers as arrays, the flagging of
careless workers each round, a whole-query fit's answers so far, the machine prior and the
pipelined round count (see :mod:`crowdprefs.quality.planning`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import special

from crowdprefs.campaign.aggregate import AggregationRule, pair_verdicts
from crowdprefs.machine.link import Link, normal_scores
from crowdprefs.machine.policy import (
    Triage,
    calibration_pairs,
    pseudo_answers,
    triage,
    worth_calibrating,
)
from crowdprefs.quality.crowd_model import CrowdModel, WorkerPool, distinct_workers, round_hours
from crowdprefs.quality.plan_designs import Collection, Design
from crowdprefs.quality.review import round_flags
from crowdprefs.results_file import FRAME_COLUMNS
from crowdprefs.rng import counter_uniform


class PlanCrowd:
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

    def __init__(self, crowd: PlanCrowd, design: Design, query: np.ndarray) -> None:
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


class _Machine:
    """The machine prior of one simulated campaign beyond the pivots: the calibrated links
    (fitted on the human answers and verdicts so far), the pairs it decides and the audit."""

    def __init__(self, collection: Collection, design: Design, score: np.ndarray, seed: int):
        self.z = normal_scores(collection.query, score)
        self.policy, self.bias, self.seed = design.machine, design.prior.position_bias, seed
        self.parts: list[tuple[np.ndarray, ...]] = []  # d, s, verdict, answer counts per pair
        self.audited = self.overturned = self.skipped = self.wrong = self.flips = 0
        self.calibrations = 0
        self.evidence = (0, 0, 0)  # pooled over the campaign's selections (conformal.select)
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
        sure = triage(known[:3], calibration, d, side, key, rule, self.seed, self.evidence)
        self.evidence = tuple(a + b for a, b in zip(self.evidence, sure.evidence, strict=True))
        return sure

    def known(self) -> tuple[np.ndarray, ...]:
        """Differences, sides, verdicts and answer counts of the pairs humans decided."""
        if not self.parts:
            return np.zeros(0), np.zeros(0), np.zeros(0, np.int64), np.zeros((0, 3), np.int64)
        return tuple(np.concatenate(column) for column in zip(*self.parts, strict=True))

    def calibration(self, key: np.ndarray) -> np.ndarray | None:
        """The calibration pairs of a round of the sort, asked first in a batch of their own
        (:func:`~crowdprefs.machine.policy.calibration_pairs`); ``None`` without skipping or
        for a round asked whole (:meth:`~crowdprefs.machine.overturn.SkipRule.calibrates`,
        :func:`~crowdprefs.machine.policy.worth_calibrating`)."""
        rule = self.policy.skip
        if rule is None or not rule.calibrates(len(key)):
            return None
        if not worth_calibrating(*self.known()[:3], rule.level):
            return None
        self.calibrations += 1
        self.pending = True
        return calibration_pairs(key, rule.min_verdicts, self.seed)

    def pseudo(self, x, y, a_is_x) -> np.ndarray | None:
        """Pseudo-answers (more, equal, less) of the pairs for the stopping rule (``None``
        without a weight, or while the answers do not show the model helps)."""
        if self.policy.weight <= 0 or self.answer_link is None:
            return None
        return pseudo_answers(self.answer_link, self.policy.weight, *self.shown(x, y, a_is_x))

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

    def hours(self, crowd: PlanCrowd) -> tuple[int, float]:
        """Rounds and wall hours (the crowd model's round times)."""
        load = self.load[self.load > 0]
        return len(load), float(np.sum(crowd.round_hours(np.arange(len(load)), load)))


def widest_gap(collection: Collection) -> int:
    """The largest difference of true groups within a query."""
    if len(collection.group) == 0:
        return 0
    n = len(collection.queries)
    high = np.zeros(n, dtype=np.int64)
    low = np.full(n, np.iinfo(np.int64).max)
    np.maximum.at(high, collection.query, collection.group)
    np.minimum.at(low, collection.query, collection.group)
    return int((high - low).max())
