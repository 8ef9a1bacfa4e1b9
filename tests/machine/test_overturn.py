"""Skipping on machine verdicts and auditing them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from crowdprefs.errors import InputError
from crowdprefs.machine.overturn import SkipRule, audit_sample, overturn_interval


def test_audit_membership_is_a_pure_function_of_the_pair() -> None:
    keys = np.arange(20000)
    chosen = audit_sample(keys, 0.2, seed=11)
    assert abs(chosen.mean() - 0.2) < 0.01
    order = np.random.default_rng(0).permutation(20000)[:5000]
    np.testing.assert_array_equal(audit_sample(keys[order], 0.2, seed=11), chosen[order])
    assert (audit_sample(keys, 0.3, seed=11) >= chosen).all()  # a larger share only adds pairs
    assert (audit_sample(keys, 0.2, seed=12) != chosen).any()
    assert not audit_sample(keys, 0.0, seed=11).any() and audit_sample(keys, 1.0, seed=11).all()
    two = np.column_stack([keys // 100, keys % 100])
    assert abs(audit_sample(two, 0.5, seed=11).mean() - 0.5) < 0.02
    with pytest.raises(InputError):
        audit_sample(keys, 1.5, seed=11)
    with pytest.raises(InputError):
        audit_sample(keys.astype(float), 0.2, seed=11)


def test_overturn_interval_is_clopper_pearson() -> None:
    estimate, low, high = overturn_interval(3, 40)
    ci = stats.binomtest(3, 40).proportion_ci(0.95, method="exact")
    assert (estimate, low, high) == (3 / 40, ci.low, ci.high)
    nan, low, high = overturn_interval(0, 0)
    assert math.isnan(nan) and (low, high) == (0.0, 1.0)
    assert overturn_interval(0, 10)[1] == 0.0 and overturn_interval(10, 10)[2] == 1.0
    with pytest.raises(InputError):
        overturn_interval(5, 4)
    with pytest.raises(InputError):
        overturn_interval(1, 4, level=1.0)


@pytest.mark.parametrize("audited", [8, 37, 150])
def test_clopper_pearson_covers_at_least_its_level(audited: int) -> None:
    table = np.array([overturn_interval(k, audited)[1:] for k in range(audited + 1)])
    rng = np.random.default_rng(audited)
    shares = np.linspace(0.005, 0.6, 60)
    k = rng.binomial(audited, shares[:, None], size=(60, 20000))  # 20,000 audits per share
    low, high = table[k, 0], table[k, 1]
    covered = ((low <= shares[:, None]) & (shares[:, None] <= high)).mean(axis=1)
    assert covered.min() >= 0.95 - 3 * math.sqrt(0.95 * 0.05 / 20000)
    pmf = stats.binom.pmf(np.arange(audited + 1), audited, shares[:, None])
    exact = (pmf * ((table[:, 0] <= shares[:, None]) & (shares[:, None] <= table[:, 1]))).sum(1)
    assert exact.min() >= 0.95 - 1e-12


def test_skip_rule() -> None:
    rule = SkipRule(max_wrong=0.1, audit_share=0.2)
    assert not rule.calibrates(30) and rule.calibrates(31)
    assert rule.interval(5, 50) == overturn_interval(5, 50, 0.95)


@pytest.mark.parametrize(
    "fields",
    [
        {"max_wrong": 0.0},
        {"max_wrong": 0.6},
        {"audit_share": -0.1},
        {"min_verdicts": 2.5},
        {"min_verdicts": -1},
        {"level": 1.0},
    ],
)
def test_skip_rule_refuses_bad_fields(fields: dict) -> None:
    with pytest.raises(InputError):
        SkipRule(**fields)
