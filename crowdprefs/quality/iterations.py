"""The preference-judgments paper Table 2 (§5), per iteration and in total.

* :func:`iteration_table`: Table 2 per iteration and in total, generalised to any number of
  answers per pair, with chance-corrected agreement
  (:func:`~crowdprefs.quality.agreement.krippendorff_alpha`,
  :func:`~crowdprefs.quality.agreement.fleiss_kappa`) beside the paper's inter-agreement score
  (§5.3, :func:`crowdprefs.campaign.aggregate.inter_agreement`), and what the answers cost
  (:func:`answer_costs`);
* :func:`table_2_cells`: one of its rows as the paper prints it (:func:`money`,
  :func:`duration`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from crowdprefs.campaign.aggregate import AggregationRule, pair_verdicts, usable
from crowdprefs.campaign.budget import FeeModel
from crowdprefs.quality.agreement import choice_counts, fleiss_kappa, krippendorff_alpha
from crowdprefs.quality.frames import validate


def answer_costs(
    answers: pd.DataFrame, fees: FeeModel = FeeModel(), reward: float | None = None
) -> np.ndarray:
    """What each answer cost: its reward (``reward`` where the frame does not know it) plus
    the fee (:class:`crowdprefs.campaign.budget.FeeModel`); 0 for a rejected answer (not paid),
    NaN where the reward is unknown."""
    paid = pd.to_numeric(answers["reward"], errors="coerce").astype(float)
    if reward is not None:
        paid = paid.fillna(reward)
    cost = fees.per_assignment(paid.to_numpy(), answers["max_assignments"].to_numpy(dtype=float))
    return np.where(answers["status"].to_numpy() == "rejected", 0.0, cost)


def round_dollars(values: np.ndarray) -> float:
    """A sum of costs, exact to a thousandth of a cent (NaN when any is unknown)."""
    return round(float(np.sum(values)), 5)


def iteration_table(
    answers: pd.DataFrame,
    pairs: pd.DataFrame | None = None,
    fees: FeeModel = FeeModel(),
    rule: AggregationRule = AggregationRule(),
    reward: float | None = None,
) -> pd.DataFrame:
    """The preference-judgments paper Table 2 per iteration, plus a ``total`` row
    (:func:`summarise_iterations`).

    Per iteration: ``pairs`` (sorting pairs with usable answers), ``answers``, ``workers``
    (unique), ``previous_workers`` (of those, how many worked in an earlier iteration) and
    ``previous_share``, ``median_seconds`` (median work time of an answer),
    ``crowd_seconds`` (the crowd's time: first accept → last submit of the iteration's
    answers), ``completion_seconds`` (first HIT created → last answer submitted: waiting for
    workers included), ``agreement`` (mean §5.3 inter-agreement over the pairs), ``alpha``
    (Krippendorff, ordinal on A < equal < B as shown), ``kappa`` (Fleiss) and ``cost`` (what
    the answers not rejected cost, :func:`answer_costs`; NaN when a reward is unknown). Times
    are NaN when the file lacks them.
    """
    validate(answers)
    if pairs is None:
        pairs = pair_verdicts(answers, rule)
    good = usable(answers)
    sort = good[good["kind"] == "sort"]
    sort_pairs = pairs[pairs["kind"] == "sort"]
    first_seen = good.groupby("worker_id")["iteration"].min()
    rows = []
    for iteration, batch in answers.groupby("iteration", sort=True):
        used = good[good["iteration"] == iteration]
        in_sort = sort[sort["iteration"] == iteration]
        workers = used["worker_id"].unique()
        previous = int((first_seen.reindex(workers) < iteration).sum())
        cost = answer_costs(batch, fees, reward)
        agreement = sort_pairs.loc[sort_pairs["iteration"] == iteration, "agreement"]
        counts = choice_counts(in_sort)
        rows.append(
            {
                "iteration": int(iteration),
                "pairs": int(in_sort["pair_id"].nunique()),
                "answers": len(in_sort),
                "workers": len(workers),
                "previous_workers": previous if iteration != answers["iteration"].min() else None,
                "previous_share": previous / len(workers)
                if len(workers) and iteration != answers["iteration"].min()
                else float("nan"),
                "median_seconds": float(used["seconds"].median()),
                "crowd_seconds": _seconds(batch["accepted_at"].min(), batch["submitted_at"].max()),
                "completion_seconds": _seconds(
                    batch["created_at"].min(), batch["submitted_at"].max()
                ),
                "agreement": float(agreement.mean()) if agreement.notna().any() else float("nan"),
                "alpha": krippendorff_alpha(counts),
                "kappa": fleiss_kappa(counts),
                "cost": round_dollars(cost),
            }
        )
    table = pd.DataFrame(rows)
    total = summarise_iterations(table, workers=good["worker_id"].nunique())
    all_counts = choice_counts(sort)
    total.update(alpha=krippendorff_alpha(all_counts), kappa=fleiss_kappa(all_counts))
    table = pd.concat([table.astype(object), pd.DataFrame([total])], ignore_index=True)
    return table


def _seconds(start, end) -> float:
    """Seconds from ``start`` to ``end`` (NaN when either is unknown)."""
    if pd.isna(start) or pd.isna(end):
        return float("nan")
    return (end - start).total_seconds()


def summarise_iterations(table: pd.DataFrame, workers: int) -> dict:
    """The ``total`` row of Table 2 as the preference-judgments paper computes it from the
    per-iteration rows.

    Sums: ``pairs``, ``answers``, ``crowd_seconds``, ``completion_seconds``, ``cost`` (NaN
    when any iteration's is unknown); ``workers`` is the number of
    unique workers over all iterations (given); averages *of the per-iteration values*:
    ``previous_share`` (over iterations after the first), ``median_seconds`` (the mean of the
    iterations' medians: 21.75 s in Table 2) and ``agreement`` (0.664 in Table 2).
    ``previous_workers`` has no total.
    """
    return {
        "iteration": "total",
        "pairs": int(table["pairs"].sum()),
        "answers": int(table["answers"].sum()) if "answers" in table else None,
        "workers": int(workers),
        "previous_workers": None,
        "previous_share": float(pd.to_numeric(table["previous_share"]).mean()),
        "median_seconds": float(pd.to_numeric(table["median_seconds"]).mean()),
        "crowd_seconds": _total(table, "crowd_seconds"),
        "completion_seconds": _total(table, "completion_seconds"),
        "agreement": float(pd.to_numeric(table["agreement"]).mean()),
        "cost": round(_total(table, "cost"), 5),
    }


def _total(table: pd.DataFrame, column: str) -> float:
    """Sum of a column, NaN when any value is unknown (a partial sum would mislead)."""
    if column not in table:
        return float("nan")
    values = pd.to_numeric(table[column]).astype(float)
    return float(values.sum()) if values.notna().all() else float("nan")


def _three(value) -> str:
    return "–" if value is None or pd.isna(value) else f"{value:.3f}"


def money(value) -> str:
    """US$ as the audit prints it: cents, or tenths of a cent when a fee had half cents
    (2010's $0.005 minimum), and ``unknown`` when a reward is unknown (never $0.00)."""
    if value is None or pd.isna(value):
        return "unknown"
    return f"{value:.2f}" if round(value, 2) == round(value, 5) else f"{value:.3f}"


def duration(seconds) -> str:
    """``2h 05m`` (``unknown`` without the times)."""
    if seconds is None or pd.isna(seconds):
        return "unknown"
    minutes = round(seconds / 60)
    return f"{minutes // 60}h {minutes % 60:02d}m"


ITERATION_CELLS = (
    "iteration",
    "pairs",
    "answers",
    "workers",
    "previous workers",
    "median s / answer",
    "crowd time (first accept to last submit)",
    "time since HITs created (waiting included)",
    "agreement",
    "α",
    "κ",
    "cost $",
)
"""The names of the cells of :func:`table_2_cells`, in their order."""


def table_2_cells(row: dict) -> list[str]:
    """One row of the iteration table as the preference-judgments paper's Table 2 prints it
    (previous workers with their share, h m times), plus the crowd's time and the chance-corrected
    agreements."""
    share, count = row["previous_share"], row["previous_workers"]
    if pd.isna(share):
        previous = "–"
    elif count is None or pd.isna(count):
        previous = f"{share:.0%}"
    else:
        previous = f"{int(count)} ({share:.0%})"
    return [
        str(row["iteration"]),
        str(row["pairs"]),
        str(row["answers"]),
        str(row["workers"]),
        previous,
        "–" if pd.isna(row["median_seconds"]) else f"{row['median_seconds']:.2f}",
        duration(row.get("crowd_seconds")),
        duration(row["completion_seconds"]),
        _three(row["agreement"]),
        _three(row["alpha"]),
        _three(row["kappa"]),
        money(row["cost"]),
    ]
