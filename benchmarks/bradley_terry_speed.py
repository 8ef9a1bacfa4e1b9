"""The tie-aware Bradley–Terry fit against choix's ILSR and crowd-kit's BradleyTerry, and Fleiss' κ
against statsmodels (issue 32, part 4).

Answers come from the project's simulated crowd (:mod:`crowdprefs.quality.crowd_model`, the
generator the tests use): ``--queries`` queries of ten candidates in up to four true groups of
equally similar candidates (ties), random candidate pairs asked five times each, a pool of
workers of whom ``--careless`` answer at random, plus two robots that always answer "equal".
For each size (10⁴, 10⁵, 10⁶ answers by default) the script times, in CPU seconds of this
process on one BLAS thread:

* ours: :func:`crowdprefs.campaign.bradley_terry.fit_bradley_terry` on every answer at once
  (Davidson ties, worker reliabilities);
* choix ``ilsr_pairwise`` (alpha 0.01) and crowd-kit ``BradleyTerry`` (100 iterations), one call
  per query (both build dense items × items matrices, so one call over all queries' items would
  not fit in memory at 10⁶ answers), on the answers that are not "equal" (neither models ties).
  Each is reported "not installed" when it is missing;

and the mean over queries of Kendall's τ-b between each one's scores and the true groups. Ours
also reports the share of truly equal pairs its groups put together and the mean reliability
it gives careless and honest workers. Growth is the time ratio per ×10 answers. Fleiss' κ is
then timed against ``statsmodels.stats.inter_rater.fleiss_kappa`` on the same counts (best of
five, integer and float counts). Times are CPU seconds; the load average is printed beside them.

    python benchmarks/bradley_terry_speed.py [--sizes 10000 100000 1000000] [--queries 1000]
        [--careless 0.2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
import warnings
from collections.abc import Callable

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits

from crowdprefs.campaign.bradley_terry import fit_bradley_terry
from crowdprefs.quality.agreement import fleiss_kappa
from crowdprefs.quality.crowd_model import (
    CrowdModel,
    WorkerPool,
    latent_similarity,
    simulate_answers,
)

CANDIDATES = 10  # per query
PER_PAIR = 5  # answers per asked pair


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def simulated(queries: int, answers: int, careless: float, seed: int) -> dict[str, np.ndarray]:
    """Coded answers of the simulated crowd: ``first, second, outcome, worker, block`` as
    :func:`fit_bradley_terry` takes them, plus the true ``group`` of every item and the
    ``careless`` / ``honest`` masks over workers."""
    rng = np.random.default_rng(seed)
    truth = pd.DataFrame(
        {
            "query": np.repeat([f"q{k}" for k in range(queries)], CANDIDATES),
            "document": np.tile([f"d{j}" for j in range(CANDIDATES)], queries),
            "group": rng.integers(1, 5, queries * CANDIDATES),
        }
    )
    x, y = np.triu_indices(CANDIDATES, 1)
    asked = max(1, answers // PER_PAIR)
    query = rng.integers(0, queries, asked)
    which = rng.integers(0, len(x), asked)
    pairs = pd.DataFrame(
        {
            "pair_id": np.arange(asked),
            "query": [f"q{k}" for k in query],
            "x": [f"d{j}" for j in x[which]],
            "y": [f"d{j}" for j in y[which]],
            "a_is_x": (rng.random(asked) < 0.5).astype(int),
            "answers_wanted": PER_PAIR,
        }
    )
    model = CrowdModel(workers=300, bots=2, careless_share=careless)
    pool = WorkerPool.draw(model, seed)
    raw = simulate_answers(pairs, latent_similarity(truth), pool, model, seed)
    pair = raw["pair_id"].to_numpy()
    item_x = query[pair] * CANDIDATES + x[which[pair]]
    item_y = query[pair] * CANDIDATES + y[which[pair]]
    a_is_x = pairs["a_is_x"].to_numpy(dtype=bool)[pair]
    choice = raw["choice"].to_numpy()
    worker = pd.Index(pool.ids).get_indexer(raw["worker_id"])
    return {
        "first": np.where(a_is_x, item_x, item_y),
        "second": np.where(a_is_x, item_y, item_x),
        "outcome": np.select([choice == "A", choice == "B"], [1, -1], 0),
        "worker": worker,
        "block": np.repeat(np.arange(queries), CANDIDATES),
        "group": truth["group"].to_numpy(),
        "careless": pool.kind == "careless",
        "honest": pool.kind == "honest",
    }


def kendall_tau(group: np.ndarray, scores: np.ndarray) -> float:
    """Mean over queries of Kendall's τ-b between scores and true groups (1 = most similar)."""
    i, j = np.triu_indices(CANDIDATES, 1)
    truth = np.sign(group[:, j] - group[:, i])  # +1 when i is truly more similar
    found = np.sign(scores[:, i] - scores[:, j])
    pairs_t, pairs_f = (truth != 0).sum(axis=1), (found != 0).sum(axis=1)
    defined = (pairs_t > 0) & (pairs_f > 0)
    tau = (truth * found).sum(axis=1)[defined] / np.sqrt(pairs_t[defined] * pairs_f[defined])
    return float(tau.mean())


