"""Importing a results file's answers into a project (the results-file crowd adapter).

The file is read by :func:`crowdprefs.results_file.read_results` (the one reader of recorded
answers); this module matches each answer to the project's pair and stores it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError
from crowdprefs.results_file import iso_time

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project


def import_answers(project: Project, answers: pd.DataFrame, crowd: str = "mturk") -> dict:
    """Store the answers of a results CSV (:func:`read_results`) in a project, idempotently.

    Each row is matched to its pair by HIT id (any crowd's ``hits``), else by query and the two
    documents (the latest batch asking them). Scores and choices are re-oriented to the pair's own
    x and A side. Rows without an answer are not stored (the schema holds answers only) but are
    counted in ``empty_rows``; a row matching no pair of the project raises :class:`InputError`.
    Answers already stored (same crowd and assignment id) are skipped. When the open batch then
    has all its answers it moves on to collected (through the batch state machine,
    :meth:`~crowdprefs.campaign.store.Store.advance_batch`), ready for ``aggregate``.
    """
    source = answers.attrs.get("source", "the results file")
    store = project.store
    pairs = store.pair_matches()
    by_hit = pairs.dropna(subset=["hit_id"]).drop_duplicates("hit_id").set_index("hit_id")
    key = (
        pairs["query"]
        + "\x1f"
        + pairs[["x", "y"]].min(axis=1)
        + "\x1f"
        + pairs[["x", "y"]].max(axis=1)
    )
    by_docs = pd.Series(pairs["pair_id"].to_numpy(), index=key).groupby(level=0).last()
    row_key = (
        answers["query"]
        + "\x1f"
        + answers[["x", "y"]].min(axis=1)
        + "\x1f"
        + answers[["x", "y"]].max(axis=1)
    )
    pair_id = answers["hit_id"].map(by_hit["pair_id"]).fillna(row_key.map(by_docs))
    if pair_id.isna().any():
        row = answers[pair_id.isna()].iloc[0]
        number = int(np.flatnonzero(pair_id.isna())[0]) + 1
        raise InputError(
            f"{source}: row {number}: HIT {row['hit_id']} (query {row['query']!r}, "
            f"{row['x']!r} vs {row['y']!r}) matches no pair of the project {project.root}"
        )
    pair = pairs.set_index("pair_id").loc[pair_id.astype(np.int64)]
    given = (answers["choice"] != "").to_numpy()
    same = answers["x"].to_numpy() == pair["x"].to_numpy()
    score = answers["score"].to_numpy() * np.where(same, 1, -1)
    side = score * np.where(pair["a_is_x"].to_numpy() == 1, 1, -1)
    choice = pd.Series(side).map({1: "A", -1: "B", 0: "equal"})

    rows = pd.DataFrame(
        {
            "pair_id": pair_id.astype(np.int64).to_numpy(),
            "assignment_id": answers["assignment_id"].to_numpy(),
            "worker_id": answers["worker_id"].to_numpy(),
            "choice": choice.to_numpy(),
            "score": score,
            "seconds": answers["seconds"].to_numpy(),
            "accepted_at": iso_time(answers["accepted_at"]).replace("", None).to_numpy(),
            "submitted_at": iso_time(answers["submitted_at"]).replace("", None).to_numpy(),
            "background": answers["background"].replace("", None).to_numpy(),
            "comment": answers["comment"].replace("", None).to_numpy(),
            "status": answers["status"].to_numpy(),
        }
    )[given]
    rows["score"] = rows["score"].astype(int)
    new = store.add_answers(crowd, rows)
    last = store.last_batch()
    collected = (
        last is not None
        and last["status"] in ("built", "published")
        and store.advance_batch(last["iteration"], "collected")
    )
    return {
        "rows": len(answers),
        "new": new,
        "already_stored": int(given.sum()) - new,
        "empty_rows": answers.attrs.get("empty_rows", []),
        "encoding": answers.attrs.get("encoding"),
        "iterations": sorted(int(i) for i in pair["iteration"].unique()),
        "batch_collected": last["iteration"] if collected else None,
    }
