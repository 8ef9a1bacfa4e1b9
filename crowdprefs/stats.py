"""Significance tests over a system×query score matrix.

A *scores matrix* is a :class:`pandas.DataFrame` with one row per system (index = system name),
one column per query and one measure's score in each cell (e.g. AG@5 of system *s* on query *q*).

* :func:`pairwise_tests` – a paired test (Wilcoxon signed-rank, paired t, sign) or the unpaired
  Mann-Whitney U test for every pair of systems, optionally with a multiple-comparison
  correction; the per-pair procedure compared in seed ``001_fc06e1f368add5b9.txt`` (§4–5).
* :func:`read_scores` – reads the scores interchange file (long CSV/JSON written by
  ``crowdprefs evaluate``, or a wide CSV) into one scores matrix per measure.
"""

from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps
from statsmodels.stats.multitest import multipletests

from .errors import InputError

PAIRWISE_TESTS = ("wilcoxon", "t", "sign", "mann-whitney")
LONG_COLUMNS = ("system", "query", "measure", "score")


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
    pairs = np.array(list(combinations(range(n_systems), 2)), dtype=np.intp).reshape(-1, 2)
    return pairs[:, 0], pairs[:, 1]


def _directed(test, x: np.ndarray, y: np.ndarray, direction: np.ndarray, one_sided: bool):
    """Run ``test(x, y, alternative=...)`` along the last axis, one alternative per row.

    Two-sided: ``alternative="two-sided"`` for every row. One-sided: ``"greater"`` where
    ``direction`` is true (observed mean difference ≥ 0) and ``"less"`` elsewhere.
    """
    if not one_sided:
        return test(x, y, "two-sided")
    statistic = np.empty(x.shape[0])
    p = np.empty(x.shape[0])
    for mask, alternative in ((direction, "greater"), (~direction, "less")):
        if mask.any():
            statistic[mask], p[mask] = test(x[mask], y[mask], alternative)
    return statistic, p


def _wilcoxon(x, y, alternative):
    result = sps.wilcoxon(x - y, axis=-1, alternative=alternative)
    return result.statistic, result.pvalue


def _paired_t(x, y, alternative):
    result = sps.ttest_rel(x, y, axis=-1, alternative=alternative)
    return result.statistic, result.pvalue


def _mann_whitney(x, y, alternative):
    result = sps.mannwhitneyu(x, y, axis=-1, alternative=alternative)
    return result.statistic, result.pvalue


def sign_test(d: np.ndarray, alternative: str = "two-sided") -> tuple[np.ndarray, np.ndarray]:
    """Sign test of paired differences ``d`` along the last axis (ties, ``d == 0``, dropped).

    Statistic ``k`` = number of positive differences among the ``n`` non-zero ones; under H0
    ``k ~ Binomial(n, 1/2)``. p-values: ``greater`` = P(K ≥ k), ``less`` = P(K ≤ k),
    ``two-sided`` = min(1, 2·P(K ≤ min(k, n − k))) (equal to :func:`scipy.stats.binomtest`).
    A row without any non-zero difference gets ``p = 1``.
    """
    k = (d > 0).sum(axis=-1)
    n = k + (d < 0).sum(axis=-1)
    if alternative == "greater":
        p = sps.binom.sf(k - 1, n, 0.5)
    elif alternative == "less":
        p = sps.binom.cdf(k, n, 0.5)
    else:
        p = np.minimum(1.0, 2 * sps.binom.cdf(np.minimum(k, n - k), n, 0.5))
    return k.astype(float), np.where(n > 0, p, 1.0)


def _sign(x, y, alternative):
    return sign_test(x - y, alternative)


_TESTS = {"wilcoxon": _wilcoxon, "t": _paired_t, "sign": _sign, "mann-whitney": _mann_whitney}


