"""Plan a campaign that knows its systems: simulate it beside the full sort on the same answers.

A *system-driven* campaign (:mod:`crowdprefs.campaign.systems`) asks, batch after batch, only the
segments whose order can still change how two systems compare under the measure, most
informative first, and stops when every pair of systems is decided at the confidence (or the
answers budget is spent). The full sort asks every open segment in every batch until every list
is finished. Both run here on the same simulated crowd (:func:`crowdprefs.quality.planning.
simulate_campaign`'s: counter-based answers keyed by the pair, so a pair both ask gets the same
answers and the same verdict) and the same initial orders, except that the system-driven
campaign's first pivots are the systems' consensus k-th places (as ``init --runs`` fixes them).
Its lists are a coarsening of the *finished* lists: the full sort from the same first pivots,
what it would have finished as.

Per campaign: the answers, cost and batches of each; the Kendall τ of the systems' ranking by
their mean drawn score against their ranking on the finished lists; the pairs of systems whose
finished difference is significant (a two-sided Wilcoxon signed-rank test over queries at
``alpha``) that the system-driven ranking orders otherwise; and, of the pairs declared decided,
how many hold on the finished lists (a wrong "decided" is counted).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from crowdprefs.campaign import systems as S
from crowdprefs.quality.crowd_model import CrowdModel
from crowdprefs.quality.plan_batch import decide_batch
from crowdprefs.quality.plan_crowd import PlanCrowd, widest_gap
from crowdprefs.quality.planning import Collection, Design

SUMMARY_COLUMNS = [
    "answers",
    "full_answers",
    "answer_share",
    "cost",
    "full_cost",
    "batches",
    "full_batches",
    "kendall_tau",
    "significant_pairs",
    "significant_swapped",
    "decided",
    "decided_wrong",
    "undecided",
    "stopped",
]


@dataclass(frozen=True)
class Run:
    """One campaign's sort: its final state, answers, cost, batches and known verdicts."""

    partial: S.Partial
    answers: int
    cost: float
    batches: int
    verdicts: np.ndarray
    stopped: str


@dataclass(frozen=True)
class Outcome:
    """The system-driven campaign (``driven``, with its last drawn scores and pairs of systems),
    the full sort (``full``), the lists it would have finished as (``finished``, with their
    exact scores), and the summary row."""

    driven: Run
    full: Run
    finished: Run  # the full sort from the driven campaign's first pivots
    pairs: S.SystemPairs
    drawn: np.ndarray  # draws × systems × queries
    exact: np.ndarray  # systems × queries on the finished lists
    summary: dict[str, float]


def _ask(x, y, collection, crowd, design, clock) -> tuple[np.ndarray, np.ndarray]:
    """Verdicts and answers of the pairs (x, pivot y) from the simulated crowd."""
    key = x * len(collection.query) + y
    gap = collection.group[y] - collection.group[x]  # s_x − s_y, similarity = −group
    batch = decide_batch(key, gap, crowd, design, clock, False)
    return batch.verdict, batch.answers


def sort_campaign(
    collection: Collection,
    design: Design,
    model: CrowdModel,
    seed: int,
    runs: S.Retrieved | None = None,
    measure: S.RankMeasure = S.RankMeasure("ADR", 5),
    *,
    confidence: float = 0.95,
    samples: int = 100,
    max_pairs: int | None = None,
    budget: int | None = None,
    informed: bool = True,
    pivots: S.Retrieved | None = None,
) -> tuple[Run, S.SystemPairs | None, np.ndarray | None]:
    """One campaign on ``collection``: the full sort without ``runs``, else the system-driven
    one (module doc), stopping when every pair of systems is decided at ``confidence``, nothing
    left can change an undecided pair, or the next batch would pass ``budget`` answers. The
    initial order and the crowd are :func:`~crowdprefs.quality.planning.simulate_campaign`'s
    for ``seed``. Unknown verdicts are drawn from the systems' consensus
    (:func:`~crowdprefs.campaign.systems.consensus`) calibrated on the verdicts so far when
    ``informed``, else from the share of equal verdicts alone. With ``pivots`` (systems' runs)
    each query's first pivot is their consensus k-th place
    (:func:`~crowdprefs.campaign.systems.first_pivots`), as ``init --runs`` fixes it."""
    rng = np.random.default_rng([seed, 0x91A7])
    crowd = PlanCrowd(model, seed, widest_gap(collection), rng)
    position = rng.random(len(collection.query))
    if pivots is not None:
        agreed = S.consensus(pivots, len(collection.query))
        position[S.first_pivots(collection.query, agreed, measure.k, position)] = 2.0
    partial = S.Partial.start(collection.query, position)
    draws = np.random.default_rng([seed, 0x5157])
    depth = measure.k if measure.name == "ADR" else None
    answers, cost, batches, rounds, hours = 0, 0.0, 0, 0, 0.0
    known: list[np.ndarray] = []
    asked: list[np.ndarray] = []
    score = None if runs is None else S.consensus(runs, len(collection.query))
    pairs, drawn, stopped = None, None, "finished"
    while True:
        chosen = None
        if runs is not None:
            verdicts = np.concatenate(known) if known else np.zeros(0, dtype=np.int64)
            pairs_d = np.concatenate(asked) if asked else np.zeros(0)
            fitted = (
                S.VerdictModel.fit(pairs_d, verdicts)
                if informed
                else S.VerdictModel.fit(np.zeros(len(verdicts)), verdicts)
            )
            groups = S.complete(
                partial, samples, draws, fitted, depth, score=score if informed else None
            )
            drawn = S.scores(groups, collection.query, runs, measure)
            pairs = S.system_pairs(drawn, confidence)
            if pairs.decided.all():
                stopped = "decided"
                break
            chosen = S.choose(
                partial, S.priorities(partial, runs, measure, drawn, pairs), max_pairs
            )
            if not chosen.any():
                stopped = "nothing matters"
                break
        x, y = partial.needed(chosen)
        if not len(x):
            break
        if budget is not None and answers + len(x) * design.most_answers > budget:
            stopped = "budget"
            break
        verdict, used = _ask(x, y, collection, crowd, design, (rounds, hours))
        known.append(verdict)
        if runs is not None:
            asked.append(score[x] - score[y])
        answers += int(used.sum())
        cost += float(np.sum(design.fees.per_assignment(design.reward, used) * used))
        batches += 1
        partial = partial.split(x, y, verdict)
    run = Run(
        partial,
        answers,
        round(cost, 2),
        batches,
        np.concatenate(known) if known else np.zeros(0, np.int64),
        stopped,
    )
    return run, pairs, drawn


