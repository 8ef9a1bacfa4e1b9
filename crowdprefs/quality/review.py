"""Reviewing crowd answers: approve, reject with a reason, block workers, ask for replacements.

The rules (the project's ``[review]`` section, :class:`ReviewRules`) follow the preference-judgments
paper §4.2:

* an answer the crowd found invalid as it arrived (its choice, free texts or listening evidence,
  :func:`crowdprefs.campaign.answers.check_answer`: e.g. a clip never played to the end, which
  only a tampered page sends) was rejected then, the problem its reason;
* an answer to an **attention check** that prefers a candidate to the query itself (the
  "incipits judged more similar to the query than the query itself" of §4.2) is rejected
  ("equally similar" is tolerated: the candidate may contain the query);
* workers are **flagged** with the one set of worker-flag rules
  (:func:`crowdprefs.quality.flags.flag_workers`, against the verdicts of the project's own
  aggregation rule): ``bot`` (at least ``bot_min_answers`` answers, all one choice in one
  identical duration: the two robots of §4.2 always answered "Equal" in exactly 8 s) and
  ``failed-checks`` (more than ``max_failed_check_share`` of at least ``min_checks`` checks);
  with ``audit``, every rule of the audit; and every worker listed in ``block`` or in the
  caller's ``flags`` (a frame ``worker_id, reason``). A flagged worker is blocked and their
  answers not yet approved are rejected;
* every rejected answer is **replaced** by a new assignment (the budget is checked first, at
  the price the HIT was published at);
* once a batch has all its answers, the remaining ones are **approved**.

Per-answer rules run on every pass; worker rules run only when the batch has all its answers,
so their decisions do not depend on when answers happened to be fetched. Every decision is
stored first and applied to the crowd afterwards, so a crash between the two is finished by the
next pass. The driver runs the pass after each collection (:class:`Reviewer`, handed to
:func:`crowdprefs.campaign.driver.collect`): the crowd adapter only offers the calls.

**Flagging during the campaign** (``[review] flag_each_round``, any crowd): after each round of
answers (a batch, or one more look of adaptive answers) has come in, workers are flagged with
every rule of the audit (:func:`review_flags` with ``audit``, against the verdicts so far),
blocked (a simulated worker is no longer drawn, a web judge gets no further question, an MTurk
worker is blocked through the crowd, a Prolific participant is kept off the study by its block
list) and their answers of the open batch dropped from aggregation as a rejection drops them
(kept in the state for the audit, ``status = 'rejected'``, the rule as reason), and replacement
answers are asked; their answers of batches aggregated before stay, as the verdicts made from
them do.
Dropping an answer is not rejecting it for payment: a careless-looking worker may be an honest
one with an unusual ear, and a rejection hurts their standing on the platform. So the answers
dropped by these extra rules are *approved* on a paying crowd (their stored decision is
``drop``, not ``reject``, so a later pass tells them apart after a crash); only the
rules the review already rejects on (``bot``, ``failed-checks``, ``[review] block``, the
caller's flags, every audit rule with ``audit``) reject for payment, as before.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.campaign.budget import hit_costs
from crowdprefs.campaign.crowd import Crowd, ReviewedCrowd, reachable_size
from crowdprefs.campaign.project_state import check_spending, committed_cost
from crowdprefs.campaign.settings import check_values
from crowdprefs.errors import InputError
from crowdprefs.hits.render import HitSettings
from crowdprefs.io import csv_frame
from crowdprefs.progress import note
from crowdprefs.quality.flags import FLAGS, FlagRules, flag_workers, review_reasons, with_listening
from crowdprefs.quality.frames import project_answers, project_verdicts

if TYPE_CHECKING:
    from pathlib import Path

    from crowdprefs.campaign.project import Project

FLAG_COLUMNS = ["worker_id", "reason"]
REVIEW_FLAGS = ("bot", "failed-checks")
"""The flag rules a review blocks on without ``audit``."""


@dataclass(frozen=True)
class ReviewRules:
    """The ``[review]`` section."""

    reject_failed_checks: bool = True
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
    flag_each_round: bool = False
    """Flag, block and drop careless workers after each round of answers (see the module doc)."""
    max_unheard_share: float = 0.2
    """The ``not-listening`` flag: more than this share of a worker's answers given without
    every clip heard through (by the page's play log)."""

    def __post_init__(self) -> None:
        check_values("review", self)

    @classmethod
    def from_project(cls, project: Project) -> ReviewRules:
        return cls(**project.section("review"))  # checked against the schema at open

    def flag_rules(self) -> FlagRules:
        """The worker-flag thresholds this section sets (the others keep the audit's)."""
        return FlagRules(
            bot_answers=self.bot_min_answers,
            min_checks=self.min_checks,
            check_share=self.max_failed_check_share,
            unheard_share=self.max_unheard_share,
        )


# --- pure rules ---------------------------------------------------------------------------------


def failed_checks(answers: pd.DataFrame) -> pd.Series:
    """Answers to attention checks that go against the expected verdict (equal is tolerated).

    ``answers`` needs ``kind, expected, score``.
    """
    expected = pd.to_numeric(answers["expected"], errors="coerce").fillna(0)
    return (answers["kind"] == "check") & (expected != 0) & (answers["score"] == -expected)


def review_flags(
    answers: pd.DataFrame,
    verdicts: pd.DataFrame | AggregationRule | None,
    rules: ReviewRules,
    extra: pd.DataFrame | None = None,
    *,
    audit: bool = False,
) -> pd.DataFrame:
    """``worker_id, reason, rule`` of every worker to block, each with their first reason: the
    flag rules (:data:`REVIEW_FLAGS`, or every audit rule with ``audit``) over an answers frame
    judged against ``verdicts`` (pair verdicts, or the aggregation rule that makes them; unused
    without answers), then ``[review] block``, then ``extra`` (``worker_id, reason``). ``rule``
    names what flagged the worker: the first flag rule broken, ``listed`` or ``extra``."""
    columns = [*FLAG_COLUMNS, "rule"]
    listed = pd.DataFrame(
        {"worker_id": rules.block, "reason": "listed in [review] block", "rule": "listed"},
        columns=columns,
    )
    parts = [listed]
    if len(answers):
        select = FLAGS if audit else REVIEW_FLAGS
        found = flag_workers(answers, verdicts, rules.flag_rules(), select=select)
        first = found.drop_duplicates("worker_id").set_index("worker_id")["flag"]
        reasons = review_reasons(found)[FLAG_COLUMNS]
        parts.insert(0, reasons.assign(rule=reasons["worker_id"].map(first)))
    if extra is not None and len(extra):
        missing = set(FLAG_COLUMNS) - set(extra.columns)
        if missing:
            raise InputError(f"worker flags need columns worker_id, reason (missing {missing})")
        parts.append(extra[FLAG_COLUMNS].astype(str).assign(rule="extra"))
    flags = pd.concat([p for p in parts if len(p)] or [listed], ignore_index=True)
    return flags.drop_duplicates("worker_id", keep="first").reset_index(drop=True)


def round_flags(
    answers: pd.DataFrame, verdicts: pd.DataFrame | AggregationRule | None, rules: ReviewRules
) -> pd.DataFrame:
    """The workers ``[review] flag_each_round`` blocks after a round of answers: every audit
    rule (:func:`review_flags` with ``audit``, ``[review] block`` included) over the answers so
    far; ``worker_id, reason, rule``. The campaign's review pass and the planner's simulated
    campaigns (:mod:`crowdprefs.quality.planning`) both flag with it."""
    return review_flags(answers, verdicts, rules, audit=True)


def read_flags(path: Path) -> pd.DataFrame:
    """Workers to block from a CSV with the columns ``worker_id, reason`` (e.g. the
    ``review_flags.csv`` an audit writes)."""
    try:
        frame = csv_frame(path, path)
    except FileNotFoundError:
        raise InputError(f"flags file not found: {path}") from None
    if not set(FLAG_COLUMNS) <= set(frame.columns):
        raise InputError(f"{path}: needs columns worker_id,reason")
    empty = frame["worker_id"].str.strip() == ""
    if empty.any():
        raise InputError(f"{path}:{int(empty.to_numpy().argmax()) + 2}: empty worker_id")
    return frame[FLAG_COLUMNS]


# --- the review pass ----------------------------------------------------------------------------


def listened_answers(project: Project, crowd: str | None = None) -> pd.DataFrame:
    """The answers frame (:func:`~crowdprefs.quality.frames.project_answers`; ``crowd``'s only
    when given) with each answer's listening judged from the play log stored with it
    (:func:`~crowdprefs.quality.flags.with_listening`, by ``[hit] min_coverage``)."""
    frame = project_answers(project, crowd)
    stored = project.store.answers(include_rejected=True)
    if crowd is not None:
        stored = stored[stored["crowd"] == crowd]
    return with_listening(frame, stored, HitSettings.from_project(project).min_coverage)


def review(
    project: Project,
    crowd: Crowd,
    iteration: int,
    *,
    flags: pd.DataFrame | None = None,
    audit: bool = False,
) -> dict[str, int]:
    """One review pass over a batch's answers from ``crowd``; returns what was done:
    ``blocked, rejected, dropped, replaced, approved``.

    ``flags`` (``worker_id, reason``) names more workers to block and reject; ``audit`` blocks
    every worker the audit's flag rules flag too. A crowd that is not a
    :class:`~crowdprefs.campaign.crowd.ReviewedCrowd` (simulated, web) has no answers to approve
    or reject: only ``[review] flag_each_round`` acts on it.
    """
    rules = ReviewRules.from_project(project)
    store, name = project.store, crowd.name
    reviewed = isinstance(crowd, ReviewedCrowd)
    done = dict.fromkeys(("blocked", "rejected", "dropped", "replaced", "approved"), 0)
    if not (reviewed or rules.flag_each_round):
        return done
    if reviewed and rules.reject_failed_checks:
        answers = store.answers(include_rejected=True)
        open_answers = answers[(answers["crowd"] == name) & (answers["status"] == "submitted")]
        failing = open_answers[failed_checks(open_answers)]
        if len(failing):
            store.decide_rejections(name, failing.assign(reason=rules.check_feedback))
    complete = store.missing_answers(iteration, name).empty
    if complete:
        # only the audit's rules read the play logs (not-listening)
        listening = audit or rules.flag_each_round
        frame = listened_answers(project, name) if listening else project_answers(project, name)
        verdicts = project_verdicts(project, frame) if len(frame) else None
        blocked = store.blocked_workers(name)
        if reviewed:
            if flags is not None and "worker_id" in flags:  # only workers of this crowd
                flags = flags[flags["worker_id"].isin(frame["worker_id"])]
            new = review_flags(frame, verdicts, rules, flags, audit=audit)
            new = new[~new["worker_id"].isin(blocked)]
            if len(new):
                store.decide_blocks(name, new)
            blocked |= set(new["worker_id"])
        if rules.flag_each_round:
            dropped = round_flags(frame, verdicts, rules)
            dropped = dropped[~dropped["worker_id"].isin(blocked)]
            if len(dropped):
                store.decide_blocks(name, dropped, decision="drop")
    done["blocked"], done["rejected"], done["dropped"] = _apply_pending(project, crowd)
    if not reviewed:  # the crowd hands the dropped answers' pairs out again by itself
        if done["dropped"]:
            done["replaced"] = len(store.missing_answers(iteration, name))
        return done
    if rules.replace_rejected:
        done["replaced"] = _replace(project, crowd, iteration)
    if rules.approve and store.missing_answers(iteration, name).empty:
        done["approved"] = _approve(project, crowd, iteration, rules.concurrency)
    return done


@dataclass
class Reviewer:
    """The review pass the driver runs after each collection (a
    :class:`~crowdprefs.campaign.crowd.Review`): ``flags`` (``worker_id, reason``) of more
    workers to block, ``audit`` to block every worker the audit's rules flag too."""

    flags: pd.DataFrame | None = None
    audit: bool = False

    def __call__(self, project: Project, crowd: Crowd, iteration: int) -> dict[str, int]:
        return review(project, crowd, iteration, flags=self.flags, audit=self.audit)


def _apply_pending(project: Project, crowd: Crowd) -> tuple[int, int, int]:
    """Apply stored decisions not yet applied: blocks first, then rejections, then drops (an
    answer dropped during the campaign is approved for payment); returns how many blocks,
    rejections and drops. A crowd without review calls holds nothing to apply: the state is its
    block list (the simulated crowd and the web server read it)."""
    store, name = project.store, crowd.name
    reviewed = isinstance(crowd, ReviewedCrowd)
    blocks = store.pending_blocks(name)
    for worker, reason in blocks.itertuples(index=False):
        if reviewed:
            crowd.block_worker(worker, reason)
        store.block_applied(name, worker)
    rejected = store.pending_reviews(name, "reject")
    for assignment, reason in rejected.itertuples(index=False):
        if reviewed:
            crowd.reject_assignment(assignment, reason)
        store.review_applied(name, assignment)
    dropped = store.pending_reviews(name, "drop")
    for assignment in dropped["assignment_id"]:
        if reviewed:
            crowd.approve_assignment(assignment)
        store.review_applied(name, assignment)
    return len(blocks), len(rejected), len(dropped)


def _replace(project: Project, crowd: ReviewedCrowd, iteration: int) -> int:
    """Extend each HIT by its rejected answers (the budget is checked before each extension, at
    the price the HIT was published at).

    A HIT that cannot grow that far (MTurk's barrier at 10 assignments) keeps its size, and its
    pair now wants only the answers the HIT can still accept, so the batch does not wait for
    answers that can never come."""
    store, name, settings = project.store, crowd.name, project.settings
    hits = store.batch_hits(name, iteration)
    target = hits["wanted"] + hits["rejected"]
    hits["after"] = reachable_size(hits["size"], target, crowd.extension_barrier)
    short = hits[hits["after"] < target]
    if len(short):
        store.resize_pairs(name, wanted=(short["after"] - short["rejected"]).to_dict())
        for row in short.itertuples():
            note(
                f"HIT {row.hit_id}: MTurk cannot extend a HIT of {row.size} assignments to "
                f"{crowd.extension_barrier} or more; {row.wanted + row.rejected - row.after} "
                f"rejected answers are not replaced and its pair is decided on "
                f"{row.after - row.rejected} answers"
            )
    grow = hits[hits["after"] > hits["size"]]
    for pair_id, row in grow.iterrows():
        price = grow.loc[[pair_id]]
        delta = float(
            np.sum(hit_costs(price, [row["after"]], settings.reward, settings.fees))
            - np.sum(hit_costs(price, [row["size"]], settings.reward, settings.fees))
        )
        check_spending(project, round(delta, 2), committed_cost(project))
        crowd.add_assignments(row["hit_id"], int(row["size"]), int(row["after"]))
        store.resize_pairs(name, sizes={int(pair_id): int(row["after"])})
    return len(grow)


def _approve(project: Project, crowd: ReviewedCrowd, iteration: int, concurrency: int) -> int:
    store, name = project.store, crowd.name
    store.decide_approvals(name, iteration)
    pending = store.pending_reviews(name, "approve")["assignment_id"]
    # One call per assignment (MTurk has no batch approval): a few at a time, each recorded as
    # soon as it is done (this thread alone writes the state).
    with ThreadPoolExecutor(max_workers=concurrency) as pool:
        futures = {pool.submit(crowd.approve_assignment, a): a for a in pending}
        for future in as_completed(futures):
            future.result()
            store.review_applied(name, futures[future])
    return len(pending)
