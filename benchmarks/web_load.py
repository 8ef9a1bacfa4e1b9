"""Load test of the web crowd on loopback: simulated judges answer a live campaign concurrently,
on SQLite and PostgreSQL, with one server process or several.

For each configuration (an engine and a number of server workers: ``--configs sqlite:1
postgresql:1 postgresql:4``), each number of judges (``--judges 50 200 500``) and each behaviour
(``think``: judges who spend ``--think 15-25`` seconds on each question, like people;
``hammer``: judges who answer without a pause), a fresh project is served by ``crowdprefs serve
--workers N`` on 127.0.0.1 with ``[web] advance`` on, and the judges (one HTTP client each,
in one asyncio loop: :func:`crowdprefs.web.judges.run_judges`) open their invitation, take a
question, download its clips as a browser preloads them, and post their answer. The collection
is sized from the number of judges (one question per judge in the first batch, at least ten
pairs) so that batches complete during the run: a run stops once ``--batches`` batches were
aggregated and the next one built (or the campaign ends, or ``--seconds`` pass). PostgreSQL is
a throwaway cluster of Debian's ``postgresql`` on a Unix socket in a temporary folder, durable
as deployed (``fsync`` on; SQLite commits with ``synchronous=FULL``).

Measured per run: answers per second; p50/p95/p99 of the answer post, of the hand-out
(``POST /next`` and the question page) and of the clip downloads; the *longest stall*: the
slowest of the home page (no store call) asked every 0.1 s during the run (:class:`Probe`),
how long a process's event loop left a request waiting; 503 "come back in a minute" pages
(refusals, retried, not errors); errors (HTTP ≥ 500 but 503, failed connections); CPU
seconds per answer of the server's processes (from ``/proc``) and of PostgreSQL's; the judges'
own CPU (one process: when it nears one core, the client is the bottleneck); the load average
at the end; and, as the baseline measured in the same run, ``GET /healthz`` latency from as
many concurrent clients.
Checked afterwards in the store (an ``AssertionError`` otherwise): every answer the server
accepted is stored, once, and nothing else; no pair has more answers than it wants, nor two from
one judge; each aggregated batch's pairs have exactly theirs.

``--kill``: under load, ``kill -9`` the server (with several workers: the worker using the most
CPU) when half of the first batch was answered and again when its last answer is posted (the
batch advance then runs); a server of one process is started again on its port. Judges retry
what failed; the checks above must still hold, and a batch must complete after the last kill.

``--json`` ends with one line of JSON: each run's figures named
``{engine}{workers}_{judges}_{behaviour}_{figure}`` (e.g. ``postgresql4_500_hammer_answer_p95_s``,
``sqlite1_200_think_errors``), times in seconds.

    python benchmarks/web_load.py [--configs sqlite:1 postgresql:1 postgresql:4]
        [--judges 50 200 500] [--behaviours think hammer] [--think 15-25] [--answers 3]
        [--batches 2] [--seconds 300] [--kill] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import glob
import json
import math
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import wave
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import numpy as np
import pandas as pd

from crowdprefs.campaign.project import Project, Settings, init_project
from crowdprefs.demo import make_collection
from crowdprefs.io import write_lists
from crowdprefs.web import assign
from crowdprefs.web.judges import (
    Behaviour,
    JudgeReport,
    ServerProcess,
    run_judges,
    simulated_oracle,
)
from crowdprefs.web.security import new_token

QUERY_SIZE = 11
"""Candidates per query: a first batch of ten pairs per query."""
CLIP_FILES = 12
"""Distinct clip files (every one is probed when the project is made): candidates share them."""
PAUSE = 1.0
"""Seconds a judge waits before trying again after a 503, an error or "no question is free"."""


@dataclass(frozen=True)
class Config:
    """Where the campaign lives and how many processes serve it."""

    engine: str
    workers: int

    @classmethod
    def parse(cls, text: str) -> Config:
        engine, _, workers = text.partition(":")
        if engine not in ("sqlite", "postgresql") or not workers.isdigit() or int(workers) < 1:
            raise argparse.ArgumentTypeError(
                f"a configuration is ENGINE:WORKERS with ENGINE sqlite or postgresql, got {text!r}"
            )
        return cls(engine, int(workers))

    def __str__(self) -> str:
        return f"{self.engine}{self.workers}"


def think_range(text: str) -> tuple[float, float]:
    """``LOW-HIGH`` seconds, ``0 <= LOW <= HIGH``."""
    low, _, high = text.partition("-")
    try:
        bounds = float(low), float(high or low)
    except ValueError:
        bounds = (-1.0, -1.0)
    if not 0 <= bounds[0] <= bounds[1]:
        raise argparse.ArgumentTypeError(f"--think takes LOW-HIGH seconds, got {text!r}")
    return bounds


def write_clips(folder: Path, count: int, seconds: float = 1.0, rate: int = 16_000) -> list[Path]:
    """``count`` short mono WAV tones (distinct pitches), the clips the judges download."""
    folder.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(seconds * rate)) / rate
    paths = []
    for k in range(count):
        samples = (0.3 * 32767 * np.sin(2 * np.pi * (220 + 40 * k) * t)).astype("<i2")
        path = folder / f"clip{k:02d}.wav"
        with wave.open(str(path), "wb") as handle:
            handle.setnchannels(1)
            handle.setsampwidth(2)
            handle.setframerate(rate)
            handle.writeframes(samples.tobytes())
        paths.append(path)
    return paths


def make_project(folder: Path, judges: int, answers: int, database: str | None) -> Path:
    """A project with clips whose first batch asks about one question per judge, served with
    ``[web] advance`` (the server builds and publishes each batch)."""
    queries = math.ceil(judges / ((QUERY_SIZE - 1) * answers))
    candidates, truth = make_collection(sizes=(QUERY_SIZE,) * queries)
    clips = [p.relative_to(folder) for p in write_clips(folder / "clips", CLIP_FILES)]
    position = candidates.groupby("query").cumcount().to_numpy()
    candidates = candidates.assign(
        audio=[str(clips[1 + k % (CLIP_FILES - 1)]) for k in position], query_audio=str(clips[0])
    )
    candidates.to_csv(folder / "candidates.csv", index=False)
    write_lists(truth, folder / "truth.qrel", tag="truth")
    settings = Settings(
        answers_per_pair=answers,
        reward=0.0,
        sections={"simulated": {"truth": "../truth.qrel"}, "web": {"advance": True}},
    )
    root = folder / "project"
    init_project(root, folder / "candidates.csv", settings=settings, database=database).close()
    return root


@dataclass(frozen=True)
class Cluster:
    """A running PostgreSQL cluster: the folder of its socket, and its main process."""

    folder: Path
    pid: int

    def new_database(self, name: str) -> str:
        """The address of a new, empty database ``name`` of the cluster."""
        import psycopg

        with psycopg.connect(host=str(self.folder), user="postgres", autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://postgres@/{name}?host={self.folder}"


@contextlib.contextmanager
def postgres_cluster() -> Iterator[Cluster]:
    """A throwaway cluster of Debian's PostgreSQL on a Unix socket in a temporary folder (as
    ``tests/postgres.py`` starts one, but durable as deployed: ``fsync`` on), run by the
    ``postgres`` user when this runs as root; stopped and removed afterwards."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not found:
        sys.exit("error: PostgreSQL is not installed (apt-get install postgresql)")
    tools = Path(found[-1]).parent
    folder = Path(tempfile.mkdtemp(prefix="web-load-pg-"))
    owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
    if owner:
        shutil.chown(folder, "postgres", "postgres")
    data = folder / "data"
    options = f"-k {folder} -c listen_addresses='' -c max_connections=400"
    try:
        for command in (
            ["initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8"],
            ["pg_ctl", "-D", data, "-o", options, "-l", folder / "log", "-w", "start"],
        ):
            subprocess.run(
                [*owner, tools / command[0], *command[1:]], check=True, capture_output=True
            )
        yield Cluster(folder, int((data / "postmaster.pid").read_text().split()[0]))
    finally:
        stop = [tools / "pg_ctl", "-D", data, "-m", "immediate", "stop"]
        subprocess.run([*owner, *stop], capture_output=True)
        shutil.rmtree(folder, ignore_errors=True)


