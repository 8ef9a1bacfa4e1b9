"""Importing a results file's answers into a project (the results-file crowd adapter).

The file is read by :func:`crowdprefs.results_file.read_results` (the one reader of recorded
answers); this module matches each answer to the project's pair and stores it, its free texts
cleaned by the rule every crowd applies (:func:`crowdprefs.campaign.answers.clean_texts`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crowdprefs.campaign.answers import TEXT_LIMITS, clean_texts
from crowdprefs.errors import InputError
from crowdprefs.progress import note
from crowdprefs.results_file import iso_time

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project


def _key(query: pd.Series, x: pd.Series, y: pd.Series) -> pd.Series:
    """A pair's identity whatever its orientation: query and the two documents in order."""
    low, high = (
        np.minimum(x.to_numpy(dtype=object), y.to_numpy(dtype=object)),
        np.maximum(x.to_numpy(dtype=object), y.to_numpy(dtype=object)),
    )
    return query.reset_index(drop=True) + "\x1f" + pd.Series(low) + "\x1f" + pd.Series(high)


def _refuse(source: str, mask: np.ndarray, message) -> None:
    """Raise for the first row of ``mask`` (row 1 = the first answer of the file);
    ``message(i)`` words it for row index ``i``."""
    if mask.any():
        i = int(np.flatnonzero(mask)[0])
        raise InputError(f"{source}: row {i + 1}: {message(i)}; nothing of the file was stored")


def _import_recording(project: Project, answers: pd.DataFrame, crowd: str) -> dict:
    """:func:`import_answers` into a project without batches: the file is a recorded campaign
    (:func:`crowdprefs.campaign.replay.import_recording`)."""
    from crowdprefs.campaign.replay import import_recording

    replayed = import_recording(project, answers, crowd)
    given = int((answers["choice"] != "").sum())
    return {
        "rows": len(answers),
        "new": given,
        "already_stored": 0,
        "empty_rows": answers.attrs.get("empty_rows", []),
        "encoding": answers.attrs.get("encoding"),
        "identity": answers.attrs.get("identity"),
        "iterations": sorted(int(i) for i in answers["iteration"].unique()),
        "batch_collected": None,
        "closed": sum(replayed.closed.values()),
        "queries": len(replayed.closed),
    }


def import_answers(project: Project, answers: pd.DataFrame, crowd: str = "mturk") -> dict:
    """Store the answers of a results file (:func:`crowdprefs.results_file.read_results`) in a
    project, all or nothing, idempotently.

    Each row is matched to its pair by HIT id (any crowd's ``hits``), else by query and the two
    documents (the latest batch asking them). A row whose HIT names one pair while its query and
    documents name another is refused, never stored on the HIT's pair; so is a new answer for a
    pair of an aggregated batch or beyond the answers the pair wants (``answers_wanted``, with
    those the crowd already gave), and a row matching no pair. A refused row names its number
    and nothing of the file is stored. Scores and choices are re-oriented to the pair's own x
    and A side. Free texts longer than the HIT page allows (:data:`TEXT_LIMITS`) are cut to it,
    as MTurk collect cuts them, with a note naming the first row; the file's own review status is
    kept. Rows without an answer are not stored (the schema holds answers only) but are
    counted in ``empty_rows``. Answers already stored (same crowd and assignment id) are
    skipped. When the open batch then has all its answers it moves on to collected (through the
    batch state machine, :meth:`~crowdprefs.campaign.store.Store.advance_batch`).

    Into a project without batches, answers numbered in iterations (a results file placed in
    batches by its HITs' creation times) are a recorded campaign: its iterations become the
    project's batches, its candidates reordered so its QuickSort takes the recorded pivots
    (the summary then adds ``closed`` and ``queries``).
    """
    source = answers.attrs.get("source", "the results file")
    store = project.store
    if store.last_batch() is None and answers["iteration"].notna().all():
        return _import_recording(project, answers, crowd)
    pairs = store.pair_matches()
    pair_id = _matched_pairs(project, answers, pairs, source)
    pair = pairs.drop_duplicates("pair_id").set_index("pair_id").loc[pair_id]
    given = (answers["choice"] != "").to_numpy()
    new = given & ~answers["assignment_id"].isin(store.known_assignments(crowd)).to_numpy()
    _check_room(project, answers, pair, new, crowd, source)
    stored = store.add_answers(crowd, _answer_rows(answers, pair, given, source))
    last = store.last_batch()
    collected = (
        last is not None
        and last["status"] in ("built", "published")
        and store.advance_batch(last["iteration"], "collected")
    )
    return {
        "rows": len(answers),
        "new": stored,
        "already_stored": int(given.sum()) - stored,
        "empty_rows": answers.attrs.get("empty_rows", []),
        "encoding": answers.attrs.get("encoding"),
        "identity": answers.attrs.get("identity"),
        "iterations": sorted(int(i) for i in pair["iteration"].unique()),
        "batch_collected": last["iteration"] if collected else None,
    }


