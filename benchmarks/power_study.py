"""Benchmark: the full power study of the power-and-stability paper on MIREX 2011 AMS, vectorised vs
a scipy loop.

Workload (issue 6): 20 subset sizes (5…100) × 500 stratified samples (one at 100), 4 measures
(AG@5, nDCG@5, ANDCG@5, ADR@5 on the Fine judgments) × 2 procedures (FT = Friedman + Tukey HSD
at α = 0.05, W1 = 1-tailed Wilcoxon at α = 0.01), 18 systems × 100 queries.

Baseline, in the same run: a plain loop that, per subset and measure, calls
``scipy.stats.friedmanchisquare`` and ``scipy.stats.rankdata`` (Tukey's critical value computed
once) and ``scipy.stats.wilcoxon`` once per system pair (exact/asymptotic method chosen per
pair as crowdprefs does, which is also scipy's fast path). It is timed on
``--baseline-samples`` subsets of every size and extrapolated linearly to the full study.
Prints both CPU times (steadier than wall time on a shared machine), their ratio, the
agreement of the decisions on the subsets both ran and the peak RSS; then the result tables
(markdown) quoted in docs/statistics.md.

    python benchmarks/power_study.py [--data ../shared/data/mirex2011-ams] [--samples 500]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats as sps

from crowdprefs.evaluation.power import (
    PROCEDURES,
    default_sizes,
    power_study,
    read_strata,
    stability_study,
    stratified_subsets,
)
from crowdprefs.evaluation.stats import tukey_critical_value

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "mirex2011-ams"
K = 5


def mirex_measures(folder: Path) -> dict[str, pd.DataFrame]:
    """AG@5, nDCG@5 (log base 2), ANDCG@5 and ADR@5 (the power-and-stability paper §3) per system ×
    query."""
    ids = {"system": str, "query": str, "document": str}  # ids like 0001e0 are not numbers
    runs = pd.read_csv(folder / "runs.txt", sep="\t", names=list(ids), dtype=ids)
    names = ["query", "document", "gain"]
    judged = pd.read_csv(folder / "judgments.txt", sep="\t", names=names, dtype=ids)
    runs = runs.assign(rank=runs.groupby(["system", "query"]).cumcount())
    runs = runs[runs["rank"] < K].merge(judged, "left")
    gains = runs.pivot_table("gain", ["system", "query"], "rank", fill_value=0)
    keys = gains.index
    gains = gains.reindex(columns=range(K), fill_value=0).to_numpy(float)
    ideal = (
        judged.sort_values("gain", ascending=False)
        .groupby("query")
        .gain.apply(lambda g: np.pad(g.to_numpy(float)[:K], (0, max(0, K - len(g)))))
    )
    ideal = np.stack(ideal.loc[keys.get_level_values("query")].to_numpy())  # (rows, K)
    discount = np.maximum(1.0, np.log2(np.arange(1, K + 1)))
    dcg = np.cumsum(gains / discount, axis=1)
    idcg = np.cumsum(ideal / discount, axis=1)
    ndcg_at = np.divide(dcg, idcg, out=np.zeros_like(dcg), where=idcg > 0)
    # ADR: A_i = judged documents with gain ≥ the i-th ideal gain; count retrieved ones in top i.
    allowed = gains[:, None, :] >= ideal[:, :, None]  # [row, i, rank]
    upto = np.tri(K, dtype=bool)[None]  # rank ≤ i
    adr = ((allowed & upto).sum(axis=2) / np.arange(1, K + 1)).mean(axis=1)
    table = pd.DataFrame(
        {
            "AG@5": gains.mean(axis=1),
            "nDCG@5": ndcg_at[:, -1],
            "ANDCG@5": ndcg_at.mean(axis=1),
            "ADR@5": adr,
        },
        index=keys,
    )
    return {measure: table[measure].unstack("query") for measure in table}


def markdown(frame: pd.DataFrame) -> str:
    """A GitHub markdown table (pandas' to_markdown needs the optional tabulate)."""
    rows = frame.astype(object).to_numpy()
    cells = [list(map(str, frame.columns))] + [list(map(str, row)) for row in rows]
    lines = ["| " + " | ".join(row) + " |" for row in cells]
    lines.insert(1, "|" + "---|" * len(frame.columns))
    return "\n".join(lines)


def baseline(values: np.ndarray, a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per subset: FT and W1 decisions with plain scipy calls (one Wilcoxon per pair)."""
    k = values.shape[0]
    pairs = np.transpose(np.triu_indices(k, 1))
    q_crit = tukey_critical_value(k, 0.05)
    ft, w1 = [], []
    for row in a:
        subset = values[:, row]
        n = subset.shape[1]
        sps.friedmanchisquare(*subset)
        ranks = sps.rankdata(subset, axis=0)
        sigma2 = ((ranks - (k + 1) / 2) ** 2).sum() / (n * (k - 1))
        mean_ranks = ranks.mean(axis=1)
        ft.append([abs(mean_ranks[i] - mean_ranks[j]) / np.sqrt(sigma2 / n) > q_crit
                   for i, j in pairs])  # fmt: skip
        decisions = []
        for i, j in pairs:
            x, y = subset[i], subset[j]
            if np.all(x == y):
                decisions.append(False)
                continue
            d = x - y
            # scipy's "auto" would pick a (slow, random) permutation test for tied samples of
            # up to 13 queries; fix the method per pair as crowdprefs does (exact when neither
            # zeros nor ties, n ≤ 50; normal approximation otherwise).
            untied = len(np.unique(np.abs(d[d != 0]))) == len(d) and len(d) <= 50
            result = sps.wilcoxon(
                d,
                alternative="greater" if x.mean() >= y.mean() else "less",
                method="exact" if untied else "asymptotic",
                correction=False,
            )
            decisions.append(result.pvalue < 0.01)
        w1.append(decisions)
    return np.array(ft), np.array(w1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--baseline-samples", type=int, default=3)
    parser.add_argument("--stability", action="store_true", help="also run the stability study")
    parser.add_argument(
        "--json", action="store_true", help="End with one line of JSON: the figures measured."
    )
    args = parser.parse_args()

    matrices = mirex_measures(args.data)
    strata = read_strata(args.data / "metadata.txt")  # genre
    n_queries = next(iter(matrices.values())).shape[1]
    sizes = default_sizes(n_queries)
    print(f"{len(matrices)} measures, {matrices['AG@5'].shape[0]} systems × {n_queries} queries")

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start, cpu = time.perf_counter(), time.process_time()
    table = power_study(matrices, strata, sizes, args.samples, ("FT", "W1"), seed=0)
    wall, vectorised = time.perf_counter() - start, time.process_time() - cpu
    rss_after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"vectorised power study: {wall:.1f} s wall, {vectorised:.1f} s CPU, "
          f"peak RSS {rss_after:.0f} MiB (before: {rss_before:.0f} MiB)")  # fmt: skip

    # Baseline on a few subsets of every size, extrapolated to the full sample counts.
    codes = pd.factorize(strata.loc[matrices["AG@5"].columns])[0]
    rng = np.random.default_rng(1)
    estimated, agree, total = 0.0, 0, 0
    for size in sizes:
        count = 1 if size == n_queries else args.samples
        drawn = min(args.baseline_samples, count)
        a, _ = stratified_subsets(codes, size, drawn, rng)
        spent = 0.0
        for matrix in matrices.values():
            values = matrix.to_numpy()
            t0 = time.process_time()
            ft, w1 = baseline(values, a)
            spent += time.process_time() - t0
            stack = values[:, a].transpose(1, 0, 2)
            for reference, name in ((ft, "FT"), (w1, "W1")):
                _, ours = PROCEDURES[name].decide(stack)
                agree += int((ours == reference).sum())
                total += reference.size
        estimated += spent * count / drawn
    print(f"scipy loop (extrapolated from {args.baseline_samples} subsets per size): "
          f"{estimated:.0f} s CPU")  # fmt: skip
    print(f"ratio (CPU time): {estimated / vectorised:.0f}× faster")
    print(
        f"decisions equal to the scipy loop on the shared subsets: {agree}/{total} "
        f"({100 * agree / total:.2f}%)"
    )

    print("\nPower (% of the 153 system pairs significant), mean over samples:\n")
    wide = table.pivot_table("power", "size", ["measure", "procedure"], sort=False)
    wide.columns = [f"{m} {p}" for m, p in wide.columns]
    print(
        markdown((100 * wide).round(1).loc[[10, 20, 30, 40, 50, 60, 70, 80, 90, 100]].reset_index())
    )

    if args.json:
        systems = matrices["AG@5"].shape[0]
        full = table[(table["measure"] == "AG@5") & (table["size"] == n_queries)]
        significant = full.set_index("procedure")["power"] * systems * (systems - 1) / 2
        figures = {
            "cpu_s": vectorised,
            "wall_s": wall,
            "speedup": estimated / vectorised,
            "agree": agree / total,
            "pairs": systems * (systems - 1) // 2,
            "ft_full": round(significant["FT"]),
            "w1_full": round(significant["W1"]),
            "load_average": os.getloadavg()[0],
        }
        print(json.dumps(figures))

    if args.stability:
        start = time.perf_counter()
        stable = stability_study(matrices, strata, None, args.samples, ("FT", "W1"), seed=0)
        print(f"\nstability study: {time.perf_counter() - start:.1f} s\n")
        columns = ["power", "conflicts", "stable", "swaps", "significant_swaps", "conflict_swaps"]
        at = stable[stable["size"].isin([10, 20, 30, 40, 50])].copy()
        at[columns] = (100 * at[columns]).round(2)
        print(markdown(at[["measure", "procedure", "size", *columns]]))


if __name__ == "__main__":
    main()
