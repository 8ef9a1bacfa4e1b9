"""Readers and writers for runs, level judgments and ordered lists (group qrels).

Every reader returns a :class:`pandas.DataFrame` with fixed columns, and every malformed input
raises :class:`~crowdprefs.errors.InputError` with one line naming the file, the line and the
offending value. Whitespace (tabs or spaces) separates fields in every format; blank lines are
ignored.

Formats (see ``DESIGN.md``, "File formats"):

* runs: TREC ``query Q0 document rank score tag`` or ``system query document``, the rank being
  the row order within (system, query); :func:`read_runs` gives ``[system, query, document, rank]``.
* level judgments: ``query document gain`` or TREC qrels ``query 0 document rel``;
  :func:`read_levels` gives ``[query, document, gain]``.
* ordered lists (group qrels): ``tag query document group``, group 1 = most similar (the format
  of the lists published with the preference-judgments paper); :func:`read_lists` gives
  ``[query, document, group]``.
* preference qrels: the same lists as graded TREC qrels ``query 0 document grade`` that
  ``ir_measures``' ``Compat`` scores as a partial order (:func:`write_preference_qrels`,
  :func:`read_preference_qrels`).

Conversions between the two kinds of ground truth: :func:`lists_to_levels` gives each group a
gain, :func:`levels_to_lists` groups the documents of equal gain.
"""

from __future__ import annotations

import csv
import io
import os
import re
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError
from crowdprefs.files import read_text, write_atomic

RUN_COLUMNS = ["system", "query", "document", "rank"]
LEVEL_COLUMNS = ["query", "document", "gain"]
LIST_COLUMNS = ["query", "document", "group"]


# --------------------------------------------------------------------------- names

HIDDEN = (
    "[\x00-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]"
)
"""Characters a name must not hold: control characters (a terminal obeys them), zero-width
characters (two names that look the same) and bidirectional overrides and isolates (a printed
list that looks reordered; Boucher & Anderson, *Trojan Source*, 2021)."""


# --------------------------------------------------------------------------- CSV files

FORMULA = r"^'*[=+\-@\t\r]"
"""A text cell a spreadsheet would run as a formula (OWASP, "CSV Injection"): a leading ``=``,
``+``, ``-``, ``@``, tab or carriage return, after any number of apostrophes (so that the
apostrophe the writer adds stays reversible)."""
NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?"
"""A plain decimal number, written as it is even in a text cell (``-3``, ``+0.5``, ``-1e-3``):
a spreadsheet reads it as the number it is."""
_ESCAPED = r"^'+[=+\-@\t\r]"


_STARTS = ("=", "+", "-", "@", "\t", "\r", "'")
"""The first characters of a cell :func:`neutralised` or :func:`restored` may change."""


def _starting(values: pd.Series, prefixes: tuple[str, ...]) -> tuple[pd.Series, np.ndarray]:
    """``(values as objects, whether each is a text cell starting with one of prefixes)``; no
    cell for a column that cannot hold text (numbers, times, booleans)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        values = values.astype(object)
    kind = pd.api.types.infer_dtype(values, skipna=True)
    if kind not in ("string", "mixed", "mixed-integer"):
        return values, np.zeros(len(values), dtype=bool)
    starts = values.str.startswith(prefixes)
    return values, starts.where(starts.notna(), False).to_numpy(dtype=bool)


def neutralised(values: pd.Series) -> pd.Series:
    """The text cells of ``values`` that match :data:`FORMULA` and are not a :data:`NUMBER`,
    prefixed with an apostrophe (OWASP's rule: a spreadsheet shows them as text, never runs
    them); every other value (numbers, missing values) as it is. :func:`restored` undoes it."""
    values, maybe = _starting(values, _STARTS)
    if not maybe.any():
        return values
    text = values[maybe].astype(str)
    risky = (text.str.contains(FORMULA, regex=True) & ~text.str.fullmatch(NUMBER)).to_numpy()
    out = values.copy()
    out.iloc[np.flatnonzero(maybe)[risky]] = ("'" + text[risky]).to_numpy()
    return out


def restored(values: pd.Series) -> pd.Series:
    """The values :func:`neutralised` wrote, as they were: one leading apostrophe dropped from
    a text cell that is apostrophes then a formula's first character."""
    values, maybe = _starting(values, ("'",))
    if not maybe.any():
        return values
    text = values[maybe].astype(str)
    escaped = text.str.contains(_ESCAPED, regex=True).to_numpy()
    out = values.copy()
    out.iloc[np.flatnonzero(maybe)[escaped]] = text[escaped].str[1:].to_numpy()
    return out


