"""Results files: one reader of recorded answers for every command, and a writer.

A results file (an MTurk batch-results CSV as downloaded from the requester site, or another
platform's export) has one row per answer: the HIT, the worker, their times, the HIT's inputs
(the query and the two variations shown as A and B) and the worker's answers (DESIGN.md, "File
formats"). Which column holds what, and which answer values mean "A", "B" and "equal", vary
between HIT designs and platforms: :class:`Columns` names them, from the command line's column
options or a TOML file (:func:`read_columns`). The defaults are those of crowdprefs' own HITs,
which :func:`write_results` writes:

``HITId, WorkerId, AssignmentId``         the HIT, the worker and the answer's own id;
``CreationTime, AcceptTime, SubmitTime``  MTurk's times (``Wed Apr 14 18:29:32 GMT 2010``) or
                                          ISO 8601;
``WorkTimeInSeconds, Reward``             the work time and the reward paid (``$0.02``);
``Input.query, Input.docA, Input.docB``   the original and the variations shown as A and B;
``Input.pivot``                           the segment's pivot, when known;
``Input.check``                           the expected choice of an attention check, else empty;
``Answer.choice``                         ``A``, ``B`` or ``equal``;
``Answer.background, Answer.comment``     the optional free-text answers (untrusted).

Only the HIT, worker, query, A, B and answer columns are required. Without an assignment column
an answer is identified by its (HIT, worker) pair (``frame.attrs["identity"]`` says which);
without a reward column the cost is unknown unless a reward is given. The background column's
values that equal the yes/no values (case-insensitive) are stored as ``yes``/``no``; any other
text is kept as written and left unclassified.

The file is decoded by :func:`crowdprefs.files.read_text` (UTF-8, else Windows-1252, else
Latin-1, with a note saying so), like every text file crowdprefs reads. Rows with an empty
answer are kept (``choice`` is empty and ``score`` missing) and counted, never dropped
silently: callers report them.

:func:`read_results` returns the *answers frame* every audit function takes, one row per
answer with the columns of :data:`FRAME_COLUMNS`. This module is a core piece (it imports no
adapter): the audit, the replay, the crowd-model fit and the crowds' importers all read here.
"""

from __future__ import annotations

import csv
import math
import os
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError
from crowdprefs.files import read_text, write_atomic
from crowdprefs.io import check_names, csv_frame, csv_text

FRAME_COLUMNS = (
    "iteration",
    "pair_id",
    "hit_id",
    "created_at",
    "max_assignments",
    "reward",
    "query",
    "x",
    "y",
    "a_is_x",
    "kind",
    "expected",
    "pivot_known",
    "worker_id",
    "assignment_id",
    "status",
    "choice",
    "score",
    "seconds",
    "listen_seconds",
    "accepted_at",
    "submitted_at",
    "background",
    "comment",
)
"""The answers frame: one row per answer (empty answers included, with ``choice == ""``).

``x``/``y`` orient each pair (``y`` is the pivot when known, otherwise variation B), ``score``
is the answer from x's point of view (+1, 0, −1; NaN when empty), ``a_is_x`` tells which side
was shown as A, ``kind`` is ``sort`` or ``check`` (with the ``expected`` verdict from x's point
of view), times are UTC timestamps, ``seconds`` the work time and ``listen_seconds`` the
HIT's total clip duration (NaN when unknown), ``reward`` the reward paid (NaN when unknown).
"""

TIMEZONES = {
    "UTC": 0,
    "GMT": 0,
    "Z": 0,
    "PST": -8,
    "PDT": -7,
    "MST": -7,
    "MDT": -6,
    "CST": -6,
    "CDT": -5,
    "EST": -5,
    "EDT": -4,
    "CET": 1,
    "CEST": 2,
}
"""UTC offsets (hours) of the zone abbreviations MTurk writes in its times."""


