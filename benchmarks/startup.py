"""Start-up of the command line against a bare typer app with the same commands.

Times ``python -c "from crowdprefs.cli import main; main()" ARGS`` for ``--help`` and a few
``COMMAND --help``, and the same arguments on a bare typer app generated with the same command
tree (same names, one argument and one option each, nothing imported but typer). Each case runs
``--runs`` times, interleaved with its baseline; the medians of wall time (``time.perf_counter``)
and of CPU time (user + system of the child, steadier on a shared machine) give the ratios. It
also counts the modules each process holds once ``--help`` is printed.

The targets (issue 41) are CPU time, best of ``--runs``, against the bare app's ``--help`` in the
same run: ``--help`` ≤ 1.5×, and ``status`` and ``next`` (on the open batch) of a project of
``--queries`` × ``--candidates`` (1,000 × 50) ≤ 3×. The project is built once with the simulated
crowd (one iteration collected and aggregated, the next batch open) before the timing starts.
``status`` and ``next`` are timed as a researcher runs them while the crowd works, the project
unchanged since the last one (their kept reports: :mod:`crowdprefs.campaign.kept_reports`), and
also as the first after a change (an empty cache folder each run; no target).

    python benchmarks/startup.py [--runs 5] [--queries 1000] [--candidates 50] [--command ...]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = ("init", "status", "demo", "audit", "plan", "evaluate", "stats power", "mtc next")
CROWDPREFS = "from crowdprefs.cli import main; main()"
BARE = "from bare_cli import main; main()"
COUNT = (
    "import atexit, sys; "
    "atexit.register(lambda: sys.stderr.write(f'\\nMODULES {{len(sys.modules)}}\\n')); {}"
)


def command_tree() -> dict:
    """``{name: None | {sub: None}}`` of crowdprefs' typer app (imported in this process)."""
    import typer.main

    from crowdprefs.cli.app import app

    def tree(group) -> dict:
        commands = getattr(group, "commands", None)
        return {n: tree(c) if hasattr(c, "commands") else None for n, c in commands.items()}

    return tree(typer.main.get_command(app))


def bare_source(tree: dict) -> str:
    """A typer app with ``tree``'s commands, each with one argument and one option."""
    lines = ["import typer", "", "app = typer.Typer(no_args_is_help=True, add_completion=False)"]

    def add(parent: str, commands: dict, depth: int) -> None:
        for i, (name, sub) in enumerate(commands.items()):
            if sub is not None:
                group = f"group_{depth}_{i}"
                lines.append(f"{group} = typer.Typer(help='The {name} group.')")
                lines.append(f"{parent}.add_typer({group}, name={name!r})")
                add(group, sub, depth + 1)
                continue
            lines.extend(
                [
                    f"@{parent}.command({name!r})",
                    f"def command_{depth}_{i}(path: str, option: int = 1) -> None:",
                    f"    '''The {name} command.'''",
                ]
            )

    add("app", tree, 0)
    lines += ["", "def main() -> None:", "    app()"]
    return "\n".join(lines) + "\n"


