"""What the one CSV writer's OWASP rule costs: ``crowdprefs.io.csv_text`` and ``csv_frame``
against plain ``DataFrame.to_csv`` and ``pandas.read_csv`` on the same frame.

The frame is an MTurk results file as ``export --format results`` writes it
(:func:`crowdprefs.results_file.results_text`'s columns, all text), ``--rows`` answers (default
200,000) by workers whose ids and comments start like a formula in ``--risky`` of the rows
(default 5%). Each side is timed ``--repeat`` times (best kept), in this process, one after the
other, so the ratio barely moves with the machine's load.

    python benchmarks/csv_injection.py [--rows 200000] [--risky 0.05] [--repeat 3] [--json]
"""

from __future__ import annotations

import argparse
import io
import json
import time

import numpy as np
import pandas as pd

from crowdprefs.io import csv_frame, csv_text


def frame(rows: int, risky: float, seed: int = 0) -> pd.DataFrame:
    """``rows`` answers: ids, times and texts like a results file's, ``risky`` of the worker ids
    and comments starting with ``=``, ``+``, ``-`` or ``@``."""
    rng = np.random.default_rng(seed)
    workers = np.array([f"A{n:012d}" for n in rng.integers(0, 6000, rows)], dtype=object)
    comments = np.array([f"comment {n}" for n in range(rows)], dtype=object)
    bad = rng.random(rows) < risky
    starts = np.array(list("=+-@"), dtype=object)[rng.integers(0, 4, rows)]
    workers[bad] = starts[bad] + workers[bad]
    comments[bad] = starts[bad] + "cmd|' /C calc'!A0"
    return pd.DataFrame(
        {
            "HITId": [f"H{n // 10:09d}" for n in range(rows)],
            "WorkerId": workers,
            "WorkTimeInSeconds": (rng.gamma(2.0, 10.0, rows)).round(1).astype(str),
            "Input.query": [f"q{n % 11:02d}" for n in range(rows)],
            "Input.docA": [f"q{n % 11:02d}-v{n % 7:02d}" for n in range(rows)],
            "Input.docB": [f"q{n % 11:02d}-v{(n + 3) % 7:02d}" for n in range(rows)],
            "Answer.choice": np.array(["A", "B", "equal"], dtype=object)[rng.integers(0, 3, rows)],
            "Answer.comment": comments,
        }
    )


def best(call, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        started = time.perf_counter()
        result = call()
        times.append(time.perf_counter() - started)
    return min(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--risky", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    data = frame(options.rows, options.risky)
    plain_write, plain = best(lambda: data.to_csv(index=False, lineterminator="\n"), options.repeat)
    safe_write, safe = best(lambda: csv_text(data), options.repeat)
    read_options = {"dtype": str, "keep_default_na": False, "index_col": False}
    plain_read, _ = best(lambda: pd.read_csv(io.StringIO(plain), **read_options), options.repeat)
    safe_read, back = best(lambda: csv_frame(safe, "bench"), options.repeat)
    assert back.equals(data), "the reader does not give the written values back"
    figures = {
        "rows": options.rows,
        "risky_share": options.risky,
        "write_seconds": {"to_csv": round(plain_write, 3), "csv_text": round(safe_write, 3)},
        "write_ratio": round(safe_write / plain_write, 2),
        "read_seconds": {"read_csv": round(plain_read, 3), "csv_frame": round(safe_read, 3)},
        "read_ratio": round(safe_read / plain_read, 2),
    }
    if options.json:
        print(json.dumps(figures))
        return
    print(
        f"{options.rows:,} rows, {options.risky:.0%} risky: write {safe_write:.3f} s vs "
        f"{plain_write:.3f} s plain (x{figures['write_ratio']}); read {safe_read:.3f} s vs "
        f"{plain_read:.3f} s plain (x{figures['read_ratio']})"
    )


if __name__ == "__main__":
    main()
