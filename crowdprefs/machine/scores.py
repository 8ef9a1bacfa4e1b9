"""A machine prior: a similarity score per candidate from any model, checked against a project.

The file is a CSV ``query,document,score`` (higher = more similar to the query): one row for every
candidate of the project and no other. The scores choose the sort's pivots
(:func:`crowdprefs.campaign.sorting.arranged`) and, calibrated on the campaign's own human answers
(:mod:`crowdprefs.machine.link`), may decide pairs the model is sure about
(:mod:`crowdprefs.machine.overturn`). Only their order within a query matters.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import lazy_loader

from crowdprefs.errors import InputError
from crowdprefs.files import read_text, write_atomic

np = lazy_loader.load("numpy")  # imported on first use
pd = lazy_loader.load("pandas")  # imported on first use: the driver imports this module

COLUMNS = ["query", "document", "score"]


def read_prior(path: str | os.PathLike, candidates: pd.DataFrame) -> pd.DataFrame:
    """The prior of ``path`` for ``candidates`` (``query, document``): ``query, document,
    score`` in the candidates' order. One line names the file, the line and the problem for a
    missing column, a score that is not a finite number, a row twice, a row naming no
    candidate, or a candidate without a score."""
    path = Path(path)
    text, _ = read_text(path, "prior file")
    from crowdprefs.io import csv_frame  # pandas: the driver imports this module

    frame = csv_frame(text, path, skipinitialspace=True)
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in COLUMNS if c not in frame.columns]
    if missing:
        raise InputError(
            f"{path}: missing column(s) {', '.join(missing)} (need {','.join(COLUMNS)})"
        )
    frame = frame[COLUMNS].apply(lambda column: column.str.strip())
    score = pd.to_numeric(frame["score"], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(score)
    if bad.any():
        row = int(bad.argmax())
        raise InputError(
            f"{path}:{row + 2}: score {frame['score'].iloc[row]!r} is not a finite number"
        )
    frame["score"] = score
    return check_prior(frame, candidates, str(path), lines=True)


def check_prior(
    prior: pd.DataFrame, candidates: pd.DataFrame, source: str, *, lines: bool = False
) -> pd.DataFrame:
    """``prior`` (``query, document, score``) reindexed on ``candidates``, or one line naming
    ``source`` and the first row twice, row naming no candidate, or candidate left out, or a
    constant prior (one score within every query: it would rank nothing)."""
    where = (lambda i: f"{source}:{i + 2}") if lines else (lambda i: source)
    twice = prior.duplicated(["query", "document"]).to_numpy()
    if twice.any():
        row = int(twice.argmax())
        raise InputError(
            f"{where(row)}: query {prior['query'].iloc[row]!r}, document "
            f"{prior['document'].iloc[row]!r} is scored twice"
        )
    keys = pd.MultiIndex.from_frame(candidates[["query", "document"]].astype(str))
    given = pd.MultiIndex.from_frame(prior[["query", "document"]].astype(str))
    stranger = ~given.isin(keys)
    if stranger.any():
        row = int(stranger.argmax())
        raise InputError(
            f"{where(row)}: query {prior['query'].iloc[row]!r}, document "
            f"{prior['document'].iloc[row]!r} is not a candidate of the project"
        )
    unscored = ~keys.isin(given)
    if unscored.any():
        query, document = keys[int(unscored.argmax())]
        raise InputError(
            f"{source}: no score for query {query!r}, document {document!r} "
            f"({int(unscored.sum())} candidate(s) unscored; the prior must cover every candidate)"
        )
    score = prior.set_index(["query", "document"])["score"].reindex(keys)
    spread = score.groupby(level=0).agg(["min", "max", "size"])
    if len(spread) and ((spread["min"] == spread["max"]) | (spread["size"] < 2)).all():
        raise InputError(
            f"{source}: every query's candidates have one and the same score: a constant prior "
            "ranks nothing (give a model's scores)"
        )
    return pd.DataFrame(
        {
            "query": keys.get_level_values(0),
            "document": keys.get_level_values(1),
            "score": score.to_numpy(),
        }
    )


def fingerprint(prior: pd.DataFrame) -> str:
    """A digest of the scores by candidate, whatever the rows' order (to notice a prior that
    changed once the campaign started)."""
    rows = prior.sort_values(["query", "document"])[COLUMNS]
    return hashlib.sha256(rows.to_csv(index=False, float_format="%.17g").encode()).hexdigest()


def write_prior(prior: pd.DataFrame, path) -> None:
    """Write ``query,document,score`` atomically (``path``: a path or a checked output)."""
    from crowdprefs.io import csv_text  # pandas: the driver imports this module

    write_atomic(path, csv_text(prior[COLUMNS], float_format="%.17g"))