def run(code: str, args: list[str], env: dict) -> tuple[float, float, str]:
    """Wall and CPU seconds of one child process, and its stderr."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed: {done.stderr.strip()}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stderr


def build(root: Path, queries: int, candidates: int) -> Path:
    """A project of ``queries`` × ``candidates`` with iteration 1 aggregated and batch 2 open."""
    import pandas as pd

    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Settings, init_project
    from crowdprefs.crowds.simulated import SimulatedCrowd
    from crowdprefs.quality.crowd_model import CrowdModel, random_truth

    frame = pd.DataFrame(
        [(f"q{q:04d}", f"q{q:04d}-c{c:03d}") for q in range(queries) for c in range(candidates)],
        columns=["query", "document"],
    )
    frame["audio"] = None
    frame["query_audio"] = None
    project = init_project(root, frame, settings=Settings(answers_per_pair=5))
    with project:
        crowd = SimulatedCrowd(random_truth(frame, 1), CrowdModel(), seed=1)
        driver.run(project, crowd, max_iterations=1)
        driver.next_batch(project)
    return root


def modules(code: str, env: dict) -> int:
    stderr = run(COUNT.format(code), ["--help"], env)[2]
    return int(stderr.rsplit("MODULES ", 1)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs", type=int, default=5, help="Runs of each case (median; best of for the targets)."
    )
    parser.add_argument(
        "--command", action="append", help=f"Commands to time (default: {', '.join(COMMANDS)})."
    )
    parser.add_argument("--queries", type=int, default=1000, help="Queries of the project.")
    parser.add_argument("--candidates", type=int, default=50, help="Candidates per query.")
    parser.add_argument(
        "--json", action="store_true", help="End with one line of JSON: the figures measured."
    )
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        project = str(build(Path(tmp, "project"), options.queries, options.candidates))
        print(
            f"project: {options.queries} queries × {options.candidates} candidates, batch 2 open "
            f"(built in {time.perf_counter() - started:.0f} s)"
        )
        Path(tmp, "bare_cli.py").write_text(bare_source(command_tree()), encoding="utf-8")
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([tmp, str(ROOT)]), "COLUMNS": "80"}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # byte code cached, as installed packages have
        run(
            "import compileall, sys; compileall.compile_dir(sys.argv[1], quiet=1)",
            [str(ROOT / "crowdprefs")],
            env,
        )
        cases = [["--help"]] + [[*c.split(), "--help"] for c in options.command or COMMANDS]
        print(f"{'case':<24}{'crowdprefs s':>13}{'bare s':>8}{'ratio':>7}{'cpu ratio':>11}")
        worst, best = 0.0, float("inf")
        for args in cases:
            ours, bare = [], []
            for _ in range(options.runs):  # interleaved: both see the same machine load
                ours.append(run(CROWDPREFS, args, env)[:2])
                bare.append(run(BARE, args, env)[:2])
            wall = [statistics.median(t[0] for t in ts) for ts in (ours, bare)]
            cpu = [statistics.median(t[1] for t in ts) for ts in (ours, bare)]
            ratio = wall[0] / wall[1]
            worst, best = max(worst, ratio), min(best, ratio)
            label = " ".join(args)
            print(
                f"{label:<24}{wall[0]:>13.3f}{wall[1]:>8.3f}{ratio:>7.2f}{cpu[0] / cpu[1]:>11.2f}"
            )
        targets = {}  # CPU, best of --runs, against the bare app's --help (interleaved)
        kept = {**env, "XDG_CACHE_HOME": str(Path(tmp, "cache"))}  # status keeps its reports
        for name, args, limit in (
            ("help", ["--help"], 1.5),
            ("status", ["status", project], 3.0),
            ("status_first", ["status", project], None),
            ("next", ["next", project], 3.0),
            ("next_first", ["next", project], None),
        ):
            ours, bare = [], []
            for i in range(options.runs):
                first = {**env, "XDG_CACHE_HOME": str(Path(tmp, f"empty-cache-{name}-{i}"))}
                fresh = name.endswith("_first")
                ours.append(run(CROWDPREFS, args, first if fresh else kept)[1])
                bare.append(run(BARE, ["--help"], env)[1])
            targets[f"{name}_cpu_s"] = min(ours)
            targets[f"{name}_cpu_ratio"] = min(ours) / min(bare)
            label = f"{args[0]} (first after a change)" if fresh else args[0]
            target = "" if limit is None else f" (target ≤ {limit:g}×)"
            print(
                f"{label:<30} CPU best of {options.runs}: {min(ours):.3f} s, bare --help "
                f"{min(bare):.3f} s: {min(ours) / min(bare):.2f}×{target}"
            )
        loaded = {"modules": modules(CROWDPREFS, env), "bare_modules": modules(BARE, env)}
        print(
            f"modules after --help: crowdprefs {loaded['modules']}, "
            f"bare {loaded['bare_modules']}; worst wall ratio {worst:.2f}"
        )
        if options.json:
            figures = {"best_ratio": best, "worst_ratio": worst, **loaded, **targets}
            print(json.dumps({"queries": options.queries, **figures}))


if __name__ == "__main__":
    main()
