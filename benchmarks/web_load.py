"""Load test of the web crowd on loopback: 50 simulated judges answer one batch concurrently.

A demo-shaped project (11 queries, 118 candidates: batch 1 has 107 pairs) is served by
``crowdprefs serve`` in a child process on 127.0.0.1; 50 judges (one HTTP client each, in one
asyncio loop) follow their invitation links and answer until every pair has its answers. The
run is bounded (``--max-seconds``) and stops by itself. Checks: no answer lost or duplicated,
every pair with exactly the configured number of answers from distinct judges. Prints the
submit latency (p50/p95/p99) and, as the baseline measured in the same run, the latency of
``GET /healthz`` under the same concurrency (the server's floor), and their ratio.

    python benchmarks/web_load.py [--judges 50] [--answers 10] [--max-seconds 300]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from crowdprefs.campaign import driver
from crowdprefs.campaign.project import Project, Settings, init_project
from crowdprefs.crowds.web import WebCrowd
from crowdprefs.demo import make_collection
from crowdprefs.io import write_lists
from crowdprefs.web import assign
from crowdprefs.web.judges import JudgeReport, ServerProcess, run_judges, simulated_oracle
from crowdprefs.web.security import new_token


def make_project(folder: Path, answers: int) -> Path:
    """A demo-shaped project whose first batch is published to the web crowd."""
    candidates, truth = make_collection()
    candidates.to_csv(folder / "candidates.csv", index=False)
    write_lists(truth, folder / "truth.qrel", tag="truth")
    settings = Settings(
        answers_per_pair=answers,
        reward=0.0,
        sections={"simulated": {"truth": "../truth.qrel"}, "web": {"advance": False}},
    )
    with init_project(folder / "project", folder / "candidates.csv", settings=settings) as p:
        driver.next_batch(p)
        driver.publish(p, WebCrowd())
    return folder / "project"


def baseline(url: str, clients: int, requests: int) -> list[float]:
    """Latencies of ``GET /healthz`` from ``clients`` concurrent clients."""
    latencies: list[float] = []

    async def one(client: httpx.AsyncClient) -> None:
        for _ in range(requests):
            started = time.perf_counter()
            (await client.get("/healthz")).raise_for_status()
            latencies.append(time.perf_counter() - started)

    async def main() -> None:
        pool = [httpx.AsyncClient(base_url=url) for _ in range(clients)]
        try:
            await asyncio.gather(*(one(c) for c in pool))
        finally:
            await asyncio.gather(*(c.aclose() for c in pool))

    asyncio.run(main())
    return latencies


def check(root: Path) -> dict[str, int]:
    """Counts that must hold after a complete batch; raises AssertionError otherwise."""
    with Project(root) as project:
        pairs = project.store.pairs(1)
        answers = project.store.answers(1, include_rejected=True)
        open_left = project.store.conn.execute(
            "SELECT COUNT(*) FROM web_assignments WHERE status = 'open'"
        ).fetchone()[0]
        submitted = project.store.conn.execute(
            "SELECT COUNT(*) FROM web_assignments WHERE status = 'submitted'"
        ).fetchone()[0]
    per_pair = answers.groupby("pair_id").size().reindex(pairs["pair_id"], fill_value=0)
    assert (per_pair.to_numpy() == pairs["answers_wanted"].to_numpy()).all(), "pair counts"
    assert answers["assignment_id"].is_unique, "an assignment answered twice"
    assert not answers.duplicated(["pair_id", "worker_id"]).any(), "a judge answered a pair twice"
    assert submitted == len(answers), "an answer lost between post and store"
    return {"pairs": len(pairs), "answers": len(answers), "open_left": int(open_left)}


def load_test(
    folder: Path, judges: int, answers: int, max_seconds: float, figures: dict | None = None
) -> JudgeReport:
    """Run the load test; ``figures`` (when given) receives what it measured."""
    root = make_project(folder, answers)
    with Project(root) as project:
        tokens = [token for _, token in assign.invite(project, judges)]
    oracle = simulated_oracle(root)

    def complete() -> bool:
        with Project(root) as project:
            return project.store.missing_answers(1).empty

    with ServerProcess(root, new_token()) as server:
        floor = baseline(server.url, judges, 10)
        started = time.perf_counter()
        report = run_judges(server.url, tokens, oracle, watch=complete, max_seconds=max_seconds)
        elapsed = time.perf_counter() - started
    counts = check(root)
    lat = np.array(report.latencies) * 1000
    p95, floor95 = np.percentile(lat, 95), np.percentile(np.array(floor) * 1000, 95)
    print(
        f"{judges} judges, {counts['pairs']} pairs x {answers} answers: "
        f"{counts['answers']} answers in {elapsed:.1f} s ({counts['answers'] / elapsed:.1f}/s); "
        f"refused {len(report.refused)}; no answer lost or duplicated; every pair exact"
    )
    print(
        f"submit latency ms: p50 {np.percentile(lat, 50):.1f}  p95 {p95:.1f}  "
        f"p99 {np.percentile(lat, 99):.1f}  (n={len(lat)})"
    )
    print(
        f"baseline GET /healthz at the same concurrency: p95 {floor95:.1f} ms; "
        f"submit/healthz p95 ratio {p95 / floor95:.2f}"
    )
    if figures is not None:
        figures |= {
            "answers": counts["answers"],
            "seconds": elapsed,
            "rate": counts["answers"] / elapsed,
            "p50_s": np.percentile(lat, 50) / 1000,
            "p95_s": p95 / 1000,
            "p99_s": np.percentile(lat, 99) / 1000,
            "healthz_p95_s": floor95 / 1000,
            "ratio": p95 / floor95,
            "load_average": os.getloadavg()[0],
        }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judges", type=int, default=50)
    parser.add_argument("--answers", type=int, default=10, help="answers per pair")
    parser.add_argument("--max-seconds", type=float, default=300.0)
    parser.add_argument(
        "--json", action="store_true", help="End with one line of JSON: the figures measured."
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        figures: dict = {}
        load_test(Path(folder), args.judges, args.answers, args.max_seconds, figures)
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
