"""Preference answers in long format, and the field's exchange formats for them.

A *preference frame* holds one answer per row: ``worker, query, left, right, label``, where
``left`` and ``right`` are the two candidates shown (left first) and ``label`` says which one the
worker found more similar to the query: ``left``, ``right`` or ``equal``. It is what people with
their own answers bring to :mod:`crowdprefs.quality.preferences`, without a project.
:func:`preference_frame` checks and normalises such a frame; it also reads crowd-kit's
convention, where ``label`` *is* the preferred item (equal to ``left`` or ``right``).

Exchange formats:

* crowd-kit's pairwise frame ``worker, left, right, label`` (``label`` = the preferred item;
  the format of ``crowdkit.aggregation.BradleyTerry`` and ``NoisyBradleyTerry``):
  :func:`to_crowdkit`, :func:`from_crowdkit`;
* choix's comparisons, a list of ``(winner, loser)`` item indices with the list of items
  (``choix.ilsr_pairwise(len(items), comparisons)``): :func:`to_choix`, :func:`from_choix`.

Neither format knows ties. ``ties="drop"`` (the default) leaves "equal" answers out;
``ties="split"`` turns each into two comparisons, one won by each side, the usual way of
counting a tie as half a win for each (doubled, so that every comparison stays whole). Both
formats hold one query at a time.

Ordered lists as graded qrels that ``ir_measures`` scores are in :mod:`crowdprefs.io`
(:func:`crowdprefs.io.write_preference_qrels`).

Files: :func:`read_preferences` reads a CSV of answers in the long format (``worker, query,
left, right, label[, seconds]``) or as crowd-kit's frame; :func:`long_csv`, :func:`crowdkit_csv`
and :func:`choix_json` give the text of each format (the caller writes it), and
:func:`answer_ids` names each answer of a file by its content, so that reading the same file
twice gives the same ids.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError
from crowdprefs.io import check_names, csv_frame, csv_text, per_distinct

PREFERENCE_COLUMNS = ["worker", "query", "left", "right", "label"]
LABELS = ("left", "equal", "right")
CROWDKIT_COLUMNS = ["worker", "left", "right", "label"]

Ties = Literal["drop", "split"]
FILE_FORMATS = ("long", "crowdkit")
"""The answer files :func:`read_preferences` reads."""


def _row_error(frame: pd.DataFrame, mask: np.ndarray, message: Callable[[int], str]) -> InputError:
    """An error naming the first row (by its index label) where ``mask`` holds; ``message``
    describes the problem at that row's position."""
    row = int(np.flatnonzero(mask)[0])
    return InputError(f"answers row {frame.index[row]!r}: {message(row)}")


def preference_frame(data: pd.DataFrame, *, query: str = "query") -> pd.DataFrame:
    """Check and normalise answers to ``worker, query, left, right, label`` (+ ``seconds``).

    ``label`` may be ``left``, ``right`` or ``equal`` (any case), or the preferred item itself as
    in crowd-kit (a value equal to the row's ``left`` or ``right``; this reading wins when an
    item is itself called "left", "right" or "equal"). Without a ``query`` column every row
    belongs to one query named ``query``. An optional ``seconds`` column (the work time of each
    answer, in seconds; empty when unknown) is kept: the worker flags use it. Items, workers and
    queries are read as strings; the index is kept. The first bad row raises
    :class:`InputError` naming its index label and column.
    """
    if not isinstance(data, pd.DataFrame):
        raise InputError(
            f"answers must be a pandas DataFrame with columns {', '.join(PREFERENCE_COLUMNS)}"
        )
    needed = [c for c in PREFERENCE_COLUMNS if c != "query" or "query" in data.columns]
    missing = [c for c in needed if c not in data.columns]
    if missing:
        raise InputError(
            f"the answers lack column(s) {', '.join(missing)} "
            f"(expected {', '.join(PREFERENCE_COLUMNS)})"
        )
    if data.empty:
        raise InputError("the answers frame has no rows")
    for column in needed:
        values = data[column]
        empty = per_distinct(
            values, lambda names: names.isna() | (names.astype(str).str.strip() == "")
        )
        if empty.any():
            raise _row_error(data, empty, lambda _, c=column: f"column {c!r} is empty")
        check_names(values, "answers", column, lambda i: f"row {data.index[i]!r}")
    frame = pd.DataFrame(index=data.index)
    frame["worker"] = data["worker"].astype(str)
    frame["query"] = data["query"].astype(str) if "query" in data.columns else str(query)
    frame["left"] = data["left"].astype(str)
    frame["right"] = data["right"].astype(str)
    same = (frame["left"] == frame["right"]).to_numpy()
    if same.any():
        raise _row_error(
            data, same, lambda r: f"left and right are the same item {frame['left'].iloc[r]!r}"
        )
    raw = data["label"].astype(str)
    word = per_distinct(raw, lambda labels: labels.str.strip().str.lower())
    label = np.where(
        raw == frame["left"],
        "left",
        np.where(raw == frame["right"], "right", np.where(np.isin(word, LABELS), word, "")),
    )
    bad = label == ""
    if bad.any():
        raise _row_error(
            data,
            bad,
            lambda r: (
                f"label {raw.iloc[r]!r} is neither left, right, equal nor one of the pair's items "
                f"({frame['left'].iloc[r]!r}, {frame['right'].iloc[r]!r})"
            ),
        )
    frame["label"] = label
    if "seconds" in data.columns:
        seconds = pd.to_numeric(data["seconds"], errors="coerce").to_numpy(dtype=float)
        blank = data["seconds"].isna() | (data["seconds"].astype(str).str.strip() == "")
        wrong = ~((seconds >= 0) & np.isfinite(seconds)) & ~blank.to_numpy()
        if wrong.any():
            raise _row_error(
                data,
                wrong,
                lambda r: f"column 'seconds' holds {data['seconds'].iloc[r]}, not seconds >= 0",
            )
        frame["seconds"] = seconds
    return frame


