"""Reviewing crowd answers: approve, reject with a reason, block workers, ask for replacements.

The rules (the project's ``[review]`` section, :class:`ReviewRules`) follow seed 002 §4.2:

* an answer to an **attention check** that prefers a candidate to the query itself (the
  "incipits judged more similar to the query than the query itself" of §4.2) is rejected
  ("equally similar" is tolerated: the candidate may contain the query);
* an answer whose page reports a clip never played to the end (``plays_*`` = 0: the HIT forbids
  sending it, so the page was tampered with) is rejected;
* a worker whose answers (at least ``bot_min_answers``) all give one choice in one identical
  duration is a **bot** (the two robots of §4.2 always answered "Equal" in exactly 8 s);
* a worker failing more than ``max_failed_check_share`` of at least ``min_checks`` checks, a
  worker listed in ``block``, and any worker in the caller's ``flags`` (e.g. from
  :mod:`crowdprefs.quality.audit`: a frame ``worker_id, reason``) is **flagged**: blocked, and their
  answers not yet approved are rejected;
* every rejected answer is **replaced** by a new assignment (the budget is checked first);
* once a batch has all its answers, the remaining ones are **approved**.

Per-answer rules run on every pass; worker rules run only when the batch has all its answers,
so their decisions do not depend on when answers happened to be fetched. Every decision is
stored first (``answer_reviews``, ``worker_blocks``) and applied to the crowd afterwards, so a
crash between the two is finished by the next pass.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Protocol

import pandas as pd

from crowdprefs.campaign.budget import batch_cost, check_budget
from crowdprefs.campaign.crowd import reachable_size
from crowdprefs.campaign.store import now
from crowdprefs.errors import InputError
from crowdprefs.progress import note

if TYPE_CHECKING:
    from pathlib import Path

    from crowdprefs.campaign.project import Project

FLAG_COLUMNS = ["worker_id", "reason"]


@dataclass(frozen=True)
class ReviewRules:
    """The ``[review]`` section."""

    reject_failed_checks: bool = True
    reject_unplayed: bool = True
    bot_min_answers: int = 5
    min_checks: int = 2
    max_failed_check_share: float = 0.5
    block: list[str] = field(default_factory=list)
    replace_rejected: bool = True
    approve: bool = True
    concurrency: int = 4
    """Approvals sent at once (MTurk approves one assignment per call)."""
    check_feedback: str = (
        "A control question (a clip against the original melody itself) was answered wrongly."
    )
    unplayed_feedback: str = "The answer was sent without playing every clip to the end."

    def __post_init__(self) -> None:
        if self.bot_min_answers < 2 or self.min_checks < 1 or not 1 <= self.concurrency <= 32:
            raise InputError(
                "[review] bot_min_answers must be ≥ 2, min_checks ≥ 1 and concurrency 1–32"
            )
        if not 0 <= self.max_failed_check_share <= 1:
            raise InputError("[review] max_failed_check_share must be in [0, 1]")

    @classmethod
    def from_project(cls, project: Project) -> ReviewRules:
        section = project.section("review")
        unknown = set(section) - {f.name for f in fields(cls)}
        if unknown:
            raise InputError(f"unknown [review] setting(s): {', '.join(sorted(unknown))}")
        return cls(**section)


class ReviewApi(Protocol):
    """What a crowd backend does for the reviewer (each call idempotent)."""

    name: str
    extension_barrier: int | None

    def block_worker(self, worker_id: str, reason: str) -> None: ...

    def reject_assignment(self, assignment_id: str, reason: str) -> None: ...

    def approve_assignment(self, assignment_id: str) -> None: ...

    def add_assignments(self, hit_id: str, before: int, after: int) -> None: ...


# --- pure rules ---------------------------------------------------------------------------------


def failed_checks(answers: pd.DataFrame) -> pd.Series:
    """Answers to attention checks that go against the expected verdict (equal is tolerated).

    ``answers`` needs ``kind, expected, score``.
    """
    expected = pd.to_numeric(answers["expected"], errors="coerce").fillna(0)
    return (answers["kind"] == "check") & (expected != 0) & (answers["score"] == -expected)


def unplayed(answers: pd.DataFrame) -> pd.Series:
    """Answers whose page reports a clip never played to the end (the HIT forbids sending them,
    so only a tampered page does). Reads the ``plays_*`` fields kept in ``raw`` (JSON with
    ``fields``); answers without them are not judged."""

    def never_played(raw: object) -> bool:
        try:
            fields = json.loads(raw)["fields"]
            return min(float(fields[f"plays_{c}"]) for c in ("query", "a", "b")) < 1
        except (TypeError, ValueError, KeyError):
            return False

    return answers["raw"].map(never_played).astype(bool)


def bot_workers(answers: pd.DataFrame, min_answers: int) -> pd.DataFrame:
    """Workers with ≥ ``min_answers`` answers, all one choice in one duration (seed 002 §4.2)."""
    by = answers.groupby("worker_id").agg(
        n=("choice", "size"), choices=("choice", "nunique"), durations=("seconds", "nunique")
    )
    bots = by[(by["n"] >= min_answers) & (by["choices"] == 1) & (by["durations"] <= 1)]
    return pd.DataFrame(
        {
            "worker_id": bots.index,
            "reason": [f"bot: {n} identical answers in identical time" for n in bots["n"]],
        },
        columns=FLAG_COLUMNS,
    )


def check_failers(answers: pd.DataFrame, min_checks: int, max_share: float) -> pd.DataFrame:
    """Workers failing more than ``max_share`` of their (at least ``min_checks``) checks."""
    checks = answers[answers["kind"] == "check"]
    failed = failed_checks(checks)
    by = failed.groupby(checks["worker_id"]).agg(["size", "sum"])
    bad = by[(by["size"] >= min_checks) & (by["sum"] > max_share * by["size"])]
    return pd.DataFrame(
        {
            "worker_id": bad.index,
            "reason": [
                f"failed {int(f)} of {int(n)} attention checks"
                for n, f in zip(bad["size"], bad["sum"], strict=True)
            ],
        },
        columns=FLAG_COLUMNS,
    )


def worker_flags(
    answers: pd.DataFrame, rules: ReviewRules, extra: pd.DataFrame | None = None
) -> pd.DataFrame:
    """Every flagged worker with its first reason: the rules, ``[review] block``, ``extra``."""
    listed = pd.DataFrame(
        {"worker_id": rules.block, "reason": "listed in [review] block"}, columns=FLAG_COLUMNS
    )
    parts = [
        bot_workers(answers, rules.bot_min_answers),
        check_failers(answers, rules.min_checks, rules.max_failed_check_share),
        listed,
    ]
    if extra is not None and len(extra):
        missing = set(FLAG_COLUMNS) - set(extra.columns)
        if missing:
            raise InputError(f"worker flags need columns worker_id, reason (missing {missing})")
        parts.append(extra[FLAG_COLUMNS].astype(str))
    flags = pd.concat([p for p in parts if len(p)] or [listed], ignore_index=True)
    return flags.drop_duplicates("worker_id", keep="first").reset_index(drop=True)


def read_flags(path: Path) -> pd.DataFrame:
    """Workers to block from a CSV with the columns ``worker_id, reason`` (e.g. the
    ``review_flags.csv`` an audit writes)."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except FileNotFoundError:
        raise InputError(f"flags file not found: {path}") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError) as error:
        raise InputError(f"{path}: not a valid CSV: {error}") from None
    if not set(FLAG_COLUMNS) <= set(frame.columns):
        raise InputError(f"{path}: needs columns worker_id,reason")
    empty = frame["worker_id"].str.strip() == ""
    if empty.any():
        raise InputError(f"{path}:{int(empty.to_numpy().argmax()) + 2}: empty worker_id")
    return frame[FLAG_COLUMNS]