def csv_text(frame: pd.DataFrame, **options) -> str:
    """The text of ``frame`` as CSV: the one writer of every CSV file crowdprefs writes (audit
    tables, the report's tables, exports, invitations, plans, scores, studies).

    Worker ids, comments and names from input files are untrusted: a text cell (and a column
    name) that a spreadsheet would run as a formula is :func:`neutralised`; numeric columns and
    text cells that are plain numbers are written as they are, so negative scores stay
    numbers. :func:`csv_frame`, the one reader, restores the values. ``options`` go to
    :meth:`pandas.DataFrame.to_csv` (default: no index, ``\\n`` line ends; every field quoted
    when a text cell holds a carriage return, which the default quoting leaves bare and every
    reader takes for a line end)."""
    safe = frame.apply(neutralised) if len(frame.columns) else frame
    safe.columns = neutralised(pd.Series([str(c) for c in frame.columns], dtype=object))
    options = {"index": False, "lineterminator": "\n", **options}
    if "quoting" not in options and any(_holds_cr(safe.iloc[:, c]) for c in range(safe.shape[1])):
        options["quoting"] = csv.QUOTE_ALL
    return safe.to_csv(**options)


def _holds_cr(values: pd.Series) -> bool:
    """Whether a text cell of ``values`` holds a carriage return."""
    if pd.api.types.infer_dtype(values, skipna=True) not in ("string", "mixed", "mixed-integer"):
        return False
    found = values.astype(object).str.contains("\r", regex=False)
    return bool(found.where(found.notna(), False).any())


def table_problem(error: Exception) -> str:
    """What pandas' or :mod:`csv`'s parser found wrong in a table, in the tool's words (line
    numbers as an editor shows them)."""
    text = str(error)
    if fields := re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", text):
        expected, line, saw = fields.groups()
        return f"line {line} has {saw} fields, expected {expected}"
    if quote := re.search(r"EOF inside string starting at row (\d+)", text):
        return f"the quoted field opened on line {int(quote.group(1)) + 1} never closes"
    if isinstance(error, pd.errors.EmptyDataError):
        return "it holds no table (empty, or only blank lines)"
    lines = text.split("C error: ")[-1].strip().splitlines()
    return lines[0] if lines else type(error).__name__


def csv_frame(data: str | os.PathLike, source: str | os.PathLike, **options) -> pd.DataFrame:
    """``pandas.read_csv`` of a CSV with a header line (``data``: its text, or a path), as text
    columns unless ``options`` say otherwise: the one reader of CSV files, which
    :func:`restored` the cells (and column names) :func:`csv_text` neutralised.

    pandas takes a first data row with more fields than the header for a row index and shifts
    every column by one (a later such row it refuses); here that row is refused too, in one
    line naming ``source`` and the row's line. Every other parse error is one line too
    (:func:`table_problem`)."""
    buffer = io.StringIO(data) if isinstance(data, str) else data
    options = {"dtype": str, "keep_default_na": False, **options}
    with warnings.catch_warnings():
        warnings.simplefilter("error", pd.errors.ParserWarning)
        try:
            frame = pd.read_csv(buffer, index_col=False, **options)
        except pd.errors.ParserWarning:
            lines = data.splitlines() if isinstance(data, str) else None
            line = _filled_line(lines, 1) if lines is not None else _line_number(Path(data), 1)
            raise InputError(f"{source}:{line}: more fields than the header names") from None
        except (pd.errors.ParserError, pd.errors.EmptyDataError, csv.Error) as error:
            raise InputError(f"{source}: not a valid CSV: {table_problem(error)}") from None
    if isinstance(data, str) and "'" not in data:
        return frame  # nothing was neutralised
    frame = frame.apply(restored) if len(frame.columns) else frame
    names = restored(pd.Series(frame.columns, dtype=object)).tolist()
    frame.columns = pd.Index(names, dtype=frame.columns.dtype)
    return frame


