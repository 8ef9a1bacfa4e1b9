"""Scoring systems against a ground truth: score matrix, means with intervals, ranking, tests.

:func:`evaluate` is the library side of ``crowdprefs evaluate``; :func:`compare_lists` that of
``crowdprefs compare-lists``. Everything is vectorised over systems × queries and returns
DataFrames:

* ``scores`` – the long tidy table ``[system, query, measure, score]``, the interchange format read
  by ``crowdprefs stats`` (:func:`crowdprefs.evaluation.stats.read_scores`);
* ``summary`` – ``[measure, system, mean, sd, n, ci_low, ci_high, rank]`` per measure and system;
* ``tests`` – ``[measure, system_a, system_b, difference, statistic, p, significant]``, the pairwise
  tests of :func:`crowdprefs.evaluation.stats.pairwise_tests` for each measure.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps

from crowdprefs.errors import InputError
from crowdprefs.evaluation import measures as M
from crowdprefs.evaluation.stats import pairwise_tests
from crowdprefs.files import Output, save_figure

SUMMARY_COLUMNS = ["measure", "system", "mean", "sd", "n", "ci_low", "ci_high", "rank"]
TEST_COLUMNS = ["measure", "system_a", "system_b", "difference", "statistic", "p", "significant"]
RECALL_LEVELS = np.linspace(0.0, 1.0, 11)


@dataclass(frozen=True)
class Evaluation:
    """The result of :func:`evaluate` (see the module doc for the columns)."""

    scores: pd.DataFrame
    summary: pd.DataFrame
    tests: pd.DataFrame
    ignored_rows: int


def matrix(scores: pd.DataFrame, measure: str) -> pd.DataFrame:
    """One measure's scores as a system × query matrix (index = system, columns = query)."""
    part = scores[scores["measure"] == measure]
    if part.empty:
        raise InputError(f"no score for measure {measure!r}")
    return part.pivot(index="system", columns="query", values="score")