def extra_flags(
    project: Project, flags_file: Path | None = None, *, audited: bool = False
) -> pd.DataFrame | None:
    """The workers a review blocks besides its own rules (``worker_id, reason``): those listed
    in ``flags_file`` and, when ``audited``, those the audit of the project's answers flags;
    ``None`` when there are none to add."""
    parts = [read_flags(flags_file)] if flags_file is not None else []
    if audited:
        from crowdprefs.quality import audit

        answers = audit.project_answers(project)
        if len(answers):
            parts.append(audit.review_reasons(audit.flag_workers(answers)))
    return pd.concat(parts, ignore_index=True) if parts else None


# --- the review pass ----------------------------------------------------------------------------


def _decide_rejections(conn, crowd: str, rows: pd.DataFrame, reasons: list[str]) -> None:
    decided = now()
    conn.executemany(
        "INSERT OR IGNORE INTO answer_reviews"
        " (crowd, assignment_id, pair_id, worker_id, decision, reason, decided_at)"
        " VALUES (?, ?, ?, ?, 'reject', ?, ?)",
        [
            (crowd, a, int(p), w, r, decided)
            for a, p, w, r in zip(
                rows["assignment_id"], rows["pair_id"], rows["worker_id"], reasons, strict=True
            )
        ],
    )
    conn.executemany(
        "UPDATE answers SET status = 'rejected' WHERE crowd = ? AND assignment_id = ?"
        " AND status = 'submitted'",
        [(crowd, a) for a in rows["assignment_id"]],
    )