def _one_query(answers: pd.DataFrame, query: str | None) -> pd.DataFrame:
    """The answers of ``query`` (or of the frame's only query)."""
    queries = answers["query"].unique()
    if query is None:
        if len(queries) > 1:
            shown = ", ".join(map(repr, queries[:3])) + (", ..." if len(queries) > 3 else "")
            raise InputError(
                f"the answers hold {len(queries)} queries ({shown}); this format holds one: "
                "name it with query="
            )
        return answers
    chosen = answers[answers["query"] == str(query)]
    if chosen.empty:
        raise InputError(f"the answers hold no query {query!r}")
    return chosen


def _decided(answers: pd.DataFrame, ties: Ties) -> pd.DataFrame:
    """``worker, winner, loser`` of every answer; ties dropped or split (see the module)."""
    if ties not in ("drop", "split"):
        raise InputError(f"ties must be 'drop' or 'split', got {ties!r}")
    answers = answers.reset_index(drop=True)
    left_won = answers["label"] == "left"
    sides = answers[answers["label"] != "equal"]
    won = pd.DataFrame(
        {
            "worker": sides["worker"],
            "left": sides["left"],
            "right": sides["right"],
            "winner": np.where(left_won[sides.index], sides["left"], sides["right"]),
            "loser": np.where(left_won[sides.index], sides["right"], sides["left"]),
        }
    )
    if ties == "drop":
        return won
    equal = answers[answers["label"] == "equal"]
    for_left = pd.DataFrame(
        {
            "worker": equal["worker"],
            "left": equal["left"],
            "right": equal["right"],
            "winner": equal["left"],
            "loser": equal["right"],
        }
    )
    for_right = for_left.assign(winner=equal["right"], loser=equal["left"])
    return pd.concat([won, for_left, for_right]).sort_index(kind="stable")


def to_crowdkit(
    answers: pd.DataFrame, *, query: str | None = None, ties: Ties = "drop"
) -> pd.DataFrame:
    """The answers of one query as crowd-kit's pairwise frame ``worker, left, right, label``.

    ``label`` is the preferred item. ``query`` names the query when the answers hold several;
    ``ties`` as in the module docstring. The index is renumbered from 0.
    """
    answers = _one_query(preference_frame(answers), query)
    decided = _decided(answers, ties)
    return (
        decided[["worker", "left", "right"]]
        .assign(label=decided["winner"])
        .reset_index(drop=True)[CROWDKIT_COLUMNS]
    )


def from_crowdkit(data: pd.DataFrame, *, query: str = "query") -> pd.DataFrame:
    """A crowd-kit pairwise frame (``label`` = the preferred item) as a preference frame of one
    query named ``query``. A label that is neither item is an error (crowd-kit has no ties)."""
    if isinstance(data, pd.DataFrame) and {"left", "right", "label"} <= set(data.columns):
        label = data["label"].astype(str)
        neither = ~(label == data["left"].astype(str)) & ~(label == data["right"].astype(str))
        if neither.to_numpy().any():
            raise _row_error(
                data,
                neither.to_numpy(),
                lambda r: (
                    f"crowd-kit label {label.iloc[r]!r} is neither the left nor the right item"
                ),
            )
    return preference_frame(data, query=query)


