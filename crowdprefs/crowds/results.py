"""MTurk batch-results CSVs: read a recorded campaign's answers, write one from a project.

A results CSV (as downloaded from MTurk's requester site, or written by other tools) has one
row per assignment: ``HITId, WorkerId, AssignmentId, AssignmentStatus, CreationTime,
AcceptTime, SubmitTime, WorkTimeInSeconds, Reward, MaxAssignments``, the HIT's inputs
``Input.*`` and the worker's answers ``Answer.*`` (DESIGN.md, "File formats"). Which input and
answer columns hold the query, the two variations and the choice, and which values mean "A",
"B" and "equal", vary between HIT designs: :class:`Columns` names them. The defaults are those
of crowdprefs' own HITs, which :func:`write_results` writes:

``Input.query, Input.docA, Input.docB``   the original and the variations shown as A and B;
``Input.pivot``                           the segment's pivot (seed 002 §4.2), when known;
``Input.check``                           the expected choice of an attention check, else empty;
``Answer.choice``                         ``A``, ``B`` or ``equal``;
``Answer.background, Answer.comment``     the optional free-text answers (untrusted).

Reading tries UTF-8 first and falls back to Windows-1252, then Latin-1 (which decodes any
byte), because real files are often not UTF-8. Times are read in MTurk's own format
(``Wed Apr 14 10:23:45 PDT 2010``) or ISO 8601. Rows with an empty answer are kept (``choice``
is empty and ``score`` missing) and counted, never dropped silently: callers report them.

:func:`read_results` returns the *answers frame* every audit function takes, one row per
answer with the columns of :data:`FRAME_COLUMNS` (see :mod:`crowdprefs.quality.audit`).
"""

from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError
from crowdprefs.files import write_atomic

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project

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
HIT's total clip duration (NaN when unknown).
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

ENCODINGS = ("utf-8-sig", "cp1252", "latin-1")


@dataclass(frozen=True)
class Columns:
    """Where a results CSV keeps each field, and which answer values mean A, B and equal.

    ``pivot``, ``check``, ``background``, ``comment`` and ``listen_seconds`` are optional: a
    column missing from the file is simply unknown.
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
    background: str = "Answer.background"
    comment: str = "Answer.comment"
    listen_seconds: str = "Input.listen_seconds"

    def __post_init__(self) -> None:
        values = (self.a_value, self.b_value, self.equal_value)
        if len(set(values)) != 3 or "" in values:
            raise InputError(
                f"the answer values for A, B and equal must be three distinct non-empty texts, "
                f"got {values!r}"
            )


REQUIRED = ("HITId", "WorkerId", "AssignmentId")


def decode(data: bytes) -> tuple[str, str]:
    """``(text, encoding)``: the first of UTF-8, Windows-1252 and Latin-1 that decodes."""
    for encoding in ENCODINGS:
        try:
            return data.decode(encoding), encoding
        except UnicodeDecodeError:
            continue
    raise AssertionError("latin-1 decodes every byte")  # pragma: no cover


def parse_times(values: pd.Series, source: str) -> pd.Series:
    """UTC timestamps from MTurk's ``Wed Apr 14 10:23:45 PDT 2010`` or ISO 8601 text.

    Empty values give NaT; anything else unreadable raises :class:`InputError` naming it.
    """
    text = values.fillna("").astype(str).str.strip()
    result = pd.Series(pd.NaT, index=values.index, dtype="datetime64[ns, UTC]")
    parts = text.str.extract(r"^\w{3} (\w{3} +\d+ [\d:]+) (\w+) (\d{4})$")
    mturk = parts[0].notna()
    if mturk.any():
        zone = parts.loc[mturk, 1].str.upper()
        unknown = ~zone.isin(list(TIMEZONES))
        if unknown.any():
            raise InputError(f"{source}: unknown time zone {zone[unknown].iloc[0]!r}")
        local = pd.to_datetime(
            parts.loc[mturk, 0] + " " + parts.loc[mturk, 2], format="%b %d %H:%M:%S %Y"
        )
        offset = pd.to_timedelta(zone.map(TIMEZONES).astype(float), unit="h")
        result[mturk] = (local - offset).dt.tz_localize("UTC")
    iso = ~mturk & (text != "")
    if iso.any():
        try:
            result[iso] = pd.to_datetime(text[iso], utc=True, format="ISO8601")
        except (ValueError, TypeError):
            bad = text[iso].iloc[0]
            raise InputError(f"{source}: unreadable time {bad!r}") from None
    return result


def _money(values: pd.Series, source: str) -> pd.Series:
    text = values.fillna("").astype(str).str.strip().str.lstrip("$").str.replace(",", "")
    numbers = pd.to_numeric(text.where(text != ""), errors="coerce")
    bad = numbers.isna() & (text != "")
    if bad.any():
        raise InputError(f"{source}: unreadable amount {values[bad].iloc[0]!r}")
    return numbers


def _numbers(values: pd.Series, source: str) -> pd.Series:
    text = values.fillna("").astype(str).str.strip()
    numbers = pd.to_numeric(text.where(text != ""), errors="coerce")
    bad = numbers.isna() & (text != "")
    if bad.any():
        raise InputError(f"{source}: not a number: {values[bad].iloc[0]!r}")
    return numbers


def read_table(path: str | os.PathLike) -> tuple[pd.DataFrame, str]:
    """The raw CSV as text columns (nothing parsed), with the encoding it was read in."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"results file not found: {path}") from None
    except OSError as error:
        raise InputError(f"cannot read results file {path}: {error.strerror}") from None
    text, encoding = decode(data)
    try:
        frame = pd.read_csv(io.StringIO(text), dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, csv.Error) as error:
        raise InputError(f"{path}: not a valid CSV: {str(error).strip().splitlines()[0]}") from None
    frame.columns = [str(c).strip() for c in frame.columns]
    return frame, encoding


