"""Fragility of verdicts and lists: the exact figures against brute force on small campaigns."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from crowdprefs.campaign.aggregate import AggregationRule, change_costs, fewest_changes, verdicts
from crowdprefs.campaign.sorting import replay
from crowdprefs.quality.fragility import list_fragility, pair_fragility, sorted_groups

RULES = [
    AggregationRule(rule="margin", margin=2),
    AggregationRule(rule="margin", margin=1),
    AggregationRule(),  # Mann-Whitney, two-sided, α = 0.05
    AggregationRule(method="exact", alpha=0.1),
]


def _verdict(counts, rule) -> int | None:
    return None if sum(counts) == 0 else int(verdicts(*([c] for c in counts), rule)[0][0])


def _removals(counts):
    """Every (kept counts, cost) of removing answers of one pair (all of them included)."""
    for kept in itertools.product(*(range(c + 1) for c in counts)):
        yield kept, sum(counts) - sum(kept)


def _flips(counts):
    n = sum(counts)
    for a in range(n + 1):
        for b in range(n + 1 - a):
            kept = (a, b, n - a - b)
            yield kept, sum(max(k - c, 0) for k, c in zip(kept, counts, strict=True))


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.rule}-{r.margin}-{r.method}")
def test_pair_costs_equal_brute_force(rule):
    rng = np.random.default_rng(7)
    counts = rng.integers(0, 6, size=(300, 3))
    counts = counts[counts.sum(axis=1) > 0]
    removal, flip = change_costs(*counts.T, rule)
    fewest_removal, fewest_flip = fewest_changes(*counts.T, rule)
    for row, r, f, fr, ff in zip(counts, removal, flip, fewest_removal, fewest_flip, strict=True):
        own = _verdict(row, rule)
        for table, moves in ((r, _removals), (f, _flips)):
            best = {1: -1, 0: -1, -1: -1}
            for kept, cost in moves(tuple(row)):
                verdict = _verdict(kept, rule)
                if verdict is not None and verdict != own:
                    best[verdict] = cost if best[verdict] < 0 else min(best[verdict], cost)
            assert list(table) == [best[1], best[0], best[-1]], (row, rule)
        assert fr == min((c for c in r if c >= 0), default=-1)
        assert ff == min((c for c in f if c >= 0), default=-1)


def test_pair_fragility_reads_like_the_rule():
    """3–0 with 7 "equal" is decided at margin 2 by a lead of 3: two removals or one flip undo
    it; ten "equal" answers cannot be decided by removals, only by removing every answer."""
    pairs = pd.DataFrame({"more": [3, 0], "equal": [7, 10], "less": [0, 0]})
    table = pair_fragility(pairs, AggregationRule(rule="margin", margin=2))
    assert table["removals"].tolist() == [2, 10]
    assert table["flips"].tolist() == [1, 2]
    assert table["exact"].all()


def _campaign(rng, size: int, answers: int, rule: AggregationRule):
    """A small simulated QuickSort campaign: (initial order, pairs table)."""
    order = [f"d{i}" for i in rng.permutation(size)]
    truth = {d: rng.normal() for d in order}
    counts: dict[tuple[str, str], np.ndarray] = {}
    known: dict[tuple[str, str], int] = {}
    while True:
        state = replay(order, known)
        if state.closed:
            break
        for x, y in state.needed:
            p_more = 1 / (1 + np.exp(-2 * (truth[x] - truth[y])))
            probabilities = np.array([p_more * 0.7, 0.3, (1 - p_more) * 0.7])
            counts[(x, y)] = rng.multinomial(answers, probabilities / probabilities.sum())
            known[(x, y)] = _verdict(counts[(x, y)], rule)
    rows = [("q", x, y, "sort", *c, known[(x, y)]) for (x, y), c in counts.items()]
    columns = ["query", "x", "y", "kind", "more", "equal", "less", "verdict"]
    return order, pd.DataFrame(rows, columns=columns)


def _brute_force(order, pairs, rule, moves, most: int) -> tuple[int, int]:
    """The fewest answers changed over any combination of pairs (up to ``most``) that change
    the list, and its top group (−1 when none within ``most``)."""
    counts = [tuple(row) for row in pairs[["more", "equal", "less"]].to_numpy()]
    keys = list(zip(pairs["x"], pairs["y"], strict=True))
    published = sorted_groups(order, dict(zip(keys, pairs["verdict"], strict=True)))
    options = [[(kept, cost) for kept, cost in moves(c) if cost <= most] for c in counts]
    best_list = best_top = -1
    for choice in itertools.product(*options):
        cost = sum(c for _, c in choice)
        if cost == 0 or cost > most:
            continue
        changed = {
            key: v
            for key, (kept, _) in zip(keys, choice, strict=True)
            if (v := _verdict(kept, rule)) is not None
        }
        groups = sorted_groups(order, changed)
        if groups != published:
            best_list = cost if best_list < 0 else min(best_list, cost)
            if groups is None or groups[0] != published[0]:
                best_top = cost if best_top < 0 else min(best_top, cost)
    return best_list, best_top


@pytest.mark.parametrize("rule", RULES[:3], ids=lambda r: f"{r.rule}-{r.margin}")
def test_list_fragility_equals_brute_force(rule):
    """Every combination of answers of every pair, up to three changed: the fewest that change
    a group boundary, and the top group, are what the single-pair search finds."""
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(12):
        order, pairs = _campaign(rng, size=int(rng.integers(3, 6)), answers=3, rule=rule)
        if len(pairs) > 6:
            continue
        table = list_fragility(pairs, {"q": order}, rule)
        row = table.iloc[0]
        for column, top_column, moves in (
            ("removals", "top_removals", _removals),
            ("flips", "top_flips", _flips),
        ):
            expected_list, expected_top = _brute_force(order, pairs, rule, moves, most=3)
            found = row[column] if pd.notna(row[column]) else -1
            found_top = row[top_column] if pd.notna(row[top_column]) else -1
            assert (found if found <= 3 else -1) == expected_list, (order, pairs, column)
            assert (found_top if found_top <= 3 else -1) == expected_top, (order, pairs, column)
        checked += 1
    assert checked >= 6


def test_list_fragility_names_the_weakest_pair():
    order = ["a", "b", "c"]  # c is the pivot, then b against a
    pairs = pd.DataFrame(
        [("q", "a", "c", "sort", 9, 1, 0, 1), ("q", "b", "c", "sort", 3, 7, 0, 1),
         ("q", "a", "b", "sort", 6, 4, 0, 1)],
        columns=["query", "x", "y", "kind", "more", "equal", "less", "verdict"],
    )  # fmt: skip
    rule = AggregationRule(rule="margin", margin=2)
    table = list_fragility(pairs, {"q": order}, rule)
    row = table.iloc[0]
    assert (row["weakest_x"], row["weakest_y"]) == ("b", "c")
    assert row["flips"] == 1 and row["removals"] == 2
    assert row["groups"] == 3
