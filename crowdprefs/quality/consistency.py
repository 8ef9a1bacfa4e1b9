"""Answer-pattern checks on a worker's own answers, in the style of the quality control of
ITU-T Rec. P.808 (*Subjective evaluation of speech quality with a crowdsourcing approach*):
straight-lining (one button pressed over and over) and consistency on repeated pairs (the same
two candidates of a query judged again).

Pure functions over an answers frame (the audit's, or the store's): ``worker_id``, ``choice``
(``A``, ``B`` or ``equal``), ``score`` (+1 x preferred, 0 equal, −1 y preferred), ``query``,
``x``, ``y`` and, when present, ``submitted_at`` (answer order) and ``raw`` (the stored raw
record). Each check returns one row per worker with its evidence and a ``flagged`` column;
:func:`flags` turns flagged rows into the ``worker_id, reason`` frame the review rules take
as extra flags (:func:`crowdprefs.quality.review.worker_flags`).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError

CLICKS = ("A", "B", "equal")
STRAIGHT_COLUMNS = ["worker_id", "answers", "modal", "modal_share", "longest_run", "flagged"]
REPEAT_COLUMNS = ["worker_id", "repeated", "contradictions", "changed", "rate", "flagged"]


def _need(answers: pd.DataFrame, columns: tuple[str, ...]) -> None:
    missing = [c for c in columns if c not in answers.columns]
    if missing:
        raise InputError(f"the answers frame lacks column(s) {', '.join(missing)}")


def clicked(answers: pd.DataFrame) -> pd.Series:
    """The button each judge pressed, as the page showed the two variations.

    The web crowd shows each question's variations in an order of its own (``[web]
    randomise_sides``) and stores ``choice`` on the pair's sides; the button pressed is kept in
    the raw record (``"order": {"clicked": …}``). Answers without that record (other crowds,
    fixed sides) pressed ``choice``."""
    _need(answers, ("choice",))
    if "raw" not in answers.columns:
        return answers["choice"].astype(str)

    def pressed(raw: object) -> str | None:
        try:
            return str(json.loads(raw)["order"]["clicked"])
        except (TypeError, ValueError, KeyError):
            return None

    found = answers["raw"].map(pressed)
    return found.where(found.notna(), answers["choice"]).astype(str)


def _in_order(answers: pd.DataFrame) -> pd.DataFrame:
    """The answers sorted by worker, then submission time (row order when unknown)."""
    frame = answers.assign(_row=np.arange(len(answers)))
    if "submitted_at" not in frame.columns:
        return frame.sort_values(["worker_id", "_row"], kind="stable")
    frame["_at"] = pd.to_datetime(frame["submitted_at"], utc=True, errors="coerce")
    return frame.sort_values(["worker_id", "_at", "_row"], kind="stable")


def straight_lining(
    answers: pd.DataFrame,
    *,
    min_answers: int = 10,
    max_share: float = 0.9,
    max_run: int = 10,
) -> pd.DataFrame:
    """Workers pressing one button over and over (P.808's check against "straight-lining").

    Per worker: ``answers``, the ``modal`` button pressed (:func:`clicked`), its share and the
    ``longest_run`` of consecutive presses of one button in submission order. A worker with at
    least ``min_answers`` answers is ``flagged`` when the modal share reaches ``max_share`` or
    the longest run reaches ``max_run``. (The web crowd shows each question's variations in
    their own order, so pressing "A" every time is a pattern no honest judge produces.)
    """
    if min_answers < 2 or not 0 < max_share <= 1 or max_run < 2:
        raise InputError("straight-lining needs min_answers ≥ 2, max_share in (0, 1], max_run ≥ 2")
    _need(answers, ("worker_id", "choice"))
    if answers.empty:
        return pd.DataFrame(columns=STRAIGHT_COLUMNS)
    frame = _in_order(answers.assign(_click=clicked(answers)))
    worker, click = frame["worker_id"].to_numpy(), frame["_click"].to_numpy()
    start = np.r_[True, (worker[1:] != worker[:-1]) | (click[1:] != click[:-1])]
    run_id = np.cumsum(start)
    runs = pd.DataFrame({"worker_id": worker, "run": run_id}).groupby(["worker_id", "run"]).size()
    longest = runs.groupby(level="worker_id").max()
    counts = pd.crosstab(frame["worker_id"], frame["_click"])
    total = counts.sum(axis=1)
    table = pd.DataFrame(
        {
            "answers": total,
            "modal": counts.idxmax(axis=1),
            "modal_share": counts.max(axis=1) / total,
            "longest_run": longest.reindex(total.index),
        }
    )
    enough = table["answers"] >= min_answers
    table["flagged"] = enough & (
        (table["modal_share"] >= max_share) | (table["longest_run"] >= max_run)
    )
    return table.rename_axis("worker_id").reset_index()[STRAIGHT_COLUMNS]


def repeated_pairs(answers: pd.DataFrame) -> pd.DataFrame:
    """Each worker's answers to pairs they judged more than once (the same two candidates of
    a query, in either order): ``worker_id, query, first, second, answers, more, equal,
    less`` with the counts oriented from ``first``'s point of view (``first`` < ``second``)."""
    _need(answers, ("worker_id", "query", "x", "y", "score"))
    x, y = answers["x"].astype(str), answers["y"].astype(str)
    swap = (x > y).to_numpy()
    oriented = np.where(swap, -answers["score"].to_numpy(dtype=float), answers["score"])
    frame = pd.DataFrame(
        {
            "worker_id": answers["worker_id"].to_numpy(),
            "query": answers["query"].to_numpy(),
            "first": np.where(swap, y, x),
            "second": np.where(swap, x, y),
            "more": oriented > 0,
            "equal": oriented == 0,
            "less": oriented < 0,
        }
    )
    grouped = frame.groupby(["worker_id", "query", "first", "second"], sort=True)
    table = grouped[["more", "equal", "less"]].sum().astype(int)
    table.insert(0, "answers", grouped.size())
    return table[table["answers"] >= 2].reset_index()