def read_results(path: str | os.PathLike, columns: Columns = Columns()) -> pd.DataFrame:
    """Read an MTurk results CSV as an answers frame (:data:`FRAME_COLUMNS`).

    ``iteration`` is left empty (see :func:`crowdprefs.quality.audit.infer_iterations`); ``pair_id``
    numbers the HITs in order of appearance. Errors name the file, the record (row 1 = the first
    answer) and the value. ``frame.attrs`` holds ``encoding`` and ``empty_rows`` (the records
    whose answer is empty).
    """
    raw, encoding = read_table(path)
    source = str(path)
    needed = [*REQUIRED, columns.query, columns.a, columns.b, columns.answer]
    missing = [c for c in needed if c not in raw.columns]
    if missing:
        raise InputError(
            f"{source}: missing column(s) {', '.join(missing)}; the file has "
            f"{', '.join(raw.columns[:12])}{'...' if len(raw.columns) > 12 else ''} "
            "(set the column options to match it)"
        )
    if raw.empty:
        raise InputError(f"{source}: no answers in the file")

    def text(name: str) -> pd.Series:
        if name in raw.columns:
            return raw[name].astype(str).str.strip()
        return pd.Series("", index=raw.index)

    doc_a, doc_b, query = text(columns.a), text(columns.b), text(columns.query)
    for name, values in ((columns.query, query), (columns.a, doc_a), (columns.b, doc_b)):
        if (values == "").any():
            row = int(np.flatnonzero(values == "")[0]) + 1
            raise InputError(f"{source}: row {row}: empty {name}")
    same = doc_a == doc_b
    if same.any():
        row = int(np.flatnonzero(same)[0]) + 1
        raise InputError(
            f"{source}: row {row}: variations A and B are both {doc_a[same].iloc[0]!r}"
        )

    values = {columns.a_value: "A", columns.b_value: "B", columns.equal_value: "equal", "": ""}
    answer = text(columns.answer)
    choice = answer.map(values)
    if choice.isna().any():
        row = int(np.flatnonzero(choice.isna())[0]) + 1
        raise InputError(
            f"{source}: row {row}: unknown answer {answer[choice.isna()].iloc[0]!r} in "
            f"{columns.answer} (expected {columns.a_value!r}, {columns.b_value!r} or "
            f"{columns.equal_value!r})"
        )

    pivot = text(columns.pivot)
    bad_pivot = (pivot != "") & (pivot != doc_a) & (pivot != doc_b)
    if bad_pivot.any():
        row = int(np.flatnonzero(bad_pivot)[0]) + 1
        raise InputError(
            f"{source}: row {row}: pivot {pivot[bad_pivot].iloc[0]!r} is neither A nor B"
        )
    # y is the pivot when known, otherwise variation B
    a_is_x = (pivot != doc_a).astype(int)
    x = doc_a.where(a_is_x == 1, doc_b)
    y = doc_b.where(a_is_x == 1, doc_a)
    side = choice.map({"A": 1, "B": -1, "equal": 0, "": np.nan})
    score = side * np.where(a_is_x == 1, 1, -1)

    check = text(columns.check).map(values)
    if check.isna().any():
        row = int(np.flatnonzero(check.isna())[0]) + 1
        raise InputError(f"{source}: row {row}: unknown expected answer in {columns.check}")
    expected = check.map({"A": 1, "B": -1, "equal": 0, "": np.nan}) * np.where(a_is_x == 1, 1, -1)

    status = (
        text("AssignmentStatus")
        .str.lower()
        .map(
            {
                "approved": "approved",
                "rejected": "rejected",
                "submitted": "submitted",
                "": "submitted",
            }
        )
    )
    if status.isna().any():
        raise InputError(
            f"{source}: unknown AssignmentStatus {raw['AssignmentStatus'][status.isna()].iloc[0]!r}"
        )
    frame = pd.DataFrame(
        {
            "iteration": pd.array([pd.NA] * len(raw), dtype="Int64"),
            "pair_id": pd.factorize(text("HITId"))[0].astype(np.int64),
            "hit_id": text("HITId"),
            "created_at": parse_times(text("CreationTime"), f"{source}: CreationTime"),
            "max_assignments": _numbers(text("MaxAssignments"), f"{source}: MaxAssignments"),
            "reward": _money(text("Reward"), f"{source}: Reward"),
            "query": query,
            "x": x,
            "y": y,
            "a_is_x": a_is_x,
            "kind": np.where(check.notna() & (check != ""), "check", "sort"),
            "expected": expected,
            "pivot_known": pivot != "",
            "worker_id": text("WorkerId"),
            "assignment_id": text("AssignmentId"),
            "status": status,
            "choice": choice,
            "score": score,
            "seconds": _numbers(text("WorkTimeInSeconds"), f"{source}: WorkTimeInSeconds"),
            "listen_seconds": _numbers(text(columns.listen_seconds), f"{source}: listen seconds"),
            "accepted_at": parse_times(text("AcceptTime"), f"{source}: AcceptTime"),
            "submitted_at": parse_times(text("SubmitTime"), f"{source}: SubmitTime"),
            "background": text(columns.background),
            "comment": text(columns.comment),
        }
    )
    duplicated = frame["assignment_id"].duplicated()
    if duplicated.any():
        row = int(np.flatnonzero(duplicated)[0]) + 1
        repeated = frame["assignment_id"][duplicated].iloc[0]
        raise InputError(f"{source}: row {row}: assignment {repeated!r} repeated")
    if frame["created_at"].isna().all():
        frame["created_at"] = frame["accepted_at"].groupby(frame["hit_id"]).transform("min")
    frame.attrs["encoding"] = encoding
    frame.attrs["empty_rows"] = (np.flatnonzero(choice == "") + 1).tolist()
    frame.attrs["source"] = source
    return frame


