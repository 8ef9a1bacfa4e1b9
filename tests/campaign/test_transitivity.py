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
