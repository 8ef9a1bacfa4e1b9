"""Power and stability of an evaluation over query subsets (the power-and-stability paper).

*Power* (§4): for query-subset sizes 5, 10, …, N and R random subsets of each size
(stratified with equal priors, e.g. by genre as in MIREX), the share of system pairs that a
procedure finds significantly different.

*Stability* (§5): for sizes up to N/2, R pairs of **disjoint** stratified subsets, each
evaluated as if it were an independent experiment; a *conflict* is a pair of systems
significant with one subset and not with the other, a *swap* a pair whose difference changes
sign, a *significant swap* one significant with both subsets but in opposite directions.

Procedures (§4, §6): ``FT`` = Friedman + Tukey's HSD on the mean ranks at α = 0.05 (MIREX), ``W1`` =
1-tailed Wilcoxon signed-rank per pair at α = 0.01 (the power-and-stability paper's proposal), and a
few more (:data:`PROCEDURES`). Every subset of one size is evaluated at once: the subset score
matrices are stacked into a ``(subsets, systems, queries)`` array, processed in chunks that bound
memory, with the vectorised tests of :mod:`crowdprefs.evaluation.stats`.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError
from crowdprefs.evaluation.stats import friedman_tukey_decisions, pairwise_pvalues, validate_scores
from crowdprefs.files import Output, read_text, save_figure
from crowdprefs.io import table_problem
from crowdprefs.parallel import SERIAL, Runner
from crowdprefs.progress import make_progress


@dataclass(frozen=True)
class Procedure:
    """A way to decide, for every system pair, the direction and significance of a difference.

    ``test`` is ``"friedman-tukey"`` or a :func:`crowdprefs.evaluation.stats.pairwise_tests` test
    name. Direction: sign of the mean-rank difference for Friedman-Tukey, of the mean-score
    difference otherwise.
    """

    name: str
    test: str
    alpha: float
    one_sided: bool = False
    description: str = ""

    def decide(self, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(direction, significant)``, shape ``(..., pairs)``, of ``(..., systems, queries)``."""
        if self.test == "friedman-tukey":
            difference, _, significant = friedman_tukey_decisions(values, self.alpha)
        else:
            difference, _, p = pairwise_pvalues(values, self.test, self.one_sided)
            significant = p < self.alpha
        return np.sign(difference), significant


PROCEDURES: dict[str, Procedure] = {
    p.name: p
    for p in (
        Procedure("FT", "friedman-tukey", 0.05, description="Friedman + Tukey HSD, α = 0.05"),
        Procedure("W1", "wilcoxon", 0.01, True, "1-tailed Wilcoxon signed-rank, α = 0.01"),
        Procedure("W2", "wilcoxon", 0.05, False, "2-tailed Wilcoxon signed-rank, α = 0.05"),
        Procedure("T1", "t", 0.01, True, "1-tailed paired t-test, α = 0.01"),
        Procedure("S1", "sign", 0.01, True, "1-tailed sign test, α = 0.01"),
    )
}


def get_procedures(names: Sequence[str]) -> list[Procedure]:
    """Look procedures up by name (:data:`PROCEDURES`), raising :class:`InputError` if unknown."""
    unknown = [name for name in names if name not in PROCEDURES]
    if unknown:
        raise InputError(f"unknown procedure {unknown[0]!r}; choose from {', '.join(PROCEDURES)}")
    return [PROCEDURES[name] for name in names]


def read_strata(path: str | Path, column: int | None = None) -> pd.Series:
    """Read ``query → stratum`` from a delimited file (CSV, TSV or whitespace, header optional).

    The first column is the query; the stratum is column ``column`` (1-based) or the last
    one. MIREX's ``metadata.txt`` (document, artist, genre) thus gives the genre.
    """
    path = Path(path)
    if not path.exists():  # anything else (a folder, a named pipe): read_text says what it is
        raise InputError(f"{path}: no such strata file")
    text, _ = read_text(path, "strata file")
    try:
        table = pd.read_csv(io.StringIO(text), sep=None, engine="python", header=None, dtype=str)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise InputError(f"{path}: not a readable table: {table_problem(error)}") from None
    if table.shape[1] < 2:
        raise InputError(f"{path}: needs at least two columns (query, stratum)")
    index = table.shape[1] - 1 if column is None else column - 1
    if not 0 < index < table.shape[1]:
        raise InputError(f"{path}: no column {column} (the file has {table.shape[1]})")
    if str(table.iat[0, 0]).strip().lower() in {"query", "document", "topic"}:
        table = table.iloc[1:]
    strata = table.set_index(0)[index]
    if strata.index.has_duplicates:
        raise InputError(f"{path}: query {strata.index[strata.index.duplicated()][0]!r} repeats")
    return strata.rename_axis("query").rename("stratum")