def compare_campaigns(
    collection: Collection,
    design: Design,
    model: CrowdModel,
    runs: S.Retrieved,
    measure: S.RankMeasure,
    seed: int = 0,
    *,
    confidence: float = 0.95,
    samples: int = 100,
    max_pairs: int | None = None,
    budget: int | None = None,
    budget_share: float | None = None,
    alpha: float = 0.05,
    informed: bool = True,
    consensus_pivots: bool = True,
) -> Outcome:
    """The system-driven campaign beside the full sort on the same campaign (module doc);
    ``budget_share`` caps its answers at that share of the full sort's. With
    ``consensus_pivots`` (as ``init --runs``) its first pivots are the systems' consensus k-th
    places; its ranking is then checked on the lists the same campaign would finish as (the
    full sort from those first pivots), its answers against the full sort's."""
    full, _, _ = sort_campaign(collection, design, model, seed)
    pivots = runs if consensus_pivots else None
    finished = full
    if pivots is not None:
        finished, _, _ = sort_campaign(
            collection, design, model, seed, measure=measure, pivots=runs
        )
    if budget_share is not None:
        capped = int(budget_share * full.answers)
        budget = capped if budget is None else min(budget, capped)
    driven, pairs, drawn = sort_campaign(
        collection,
        design,
        model,
        seed,
        runs,
        measure,
        confidence=confidence,
        samples=samples,
        max_pairs=max_pairs,
        budget=budget,
        informed=informed,
        pivots=pivots,
    )
    exact = S.scores(finished.partial.groups()[None], collection.query, runs, measure)[0]
    summary = summarize(pairs, drawn, exact, alpha) | {
        "answers": driven.answers,
        "full_answers": full.answers,
        "answer_share": driven.answers / max(full.answers, 1),
        "cost": driven.cost,
        "full_cost": full.cost,
        "batches": driven.batches,
        "full_batches": full.batches,
        "stopped": driven.stopped,
    }
    return Outcome(driven, full, finished, pairs, drawn, exact, summary)


def summarize(
    pairs: S.SystemPairs,
    drawn: np.ndarray,
    exact: np.ndarray,
    alpha: float = 0.05,
) -> dict[str, float]:
    """The system-driven ranking against the full sort's (``exact`` scores, its own finished
    lists: the same pivots and answers): Kendall τ(b) of the mean scores, the significant
    full-sort pairs ordered otherwise, and the decided pairs that do not hold."""
    mean = drawn.mean(axis=(0, 2))
    final = exact.mean(axis=1)
    tau = stats.kendalltau(mean, final).statistic
    truth = np.sign(np.round(final[pairs.first] - final[pairs.second], 12))
    estimate = np.sign(np.round(mean[pairs.first] - mean[pairs.second], 12))
    significant = _significant(exact[pairs.first] - exact[pairs.second], alpha)
    wrong = pairs.decided & (pairs.order != truth)
    return {
        "kendall_tau": float(tau) if np.isfinite(tau) else 1.0,
        "significant_pairs": int(significant.sum()),
        "significant_swapped": int((significant & (estimate != truth)).sum()),
        "decided": int(pairs.decided.sum()),
        "decided_wrong": int(wrong.sum()),
        "undecided": int((~pairs.decided).sum()),
    }


def _significant(difference: np.ndarray, alpha: float) -> np.ndarray:
    """Per row of per-query differences, whether a two-sided Wilcoxon signed-rank test (normal
    approximation, zeros
    split) rejects no difference at ``alpha``; a row of zeros never does."""
    zero = np.all(np.abs(difference) < 1e-12, axis=1)
    significant = np.zeros(len(difference), dtype=bool)
    if (~zero).any():
        p = stats.wilcoxon(difference[~zero], axis=1, zero_method="zsplit", method="approx").pvalue
        significant[~zero] = p < alpha
    return significant
