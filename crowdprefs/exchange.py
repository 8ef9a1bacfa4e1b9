"""Preference answers in long format.

A *preference frame* holds one answer per row: ``worker, query, left, right, label``, where
``left`` and ``right`` are the two candidates shown (left first) and ``label`` says which one the
worker found more similar to the query: ``left``, ``right`` or ``equal``. It is what people with
their own answers bring to :mod:`crowdprefs.quality.preferences`, without a project.
:func:`preference_frame` checks and normalises such a frame; it also reads crowd-kit's
convention, where ``label`` *is* the preferred item (equal to ``left`` or ``right``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError

PREFERENCE_COLUMNS = ["worker", "query", "left", "right", "label"]
LABELS = ("left", "equal", "right")


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
    answer, in seconds) is kept: the worker flags use it. Items, workers and queries are read as
    strings; the index is kept. The first bad row raises :class:`InputError` naming its index
    label and column.
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
        empty = (values.isna() | (values.astype(str).str.strip() == "")).to_numpy()
        if empty.any():
            raise _row_error(data, empty, lambda _, c=column: f"column {c!r} is empty")
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
    word = raw.str.strip().str.lower()
    label = np.where(
        raw == frame["left"],
        "left",
        np.where(raw == frame["right"], "right", np.where(word.isin(LABELS), word, "")),
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
        wrong = ~(seconds >= 0) & ~data["seconds"].isna().to_numpy()
        if wrong.any():
            raise _row_error(
                data,
                wrong,
                lambda r: f"column 'seconds' holds {data['seconds'].iloc[r]}, not seconds >= 0",
            )
        frame["seconds"] = seconds
    return frame
