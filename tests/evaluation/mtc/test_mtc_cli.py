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
            "--output", str(files / "next.txt"), "--hits", str(files / "hits"),
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
        "--output", out, "--hits", hits, option, value,
    )  # fmt: skip
    assert code == 2 and err.startswith("error:") and message in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not out.exists() and not hits.exists()


def test_cli_train_then_estimate_with_the_model(files, cli):
    model = files / "model.json"
    code, out, err = cli(
        "mtc", "train", "--runs", files / "runs.txt", "--judgments", files / "all.txt",
        "--metadata", files / "meta.txt", "--output", model, "--system-folds", "2",
    )  # fmt: skip
    assert code == 0, err
    flat = " ".join(out.split())
    assert "sysGEN" in out and "training range" in flat
    assert "on held-out systems and queries (2 system folds × 2 query folds): RMSE" in flat
    judged = len(pd.read_csv(files / "all.txt", sep="\t", header=None))
    assert mtc.GainModel.from_json(model.read_text()).judgments == judged
    code, out, err = cli(
        "mtc", "estimate", "--runs", files / "runs.txt", "--metadata", files / "meta.txt",
        "--judgments", files / "some.txt", "--model", model, "--json",
    )  # fmt: skip
    assert code == 0, err
    payload = json.loads(out)
    assert payload["judgments"] == len(pd.read_csv(files / "some.txt", sep="\t", header=None))
    assert payload["estimator"] == "trained" and "trained gain model was given" in payload["why"]
    model.write_text('{"format": "crowdprefs-mtc-gain-model", "version": 2}')
    code, _, err = cli(
        "mtc", "estimate", "--runs", files / "runs.txt", "--metadata", files / "meta.txt",
        "--estimator", "trained", "--model", model,
    )  # fmt: skip
    assert code == 2 and err.startswith("error:") and "not a crowdprefs MTC gain model" in err
    assert len(err.strip().splitlines()) == 1


def test_cli_next_says_which_estimator_it_uses_and_why(files, cli):
    """Without options: judge with metadata, fitted without; a trained model when given."""
    base = ("mtc", "next", "--runs", files / "runs.txt", "--judgments", files / "some.txt")
    code, _, err = cli(*base, "--metadata", files / "meta.txt", "--output", files / "a.tsv")
    assert code == 0, err
    assert "estimator: judge (no trained gain model was given: with document metadata" in err
    code, _, err = cli(*base, "--output", files / "b.tsv", "--batch", "3")
    assert code == 0, err
    assert "estimator: fitted (neither a trained gain model nor document metadata" in err
    model = files / "model.json"
    cli(
        "mtc", "train", "--runs", files / "runs.txt", "--judgments", files / "all.txt",
        "--metadata", files / "meta.txt", "--output", model,
    )  # fmt: skip
    code, _, err = cli(*base, "--metadata", files / "meta.txt", "--model", model, "--output",
                       files / "c.tsv")  # fmt: skip
    assert code == 0, err
    assert "estimator: trained (a trained gain model was given: on new systems and new" in err
    code, _, err = cli(*base, "--estimator", "uniform", "--output", files / "d.tsv")
    assert "estimator: uniform (asked for)" in err


def test_cli_a_trained_estimator_without_a_model_names_the_option(files, cli):
    code, _, err = cli(
        "mtc", "simulate", "--runs", files / "runs.txt", "--judgments", files / "all.txt",
        "--metadata", files / "meta.txt", "--estimator", "trained",
    )  # fmt: skip
    assert code == 2 and err.startswith("error:") and len(err.strip().splitlines()) == 1
    assert "needs a trained gain model: give --model FILE (written by `mtc train`)" in err


def test_cli_estimate_table_and_errors(files):
    runner = CliRunner()
    ok = runner.invoke(
        app,
        ["mtc", "estimate", "--runs", str(files / "runs.txt"), "--estimator", "uniform", "--json"],
    )
    assert ok.exit_code == 0, ok.output
    assert len(json.loads(ok.stdout)["systems"]) == 6
    missing = runner.invoke(
        app, ["mtc", "estimate", "--runs", str(files / "runs.txt"), "--estimator", "judge"]
    )
    assert isinstance(missing.exception, InputError)
    assert "needs document metadata (document artist genre): give --metadata FILE" in str(
        missing.exception
    )


def test_cli_simulate_with_compat_warns_that_its_stop_is_overconfident(files, cli):
    base = (
        "mtc", "simulate", "--runs", files / "runs.txt", "--judgments", files / "all.txt",
        "--metadata", files / "meta.txt", "--estimator", "judge", "--batches", "4",
    )  # fmt: skip
    code, _, err = cli(*base, "--compat")
    assert code == 0, err
    assert "the reference tool's behaviour (compat) stops overconfidently" in err
    code, _, err = cli(*base)
    assert code == 0, err
    assert "overconfident" not in err
