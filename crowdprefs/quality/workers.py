"""The review rules per worker, with the rule that decided: for crowds that accept or reject a
worker's whole submission at once (a study platform pays per participant, not per answer).

A thin layer over :mod:`crowdprefs.quality.review`, whose rules it applies unchanged:
:func:`~crowdprefs.quality.review.review_flags` decides who is flagged, with the first reason
and the rule behind it, and
single answers failing an attention check (:func:`~crowdprefs.quality.review.failed_checks`)
are rejected on their own when ``[review] reject_failed_checks``.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from crowdprefs.campaign.aggregate import AggregationRule
from crowdprefs.quality.review import ReviewRules, failed_checks, review_flags

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
    answers: pd.DataFrame,
    rules: ReviewRules,
    extra: pd.DataFrame | None = None,
    verdicts: pd.DataFrame | AggregationRule | None = None,
) -> WorkerDecisions:
    """The review rules applied to an answers frame
    (:func:`crowdprefs.quality.frames.project_answers`), with the rule behind each flag;
    agreement is judged against ``verdicts`` (default: the Mann-Whitney rule's)."""
    verdicts = AggregationRule() if verdicts is None else verdicts
    flags = review_flags(answers, verdicts, rules, extra)
    flags["rule"] = flags["rule"].replace({"failed-checks": "failed_checks"})
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
