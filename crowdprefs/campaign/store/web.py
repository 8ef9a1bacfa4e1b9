"""Moved: the web crowd's store role is :mod:`crowdprefs.crowds.web.store`, beside its adapter."""

from crowdprefs.moved import moved_names

MOVED = dict.fromkeys(
    (
        "CAMPAIGN_KEY", "SITE_KEYS", "STUDY_KEY", "Chooser", "HandOut", "Outcome", "Posted",
        "WebAssignment", "WebJudge", "WebQuestion", "WebScreen", "WebSession", "WebStore",
        "release_participants",
    ),
    "crowdprefs.crowds.web.store",
)  # fmt: skip
__getattr__ = moved_names(__name__, MOVED)