def repeated_pair_consistency(
    answers: pd.DataFrame, *, min_repeated: int = 2, max_rate: float = 0.5
) -> pd.DataFrame:
    """How consistently each worker judges pairs they met again (P.808's repeated items).

    Per worker: ``repeated`` pairs judged more than once, ``contradictions`` among them (one
    candidate preferred once and the other another time), ``changed`` (any different answer,
    "equal" against a preference included) and the contradiction ``rate``. A worker with at
    least ``min_repeated`` repeated pairs is ``flagged`` when the rate exceeds ``max_rate``.
    """
    if min_repeated < 1 or not 0 <= max_rate <= 1:
        raise InputError("repeated-pair consistency needs min_repeated ≥ 1, max_rate in [0, 1]")
    pairs = repeated_pairs(answers)
    if pairs.empty:
        return pd.DataFrame(columns=REPEAT_COLUMNS)
    kinds = (pairs[["more", "equal", "less"]] > 0).sum(axis=1)
    pairs = pairs.assign(contradiction=(pairs["more"] > 0) & (pairs["less"] > 0), changed=kinds > 1)
    table = pairs.groupby("worker_id").agg(
        repeated=("answers", "size"),
        contradictions=("contradiction", "sum"),
        changed=("changed", "sum"),
    )
    table["rate"] = table["contradictions"] / table["repeated"]
    table["flagged"] = (table["repeated"] >= min_repeated) & (table["rate"] > max_rate)
    return table.reset_index()[REPEAT_COLUMNS]


def flags(
    straight: pd.DataFrame | None = None, repeated: pd.DataFrame | None = None
) -> pd.DataFrame:
    """The flagged workers of :func:`straight_lining` and :func:`repeated_pair_consistency` as
    ``worker_id, reason`` (the first reason per worker), ready for the review rules."""
    rows: list[tuple[str, str]] = []
    if straight is not None:
        for r in straight[straight["flagged"].astype(bool)].itertuples(index=False):
            rows.append(
                (
                    r.worker_id,
                    f"straight-lining: pressed {r.modal!r} in {r.modal_share:.0%} of "
                    f"{r.answers} answers (longest run {r.longest_run})",
                )
            )
    if repeated is not None:
        for r in repeated[repeated["flagged"].astype(bool)].itertuples(index=False):
            rows.append(
                (
                    r.worker_id,
                    f"inconsistent: contradicted themselves on {r.contradictions} of "
                    f"{r.repeated} pairs judged twice",
                )
            )
    frame = pd.DataFrame(rows, columns=["worker_id", "reason"])
    return frame.drop_duplicates("worker_id", keep="first").reset_index(drop=True)
