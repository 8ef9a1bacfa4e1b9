"""``mtc --cutoff``: AG@k at a chosen k instead of the runs' depth (issue 33, a newcomer's snag)."""

from __future__ import annotations

import json

import pandas as pd

from crowdprefs.evaluation import mtc


def test_the_cutoff_cuts_each_run_and_names_the_measure(files, cli):
    runs = pd.read_csv(files / "runs.txt", sep="\t", header=None)
    depth = int(runs.groupby([0, 1]).size().max())
    args = ("mtc", "estimate", "--runs", files / "runs.txt", "--judgments", files / "some.txt",
            "--estimator", "fitted")  # fmt: skip
    code, out, err = cli(*args, "--json")
    assert code == 0, err
    assert json.loads(out)["k"] == depth
    code, out, err = cli(*args, "--cutoff", 2, "--json")
    assert code == 0, err
    assert json.loads(out)["k"] == 2
    code, out, _ = cli(*args, "--cutoff", 2)
    assert "AG@2 estimates" in out
    inputs = mtc.load_inputs(files / "runs.txt", cutoff=2)
    kept = runs.groupby([0, 1]).head(2)
    assert inputs.col.n_pairs == len(kept.drop_duplicates([1, 2]))
    code, _, err = cli(*args, "--cutoff", depth + 1)
    assert code == 2 and f"the cutoff must lie in 1..{depth}" in err
    code, _, err = cli(*args, "--cutoff", 0)
    assert code == 2 and "--cutoff" in err
