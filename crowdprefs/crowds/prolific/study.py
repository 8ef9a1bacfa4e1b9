"""The Prolific study's terms: its settings (``[prolific]``), what the judges' site tells it,
Prolific's fixed values, and the pure rules the crowd applies (places, time and reward per
place, who is not public, the share who left, review decisions and bonuses), each a small
function of plain values; the adapter that calls Prolific is
:class:`~crowdprefs.crowds.prolific.crowd.ProlificCrowd`."""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd

from crowdprefs.campaign.settings import check_values
from crowdprefs.crowds.prolific.store import (
    STUDY_PROGRESS,
    STUDY_STATUS,
    SUBMISSION_STATUS,
)
from crowdprefs.errors import InputError

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project

MIN_HOURLY = {"GBP": 600, "USD": 800}
"""Prolific's minimum reward per hour in pence / cents (£6.00 / $8.00; its payment principles)."""
COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc={code}"
"""Where a participant goes when done (``{code}``: the study's completion code)."""
URL_PARAMETERS = "&STUDY_ID={{%STUDY_ID%}}&SESSION_ID={{%SESSION_ID%}}"
"""What the study link adds for Prolific (the participant's id is already on the link)."""
REJECTION_CATEGORIES = (
    "TOO_QUICKLY",
    "TOO_SLOWLY",
    "FAILED_INSTRUCTIONS",
    "INCOMP_LONGITUDINAL",
    "FAILED_CHECK",
    "LOW_EFFORT",
    "MALINGERING",
    "NO_CODE",
    "BAD_CODE",
    "NO_DATA",
    "UNSUPP_DEVICE",
    "OTHER",
)
"""Prolific's rejection categories."""
CATEGORY_OF_RULE = {
    "bot": "LOW_EFFORT",
    "failed_checks": "FAILED_CHECK",
    "listed": "OTHER",
    "extra": "LOW_EFFORT",
}
"""The rejection category of each review rule (:data:`crowdprefs.quality.workers.RULES`)."""
REJECTION_NOTE = (
    "Your answers were checked with the quality rules of this listening study, the same for "
    "every participant. If you think this is a mistake, please write to us through Prolific."
)
NO_ANSWERS = "no answer of yours reached our server"
TAKING_PART = ("RESERVED", "ACTIVE")
RETURNED = ("RETURNED", "TIMED-OUT")
HIGH_RETURN_RATE = 0.3
"""Above this share of participants returning the study or timing out, :meth:`ProlificCrowd.status`
says so in the log (the study may take longer than it says, or the site may not work for some)."""
HOOK_PATH = "/prolific/events"
"""Where the server takes Prolific's events (:mod:`crowdprefs.web.prolific_events`)."""
HOOK_EVENTS = (STUDY_STATUS, STUDY_PROGRESS, SUBMISSION_STATUS)
"""The events the server subscribes to."""
PARTICIPANT_ID = re.compile(r"^[A-Za-z0-9]{1,64}$")