@dataclass(frozen=True)
class Columns:
    """Where a results file keeps each field, and which answer values mean A, B and equal.

    ``hit``, ``worker``, ``query``, ``a``, ``b`` and ``answer`` are required in the file; any
    other column missing from the file is simply unknown. ``background_yes`` and
    ``background_no`` are the background column's values meaning yes and no.
    """

    query: str = "Input.query"
    a: str = "Input.docA"
    b: str = "Input.docB"
    answer: str = "Answer.choice"
    a_value: str = "A"
    b_value: str = "B"
    equal_value: str = "equal"
    pivot: str = "Input.pivot"
    check: str = "Input.check"
    hit: str = "HITId"
    worker: str = "WorkerId"
    assignment: str = "AssignmentId"
    status: str = "AssignmentStatus"
    created: str = "CreationTime"
    accepted: str = "AcceptTime"
    submitted: str = "SubmitTime"
    seconds: str = "WorkTimeInSeconds"
    reward: str = "Reward"
    max_assignments: str = "MaxAssignments"
    background: str = "Answer.background"
    background_yes: str = "yes"
    background_no: str = "no"
    comment: str = "Answer.comment"
    listen_seconds: str = "Input.listen_seconds"

    def __post_init__(self) -> None:
        values = (self.a_value, self.b_value, self.equal_value)
        if len(set(values)) != 3 or "" in values:
            raise InputError(
                f"the answer values for A, B and equal must be three distinct non-empty texts, "
                f"got {values!r}"
            )
        yes_no = (self.background_yes.lower(), self.background_no.lower())
        if yes_no[0] == yes_no[1] or "" in yes_no:
            raise InputError(
                f"the background values for yes and no must be two distinct non-empty texts, "
                f"got {yes_no!r}"
            )

    def given(self, **changes: str | None) -> Columns:
        """A copy with the ``changes`` that are not ``None`` (options left unset keep ours)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


COLUMN_OPTIONS = {
    "query": "--query-column",
    "a": "--a-column",
    "b": "--b-column",
    "answer": "--answer-column",
    "a_value": "--a-value",
    "b_value": "--b-value",
    "equal_value": "--equal-value",
    "pivot": "--pivot-column",
    "check": "--check-column",
    "hit": "--hit-column",
    "worker": "--worker-column",
    "assignment": "--assignment-column",
    "status": "--status-column",
    "created": "--created-column",
    "accepted": "--accept-column",
    "submitted": "--submit-column",
    "seconds": "--seconds-column",
    "reward": "--reward-column",
    "max_assignments": "--max-assignments-column",
    "background": "--background-column",
    "background_yes": "--background-yes",
    "background_no": "--background-no",
    "comment": "--comment-column",
    "listen_seconds": "--listen-seconds-column",
}
"""The command-line option of each :class:`Columns` field (the same on every reading command;
the keys are also the keys of a ``--columns`` TOML file)."""

REQUIRED = ("hit", "worker", "query", "a", "b", "answer")

MAX_SECONDS = 365 * 24 * 3600
"""The longest work or listening time a row may claim: a year, MTurk's longest assignment."""
MAX_REWARD = 1000.0
"""The largest reward a row may claim, as ``[crowd] reward`` allows."""


