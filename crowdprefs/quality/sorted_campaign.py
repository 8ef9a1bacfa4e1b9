"""A QuickSort campaign as the fragility and stability studies read it: its answers, its pairs
with their verdicts, each closed query's initial order and the rule, from a project or from a
recorded campaign's answers (replayed)."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.errors import InputError

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project


@dataclass(frozen=True)
class SortedCampaign:
    """``answers`` (an answers frame), ``pairs`` (indexed by ``pair_id``: ``query, x, y, kind,
    more, equal, less, verdict``), ``orders`` (each closed query's initial order: the sort's
    replay of it with the pairs' verdicts is the published list) and ``rule``."""

    answers: pd.DataFrame
    pairs: pd.DataFrame
    orders: dict[str, list[Hashable]]
    rule: AggregationRule
    scores: dict[str, dict[Hashable, float]] | None = None
    """The machine prior's scores per query (its pivots), when the campaign had one."""

    @classmethod
    def of_project(cls, project: Project, answers: pd.DataFrame | None = None) -> SortedCampaign:
        """A project's campaign: its answers (``answers``, else
        :func:`~crowdprefs.quality.frames.project_answers`), stored verdicts, seeded initial
        orders (closed queries only) and aggregation rule."""
        from crowdprefs.campaign.project_state import prior_scores, sort_states
        from crowdprefs.campaign.sorting import initial_orders
        from crowdprefs.quality.frames import project_answers, project_verdicts

        answers = project_answers(project) if answers is None else answers
        if answers.empty:
            raise InputError(f"{project.root} has no answers yet")
        closed = [query for query, state in sort_states(project).items() if state.closed]
        documents = project.store.candidate_orders()
        orders = initial_orders({query: documents[query] for query in closed}, project.seed)
        return cls(
            answers,
            project_verdicts(project, answers),
            orders,
            project.settings.aggregation,
            prior_scores(project),
        )

    @classmethod
    def of_recording(cls, answers: pd.DataFrame, rule: AggregationRule) -> SortedCampaign:
        """A recorded campaign (answers numbered in batches), replayed with ``rule``
        (:func:`crowdprefs.campaign.replay.replay_campaign`); its closed queries only."""
        from crowdprefs.campaign.replay import replay_campaign

        replayed = replay_campaign(answers, rule)
        return cls(answers, replayed.pairs, replayed.orders(), rule)