@dataclass(frozen=True)
class ProlificSettings:
    """The ``[prolific]`` section."""

    reward_per_hour: float = 9.0
    """Reward per hour of estimated time, in pounds or dollars (Prolific recommends £9 / $12;
    below £6 / $8 is refused)."""
    currency: str = "GBP"
    """The currency of the Prolific workspace: GBP or USD."""
    seconds_per_question: float = 10.0
    """Time to answer one question besides hearing its clips once."""
    setup_minutes: float = 2.0
    """Time for the instructions and the headphone check."""
    fee_rate: float = 0.5
    """Prolific's service fee as a share of rewards and bonuses, counted against the budget (an
    upper bound: set your workspace's rate, VAT included where it applies)."""
    name: str = ""
    """The study's public title (default: ``[hit] title``)."""
    description: str = ""
    """The study's public description (default: ``[hit] description``)."""
    devices: list[str] = field(default_factory=lambda: ["desktop"])
    """Devices participants may use: desktop, tablet, mobile."""
    allowlist: list[str] = field(default_factory=list)
    """Only these participants may take the study (frozen once published)."""
    blocklist: list[str] = field(default_factory=list)
    """These participants may not (frozen once published)."""

    def __post_init__(self) -> None:
        check_values("prolific", self)
        least = MIN_HOURLY[self.currency] / 100
        if self.reward_per_hour < least:
            raise InputError(
                f"[prolific] reward_per_hour {self.reward_per_hour:.2f} {self.currency} is below "
                f"Prolific's minimum of {least:.2f} {self.currency} per hour"
            )
        if not self.devices or not set(self.devices) <= {"desktop", "tablet", "mobile"}:
            raise InputError(
                f"[prolific] devices must be desktop, tablet or mobile: {self.devices}"
            )
        for name in ("allowlist", "blocklist"):
            bad = [p for p in getattr(self, name) if not PARTICIPANT_ID.match(str(p))]
            if bad:
                raise InputError(f"[prolific] {name}: {bad[0]!r} is not a Prolific participant id")

    @classmethod
    def from_project(cls, project: Project) -> ProlificSettings:
        section = project.section("prolific")
        unknown = set(section) - {f.name for f in fields(cls)}
        if unknown:
            raise InputError(f"unknown [prolific] setting(s): {', '.join(sorted(unknown))}")
        return cls(**section)


@dataclass(frozen=True)
class StudyTerms:
    """What the judges' site tells the study (from ``[web]``, see
    :func:`crowdprefs.web.assign.study_terms`): ``make_link()`` makes a new study link carrying
    the participant's id as ``{{%PROLIFIC_PID%}}`` (the previous link stops working), the
    ``questions`` one participant answers (and at most ``per_batch`` of one batch; 0: no cap),
    the ``completion_code`` and the ``completion_url`` the done page sends participants to."""

    make_link: Callable[[], str]
    questions: int
    completion_code: str
    completion_url: str
    per_batch: int = 0

    def check(self) -> None:
        """Refuse terms Prolific cannot work with, in one line naming the setting."""
        if self.questions < 1:
            raise InputError(
                "set [web] questions_per_judge: the questions one Prolific participant answers "
                "for the study's reward"
            )
        if not re.fullmatch(r"[A-Za-z0-9]{4,32}", self.completion_code):
            raise InputError(
                "set [web] completion_code to the study's code (4–32 letters and digits): "
                "Prolific checks one code for every participant"
            )
        if self.completion_url != COMPLETE_URL:
            raise InputError(f'set [web] completion_url = "{COMPLETE_URL}" (Prolific\'s address)')


# --- pure rules -----------------------------------------------------------------------------


def estimated_minutes(
    listen_seconds: np.ndarray, questions: int, seconds_per_question: float, setup_minutes: float
) -> int:
    """Whole minutes one participant needs: ``questions`` questions of the batch's mean
    ``listen_seconds`` (its three clips heard once) plus ``seconds_per_question`` each, and
    ``setup_minutes``; at least 1."""
    seconds = np.asarray(listen_seconds, dtype=float)
    if seconds.size == 0 or np.isnan(seconds).any():
        raise InputError("the durations of some clips are unknown: prepare the audio first")
    total = setup_minutes * 60 + questions * (seconds.mean() + seconds_per_question)
    return max(1, math.ceil(total / 60 - 1e-9))


def reward_per_place(per_hour: float, minutes: int) -> int:
    """The reward of one place in minor units: ``per_hour`` (major units) for ``minutes``,
    rounded up so the rate never falls below ``per_hour``."""
    return math.ceil(round(per_hour * 100) * minutes / 60 - 1e-9)