def validate_study(
    matrices: Mapping[str, pd.DataFrame], strata: pd.Series | None
) -> tuple[np.ndarray, np.ndarray, list[str], list[str]]:
    """Check that all measures share systems and queries and every query has a stratum.

    Returns ``(values (measures, systems, queries), stratum codes per query, systems,
    queries)`` with the queries in the order of the first matrix.
    """
    if not matrices:
        raise InputError("no scores to study")
    first_name, first = next(iter(matrices.items()))
    first = validate_scores(first)
    systems, queries = list(first.index), list(first.columns)
    stacked = []
    for name, matrix in matrices.items():
        matrix = validate_scores(matrix)
        if set(matrix.index) != set(systems) or set(matrix.columns) != set(queries):
            raise InputError(f"measure {name!r} has other systems or queries than {first_name!r}")
        stacked.append(matrix.loc[systems, queries].to_numpy())
    if strata is None:
        codes = np.zeros(len(queries), dtype=np.intp)
    else:
        strata = strata.copy()
        strata.index = strata.index.astype(str)
        missing = [q for q in map(str, queries) if q not in strata.index]
        if missing:
            raise InputError(f"query {missing[0]!r} has no stratum ({len(missing)} missing)")
        codes = pd.factorize(strata.loc[list(map(str, queries))])[0]
    return np.stack(stacked), codes, systems, queries


def _allocate(
    capacity: np.ndarray, size: int, samples: int, rng: np.random.Generator
) -> np.ndarray | None:
    """Equal-prior allocation ``(samples, strata)`` of ``size`` queries, or None if impossible.

    Each stratum gets ⌊size/G⌋; the ``size mod G`` extra queries go one each to strata drawn
    uniformly without replacement among those with room.
    """
    n_strata = capacity.shape[-1]
    base, extra = divmod(size, n_strata)
    room = capacity > base  # (samples, strata) or (strata,)
    if (capacity < base).any() or (room.sum(axis=-1) < extra).any():
        return None
    priority = np.where(room, rng.random((samples, n_strata)), np.inf)
    return base + (priority.argsort(axis=1).argsort(axis=1) < extra)


def stratified_subsets(
    codes: np.ndarray, size: int, samples: int, rng: np.random.Generator, disjoint: bool = False
) -> tuple[np.ndarray, np.ndarray | None]:
    """Draw ``samples`` stratified query subsets of ``size`` queries (indices, sorted per row).

    Equal priors (the power-and-stability paper, §4): each of the G strata gets ⌊size/G⌋ queries and
    the remaining ``size mod G`` go one each to strata drawn uniformly (among those with room);
    within a stratum, queries are drawn uniformly without replacement. With ``disjoint``, a second
    subset of the same size with no common query is drawn per sample (the power-and-stability paper,
    §5), its extra queries from the strata with room left. Returns index arrays ``(a, b)``, each
    ``(samples, size)`` (``b`` is None without ``disjoint``).
    """
    codes = np.asarray(codes)
    counts = np.bincount(codes)
    base = size // len(counts)
    allocation_a = _allocate(counts - (base if disjoint else 0), size, samples, rng)
    allocation_b = None
    if allocation_a is not None and disjoint:
        allocation_b = _allocate(counts - allocation_a, size, samples, rng)
    if allocation_a is None or (disjoint and allocation_b is None):
        raise InputError(
            f"cannot draw {'two disjoint subsets' if disjoint else 'subsets'} of {size} "
            f"queries with equal priors over {len(counts)} strata (smallest: {counts.min()})"
        )
    # A random order of the queries within each stratum, per sample.
    keys = (rng.random((samples, len(codes))), np.broadcast_to(codes, (samples, len(codes))))
    order = np.lexsort(keys)
    start = np.concatenate([[0], np.cumsum(counts)[:-1]])
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.arange(len(codes)) - start[codes[order]], axis=1)
    quota_a = allocation_a[:, codes]  # (samples, queries)
    a = np.nonzero(position < quota_a)[1].reshape(samples, size)
    if allocation_b is None:
        return a, None
    pick_b = (position >= quota_a) & (position < quota_a + allocation_b[:, codes])
    return a, np.nonzero(pick_b)[1].reshape(samples, size)