def to_choix(
    answers: pd.DataFrame, *, query: str | None = None, ties: Ties = "drop"
) -> tuple[list[str], list[tuple[int, int]]]:
    """The answers of one query as choix's data: ``(items, comparisons)``.

    ``items`` lists the query's candidates (sorted); ``comparisons`` holds one ``(winner, loser)``
    pair of indices into ``items`` per decided answer, in the answers' order, for e.g.
    ``choix.ilsr_pairwise(len(items), comparisons)``. ``ties`` as in the module docstring.
    """
    answers = _one_query(preference_frame(answers), query)
    items = sorted(set(answers["left"]) | set(answers["right"]))
    decided = _decided(answers, ties)
    index = pd.Series(np.arange(len(items)), index=items)
    winner = decided["winner"].map(index).to_numpy(dtype=int)
    loser = decided["loser"].map(index).to_numpy(dtype=int)
    return items, list(zip(winner.tolist(), loser.tolist(), strict=True))


def from_choix(
    items: Sequence,
    comparisons: Sequence[Sequence[int]],
    *,
    query: str = "query",
    worker: str = "choix",
) -> pd.DataFrame:
    """choix's ``(winner, loser)`` index pairs over ``items`` as a preference frame.

    Each comparison becomes one answer of ``worker`` on ``query`` with the winner on the left
    (``label = "left"``). choix keeps no worker: every answer gets the same one.
    """
    if not len(comparisons):
        raise InputError("there are no comparisons to read")
    for position, pair in enumerate(comparisons):
        if np.ndim(pair) != 1 or len(pair) != 2:
            raise InputError(f"comparison {position}: {pair!r} is not a (winner, loser) pair")
        for value in pair:
            if isinstance(value, bool) or not isinstance(value, int | np.integer):
                raise InputError(f"comparison {position}: item index {value!r} is not an integer")
            if not 0 <= value < len(items):
                raise InputError(
                    f"comparison {position}: item index {value} is outside 0..{len(items) - 1}"
                )
    names = np.asarray([str(item) for item in items], dtype=object)
    indices = np.asarray(comparisons, dtype=np.int64).reshape(-1, 2)
    return preference_frame(
        pd.DataFrame(
            {
                "worker": worker,
                "query": query,
                "left": names[indices[:, 0]],
                "right": names[indices[:, 1]],
                "label": "left",
            }
        )
    )


# --------------------------------------------------------------------------- files


class MissingQuery(InputError):
    """An answers file without a query column, read without a query to give its answers."""


def read_preferences(
    path: str | os.PathLike,
    fmt: str = "long",
    *,
    query: str | None = None,
    fallback: str | None = None,
) -> pd.DataFrame:
    """A CSV of answers, one per row, as a preference frame (:func:`preference_frame`).

    ``fmt="long"``: columns ``worker, query, left, right, label`` (``label`` = ``left``,
    ``right``, ``equal`` or the preferred item) and an optional ``seconds``; a file without a
    ``query`` column holds the answers of ``query``. ``fmt="crowdkit"``: crowd-kit's
    ``worker, left, right, label`` (``label`` = the preferred item), every row of ``query``; a
    worker's two comparisons of one pair won by each side are one "equal" answer (the way
    :func:`crowdkit_csv` writes a tie with ``ties="split"``). A file without a query column is
    refused unless ``query`` (or else ``fallback``, e.g. a project's only query) names its
    query: it is never guessed; ``query`` is refused for a long file that has the column.

    One answer is identified by (worker, query, left, right) in every reader: a worker answers a
    pair once (in either order), so a file holding a worker's two answers to one pair is
    refused naming both rows, as :func:`crowdprefs.results_file.read_results` refuses a worker
    answering one HIT twice. Other columns are ignored. Rows are numbered from 1 (the first
    answer) in errors, which name the file. The file is decoded as
    :func:`crowdprefs.files.read_text` does.
    """
    from crowdprefs.files import read_text

    if fmt not in FILE_FORMATS:
        raise InputError(f"unknown answers format {fmt!r}: use {' or '.join(FILE_FORMATS)}")
    path = Path(path)
    text, _ = read_text(path, "answers file")
    try:
        data = csv_frame(text, path)
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise InputError(f"{path}: not a valid CSV: {str(error).strip().splitlines()[0]}") from None
    data.columns = [str(c).strip() for c in data.columns]
    data.index = pd.RangeIndex(1, len(data) + 1)
    if fmt == "crowdkit" and "query" in data.columns:
        data = data.drop(columns="query")
    if "query" in data.columns and query is not None:
        raise InputError(
            f"{path}: the file has a query column: a query is named only for a file without one"
        )
    query = query if query is not None or "query" in data.columns else fallback
    if query is None and "query" not in data.columns and set(CROWDKIT_COLUMNS) <= set(data):
        raise MissingQuery(
            f"{path}: the file has no query column: name the query its answers belong to"
        )
    try:
        if fmt == "crowdkit":
            frame = _joined_ties(from_crowdkit(data, query=str(query)))
        else:
            frame = preference_frame(data, query=str(query))
    except InputError as error:
        raise InputError(f"{path}: {error}") from None
    _one_answer_per_pair(frame, path)
    return frame


