"""Auditing a campaign's workers (the preference-judgments paper §4.2 and §5).

Everything here is a pure function of an *answers frame* (one row per answer, the columns of
:data:`crowdprefs.results_file.FRAME_COLUMNS`), built from a project by :func:`project_answers`
or read from an MTurk results CSV by :func:`crowdprefs.results_file.read_results`. Rejected
answers and empty answers are kept in the frame (and counted in the worker profiles) but left out
of every agreement and aggregation.

* :func:`iteration_table`: the preference-judgments paper Table 2 per iteration and in total,
  generalised to any number of answers per pair, with chance-corrected agreement
  (:func:`krippendorff_alpha`, :func:`fleiss_kappa`) beside the paper's inter-agreement score
  (§5.3, :func:`crowdprefs.campaign.aggregate.inter_agreement`).
* :func:`worker_profiles` and :func:`flag_workers`: who answered what, how fast, how well, and
  which workers look careless or automatic (the rules are in :class:`FlagRules`). These are the
  one set of worker-flag rules: the review of MTurk answers (:mod:`crowdprefs.quality.review`)
  flags with them too, against the verdicts of the project's aggregation rule.
* :func:`reference_agreement`: the preference-judgments paper Tables 3–6, the less/equal/more
  confusion of aggregated verdicts and of single answers against reference lists (e.g. an expert
  ground truth).
* :func:`contradictions`: non-transitive verdict triples per query, and
  :func:`transitivity`: how often complete triples violate transitivity, per query (verdicts)
  and per worker (their own answers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crowdprefs.campaign.aggregate import AggregationRule, pair_verdicts, tally, usable
from crowdprefs.campaign.budget import FeeModel
from crowdprefs.campaign.sorting import contradictions as triple_contradictions
from crowdprefs.campaign.transitivity import violation_rates
from crowdprefs.errors import InputError
from crowdprefs.results_file import FRAME_COLUMNS

if TYPE_CHECKING:
    from pathlib import Path

    from crowdprefs.campaign.project import Project
    from crowdprefs.files import OutputFolder

CHOICES = ("A", "equal", "B")
"""The options as shown, in their natural order (A more similar … B more similar)."""

OUTCOMES = {1: "less", 0: "equal", -1: "greater"}
"""The preference-judgments paper's labels of a preference in Tables 3–6, as ranks: x ranks ``less``
than (before) y when it is more similar (score +1), ``greater`` (after) when it is less similar."""


# --------------------------------------------------------------------------- answers frames


def project_answers(project: Project, crowd: str | None = None) -> pd.DataFrame:
    """A project's answers (rejected ones included; only ``crowd``'s when given) as an answers
    frame.

    Each answer's ``a_is_x`` and ``choice`` are the sides the judge was shown and the button
    they pressed: a web question with sides randomised per question logs its own order, and
    its stored choice (on the pair's sides) is turned back into the button, so position shares
    and a constant button read what the judge did; ``score`` stays from x's point of view.
    The listening time of a HIT is the sum of the three clips' durations when all are known.
    The reward is the one the HIT was published at (the project's current ``[crowd] reward``
    when unknown); a HIT not recorded in ``hits`` (answers imported from a CSV) takes its
    batch's publication time as creation time.
    """
    frame = project.store.audit_answers(crowd)
    shown = frame.pop("shown_a_is_x").astype(int)
    flipped = shown != frame["a_is_x"].astype(int)
    frame.loc[flipped, "choice"] = frame.loc[flipped, "choice"].replace({"A": "B", "B": "A"})
    frame["a_is_x"] = shown
    frame["hit_id"] = frame["hit_id"].fillna("pair-" + frame["pair_id"].astype(str))
    frame["reward"] = pd.to_numeric(frame["reward"]).fillna(project.settings.reward)
    frame["pivot_known"] = frame["kind"] == "sort"
    for column in ("created_at", "accepted_at", "submitted_at"):
        frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
    for column in ("background", "comment"):
        frame[column] = frame[column].fillna("")
    frame["iteration"] = frame["iteration"].astype("Int64")
    numbers = ["max_assignments", "expected", "score", "seconds", "listen_seconds"]
    frame[numbers] = frame[numbers].astype(float)
    frame.attrs["source"] = str(project.root)
    frame.attrs["empty_rows"] = []
    return frame[list(FRAME_COLUMNS)]


def project_verdicts(project: Project, answers: pd.DataFrame) -> pd.DataFrame:
    """:func:`pair_verdicts` with the project's rule, keeping the verdicts the driver stored
    (answers imported after a pair was aggregated do not change its recorded verdict)."""
    pairs = pair_verdicts(answers, project.settings.aggregation)
    stored = project.store.pairs().set_index("pair_id")["verdict"].reindex(pairs.index)
    pairs["verdict"] = stored.fillna(pairs["verdict"]).astype(int)
    return pairs


def validate(answers: pd.DataFrame) -> pd.DataFrame:
    """Check an answers frame before any metric: columns, choices, scores and iterations."""
    missing = [c for c in FRAME_COLUMNS if c not in answers.columns]
    if missing:
        raise InputError(f"the answers frame lacks column(s) {', '.join(missing)}")
    bad = ~answers["choice"].isin([*CHOICES, ""])
    if bad.any():
        raise InputError(f"unknown choice {answers.loc[bad, 'choice'].iloc[0]!r}")
    given = answers["choice"] != ""
    if not answers.loc[given, "score"].isin((-1, 0, 1)).all():
        raise InputError("every non-empty answer needs a score of -1, 0 or +1")
    if answers["iteration"].isna().any():
        raise InputError("answers without an iteration: run infer_iterations first")
    return answers


def infer_iterations(answers: pd.DataFrame, batch_gap: float = 600.0) -> pd.DataFrame:
    """Number the batches of a recorded campaign from its HITs' creation times.

    HITs are sorted by creation time and a new batch (iteration) starts wherever the gap to the
    previous HIT is longer than ``batch_gap`` seconds: MTurk creates a batch's HITs seconds apart
    while the preference-judgments paper's batches were hours apart (Table 2). The simulated crowd
    creates a batch's HITs at one instant, so ``batch_gap = 0`` separates its batches.
    """
    if answers["created_at"].isna().any():
        hit = answers.loc[answers["created_at"].isna(), "hit_id"].iloc[0]
        raise InputError(f"HIT {hit} has no creation (or accept) time to place it in a batch")
    created = answers.groupby("hit_id")["created_at"].min().sort_values(kind="stable")
    gaps = created.diff().dt.total_seconds().fillna(0.0).to_numpy()
    batch = pd.Series(np.cumsum(gaps > batch_gap) + 1, index=created.index)
    result = answers.copy()
    result["iteration"] = result["hit_id"].map(batch).astype("Int64")
    return result


# --------------------------------------------------------------------------- verdicts


def answer_agreement(score, verdict) -> np.ndarray:
    """The preference-judgments paper §5.3's points between two judgments, divided by 2: 1 when they
    agree, ½ when one is "equal" and the other picks a side, 0 when they pick opposite sides."""
    score, verdict = np.asarray(score, dtype=float), np.asarray(verdict, dtype=float)
    return 1.0 - np.abs(score - verdict) / 2.0


# --------------------------------------------------------------------------- chance-corrected


def choice_counts(answers: pd.DataFrame) -> np.ndarray:
    """Units × categories: per pair, how many usable answers chose A, equal and B (as shown)."""
    good = usable(answers)
    return tally(good["pair_id"], good["choice"], CHOICES).to_numpy(dtype=np.float64)


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' κ over units × categories counts (units with fewer than two ratings ignored).

    κ = (P̄ − Pₑ)/(1 − Pₑ), with Pᵢ = (Σⱼ nᵢⱼ² − nᵢ)/(nᵢ(nᵢ − 1)) the agreement within unit i,
    P̄ their mean, pⱼ = Σᵢ nᵢⱼ / Σᵢ nᵢ and Pₑ = Σⱼ pⱼ². With the same number of ratings per
    unit this is Fleiss (1971), as ``statsmodels.stats.inter_rater.fleiss_kappa``; otherwise each
    unit's Pᵢ uses its own nᵢ. NaN when Pₑ = 1 (one category only). Integer counts stay
    64-bit integers (exact sums), and with as many ratings n in every unit
    P̄ = (Σᵢⱼ nᵢⱼ² − Σᵢ nᵢ)/(units·n(n − 1)) is one sum of squares.
    """
    counts = np.asarray(counts)
    counts = counts.astype(np.int64 if counts.dtype.kind in "iu" else np.float64, copy=False)
    if not counts.size:
        return float("nan")
    if len(counts) <= 64:
        n = counts.sum(axis=1)
    else:  # column by column: faster than a sum along the short axis
        n = counts[:, 0].copy()
        for column in counts.T[1:]:
            n += column
    low, high = n.min(), n.max()
    if low < 2:
        keep = n >= 2
        if not keep.any():
            return float("nan")
        counts, n = counts[keep], n[keep]
        low, high = n.min(), n.max()
    totals = counts.sum(axis=0, dtype=np.float64)
    total = totals.sum()
    p_j = totals / total
    expected = float(p_j @ p_j)
    if abs(expected - 1.0) <= 1e-8 + 1e-5:  # np.isclose(expected, 1): one category only
        return float("nan")
    if low == high:
        low = float(low)
        squares = float(
            np.vdot(counts, counts)
            if counts.size < 8192
            else np.einsum("ij,ij->", counts, counts)  # no BLAS threads
        )
        observed = (squares - total) / (len(n) * low * (low - 1.0))
    else:
        n = n.astype(np.float64)
        squares = np.einsum("ij,ij->i", counts, counts)
        observed = float(((squares - n) / (n * (n - 1))).mean())
    return (observed - expected) / (1.0 - expected)


def krippendorff_alpha(counts: np.ndarray, level: str = "ordinal") -> float:
    """Krippendorff's α from units × categories counts (categories in their natural order).

    The coincidence matrix is o = Σᵤ (nᵤnᵤᵀ − diag nᵤ)/(mᵤ − 1) over units with mᵤ ≥ 2 values;
    n_c = Σₖ o_ck and n = Σ n_c. α = 1 − (n − 1)·Σ o_ck δ²_ck / Σ n_c n_k δ²_ck with the
    ordinal metric δ²_ck = (Σ_{g=c..k} n_g − (n_c + n_k)/2)², the interval metric (c − k)², or
    the nominal one [c ≠ k] (Krippendorff, *Content Analysis*, 2004, §11.3). NaN when no
    disagreement is expected.
    """
    counts = np.asarray(counts, dtype=np.float64)
    m = counts.sum(axis=1)
    counts, m = counts[m >= 2], m[m >= 2]
    if not len(m):
        return float("nan")
    weighted = counts / (m - 1)[:, None]
    o = weighted.T @ counts - np.diag(weighted.sum(axis=0))
    n_c = o.sum(axis=1)
    k = len(n_c)
    c, g = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    if level == "ordinal":
        cumulative = np.concatenate([[0.0], np.cumsum(n_c)])
        low, high = np.minimum(c, g), np.maximum(c, g)
        delta = (cumulative[high + 1] - cumulative[low] - (n_c[c] + n_c[g]) / 2) ** 2
    elif level == "interval":
        delta = (c - g).astype(float) ** 2
    elif level == "nominal":
        delta = (c != g).astype(float)
    else:
        raise InputError(f"unknown level {level!r}: use ordinal, interval or nominal")
    expected = float((np.outer(n_c, n_c) * delta).sum())
    if expected == 0:
        return float("nan")
    return 1.0 - (n_c.sum() - 1) * float((o * delta).sum()) / expected


# --------------------------------------------------------------------------- Table 2


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


# --------------------------------------------------------------------------- workers


def background_class(text: pd.Series) -> pd.Series:
    """The preference-judgments paper §5.3's split of the background answers: ``some`` (the answer
    is ``yes``), ``none`` (``no``), ``unknown`` (no answer) or ``unclassified`` (free text: never
    guessed).

    The results reader maps a file's own yes/no values to ``yes``/``no``
    (:class:`crowdprefs.results_file.Columns`); the comparison ignores case.
    """
    text = text.fillna("").astype(str).str.strip().str.lower()
    classes = text.map({"yes": "some", "no": "none", "": "unknown"})
    return classes.fillna("unclassified").astype(str)


def worker_profiles(answers: pd.DataFrame, pairs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per worker, indexed by ``worker_id``.

    ``answers`` (usable), ``empty``, ``rejected``; ``share_A``, ``share_equal``, ``share_B``;
    ``position_bias`` = share_A − share_B (−1 … 1: a lean to the variation shown first or second,
    the preference-judgments paper §4.2); ``median_seconds``, ``min_seconds`` and ``listen_ratio``
    (median of work time over the HIT's listening time); ``verdict_agreement`` (mean of
    :func:`answer_agreement` against the aggregated verdicts of the sorting pairs) over
    ``verdict_answers``; ``checks`` and ``check_failures`` (attention checks whose answer differs
    from the known one; rejected answers count here, since a failed check is a reason to reject);
    ``iterations`` worked and the ``first_iteration``; the last ``background`` answer and its
    :func:`background_class`; ``comments``.
    """
    validate(answers)
    if pairs is None:
        pairs = pair_verdicts(answers)
    good = usable(answers)
    worker = good.groupby("worker_id")
    counts = tally(good["worker_id"], good["choice"], CHOICES)
    shares = counts.div(counts.sum(axis=1), axis=0)
    profile = pd.DataFrame(index=pd.Index(answers["worker_id"].unique(), name="worker_id"))
    profile["answers"] = worker.size()
    profile["empty"] = (answers["choice"] == "").groupby(answers["worker_id"]).sum()
    profile["rejected"] = (answers["status"] == "rejected").groupby(answers["worker_id"]).sum()
    for choice in CHOICES:
        profile[f"share_{choice}"] = shares[choice]
    profile["position_bias"] = profile["share_A"] - profile["share_B"]
    profile["median_seconds"] = worker["seconds"].median()
    profile["min_seconds"] = worker["seconds"].min()
    profile["listen_ratio"] = (
        (good["seconds"] / good["listen_seconds"]).groupby(good["worker_id"]).median()
    )
    sort = good[(good["kind"] == "sort") & good["pair_id"].isin(pairs.index)]
    points = answer_agreement(sort["score"], sort["pair_id"].map(pairs["verdict"]))
    by_worker = pd.Series(points, index=sort.index).groupby(sort["worker_id"])
    profile["verdict_agreement"] = by_worker.mean()
    profile["verdict_answers"] = by_worker.size()
    given = answers[answers["choice"] != ""]
    checks = given[(given["kind"] == "check") & given["expected"].notna()]
    failed = checks["score"] != checks["expected"]
    profile["checks"] = checks.groupby("worker_id").size()
    profile["check_failures"] = failed.groupby(checks["worker_id"]).sum()
    profile["iterations"] = worker["iteration"].nunique()
    profile["first_iteration"] = worker["iteration"].min()
    given = answers[answers["background"].fillna("") != ""]
    profile["background"] = given.groupby("worker_id")["background"].last()
    profile["background"] = profile["background"].fillna("").astype(str)
    profile["background_class"] = background_class(profile["background"])
    profile["comments"] = (answers["comment"].fillna("") != "").groupby(answers["worker_id"]).sum()
    counts = ["answers", "empty", "rejected", "verdict_answers", "checks", "check_failures"]
    profile[counts] = profile[counts].fillna(0).astype(int)
    profile["iterations"] = profile["iterations"].fillna(0).astype(int)
    return profile.sort_values(["answers", "worker_id"], ascending=[False, True])


@dataclass(frozen=True)
class FlagRules:
    """The rules of :func:`flag_workers` (the preference-judgments paper §4.2: careless workers and
    robots).

    ``constant-answer``  at least ``min_answers`` answers, all the same option, and that this
                         happens by chance with probability below ``constant_p`` for a worker
                         answering like the crowd (p_cⁿ, p_c the crowd's share of that option;
                         the preference-judgments paper's two robots always answered "equal").
    ``constant-time``    at least ``min_answers`` answers, all with the same work time (the
                         robots took exactly 8 s each time).
    ``bot``              at least ``bot_answers`` answers, all the same option in the same work
                         time, whatever the crowd's shares (both robots at once; the rule the
                         MTurk review blocks on).
    ``too-fast``         at least ``min_answers`` answers and a median work time shorter than the
                         clips' listening time (when the durations are known: ``listen_ratio < 1``),
                         else shorter than ``fast_seconds`` (the preference-judgments paper §4.1:
                         hearing a HIT's three clips once took 13 s on average and never less
                         than 4 s). One fast answer is no evidence: clips can be heard in MTurk's
                         preview, before the work time starts.
    ``failed-checks``    at least ``min_checks`` attention checks, at least ``check_failures``
                         of them failed, making more than ``check_share`` of them.
    ``low-agreement``    at least ``min_answers`` answers on decided pairs whose agreement with the
                         aggregated verdicts lies ``z`` standard errors or more below the crowd's
                         (z = (a_w − ā)/(s/√n_w), ā and s the mean and standard deviation over all
                         answers).
    ``empty-answers``    at least ``empty_answers`` submissions without an answer.
    """

    min_answers: int = 5
    constant_p: float = 0.001
    fast_seconds: float = 8.0
    bot_answers: int = 5
    min_checks: int = 1
    check_failures: int = 1
    check_share: float = 0.4
    z: float = 3.0
    empty_answers: int = 2

    def __post_init__(self) -> None:
        if self.min_answers < 2 or self.bot_answers < 2 or self.z <= 0 or self.fast_seconds < 0:
            raise InputError(
                "flag rules need min_answers >= 2, bot_answers >= 2, z > 0 and fast_seconds >= 0"
            )
        if not 0 < self.constant_p <= 1:
            raise InputError(f"constant_p must lie in (0, 1], got {self.constant_p}")
        if self.min_checks < 1 or self.check_failures < 1 or not 0 <= self.check_share <= 1:
            raise InputError(
                "flag rules need min_checks >= 1, check_failures >= 1 and check_share in [0, 1]"
            )


FLAGS = (
    "constant-answer",
    "constant-time",
    "bot",
    "too-fast",
    "failed-checks",
    "low-agreement",
    "empty-answers",
)


def flag_workers(
    answers: pd.DataFrame,
    verdicts: pd.DataFrame | AggregationRule,
    rules: FlagRules = FlagRules(),
    profiles: pd.DataFrame | None = None,
    *,
    select: tuple[str, ...] = FLAGS,
) -> pd.DataFrame:
    """``worker_id, flag, evidence``: one row per rule of ``select`` a worker breaks (see
    :class:`FlagRules`).

    ``verdicts`` are the pairs' verdicts to judge agreement against (:func:`pair_verdicts`,
    e.g. a project's own), or the aggregation rule that makes them from ``answers`` (a
    project's rule: a margin-rule project's workers are judged against margin verdicts). The
    evidence is one line a person can check; workers are in profile order (most answers first).
    Both the audit and the MTurk review (:mod:`crowdprefs.quality.review`) flag with it.
    """
    unknown = set(select) - set(FLAGS)
    if unknown:
        raise InputError(f"unknown worker flag(s) {', '.join(sorted(unknown))}")
    validate(answers)
    pairs = pair_verdicts(answers, verdicts) if isinstance(verdicts, AggregationRule) else verdicts
    if profiles is None:
        profiles = worker_profiles(answers, pairs)
    good = usable(answers)
    times = good.groupby("worker_id")["seconds"].agg(["nunique", "first"])
    choice = good.groupby("worker_id")["choice"].agg(["nunique", "first"])
    p = profiles.join(times.add_prefix("time_")).join(choice.add_prefix("choice_"))
    enough = p["answers"] >= rules.min_answers
    shares = good["choice"].value_counts(normalize=True)
    chance = p["choice_first"].map(shares).astype(float) ** p["answers"]
    sort = good[(good["kind"] == "sort") & good["pair_id"].isin(pairs.index)]
    points = answer_agreement(sort["score"], sort["pair_id"].map(pairs["verdict"]))
    mean, sd = (float(np.mean(points)), float(np.std(points))) if len(points) else (np.nan, np.nan)
    z = (p["verdict_agreement"] - mean) / (sd / np.sqrt(p["verdict_answers"].clip(lower=1)))
    known_listen = p["listen_ratio"].notna()

    def seconds(v: float) -> str:
        return f"{v:g} s"

    rules_met = {
        "constant-answer": (
            enough & (p["choice_nunique"] == 1) & (chance < rules.constant_p),
            lambda r: (
                f"all {r.answers} answers were {r.choice_first!r} "
                f"(chance {chance[r.Index]:.1g} at the crowd's shares)"
            ),
        ),
        "constant-time": (
            enough & (p["time_nunique"] == 1),
            lambda r: f"all {r.answers} answers took exactly {seconds(r.time_first)}",
        ),
        "bot": (
            (p["answers"] >= rules.bot_answers)
            & (p["choice_nunique"] == 1)
            & (p["time_nunique"] == 1),
            lambda r: f"{r.answers} identical answers in identical time",
        ),
        "too-fast": (
            enough
            & (
                (known_listen & (p["listen_ratio"] < 1))
                | (~known_listen & (p["median_seconds"] < rules.fast_seconds))
            ),
            lambda r: (
                f"median work time {r.median_seconds:.1f} s is {r.listen_ratio:.2f} of the "
                "clips' listening time"
                if pd.notna(r.listen_ratio)
                else f"median work time {r.median_seconds:.1f} s < {rules.fast_seconds:g} s "
                f"(over {r.answers} answers, fastest {seconds(r.min_seconds)})"
            ),
        ),
        "failed-checks": (
            (p["checks"] >= rules.min_checks)
            & (p["check_failures"] >= rules.check_failures)
            & (p["check_failures"] > rules.check_share * p["checks"]),
            lambda r: f"failed {r.check_failures} of {r.checks} attention checks",
        ),
        "low-agreement": (
            (p["verdict_answers"] >= rules.min_answers) & (z <= -rules.z),
            lambda r: (
                f"agreement with the verdicts {r.verdict_agreement:.3f} over {r.verdict_answers} "
                f"answers against the crowd's {mean:.3f} (z = {z[r.Index]:.1f})"
            ),
        ),
        "empty-answers": (
            p["empty"] >= rules.empty_answers,
            lambda r: f"{r.empty} submissions without an answer",
        ),
    }
    rows = []
    for flag in select:
        mask, evidence = rules_met[flag]
        rows.extend(
            (worker.Index, flag, evidence(worker)) for worker in p[mask.fillna(False)].itertuples()
        )
    order = {w: i for i, w in enumerate(p.index)}
    flags = pd.DataFrame(rows, columns=["worker_id", "flag", "evidence"])
    flags["_order"] = flags["worker_id"].map(order)
    flags["_flag"] = flags["flag"].map(FLAGS.index)
    return (
        flags.sort_values(["_order", "_flag"])
        .drop(columns=["_order", "_flag"])
        .reset_index(drop=True)
    )


def review_reasons(flags: pd.DataFrame) -> pd.DataFrame:
    """Flags as the MTurk review step takes them (``crowdprefs mturk collect --flags``): one
    row per worker, ``worker_id, reason``, the reason joining every ``flag: evidence``."""
    reason = (flags["flag"] + ": " + flags["evidence"]).groupby(flags["worker_id"], sort=False)
    return reason.agg("; ".join).rename("reason").reset_index()


def flag_quality(flags: pd.DataFrame, kinds: pd.Series) -> dict:
    """Precision and recall of the flags against known worker kinds (``honest`` or not), as the
    simulated crowd plants them (:class:`crowdprefs.crowds.simulated.WorkerPool`)."""
    flagged = set(flags["worker_id"])
    bad = set(kinds.index[kinds != "honest"])
    hits = len(flagged & bad)
    return {
        "flagged": len(flagged),
        "planted": len(bad),
        "true_positives": hits,
        "precision": hits / len(flagged) if flagged else float("nan"),
        "recall": hits / len(bad) if bad else float("nan"),
    }


# --------------------------------------------------------------------------- reference lists


def reference_verdicts(pairs: pd.DataFrame, lists: pd.DataFrame) -> pd.Series:
    """The reference verdict of each pair from ordered lists ``query, document, group``:
    +1 when x's group is more similar (lower) than y's, 0 in the same group, −1 otherwise;
    NaN when the reference does not list both documents."""
    group = lists.set_index(["query", "document"])["group"]
    gx = pd.Series(pd.MultiIndex.from_arrays([pairs["query"], pairs["x"]]).map(group), pairs.index)
    gy = pd.Series(pd.MultiIndex.from_arrays([pairs["query"], pairs["y"]]).map(group), pairs.index)
    return np.sign(gy.astype(float) - gx.astype(float))


def confusion_table(reference, observed) -> pd.DataFrame:
    """The preference-judgments paper Tables 3–6: reference (rows) against workers (columns),
    ``less, equal, greater`` as ranks (:data:`OUTCOMES`: ``less`` = x more similar, ranked before
    y)."""
    frame = pd.DataFrame({"reference": reference, "observed": observed}).dropna()
    labels = list(OUTCOMES.values())
    table = tally(
        frame["reference"].astype(int).map(OUTCOMES).astype(object),
        frame["observed"].astype(int).map(OUTCOMES),
        labels,
    ).reindex(index=labels, fill_value=0)
    table.index.name, table.columns.name = "reference", "workers"
    return table


def agreement_summary(table: pd.DataFrame) -> dict:
    """Complete, partial and no agreement in a confusion table and the preference-judgments paper
    §5.3's score (2 points per complete, 1 per partial agreement, over 2 per judgment: 0.735 for
    Table 3)."""
    values = table.to_numpy(dtype=float)
    total = values.sum()
    complete = float(np.trace(values))
    none = float(values[0, 2] + values[2, 0])
    partial = total - complete - none
    return {
        "judgments": int(total),
        "complete": int(complete),
        "partial": int(partial),
        "none": int(none),
        "score": (2 * complete + partial) / (2 * total) if total else float("nan"),
    }


def reference_agreement(
    answers: pd.DataFrame,
    pairs: pd.DataFrame,
    lists: pd.DataFrame,
    by: pd.Series | None = None,
) -> dict[str, pd.DataFrame]:
    """Confusion tables against reference lists: ``aggregated`` (one verdict per pair, Table 3),
    ``answers`` (single answers) and, when ``by`` maps workers to an attribute (e.g. the
    background class), ``answers: <value>`` for each value (Tables 4–6)."""
    sort_pairs = pairs[pairs["kind"] == "sort"]
    tables = {
        "aggregated": confusion_table(reference_verdicts(sort_pairs, lists), sort_pairs["verdict"])
    }
    good = usable(answers)
    good = good[good["kind"] == "sort"]
    reference = reference_verdicts(good, lists)
    tables["answers"] = confusion_table(reference, good["score"])
    if by is not None:
        attribute = good["worker_id"].map(by).fillna("unknown")
        for value in sorted(attribute.unique()):
            chosen = attribute == value
            tables[f"answers: {value}"] = confusion_table(reference[chosen], good["score"][chosen])
    return tables


# --------------------------------------------------------------------------- contradictions


def contradictions(pairs: pd.DataFrame) -> pd.DataFrame:
    """Non-transitive verdict triples per query (:func:`crowdprefs.campaign.sorting.contradictions`)
    from aggregated sorting pairs: ``query, a, b, c``. A pair decided twice keeps its last one."""
    sort = pairs[pairs["kind"] == "sort"].sort_values("iteration", kind="stable")
    by_query: dict[str, dict[tuple, int]] = {}
    for query, x, y, verdict in zip(
        sort["query"], sort["x"], sort["y"], sort["verdict"].astype(int), strict=True
    ):
        by_query.setdefault(query, {})[(x, y)] = int(verdict)
    rows = []
    for query in sorted(by_query):
        known = by_query[query]
        documents = sorted({d for pair in known for d in pair})
        rows.extend((query, *t) for t in triple_contradictions(documents, known))
    return pd.DataFrame(rows, columns=["query", "a", "b", "c"])


def transitivity(answers: pd.DataFrame, pairs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Transitivity-violation rates (:func:`crowdprefs.campaign.transitivity.violation_rates`:
    ``triples``, ``violations``, ``rate``): ``queries`` over the aggregated verdicts of the
    sorting pairs, indexed by query; ``workers`` over each worker's own usable answers to
    sorting pairs, indexed by ``worker_id`` (every worker; rate NaN without a complete
    triple). A complete triple is three candidates whose three
    pairs were judged; it violates transitivity when no weak order fits the judgments (a > b,
    b > c but a ≤ c; a = b, b = c but a ≠ c; …)."""
    sort = pairs[pairs["kind"] == "sort"]
    queries = violation_rates(sort[["query", "x", "y"]].assign(value=sort["verdict"]))
    good = usable(answers)
    good = good[good["kind"] == "sort"]
    judged = good[["worker_id", "query", "x", "y"]].assign(value=good["score"])
    everyone = pd.Index(sorted(answers["worker_id"].unique()), name="worker_id")
    workers = violation_rates(judged, by="worker_id").reindex(everyone)
    workers[["triples", "violations"]] = workers[["triples", "violations"]].fillna(0).astype(int)
    return {"queries": queries, "workers": workers}


