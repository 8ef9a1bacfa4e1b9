"""The demo: a synthetic collection shaped like seed 002's, sorted by the simulated crowd.

The collection has 11 queries with 4 to 23 candidates each, 118 in all (the Eval05 lists of seed
002 §5), and a hidden truth of ordered groups of one to five equally similar candidates.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .io import write_lists
from .project import Project, Settings, init_project

QUERY_SIZES = (4, 6, 7, 8, 9, 10, 11, 12, 14, 14, 23)
"""Candidates per query: 118 in all, from 4 to 23, like the Eval05 collection."""


def make_collection(
    seed: int = 2010, sizes: tuple[int, ...] = QUERY_SIZES
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Candidates ``query, document`` and their hidden truth ``query, document, group``.

    Each query's candidates are cut into consecutive groups of 1 to 5 members (mostly 2–3), so
    group sizes resemble the crowdsourced lists of seed 002.
    """
    rng = np.random.default_rng([seed, 0xDE30])
    rows = []
    for q, size in enumerate(sizes, start=1):
        query = f"q{q:02d}"
        group, left = 1, size
        documents = [f"{query}-v{i:02d}" for i in range(1, size + 1)]
        rng.shuffle(documents)
        position = 0
        while left:
            members = min(left, int(rng.choice([1, 2, 2, 3, 3, 4, 5])))
            rows.extend((query, documents[position + i], group) for i in range(members))
            position += members
            left -= members
            group += 1
    truth = pd.DataFrame(rows, columns=["query", "document", "group"])
    candidates = truth[["query", "document"]].sort_values(["query", "document"], ignore_index=True)
    return candidates, truth


def create_demo_project(root: Path, seed: int = 2010, answers_per_pair: int = 10) -> Project:
    """Write ``candidates.csv`` and ``truth.qrel`` in ``root`` and initialise ``root/project``."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    candidates, truth = make_collection(seed)
    candidates.to_csv(root / "candidates.csv", index=False)
    write_lists(truth, root / "truth.qrel", tag="truth")
    settings = Settings(
        answers_per_pair=answers_per_pair, sections={"simulated": {"truth": "../truth.qrel"}}
    )
    return init_project(root / "project", root / "candidates.csv", seed=seed, settings=settings)
