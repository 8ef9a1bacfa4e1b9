"""The audit of pairs with thousands of answers, through the console script as a user runs it.

``crowdprefs audit --answers FILE --format long`` (its tables; and with ``--resamples 0`` and
with ``--rule bradley-terry``) on synthetic answer files in the long format, each run under
``/usr/bin/time -v`` for its CPU seconds (user + system, every process of the run) and peak
memory (the largest resident set of one process), and once more with ``--json`` (its figures
are printed too) to compare the whole audit:

- 6,000 answers a pair over 10 pairs (one query: a pivot and 10 candidates), without ties and
  with 30 % "equal" answers;
- 10⁶ answers over 10⁵ pairs (10 answers a pair, 30 % "equal", 10,000 queries of 10 pairs;
  the bradley-terry rule, which fits every answer and refits per pair, is left out there).

Each pair has its own preference (its share of "left" answers among the sided ones drawn
from 0.35–0.65), so the verdicts differ. The baseline, on the same run, is the code that
enumerated every reachable count row (``--baseline``, default the console script installed
from main): it cannot audit 6,000 answers a pair (its memory grows with the square of a
pair's answers, the cube with ties: killed past 8.5 GB), so it runs at sizes it finishes
within a few GB (600 answers a pair without ties, 150 with 30 % ties) and on the 10⁵ pairs;
there the script prints the ratios of CPU time and peak memory and whether both print the
same ``--json`` audit. Targets: ≤ 1 GB and ≤ 10 CPU s a run.

Run: ``python benchmarks/many_answers.py [--baseline PATH|none] [--json]``
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

TIME = "/usr/bin/time"
MAIN = "/root/.pyenv/shims/crowdprefs"
VARIANTS = {"default": [], "resamples0": ["--resamples", "0"], "bt": ["--rule", "bradley-terry"]}


def answers(pairs: int, per: int, ties: float, seed: int) -> pd.DataFrame:
    """``pairs`` × ``per`` answers in the long format (queries of 10 pairs, 2,000 workers)."""
    rng = np.random.default_rng(seed)
    pair = np.repeat(np.arange(pairs), per)
    left_share = rng.uniform(0.35, 0.65, pairs)[pair]
    draw = rng.random(len(pair))
    sided = rng.random(len(pair))
    label = np.where(draw < ties, "equal", np.where(sided < left_share, "left", "right"))
    return pd.DataFrame(
        {
            "worker": "w" + rng.integers(0, 2000, len(pair)).astype(str),
            "query": "q" + (pair // 10).astype(str),
            "left": "d" + (pair % 10).astype(str),
            "right": "pivot",
            "label": label,
        }
    )


def measured(command: list[str], env: dict) -> tuple[dict, str]:
    """CPU seconds and peak MiB of one run of ``command``, and what it printed."""
    done = subprocess.run(
        [TIME, "-v", *command], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-25:]
        raise SystemExit(f"{' '.join(command)} failed:\n" + "\n".join(tail))

    def field(name: str) -> float:
        return float(re.search(rf"{re.escape(name)}: ([0-9.]+)", done.stderr).group(1))

    cpu = field("User time (seconds)") + field("System time (seconds)")
    return {"cpu_s": cpu, "peak_mib": field("Maximum resident set size (kbytes)") / 1024}, (
        done.stdout
    )


def audit(program: str, path: Path, extra: list[str], env: dict) -> tuple[dict, dict, dict]:
    """The figures of the plain run and of the ``--json`` run, and the audit printed."""
    command = [program, "audit", "--answers", str(path), "--format", "long", *extra]
    plain, _ = measured(command, env)
    as_json, out = measured([*command, "--json"], env)
    return plain, as_json, json.loads(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=MAIN, help="The old console script, or 'none'.")
    parser.add_argument("--json", action="store_true", help="End with one line of JSON.")
    args = parser.parse_args()
    ours = shutil.which("crowdprefs", path=str(Path(sys.executable).parent))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    figures: dict = {}
    sizes = {
        "big": (10, 6000, 0.0),
        "big_ties": (10, 6000, 0.3),
        "many": (100_000, 10, 0.3),
        "base": (10, 600, 0.0),
        "base_ties": (10, 150, 0.3),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, (pairs, per, ties) in sizes.items():
            path = Path(tmp) / f"{name}.csv"
            answers(pairs, per, ties, seed=1).to_csv(path, index=False)
            for variant, extra in VARIANTS.items():
                if name == "many" and variant == "bt":
                    continue
                new, new_json, printed = audit(ours, path, extra, env)
                line = (
                    f"{pairs:>7,} pairs × {per:>5,} answers, ties {ties:.0%}, {variant:>10}: "
                    f"{new['cpu_s']:5.1f} CPU s, {new['peak_mib']:5.0f} MiB "
                    f"(--json {new_json['cpu_s']:5.1f} CPU s, {new_json['peak_mib']:5.0f} MiB)"
                )
                key = f"{name}_{variant}"
                figures[f"{key}_cpu_s"], figures[f"{key}_mib"] = new["cpu_s"], new["peak_mib"]
                figures[f"{key}_json_cpu_s"] = new_json["cpu_s"]
                figures[f"{key}_json_mib"] = new_json["peak_mib"]
                if args.baseline != "none" and not name.startswith("big"):
                    old, _, before = audit(args.baseline, path, extra, env)
                    same = before == printed
                    line += (
                        f" | baseline {old['cpu_s']:5.1f} CPU s, {old['peak_mib']:5.0f} MiB: "
                        f"{old['cpu_s'] / new['cpu_s']:.1f}× the CPU, "
                        f"{old['peak_mib'] / new['peak_mib']:.1f}× the memory; "
                        f"same audit: {same}"
                    )
                    figures[f"{key}_cpu_ratio"] = old["cpu_s"] / new["cpu_s"]
                    figures[f"{key}_mib_ratio"] = old["peak_mib"] / new["peak_mib"]
                    figures[f"{key}_same"] = same
                print(line, flush=True)
    plain = {k: v for k, v in figures.items() if "_json_" not in k}
    worst = max(v for k, v in plain.items() if k.endswith("_mib"))
    slowest = max(v for k, v in plain.items() if k.endswith("_cpu_s"))
    print(
        f"tables: largest peak {worst:.0f} MiB (target 1,024), slowest {slowest:.1f} CPU s "
        f"(target 10); every baseline audit the same: "
        f"{all(v for k, v in figures.items() if k.endswith('_same'))}"
    )
    figures["all_same"] = all(v for k, v in figures.items() if k.endswith("_same"))
    figures["worst_mib"], figures["slowest_cpu_s"] = worst, slowest
    if args.json:
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