def _pair_key(frame: pd.DataFrame) -> pd.Series:
    """(worker, query, pair in either order) of each answer, as one text."""
    first = frame["left"] <= frame["right"]
    low = frame["left"].where(first, frame["right"])
    high = frame["right"].where(first, frame["left"])
    return frame["worker"] + "\x1f" + frame["query"] + "\x1f" + low + "\x1f" + high


def _joined_ties(frame: pd.DataFrame) -> pd.DataFrame:
    """A crowd-kit frame whose worker compared one pair twice, once won by each side, with the
    two rows as the one "equal" answer they split (the first row kept)."""
    key = _pair_key(frame)
    winner = pd.Series(np.where(frame["label"] == "left", frame["left"], frame["right"]))
    winner.index = frame.index
    sizes = key.map(key.value_counts())
    winners = winner.groupby(key).transform("nunique")
    tie = ((sizes == 2) & (winners == 2)).to_numpy()
    second = tie & key.duplicated().to_numpy()
    joined = frame[~second].copy()
    joined.loc[tie[~second], "label"] = "equal"
    return joined


def _one_answer_per_pair(frame: pd.DataFrame, path: Path) -> None:
    """Refuse a worker's second answer to a pair (either order), naming both rows."""
    key = _pair_key(frame)
    twice = key.duplicated().to_numpy()
    if twice.any():
        i = int(np.flatnonzero(twice)[0])
        j = int(np.flatnonzero((key == key.iloc[i]).to_numpy())[0])
        row = frame.iloc[i]
        raise InputError(
            f"{path}: rows {frame.index[j]} and {frame.index[i]}: worker {row['worker']!r} "
            f"answered the pair {row['left']!r}/{row['right']!r} of query {row['query']!r} "
            "twice; a worker answers a pair once (an answer is identified by worker, query, "
            "left and right, in either order)"
        )


def answer_ids(answers: pd.DataFrame) -> pd.Series:
    """An id for each answer of a file from what it holds: a digest of its worker, query, left
    and right items, and the answer's number among the file's answers with that content (``-1``,
    ``-2``...). Reading the same file again gives the same ids; so does another file holding
    the same answers."""
    columns = (answers[c].tolist() for c in ("worker", "query", "left", "right"))
    content = ["\x1f".join(fields) for fields in zip(*columns, strict=True)]
    same = pd.factorize(np.array(content, dtype=object))[0]
    number = pd.Series(same).groupby(same).cumcount().to_numpy() + 1
    sha = hashlib.sha256
    ids = [
        f"{sha(text.encode()).hexdigest()[:16]}-{k}"
        for text, k in zip(content, number, strict=True)
    ]
    return pd.Series(ids, index=answers.index, dtype=object)


def long_csv(answers: pd.DataFrame) -> str:
    """The answers as the long CSV ``worker, query, left, right, label`` (and ``seconds`` when
    the frame has work times), the format :func:`read_preferences` reads."""
    frame = preference_frame(answers)
    columns = PREFERENCE_COLUMNS + (["seconds"] if "seconds" in frame.columns else [])
    return csv_text(frame[columns], float_format="%.6g")


def crowdkit_csv(answers: pd.DataFrame, *, query: str | None = None, ties: Ties = "drop") -> str:
    """One query's answers as crowd-kit's CSV ``worker, left, right, label`` (:func:`to_crowdkit`;
    ``ties`` as in the module docstring)."""
    return csv_text(to_crowdkit(answers, query=query, ties=ties))


def choix_json(answers: pd.DataFrame, *, query: str | None = None, ties: Ties = "drop") -> str:
    """One query's answers as choix's data in JSON: ``{"query", "items", "comparisons"}``, the
    comparisons being ``[winner, loser]`` indices into ``items`` (:func:`to_choix`; ``ties`` as in
    the module docstring), read with ``data = json.load(file)`` and used as
    ``choix.ilsr_pairwise(len(data["items"]), data["comparisons"])``."""
    frame = _one_query(preference_frame(answers), query)
    items, comparisons = to_choix(frame, ties=ties)
    data = {"query": str(frame["query"].iloc[0]), "items": items, "comparisons": comparisons}
    return json.dumps(data, ensure_ascii=False) + "\n"
