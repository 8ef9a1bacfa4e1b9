"""Moved: the web crowd's records are :mod:`crowdprefs.crowds.web.records`."""

from crowdprefs.moved import moved_names

MOVED = dict.fromkeys(
    (
        "Outcome", "Chooser", "WebJudge", "WebScreen", "WebAssignment", "HandOut", "WebQuestion",
        "WebSession", "Posted",
    ),
    "crowdprefs.crowds.web.records",
)  # fmt: skip
__getattr__ = moved_names(__name__, MOVED)
