"""The lists' expected ADR loss from machine verdicts: replaying the sort with audited flips."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crowdprefs.campaign.sorting import replay
from crowdprefs.machine.loss import expected_adr_loss, flip_shares


def test_flip_shares_keep_the_share_and_follow_the_audited_disagreements():
    flips = flip_shares(np.array([1, 1, 1, 0]), np.array([0, 0, 1, -1]), 0.2)
    assert np.allclose(flips.sum(axis=1), 1) and np.allclose(np.diag(flips), 0.8)
    # machine "more": humans said "equal" twice, "less" never: 3 : 1 with the Laplace ones
    assert np.isclose(flips[0, 1], 0.15) and np.isclose(flips[0, 2], 0.05)
    assert np.allclose(flip_shares(np.zeros(0), np.zeros(0), 0.0), np.eye(3))


def _sorted_query(truth: dict[str, int]) -> tuple[list[str], dict, pd.DataFrame]:
    """One query sorted by a perfect oracle: its initial order, every verdict, its lists."""
    order = sorted(truth)
    verdicts: dict = {}
    while not (state := replay(order, verdicts)).closed:
        for x, y in state.needed:
            verdicts[x, y] = int(np.sign(truth[y] - truth[x]))
    rows = [("q", d, g) for g, members in enumerate(state.groups(), 1) for d in members]
    return order, verdicts, pd.DataFrame(rows, columns=["query", "document", "group"])


def test_the_loss_is_nothing_without_flips_and_grows_with_the_share():
    truth = {f"d{i:02d}": 1 + i // 2 for i in range(16)}
    order, verdicts, lists = _sorted_query(truth)
    machine = pd.DataFrame(
        [("q", x, y, v) for (x, y), v in verdicts.items()], columns=["query", "x", "y", "verdict"]
    )
    args = (lists, {"q": order}, {"q": verdicts}, None, machine)
    assert expected_adr_loss(*args, flip_shares([], [], 0.0), 10, 1) == 0.0
    small = expected_adr_loss(*args, flip_shares([], [], 0.05), 30, 1)
    large = expected_adr_loss(*args, flip_shares([], [], 0.3), 30, 1)
    assert 0 < small < large < 1
    nothing = lists.iloc[:0]
    assert np.isnan(expected_adr_loss(nothing, *args[1:], flip_shares([], [], 0.3), 5, 1))
    none = machine.iloc[:0]
    assert expected_adr_loss(*args[:4], none, flip_shares([], [], 0.3), 5, 1) == 0.0
