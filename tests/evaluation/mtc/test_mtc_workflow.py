"""MTC, the commands as library calls (crowdprefs.evaluation.mtc.workflow)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from crowdprefs.errors import InputError
from crowdprefs.evaluation import mtc


def test_next_batch_writes_the_pairs_and_their_hits(files):
    inputs = mtc.load_inputs(files / "runs.txt", files / "some.txt")
    chosen = mtc.next_batch(
        inputs, files / "next.tsv", estimator="uniform", batch=5, hits=files / "hits",
        audio_url="https://host/{id}.mp3", hit_scale="fine",
    )  # fmt: skip
    written = pd.read_csv(files / "next.tsv", sep="\t", header=None, names=["query", "document"])
    assert written.equals(chosen.pairs) and len(written) == 5
    judged = inputs.col.pairs[~pd.isna(inputs.gains)]
    assert chosen.judged == len(judged) == 21 and chosen.total == inputs.col.n_pairs
    assert not set(zip(written["query"], written["document"], strict=True)) & set(
        zip(judged["query"], judged["document"], strict=True)
    )
    assert [path.name for path in chosen.hits] == [f"level_{n:04d}.html" for n in range(1, 6)]
    first = chosen.hits[0].read_text()
    assert f"https://host/{written.document[0]}.mp3" in first


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"hit_scale": "loud"}, "unknown HIT scale 'loud'; choose fine, broad, both"),
        ({"audio_url": "{name}"}, "is not a pattern with {id} as its only field"),
        ({"estimator": "judge"}, "estimator 'judge' needs document metadata"),
        ({"estimator": "trained"}, "estimator 'trained' needs document metadata"),
    ],
)
def test_next_batch_refuses_before_writing_anything(files, options, message):
    inputs = mtc.load_inputs(files / "runs.txt")
    with pytest.raises(InputError, match=message) as caught:
        mtc.next_batch(inputs, files / "next.tsv", hits=files / "hits", **options)
    assert "--" not in str(caught.value)  # the library names no command-line option
    assert not (files / "next.tsv").exists() and not (files / "hits").exists()


def test_a_missing_input_says_which(files):
    inputs = mtc.load_inputs(files / "runs.txt", metadata=files / "meta.txt")
    with pytest.raises(mtc.MissingInput) as caught:
        mtc.estimate_ranking(inputs, estimator="trained")
    assert caught.value.what == "model"
    with pytest.raises(mtc.MissingInput) as caught:
        mtc.train_model(mtc.load_inputs(files / "runs.txt"), files / "m.json")
    assert caught.value.what == "metadata" and not (files / "m.json").exists()


def test_the_mtc_commands_load_no_numerical_library_at_start_up():
    """The CLI module imports numpy, pandas and scipy only inside its commands."""
    root = Path(__file__).resolve().parents[3]
    code = (
        "import sys, types\n"
        "package = types.ModuleType('crowdprefs.cli')\n"
        f"package.__path__ = [{str(root / 'crowdprefs' / 'cli')!r}]\n"
        "sys.modules['crowdprefs.cli'] = package\n"
        "import crowdprefs.cli.mtc\n"
        "print(sorted(m for m in ('numpy', 'pandas', 'scipy', 'matplotlib') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root
    )
    assert result.stdout.strip() == "[]"