def _iso_time(values: pd.Series) -> pd.Series:
    """ISO 8601 UTC text with milliseconds (lossless; :func:`parse_times` reads it back)."""
    times = pd.to_datetime(values, utc=True, format="ISO8601")
    text = times.dt.strftime("%Y-%m-%dT%H:%M:%S.%f").str[:-3] + "Z"
    return text.where(times.notna(), "")


def write_results(
    answers: pd.DataFrame, path: str | os.PathLike, columns: Columns = Columns()
) -> None:
    """Write an answers frame as an MTurk results CSV (UTF-8, atomically).

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
            "HITId": answers["hit_id"],
            "Reward": answers["reward"].map(lambda r: "" if pd.isna(r) else f"${r:.2f}"),
            "CreationTime": _iso_time(answers["created_at"]),
            "MaxAssignments": answers["max_assignments"].map(
                lambda n: "" if pd.isna(n) else str(int(n))
            ),
            "AssignmentId": answers["assignment_id"],
            "WorkerId": answers["worker_id"],
            "AssignmentStatus": answers["status"].str.capitalize(),
            "AcceptTime": _iso_time(answers["accepted_at"]),
            "SubmitTime": _iso_time(answers["submitted_at"]),
            "WorkTimeInSeconds": answers["seconds"].map(lambda s: "" if pd.isna(s) else f"{s:g}"),
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
    write_atomic(Path(path), out.to_csv(index=False, quoting=csv.QUOTE_ALL))


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
            "accepted_at": _iso_time(answers["accepted_at"]).replace("", None).to_numpy(),
            "submitted_at": _iso_time(answers["submitted_at"]).replace("", None).to_numpy(),
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
