"""MTC, the collection: orders, counts, overlap, input errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdprefs.errors import InputError
from crowdprefs.evaluation import mtc


def test_collection_orders_counts_and_overlap():
    runs = pd.DataFrame(
        [
            ("B", "q2", "x"),
            ("B", "q2", "y"),
            ("B", "q1", "z"),
            ("A", "q1", "w"),
            ("A", "q1", "z"),
            ("A", "q2", "x"),
        ],
        columns=["system", "query", "document"],
    )
    col = mtc.build_collection(runs)
    assert list(col.systems) == ["B", "A"]
    assert list(col.queries) == ["q2", "q1"]
    # pairs grouped by query (first-appearance order), documents in first-appearance order
    assert list(zip(col.pairs["query"], col.pairs["document"], strict=True)) == [
        ("q2", "x"),
        ("q2", "y"),
        ("q1", "z"),
        ("q1", "w"),
    ]
    assert list(col.pairs["c"]) == [2, 1, 2, 1]
    assert col.k == 2
    assert col.overlap == pytest.approx(4 / (2 * 2 * 2))
    assert col.gram(np.ones(4)).tolist() == [[3, 2], [2, 3]]


def test_repeated_document_in_a_run_is_an_input_error():
    runs = pd.DataFrame([("A", "q", "d"), ("A", "q", "d")], columns=["system", "query", "document"])
    with pytest.raises(InputError, match="repeated"):
        mtc.build_collection(runs)


def test_gain_outside_the_scale_is_an_input_error(small):
    _, col, _ = small
    bad = pd.DataFrame({"query": ["q0"], "document": ["q0d0"], "gain": [3.0]})
    with pytest.raises(InputError, match="outside 0..2"):
        mtc.gains_vector(col, bad, "broad")