def _matched_pairs(
    project: Project, answers: pd.DataFrame, pairs: pd.DataFrame, source: str
) -> np.ndarray:
    """Each row's ``pair_id``: by HIT id (any crowd's ``hits``), else by query and the two
    documents (the latest batch asking them); a row whose HIT names another pair than its
    documents, or that matches no pair, is refused (:func:`_refuse`)."""
    by_hit = pairs.dropna(subset=["hit_id"]).drop_duplicates("hit_id").set_index("hit_id")
    key = _key(pairs["query"], pairs["x"], pairs["y"])
    by_docs = pd.Series(pairs["pair_id"].to_numpy(), index=key.to_numpy()).groupby(level=0).last()
    row_key = _key(answers["query"], answers["x"], answers["y"])
    from_hit = answers["hit_id"].map(by_hit["pair_id"]).reset_index(drop=True)
    from_docs = row_key.map(by_docs)
    known_hit = from_hit.notna().to_numpy()
    wrong = known_hit & (from_hit.to_numpy() != from_docs.to_numpy())
    keys = pd.Series(key.to_numpy(), index=pairs["hit_id"].to_numpy())
    keys = keys[keys.index.notna() & ~keys.index.duplicated()]
    hit_key = answers["hit_id"].map(keys)

    def wrong_pair(i: int) -> str:
        row = answers.iloc[i]
        query, x, y = str(hit_key.iloc[i]).split("\x1f")
        return (
            f"HIT {row['hit_id']} asks {x!r} vs {y!r} for query {query!r} but the row names "
            f"{row['x']!r} vs {row['y']!r} for query {row['query']!r}"
        )

    _refuse(source, wrong, wrong_pair)
    pair_id = from_hit.fillna(from_docs)

    def unmatched(i: int) -> str:
        row = answers.iloc[i]
        return (
            f"HIT {row['hit_id']} (query {row['query']!r}, {row['x']!r} vs {row['y']!r}) "
            f"matches no pair of the project {project.root}"
        )

    _refuse(source, pair_id.isna().to_numpy(), unmatched)
    return pair_id.astype(np.int64).to_numpy()


def _check_room(
    project: Project,
    answers: pd.DataFrame,
    pair: pd.DataFrame,
    new: np.ndarray,
    crowd: str,
    source: str,
) -> None:
    """Refuse a ``new`` answer for a pair of a batch published to another crowd, of an
    aggregated batch, or beyond the answers its pair wants (with those already stored)."""
    store = project.store
    pair_id = pair.index.to_numpy()
    batches = store.batches().set_index("iteration")
    owner = pair["iteration"].map(batches["crowd"]).to_numpy()
    _refuse(
        source,
        new & pd.notna(owner) & (owner != crowd),
        lambda i: (
            f"batch {int(pair['iteration'].iloc[i])} was published to the {owner[i]} crowd, "
            f"not {crowd!r}: its answers come from there (give --crowd {owner[i]} if this file "
            "holds that crowd's answers)"
        ),
    )
    status = batches["status"]
    finished = new & (pair["iteration"].map(status).to_numpy() == "aggregated")
    _refuse(
        source,
        finished,
        lambda i: f"batch {int(pair['iteration'].iloc[i])} is already aggregated (finished)",
    )
    wanted = store.pairs().set_index("pair_id")["answers_wanted"].reindex(pair_id).to_numpy()
    have = store.answers()["pair_id"].value_counts().reindex(pair_id).fillna(0).to_numpy()
    counted = new & (answers["status"] != "rejected").to_numpy()
    running = pd.Series(counted.astype(int)).groupby(pair_id).cumsum().to_numpy()
    _refuse(
        source,
        counted & (have + running > wanted),
        lambda i: (
            f"pair {answers['x'].iloc[i]!r} vs {answers['y'].iloc[i]!r} of query "
            f"{answers['query'].iloc[i]!r} wants {int(wanted[i])} answers; this one would be "
            f"number {int(have[i] + running[i])}"
        ),
    )


def _answer_rows(
    answers: pd.DataFrame, pair: pd.DataFrame, given: np.ndarray, source: str
) -> pd.DataFrame:
    """The answers given, as the store takes them: scores and choices re-oriented to the
    pair's own x and A side, free texts cut to the HIT page's limits (with a note)."""
    same = answers["x"].to_numpy() == pair["x"].to_numpy()
    score = answers["score"].to_numpy() * np.where(same, 1, -1)
    side = score * np.where(pair["a_is_x"].to_numpy() == 1, 1, -1)
    choice = pd.Series(side).map({1: "A", -1: "B", 0: "equal"})
    texts = clean_texts(answers.reset_index(drop=True))
    cut = texts[[f"{name}_too_long" for name in TEXT_LIMITS]].any(axis=1).to_numpy() & given
    if cut.any():
        note(
            f"{source}: {int(cut.sum())} answers' free texts were longer than the HIT page "
            f"allows and were cut (first: row {int(np.flatnonzero(cut)[0]) + 1})"
        )
    rows = pd.DataFrame(
        {
            "pair_id": pair.index.to_numpy(),
            "assignment_id": answers["assignment_id"].to_numpy(),
            "worker_id": answers["worker_id"].to_numpy(),
            "choice": choice.to_numpy(),
            "score": score,
            "seconds": answers["seconds"].to_numpy(),
            "accepted_at": iso_time(answers["accepted_at"]).replace("", None).to_numpy(),
            "submitted_at": iso_time(answers["submitted_at"]).replace("", None).to_numpy(),
            "background": texts["background"].to_numpy(),
            "comment": texts["comment"].to_numpy(),
            "status": answers["status"].to_numpy(),
        }
    )[given]
    rows["score"] = rows["score"].astype(int)
    return rows