def summarize(scores: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Mean over queries per measure and system, with a Student-t confidence interval and rank.

    ``ci = mean ± t_{(1+confidence)/2, n-1} · sd / √n`` (``sd`` with ``n - 1`` degrees of freedom;
    the interval is the mean itself when ``n = 1``). ``rank`` 1 is the highest mean of the measure
    (ties share the lower rank). The mean of AP is MAP, of AG@5 the MIREX "FINE"/"PSum" score.
    """
    if not 0 < confidence < 1:
        raise InputError(f"confidence {confidence} must be between 0 and 1")
    grouped = scores.groupby(["measure", "system"], sort=False)["score"]
    summary = grouped.agg(mean="mean", sd="std", n="count").reset_index()
    summary["sd"] = summary["sd"].fillna(0.0)
    n = summary["n"].to_numpy()
    t = sps.t.ppf((1 + confidence) / 2, np.maximum(n - 1, 1))
    half = np.where(n > 1, t * summary["sd"].to_numpy() / np.sqrt(n), 0.0)
    summary["ci_low"] = summary["mean"] - half
    summary["ci_high"] = summary["mean"] + half
    summary["rank"] = (
        summary.groupby("measure", sort=False)["mean"].rank(method="min", ascending=False)
    ).astype(int)
    return summary.sort_values(
        ["measure", "rank", "system"], kind="stable", key=_measure_order(scores)
    )[SUMMARY_COLUMNS].reset_index(drop=True)


def _measure_order(scores: pd.DataFrame):
    """Sort key keeping measures in the order they appear in ``scores``."""
    order = {m: i for i, m in enumerate(pd.unique(scores["measure"]))}

    def key(column: pd.Series) -> pd.Series:
        return column.map(order) if column.name == "measure" else column

    return key


def pairwise(
    scores: pd.DataFrame,
    test: str = "wilcoxon",
    alpha: float = 0.05,
    one_sided: bool = False,
    correction: str | None = None,
) -> pd.DataFrame:
    """Pairwise tests between systems for each measure
    (:func:`crowdprefs.evaluation.stats.pairwise_tests`).

    The preference-judgments paper §5.6 compares systems with 1-tailed paired tests; the
    power-and-stability paper §6 with 1-tailed Wilcoxon tests per pair. Needs at least two systems
    and two queries per measure.
    """
    parts = []
    for measure in pd.unique(scores["measure"]):
        table = pairwise_tests(
            matrix(scores, measure),
            test=test,
            alpha=alpha,
            one_sided=one_sided,
            correction=correction,
        )
        parts.append(table.assign(measure=measure))
    return pd.concat(parts, ignore_index=True)[TEST_COLUMNS]


def evaluate(
    runs: pd.DataFrame,
    truth: pd.DataFrame,
    measures: Iterable[str | M.Measure] = ("AG@5", "nDCG@5", "ANDCG@5", "ADR@5"),
    k: int | None = None,
    test: str | None = "wilcoxon",
    alpha: float = 0.05,
    one_sided: bool = False,
    correction: str | None = None,
    confidence: float = 0.95,
) -> Evaluation:
    """Score ``runs`` against ``truth`` (levels or lists), summarise, rank and test the systems.

    ``measures`` and ``k`` as in :func:`crowdprefs.evaluation.measures.score`. ``test=None`` skips
    the pairwise tests (they are also skipped, with an empty table, with fewer than two systems or
    queries). See :func:`summarize` and :func:`pairwise` for the other arguments.
    """
    parsed = M.parse_measures(measures, k)
    data = M.judge(runs, truth, depth=M.depth_needed(parsed))
    scores = M.tabulate(data, parsed)
    summary = summarize(scores, confidence)
    testable = scores["system"].nunique() > 1 and scores["query"].nunique() > 1
    if test is None or not testable:
        tests = pd.DataFrame(columns=TEST_COLUMNS)
    else:
        tests = pairwise(scores, test, alpha, one_sided, correction)
    return Evaluation(scores=scores, summary=summary, tests=tests, ignored_rows=data.ignored)


def pr_curves(runs: pd.DataFrame, truth: pd.DataFrame, rel: float = 1) -> pd.DataFrame:
    """Interpolated precision at the 11 recall levels 0, 0.1, ..., 1, averaged over queries.

    ``[system, recall, precision]``; per query, IPrec(x) = max{P(r) : R(r) >= x} (the FMP evaluation
    notebook's PR curve made monotone, as trec_eval's iprec_at_recall).
    """
    data = M.judge(runs, truth)
    curve = M.interpolated_precision(data, RECALL_LEVELS, rel=rel).mean(axis=1)
    return pd.DataFrame(
        {
            "system": np.repeat(data.systems, len(RECALL_LEVELS)),
            "recall": np.tile(RECALL_LEVELS, len(data.systems)),
            "precision": curve.reshape(-1),
        }
    )


def plot(
    summary: pd.DataFrame, path: str | Path | Output, curves: pd.DataFrame | None = None
) -> None:
    """Save a figure (PNG, PDF or SVG, by the extension): one panel per measure with each
    system's mean and confidence interval (systems in the rank order of the first measure) and,
    when given, a panel of PR ``curves``."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    measures = list(pd.unique(summary["measure"]))
    first = summary[summary["measure"] == measures[0]].sort_values("rank", kind="stable")
    systems = first["system"].tolist()[::-1]  # best at the top
    panels = len(measures) + (curves is not None)
    fig, axes = plt.subplots(
        1, panels, figsize=(3.6 * panels, 1.2 + 0.28 * len(systems)), squeeze=False
    )
    y = np.arange(len(systems))
    for ax, measure in zip(axes[0], measures, strict=False):
        part = summary[summary["measure"] == measure].set_index("system").loc[systems]
        ax.errorbar(
            part["mean"],
            y,
            xerr=[part["mean"] - part["ci_low"], part["ci_high"] - part["mean"]],
            fmt="o",
            capsize=3,
        )
        ax.set_yticks(y, systems if ax is axes[0, 0] else [""] * len(systems), fontsize=8)
        ax.set_title(measure)
        ax.set_xlabel("mean over queries (CI)")
        ax.grid(axis="x", alpha=0.3)
    if curves is not None:
        ax = axes[0, -1]
        for system in systems[::-1]:
            part = curves[curves["system"] == system]
            ax.plot(part["recall"], part["precision"], marker=".", label=system)
        ax.set(xlim=(0, 1.02), ylim=(0, 1.02), xlabel="recall", ylabel="interpolated precision")
        ax.set_title("Precision-recall")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    try:
        save_figure(fig, path, dpi=120)
    finally:
        plt.close(fig)


# --------------------------------------------------------------------------- comparing lists


def shuffled_runs(lists: pd.DataFrame, permutations: int, seed: int | None = 0) -> pd.DataFrame:
    """Read ordered lists as runs: ``permutations`` systems ``"0", "1", ...``, each ranking every
    query's documents group by group, in a random order within each group (the preference-judgments
    paper §5.4)."""
    base = lists.sort_values(["query", "group"], kind="stable").reset_index(drop=True)
    n = len(base)
    q_code, _ = pd.factorize(base["query"])
    group = base["group"].to_numpy()
    rng = np.random.default_rng(seed)
    perm = np.repeat(np.arange(permutations), n)
    order = np.lexsort(
        (
            rng.random(permutations * n),
            np.tile(group, permutations),
            np.tile(q_code, permutations),
            perm,
        )
    )
    row = order % n
    local = np.tile(np.arange(n), permutations)
    query_start = np.r_[0, np.flatnonzero(q_code[1:] != q_code[:-1]) + 1]
    rank = local - query_start[q_code][local] + 1 if n else local
    return pd.DataFrame(
        {
            "system": perm.astype(str),
            "query": base["query"].to_numpy()[row],
            "document": base["document"].to_numpy()[row],
            "rank": rank,
        }
    )


MAX_RANKED_ROWS = 20_000_000
"""The most rows :func:`compare_lists` ranks (permutations × listed documents): about 2 GB."""


def compare_lists(
    a: pd.DataFrame,
    b: pd.DataFrame,
    permutations: int = 1000,
    seed: int | None = 0,
    names: tuple[str, str] = ("A", "B"),
) -> pd.DataFrame:
    """ADR of one set of ordered lists against the other, in both directions (the
    preference-judgments paper §5.4).

    The lists acting as results are read as full rankings, each group in a random order; this is
    repeated ``permutations`` times and the mean ADR over the ground truth's queries (whole-list
    ADR, a query missing from the results scoring 0) is summarised by its minimum, mean and maximum,
    as in the preference-judgments paper Table 7. Returns
    ``[truth, results, min, mean, max, queries]``.
    """
    most = MAX_RANKED_ROWS // max(len(a), len(b), 1)
    if not 1 <= permutations <= most:
        raise InputError(
            f"permutations must be at least 1 and at most {most} for lists of "
            f"{max(len(a), len(b))} documents (at most {MAX_RANKED_ROWS:,} ranked rows), "
            f"got {permutations}"
        )
    rows = []
    for (truth_name, truth), (results_name, results) in (
        ((names[0], a), (names[1], b)),
        ((names[1], b), (names[0], a)),
    ):
        runs = shuffled_runs(results, permutations, seed)
        data = M.judge(runs, truth)
        adr = M.average_dynamic_recall(data).mean(axis=1)
        rows.append(
            {
                "truth": truth_name,
                "results": results_name,
                "min": adr.min(),
                "mean": adr.mean(),
                "max": adr.max(),
                "queries": len(data.queries),
            }
        )
    return pd.DataFrame(rows)
