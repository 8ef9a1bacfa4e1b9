"""Big real-sized files: `crowd-model fit` near-linear in workers; `audit --json/--html` at scale.

Targets (issue 32, part 5): `crowd-model fit` on 60,000 answers by 6,000 workers (each worker
about 10 answers) costs at most twice the CPU of the same answers by 3 workers, with and without
the bootstrap; `audit --json` and `audit --html` on 125,000 answers each cost at most twice the
plain tables (`audit --answers FILE`), and the HTML page stays small (its worker table and
non-transitive triples capped, the full tables written as CSV beside it).

Both files are generated (seeded) in the recorded-answers format (a results CSV,
:func:`crowdprefs.results_file.write_results`):

* the fit file: ``--pairs`` pairs (x against a pivot in groups 1–5 of 40-candidate queries, 10
  answers each, A/B sides random) answered through :func:`crowdprefs.quality.crowd_model.
  choice_shares` by workers with their own noise, "equal" band and lean to B (5% careless),
  every worker answering about as often; the 3-worker file is the same
  answers, each pair's 9 split into HITs of 3 answered by workers 0, 1 and 2;
* the audit file: queries of 16 candidates whose 120 pairs are each answered 3 times by random
  workers among 6,000 (random verdicts: tens of thousands of non-transitive triples, like the
  issue's real file), ``--audit-answers`` answers in all.

Every measured command runs as its own process (``python -m crowdprefs ...``, stdout to
/dev/null); its CPU seconds (user + system) and peak RSS come from the kernel's rusage of the
child (``os.wait4``), so the figures barely move with the machine's load (printed beside them).

    python benchmarks/big_files.py [--workers 6000] [--pairs 6667] [--bootstrap 20]
                                   [--audit-answers 125000] [--keep DIR] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from crowdprefs.quality.crowd_model import choice_shares
from crowdprefs.results_file import FRAME_COLUMNS, write_results

FIT_PER_PAIR = 9
"""Answers per pair of the fit file (a multiple of 3: its 3-worker twin splits each pair's
answers into HITs of 3, a worker answering a HIT once)."""
INSTALLED = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
START = pd.Timestamp("2024-03-01", tz="UTC")


def _frame(
    pair: np.ndarray,
    query: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    worker: np.ndarray,
    choice: np.ndarray,
    a_is_x: np.ndarray,
    iteration: np.ndarray,
    seconds: np.ndarray,
) -> pd.DataFrame:
    """An answers frame (:data:`crowdprefs.results_file.FRAME_COLUMNS`) of coded answers."""
    n = len(pair)
    created = START + pd.to_timedelta(iteration * 30 + pair % 7, unit="h")
    score = np.select([choice == "A", choice == "B"], [1, -1], 0) * np.where(a_is_x, 1, -1)
    return pd.DataFrame(
        {
            "iteration": pd.array(iteration + 1, dtype="Int64"),
            "pair_id": pair,
            "hit_id": "h" + pair.astype(str),
            "created_at": created,
            "max_assignments": np.bincount(pair)[pair],
            "reward": 0.02,
            "query": "q" + query.astype(str),
            "x": "d" + x.astype(str),
            "y": "d" + y.astype(str),
            "a_is_x": a_is_x.astype(int),
            "kind": "sort",
            "expected": np.nan,
            "pivot_known": True,
            "worker_id": "w" + worker.astype(str),
            "assignment_id": "a" + np.arange(n).astype(str),
            "status": "approved",
            "choice": choice,
            "score": score.astype(float),
            "seconds": seconds,
            "listen_seconds": np.nan,
            "accepted_at": created + pd.to_timedelta(seconds * 40, unit="s"),
            "submitted_at": created + pd.to_timedelta(seconds * 41, unit="s"),
            "background": "",
            "comment": "",
        }
    )[list(FRAME_COLUMNS)]


def fit_answers(pairs: int, workers: int, seed: int = 1) -> pd.DataFrame:
    """The fit file's answers (module doc): ``pairs`` × 9 answers by distinct workers of
    ``workers``."""
    rng = np.random.default_rng(seed)
    per = FIT_PER_PAIR
    query = np.arange(pairs) // 39
    group_x = rng.integers(1, 6, pairs)
    group_y = rng.integers(1, 6, pairs)
    noise = np.exp(rng.normal(np.log(0.8), 0.5, workers))
    band = np.exp(rng.normal(np.log(0.9), 0.5, workers))
    bias = rng.normal(0.2, 0.3, workers)
    careless = rng.random(workers) < 0.05
    pair = np.repeat(np.arange(pairs), per)
    start = rng.integers(0, workers, pairs)[pair]
    stride = rng.integers(1, workers // per + 1, pairs)[pair]
    worker = (start + np.tile(np.arange(per), pairs) * stride) % workers  # distinct per pair
    a_is_x = rng.random(len(pair)) < 0.5
    gap_a = (group_y - group_x)[pair] * np.where(a_is_x, 1, -1)
    shares = choice_shares(noise[worker], band[worker], bias[worker], gap_a)
    shares[careless[worker]] = 1 / 3
    drawn = (rng.random(len(pair))[:, None] > np.cumsum(shares, axis=1)).sum(axis=1)
    choice = np.array(["A", "equal", "B"], dtype=object)[np.minimum(drawn, 2)]
    iteration = (np.arange(pairs) * 6 // pairs)[pair]
    seconds = rng.lognormal(np.log(12.0), 0.4, workers)[worker] * rng.lognormal(0, 0.3, len(pair))
    return _frame(
        pair, query[pair], (np.arange(pairs) % 39)[pair] + 1, np.zeros(len(pair), dtype=int),
        worker, choice, a_is_x, iteration, seconds.round(1),
    )  # fmt: skip


def audit_answers(answers: int, seed: int = 2) -> pd.DataFrame:
    """The audit file's answers (module doc): every pair of 16-candidate queries, 3 answers by
    distinct workers of 6,000 (a few busy ones first)."""
    rng = np.random.default_rng(seed)
    per, size, workers = 3, 16, 6000
    first, second = np.triu_indices(size, 1)
    queries = -(-answers // (per * len(first)))
    pairs = queries * len(first)
    pair = np.repeat(np.arange(pairs), per)[:answers]
    query = pair // len(first)
    choice = rng.choice(np.array(["A", "equal", "B"], dtype=object), len(pair), p=[0.4, 0.2, 0.4])
    start = (rng.zipf(1.6, pairs) % workers)[pair]
    stride = rng.integers(1, workers // per, pairs)[pair]
    worker = (start + np.tile(np.arange(per), pairs)[: len(pair)] * stride) % workers
    iteration = (query * 4 // queries).astype(int)
    seconds = rng.lognormal(np.log(12.0), 0.5, len(pair)).round(1)
    within = pair % len(first)
    return _frame(
        pair, query, first[within], second[within], worker, choice,
        rng.random(len(pair)) < 0.5, iteration, seconds,
    )  # fmt: skip


def run(args: list[str]) -> dict[str, float]:
    """Run ``python -m crowdprefs ARGS`` (stdout discarded): CPU seconds, wall seconds, peak
    RSS (MiB) of the child."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "crowdprefs", *map(str, args)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=INSTALLED | {"COLUMNS": "120"},
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    error = child.stderr.read().decode() if child.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"crowdprefs {' '.join(map(str, args))} failed:\n{error}")
    return {
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "wall_s": wall,
        "rss_mib": usage.ru_maxrss / 1024,
    }