def process_tree(pid: int) -> list[int]:
    """``pid`` and its descendants, from ``/proc`` (those that exit meanwhile are skipped)."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        with contextlib.suppress(OSError):
            for children in Path(f"/proc/{current}/task").glob("*/children"):
                todo.extend(int(c) for c in children.read_text().split())
    return found


def _times(pid: int) -> tuple[float, float]:
    """A process's own CPU seconds and those of its reaped children (``/proc/PID/stat``)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    tick = os.sysconf("SC_CLK_TCK")
    return (utime + stime) / tick, (cutime + cstime) / tick


def cpu_seconds(pid: int) -> float:
    """CPU seconds spent by ``pid``'s process tree: the living, and the exited they reaped."""
    return sum(sum(_times(p)) for p in process_tree(pid))


def busiest_child(pid: int) -> int:
    """The child of ``pid`` that has used the most CPU (a server worker)."""
    children = [p for p in process_tree(pid)[1:] if _cmdline(p).count("resource_tracker") == 0]
    return max(children, key=lambda p: _times(p)[0])


def _cmdline(pid: int) -> str:
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/cmdline").read_text()
    return ""


def baseline(url: str, clients: int, requests: int) -> list[float]:
    """Latencies of the ``200`` answers to ``GET /healthz`` from ``clients`` concurrent
    clients, ``requests`` each."""
    latencies: list[float] = []

    async def one(client: httpx.AsyncClient) -> None:
        for _ in range(requests):
            started = time.perf_counter()
            if (await client.get("/healthz")).status_code == 200:
                latencies.append(time.perf_counter() - started)

    async def main() -> None:
        tls = ssl.create_default_context()
        pool = [httpx.AsyncClient(base_url=url, timeout=60.0, verify=tls) for _ in range(clients)]
        try:
            await asyncio.gather(*(one(c) for c in pool))
        finally:
            await asyncio.gather(*(c.aclose() for c in pool))

    asyncio.run(main())
    return latencies


