"""Moved: the Prolific study's store role is :mod:`crowdprefs.crowds.prolific.store`, beside its
adapter."""

from crowdprefs.moved import moved_names

MOVED = dict.fromkeys(
    (
        "ProlificStudy", "LEFT", "STUDY_STATUS", "STUDY_PROGRESS", "SUBMISSION_STATUS",
        "ProlificEvent", "EventOutcome", "EventResult", "ProlificStore",
    ),
    "crowdprefs.crowds.prolific.store",
)  # fmt: skip
__getattr__ = moved_names(__name__, MOVED)