def show(name: str, figures: dict[str, float]) -> None:
    print(
        f"  {name:<38} CPU {figures['cpu_s']:7.1f} s  wall {figures['wall_s']:7.1f} s  "
        f"peak RSS {figures['rss_mib']:6.0f} MiB",
        flush=True,
    )


def fit_study(folder: Path, pairs: int, workers: int, bootstrap: int) -> dict:
    many, few = folder / f"fit-{workers}w.csv", folder / "fit-3w.csv"
    if not many.exists() or not few.exists():
        answers = fit_answers(pairs, workers)
        write_results(answers, many)
        k = np.tile(np.arange(FIT_PER_PAIR), pairs)
        few_hits = answers["hit_id"] + "-" + (k // 3).astype(str)
        write_results(answers.assign(worker_id="w" + (k % 3).astype(str), hit_id=few_hits), few)
    print(f"crowd-model fit, {pairs * FIT_PER_PAIR:,} answers ({os.getloadavg()[0]:.2f} load):")
    figures = {}
    for label, path in ((f"{workers} workers", many), ("3 workers", few)):
        for boot in (0, bootstrap):
            name = f"{label}, bootstrap {boot}"
            out = folder / "fit.toml"
            figures[name] = run(["crowd-model", "fit", path, "--bootstrap", boot, "-o", out])
            show(name, figures[name])
    for boot in (0, bootstrap):
        ratio = (
            figures[f"{workers} workers, bootstrap {boot}"]["cpu_s"]
            / figures[f"3 workers, bootstrap {boot}"]["cpu_s"]
        )
        figures[f"cpu ratio bootstrap {boot}"] = ratio
        print(f"  fit CPU {workers} workers / 3 workers, bootstrap {boot}: {ratio:.2f}")
    return figures


def audit_study(folder: Path, answers: int) -> dict:
    path = folder / f"audit-{answers}.csv"
    if not path.exists():
        write_results(audit_answers(answers), path)
    print(f"audit --answers, {answers:,} answers ({os.getloadavg()[0]:.2f} load):")
    html = folder / "report.html"
    figures = {
        "tables": run(["audit", "--answers", path]),
        "json": run(["audit", "--answers", path, "--json"]),
        "html": run(["audit", "--answers", path, "--html", html]),
    }
    for name, value in figures.items():
        show(name, value)
    for name in ("json", "html"):
        ratio = figures[name]["cpu_s"] / figures["tables"]["cpu_s"]
        figures[f"{name}/tables cpu"] = ratio
        print(f"  CPU {name} / tables: {ratio:.2f} (≤ 2)")
    sizes = {p.name: p.stat().st_size for p in sorted(folder.glob("report.*"))}
    figures["html_files_bytes"] = sizes
    print("  files: " + ", ".join(f"{n} {s / 2**20:.2f} MiB" for n, s in sizes.items()))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=6000)
    parser.add_argument("--pairs", type=int, default=6667)
    parser.add_argument("--bootstrap", type=int, default=20)
    parser.add_argument("--audit-answers", type=int, default=125_000)
    parser.add_argument("--skip", choices=("fit", "audit"), help="Skip one of the studies.")
    parser.add_argument("--keep", type=Path, help="Keep the generated files in this folder.")
    parser.add_argument(
        "--json", action="store_true", help="End with one line of JSON: the figures measured."
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        figures = {}
        if args.skip != "fit":
            figures["fit"] = fit_study(folder, args.pairs, args.workers, args.bootstrap)
        if args.skip != "audit":
            figures["audit"] = audit_study(folder, args.audit_answers)
    if args.json:
        print(json.dumps(flat(figures)))


def flat(figures: dict, prefix: str = "") -> dict[str, float]:
    """The nested figures as one level, each key a slug of its path (``fit_3_workers_...``)."""
    out: dict[str, float] = {}
    for name, value in figures.items():
        key = re.sub(r"\W+", "_", f"{prefix} {name}").strip("_")
        out |= flat(value, key) if isinstance(value, dict) else {key: value}
    return out


if __name__ == "__main__":
    main()