def overall_rate(rates: pd.DataFrame) -> float:
    """Violations over complete triples, summed over the rows (NaN without a triple)."""
    triples = int(rates["triples"].sum())
    return float(rates["violations"].sum() / triples) if triples else float("nan")


# --------------------------------------------------------------------------- the whole audit


@dataclass
class Audit:
    """Every table of an audit (see :func:`audit`)."""

    iterations: pd.DataFrame
    workers: pd.DataFrame
    flags: pd.DataFrame
    pairs: pd.DataFrame
    contradictions: pd.DataFrame
    transitivity: dict[str, pd.DataFrame] = field(default_factory=dict)
    reference: dict[str, pd.DataFrame] = field(default_factory=dict)
    facts: dict = field(default_factory=dict)
    answers: pd.DataFrame | None = None

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table by name, flat (the worker review flags included), for CSV exports."""
        return {
            "iterations": self.iterations,
            "workers": self.workers.reset_index(),
            "flags": self.flags,
            "review_flags": review_reasons(self.flags),
            "contradictions": self.contradictions,
            **{f"transitivity {k}": v.reset_index() for k, v in self.transitivity.items()},
            **{f"reference {k}": v.reset_index() for k, v in self.reference.items()},
        }

    def write_csv(self, folder: Path | OutputFolder) -> list[Path]:
        """Write every table of :meth:`tables` as ``folder/NAME.csv`` (every file checked
        before any is written: :class:`~crowdprefs.files.OutputFolder`); returns the files."""
        from crowdprefs.files import OutputFolder

        folder = folder if isinstance(folder, OutputFolder) else OutputFolder(folder)
        tables = self.tables()
        outputs = folder.files(f"{table_name(name)}.csv" for name in tables)
        for out, table in zip(outputs, tables.values(), strict=True):
            out.write(table.to_csv(index=False))
        return [out.path for out in outputs]

    def to_json(self) -> dict:
        """Plain JSON-ready data: every table as a list of rows (NaN as null)."""

        def rows(frame: pd.DataFrame, index: bool = False) -> list[dict]:
            frame = frame.reset_index() if index else frame
            return frame.astype(object).to_dict(orient="records")

        def plain(value):
            if isinstance(value, dict):
                return {k: plain(v) for k, v in value.items()}
            if isinstance(value, list):
                return [plain(v) for v in value]
            if value is pd.NA or value is pd.NaT:
                return None
            if isinstance(value, np.generic):
                value = value.item()
            return None if isinstance(value, float) and np.isnan(value) else value

        return plain(
            {
                "facts": self.facts,
                "iterations": rows(self.iterations),
                "workers": rows(self.workers, index=True),
                "flags": rows(self.flags),
                "contradictions": rows(self.contradictions),
                "transitivity": {
                    name: rows(table, index=True) for name, table in self.transitivity.items()
                },
                "reference": {
                    name: {
                        "table": rows(table, index=True),
                        "summary": agreement_summary(table),
                    }
                    for name, table in self.reference.items()
                },
            }
        )


def read_worker_attribute(path: Path) -> pd.Series:
    """``worker_id → attribute`` from a CSV whose first column is the worker and second the
    attribute (to split the single-answer reference tables by, e.g. musical training)."""
    import io

    from crowdprefs.files import read_text

    if not path.is_file():
        raise InputError(f"{path}: no such file")
    text, _ = read_text(path, "worker attribute file")
    try:
        table = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise InputError(f"{path}: not a valid CSV: {error}") from None
    if table.shape[1] < 2:
        raise InputError(f"{path}: need two columns, worker_id and an attribute")
    return table.set_index(table.columns[0])[table.columns[1]]


def audit(
    answers: pd.DataFrame,
    *,
    pairs: pd.DataFrame | None = None,
    rule: AggregationRule = AggregationRule(),
    fees: FeeModel = FeeModel(),
    reward: float | None = None,
    reference: pd.DataFrame | None = None,
    split_by: pd.Series | None = None,
    rules: FlagRules = FlagRules(),
    found_contradictions: pd.DataFrame | None = None,
) -> Audit:
    """The whole audit of an answers frame.

    ``pairs`` are the verdicts to judge workers against (a project's own; otherwise the answers
    are aggregated with ``rule``); ``fees`` and ``reward`` (where the answers do not know
    theirs) price the answers; ``reference`` ordered lists give the confusion tables, split by
    ``split_by`` (worker → attribute) or else by the background class;
    ``found_contradictions`` replaces the triples computed from ``pairs`` (a project's driver
    reports its own).
    """
    validate(answers)
    aggregated = pairs is None
    if pairs is None:
        pairs = pair_verdicts(answers, rule)
    profiles = worker_profiles(answers, pairs)
    flags = flag_workers(answers, pairs, rules, profiles)
    table = iteration_table(answers, pairs, fees, reward=reward)
    tables = {}
    if reference is not None:
        by = split_by if split_by is not None else profiles["background_class"]
        tables = reference_agreement(answers, pairs, reference, by)
    empty = answers.attrs.get("empty_rows", [])
    rates = transitivity(answers, pairs)
    facts = {
        "source": answers.attrs.get("source"),
        "answers": len(answers),
        "usable_answers": len(usable(answers)),
        "empty_answers": int((answers["choice"] == "").sum()),
        "empty_rows": [int(r) for r in empty],
        "rejected_answers": int((answers["status"] == "rejected").sum()),
        "workers": int(answers["worker_id"].nunique()),
        "flagged_workers": int(flags["worker_id"].nunique()),
        "transitivity_violation_rate": overall_rate(rates["queries"]),
        "overall_median_seconds": float(usable(answers)["seconds"].median()),
        "rule": rule.rule if aggregated else "the project's verdicts",
        "identity": answers.attrs.get("identity"),
        "encoding": answers.attrs.get("encoding"),
    }
    return Audit(
        iterations=table,
        workers=profiles,
        flags=flags,
        pairs=pairs,
        contradictions=contradictions(pairs)
        if found_contradictions is None
        else found_contradictions,
        transitivity=rates,
        reference=tables,
        facts=facts,
        answers=answers,
    )


def audit_project(
    project: Project,
    *,
    reference: pd.DataFrame | None = None,
    split_by: pd.Series | None = None,
    rules: FlagRules = FlagRules(),
) -> Audit:
    """:func:`audit` of a project: its answers, its stored verdicts, its fees and the
    contradictions its driver met. :class:`InputError` when it has no answers yet."""
    from crowdprefs.campaign.driver import query_contradictions

    frame = project_answers(project)
    if frame.empty:
        raise InputError(f"{project.root} has no answers yet")
    return audit(
        frame,
        pairs=project_verdicts(project, frame),
        fees=project.settings.fees,
        reference=reference,
        split_by=split_by,
        rules=rules,
        found_contradictions=query_contradictions(project),
    )


_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def table_name(name: str) -> str:
    """A file-name-safe version of a table's name (for CSV exports)."""
    return _SAFE.sub("_", name).strip("_")
