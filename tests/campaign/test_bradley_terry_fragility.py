"""The fragility of Bradley–Terry verdicts: first-order estimates bounded by refits."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from crowdprefs.campaign import bradley_terry as bt


def instance(seed: int, reliability: bool = False) -> dict:
    """3–4 candidates of one query, 6–12 answers drawn from Davidson's model, 2–3 workers."""
    rng = np.random.default_rng(seed)
    k, m = int(rng.integers(3, 5)), int(rng.integers(6, 13))
    scores = rng.normal(0, 1.5, k)
    first = rng.integers(0, k, m)
    second = (first + rng.integers(1, k, m)) % k
    p = bt.outcome_probabilities(scores[first] - scores[second], 0.8)
    outcome = 1 - np.array([rng.choice(3, p=row) for row in p])
    pairs = np.array(list(itertools.combinations(range(k), 2)))
    return {
        "first": first,
        "second": second,
        "outcome": outcome,
        "worker": rng.integers(0, 3 if reliability else 2, m),
        "x": pairs[:, 0],
        "y": pairs[:, 1],
        "k": k,
        "reliability": reliability,
    }


def verdicts_of(case: dict, first, second, outcome, worker) -> np.ndarray:
    """The verdicts of every pair after a refit from scratch."""
    fit = bt.fit_bradley_terry(
        first, second, outcome, worker, n_items=case["k"], n_workers=3,
        reliability=case["reliability"],
    )  # fmt: skip
    return fit.verdicts(case["x"], case["y"])[0]


@functools.cache
def brute_force(seed: int, reliability: bool, most: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """Per pair of :func:`instance`, the fewest answers (up to ``most``; −1 beyond) whose
    removal, resp. change to another outcome (up to 2 answers), changes its verdict: every
    subset refitted."""
    case = instance(seed, reliability)
    first, second, outcome, worker = (case[key] for key in ("first", "second", "outcome", "worker"))
    base = verdicts_of(case, first, second, outcome, worker)
    removals, flips = np.full(len(base), -1), np.full(len(base), -1)
    m = len(first)
    for size in range(1, most + 1):
        for chosen in itertools.combinations(range(m), size):
            keep = np.setdiff1d(np.arange(m), chosen)
            if len(keep) == 0:
                continue
            found = verdicts_of(case, first[keep], second[keep], outcome[keep], worker[keep])
            removals[(removals < 0) & (found != base)] = size
    for size in range(1, 3):
        for chosen in itertools.combinations(range(m), size):
            others = [[o for o in (1, 0, -1) if o != outcome[i]] for i in chosen]
            for new in itertools.product(*others):
                changed = outcome.copy()
                changed[list(chosen)] = new
                found = verdicts_of(case, first, second, changed, worker)
                flips[(flips < 0) & (found != base)] = size
    return removals, flips


def fragility(case: dict, **options) -> tuple[bt.BradleyTerryFit, bt.VerdictFragility]:
    first, second, outcome, worker = (case[key] for key in ("first", "second", "outcome", "worker"))
    fit = bt.fit_bradley_terry(
        first, second, outcome, worker, n_items=case["k"], n_workers=3,
        reliability=case["reliability"],
    )  # fmt: skip
    found = bt.verdict_fragility(
        fit, first, second, outcome, worker, None, case["x"], case["y"], **options
    )
    return fit, found


@pytest.mark.parametrize(
    ("reliability", "probe", "share"),
    [(False, 0, 0.7), (True, 0, 0.6), (False, 1, 0.8), (True, 1, 0.7)],
)
def test_confirmed_counts_bound_the_brute_force_minimum_and_mostly_equal_it(
    reliability, probe, share
):
    equal = compared = 0
    for seed in range(8):
        case = instance(seed, reliability)
        _, found = fragility(case, probe_up_to=probe)
        removals, flips = brute_force(seed, reliability)
        for count, confirmed, truth, most in (
            (found.removals, found.removals_confirmed, removals, 3),
            (found.flips, found.flips_confirmed, flips, 2),
        ):
            # a confirmed count is a subset that changes the verdict: never below the fewest
            searched = confirmed & (count <= most)
            assert ((truth >= 1) & (truth <= count) | ~searched).all()
            exact = truth >= 1
            compared += exact.sum()
            equal += (exact & confirmed & (count == truth)).sum()
    assert compared >= 70
    assert equal >= share * compared


def test_confirmed_flags_agree_with_refits():
    for seed in range(8, 14):
        case = instance(seed)
        fit, found = fragility(case)
        first, second, outcome, worker = (
            case[key] for key in ("first", "second", "outcome", "worker")
        )
        base = fit.verdicts(case["x"], case["y"])[0]
        for t in range(len(base)):
            chosen = found.removed[t]
            if len(chosen) and found.removals[t] <= 3:
                assert len(chosen) == found.removals[t]
                keep = np.setdiff1d(np.arange(len(first)), chosen)
                after = verdicts_of(case, first[keep], second[keep], outcome[keep], worker[keep])
                assert (after[t] != base[t]) == found.removals_confirmed[t]
            answers, new = found.flipped[t]
            if len(answers) and found.flips[t] <= 3:
                assert len(answers) == found.flips[t]
                assert (new != outcome[answers]).all()
                changed = outcome.copy()
                changed[answers] = new
                after = verdicts_of(case, first, second, changed, worker)
                assert (after[t] != base[t]) == found.flips_confirmed[t]


def test_a_lopsided_verdict_resists_and_a_close_one_falls():
    # 0 beats 1 twenty times out of twenty; 1 and 2 split evenly
    first = np.array([0] * 20 + [1] * 6)
    second = np.array([1] * 20 + [2] * 6)
    outcome = np.array([1] * 20 + [1, -1, 1, -1, 0, 0])
    fit = bt.fit_bradley_terry(first, second, outcome, reliability=False)
    found = bt.verdict_fragility(
        fit, first, second, outcome, np.zeros(26, int), None, [0, 1], [1, 2]
    )
    assert fit.verdicts([0, 1], [1, 2])[0].tolist() == [1, 0]
    assert found.removals[0] == -1 or found.removals[0] > 3  # removals keep 0 above 1
    assert found.flips[0] > 3 and not found.flips_confirmed[0]
    assert found.flips[1] >= 1 and found.flips_confirmed[1]
    assert set(found.removed[1]) <= set(range(20, 26)) or found.removals[1] < 0
