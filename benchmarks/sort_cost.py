"""Sort cost: pairs asked as a share of all n(n−1)/2 pairs, n = 4 … 200, simulated crowd.

For each n, 20 synthetic queries whose hidden truth has groups of about three candidates are
sorted to the end by the modified QuickSort with the default simulated crowd and Mann-Whitney
aggregation (10 answers per pair); the baseline is asking every pair.

    python benchmarks/sort_cost.py [--sizes 4 8 16 23 50 100 200] [--queries 20]
"""

from __future__ import annotations

import argparse
import json
import zlib

import numpy as np
import pandas as pd

from crowdprefs.campaign.aggregate import count_answers, verdicts
from crowdprefs.campaign.sorting import initial_order, replay
from crowdprefs.quality.crowd_model import (
    CrowdModel,
    WorkerPool,
    latent_similarity,
    simulate_answers,
)


def sort_query(query: str, truth: pd.DataFrame, pool, model, seed: int) -> tuple[int, int]:
    """Sort one query to the end in memory; returns (pairs asked, iterations)."""
    documents = truth["document"].tolist()
    order = initial_order(documents, seed, query)
    similarity = latent_similarity(truth)
    known: dict[tuple[str, str], int] = {}
    asked, iterations, next_id = 0, 0, 0
    state = replay(order, known)
    while not state.closed:
        pairs = pd.DataFrame(state.needed, columns=["x", "y"])
        pairs["query"], pairs["a_is_x"], pairs["answers_wanted"] = query, 1, 10
        offset = zlib.crc32(query.encode()) % 10**6 * 10**4  # stable across processes
        pairs["pair_id"] = np.arange(next_id, next_id + len(pairs)) + offset
        next_id += len(pairs)
        answers = simulate_answers(pairs, similarity, pool, model, seed)
        counts = count_answers(answers).reindex(pairs["pair_id"], fill_value=0)
        verdict, _ = verdicts(counts["more"], counts["equal"], counts["less"])
        known.update(zip(zip(pairs["x"], pairs["y"], strict=True), verdict.tolist(), strict=True))
        asked += len(pairs)
        iterations += 1
        state = replay(order, known)
    return asked, iterations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[4, 8, 16, 23, 50, 100, 200])
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument(
        "--json", action="store_true", help="End with one line of JSON: the figures measured."
    )
    args = parser.parse_args()
    model = CrowdModel()
    pool = WorkerPool.draw(model, 1)
    rng = np.random.default_rng(1)
    figures = {}
    print(f"{'n':>4} {'all pairs':>9} {'asked':>8} {'share':>6} {'iterations':>10}")
    for n in args.sizes:
        asked, iterations = [], []
        for q in range(args.queries):
            query = f"n{n}-q{q}"
            groups = np.sort(rng.integers(1, max(2, n // 3) + 1, n))
            truth = pd.DataFrame(
                {"query": query, "document": [f"{query}-d{i}" for i in range(n)], "group": groups}
            )
            a, it = sort_query(query, truth, pool, model, seed=q)
            asked.append(a)
            iterations.append(it)
        total = n * (n - 1) / 2
        figures[f"share_{n}"] = float(np.mean(asked) / total)
        print(
            f"{n:>4} {total:>9.0f} {np.mean(asked):>8.1f} "
            f"{np.mean(asked) / total:>6.1%} {np.mean(iterations):>10.1f}"
        )
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
