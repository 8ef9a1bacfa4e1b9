"""The review rules per worker, with the rule that decided: for crowds that accept or reject a
worker's whole submission at once (a study platform pays per participant, not per answer).

A thin layer over :mod:`crowdprefs.quality.review`, whose rules it applies unchanged:
:func:`~crowdprefs.quality.review.worker_flags` decides who is flagged (and the first reason);
the rule that flagged them is read from the same rule functions (:func:`bot_workers`,
:func:`check_failers`), so no reason text is parsed; single answers failing an attention check
(:func:`failed_checks`) are rejected on their own when ``[review] reject_failed_checks``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from crowdprefs.quality.review import (
    ReviewRules,
    bot_workers,
    check_failers,
    failed_checks,
    worker_flags,
)

RULES = ("bot", "failed_checks", "listed", "extra")
"""What flagged a worker: the bot rule, too many failed attention checks, ``[review] block``, or
a flag given by the caller (e.g. the audit's or :mod:`crowdprefs.quality.consistency`'s)."""


@dataclass(frozen=True)
class WorkerDecisions:
    """``flags``: ``worker_id, reason, rule`` of every flagged worker; ``rejected_answers``:
    ``assignment_id, worker_id, reason`` of single answers to reject (attention checks failed
    by workers who are not flagged)."""

    flags: pd.DataFrame
    rejected_answers: pd.DataFrame


def worker_decisions(
    answers: pd.DataFrame, rules: ReviewRules, extra: pd.DataFrame | None = None
) -> WorkerDecisions:
    """The review rules applied to ``answers`` (``worker_id, assignment_id, choice, seconds,
    kind, expected, score``), with the rule behind each flag."""
    flags = worker_flags(answers, rules, extra)
    bots = set(bot_workers(answers, rules.bot_min_answers)["worker_id"])
    failers = set(
        check_failers(answers, rules.min_checks, rules.max_failed_check_share)["worker_id"]
    )
    listed = set(rules.block)
    flags["rule"] = [
        "bot"
        if w in bots
        else "failed_checks"
        if w in failers
        else "listed"
        if w in listed
        else "extra"
        for w in flags["worker_id"]
    ]
    failing = answers[failed_checks(answers) & rules.reject_failed_checks]
    failing = failing[~failing["worker_id"].isin(flags["worker_id"])]
    rejected = pd.DataFrame(
        {
            "assignment_id": failing["assignment_id"],
            "worker_id": failing["worker_id"],
            "reason": rules.check_feedback,
        },
        columns=["assignment_id", "worker_id", "reason"],
    ).reset_index(drop=True)
    return WorkerDecisions(flags, rejected)
