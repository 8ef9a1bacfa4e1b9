"""Depth (iterations) of recorded 2010-style campaigns against the crowd fitted to them: the
fitted crowd's simulations (``plan --truth lists.qrel --crowd-model fitted.toml``, held-out
seeds) reproduce a typical recording's iterations and pairs, and a deep recording's extra
iterations are its pivots' luck, which the fitted crowd does not chase
(``benchmarks/campaign_depth.py`` measures it at length)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from crowdprefs.quality.crowd_fit import recorded_pivot_order

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
CAMPAIGNS = 30


def load(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def depth() -> ModuleType:
    load("recorded_campaign")
    return load("campaign_depth")


def test_fitted_crowd_reproduces_typical_recordings_depth_and_pairs(depth, tmp_path):
    recorded, predicted, pairs = [], [], []
    for seed in range(1, 5):  # generator seeds as they come: 5, 5, 6 and 5 iterations
        recording = depth.record(seed)
        model, _ = depth.fit(recording, tmp_path / str(seed))
        plan = depth.campaigns(recording.lists, model, CAMPAIGNS)
        profile = depth.recorded_profile(recording)
        recorded.append(len(profile))
        predicted.append(plan.iterations.mean())
        pairs.append(plan.pairs.mean() / profile.sum() - 1)
        assert abs(len(profile) - plan.iterations.mean()) <= 1.0, seed
        assert np.percentile(plan.iterations, 5) <= len(profile), seed
        assert len(profile) <= np.percentile(plan.iterations, 95), seed
    assert np.mean(predicted) == pytest.approx(np.mean(recorded), abs=0.5)
    assert abs(np.mean(pairs)) < 0.04


def test_a_deep_recording_is_its_pivots_luck_not_the_crowds(depth, tmp_path):
    recording = depth.record(14)  # 8 iterations: the generator gives 8 or more in 2% of campaigns
    assert len(depth.recorded_profile(recording)) == 8
    model, _ = depth.fit(recording, tmp_path)
    lists = recording.lists
    collection = depth.Collection.from_truth(lists)
    order = recorded_pivot_order(recording.answers, collection)
    exact = depth.exact_oracle(collection)
    rng = np.random.default_rng(0)

    replay = depth.sorted_depth(collection, lambda i: order, lambda i: exact)(1)
    assert replay.iterations[0] == 8  # its pivots on its own lists: the recorded depth
    lucky = depth.sorted_depth(collection, lambda i: rng.random(len(lists)), lambda i: exact)
    assert lucky(CAMPAIGNS).iterations.mean() < 7.0  # other pivots go less deep

    plan = depth.campaigns(lists, model, CAMPAIGNS)
    own = depth.campaigns(recording.truth, depth.GENERATOR, CAMPAIGNS)
    # the fitted crowd predicts what the recording's own crowd gives fresh campaigns…
    assert plan.iterations.mean() == pytest.approx(own.iterations.mean(), abs=0.5)
    assert plan.pairs.mean() == pytest.approx(own.pairs.mean(), rel=0.04)
    # …and goes deeper with the recording's pivots (fresh answers)
    crowd = depth.sorted_depth(
        collection, lambda i: order, lambda i: depth.crowd_oracle(collection, model, i)
    )
    assert crowd(CAMPAIGNS).iterations.mean() > plan.iterations.mean() + 0.3
