"""Significance tests over a system×query score matrix.

A *scores matrix* is a :class:`pandas.DataFrame` with one row per system (index = system name),
one column per query and one measure's score in each cell (e.g. AG@5 of system *s* on query *q*).

* :func:`pairwise_tests` – a paired test (Wilcoxon signed-rank, paired t, sign) or the unpaired
  Mann-Whitney U test for every pair of systems, optionally with a multiple-comparison
  correction: the per-pair procedure of the power-and-stability paper (§6).
* :func:`friedman` and :func:`friedman_tukey` – Friedman's test and Tukey's HSD on the Friedman
  mean ranks, the all-pairs procedure MIREX uses (the power-and-stability paper, §4, §6).
* :func:`read_scores` – reads the scores interchange file (long CSV/JSON written by
  ``crowdprefs evaluate``, or a wide CSV) into one scores matrix per measure.

The ``*_test``/``*_decisions`` functions are vectorised over any leading axes so that the
power and stability study (:mod:`crowdprefs.evaluation.power`) runs thousands of subsets at once;
each equals its scipy counterpart row by row (see ``tests/evaluation/test_stats.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from crowdprefs.errors import InputError
from crowdprefs.files import read_text
from crowdprefs.io import csv_frame

PAIRWISE_TESTS = ("wilcoxon", "t", "sign", "mann-whitney")
LONG_COLUMNS = ("system", "query", "measure", "score")
EXACT_WILCOXON_MAX_N = 50


def validate_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """Check that ``scores`` is a complete numeric system×query matrix; return it as floats.

    Raises :class:`InputError` for fewer than two systems or queries, duplicated system or
    query labels, non-numeric or missing cells.
    """
    if not isinstance(scores, pd.DataFrame):
        raise InputError(f"scores must be a system×query DataFrame, not {type(scores).__name__}")
    if scores.shape[0] < 2 or scores.shape[1] < 2:
        raise InputError(
            f"scores need at least 2 systems and 2 queries, got {scores.shape[0]} system(s) "
            f"× {scores.shape[1]} query(ies)"
        )
    for axis, labels in (("system", scores.index), ("query", scores.columns)):
        if labels.has_duplicates:
            dup = labels[labels.duplicated()][0]
            raise InputError(f"scores: {axis} {dup!r} appears more than once")
    try:
        values = scores.astype(float)
    except (TypeError, ValueError) as error:
        raise InputError(f"scores: non-numeric value ({error})") from None
    missing = values.isna().to_numpy()
    if missing.any():
        i, j = np.argwhere(missing)[0]
        raise InputError(
            f"scores: no score for system {values.index[i]!r} on query {values.columns[j]!r} "
            f"({int(missing.sum())} cell(s) missing in all)"
        )
    return values


def system_pairs(n_systems: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices ``(a, b)`` of all unordered system pairs, ``a < b``, in lexicographic order."""
    a, b = np.triu_indices(n_systems, k=1)
    return a, b


# ---------------------------------------------------------------------------------------------
# One-sided p-values of the paired tests, vectorised over all leading axes (the last axis holds
# the queries). Each returns (statistic, p_greater, p_less); two-sided p = min(1, 2·min(·, ·)).


@lru_cache(maxsize=1)
def _signed_rank_null(n_max: int = EXACT_WILCOXON_MAX_N) -> tuple[np.ndarray, np.ndarray]:
    """Exact null distribution of the Wilcoxon T+ for n = 0…n_max untied, non-zero differences.

    Returns ``(cdf, sf)`` tables indexed ``[n, t]``: P(T+ ≤ t) and P(T+ ≥ t). The counts of
    sign patterns with T+ = t follow from the recursion c_n(t) = c_{n−1}(t) + c_{n−1}(t − n);
    they stay below 2^50, so float64 holds them exactly.
    """
    t_max = n_max * (n_max + 1) // 2
    counts = np.zeros((n_max + 1, t_max + 1))
    counts[0, 0] = 1.0
    for n in range(1, n_max + 1):
        counts[n] = counts[n - 1]
        counts[n, n:] += counts[n - 1, : t_max + 1 - n]
    pmf = counts / 2.0 ** np.arange(n_max + 1)[:, None]
    cdf = np.cumsum(pmf, axis=1)
    sf = np.cumsum(pmf[:, ::-1], axis=1)[:, ::-1]
    return np.minimum(cdf, 1.0), np.minimum(sf, 1.0)


