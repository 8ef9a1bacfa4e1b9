"""The ``bradley-terry`` rule: one fit of the tie-aware Bradley–Terry model with per-worker
reliability (:mod:`crowdprefs.campaign.bradley_terry`) on every usable sorting answer so far,
each read on the sides it was shown; a pair's verdict is the sign of s_x − s_y when the
two-sided test of equal scores rejects at level α, else "equal". Attention checks, outside the
fit, get the Mann-Whitney verdict of their own answers at the same α."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crowdprefs.campaign.aggregate import AggregationRule, count_answers
from crowdprefs.campaign.rules.base import QueryRule, Verdicts
from crowdprefs.campaign.rules.mann_whitney import RULE as MANN_WHITNEY

if TYPE_CHECKING:
    from crowdprefs.campaign.bradley_terry import BradleyTerryFit


@dataclass(frozen=True)
class _Coded:
    """Sorting answers coded for the Bradley–Terry fit: each answer's shown ``first``,
    ``second``, ``outcome`` and ``worker``, each item's ``block`` (query), the sorting pairs'
    ``x`` and ``y`` items (indexed like ``pairs``), and the counts of items and workers."""

    first: np.ndarray
    second: np.ndarray
    outcome: np.ndarray
    worker: np.ndarray
    block: np.ndarray
    pairs: pd.Index
    x: np.ndarray
    y: np.ndarray
    items: int
    workers: int


def _coded_answers(answers: pd.DataFrame, sorting: pd.DataFrame) -> _Coded | None:
    """The usable ``answers`` of the ``sorting`` pairs, coded (each answer read on the sides it
    was shown); ``None`` when there are none."""
    row = sorting.index.get_indexer(answers["pair_id"])
    fitted = row >= 0
    if not fitted.any():
        return None
    query = sorting["query"].to_numpy()
    items = pd.MultiIndex.from_arrays(
        [np.concatenate([query, query]), np.concatenate([sorting["x"], sorting["y"]])]
    )
    codes, unique = pd.factorize(items)
    x, y = codes[: len(sorting)], codes[len(sorting) :]
    row = row[fitted]
    a_is_x = answers["a_is_x"].to_numpy()[fitted].astype(bool)
    score = answers["score"].to_numpy()[fitted].astype(np.int64)
    workers, names = pd.factorize(answers["worker_id"].to_numpy()[fitted])
    return _Coded(
        first=np.where(a_is_x, x[row], y[row]),
        second=np.where(a_is_x, y[row], x[row]),
        outcome=np.where(a_is_x, score, -score),
        worker=workers,
        block=pd.factorize(unique.get_level_values(0))[0],
        pairs=sorting.index,
        x=x,
        y=y,
        items=len(unique),
        workers=len(names),
    )


def _fitted(coded: _Coded, settings: AggregationRule) -> BradleyTerryFit:
    """One fit of the tie-aware Bradley–Terry model on the coded answers; the line saying the
    fit dropped worker reliabilities, once per process."""
    from crowdprefs.campaign import bradley_terry  # here: scipy loads only for this rule

    fit = bradley_terry.fit_bradley_terry(
        coded.first, coded.second, coded.outcome, coded.worker, coded.block,
        n_items=coded.items, n_workers=coded.workers, ties=settings.ties, alpha=settings.alpha,
    )  # fmt: skip
    line = bradley_terry.fallback_line(fit)  # once per process, however many refits
    if line is not None:
        from crowdprefs import progress

        progress.note(f"bradley-terry: {line}")
    return fit


class BradleyTerry(QueryRule):
    """The module docstring's rule, with the tie model ``[aggregation] ties``."""

    name = "bradley-terry"
    keys = ("alpha", "ties")

    def title(self, settings: AggregationRule) -> str:
        """``Bradley-Terry <α>``."""
        return f"Bradley-Terry {settings.alpha:g}"

    def decide(
        self, answers: pd.DataFrame, pairs: pd.DataFrame, decide, settings: AggregationRule
    ) -> Verdicts:
        """Sorting pairs by one fit on every sorting answer, attention checks by the
        Mann-Whitney test of their own answers at the same α
        (:func:`crowdprefs.campaign.aggregate.fitted_verdicts`)."""
        decide = pd.Index(decide)
        verdict, p = np.zeros(len(decide), np.int8), np.full(len(decide), np.nan)
        is_sort = pairs["kind"] == "sort"
        sort = is_sort.reindex(decide).fillna(False).to_numpy(bool)
        coded = _coded_answers(answers, pairs[is_sort])
        if sort.any() and coded is not None:
            fit = _fitted(coded, settings)
            target = coded.pairs.get_indexer(decide[sort])
            verdict[sort], p[sort] = fit.verdicts(coded.x[target], coded.y[target], settings.alpha)
        checks = decide[~sort]
        if len(checks):
            own = answers[answers["pair_id"].isin(checks)]
            counts = count_answers(own.assign(score=own["score"].astype(int)))
            counts = counts.reindex(checks, fill_value=0).to_numpy()
            answered = counts.sum(axis=1) > 0
            decided = np.zeros(len(checks), np.int8), np.full(len(checks), np.nan)
            decided[0][answered], decided[1][answered] = MANN_WHITNEY.verdicts(
                *counts[answered].T, AggregationRule(alpha=settings.alpha)
            )
            verdict[~sort], p[~sort] = decided
        return verdict, p

    def fragility(
        self, answers: pd.DataFrame, pairs: pd.DataFrame, settings: AggregationRule
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`crowdprefs.campaign.bradley_terry.verdict_fragility` of the sorting pairs."""
        from crowdprefs.campaign import bradley_terry

        sorting = pairs[pairs["kind"] == "sort"]
        empty = np.full(len(sorting), -1, np.int64)
        coded = _coded_answers(answers, sorting)
        if coded is None:
            return empty, empty.copy(), np.zeros(len(sorting), bool)
        fit = _fitted(coded, settings)
        found = bradley_terry.verdict_fragility(
            fit, coded.first, coded.second, coded.outcome, coded.worker, coded.block,
            coded.x, coded.y, alpha=settings.alpha,
        )  # fmt: skip
        confirmed = found.removals_confirmed & found.flips_confirmed
        return found.removals, found.flips, confirmed

    def coded_verdicts(
        self, first, second, outcome, worker, block, x, y, *, n_items: int, n_workers: int,
        settings: AggregationRule,
    ) -> Verdicts:  # fmt: skip
        """:func:`crowdprefs.campaign.bradley_terry.fit_verdicts` with the rule's tie model
        and level."""
        from crowdprefs.campaign.bradley_terry import fit_verdicts

        return fit_verdicts(
            first, second, outcome, worker, block, x, y,
            n_items=n_items, n_workers=n_workers, ties=settings.ties, alpha=settings.alpha,
        )  # fmt: skip


RULE = BradleyTerry()