class Probe(threading.Thread):
    """Asks the server for its home page (no store call) every :data:`PROBE_EVERY` seconds
    while the judges answer; the slowest answer is the run's *longest stall*: how long the
    server's event loop left a request unanswered (a store call on the loop holds up every
    request of that process)."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.latencies = url, list[float]()
        self.stop = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=60.0) as client:
            while not self.stop.wait(PROBE_EVERY):
                started = time.perf_counter()
                with contextlib.suppress(httpx.TransportError):
                    client.get("/")
                    self.latencies.append(time.perf_counter() - started)


PROBE_EVERY = 0.1
"""Seconds between two probes of the home page (:class:`Probe`)."""


def batch_progress(project: Project) -> tuple[int, int]:
    """Batches aggregated, and batches built."""
    batches = project.store.batches()
    return int((batches["status"] == "aggregated").sum()), len(batches)


def check(root: Path, report: JudgeReport) -> dict[str, int]:
    """What must hold after a run, whatever happened during it; ``AssertionError`` otherwise."""
    with Project(root) as project:
        pairs = project.store.pairs(columns=["pair_id", "iteration", "answers_wanted"])
        answers = project.store.answers(include_rejected=True)
        batches = project.store.batches()
    accepted = pd.Index(report.accepted)
    stored = pd.Index(answers["assignment_id"])
    per_pair = answers.groupby("pair_id").size().reindex(pairs["pair_id"], fill_value=0)
    wanted = pairs.set_index("pair_id")["answers_wanted"]
    done = pairs["iteration"].isin(batches["iteration"][batches["status"] == "aggregated"])
    counts = {
        "stored": len(answers),
        "lost": int((~accepted.isin(stored)).sum()),
        "unacknowledged": int((~stored.isin(accepted)).sum()),
        "duplicated": int(stored.duplicated().sum() + accepted.duplicated().sum()),
        "same_judge": int(answers.duplicated(["pair_id", "worker_id"]).sum()),
        "overfilled": int((per_pair > wanted).sum()),
        "short_aggregated": int((per_pair[done.to_numpy()] != wanted[done.to_numpy()]).sum()),
        "batches": int((batches["status"] == "aggregated").sum()),
    }
    broken = {k: v for k, v in counts.items() if k not in ("stored", "batches") and v}
    assert not broken, f"the store does not match what the judges were told: {broken}"
    return counts


def percentiles(values: list[float], name: str) -> dict[str, float]:
    """p50/p95/p99 of ``values`` (seconds) as ``{name}_p50_s`` ... (NaN when empty)."""
    found = np.percentile(values, [50, 95, 99]) if values else [math.nan] * 3
    return {f"{name}_p{q}_s": float(v) for q, v in zip((50, 95, 99), found, strict=True)}


class Killer(threading.Thread):
    """Kills the server with -9 as the judges' accepted answers reach each of ``at``; a server
    of one process is started again (``kills`` and the batches built at the last kill are
    kept)."""

    def __init__(self, server: ServerProcess, workers: int, report: JudgeReport, at: list[int]):
        super().__init__(daemon=True)
        self.server, self.workers, self.report, self.at = server, workers, report, at
        self.kills: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        for threshold in self.at:
            while self.report.answers < threshold:
                if self.stop.wait(0.02):
                    return
            if self.workers == 1:
                self.server.kill()
                self.kills.append(f"server at {self.report.answers} answers")
                self.server.start()
            else:
                pid = busiest_child(self.server.process.pid)
                os.kill(pid, signal.SIGKILL)
                self.kills.append(f"worker {pid} at {self.report.answers} answers")


def load_test(
    folder: Path,
    config: Config,
    judges: int,
    *,
    think: tuple[float, float] = (0.0, 0.0),
    database: str | None = None,
    database_pid: int | None = None,
    answers: int = 3,
    batches: int = 2,
    max_seconds: float = 300.0,
    kill: bool = False,
) -> dict[str, float]:
    """One run (see the module's docstring): its figures, after the store's checks held."""
    root = make_project(folder, judges, answers, database)
    oracle = simulated_oracle(root)
    behaviour = Behaviour(think=think, clips=True, pause=PAUSE)
    report = JudgeReport()
    with Project(root) as project:
        tokens = [token for _, token in assign.invite(project, judges)]
    with Project(root) as watched, ServerProcess(root, new_token(), config.workers) as server:
        first = int(watched.store.pairs(1, columns=["answers_wanted"])["answers_wanted"].sum())
        floor = baseline(server.url, judges, 3)
        killer = Killer(server, config.workers, report, [first // 2, first] if kill else [])
        killed_at: list[int] = []  # batches aggregated when each kill was seen

        def enough() -> bool:
            aggregated, built = batch_progress(watched)
            if len(killer.kills) > len(killed_at):
                killed_at.append(aggregated)
            after_kills = not killer.is_alive() and aggregated > max(killed_at, default=-1)
            return aggregated >= batches and built > aggregated and after_kills

        server_cpu, database_cpu = cpu_seconds(server.process.pid), _cpu(database_pid)
        client_cpu, started = time.process_time(), time.perf_counter()
        killer.start()
        probe = Probe(server.url)
        probe.start()
        run_judges(
            server.url,
            tokens,
            oracle,
            watch=enough,
            max_seconds=max_seconds,
            behaviour=behaviour,
            report=report,
        )
        elapsed = time.perf_counter() - started
        killer.stop.set()
        probe.stop.set()
        killer.join()
        probe.join()
        client_cpu = time.process_time() - client_cpu
        server_cpu = cpu_seconds(server.process.pid) - server_cpu
        if killer.kills and config.workers == 1:
            server_cpu = math.nan  # the first server's CPU went with it
        database_cpu = _cpu(database_pid) - database_cpu
        final = batch_progress(watched)
    counts = check(root, report)
    kinds = pd.Series([e.split(" /")[0] for e in report.errors], dtype=object).value_counts()
    if len(kinds):
        print(f"  errors: {', '.join(f'{n} {k}' for k, n in kinds.items())}", file=sys.stderr)
    if kill:
        assert len(killer.kills) == 2, f"the server was killed {len(killer.kills)} times of 2"
        assert final[0] > killed_at[-1], "no batch completed after the last kill"
    per_answer = max(report.answers, 1)
    return {
        "answers": report.answers,
        "seconds": elapsed,
        "rate": report.answers / elapsed,
        **percentiles(report.latencies, "answer"),
        **percentiles(report.handouts, "handout"),
        **percentiles(report.clips, "clip"),
        **percentiles(floor, "healthz"),
        **percentiles(probe.latencies, "probe"),
        "stall_s": max(probe.latencies, default=math.nan),
        "answer_max_s": max(report.latencies, default=math.nan),
        "busy": report.busy,
        "errors": len(report.errors),
        "refused": len(report.refused),
        "batches": counts["batches"],
        "lost": counts["lost"],
        "overfilled": counts["overfilled"],
        "kills": len(killer.kills),
        "server_cpu_per_answer_s": server_cpu / per_answer,
        "database_cpu_per_answer_s": database_cpu / per_answer if database_pid else math.nan,
        "client_cpu_cores": client_cpu / elapsed,
        "load_average": os.getloadavg()[0],
    }


def _cpu(pid: int | None) -> float:
    return cpu_seconds(pid) if pid else 0.0


HEADER = (
    f"{'config':<12} {'judges':>6} {'who':<6} {'answers':>7} {'/s':>6} "
    f"{'answer p50/p95/p99 ms':>22} {'hand-out p50/p95/p99':>21} {'healthz p95':>11} "
    f"{'clip p95':>8} {'probe p95':>9} {'stall':>6} {'503':>5} {'err':>4} {'4xx':>4} "
    f"{'batches':>7} {'server ms CPU/ans':>17} {'db':>5} "
    f"{'client':>6} {'load':>5}"
)


def row(config: Config, judges: int, who: str, f: dict[str, float]) -> str:
    """One line of the table: times in ms."""

    def ms(name: str) -> str:
        return "/".join(f"{1000 * f[f'{name}_p{q}_s']:.0f}" for q in (50, 95, 99))

    db = f"{1000 * f['database_cpu_per_answer_s']:.1f}"
    return (
        f"{f'{config.engine} x{config.workers}':<12} {judges:>6} {who:<6} {f['answers']:>7} "
        f"{f['rate']:>6.1f} {ms('answer'):>22} {ms('handout'):>21} "
        f"{1000 * f['healthz_p95_s']:>11.0f} {1000 * f['clip_p95_s']:>8.0f} "
        f"{1000 * f['probe_p95_s']:>9.0f} "
        f"{1000 * f['stall_s']:>6.0f} {f['busy']:>5} {f['errors']:>4} {f['refused']:>4} "
        f"{f['batches']:>7} "
        f"{1000 * f['server_cpu_per_answer_s']:>17.1f} {db:>5} {f['client_cpu_cores']:>6.2f} "
        f"{f['load_average']:>5.1f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--configs",
        nargs="+",
        type=Config.parse,
        default=[Config("sqlite", 1), Config("postgresql", 1), Config("postgresql", 4)],
        metavar="ENGINE:WORKERS",
    )
    parser.add_argument("--judges", nargs="+", type=int, default=[50, 200, 500])
    parser.add_argument(
        "--behaviours", nargs="+", choices=["think", "hammer"], default=["think", "hammer"]
    )
    parser.add_argument(
        "--think", type=think_range, default=(15.0, 25.0), help="seconds per question, LOW-HIGH"
    )
    parser.add_argument("--answers", type=int, default=3, help="answers per pair")
    parser.add_argument("--batches", type=int, default=2, help="batches to complete per run")
    parser.add_argument("--seconds", type=float, default=300.0, help="longest run, in seconds")
    parser.add_argument("--kill", action="store_true", help="kill -9 the server under load")
    parser.add_argument(
        "--json", action="store_true", help="End with one line of JSON: the figures measured."
    )
    args = parser.parse_args(argv)
    if min(args.judges) < 1 or args.answers < 1 or args.batches < 1 or args.seconds <= 0:
        parser.error("--judges, --answers and --batches must be positive, --seconds above 0")
    refused = [c for c in args.configs if c.engine == "sqlite" and c.workers > 1]
    if refused:
        parser.error(f"{refused[0].engine}:{refused[0].workers}: SQLite is served by one worker")
    figures: dict[str, float] = {}
    print(HEADER, flush=True)
    with contextlib.ExitStack() as stack:
        cluster = None
        if any(c.engine == "postgresql" for c in args.configs):
            cluster = stack.enter_context(postgres_cluster())
        for config, judges, who in (
            (c, j, b) for c in args.configs for j in args.judges for b in args.behaviours
        ):
            think = args.think if who == "think" else (0.0, 0.0)
            with tempfile.TemporaryDirectory() as folder:
                database, pid = None, None
                if config.engine == "postgresql":
                    assert cluster is not None
                    database = cluster.new_database(f"web_load_{len(figures)}")
                    pid = cluster.pid
                found = load_test(
                    Path(folder),
                    config,
                    judges,
                    think=think,
                    database=database,
                    database_pid=pid,
                    answers=args.answers,
                    batches=args.batches,
                    max_seconds=args.seconds,
                    kill=args.kill,
                )
            print(row(config, judges, who, found), flush=True)
            figures |= {f"{config}_{judges}_{who}_{k}": v for k, v in found.items()}
    print(
        f"every run: no accepted answer lost or duplicated, no pair over-filled"
        f"{', the campaign went on after each kill -9' if args.kill else ''}; "
        f"think {args.think[0]:g}-{args.think[1]:g} s"
    )
    if args.json:
        print(json.dumps({k: None if v != v else v for k, v in figures.items()}))  # NaN: null
    return 0


if __name__ == "__main__":
    sys.exit(main())