def pairwise_tests(
    scores: pd.DataFrame,
    test: str = "wilcoxon",
    alpha: float = 0.05,
    one_sided: bool = False,
    correction: str | None = None,
) -> pd.DataFrame:
    """Test every pair of systems of a system×query scores matrix.

    For each pair (a, b), a before b in index order, over the per-query scores ``x`` (of a) and
    ``y`` (of b):

    * ``"wilcoxon"`` – Wilcoxon signed-rank test of ``d = x − y`` (zero differences dropped,
      scipy's default exact/normal choice); statistic as :func:`scipy.stats.wilcoxon` reports it
      (min(T+, T−) two-sided, T+ one-sided).
    * ``"t"`` – paired t-test, ``t = mean(d) / (sd(d) / √n)``.
    * ``"sign"`` – sign test (:func:`sign_test`); statistic = number of queries with a > b.
    * ``"mann-whitney"`` – unpaired Mann-Whitney U test of ``x`` against ``y``; statistic U of a.

    Seed ``001_fc06e1f368add5b9.txt`` (§4) compares the 1-tailed Wilcoxon test per pair with
    Friedman + Tukey HSD. **One-sided convention**: the alternative is that the system with the
    higher mean is better, i.e. ``a > b`` when ``difference ≥ 0`` and ``a < b`` otherwise, so
    ``p`` is the one-tailed p-value in the direction of the observed difference.

    ``correction`` is a :func:`statsmodels.stats.multitest.multipletests` method name
    (``"holm"``, ``"bonferroni"``, ``"fdr_bh"``, ...) applied over all pairs; ``p`` is then the
    adjusted p-value. ``significant`` is ``p < alpha`` (or the correction's rejection).

    Returns a DataFrame with columns ``system_a, system_b, difference, statistic, p,
    significant``, ``difference = mean(x) − mean(y)``, one row per pair.
    """
    if test not in _TESTS:
        raise InputError(f"unknown test {test!r}; choose one of {', '.join(PAIRWISE_TESTS)}")
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha}")
    values = validate_scores(scores)
    matrix = values.to_numpy()
    a, b = system_pairs(matrix.shape[0])
    x, y = matrix[a], matrix[b]
    difference = x.mean(axis=1) - y.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        statistic, p = _directed(_TESTS[test], x, y, difference >= 0, one_sided)
    p = np.nan_to_num(np.asarray(p, dtype=float), nan=1.0)  # a pair of identical rows
    if correction is None:
        significant = p < alpha
    else:
        try:
            significant, p, _, _ = multipletests(p, alpha=alpha, method=correction)
        except ValueError:
            raise InputError(
                f"unknown correction {correction!r} (see statsmodels' multipletests)"
            ) from None
    return pd.DataFrame(
        {
            "system_a": values.index[a],
            "system_b": values.index[b],
            "difference": difference,
            "statistic": np.asarray(statistic, dtype=float),
            "p": p,
            "significant": np.asarray(significant, dtype=bool),
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
    if not path.is_file():
        raise InputError(f"{path}: no such scores file")
    if path.suffix.lower() == ".json":
        try:
            records = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise InputError(f"{path}: not valid JSON ({error})") from None
        if isinstance(records, dict):
            records = records.get("scores", records)
        if not isinstance(records, list):
            raise InputError(f"{path}: expected a list of system/query/measure/score records")
        return scores_matrices(pd.DataFrame.from_records(records), str(path))
    try:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as error:
        raise InputError(f"{path}: not a readable CSV ({error})") from None
    if {c.strip().lower() for c in table.columns} >= set(LONG_COLUMNS):
        table.columns = [c.strip().lower() for c in table.columns]
        return scores_matrices(table, str(path))
    wide = table.set_index(table.columns[0])
    wide.index.name, wide.columns.name = "system", "query"
    numbers = wide.apply(pd.to_numeric, errors="coerce")
    bad = numbers.isna().to_numpy() & (wide != "").to_numpy()
    if bad.any():
        i, j = np.argwhere(bad)[0]
        raise InputError(f"{path}: line {i + 2}: score {wide.iat[i, j]!r} is not a number")
    return {path.stem: validate_scores(numbers)}
