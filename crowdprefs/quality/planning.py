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

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError
from crowdprefs.evaluation.measures import average_dynamic_recall, judge
from crowdprefs.parallel import SERIAL, Runner
from crowdprefs.quality.crowd_model import CrowdModel
from crowdprefs.quality.plan_batch import TRUE_OVERTURN_DRAWS
from crowdprefs.quality.plan_campaign import simulate_campaign, sort_rounds
from crowdprefs.quality.plan_designs import (
    ANSWER_COLUMNS,
    ITERATION_COLUMNS,
    MACHINE_COLUMNS,
    SUMMARY_COLUMNS,
    Campaign,
    Collection,
    Design,
)

__all__ = [
    "ANSWER_COLUMNS",
    "ITERATION_COLUMNS",
    "MACHINE_COLUMNS",
    "MAX_CAMPAIGNS",
    "SUMMARY_COLUMNS",
    "TRUE_OVERTURN_DRAWS",
    "Campaign",
    "Collection",
    "Design",
    "compare_designs",
    "list_adr",
    "simulate",
    "simulate_campaign",
    "simulate_designs",
    "sort_rounds",
    "summarize",
]


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