def per_distinct(values: pd.Series, test: Callable[[pd.Series], pd.Series]) -> np.ndarray:
    """``test`` (vectorised over a Series) of each row of ``values``, run once per distinct
    value (NaN included): a column of a million answers holds a few thousand names."""
    codes, distinct = pd.factorize(values, use_na_sentinel=False)
    return test(pd.Series(distinct, dtype=object)).to_numpy()[codes]


def check_names(
    values: pd.Series, source: str | os.PathLike, what: str, where: Callable[[int], str]
) -> None:
    """Refuse the first of ``values`` (names of queries, documents, systems, workers, HITs read
    from an input file) that holds a :data:`HIDDEN` character: one line naming ``source``,
    ``where(i)`` (its line or row, ``i`` its position), ``what`` and the value, escaped."""
    hidden = per_distinct(values, lambda names: names.astype(str).str.contains(HIDDEN))
    if hidden.any():
        i = int(np.flatnonzero(hidden)[0])
        value = str(values.iloc[i])
        char = re.search(HIDDEN, value).group()
        raise InputError(
            f"{source}: {where(i)}: {what} {value!r} holds the invisible or control character "
            f"U+{ord(char):04X}; a name must be visible text"
        )


URL_SCHEMES = ("http", "https")
"""The only address schemes a clip may have (a ``file:`` or ``javascript:`` address would be put
in the HIT page as it is); anything else is a path relative to the file."""


def check_audio_urls(frame: pd.DataFrame, source: str | os.PathLike) -> None:
    """Refuse the first clip address (columns ``audio``, ``query_audio`` of a candidates file,
    line 1 = the header) whose scheme is not http or https, naming it and what is allowed."""
    for column in ("audio", "query_audio"):
        if column not in frame:
            continue
        values = frame[column].fillna("").astype(str)
        scheme = values.str.extract(r"^\s*([A-Za-z][A-Za-z0-9+.\-]+):", expand=False)
        bad = (scheme.notna() & ~scheme.str.lower().isin(URL_SCHEMES)).to_numpy()
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"{source}: line {i + 2}: {column} {values.iloc[i]!r} is not an http(s) address "
                "or a path (allowed: http://, https:// or a path relative to the file)"
            )


# --------------------------------------------------------------------------- low-level parsing


def _line_number(path: Path, row: int) -> int:
    """1-based physical line of the ``row``-th non-blank line (0-based) of ``path``."""
    with path.open(encoding="latin-1") as handle:  # any byte: only lines are counted
        return _filled_line(handle, row)


def _filled_line(lines: Iterable[str], row: int) -> int:
    """1-based number, among ``lines``, of the ``row``-th non-blank one (0-based)."""
    seen = -1
    for number, line in enumerate(lines, start=1):
        if line.strip():
            seen += 1
            if seen == row:
                return number
    return seen + 1


