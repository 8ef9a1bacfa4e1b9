"""Preference frames answered by the simulated crowd, for the library-surface tests."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from crowdprefs.quality.crowd_model import (
    CrowdModel,
    WorkerPool,
    latent_similarity,
    simulate_answers,
)


def truth_lists(groups_per_query: dict[str, list[list[str]]]) -> pd.DataFrame:
    """``query, document, group`` from ``{query: [[docs of group 1], [group 2], ...]}``."""
    return pd.DataFrame(
        [
            (query, document, group)
            for query, groups in groups_per_query.items()
            for group, members in enumerate(groups, start=1)
            for document in members
        ],
        columns=["query", "document", "group"],
    )


def all_pairs(truth: pd.DataFrame) -> pd.DataFrame:
    """Every pair of candidates of every query: ``query, x, y``."""
    rows = [
        (query, x, y)
        for query, frame in truth.groupby("query", sort=True)
        for x, y in itertools.combinations(sorted(frame["document"]), 2)
    ]
    return pd.DataFrame(rows, columns=["query", "x", "y"])


def crowd_answers(
    truth: pd.DataFrame,
    pairs: pd.DataFrame,
    answers: int = 10,
    model: CrowdModel = CrowdModel(bots=0, careless_share=0.0),
    seed: int = 7,
) -> tuple[pd.DataFrame, WorkerPool]:
    """The simulated crowd's answers to ``pairs`` (``query, x, y``) as a preference frame
    ``worker, query, left, right, label, seconds``, with the pool (to know who is careless)."""
    pool = WorkerPool.draw(model, seed)
    shown = np.random.default_rng(seed).random(len(pairs)) < 0.5
    asked = pairs.reset_index(drop=True).assign(
        pair_id=np.arange(len(pairs)), a_is_x=shown.astype(int), answers_wanted=answers
    )
    raw = simulate_answers(asked, latent_similarity(truth), pool, model, seed)
    pair = asked.set_index("pair_id").loc[raw["pair_id"]].reset_index(drop=True)
    a_is_x = pair["a_is_x"].to_numpy(dtype=bool)
    left = np.where(a_is_x, pair["x"], pair["y"])
    right = np.where(a_is_x, pair["y"], pair["x"])
    label = raw["choice"].map({"A": "left", "B": "right", "equal": "equal"}).to_numpy()
    frame = pd.DataFrame(
        {
            "worker": raw["worker_id"].to_numpy(),
            "query": pair["query"].to_numpy(),
            "left": left,
            "right": right,
            "label": label,
            "seconds": raw["seconds"].to_numpy(),
        }
    )
    return frame, pool