def _missing(project: Project, crowd: str, iteration: int) -> int:
    return int(
        project.store.conn.execute(
            """
            SELECT COUNT(*) FROM pairs p
            WHERE p.iteration = ? AND p.answers_wanted > (
                SELECT COUNT(*) FROM answers a
                WHERE a.pair_id = p.pair_id AND a.crowd = ? AND a.status != 'rejected')
            """,
            (iteration, crowd),
        ).fetchone()[0]
    )


def review(
    project: Project, api: ReviewApi, iteration: int, *, flags: pd.DataFrame | None = None
) -> dict[str, int]:
    """One review pass over a batch's answers from ``api``'s crowd; returns what was done.

    ``flags`` (``worker_id, reason``) names more workers to block and reject.
    """
    rules = ReviewRules.from_project(project)
    store, crowd = project.store, api.name
    answers = store.answers(include_rejected=True)
    answers = answers[answers["crowd"] == crowd]
    open_answers = answers[answers["status"] == "submitted"]
    done = {"blocked": 0, "rejected": 0, "replaced": 0, "approved": 0}

    failing = open_answers[failed_checks(open_answers) & rules.reject_failed_checks]
    unheard = open_answers[unplayed(open_answers) & rules.reject_unplayed]
    unheard = unheard[~unheard["assignment_id"].isin(failing["assignment_id"])]
    if len(failing) or len(unheard):
        with store.transaction() as conn:
            _decide_rejections(conn, crowd, failing, [rules.check_feedback] * len(failing))
            _decide_rejections(conn, crowd, unheard, [rules.unplayed_feedback] * len(unheard))
    if _missing(project, crowd, iteration) == 0:
        known = set(
            store.frame("SELECT worker_id FROM worker_blocks WHERE crowd = ?", (crowd,))[
                "worker_id"
            ]
        )
        if flags is not None and "worker_id" in flags:  # only workers of this crowd
            flags = flags[flags["worker_id"].isin(answers["worker_id"])]
        new = worker_flags(answers, rules, flags)
        new = new[~new["worker_id"].isin(known)]
        if len(new):
            open_now = store.answers(include_rejected=False)
            open_now = open_now[(open_now["crowd"] == crowd) & (open_now["status"] == "submitted")]
            theirs = open_now.merge(new, on="worker_id")
            with store.transaction() as conn:
                conn.executemany(
                    "INSERT OR IGNORE INTO worker_blocks (crowd, worker_id, reason, decided_at)"
                    " VALUES (?, ?, ?, ?)",
                    [(crowd, w, r, now()) for w, r in new.itertuples(index=False)],
                )
                _decide_rejections(conn, crowd, theirs, theirs["reason"].tolist())
    done["blocked"], done["rejected"] = _apply_pending(project, api)
    if rules.replace_rejected:
        done["replaced"] = _replace(project, api, iteration)
    if rules.approve and _missing(project, crowd, iteration) == 0:
        done["approved"] = _approve(project, api, iteration, rules.concurrency)
    return done


