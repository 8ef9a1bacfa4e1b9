"""The CLI at scale, as a user lives it: whole `crowdprefs` processes on large projects.

Targets (the redesign issue): `status` and `next` on a 1,000-query × 50-candidate project
after three iterations ≤ 3× the start-up of a bare typer app with as many commands;
aggregating a whole first batch of 10,000 queries × 50 candidates (490,000 pairs × 10
answers) ≤ 10 s and ≤ 1 GB peak; then `status`, `next` (building batch 2) and
`export --partial` on that 10,000-query project, each ≤ 2 GB peak; every figure on SQLite, or
with ``--postgresql ADDRESS`` on PostgreSQL. `next` is measured twice: building batch 4 (on a
fresh copy of the project each run, the work a user waits for) and returning the open batch.
Timings are wall clock
on a shared machine: compare ratios taken in one run. Each command's CPU seconds (user +
system, from the kernel's rusage of the child) are printed beside its wall time: they barely
move when other programs share the machine, so they compare runs made under different loads.

Each project is built with the library (init, then iterations with the simulated crowd) in a
spawned child process; every measured command then runs as its own process
(`python -m crowdprefs ...`), timed by wall clock, its peak resident memory read from the
kernel's rusage of that child (`os.wait4`). The parent stays small and never builds: Linux
starts a child's peak RSS at its parent's size when it spawns, so measuring from the process
that built a 10,000-query project reported the builder's gigabytes as every command's peak.
The baseline is a bare typer app's `--help`, run the same way in the same run.

    python benchmarks/cli_scale.py [--queries 1000] [--big-queries 10000] [--candidates 50]
                                   [--repeat 3] [--keep DIR] [--postgresql ADDRESS]

With ``--keep DIR`` the projects are built once into DIR (the 10,000-query one takes minutes)
and every later run measures fresh copies of them. A project kept by an older crowdprefs is
migrated by the first command that opens it: open it once before measuring.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from multiprocessing import get_context
from pathlib import Path

import psycopg

BARE_TYPER = textwrap.dedent(
    """
    import typer
    app = typer.Typer(add_completion=False)
    for i in range({commands}):
        app.command(f"command-{{i}}")(lambda directory: None)
    app()
    """
)


INSTALLED = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
"""The children's environment: byte code cached, as an installed package has it (``pip``
compiles it at install); without, each process would compile crowdprefs' modules again."""


