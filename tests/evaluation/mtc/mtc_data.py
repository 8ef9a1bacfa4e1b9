"""Synthetic collections for the MTC tests: random runs and document metadata."""

from __future__ import annotations

import numpy as np
import pandas as pd

from crowdprefs.evaluation import mtc


def make_runs(systems: int, queries: int, k: int, pool: int, seed: int) -> pd.DataFrame:
    """Random runs: each system retrieves k of ``pool`` candidates per query."""
    rng = np.random.default_rng(seed)
    rows = [
        (f"s{s}", f"q{q}", f"q{q}d{d}")
        for s in range(systems)
        for q in range(queries)
        for d in rng.choice(pool, k, replace=False)
    ]
    return pd.DataFrame(rows, columns=["system", "query", "document"])


def make_metadata(col: mtc.Collection, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    docs = pd.unique(pd.concat([col.pairs["document"], col.pairs["query"]]))
    return pd.DataFrame(
        {
            "document": docs,
            "artist": [f"a{i}" for i in rng.integers(0, 15, len(docs))],
            "genre": [f"g{i}" for i in rng.integers(0, 4, len(docs))],
        }
    )
