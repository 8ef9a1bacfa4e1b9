"""The ``crowdprefs stats`` commands, end to end through the entry point."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    systems, queries = [f"S{i}" for i in range(5)], [f"q{j:02d}" for j in range(20)]
    rows = []
    for measure, scale in (("AG@5", 100.0), ("nDCG@5", 1.0)):
        values = np.clip(rng.uniform(0.2, 0.8, (5, 20)) + 0.1 * np.arange(5)[:, None], 0, 1)
        rows += [
            (s, q, measure, round(scale * values[i, j], 3))
            for i, s in enumerate(systems)
            for j, q in enumerate(queries)
        ]
    scores = tmp_path / "scores.csv"
    pd.DataFrame(rows, columns=["system", "query", "measure", "score"]).to_csv(scores, index=False)
    strata = tmp_path / "strata.tsv"
    strata.write_text("".join(f"{q}\tartist\tg{j % 4}\n" for j, q in enumerate(queries)))
    return scores, strata


def test_test_command_csv_equals_library(cli, files):
    scores, _ = files
    code, out, _ = cli(
        "stats", "test", "--scores", scores, "-m", "AG@5", "--test", "t",
        "--alpha", "0.01", "--one-sided", "--format", "csv",
    )  # fmt: skip
    assert code == 0
    table = pd.read_csv(io.StringIO(out))
    assert list(table.columns[:3]) == ["measure", "system_a", "system_b"]
    assert len(table) == 10 and (table.measure == "AG@5").all()
    code, out, _ = cli("stats", "test", "--scores", scores, "--test", "friedman-tukey")
    assert code == 0 and "Friedman χ²" in out and "pairs significant" in out


def test_power_and_stability_commands(cli, files, tmp_path):
    scores, strata = files
    code, out, err = cli(
        "stats", "power", "--scores", scores, "--strata", strata,
        "--samples", "5", "--size-step", "10", "--plot", tmp_path / "p.png",
        "-o", tmp_path / "p.csv",
    )  # fmt: skip
    assert code == 0, err
    assert "AG@5 FT" in out and "nDCG@5 W1" in out
    assert (tmp_path / "p.png").stat().st_size > 1000
    assert set(pd.read_csv(tmp_path / "p.csv")["size"]) == {10, 20}
    code, out, err = cli(
        "stats", "stability", "--scores", scores, "--strata", strata,
        "--samples", "5", "--size-step", "5", "-p", "W1", "--format", "csv",
    )  # fmt: skip
    assert code == 0, err
    table = pd.read_csv(io.StringIO(out))
    assert set(table["size"]) == {5, 10} and set(table.procedure) == {"W1"}


def test_gawm_command(cli, files):
    scores, _ = files
    code, out, err = cli(
        "stats", "gawm", "--scores", scores, "-m", "AG@5", "--divide-by", "100",
        "--axioms", "B", "--loto",
    )  # fmt: skip
    assert code == 0, err
    assert "converged" in out and "MAP~E_s" in out and "leave-one-topic-out" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["stats", "gawm", "-m", "AG@5"], "GAWM needs scores in [0, 1]"),
        (["stats", "test", "-m", "P@5"], "no measure 'P@5'"),
        (["stats", "power", "-p", "Z9"], "unknown procedure 'Z9'"),
        (["stats", "test", "--correction", "nope"], "unknown correction 'nope'"),
        (["stats", "test", "-t", "friedman-tukey", "--one-sided"], "not to FT"),
    ],
)
def test_user_errors_are_one_line(cli, files, args, message):
    scores, _ = files
    code, _, err = cli(*args, "--scores", scores)
    assert code != 0
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2