def run_process(command: list[str]) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MB) of one child process (output discarded)."""
    started = time.perf_counter()
    child = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=INSTALLED
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        error = child.stderr.read().decode(errors="replace").strip().splitlines()
        raise SystemExit(f"{' '.join(command[2:])} failed: {error[-1] if error else '?'}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def median_run(command: list[str], repeat: int) -> tuple[float, float, float]:
    runs = [run_process(command) for _ in range(repeat)]
    return (
        statistics.median(w for w, _, _ in runs),
        statistics.median(c for _, c, _ in runs),
        max(m for _, _, m in runs),
    )


def build(
    root: Path,
    queries: int,
    candidates: int,
    iterations: int,
    aggregate_last: bool,
    database: str | None = None,
) -> int:
    """A project of ``queries`` × ``candidates`` after ``iterations`` batches answered by the
    simulated crowd (10 answers a pair); the last batch left collected but not aggregated
    unless ``aggregate_last``; its state in the PostgreSQL ``database`` when given. Returns
    how many pairs the last batch has."""
    import pandas as pd

    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Settings, init_project
    from crowdprefs.crowds.simulated import SimulatedCrowd
    from crowdprefs.quality.crowd_model import CrowdModel, random_truth

    frame = pd.DataFrame(
        [(f"q{q:05d}", f"q{q:05d}-c{c:03d}") for q in range(queries) for c in range(candidates)],
        columns=["query", "document"],
    ).assign(audio=None, query_audio=None)
    project = init_project(root, frame, settings=Settings(answers_per_pair=10), database=database)
    crowd = SimulatedCrowd(random_truth(frame, 1), CrowdModel(), seed=1)
    for done in range(iterations):
        driver.next_batch(project)
        driver.publish(project, crowd)
        driver.collect(project, crowd)
        if done < iterations - 1 or aggregate_last:
            driver.aggregate(project)
    with project:
        return len(project.store.pairs(iterations))


class Server:
    """A PostgreSQL server where the benchmark makes databases (``--postgresql ADDRESS``, a
    role allowed to create databases; its password, if any, from PGPASSWORD)."""

    def __init__(self, address: str) -> None:
        self.address = address

    def _admin(self):
        return psycopg.connect(self.address, autocommit=True)

    def database(self, name: str, template: str | None = None) -> str:
        """A new database ``name`` (a copy of ``template`` when given, checkpointed where the
        role may); its address."""
        with self._admin() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            if template is None:
                admin.execute(f'CREATE DATABASE "{name}"')
            else:  # a copy written out before the command measured starts, not during it
                admin.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}" STRATEGY FILE_COPY')
                with contextlib.suppress(psycopg.errors.InsufficientPrivilege):
                    admin.execute("CHECKPOINT")
        from sqlalchemy.engine import make_url

        return make_url(self.address).set(database=name).render_as_string()

    def drop(self, name: str) -> None:
        with self._admin() as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def copy_built(
    kept: Path, work: Path, *spec: object, server: Server | None = None
) -> tuple[Path, int]:
    """A fresh copy at ``work`` of the project kept at ``kept`` and how many pairs its last
    batch has; the project is first built there (:func:`build` with ``spec``, in a spawned
    child process) when absent. On a ``server``, the state is a database named after ``kept``
    and the copy a new database made from it (``CREATE DATABASE … TEMPLATE``)."""
    done = kept.with_name(kept.name + ".built")
    kept_db = f"cli_scale_{kept.name}".replace("-", "_")
    if not done.exists():
        shutil.rmtree(kept, ignore_errors=True)
        database = None if server is None else server.database(kept_db)
        started = time.perf_counter()
        with get_context("spawn").Pool(1) as pool:
            pairs = pool.apply(build, (kept, *spec, database))
        done.write_text(str(pairs))
        print(f"built {kept.name} in {time.perf_counter() - started:.0f} s", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(kept, work)
    if server is not None:
        address = server.database(f"cli_scale_{work.name}", template=kept_db)
        config = work / "crowdprefs.toml"
        text = config.read_text()
        start = text.index("[store]")
        config.write_text(text[:start] + f'[store]\nurl = "{address}"\n')
    return work, int(done.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--big-queries", type=int, default=10000)
    parser.add_argument("--candidates", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--keep",
        metavar="DIR",
        help="build the projects once into DIR and reuse them in later runs (each run works on "
        "a copy, so the measured commands always meet the same state)",
    )
    parser.add_argument(
        "--json", action="store_true", help="End with one line of JSON: the figures measured."
    )
    parser.add_argument(
        "--postgresql",
        metavar="ADDRESS",
        help="measure on PostgreSQL: the address of a server and role that may create "
        "databases (password from PGPASSWORD); default: SQLite files",
    )
    args = parser.parse_args()
    server = Server(args.postgresql) if args.postgresql else None
    engine = "postgresql" if server else "sqlite"
    print(f"engine: {engine}")
    cli = [sys.executable, "-m", "crowdprefs"]
    run_process(
        [sys.executable, "-m", "compileall", "-q", str(Path(__file__).parents[1] / "crowdprefs")]
    )
    figures: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        bare = tmp / "bare.py"
        bare.write_text(BARE_TYPER.format(commands=40))
        baseline, base_cpu, _ = median_run([sys.executable, str(bare), "--help"], args.repeat)
        print(f"baseline: bare typer app --help {baseline:.3f} s (cpu {base_cpu:.3f} s)")
        help_time, help_cpu, help_mb = median_run([*cli, "--help"], args.repeat)
        print(
            f"crowdprefs --help: {help_time:.3f} s ({help_time / baseline:.1f}×; cpu "
            f"{help_cpu:.3f} s, {help_cpu / base_cpu:.1f}×), {help_mb:.0f} MB"
        )

        keep = Path(args.keep) / engine if args.keep else tmp / "built"
        mid_spec = (args.queries, args.candidates, 3, True)
        mid_kept = keep / f"mid-{args.queries}x{args.candidates}"
        mid, _ = copy_built(mid_kept, tmp / "mid", *mid_spec, server=server)
        runs: dict[str, list[tuple[float, float, float]]] = {"status": [], "next": [], "open": []}
        for _ in range(args.repeat):
            runs["status"].append(run_process([*cli, "status", str(mid)]))
            # `next` that builds batch 4, on a fresh copy each time; then the open batch
            fresh, _ = copy_built(mid_kept, tmp / "mid_next", *mid_spec, server=server)
            runs["next"].append(run_process([*cli, "next", str(fresh)]))
            runs["open"].append(run_process([*cli, "next", str(fresh)]))
        for name, measured in runs.items():
            wall = statistics.median(w for w, _, _ in measured)
            cpu = statistics.median(c for _, c, _ in measured)
            mb = max(m for _, _, m in measured)
            label = {"next": "next (builds batch 4)", "open": "next (open batch)"}.get(name, name)
            figures |= {f"{name}_s": wall, f"{name}_ratio": wall / baseline,
                        f"{name}_cpu_ratio": cpu / base_cpu}  # fmt: skip
            print(
                f"{args.queries} queries: {label} {wall:.2f} s ({wall / baseline:.1f}× the "
                f"bare app; cpu {cpu:.2f} s, {cpu / base_cpu:.1f}×), peak {mb:.0f} MB"
            )

        big, pairs = copy_built(
            keep / f"big-{args.big_queries}x{args.candidates}",
            tmp / "big",
            *(args.big_queries, args.candidates, 1, False),
            server=server,
        )
        print(f"{args.big_queries} queries: first batch collected, {pairs} pairs × 10 answers")
        wall, cpu, mb = run_process([*cli, "aggregate", str(big)])
        figures |= {
            "pairs": pairs, "big_aggregate_s": wall, "big_aggregate_cpu": cpu,
            "big_aggregate_mb": mb,
        }  # fmt: skip
        print(
            f"{args.big_queries} queries: aggregate {wall:.1f} s (cpu {cpu:.1f} s), "
            f"peak {mb:.0f} MB"
        )
        for command in (["status"], ["next"], ["export", "--partial", "-o", str(tmp / "l.qrel")]):
            wall, cpu, mb = run_process([*cli, *command[:1], str(big), *command[1:]])
            print(
                f"{args.big_queries} queries: {command[0]} {wall:.1f} s (cpu {cpu:.1f} s), "
                f"peak {mb:.0f} MB"
            )
            figures |= {f"big_{command[0]}_s": wall, f"big_{command[0]}_mb": mb}
        if server is not None:
            for name in ("mid", "mid_next", "big"):
                server.drop(f"cli_scale_{name}")
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