def places_wanted(total: int, taken: int, active: int, missing: int, questions: int) -> int:
    """The study's places for ``missing`` answers still wanted: the ``taken`` ones plus the
    participants still needed (``⌈missing / questions⌉`` less the ``active`` ones taking part
    now, each bringing up to ``questions`` answers); never fewer than ``total``."""
    needed = max(0, math.ceil(missing / questions) - active) if missing > 0 else 0
    return max(total, taken + needed)


def not_public(url: str) -> str:
    """Why Prolific cannot post events to ``url`` (it calls public https addresses only), or
    ``""`` when it can."""
    split = urlsplit(url)
    host = (split.hostname or "").lower()
    if split.scheme != "https":
        return "is not https"
    if not host or "." not in host or host.endswith((".localhost", ".local", ".internal")):
        return "is not a public address"
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return ""
    return "" if address.is_global else "is not a public address"


def return_rate(counts: dict[str, int]) -> float:
    """The share of the study's submissions (participants who started) returned or timed out."""
    started = sum(counts.values())
    return sum(counts.get(s, 0) for s in RETURNED) / started if started else 0.0


def event_returns(events: pd.DataFrame) -> dict[str, Any] | None:
    """What the events received say of the study's participants (``events``:
    :meth:`~crowdprefs.campaign.store.Store.prolific_events`): ``started``, ``returned`` (the
    last status of a submission RETURNED or TIMED-OUT), their ``rate`` and whether it is
    ``high``; ``None`` before any submission event."""
    submissions = events[events["event_type"] == SUBMISSION_STATUS]
    if submissions.empty:
        return None
    last = submissions.drop_duplicates("resource_id", keep="last")["status"]
    counts = last.value_counts().to_dict()
    rate = return_rate(counts)
    returned = sum(counts.get(s, 0) for s in RETURNED)
    return {
        "started": len(last),
        "returned": returned,
        "rate": rate,
        "high": rate > HIGH_RETURN_RATE,
    }


def submission_decisions(
    submissions: pd.DataFrame, judges: pd.DataFrame, answered: pd.Series, flags: pd.DataFrame
) -> pd.DataFrame:
    """A decision per submission awaiting review (``submission_id, study_id,
    participant_id``): rejected with ``NO_DATA`` when its participant answered nothing
    (``answered``: answers per judge id; ``judges``: ``judge_id, participant``), rejected with the
    category of the review rule that flagged them (``flags``: ``worker_id, reason, rule``), else
    approved. Rejection messages are at least 100 characters, as Prolific asks."""
    frame = submissions.merge(
        judges.rename(columns={"participant": "participant_id"}), on="participant_id", how="left"
    )
    count = frame["judge_id"].map(answered).fillna(0).astype(int)
    flagged = flags.set_index("worker_id")
    reason = frame["judge_id"].map(flagged["reason"])
    rule = frame["judge_id"].map(flagged["rule"])
    empty = (count == 0).to_numpy()
    reject = empty | reason.notna().to_numpy()
    frame["decision"] = np.where(reject, "reject", "approve")
    frame["category"] = [
        "NO_DATA" if e else CATEGORY_OF_RULE[r] if x else None
        for e, x, r in zip(empty, reject, rule, strict=True)
    ]
    why = [NO_ANSWERS if e else w for e, w in zip(empty, reason, strict=True)]
    frame["message"] = [
        f"We could not accept this submission: {w}. {REJECTION_NOTE}" if x else None
        for x, w in zip(reject, why, strict=True)
    ]
    return frame[
        [
            "submission_id",
            "study_id",
            "participant_id",
            "judge_id",
            "decision",
            "category",
            "message",
        ]
    ]


def bonus_lines(
    per_answer: int, answered: pd.Series, given: dict[str, int]
) -> list[tuple[str, int]]:
    """``(participant_id, amount)`` still owed: ``per_answer`` (minor units) for each accepted
    answer (``answered``: by participant id), less the bonuses already ``given``."""
    owed = answered.astype(int) * per_answer - answered.index.map(lambda p: given.get(p, 0))
    return [(str(p), int(a)) for p, a in owed.items() if a > 0]
