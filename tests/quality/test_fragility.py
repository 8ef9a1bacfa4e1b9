"""Fragility of verdicts and lists: the exact figures against brute force on small campaigns."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pandas as pd
import pytest
from console_script import crowdprefs
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdprefs.campaign.aggregate import (
    VERDICTS,
    AggregationRule,
    change_costs,
    cheapest,
    fewest_changes,
    verdicts,
)
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


def _enumerated(counts: np.ndarray, rule: AggregationRule) -> tuple[np.ndarray, np.ndarray]:
    """:func:`change_costs` by deciding every reachable count row of each pair (every kept
    subset of its counts, every split of its answers): the oracle of the searches."""
    removal, flip = [], []
    for row in counts:
        n = int(row.sum())
        own = int(verdicts(*row[:, None], rule)[0][0])
        axes = [np.arange(c + 1) for c in row]
        kept = np.stack(np.meshgrid(*axes, indexing="ij"), -1).reshape(-1, 3)
        kept = kept[kept.sum(axis=1) >= 1]
        a, b = np.triu_indices(n + 1)
        splits = np.column_stack([a, b - a, n - b])
        for table, rows, cost in (
            (removal, kept, n - kept.sum(axis=1)),
            (flip, splits, np.maximum(splits - row, 0).sum(axis=1)),
        ):
            decided = verdicts(*rows.T, rule)[0]
            table.append(
                [
                    int(cost[decided == v].min()) if v != own and (decided == v).any() else -1
                    for v in VERDICTS
                ]
            )
    return np.array(removal, np.int64), np.array(flip, np.int64)


RULE = st.one_of(
    st.builds(lambda m: AggregationRule(rule="margin", margin=m), st.integers(1, 8)),
    st.builds(
        lambda sided, alpha, method, continuity: AggregationRule(
            sided=sided, alpha=alpha, method=method, continuity=continuity
        ),
        st.sampled_from(["two-sided", "one-sided"]),
        st.one_of(st.sampled_from([0.05, 0.01]), st.floats(1e-4, 0.6)),
        st.sampled_from(["asymptotic", "exact", "auto"]),
        st.booleans(),
    ),
)


@settings(max_examples=80, deadline=None)
@given(
    rule=RULE,
    counts=st.lists(
        st.tuples(*[st.integers(0, 14)] * 3).filter(lambda c: sum(c) > 0), min_size=1, max_size=6
    ),
)
def test_searched_costs_equal_every_reachable_row(rule, counts):
    """The searches of change_costs against deciding every reachable row, for every rule and
    setting (sidedness, α, exact or asymptotic, continuity, margin), with and without ties."""
    counts = np.array(counts, np.int64)
    removal, flip = change_costs(*counts.T, rule)
    expected_removal, expected_flip = _enumerated(counts, rule)
    assert (removal == expected_removal).all() and (flip == expected_flip).all()


@pytest.mark.parametrize(
    "rule",
    [
        AggregationRule(),
        AggregationRule(sided="one-sided", alpha=0.01),
        AggregationRule(continuity=False, alpha=0.2),
        AggregationRule(rule="margin", margin=3),
    ],
    ids=["two-sided", "one-sided", "no-continuity", "margin-3"],
)
def test_searched_costs_of_hundreds_of_answers(rule):
    """Pairs of 200–310 answers, with many ties, some decided and some not: the same costs as
    deciding each of their up to a million reachable rows."""
    counts = np.array([[120, 90, 100], [150, 100, 50], [60, 200, 40], [5, 290, 0], [130, 0, 70]])
    removal, flip = change_costs(*counts.T, rule)
    expected_removal, expected_flip = _enumerated(counts, rule)
    assert (removal == expected_removal).all() and (flip == expected_flip).all()


def _long_answers(path, per: int, ties: float, seed: int) -> np.ndarray:
    """A long-format answers file: 6 pairs of one query × ``per`` answers; their counts."""
    rng = np.random.default_rng(seed)
    rows, counts = [], []
    for pair in range(6):
        share = 0.3 + 0.08 * pair  # from clearly "right" to clearly "left"
        labels = rng.choice(
            ["left", "equal", "right"], per, p=[(1 - ties) * share, ties, (1 - ties) * (1 - share)]
        )
        counts.append([(labels == label).sum() for label in ("left", "equal", "right")])
        rows += [(f"w{i}", "q", f"d{pair}", "pivot", label) for i, label in enumerate(labels)]
    pd.DataFrame(rows, columns=["worker", "query", "left", "right", "label"]).to_csv(
        path, index=False
    )
    return np.array(counts, np.int64)


@pytest.mark.parametrize(
    ("options", "rule"),
    [
        ((), AggregationRule()),
        (("--rule", "margin", "--margin", "3"), AggregationRule(rule="margin", margin=3)),
        (("--alpha", "0.01"), AggregationRule(alpha=0.01)),
    ],
    ids=["mann-whitney", "margin", "alpha"],
)
def test_audit_of_hundreds_of_answers_a_pair(tmp_path, options, rule):
    """``crowdprefs audit --answers`` of pairs with 240 answers (a third "equal") reports each
    verdict's fewest removals and flips as deciding every reachable row does."""
    path = tmp_path / "answers.csv"
    counts = _long_answers(path, 240, 1 / 3, seed=5)
    done = crowdprefs(
        "audit", "--answers", path, "--format", "long", "--json", "--resamples", "0", *options
    )
    assert done.returncode == 0, done.stderr
    pairs = pd.DataFrame(json.loads(done.stdout)["fragile_pairs"]).sort_values("x")
    assert pairs[["more", "equal", "less"]].to_numpy().tolist() == counts.tolist()
    removal, flip = _enumerated(counts, rule)
    assert (
        pairs["removals"].fillna(-1).astype(int).tolist()
        == np.minimum(
            np.where(cheapest(removal) < 0, counts.sum(axis=1), cheapest(removal)),
            counts.sum(axis=1),
        ).tolist()
    )
    assert pairs["flips"].fillna(-1).astype(int).tolist() == cheapest(flip).tolist()


def test_audit_bradley_terry_of_hundreds_of_answers_a_pair(tmp_path):
    """The bradley-terry rule's audit of the same file: each sorting verdict's approximate
    fragility from the fit, every pair reported."""
    path = tmp_path / "answers.csv"
    _long_answers(path, 240, 1 / 3, seed=5)
    done = crowdprefs(
        "audit", "--answers", path, "--format", "long", "--json", "--resamples", "0",
        "--rule", "bradley-terry",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    pairs = pd.DataFrame(json.loads(done.stdout)["fragile_pairs"])
    assert len(pairs) == 6 and not pairs["exact"].any()
    assert (pairs["removals"].dropna() >= 1).all() and pairs["flips"].notna().any()


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