def read_fields(path: Path, counts: Sequence[int]) -> pd.DataFrame:
    """Whitespace-separated fields of ``path`` as strings; every line must have one of ``counts``.

    All lines must have the same number of fields, which must be one of ``counts``.
    """
    path = Path(path)
    if not path.exists():  # anything else (a folder, a named pipe): read_text says what it is
        raise InputError(f"{path}: no such file")
    text, _ = read_text(path)
    try:
        frame = pd.read_csv(
            io.StringIO(text),
            sep=r"\s+",
            header=None,
            dtype=str,
            keep_default_na=False,
            na_values=[],
            skip_blank_lines=True,
            quoting=3,  # csv.QUOTE_NONE: quotes are ordinary characters
            engine="c",
        )
    except pd.errors.EmptyDataError:
        return pd.DataFrame(columns=range(min(counts)), dtype=str)
    except pd.errors.ParserError as error:
        raise InputError(f"{path}: {table_problem(error)}") from None
    n = frame.shape[1]
    if n not in counts:
        wanted = " or ".join(str(c) for c in counts)
        raise InputError(f"{path}: line 1 has {n} fields, expected {wanted}")
    short = (frame == "").to_numpy().any(axis=1)
    if short.any():
        row = int(np.flatnonzero(short)[0])
        have = int((frame.iloc[row] != "").sum())
        raise InputError(f"{path}: line {_line_number(path, row)} has {have} fields, expected {n}")
    for column in frame.columns:
        check_names(frame[column], path, "value", lambda i: f"line {_line_number(path, i)}")
    return frame.astype(str)


def _numbers(
    path: Path, frame: pd.DataFrame, column: int, what: str, integer: bool = False
) -> np.ndarray:
    """Column ``column`` of ``frame`` as numbers; the first bad value is reported with its line."""
    values = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values)
    if integer:
        bad |= values != np.round(values)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"{path}: line {_line_number(path, row)}: {what} {frame[column].iloc[row]!r} "
            f"is not {'an integer' if integer else 'a number'}"
        )
    return values.astype(np.int64) if integer else values


def _no_duplicates(path: Path, frame: pd.DataFrame, keys: list[str], what: str) -> None:
    """Raise on the first row whose ``keys`` repeat an earlier row (``frame`` in file order)."""
    duplicated = frame.duplicated(keys).to_numpy()
    if duplicated.any():
        row = int(np.flatnonzero(duplicated)[0])
        where = ", ".join(f"{key} {frame[key].iloc[row]!r}" for key in keys)
        raise InputError(f"{path}: line {_line_number(path, row)}: {what} repeated ({where})")


def _lines(frame: pd.DataFrame) -> str:
    """Rows of ``frame`` as whitespace-separated lines (one trailing newline)."""
    if frame.empty:
        return ""
    return frame.to_csv(sep="\t", header=False, index=False, lineterminator="\n")


# --------------------------------------------------------------------------- runs


def _read_run_file(path: Path) -> pd.DataFrame:
    frame = read_fields(path, (3, 6))
    if frame.shape[1] == 3:
        runs = pd.DataFrame(
            {"system": frame[0], "query": frame[1], "document": frame[2]}, dtype=str
        )
        _no_duplicates(path, runs, ["system", "query", "document"], "document")
        runs["rank"] = runs.groupby(["system", "query"], sort=False).cumcount() + 1
        return runs[RUN_COLUMNS]
    given = _numbers(path, frame, 3, "rank", integer=True)
    score = _numbers(path, frame, 4, "score")
    runs = pd.DataFrame({"system": frame[5], "query": frame[0], "document": frame[2]}, dtype=str)
    _no_duplicates(path, runs, ["system", "query", "document"], "document")
    order = np.lexsort((given, -score))  # score descending, then the given rank
    runs = runs.iloc[order]
    runs = runs.assign(rank=runs.groupby(["system", "query"], sort=False).cumcount() + 1)
    return runs.sort_index(kind="stable")[RUN_COLUMNS].reset_index(drop=True)


