"""MTC, the `crowdprefs mtc` commands."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from crowdprefs.cli.app import app
from crowdprefs.errors import InputError
from crowdprefs.evaluation import mtc


def test_cli_simulate_json(files):
    result = CliRunner().invoke(
        app,
        [
            "mtc", "simulate", "--runs", str(files / "runs.txt"),
            "--judgments", str(files / "all.txt"), "--metadata", str(files / "meta.txt"),
            "--estimator", "judge", "--batches", "4", "--json", "--plot", str(files / "p.png"),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    for key in ("judgments", "confidence", "accuracy", "tau", "log", "calibration"):
        assert key in payload
    assert payload["log"][0]["judgments"] == 0
    assert (files / "p.png").stat().st_size > 1000


def test_cli_next_writes_pairs_and_hits(files):
    result = CliRunner().invoke(
        app,
        [
            "mtc", "next", "--runs", str(files / "runs.txt"), "--judgments",
            str(files / "some.txt"), "--estimator", "fitted", "--batch", "7",
            "--out", str(files / "next.txt"), "--hits", str(files / "hits"),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    chosen = pd.read_csv(files / "next.txt", sep="\t", header=None)
    assert len(chosen) == 7
    judged = pd.read_csv(files / "some.txt", sep="\t", header=None)
    chosen_pairs = set(zip(chosen[0], chosen[1], strict=True))
    assert not chosen_pairs & set(zip(judged[0], judged[1], strict=True))
    assert len(list((files / "hits").glob("level_*.html"))) == 7


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        (
            "--audio-url",
            "{name}.mp3",
            "--audio-url: clip URL pattern '{name}.mp3' is not a "
            "pattern with {id} as its only field",
        ),
        (
            "--audio-url",
            "{id.mp3",
            "--audio-url: clip URL pattern '{id.mp3' is not a pattern with {id} as its only field",
        ),
        ("--hit-scale", "loud", "--hit-scale: unknown HIT scale 'loud'"),
    ],
)
def test_cli_next_refuses_bad_hit_options_before_writing(files, cli, option, value, message):
    out, hits = files / "next.txt", files / "hits"
    code, _, err = cli(
        "mtc", "next", "--runs", files / "runs.txt", "--estimator", "uniform",
        "--out", out, "--hits", hits, option, value,
    )  # fmt: skip
    assert code == 2 and err.startswith("error:") and message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists() and not hits.exists()


def test_cli_train_then_estimate_with_the_model(files, cli):
    model = files / "model.json"
    code, out, err = cli(
        "mtc", "train", "--runs", files / "runs.txt", "--judgments", files / "all.txt",
        "--metadata", files / "meta.txt", "--out", model, "--folds", "3",
    )  # fmt: skip
    assert code == 0, err
    assert "sysGEN" in out and "held-out queries (3 folds)" in " ".join(out.split())
    judged = len(pd.read_csv(files / "all.txt", sep="\t", header=None))
    assert mtc.GainModel.from_json(model.read_text()).judgments == judged
    code, out, err = cli(
        "mtc", "estimate", "--runs", files / "runs.txt", "--metadata", files / "meta.txt",
        "--judgments", files / "some.txt", "--estimator", "trained", "--model", model, "--json",
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(out)
    assert payload["judgments"] == len(pd.read_csv(files / "some.txt", sep="\t", header=None))
    model.write_text('{"format": "crowdprefs-mtc-gain-model", "version": 1}')
    code, _, err = cli(
        "mtc", "estimate", "--runs", files / "runs.txt", "--metadata", files / "meta.txt",
        "--estimator", "trained", "--model", model,
    )  # fmt: skip
    assert code == 2 and err.startswith("error:") and "not a crowdprefs MTC gain model" in err
    assert len(err.strip().splitlines()) == 1


def test_cli_simulate_trained_is_cross_fitted_without_a_model(files, cli):
    code, out, err = cli(
        "mtc", "simulate", "--runs", files / "runs.txt", "--judgments", files / "all.txt",
        "--metadata", files / "meta.txt", "--estimator", "trained", "--batches", "6", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert "cross-fitted by query folds" in " ".join(err.split())
    payload = json.loads(out)
    assert payload["cross_fitted"] is True and payload["log"][0]["judgments"] == 0


def test_cli_estimate_table_and_errors(files):
    runner = CliRunner()
    ok = runner.invoke(
        app,
        ["mtc", "estimate", "--runs", str(files / "runs.txt"), "--estimator", "uniform", "--json"],
    )
    assert ok.exit_code == 0, ok.output
    assert len(json.loads(ok.stdout)["systems"]) == 6
    missing = runner.invoke(app, ["mtc", "estimate", "--runs", str(files / "runs.txt")])
    assert isinstance(missing.exception, InputError)
    assert "--metadata" in str(missing.exception)
