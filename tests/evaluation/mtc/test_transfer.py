"""The MTC transfer study: the library over splits, and `crowdprefs mtc transfer`."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from console_script import crowdprefs
from mtc_data import make_metadata, make_runs

from crowdprefs.errors import InputError
from crowdprefs.evaluation import mtc
from crowdprefs.evaluation.mtc.transfer import COLUMNS, TIMING
from crowdprefs.parallel import Runner

STUDIED = ("trained", "judge", "compat", "uniform")


@pytest.fixture(scope="module")
def medium():
    """8 systems × 16 queries: enough judged pairs in a training half to train a model."""
    col = mtc.build_collection(make_runs(8, 16, 5, 12, seed=1))
    truth = np.random.default_rng(2).integers(0, 101, col.n_pairs).astype(float)
    return col, mtc.pair_metadata(col, make_metadata(col, 3)), truth


def test_transfer_study_rows_and_same_for_any_runner(medium):
    col, meta, truth = medium
    done = []
    serial = mtc.transfer_study(col, meta, truth, "fine", 3, 5, STUDIED, on_done=done.append)
    assert done == [1, 2, 3]
    assert list(serial.columns) == list(COLUMNS)
    assert serial["split"].tolist() == [s for s in (5, 6, 7) for _ in STUDIED]
    assert serial["estimator"].tolist() == list(STUDIED) * 3
    assert serial["pairs"].lt(col.n_pairs).all() and serial["sigma"].notna().all()
    assert serial["outside"].notna().tolist() == [n == "trained" for n in STUDIED] * 3
    np.testing.assert_allclose(serial["gap"], serial["stated"] - serial["accuracy"])
    two = mtc.transfer_study(col, meta, truth, "fine", 3, 5, STUDIED, runner=Runner(2))
    pd.testing.assert_frame_equal(serial.drop(columns=list(TIMING)), two.drop(columns=list(TIMING)))


def test_transfer_summary_pairs_with_the_baseline(medium):
    col, meta, truth = medium
    frame = mtc.transfer_study(col, meta, truth, "fine", 3, 0, ("uniform", "judge"))
    assert frame["training"].isna().all()  # no model trained when `trained` is not studied
    summary = mtc.transfer_summary(frame)
    assert summary.index.tolist() == ["judge", "uniform"]  # the study's order
    assert summary.loc["judge", "ratio"] == 1 and np.isnan(summary.loc["judge", "early_diff"])
    by = frame.pivot(index="split", columns="estimator", values="judgments")
    difference = by["uniform"] - by["judge"]
    assert summary.loc["uniform", "judgments_diff"] == pytest.approx(difference.mean())
    assert summary.loc["uniform", "judgments_se"] == pytest.approx(difference.std() / np.sqrt(3))
    alone = mtc.transfer_summary(frame[frame["estimator"] == "uniform"])
    assert np.isnan(alone.loc["uniform", "ratio"]) and np.isnan(alone.loc["uniform", "gap_diff"])


@pytest.mark.parametrize(
    ("splits", "names", "meta", "message"),
    [
        (0, ("judge",), True, "the number of splits must be at least 1, got 0"),
        (1, ("judge", "best"), True, "unknown estimator 'best'"),
        (1, ("output",), False, "estimator 'output' needs document metadata"),
        (1, (), True, "no estimator to study"),
    ],
)
def test_transfer_study_refuses(medium, splits, names, meta, message):
    col, metadata, truth = medium
    with pytest.raises(InputError, match=message):
        mtc.transfer_study(col, metadata if meta else None, truth, "fine", splits, 0, names)


def test_transfer_study_needs_the_whole_oracle(medium):
    col, meta, truth = medium
    partial = truth.copy()
    partial[3] = np.nan
    with pytest.raises(InputError, match="the oracle lacks"):
        mtc.transfer_study(col, meta, partial, "fine", 1, 0, ("uniform",))


@pytest.mark.shared
def test_cli_transfer_same_csv_for_any_jobs(mirex2011, tmp_path):
    """The real MIREX 2011 data, two splits: the per-split CSV is the same on one process and
    on two, and the table names each estimator."""
    common = [
        "mtc", "transfer", "--runs", mirex2011 / "runs.txt",
        "--judgments", mirex2011 / "judgments.txt", "--metadata", mirex2011 / "metadata.txt",
        "--splits", "2", "--estimator", "judge", "--estimator", "uniform",
    ]  # fmt: skip
    one = crowdprefs(*common, "--jobs", "1", "-o", tmp_path / "one.csv")
    two = crowdprefs(*common, "--jobs", "2", "-o", tmp_path / "two.csv")
    assert one.returncode == 0, one.stderr
    assert two.returncode == 0, two.stderr
    assert (tmp_path / "one.csv").read_bytes() == (tmp_path / "two.csv").read_bytes()
    rows = pd.read_csv(tmp_path / "one.csv")
    assert rows["estimator"].tolist() == ["judge", "uniform"] * 2
    assert not set(TIMING) & set(rows.columns)
    assert rows["reached"].eq(1).all() and rows["accuracy"].ge(0.85).all()
    for text in ("MTC transfer: 2 splits", "judge", "uniform", "accuracy after 120"):
        assert text in one.stdout


def test_cli_transfer_json(files):
    result = crowdprefs(
        "mtc", "transfer", "--runs", files / "runs.txt", "--judgments", files / "all.txt",
        "--splits", "2", "--first", "3", "--estimator", "uniform", "--json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    payload = json.loads(result.stdout)
    assert (payload["splits"], payload["first"], payload["baseline"]) == (2, 3, "judge")
    assert [row["split"] for row in payload["rows"]] == [3, 4]
    [summary] = payload["summary"]
    assert summary["estimator"] == "uniform" and summary["ratio"] is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("--estimator", "best"), "error: unknown estimator 'best'; choose among trained,"),
        (("--splits", "0"), "Invalid value for '--splits'"),
        (("--estimator", "judge"), "needs document metadata (document artist genre): give "),
        (("--runs", "missing.txt"), "missing.txt: no such file"),
    ],
)
def test_cli_transfer_bad_input_in_one_line(files, change, message):
    options = {
        "--runs": files / "runs.txt", "--judgments": files / "all.txt", "--splits": "1",
        "--estimator": "uniform",
    }  # fmt: skip
    flag, value = change
    args = [item for pair in {**options, flag: value}.items() for item in pair]
    if flag == "--runs":
        args[1] = files / value
    result = crowdprefs("mtc", "transfer", *args)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