def default_sizes(n_queries: int, step: int = 5, stability: bool = False) -> list[int]:
    """Subset sizes ``step, 2·step, …`` up to N (power) or N/2 (stability)."""
    top = n_queries // 2 if stability else n_queries
    return list(range(step, top + 1, step)) or [top]


def _chunks(samples: int, pairs: int, size: int, budget: int) -> list[slice]:
    per_sample = max(1, pairs * size)
    step = max(1, budget // per_sample)
    return [slice(i, min(i + step, samples)) for i in range(0, samples, step)]


def _run(
    values: np.ndarray,
    codes: np.ndarray,
    sizes: Sequence[int],
    samples: int,
    procedures: Sequence[Procedure],
    seed: int,
    disjoint: bool,
    budget: int,
    label: str,
    runner: Runner,
) -> dict[tuple[int, int, int], list[np.ndarray]]:
    """Per (measure index, procedure index, size): per-sample decisions summaries.

    The subsets are drawn here, in one stream; each chunk of samples of one size is a task of
    ``runner``, so the result does not depend on where the chunks run."""
    n_measures, n_systems, n_queries = values.shape
    pairs = n_systems * (n_systems - 1) // 2
    rng = np.random.default_rng(seed)
    tasks = []
    for size in sizes:
        count = 1 if size == n_queries else samples
        a, b = stratified_subsets(codes, size, count, rng, disjoint)
        for chunk in _chunks(count, pairs, size, budget):
            tasks.append((size, a[chunk], None if b is None else b[chunk]))
    with make_progress() as progress:
        bar = progress.add_task(f"{label} {runner.where}", total=len(tasks))
        done = runner.map(
            _decide_chunk,
            (values, list(procedures)),
            tasks,
            lambda n: progress.update(bar, completed=n),
        )
    results: dict[tuple[int, int, int], list[np.ndarray]] = {}
    for (size, _, _), summaries in zip(tasks, done, strict=True):
        for (m, p), summary in summaries.items():
            results.setdefault((m, p, size), []).append(summary)
    return results


def _decide_chunk(
    shared: tuple[np.ndarray, list[Procedure]],
    task: tuple[int, np.ndarray, np.ndarray | None],
) -> dict[tuple[int, int], np.ndarray]:
    """One task of :func:`_run`: per (measure, procedure), the summaries of a chunk of samples
    (power: the share of significant pairs; stability: also conflicts and swaps between the
    two disjoint subsets)."""
    values, procedures = shared
    _, a, b = task
    summaries = {}
    for m in range(values.shape[0]):
        subset_a = values[m][:, a].transpose(1, 0, 2)
        subset_b = None if b is None else values[m][:, b].transpose(1, 0, 2)
        for p, procedure in enumerate(procedures):
            direction_a, significant_a = procedure.decide(subset_a)
            if subset_b is None:
                summaries[m, p] = significant_a.mean(axis=1)[:, None]
                continue
            direction_b, significant_b = procedure.decide(subset_b)
            swap = direction_a * direction_b < 0
            summaries[m, p] = np.stack(
                [
                    (significant_a.mean(axis=1) + significant_b.mean(axis=1)) / 2,
                    (significant_a != significant_b).mean(axis=1),
                    swap.mean(axis=1),
                    (swap & significant_a & significant_b).mean(axis=1),
                    (swap & (significant_a != significant_b)).mean(axis=1),
                ],
                axis=1,
            )
    return summaries


def power_study(
    matrices: Mapping[str, pd.DataFrame],
    strata: pd.Series | None = None,
    sizes: Sequence[int] | None = None,
    samples: int = 500,
    procedures: Sequence[str] = ("FT", "W1"),
    seed: int = 0,
    budget: int = 2**21,
    runner: Runner = SERIAL,
) -> pd.DataFrame:
    """Evaluation power per measure, procedure and query-subset size (the power-and-stability paper,
    §4 and §6.1).

    For every size, ``samples`` stratified subsets (one when the size is the whole query set)
    are drawn once and shared by all measures and procedures. ``budget`` bounds the number of
    ``pairs × queries`` cells processed at once (memory); each such chunk is a task of
    ``runner``.

    Returns a tidy DataFrame ``measure, procedure, size, samples, power, power_sd`` where
    ``power`` is the mean over samples of the share of system pairs found significant.
    """
    values, codes, _, queries = validate_study(matrices, strata)
    sizes = list(sizes or default_sizes(len(queries)))
    _check_sizes(sizes, len(queries), samples)
    chosen = get_procedures(procedures)
    results = _run(values, codes, sizes, samples, chosen, seed, False, budget, "power", runner)
    rows = []
    for (m, p, size), parts in results.items():
        share = np.concatenate(parts)[:, 0]
        rows.append(
            (list(matrices)[m], chosen[p].name, size, len(share), share.mean(), share.std())
        )
    return pd.DataFrame(
        rows, columns=["measure", "procedure", "size", "samples", "power", "power_sd"]
    )


def stability_study(
    matrices: Mapping[str, pd.DataFrame],
    strata: pd.Series | None = None,
    sizes: Sequence[int] | None = None,
    samples: int = 500,
    procedures: Sequence[str] = ("FT", "W1"),
    seed: int = 0,
    budget: int = 2**21,
    runner: Runner = SERIAL,
) -> pd.DataFrame:
    """Evaluation stability per measure, procedure and subset size (the power-and-stability paper,
    §5 and §6.2).

    For every size ≤ N/2, ``samples`` pairs of disjoint stratified subsets. Returns a tidy
    DataFrame ``measure, procedure, size, samples, power, conflicts, swaps,
    significant_swaps, conflict_swaps, stable`` (shares of all system pairs, averaged over the
    samples): ``conflicts`` – significant with one subset only; ``swaps`` – the direction
    changes; ``significant_swaps`` – significant with both, opposite directions;
    ``conflict_swaps`` – conflicts that are also swaps; ``stable = power − conflicts``
    (the power-and-stability paper's Table 1).
    """
    values, codes, _, queries = validate_study(matrices, strata)
    sizes = list(sizes or default_sizes(len(queries), stability=True))
    _check_sizes(sizes, len(queries) // 2, samples)
    chosen = get_procedures(procedures)
    results = _run(values, codes, sizes, samples, chosen, seed, True, budget, "stability", runner)
    columns = ["power", "conflicts", "swaps", "significant_swaps", "conflict_swaps"]
    rows = []
    for (m, p, size), parts in results.items():
        summary = np.concatenate(parts)
        rows.append((list(matrices)[m], chosen[p].name, size, len(summary), *summary.mean(axis=0)))
    table = pd.DataFrame(rows, columns=["measure", "procedure", "size", "samples", *columns])
    return table.assign(stable=table.power - table.conflicts)


def _check_sizes(sizes: Sequence[int], top: int, samples: int) -> None:
    if samples < 1:
        raise InputError(f"samples must be at least 1, got {samples}")
    bad = [s for s in sizes if not 2 <= s <= top]
    if bad:
        raise InputError(f"subset size {bad[0]} is outside 2…{top}")


def plot_curves(
    table: pd.DataFrame, value: str, path: str | Path | Output, title: str = ""
) -> Path:
    """Plot ``value`` (a share) against subset size, one panel per procedure, one line per measure,
    like the power-and-stability paper's Figures 1–4; written atomically as PNG/PDF/SVG to
    ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    procedures = list(dict.fromkeys(table.procedure))
    figure, axes = plt.subplots(
        1, len(procedures), figsize=(5 * len(procedures), 3.8), sharey=True, squeeze=False
    )
    for axis, procedure in zip(axes[0], procedures, strict=True):
        for measure, rows in table[table.procedure == procedure].groupby("measure", sort=False):
            axis.plot(rows["size"], 100 * rows[value], marker="o", markersize=3, label=measure)
        axis.set_title(
            f"{procedure}: {PROCEDURES[procedure].description}"
            if procedure in PROCEDURES
            else procedure
        )
        axis.set_xlabel("queries in the subset")
        axis.grid(alpha=0.3)
    axes[0, 0].set_ylabel(f"{value.replace('_', ' ')} (% of system pairs)")
    axes[0, -1].legend()
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    try:
        save_figure(figure, path, dpi=120)
    finally:
        plt.close(figure)
    return Path(path)