def read_columns(path: str | os.PathLike, base: Columns = Columns()) -> Columns:
    """:class:`Columns` from a TOML file of ``field = "value"`` lines (the fields of
    :data:`COLUMN_OPTIONS`, e.g. ``answer = "Answer.radio"``), over ``base``."""
    path = Path(path)
    text, _ = read_text(path, "columns file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"{path}: not valid TOML: {error}") from None
    if "columns" in data:
        table = data.pop("columns")
        if not isinstance(table, dict):
            raise InputError(
                f"{path}: columns must be a table ([columns] then lines such as "
                f'answer = "Answer.radio"), got {table!r}'
            )
        if data:
            raise InputError(f"{path}: {next(iter(data))} is outside [columns]")
        data = table
    unknown = sorted(set(data) - set(COLUMN_OPTIONS))
    if unknown:
        raise InputError(
            f"{path}: unknown key(s) {', '.join(unknown)} (known: {', '.join(COLUMN_OPTIONS)})"
        )
    bad = [k for k, v in data.items() if not isinstance(v, str)]
    if bad:
        raise InputError(
            f"{path}: {bad[0]} must be a column name or value in quotes, got {data[bad[0]]!r}"
        )
    keys = list(data)
    check_names(pd.Series(data.values(), dtype=object), path, "column", lambda i: keys[i])
    return replace(base, **data)


TIME_FORMS = "MTurk's 'Wed Apr 14 10:23:45 PDT 2010' or ISO 8601 '2010-04-14T17:23:45Z'"
"""The forms of time a results file may hold, as the messages name them."""
TIME_RANGE = (pd.Timestamp("1970-01-01", tz="UTC"), pd.Timestamp("2199-12-31 23:59:59", tz="UTC"))
"""The times accepted (a year out of this range is a typing error, not an answer)."""
MTURK_TIME = r"^\w{3} (\w{3} +\d+ [\d:]+) (\w+) (\d{4})$"


def parse_times(values: pd.Series, source: str, column: str = "time") -> pd.Series:
    """UTC timestamps from MTurk's ``Wed Apr 14 10:23:45 PDT 2010`` or ISO 8601 text (the one
    date parser of every results file and command).

    Empty values give NaT; a date or time that does not exist (``Apr 31``, hour 25), a year out
    of :data:`TIME_RANGE` or any other text raises :class:`InputError` naming ``source``, the row
    (1 = the first value), the ``column`` and the value, with the forms allowed.
    """
    text = values.fillna("").astype(str).str.strip().reset_index(drop=True)
    parts = text.str.extract(MTURK_TIME)
    mturk = parts[0].notna()
    zone = parts[1].str.upper()
    _first(
        mturk & ~zone.isin(list(TIMEZONES)),
        source,
        f"unknown time zone {{value}} in {column} (known: {', '.join(TIMEZONES)})",
        zone,
    )
    local = pd.to_datetime(parts[0] + " " + parts[2], format="%b %d %H:%M:%S %Y", errors="coerce")
    offset = pd.to_timedelta(zone.map(TIMEZONES).astype(float), unit="h")
    from_mturk = (local - offset).dt.tz_localize("UTC")
    iso = text.where(~mturk & (text != ""))
    from_iso = pd.to_datetime(iso, utc=True, format="ISO8601", errors="coerce")
    parsed = from_mturk.where(mturk, from_iso)
    _first(
        (text != "") & ~parsed.between(*TIME_RANGE),
        source,
        f"unreadable time {{value}} in {column}: not a date and time that exists "
        f"(allowed: {TIME_FORMS}, years {TIME_RANGE[0].year}-{TIME_RANGE[1].year})",
        text,
    )
    return parsed.set_axis(values.index).dt.as_unit("ns")


def _numbers(
    values: pd.Series,
    source: str,
    column: str,
    *,
    low: float = 0.0,
    high: float = math.inf,
    integer: bool = False,
    money: bool = False,
) -> pd.Series:
    """A numeric column (empty values give NaN): every value given must be finite, whole when
    ``integer``, and in [``low``, ``high``]; ``money`` strips a leading ``$`` and thousands
    commas. The first bad value is refused naming its row, the column and what is allowed."""
    text = values.fillna("").astype(str).str.strip()
    if money:
        text = text.str.lstrip("$").str.replace(",", "")
    numbers = pd.to_numeric(text.where(text != ""), errors="coerce")
    given = (text != "").to_numpy()
    known = numbers.to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        fine = np.isfinite(known) & (~integer | (np.round(known) == known))
        noun = "an amount such as $0.02" if money else "a whole number" if integer else "a number"
        _first(given & ~fine, source, f"{column} {{value}} is not {noun}", values)
        allowed = f"allowed: {low:g} to {high:g}"
        below = f"{'negative ' if low == 0 else ''}{column} {{value}} ({allowed})"
        _first(given & (known < low), source, below, values)
        too_large = f"{column} {{value}} is too large ({allowed})"
        _first(given & (known > high), source, too_large, values)
    return numbers


def read_table(path: str | os.PathLike) -> tuple[pd.DataFrame, str]:
    """The raw CSV as text columns (nothing parsed), with the encoding it was read in."""
    path = Path(path)
    text, encoding = read_text(path, "results file")
    frame = csv_frame(text, path)
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame, encoding


def _first(mask, source: str, message: str, values: pd.Series | None = None) -> None:
    """Raise ``source: row N: message`` for the first true row of ``mask`` (row 1 = the first
    answer); ``{value}`` in ``message`` is that row's entry of ``values``, quoted."""
    mask = np.asarray(mask, dtype=bool)
    if mask.any():
        row = int(np.flatnonzero(mask)[0])
        value = repr(values.iloc[row]) if values is not None else ""
        raise InputError(f"{source}: row {row + 1}: {message.replace('{value}', value)}")


def _one_pair_per_hit(
    hit: pd.Series, query: pd.Series, a: pd.Series, b: pd.Series, source: str, columns: Columns
) -> None:
    """Refuse a HIT whose rows name two different pairs (query and the two variations, in
    either order): its answers would be pooled as one pair's."""
    pair = query + "\x1f" + np.minimum(a, b) + "\x1f" + np.maximum(a, b)
    first = pair.groupby(hit.to_numpy()).transform("first")
    differs = (pair != first).to_numpy()
    if differs.any():
        i = int(np.flatnonzero(differs)[0])
        j = int(np.flatnonzero((hit == hit.iloc[i]).to_numpy())[0])
        raise InputError(
            f"{source}: rows {j + 1} and {i + 1}: {columns.hit} {hit.iloc[i]!r} names two pairs "
            f"({query.iloc[j]!r}: {a.iloc[j]!r} vs {b.iloc[j]!r}, and {query.iloc[i]!r}: "
            f"{a.iloc[i]!r} vs {b.iloc[i]!r}); one HIT asks one pair"
        )


def _one_answer_per_worker(
    hit: pd.Series, worker: pd.Series, answered: pd.Series, source: str, columns: Columns
) -> None:
    """Refuse a worker answering one HIT twice (MTurk lets a worker take a HIT once); rows
    without an answer (``answered`` false) do not count."""
    key = pd.DataFrame({"hit": hit, "worker": worker})[answered.to_numpy()]
    twice = np.zeros(len(hit), dtype=bool)
    twice[np.flatnonzero(answered.to_numpy())[key.duplicated().to_numpy()]] = True
    if twice.any():
        i = int(np.flatnonzero(twice)[0])
        same = (hit == hit.iloc[i]) & (worker == worker.iloc[i]) & answered
        j = int(np.flatnonzero(same.to_numpy())[0])
        raise InputError(
            f"{source}: rows {j + 1} and {i + 1}: {columns.worker} {worker.iloc[i]!r} answered "
            f"{columns.hit} {hit.iloc[i]!r} twice; a worker answers a HIT once"
        )


def _check_columns(raw: pd.DataFrame, source: str, columns: Columns) -> None:
    """Refuse a results file without the required columns (naming each with its option) or
    without answers."""
    missing = [f for f in REQUIRED if getattr(columns, f) not in raw.columns]
    if missing:
        named = ", ".join(f"{getattr(columns, f)} ({COLUMN_OPTIONS[f]})" for f in missing)
        raise InputError(
            f"{source}: missing column(s) {named}; the file has "
            f"{', '.join(raw.columns[:12])}{'...' if len(raw.columns) > 12 else ''}"
        )
    if raw.empty:
        raise InputError(f"{source}: no answers in the file")


def _sides(doc_a: pd.Series, doc_b: pd.Series, pivot: pd.Series, choice: pd.Series, source: str):
    """``(a_is_x, x, y, score)`` of each answer: y is the pivot when known, otherwise variation
    B; the score is +1 when x is preferred, −1 when y is, 0 for equal. A pivot that is neither
    A nor B is refused."""
    bad_pivot = (pivot != "") & (pivot != doc_a) & (pivot != doc_b)
    _first(bad_pivot, source, "pivot {value} is neither A nor B", pivot)
    a_is_x = (pivot != doc_a).astype(int)
    x = doc_a.where(a_is_x == 1, doc_b)
    y = doc_b.where(a_is_x == 1, doc_a)
    side = choice.map({"A": 1, "B": -1, "equal": 0, "": np.nan})
    return a_is_x, x, y, side * np.where(a_is_x == 1, 1, -1)


def _choice(answer: pd.Series, values: dict[str, str], source: str, columns: Columns) -> pd.Series:
    """Each answer's choice (A, B, equal; empty when unanswered) by the file's ``values``; an
    unknown answer is refused, naming the options that set the values."""
    choice = answer.map(values)
    _first(
        choice.isna(),
        source,
        f"unknown answer {{value}} in {columns.answer} (expected "
        f"{columns.a_value!r}, {columns.b_value!r} or {columns.equal_value!r}: set --a-value, "
        "--b-value and --equal-value)",
        answer,
    )
    return choice


def _status(status_text: pd.Series, source: str, columns: Columns) -> pd.Series:
    """Each answer's review status (approved, rejected, submitted; empty: submitted); another
    value is refused."""
    statuses = {"approved": "approved", "rejected": "rejected", "submitted": "submitted"}
    status = status_text.str.lower().map({**statuses, "": "submitted"})
    _first(
        status.isna(),
        source,
        f"unknown {columns.status} {{value}} (expected Approved, Rejected or Submitted)",
        status_text,
    )
    return status


def _identity(
    hit: pd.Series,
    worker: pd.Series,
    assignment: pd.Series | None,
    choice: pd.Series,
    source: str,
    columns: Columns,
) -> tuple[str, pd.Series]:
    """``(the column(s) identifying an answer, each answer's id)``: the assignment id when the
    file has one, else ``hit/worker``. The same answer twice is refused, and with assignment ids
    a worker answering a HIT twice."""
    assigned = assignment is not None
    if assigned:
        identity, key = columns.assignment, assignment.to_frame()
    else:
        identity = f"({columns.hit}, {columns.worker})"
        assignment = hit + "/" + worker
        key = pd.DataFrame({"hit": hit, "worker": worker})
    repeated = key.duplicated(keep=False).to_numpy()
    if repeated.any():
        first = key[repeated].iloc[0]
        rows = np.flatnonzero((key == first).all(axis=1).to_numpy()) + 1
        raise InputError(
            f"{source}: rows {rows[0]} and {rows[1]}: the same answer twice "
            f"({identity} {', '.join(map(repr, first.tolist()))})"
        )
    if assigned:
        _one_answer_per_worker(hit, worker, choice != "", source, columns)
    return identity, assignment


def read_results(
    path: str | os.PathLike, columns: Columns = Columns(), keep: Sequence[str] = ()
) -> pd.DataFrame:
    """Read a results file as an answers frame (:data:`FRAME_COLUMNS`), with the text of the
    answer fields named in ``keep`` that the file has (``NAME`` or ``Answer.NAME``) as more
    columns ``NAME``.

    ``iteration`` is left empty (see :func:`crowdprefs.quality.frames.infer_iterations`);
    ``pair_id`` numbers the HITs in order of appearance. Errors name the file, the record (row 1 =
    the first answer), the value and the option that names the column. ``frame.attrs`` holds
    ``source``, ``encoding``, ``identity`` (the column(s) identifying an answer) and
    ``empty_rows`` (the records whose answer is empty).
    """
    raw, encoding = read_table(path)
    source = str(path)
    _check_columns(raw, source, columns)

    def text(field: str) -> pd.Series:
        name = getattr(columns, field)
        if name in raw.columns:
            return raw[name].astype(str).str.strip()
        return pd.Series("", index=raw.index)

    def times(field: str) -> pd.Series:
        return parse_times(text(field), source, getattr(columns, field))

    def numbers(field: str, **bounds) -> pd.Series:
        return _numbers(text(field), source, getattr(columns, field), **bounds)

    doc_a, doc_b, query = text("a"), text("b"), text("query")
    for field in ("hit", "worker", "query", "a", "b"):
        values = text(field)
        _first(values == "", source, f"empty {getattr(columns, field)}")
        check_names(values, source, getattr(columns, field), lambda i: f"row {i + 1}")
    same = doc_a == doc_b
    _first(same, source, "variations A and B are both {value}", doc_a)
    _one_pair_per_hit(text("hit"), query, doc_a, doc_b, source, columns)

    values = {columns.a_value: "A", columns.b_value: "B", columns.equal_value: "equal", "": ""}
    choice = _choice(text("answer"), values, source, columns)

    pivot = text("pivot")
    a_is_x, x, y, score = _sides(doc_a, doc_b, pivot, choice, source)

    check = text("check").map(values)
    _first(check.isna(), source, f"unknown expected answer in {columns.check}")
    expected = check.map({"A": 1, "B": -1, "equal": 0, "": np.nan}) * np.where(a_is_x == 1, 1, -1)

    status = _status(text("status"), source, columns)
    background = text("background")
    lowered = background.str.lower()
    background = background.mask(lowered == columns.background_yes.lower(), "yes").mask(
        lowered == columns.background_no.lower(), "no"
    )
    hit, worker = text("hit"), text("worker")
    assigned = text("assignment") if columns.assignment in raw.columns else None
    identity, assignment = _identity(hit, worker, assigned, choice, source, columns)
    seconds = numbers("seconds", high=MAX_SECONDS)
    frame = pd.DataFrame(
        {
            "iteration": pd.array([pd.NA] * len(raw), dtype="Int64"),
            "pair_id": pd.factorize(hit)[0].astype(np.int64),
            "hit_id": hit,
            "created_at": times("created"),
            "max_assignments": numbers("max_assignments", low=1, high=1e6, integer=True),
            "reward": numbers("reward", high=MAX_REWARD, money=True),
            "query": query,
            "x": x,
            "y": y,
            "a_is_x": a_is_x,
            "kind": np.where(check.notna() & (check != ""), "check", "sort"),
            "expected": expected,
            "pivot_known": pivot != "",
            "worker_id": worker,
            "assignment_id": assignment,
            "status": status,
            "choice": choice,
            "score": score,
            "seconds": seconds,
            "listen_seconds": numbers("listen_seconds", high=MAX_SECONDS),
            "accepted_at": times("accepted"),
            "submitted_at": times("submitted"),
            "background": background,
            "comment": text("comment"),
        }
    )
    backwards = frame["submitted_at"] < frame["accepted_at"]
    _first(backwards, source, f"{columns.submitted} is before {columns.accepted}")
    if frame["created_at"].isna().all():
        frame["created_at"] = frame["accepted_at"].groupby(frame["hit_id"]).transform("min")
    for name in keep:
        found = [c for c in (name, f"Answer.{name}") if c in raw.columns]
        if found:
            frame[name] = raw[found[0]].astype(str).str.strip().to_numpy()
    frame.attrs["encoding"] = encoding
    frame.attrs["empty_rows"] = (np.flatnonzero(choice == "") + 1).tolist()
    frame.attrs["source"] = source
    frame.attrs["identity"] = identity
    return frame


def iso_time(values: pd.Series) -> pd.Series:
    """ISO 8601 UTC text with milliseconds (lossless; :func:`parse_times` reads it back)."""
    times = pd.to_datetime(values, utc=True, format="ISO8601")
    text = times.dt.strftime("%Y-%m-%dT%H:%M:%S.%f").str[:-3] + "Z"
    return text.where(times.notna(), "")


def write_results(
    answers: pd.DataFrame, path: str | os.PathLike, columns: Columns = Columns()
) -> None:
    """Write an answers frame as a results file in ``columns`` (UTF-8, atomically): the text
    of :func:`results_text`."""
    write_atomic(Path(path), results_text(answers, columns))


def results_text(answers: pd.DataFrame, columns: Columns = Columns()) -> str:
    """An answers frame as the text of a results file in ``columns``.

    Variation A is ``x`` when ``a_is_x``; ``Input.pivot`` is ``y``. Numbers are written as they
    are (MTurk writes whole seconds; other tools fractions) and times as ISO 8601 UTC with
    milliseconds, so :func:`read_results` gives the same answers back.
    """
    a_is_x = answers["a_is_x"].astype(bool)
    doc_a = answers["x"].where(a_is_x, answers["y"])
    doc_b = answers["y"].where(a_is_x, answers["x"])
    names = {"A": columns.a_value, "B": columns.b_value, "equal": columns.equal_value, "": ""}
    sign = np.where(a_is_x, 1, -1)
    expected_side = (answers["expected"] * sign).map({1: "A", -1: "B", 0: "equal"})
    out = pd.DataFrame(
        {
            columns.hit: answers["hit_id"],
            columns.reward: answers["reward"].map(lambda r: "" if pd.isna(r) else f"${r:.2f}"),
            columns.created: iso_time(answers["created_at"]),
            columns.max_assignments: answers["max_assignments"].map(
                lambda n: "" if pd.isna(n) else str(int(n))
            ),
            columns.assignment: answers["assignment_id"],
            columns.worker: answers["worker_id"],
            columns.status: answers["status"].str.capitalize(),
            columns.accepted: iso_time(answers["accepted_at"]),
            columns.submitted: iso_time(answers["submitted_at"]),
            columns.seconds: answers["seconds"].map(lambda s: "" if pd.isna(s) else f"{s:g}"),
            columns.query: answers["query"],
            columns.a: doc_a,
            columns.b: doc_b,
            columns.pivot: answers["y"].where(answers["pivot_known"].astype(bool), ""),
            columns.check: expected_side.fillna("").map(names),
            columns.listen_seconds: answers["listen_seconds"].map(
                lambda s: "" if pd.isna(s) else f"{s:g}"
            ),
            columns.answer: answers["choice"].fillna("").map(names),
            columns.background: answers["background"].fillna(""),
            columns.comment: answers["comment"].fillna(""),
        }
    )
    return csv_text(out, quoting=csv.QUOTE_ALL)
