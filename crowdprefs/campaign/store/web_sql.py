"""Moved: the web crowd's statements are :mod:`crowdprefs.crowds.web.sql`."""

from crowdprefs.moved import moved_names

MOVED = dict.fromkeys(
    (
        "WEB", "blocked", "open_at", "answered_query", "Statements", "SQL", "assignment",
        "session_statement", "answered", "release_participants", "standing_statement",
        "fill_statement", "release", "judge_standing", "closed", "settled", "issue", "missing",
        "batch_complete", "store_answer", "reject_web_answers",
    ),
    "crowdprefs.crowds.web.sql",
)  # fmt: skip
__getattr__ = moved_names(__name__, MOVED)