def per_query(data: dict[str, np.ndarray], queries: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(winners, losers) of the answers that are not "equal", per query, as local codes."""
    decided = data["outcome"] != 0
    first, second = data["first"][decided], data["second"][decided]
    won = data["outcome"][decided] > 0
    winner, loser = np.where(won, first, second), np.where(won, second, first)
    query = winner // CANDIDATES
    order = np.argsort(query, kind="stable")
    bounds = np.searchsorted(query[order], np.arange(queries + 1))
    return [
        (winner[order[a:b]] % CANDIDATES, loser[order[a:b]] % CANDIDATES)
        for a, b in zip(bounds[:-1], bounds[1:], strict=True)
    ]


def timed(function: Callable[[], np.ndarray]) -> tuple[np.ndarray, float, float]:
    """(result, CPU seconds, wall seconds) on one BLAS thread."""
    with threadpool_limits(1):
        cpu, wall = cpu_seconds(), time.perf_counter()
        result = function()
        return result, cpu_seconds() - cpu, time.perf_counter() - wall


def choix_ilsr(decided: list[tuple[np.ndarray, np.ndarray]]) -> Callable[[], np.ndarray] | None:
    try:
        import choix
    except ImportError:
        return None
    data = [np.column_stack([w, lose]) for w, lose in decided]

    def run() -> np.ndarray:
        scores = np.zeros((len(data), CANDIDATES))
        for k, rows in enumerate(data):
            if len(rows):
                scores[k] = choix.ilsr_pairwise(CANDIDATES, rows, alpha=0.01)
        return scores

    return run


def crowdkit_bt(decided: list[tuple[np.ndarray, np.ndarray]]) -> Callable[[], np.ndarray] | None:
    try:
        from crowdkit.aggregation import BradleyTerry
    except ImportError:
        return None
    frames = [
        pd.DataFrame({"worker": 0, "left": w, "right": lose, "label": w}) for w, lose in decided
    ]

    def run() -> np.ndarray:
        scores = np.zeros((len(frames), CANDIDATES))
        for k, frame in enumerate(frames):
            if len(frame):
                fitted = BradleyTerry(n_iter=100).fit_predict(frame)
                scores[k, fitted.index.to_numpy()] = fitted.to_numpy()
        return scores

    return run


def bradley_terry(sizes: list[int], queries: int, careless: float, seed: int) -> list[dict]:
    rows = []
    for size in sizes:
        data = simulated(queries, size, careless, seed)
        coded = {k: data[k] for k in ("first", "second", "outcome", "worker", "block")}
        coded.update(n_items=len(data["block"]), n_workers=len(data["careless"]))
        fit, cpu, wall = timed(lambda coded=coded: fit_bradley_terry(**coded))
        group = data["group"].reshape(queries, CANDIDATES)
        found = fit.groups.reshape(queries, CANDIDATES)
        i, j = np.triu_indices(CANDIDATES, 1)
        equal = group[:, i] == group[:, j]
        row = {
            "answers": len(data["first"]),
            "ours_cpu": cpu,
            "ours_wall": wall,
            "ours_tau": kendall_tau(group, fit.scores.reshape(queries, CANDIDATES)),
            "ours_ties_found": float((found[:, i] == found[:, j])[equal].mean()),
            "ours_distinct_found": float((found[:, i] != found[:, j])[~equal].mean()),
            "eta_careless": float(fit.reliability[data["careless"]].mean()),
            "eta_honest": float(fit.reliability[data["honest"]].mean()),
            "iterations": fit.iterations,
        }
        decided = per_query(data, queries)
        for name, make in (("choix", choix_ilsr), ("crowdkit", crowdkit_bt)):
            run = make(decided)
            if run is None:
                row.update({f"{name}_cpu": None, f"{name}_wall": None, f"{name}_tau": None})
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                scores, cpu, wall = timed(run)
            row.update(
                {
                    f"{name}_cpu": cpu,
                    f"{name}_wall": wall,
                    f"{name}_tau": kendall_tau(group, scores),
                }
            )
        rows.append(row)
        print(describe(row, rows), flush=True)
    return rows


def seconds(value: float | None) -> str:
    return "not installed" if value is None else f"{value:.2f} s"


def describe(row: dict, rows: list[dict]) -> str:
    growth = ""
    if len(rows) > 1:
        before = rows[-2]
        factor = np.log10(row["answers"] / before["answers"])
        growth = f", growth ×{(row['ours_cpu'] / before['ours_cpu']) ** (1 / factor):.1f} per ×10"
    ratio = f"{row['ours_cpu'] / row['choix_cpu']:.2f}" if row["choix_cpu"] is not None else "n/a"
    taus = ", ".join(
        f"{name} {row[f'{name}_tau']:.3f}"
        for name in ("ours", "choix", "crowdkit")
        if row[f"{name}_tau"] is not None
    )
    return (
        f"{row['answers']:>9,} answers: ours {seconds(row['ours_cpu'])} CPU "
        f"({row['ours_wall']:.2f} s wall, {row['iterations']} Newton steps{growth}); "
        f"choix ILSR {seconds(row['choix_cpu'])}; crowd-kit BT {seconds(row['crowdkit_cpu'])}; "
        f"ours/choix {ratio}\n"
        f"           Kendall τ-b vs truth: {taus}; ours puts {row['ours_ties_found']:.0%} of "
        f"truly equal pairs in one group and {row['ours_distinct_found']:.0%} of the others "
        f"apart; mean η careless {row['eta_careless']:.2f}, honest {row['eta_honest']:.2f}  "
        f"[{load()}]"
    )


def best_of(function: Callable[[], float], budget: float = 0.2) -> float:
    """Best per-call seconds over five rounds of as many calls as fit ``budget`` seconds."""
    started = time.perf_counter()
    function()
    calls = max(1, int(budget / max(time.perf_counter() - started, 1e-7)))
    rounds = []
    for _ in range(5):
        started = time.process_time()
        for _ in range(calls):
            function()
        rounds.append((time.process_time() - started) / calls)
    return min(rounds)


def kappa(seed: int) -> list[dict]:
    try:
        from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss
    except ImportError:
        print("Fleiss κ: statsmodels not installed")
        return []
    rng = np.random.default_rng(seed)
    rows = []
    for units in (10, 1_000, 100_000, 1_000_000):
        counts = rng.multinomial(10, [0.25, 0.5, 0.25], size=units)
        for kind in (np.int64, np.float64):
            table = counts.astype(kind)
            with threadpool_limits(1):
                ours = best_of(lambda table=table: fleiss_kappa(table))
                theirs = best_of(lambda table=table: statsmodels_fleiss(table))
            difference = abs(fleiss_kappa(table) - statsmodels_fleiss(table))
            rows.append(
                {
                    "units": units,
                    "dtype": np.dtype(kind).name,
                    "ours": ours,
                    "statsmodels": theirs,
                    "difference": difference,
                }
            )
            print(
                f"Fleiss κ, {units:>9,} units × 10 ratings ({np.dtype(kind).name}): ours "
                f"{ours * 1e6:,.0f} µs, statsmodels {theirs * 1e6:,.0f} µs "
                f"(statsmodels/ours {theirs / ours:.1f}×), |Δκ| {difference:.0e}",
                flush=True,
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--careless", type=float, default=0.2)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--json", action="store_true", help="End with one line of JSON: the figures measured."
    )
    args = parser.parse_args()
    print(
        f"{args.queries:,} queries × {CANDIDATES} candidates, {args.careless:.0%} careless "
        f"workers of 300 + 2 robots; CPU seconds on one BLAS thread  [{load()}]"
    )
    fits = bradley_terry(sorted(args.sizes), args.queries, args.careless, args.seed)
    kappas = kappa(args.seed)
    if args.json:
        figures = {
            f"at{size}_{key}": value
            for size, row in zip(sorted(args.sizes), fits, strict=True)
            for key, value in row.items()
        }
        if kappas:
            ratios = [row["statsmodels"] / row["ours"] for row in kappas]
            figures |= {
                "kappa_faster_min": min(ratios),
                "kappa_faster_max": max(ratios),
                "kappa_difference": max(row["difference"] for row in kappas),
            }
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