def wilcoxon_signed_rank(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Wilcoxon signed-rank test of paired differences ``d`` along the last axis.

    Zero differences are dropped (Wilcoxon's method); the remaining ``n`` are ranked by
    ``|d|`` (ties get their average rank) and ``T+`` is the sum of the ranks of the positive
    ones. Per row: with ``n ≤ 50`` and neither zeros nor ties, the p-values come from the exact
    null distribution of ``T+``; otherwise from the normal approximation
    ``z = (T+ − n(n+1)/4) / √(n(n+1)(2n+1)/24 − Σ(t³ − t)/48)`` (``t`` = tie-group sizes, no
    continuity correction). This equals :func:`scipy.stats.wilcoxon` with ``method="exact"``
    resp. ``"asymptotic"`` row by row (scipy's ``"auto"`` decides once for a whole batch).

    Returns ``(T+, p_greater, p_less)``; a row without non-zero differences gets p = 1.
    """
    d = np.asarray(d, dtype=float)
    order = np.abs(d).argsort(axis=-1)
    d = np.take_along_axis(d, order, axis=-1)  # sorted by |d|: zeros first, tie groups adjacent
    magnitude = np.abs(d)
    position = np.broadcast_to(np.arange(d.shape[-1]), d.shape)
    starts = np.ones(d.shape, dtype=bool)
    starts[..., 1:] = magnitude[..., 1:] != magnitude[..., :-1]
    ends = np.ones(d.shape, dtype=bool)
    ends[..., :-1] = starts[..., 1:]
    low = np.maximum.accumulate(np.where(starts, position, 0), axis=-1)  # 0-based group start
    high = np.flip(
        np.minimum.accumulate(np.flip(np.where(ends, position, d.shape[-1]), -1), -1), -1
    )
    zeros = (d == 0).sum(axis=-1)
    n = d.shape[-1] - zeros
    # Ranks among the non-zero |d|: zeros come first, so subtract their count.
    rank = (low + high) / 2 + 1 - zeros[..., None]
    t_plus = np.where(d > 0, rank, 0.0).sum(axis=-1)
    tie_size = np.where(d != 0, high - low + 1, 1)
    ties = (tie_size**2 - 1).sum(axis=-1)  # Σ over tie groups of t³ − t
    with np.errstate(divide="ignore", invalid="ignore"):
        se = np.sqrt(n * (n + 1) * (2 * n + 1) / 24 - ties / 48)
        z = (t_plus - n * (n + 1) / 4) / se
    p_greater, p_less = sps.norm.sf(z), sps.norm.cdf(z)
    exact = (zeros == 0) & (ties == 0) & (n <= EXACT_WILCOXON_MAX_N)
    if exact.any():
        cdf, sf = _signed_rank_null()
        n_exact, t_exact = n[exact], np.rint(t_plus[exact]).astype(np.intp)
        p_greater[exact], p_less[exact] = sf[n_exact, t_exact], cdf[n_exact, t_exact]
    empty = n == 0
    p_greater[empty] = p_less[empty] = 1.0
    return t_plus, p_greater, p_less


def sign_test(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sign test of paired differences ``d`` along the last axis (zero differences dropped).

    Statistic ``k`` = number of positive differences among the ``n`` non-zero ones; under H0
    ``k ~ Binomial(n, 1/2)``. Returns ``(k, P(K ≥ k), P(K ≤ k))``; the two-sided p-value
    min(1, 2·min(·, ·)) equals :func:`scipy.stats.binomtest`'s. No non-zero difference: p = 1.
    """
    k = (d > 0).sum(axis=-1)
    n = k + (d < 0).sum(axis=-1)
    return k.astype(float), sps.binom.sf(k - 1, n, 0.5), sps.binom.cdf(k, n, 0.5)


def paired_t_test(d: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Paired t-test of differences ``d`` along the last axis.

    ``t = mean(d) / (sd(d) / √n)`` with ``n − 1`` degrees of freedom (as
    :func:`scipy.stats.ttest_rel`). Returns ``(t, P(T ≥ t), P(T ≤ t))``; rows of identical
    differences get t = ±∞ (p = 0 or 1), all-zero rows p = 1.
    """
    n = d.shape[-1]
    mean = d.mean(axis=-1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / (d.std(axis=-1, ddof=1) / np.sqrt(n))
    t = np.where(mean == 0, 0.0, t)
    return t, sps.t.sf(t, n - 1), sps.t.cdf(t, n - 1)


def mann_whitney_test(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unpaired Mann-Whitney U test of ``x`` against ``y`` along the last axis.

    Statistic ``U`` of ``x``. Per row: exact when both samples have at most 8 values and no
    ties, otherwise the normal approximation with tie and continuity correction (scipy's
    :func:`scipy.stats.mannwhitneyu` ``"exact"`` resp. ``"asymptotic"``).
    Returns ``(U, p_greater, p_less)``.
    """
    shape = x.shape[:-1]
    x, y = x.reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1])
    both = np.concatenate([x, y], axis=-1)
    tied = (np.diff(np.sort(both, axis=-1), axis=-1) == 0).any(axis=-1)
    exact = ~tied & (max(x.shape[-1], y.shape[-1]) <= 8)
    u, p_greater, p_less = np.empty(len(x)), np.empty(len(x)), np.empty(len(x))
    for rows, method in ((exact, "exact"), (~exact, "asymptotic")):
        if rows.any():
            greater = sps.mannwhitneyu(
                x[rows], y[rows], axis=-1, method=method, alternative="greater"
            )
            less = sps.mannwhitneyu(x[rows], y[rows], axis=-1, method=method, alternative="less")
            u[rows], p_greater[rows], p_less[rows] = greater.statistic, greater.pvalue, less.pvalue
    return u.reshape(shape), p_greater.reshape(shape), p_less.reshape(shape)


def pairwise_pvalues(
    values: np.ndarray, test: str = "wilcoxon", one_sided: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised core of :func:`pairwise_tests` over stacks of system×query matrices.

    ``values`` has shape ``(..., systems, queries)``; returns ``(difference, statistic, p)``,
    each of shape ``(..., pairs)`` with pairs in :func:`system_pairs` order.
    """
    if test not in PAIRWISE_TESTS:
        raise InputError(f"unknown test {test!r}; choose one of {', '.join(PAIRWISE_TESTS)}")
    a, b = system_pairs(values.shape[-2])
    x, y = values[..., a, :], values[..., b, :]
    difference = x.mean(axis=-1) - y.mean(axis=-1)
    if test == "mann-whitney":
        statistic, p_greater, p_less = mann_whitney_test(x, y)
    else:
        statistic, p_greater, p_less = _PAIRED[test](x - y)
    if one_sided:
        p = np.where(difference >= 0, p_greater, p_less)
    else:
        p = np.minimum(1.0, 2 * np.minimum(p_greater, p_less))
    return difference, statistic, p


_PAIRED = {"wilcoxon": wilcoxon_signed_rank, "t": paired_t_test, "sign": sign_test}


def pairwise_tests(
    scores: pd.DataFrame,
    test: str = "wilcoxon",
    alpha: float = 0.05,
    one_sided: bool = False,
    correction: str | None = None,
) -> pd.DataFrame:
    """Test every pair of systems of a system×query scores matrix.

    For each pair (a, b), a before b in index order, over the per-query scores ``x`` (of a) and
    ``y`` (of b), ``d = x − y``:

    * ``"wilcoxon"`` – Wilcoxon signed-rank test (:func:`wilcoxon_signed_rank`); statistic T+,
      the rank sum of the queries where a beats b.
    * ``"t"`` – paired t-test (:func:`paired_t_test`); statistic t.
    * ``"sign"`` – sign test (:func:`sign_test`); statistic = number of queries with a > b.
    * ``"mann-whitney"`` – unpaired Mann-Whitney U test (:func:`mann_whitney_test`); U of a.

    The power-and-stability paper (§6) recommends the 1-tailed Wilcoxon test per pair at
    α = 0.01 over Friedman + Tukey HSD. **One-sided convention**: the alternative is that the
    system with the higher mean is better, i.e. ``a > b`` when ``difference ≥ 0`` and
    ``a < b`` otherwise, so ``p`` is the one-tailed p-value in the direction of the observed
    difference.

    ``correction`` is a :func:`statsmodels.stats.multitest.multipletests` method name
    (``"holm"``, ``"bonferroni"``, ``"fdr_bh"``, ...) applied over all pairs; ``p`` is then the
    adjusted p-value. ``significant`` is ``p < alpha`` (or the correction's rejection).

    Returns a DataFrame with columns ``system_a, system_b, difference, statistic, p,
    significant``, ``difference = mean(x) − mean(y)``, one row per pair.
    """
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha}")
    values = validate_scores(scores)
    difference, statistic, p = pairwise_pvalues(values.to_numpy(), test, one_sided)
    if correction is None:
        significant = p < alpha
    else:
        try:
            significant, p, _, _ = multipletests(p, alpha=alpha, method=correction)
        except ValueError:
            raise InputError(
                f"unknown correction {correction!r} (see statsmodels' multipletests)"
            ) from None
    a, b = system_pairs(len(values))
    return pd.DataFrame(
        {
            "system_a": values.index[a],
            "system_b": values.index[b],
            "difference": difference,
            "statistic": statistic,
            "p": p,
            "significant": np.asarray(significant, dtype=bool),
        }
    )


# ---------------------------------------------------------------------------------------------
# Friedman test and Tukey's HSD on the Friedman mean ranks (the MIREX procedure).


@dataclass(frozen=True)
class Friedman:
    """Friedman test of a system×query matrix (systems = treatments, queries = blocks).

    ``mean_ranks`` – mean over queries of each system's rank among the systems (1 = lowest
    score, ties averaged); ``sigma2`` – the tie-adjusted variance of a rank,
    ``Σ_ij (r_ij − (k+1)/2)² / (n(k−1))`` (= k(k+1)/12 without ties); ``statistic`` –
    ``Q = n Σ_j (R̄_j − (k+1)/2)² / σ²`` (the tie-corrected Friedman χ², k − 1 df); ``p``.
    """

    statistic: float
    p: float
    mean_ranks: pd.Series
    sigma2: float
    n_queries: int


def friedman_ranks(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean ranks and tie-adjusted rank variance of stacks of ``(..., systems, queries)``.

    Systems are ranked within each query (axis −2, average ranks for ties). Returns
    ``(mean_ranks (..., systems), sigma2 (...))``; see :class:`Friedman` for the formulas.
    """
    k, n = values.shape[-2:]
    ranks = sps.rankdata(values, axis=-2)
    sigma2 = ((ranks - (k + 1) / 2) ** 2).sum(axis=(-2, -1)) / (n * (k - 1))
    return ranks.mean(axis=-1), sigma2


def friedman(scores: pd.DataFrame) -> Friedman:
    """Friedman's rank test over queries, as MIREX runs it (the power-and-stability paper, §4 and
    §6).

    ``Q = n Σ_j (R̄_j − (k+1)/2)² / σ²`` is χ²-distributed with k − 1 degrees of freedom;
    equal to :func:`scipy.stats.friedmanchisquare` with every system as one sample.
    """
    values = validate_scores(scores)
    k, n = values.shape
    mean_ranks, sigma2 = friedman_ranks(values.to_numpy())
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic = n * ((mean_ranks - (k + 1) / 2) ** 2).sum() / sigma2
    statistic = float(np.nan_to_num(statistic))  # every query ties all systems
    return Friedman(
        statistic=statistic,
        p=float(sps.chi2.sf(statistic, k - 1)),
        mean_ranks=pd.Series(mean_ranks, index=values.index, name="mean_rank"),
        sigma2=float(sigma2),
        n_queries=n,
    )


def tukey_critical_value(n_systems: int, alpha: float) -> float:
    """``q_{α; k, ∞}``: the upper-α quantile of the studentized range of k means, ∞ df."""
    return float(sps.studentized_range.ppf(1 - alpha, n_systems, np.inf))


def friedman_tukey_decisions(
    values: np.ndarray, alpha: float = 0.05
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Vectorised core of :func:`friedman_tukey` over stacks of ``(..., systems, queries)``.

    Returns ``(rank_difference, q, significant)`` of shape ``(..., pairs)`` where
    ``q = |R̄_a − R̄_b| / √(σ²/n)`` and ``significant = q > q_{α; k, ∞}``.
    """
    k, n = values.shape[-2:]
    mean_ranks, sigma2 = friedman_ranks(values)
    a, b = system_pairs(k)
    rank_difference = mean_ranks[..., a] - mean_ranks[..., b]
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.abs(rank_difference) / np.sqrt(sigma2 / n)[..., None]
    q = np.nan_to_num(q)  # σ² = 0: every query ties all systems
    return rank_difference, q, q > tukey_critical_value(k, alpha)


def friedman_tukey(scores: pd.DataFrame, alpha: float = 0.05) -> pd.DataFrame:
    """Friedman test + Tukey's HSD on the Friedman mean ranks, all system pairs (MIREX's FT).

    The power-and-stability paper §4, §6: MIREX compares all k(k−1)/2 pairs at once, with
    an experiment-wide level α. The difference of mean ranks ``R̄_a − R̄_b`` has standard error
    ``√(2σ²/n)``; the pair is significant when the studentized range
    ``q = |R̄_a − R̄_b| / √(σ²/n)`` exceeds ``q_{α; k, ∞}``; ``p = P(Q_{k,∞} ≥ q)``
    (:func:`scipy.stats.studentized_range`). Without ties this is the Nemenyi test of
    scikit-posthocs' ``posthoc_nemenyi_friedman``.

    Returns the columns of :func:`pairwise_tests` (``difference`` = difference of mean
    scores, ``statistic`` = q) plus ``rank_difference``.
    """
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha}")
    values = validate_scores(scores)
    matrix = values.to_numpy()
    rank_difference, q, significant = friedman_tukey_decisions(matrix, alpha)
    a, b = system_pairs(len(values))
    means = matrix.mean(axis=1)
    return pd.DataFrame(
        {
            "system_a": values.index[a],
            "system_b": values.index[b],
            "difference": means[a] - means[b],
            "statistic": q,
            "p": sps.studentized_range.sf(q, len(values), np.inf),
            "significant": significant,
            "rank_difference": rank_difference,
        }
    )


def scores_matrices(long: pd.DataFrame, source: str = "scores") -> dict[str, pd.DataFrame]:
    """Pivot a long table ``system, query, measure, score`` into one matrix per measure.

    Systems and queries keep their order of first appearance. Raises :class:`InputError` on a
    duplicated (system, query, measure) or a cell missing from a measure's matrix.
    """
    missing = [c for c in LONG_COLUMNS if c not in long.columns]
    if missing:
        raise InputError(f"{source}: missing column(s) {', '.join(missing)}")
    long = long.astype({"system": str, "query": str, "measure": str})
    duplicated = long.duplicated(["system", "query", "measure"])
    if duplicated.any():
        row = long[duplicated].iloc[0]
        raise InputError(
            f"{source}: system {row['system']!r}, query {row['query']!r}, measure "
            f"{row['measure']!r} appears more than once"
        )
    score = pd.to_numeric(long["score"], errors="coerce")
    if score.isna().any():
        bad = long.loc[score.isna(), "score"].iloc[0]
        raise InputError(f"{source}: score {bad!r} is not a number")
    long = long.assign(score=score)
    matrices = {}
    for measure, group in long.groupby("measure", sort=False):
        matrix = group.pivot(index="system", columns="query", values="score")
        matrix = matrix.loc[group["system"].unique(), group["query"].unique()]
        matrix.index.name, matrix.columns.name = "system", "query"
        matrices[measure] = validate_scores(matrix.rename_axis(index="system"))
    return matrices


def read_scores(path: str | Path) -> dict[str, pd.DataFrame]:
    """Read a scores file into ``{measure: system×query matrix}``.

    Accepted layouts:

    * long CSV ``system,query,measure,score`` (what ``crowdprefs evaluate --format csv``
      writes), or a JSON list of such records;
    * wide CSV: first column the system, one column per query; the measure is named after the
      file (its stem).
    """
    path = Path(path)
    if not path.exists():  # anything else (a folder, a named pipe): read_text says what it is
        raise InputError(f"{path}: no such scores file")
    text, _ = read_text(path, "scores file")
    if path.suffix.lower() == ".json":
        try:
            records = json.loads(text)
        except json.JSONDecodeError as error:
            raise InputError(f"{path}: not valid JSON ({error})") from None
        if isinstance(records, dict):
            records = records.get("scores", records)
        if not isinstance(records, list):
            raise InputError(f"{path}: expected a list of system/query/measure/score records")
        return scores_matrices(pd.DataFrame.from_records(records), str(path))
    table = csv_frame(text, path)
    if {c.strip().lower() for c in table.columns} >= set(LONG_COLUMNS):
        table.columns = [c.strip().lower() for c in table.columns]
        return scores_matrices(table, str(path))
    if table.shape[1] < 2:
        raise InputError(
            f"{path}: expected columns system,query,measure,score or a system column followed "
            "by one column per query"
        )
    wide = table.set_index(table.columns[0])
    wide.index.name, wide.columns.name = "system", "query"
    numbers = wide.apply(pd.to_numeric, errors="coerce")
    bad = numbers.isna().to_numpy() & (wide != "").to_numpy()
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise InputError(f"{path}: line {i + 2}: score {wide.iat[i, j]!r} is not a number")
    return {path.stem: validate_scores(numbers)}