def read_runs(path: str | os.PathLike) -> pd.DataFrame:
    """Read one run file, or every file of a folder, as ``[system, query, document, rank]``.

    Accepted formats (detected from the number of fields of the first line):

    * TREC runs ``query Q0 document rank score tag``: the system is the tag; documents are ranked
      by score (descending), ties broken by the given rank; ``rank`` is renumbered 1, 2, ...
    * ``system query document``: ``rank`` is the row order within (system, query), from 1.

    A folder is read file by file (hidden files skipped, in name order); a system may appear in
    one file only. A document listed twice for the same (system, query) is an error. ``system``,
    ``query`` and ``document`` are strings, ``rank`` an integer.
    """
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith("."))
        if not files:
            raise InputError(f"{path}: folder holds no run file")
        parts, owner = [], {}
        for file in files:
            runs = _read_run_file(file)
            for system in runs["system"].unique():
                if system in owner:
                    raise InputError(f"{file}: system {system!r} already read from {owner[system]}")
                owner[system] = file
            parts.append(runs)
        runs = pd.concat(parts, ignore_index=True)
    else:
        runs = _read_run_file(path)
    return runs.astype({"system": str, "query": str, "document": str, "rank": np.int64})


def write_runs(runs: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write ``[system, query, document, rank]`` as ``system query document`` lines, atomically.

    Rows are sorted by system, query and rank, so that reading the file back with
    :func:`read_runs` gives the same ranks.
    """
    ordered = runs.sort_values(["system", "query", "rank"], kind="stable")
    write_atomic(Path(path), _lines(ordered[["system", "query", "document"]]))


# --------------------------------------------------------------------------- level judgments


def read_levels(path: str | os.PathLike) -> pd.DataFrame:
    """Read level judgments as ``[query, document, gain]`` (``gain`` a float).

    Accepted formats (detected from the number of fields): ``query document gain`` and TREC qrels
    ``query 0 document rel``. A (query, document) pair judged twice is an error.
    """
    path = Path(path)
    frame = read_fields(path, (3, 4))
    query, document, gain = (0, 1, 2) if frame.shape[1] == 3 else (0, 2, 3)
    levels = pd.DataFrame({"query": frame[query], "document": frame[document]}, dtype=str)
    levels["gain"] = _numbers(path, frame, gain, "gain")
    _no_duplicates(path, levels, ["query", "document"], "judgment")
    return levels


def write_levels(levels: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write ``[query, document, gain]`` as tab-separated ``query document gain``, atomically."""
    write_atomic(Path(path), _lines(levels[LEVEL_COLUMNS]))


# --------------------------------------------------------------------------- ordered lists


def read_lists(path: str | os.PathLike) -> pd.DataFrame:
    """Read group qrels ``tag query document group`` as ``[query, document, group]``.

    Group 1 holds the documents most similar to the query; groups are integers >= 1 and a
    document may appear once per query. The tag is not kept.
    """
    path = Path(path)
    frame = read_fields(path, (4,))
    lists = pd.DataFrame({"query": frame[1], "document": frame[2]}, dtype=str)
    group = _numbers(path, frame, 3, "group", integer=True)
    if (group < 1).any():
        row = int(np.flatnonzero(group < 1)[0])
        raise InputError(f"{path}: line {_line_number(path, row)}: group {group[row]} is below 1")
    lists["group"] = group
    _no_duplicates(path, lists, ["query", "document"], "document")
    return lists


def write_lists(lists: pd.DataFrame, path: str | os.PathLike, tag: str = "crowdprefs") -> None:
    """Write ``[query, document, group]`` as group qrels ``tag query document group``, atomically.

    Lines are sorted by query, then group, then the frame's own row order.
    """
    ordered = lists.sort_values(["query", "group"], kind="stable")
    out = pd.DataFrame(
        {
            "tag": tag,
            "query": ordered["query"],
            "document": ordered["document"],
            "group": ordered["group"],
        }
    )
    write_atomic(path, _lines(out))


def read_truth(path: str | os.PathLike, kind: str = "auto") -> pd.DataFrame:
    """Read a ground truth: ordered lists (``kind="lists"``) or level judgments (``"levels"``).

    ``"auto"`` decides by the fields: 3 per line are levels; 4 per line are TREC qrels when the
    second field of every line is ``0`` (or ``Q0``), group qrels (lists) otherwise. Lists come
    back as ``[query, document, group]``, levels as ``[query, document, gain]``.
    """
    if kind not in ("auto", "lists", "levels"):
        raise InputError(f"unknown ground-truth kind {kind!r}; use auto, lists or levels")
    if kind == "auto":
        frame = read_fields(Path(path), (3, 4))
        qrels = frame.shape[1] == 4 and frame[1].isin(["0", "Q0"]).all()
        kind = "levels" if frame.shape[1] == 3 or qrels else "lists"
    return read_lists(path) if kind == "lists" else read_levels(path)


# --------------------------------------------------------------------------- conversions


def lists_to_levels(lists: pd.DataFrame, gains: str | Sequence[float] = "linear") -> pd.DataFrame:
    """Give each group of an ordered list a gain: ``[query, document, group]`` -> levels.

    ``gains="linear"``: with ``G`` groups for a query, group ``g`` gets gain ``G - g + 1`` (the
    most similar group ``G``, the last group 1), so that every listed document counts as relevant.
    A sequence gives group ``g`` the gain ``gains[g - 1]`` (0 past its end).
    """
    group = lists["group"].to_numpy(dtype=np.int64)
    if isinstance(gains, str):
        if gains != "linear":
            raise InputError(f"unknown gain scheme {gains!r}; use 'linear' or a list of gains")
        last = lists.groupby("query", sort=False)["group"].transform("max").to_numpy()
        gain = (last - group + 1).astype(float)
    else:
        table = np.append(np.asarray(gains, dtype=float), 0.0)
        gain = table[np.minimum(group, len(table)) - 1]
    return pd.DataFrame(
        {"query": lists["query"].to_numpy(), "document": lists["document"].to_numpy(), "gain": gain}
    )


def levels_to_lists(levels: pd.DataFrame) -> pd.DataFrame:
    """Group documents of equal gain: ``[query, document, gain]`` -> ``[query, document, group]``.

    Within each query, group 1 holds the documents of the highest gain, group 2 those of the next
    distinct gain, and so on (a dense ranking of gains, descending). Every judged document is kept,
    including those of gain 0, which form the last group.
    """
    group = levels.groupby("query", sort=False)["gain"].rank(method="dense", ascending=False)
    return pd.DataFrame(
        {
            "query": levels["query"].to_numpy(),
            "document": levels["document"].to_numpy(),
            "group": group.to_numpy(dtype=np.int64),
        }
    )


# --------------------------------------------------------------------------- preference qrels


def write_preference_qrels(lists: pd.DataFrame, path: str | os.PathLike) -> None:
    """Write ordered lists ``[query, document, group]`` as graded TREC qrels, atomically.

    Each line is ``query 0 document grade`` with grade ``G − g + 1`` for group ``g`` of a query
    with ``G`` groups (:func:`lists_to_levels`, linear gains): the most similar group has the
    highest grade and every listed document a grade of at least 1. This is how preference-based
    measures read a partial order: ``ir_measures``' ``Compat`` (Clarke, Vtyurina & Smucker,
    *Assessing top-k preferences*, 2021) builds its ideal ranking by sorting the documents of
    grade > 0 by grade, documents of equal grade in any order (it takes the run's own order),
    so it scores these qrels exactly as the groups say. Lines are sorted by query, then group.
    """
    ordered = lists.sort_values(["query", "group"], kind="stable")
    levels = lists_to_levels(ordered)
    out = pd.DataFrame(
        {
            "query": levels["query"],
            "iteration": "0",
            "document": levels["document"],
            "grade": levels["gain"].astype(np.int64),
        }
    )
    write_atomic(Path(path), _lines(out))


def read_preference_qrels(path: str | os.PathLike) -> pd.DataFrame:
    """Read graded qrels (TREC ``query 0 document grade``, or ``query document grade``) as
    ordered lists ``[query, document, group]``: within a query, the highest grade is group 1,
    the next distinct grade group 2, and so on (:func:`levels_to_lists`). Documents of grade 0 or
    less are left out, as ``Compat`` leaves them out of its ideal ranking;
    :func:`write_preference_qrels` writes the inverse."""
    levels = read_levels(path)
    return levels_to_lists(levels[levels["gain"] > 0].reset_index(drop=True))
