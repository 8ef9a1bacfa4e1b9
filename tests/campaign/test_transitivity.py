"""Rates of transitivity violations over judged pairs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdprefs.campaign.transitivity import violation_rates
from crowdprefs.errors import InputError


def judgments(rows) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["worker_id", "query", "x", "y", "value"])


def test_a_cycle_and_an_intransitive_indifference_violate_a_chain_does_not():
    rates = violation_rates(
        judgments(
            [
                ("chain", "q", "a", "b", 1),
                ("chain", "q", "b", "c", 1),
                ("chain", "q", "a", "c", 1),
                ("cycle", "q", "a", "b", 1),
                ("cycle", "q", "b", "c", 1),
                ("cycle", "q", "c", "a", 1),  # shown the other way round: c > a
                ("equal", "q", "a", "b", 0),
                ("equal", "q", "b", "c", 0),
                ("equal", "q", "a", "c", -1),
            ]
        ),
        by="worker_id",
    )
    assert rates["triples"].tolist() == [1, 1, 1]
    assert rates["violations"].to_dict() == {"chain": 0, "cycle": 1, "equal": 1}


def test_triples_are_counted_within_queries_and_summed_per_worker():
    rows = [("w", q, *pair, 1) for q in ("q1", "q2") for pair in (("a", "b"), ("b", "c"))]
    rows += [("w", "q1", "a", "c", -1), ("w", "q2", "c", "a", -1), ("v", "q1", "a", "b", 1)]
    rates = violation_rates(judgments(rows), by="worker_id")
    assert rates.loc["w", "triples"] == 2 and rates.loc["w", "violations"] == 1
    assert rates.loc["w", "rate"] == 0.5
    assert rates.loc["v", "triples"] == 0 and np.isnan(rates.loc["v", "rate"])
    per_query = violation_rates(judgments(rows))
    assert per_query["violations"].to_dict() == {"q1": 1, "q2": 0}


def test_a_pair_judged_twice_counts_with_the_sign_of_its_mean():
    rows = [
        ("w", "q", "a", "b", 1),
        ("w", "q", "b", "a", 1),  # the same pair the other way round: mean 0, "equal"
        ("w", "q", "b", "c", 0),
        ("w", "q", "a", "c", 0),
    ]
    assert violation_rates(judgments(rows), by="worker_id").loc["w", "violations"] == 0
    with pytest.raises(InputError, match="lack column.*value"):
        violation_rates(judgments(rows).drop(columns="value"))


def test_groups_skipped_without_a_loop_hold_no_triple():
    """Stars around a pivot, chains and complete queries mixed: the rates equal counting every
    group's triples one by one (the groups that cannot close a triple are skipped unvisited)."""
    import itertools

    from crowdprefs.campaign.transitivity import _triples

    rng = np.random.default_rng(4)
    rows = []
    for q in range(60):
        docs = [f"d{i}" for i in range(rng.integers(3, 7))]
        shape = q % 3
        if shape == 0:
            pairs = [(d, "pivot") for d in docs]
        elif shape == 1:
            pairs = list(itertools.pairwise(docs))
        else:
            pairs = [p for p in itertools.combinations(docs, 2) if rng.random() < 0.8]
        rows += [(f"w{rng.integers(0, 4)}", f"q{q}", x, y, rng.integers(-1, 2)) for x, y in pairs]
    frame = judgments(rows)
    for by in ("query", "worker_id"):
        rates = violation_rates(frame, by=by)
        keys = list(dict.fromkeys([by, "query"]))
        expected = {}
        for key, group in frame.groupby(keys):
            found = _triples(*(group[c].to_numpy() for c in ("x", "y", "value")))
            total = expected.setdefault(key[0], [0, 0])
            total[0], total[1] = total[0] + found[0], total[1] + found[1]
        assert rates[["triples", "violations"]].to_numpy().tolist() == [
            expected[k] for k in rates.index
        ]
        assert rates["triples"].sum() > 0
