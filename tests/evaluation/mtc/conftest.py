"""Fixtures of the MTC tests: a small random collection, a model trained on it, its files,
and MIREX 2011 (skipped when the shared data is absent)."""

from __future__ import annotations

import numpy as np
import pytest
from mtc_data import make_metadata, make_runs

from crowdprefs.evaluation import mtc


@pytest.fixture(scope="module")
def small():
    runs = make_runs(6, 12, 4, 9, seed=1)
    col = mtc.build_collection(runs)
    truth = np.random.default_rng(2).integers(0, 101, col.n_pairs).astype(float)
    return runs, col, truth


@pytest.fixture(scope="module")
def trained(small):
    _, col, truth = small
    meta = mtc.pair_metadata(col, make_metadata(col, 3))
    x = mtc.trained_features(col, meta)
    return col, meta, x, mtc.train_gain_model(col, meta, truth, "fine")


@pytest.fixture()
def files(tmp_path, small):
    runs, col, truth = small
    runs.to_csv(tmp_path / "runs.txt", sep="\t", header=False, index=False)
    levels = col.pairs[["query", "document"]].assign(gain=truth)
    levels.to_csv(tmp_path / "all.txt", sep="\t", header=False, index=False)
    levels.iloc[::5].to_csv(tmp_path / "some.txt", sep="\t", header=False, index=False)
    make_metadata(col, 3).to_csv(tmp_path / "meta.txt", sep="\t", header=False, index=False)
    return tmp_path


@pytest.fixture(scope="module")
def mirex(mirex2011):
    from crowdprefs.io import read_levels, read_runs

    col = mtc.build_collection(read_runs(mirex2011 / "runs.txt"))
    meta = mtc.pair_metadata(col, mtc.read_metadata(mirex2011 / "metadata.txt"))
    truth = mtc.gains_vector(col, read_levels(mirex2011 / "judgments.txt"), "fine")
    return col, meta, truth