def _apply_pending(project: Project, api: ReviewApi) -> tuple[int, int]:
    """Apply stored decisions not yet applied: blocks first, then rejections."""
    store, crowd = project.store, api.name
    blocks = store.frame(
        "SELECT worker_id, reason FROM worker_blocks WHERE crowd = ? AND applied_at IS NULL",
        (crowd,),
    )
    for worker, reason in blocks.itertuples(index=False):
        api.block_worker(worker, reason)
        with store.transaction() as conn:
            conn.execute(
                "UPDATE worker_blocks SET applied_at = ? WHERE crowd = ? AND worker_id = ?",
                (now(), crowd, worker),
            )
    rejects = store.frame(
        "SELECT assignment_id, reason FROM answer_reviews"
        " WHERE crowd = ? AND decision = 'reject' AND applied_at IS NULL",
        (crowd,),
    )
    for assignment, reason in rejects.itertuples(index=False):
        api.reject_assignment(assignment, reason)
        with store.transaction() as conn:
            conn.execute(
                "UPDATE answer_reviews SET applied_at = ? WHERE crowd = ? AND assignment_id = ?",
                (now(), crowd, assignment),
            )
    return len(blocks), len(rejects)


def _replace(project: Project, api: ReviewApi, iteration: int) -> int:
    """Extend each HIT by its rejected answers (the budget is checked before each extension).

    A HIT that cannot grow that far (MTurk's barrier at 10 assignments) keeps its size, and its
    pair now wants only the answers the HIT can still accept, so the batch does not wait for
    answers that can never come."""
    from crowdprefs.campaign.driver import committed_cost

    store, crowd, settings = project.store, api.name, project.settings
    hits = store.batch_hits(crowd, iteration)
    target = hits["wanted"] + hits["rejected"]
    hits["after"] = reachable_size(hits["size"], target, api.extension_barrier)
    short = hits[hits["after"] < target]
    if len(short):
        with store.transaction() as conn:
            conn.executemany(
                "UPDATE pairs SET answers_wanted = ? WHERE pair_id = ?",
                [(int(n), int(p)) for p, n in (short["after"] - short["rejected"]).items()],
            )
        for row in short.itertuples():
            note(
                f"HIT {row.hit_id}: MTurk cannot extend a HIT of {row.size} assignments to "
                f"{api.extension_barrier} or more; {row.wanted + row.rejected - row.after} "
                f"rejected answers are not replaced and its pair is decided on "
                f"{row.after - row.rejected} answers"
            )
    grow = hits[hits["after"] > hits["size"]]
    for hit_id, have, after in grow[["hit_id", "size", "after"]].itertuples(index=False):
        delta = batch_cost(settings.reward, [after], settings.fees) - batch_cost(
            settings.reward, [have], settings.fees
        )
        check_budget(delta, committed_cost(project), settings.budget)
        api.add_assignments(hit_id, int(have), int(after))
        with store.transaction() as conn:
            conn.execute(
                "UPDATE hits SET max_assignments = ? WHERE crowd = ? AND hit_id = ?",
                (int(after), crowd, hit_id),
            )
    return len(grow)


def _approve(project: Project, api: ReviewApi, iteration: int, concurrency: int) -> int:
    store, crowd = project.store, api.name
    with store.transaction() as conn:
        rows = conn.execute(
            "SELECT a.assignment_id, a.pair_id, a.worker_id FROM answers a"
            " JOIN pairs p USING (pair_id)"
            " WHERE a.crowd = ? AND p.iteration = ? AND a.status = 'submitted'",
            (crowd, iteration),
        ).fetchall()
        decided = now()
        conn.executemany(
            "INSERT OR IGNORE INTO answer_reviews"
            " (crowd, assignment_id, pair_id, worker_id, decision, decided_at)"
            " VALUES (?, ?, ?, ?, 'approve', ?)",
            [(crowd, a, p, w, decided) for a, p, w in rows],
        )
        conn.executemany(
            "UPDATE answers SET status = 'approved' WHERE crowd = ? AND assignment_id = ?",
            [(crowd, a) for a, _, _ in rows],
        )
    pending = store.frame(
        "SELECT assignment_id FROM answer_reviews"
        " WHERE crowd = ? AND decision = 'approve' AND applied_at IS NULL",
        (crowd,),
    )["assignment_id"]
    # One call per assignment (MTurk has no batch approval): a few at a time, each recorded as
    # soon as it is done (this thread alone writes the state).
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = {pool.submit(api.approve_assignment, a): a for a in pending}
        for future in as_completed(futures):
            future.result()
            with store.transaction() as conn:
                conn.execute(
                    "UPDATE answer_reviews SET applied_at = ?"
                    " WHERE crowd = ? AND assignment_id = ?",
                    (now(), crowd, futures[future]),
                )
    return len(pending)
