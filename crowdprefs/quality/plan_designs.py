"""What a planned campaign buys and what it gives back: the :class:`Design`, the hidden truth as a
:class:`Collection`, one simulated :class:`Campaign` and the columns of the planning tables
(see :mod:`crowdprefs.quality.planning`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from crowdprefs.campaign.adaptive import FragilityRule, StoppingRule
from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.campaign.budget import FeeModel
from crowdprefs.errors import InputError
from crowdprefs.machine.policy import PriorPolicy
from crowdprefs.machine.simulated import SimulatedPrior
from crowdprefs.quality.crowd_model import WorkerPool
from crowdprefs.quality.review import ReviewRules

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
