"""Prolific as a crowd: a study recruits participants for the project's own web server.

Participants take the study once each; the study's link opens the judges' site (``crowdprefs
serve``) with ``{{%PROLIFIC_PID%}}``, ``{{%STUDY_ID%}}`` and ``{{%SESSION_ID%}}`` filled in by
Prolific, they answer ``[web] questions_per_judge`` questions there (after the headphone check),
and the done page sends them back to ``https://app.prolific.com/submissions/complete?cc=CODE``
with the study's completion code. Their answers are web answers (crowd ``web``): this crowd
records its pairs as the web crowd's, so the server hands them out and moves the campaign on.

What the study is given, from the project:

- **places**: the participants still needed for the open batch, ``⌈answers still wanted /
  questions per participant⌉`` less those taking part now, on top of the places already taken
  (:func:`places_wanted`); places only ever go up, as Prolific allows once a study is
  published;
- **estimated time**: the questions one participant answers, each the seconds of its three clips
  plus ``[prolific] seconds_per_question``, plus ``setup_minutes`` for the instructions and the
  headphone check (:func:`estimated_minutes`);
- **reward** per place: ``[prolific] reward_per_hour`` for that time, in pence or cents
  (:func:`reward_per_place`); a rate below Prolific's minimum (£6.00 / $8.00 an hour) is refused;
- the allow and block lists (``[prolific] allowlist`` / ``blocklist``, and participants blocked by
  earlier reviews), which Prolific freezes once the study is published.

Places follow the campaign by themselves: publishing a batch to this crowd gives the study the
places the batch needs, and collecting (more answers wanted by adaptive rounds) or reviewing
(rejected answers offered again) raises them to what the open batch still wants
(:meth:`ProlificCrowd.keep_up`); the judges' server does both as it moves the campaign on.
Prolific moves a study to ``AWAITING REVIEW`` when its places are briefly all taken (between two
batches); adding places is how it becomes active again (a ``START`` is only for a study the
researcher paused, which is left paused). Spending is checked against ``[crowd] budget``
(in the study's currency) before publishing, adding places or paying bonuses, with ``[prolific]
fee_rate`` for Prolific's service fee. Reviews apply decisions made by the project's review rules
(:mod:`crowdprefs.quality.workers`) to whole submissions; each decision is stored before it is
sent.

A participant who returns the study, or times out (or is rejected before finishing), gives
their questions back at once: Prolific's event says so to the server
(:mod:`crowdprefs.web.prolific_events`, subscribed by :meth:`ProlificCrowd.subscribe`), and
every poll of the study's submissions (:meth:`ProlificCrowd.plan`, :meth:`ProlificCrowd.status`)
catches an event that was lost. The share of participants who left is in
:meth:`ProlificCrowd.status`, with a log line above :data:`HIGH_RETURN_RATE`.
"""

from __future__ import annotations

import ipaddress
import logging
import math
import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np
import pandas as pd

from crowdprefs.campaign.project_state import project_budget, remember_budget
from crowdprefs.campaign.settings import check_values
from crowdprefs.campaign.store.prolific import (
    LEFT,
    STUDY_PROGRESS,
    STUDY_STATUS,
    SUBMISSION_STATUS,
    ProlificStudy,
)
from crowdprefs.clock import now
from crowdprefs.crowds.prolific.client import (
    WORKSPACE_ENV,
    ProlificClient,
    token_from_environment,
)
from crowdprefs.crowds.web import WebCrowd
from crowdprefs.errors import BudgetError, CrowdError, InputError, StateError
from crowdprefs.hits.render import HitSettings
from crowdprefs.progress import note

if TYPE_CHECKING:
    from crowdprefs.campaign.budget import FeeModel
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

log = logging.getLogger("crowdprefs.prolific")


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


# --- the crowd ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopUp:
    """A study's places: ``before`` (0 while a draft) and ``places`` wanted, the ``cost`` of
    the difference with fees (minor units), and the study's Prolific ``status``."""

    study: ProlificStudy
    status: str
    before: int
    places: int
    cost: float


class ProlificCrowd:
    """Prolific recruiting for the web crowd: a :class:`~crowdprefs.campaign.crowd.Crowd`
    (pairs are published to the web crowd and the study gets the places they need) and the
    study's calls (create, top up, status, review, bonuses)."""

    #: Answers arrive through the web crowd's server, so pairs and answers are the web crowd's.
    name = "web"
    extension_barrier = None

    def __init__(
        self,
        project: Project,
        client: ProlificClient,
        terms: StudyTerms,
        settings: ProlificSettings | None = None,
    ) -> None:
        self.client = client
        self.terms = terms
        self.settings = settings or ProlificSettings.from_project(project)
        self.web = WebCrowd()

    @classmethod
    def for_crowd(
        cls, name: str, project: Project, *, study_terms: StudyTerms | None = None
    ) -> ProlificCrowd:
        """The crowd of the registry (:data:`crowdprefs.crowds.REGISTRY`): :meth:`for_project`
        with the ``study_terms`` of the judges' site, which the caller computes."""
        if study_terms is None:
            raise InputError(
                "the prolific crowd needs the study terms of the judges' site "
                "(crowdprefs.web.assign.study_terms(project))"
            )
        return cls.for_project(project, study_terms)

    @classmethod
    def for_project(cls, project: Project, terms: StudyTerms) -> ProlificCrowd:
        """The crowd on Prolific's API with the token from ``PROLIFIC_TOKEN``; ``terms`` come
        from the judges' site (:func:`crowdprefs.web.assign.study_terms`), which the caller
        asks: an adapter does not reach up into the server."""
        return cls(project, ProlificClient(token_from_environment()), terms)

    # --- the Crowd port ---------------------------------------------------------------------

    def fees(self, project: Project) -> FeeModel:
        """The fee model of the pairs' HITs: the web crowd's, which holds them (Prolific's own
        service fee, ``[prolific] fee_rate``, is charged on the study's places)."""
        return self.web.fees(project)

    def publish(self, project: Project, pairs: pd.DataFrame) -> int:
        """Give the study the places the open batch needs, then offer ``pairs`` on the web
        crowd (so a refused study leaves them unpublished, to be published again)."""
        self.top_up(project)
        self.web.publish(project, pairs)
        return len(pairs)

    def collect(self, project: Project, pairs: pd.DataFrame) -> int:
        """The answers the pairs hold (the web crowd's), then the study's places raised to
        what the open batch still wants (:meth:`keep_up`: adaptive rounds want more)."""
        held = self.web.collect(project, pairs)
        self.keep_up(project)
        return held

    # --- the study --------------------------------------------------------------------------

    def _open_batch(self, project: Project) -> tuple[int, int, int] | None:
        """``(iteration, missing answers, pairs)`` of the web crowd's open batch, if any."""
        progress = project.store.web_batch_progress()
        if progress["status"] not in ("built", "published") or progress["crowd"] not in (
            None,
            self.name,
        ):
            return None
        missing = int(progress["answers_wanted"]) - int(progress["answers"])
        return int(progress["iteration"]), missing, int(progress["pairs"])

    @staticmethod
    def _listen_seconds(project: Project, iteration: int) -> np.ndarray:
        """Seconds to hear each pair of the batch once (its three clips; NaN while unknown)."""
        ids = project.store.pairs(iteration)["pair_id"]
        return project.store.clip_seconds(ids).sum(axis=1, min_count=3).to_numpy()

    def _questions(self, pairs: int) -> int:
        """Questions one participant answers in a batch of ``pairs`` pairs."""
        cap = min(self.terms.questions, pairs)
        return min(cap, self.terms.per_batch) if self.terms.per_batch else cap

    def quote(self, project: Project) -> tuple[int, int]:
        """``(minutes, reward per place)`` of the open batch's participants."""
        batch = self._open_batch(project)
        if batch is None:
            raise StateError("no batch of the web crowd is open: build the next batch first")
        iteration, _, pairs = batch
        s = self.settings
        minutes = estimated_minutes(
            self._listen_seconds(project, iteration),
            self._questions(pairs),
            s.seconds_per_question,
            s.setup_minutes,
        )
        return minutes, reward_per_place(s.reward_per_hour, minutes)

    def _filters(self, project: Project) -> list[dict]:
        blocked = project.store.blocked_participants()
        lists = {
            "custom_allowlist": sorted(set(self.settings.allowlist)),
            "custom_blocklist": sorted(set(self.settings.blocklist) | set(blocked)),
        }
        return [{"filter_id": k, "selected_values": v} for k, v in lists.items() if v]

    def create(self, project: Project) -> ProlificStudy:
        """A new draft study for the open batch (nothing is spent until it is published)."""
        self.terms.check()
        minutes, reward = self.quote(project)
        hit = HitSettings.from_project(project)
        questions = self._questions(self._open_batch(project)[2])
        body = {
            "name": self.settings.name or hit.title,
            "internal_name": f"crowdprefs {project.root.name}",
            "description": self.settings.description or hit.description,
            "external_study_url": self.terms.make_link() + URL_PARAMETERS,
            "prolific_id_option": "url_parameters",
            "completion_codes": [
                {
                    "code": self.terms.completion_code,
                    "code_type": "COMPLETED",
                    "actions": [{"action": "MANUALLY_REVIEW"}],
                }
            ],
            "total_available_places": 1,
            "estimated_completion_time": minutes,
            "reward": reward,
            "device_compatibility": list(self.settings.devices),
            "peripheral_requirements": ["audio"],
            "filters": self._filters(project),
            "submissions_config": {"max_submissions_per_participant": 1},
        }
        remote = self.client.create_study(body)
        if remote.get("currency_code", self.settings.currency) != self.settings.currency:
            raise InputError(
                f"the Prolific workspace pays in {remote['currency_code']} but [prolific] "
                f"currency is {self.settings.currency}: set it to {remote['currency_code']} "
                f"(draft study {remote['id']} was left unpublished)"
            )
        study = ProlificStudy(
            study_id=remote["id"],
            created_at=now(),
            reward=reward,
            currency=self.settings.currency,
            minutes=minutes,
            questions=questions,
            fee_rate=self.settings.fee_rate,
            completion_code=self.terms.completion_code,
            places=int(remote["total_available_places"]),
            status=remote["status"],
        )
        project.store.add_prolific_study(study)
        return study

    def _check_frozen(self, study: ProlificStudy, remote: dict) -> None:
        """Refuse allow/block lists changed in ``[prolific]`` after the study was published."""
        if remote["status"] == "UNPUBLISHED":
            return
        lists = {f["filter_id"]: set(f["selected_values"]) for f in remote.get("filters", [])}
        if set(self.settings.allowlist) != lists.get("custom_allowlist", set()) or not set(
            self.settings.blocklist
        ) <= lists.get("custom_blocklist", set()):
            raise InputError(
                f"[prolific] allowlist or blocklist differs from study {study.study_id}'s, which "
                "Prolific froze when it was published: restore them as they were"
            )

    def _check_budget(self, project: Project, cost: float, what: str) -> None:
        """``cost`` (minor units, fee included) on top of what is committed, against
        ``[crowd] budget`` (major units of the study's currency)."""
        budget = project_budget(project)
        committed = project.store.prolific_committed()
        if budget is not None and committed + cost > budget * 100 + 1e-6:
            c = self.settings.currency
            raise BudgetError(
                f"{what} costs {cost / 100:.2f} {c} with fees; with {committed / 100:.2f} {c} "
                f"committed it would cross the budget of {budget:.2f} {c} "
                "(raise [crowd] budget in crowdprefs.toml)"
            )
        remember_budget(project)

    def plan(self, project: Project) -> TopUp:
        """What :meth:`apply` would do for the open batch (nothing is spent): the study (a new
        draft when there is none), its places now and the places wanted, and what the new
        places cost with fees."""
        self.terms.check()
        study = project.store.prolific_study()
        if study is None or study.status == "COMPLETED":
            study = self.create(project)
        remote = self.client.study(study.study_id)
        if remote["status"] == "COMPLETED":
            raise StateError(f"study {study.study_id} was stopped on Prolific")
        self._check_frozen(study, remote)
        published = remote["status"] != "UNPUBLISHED"
        before = int(remote["total_available_places"]) if published else 0
        wanted = before
        batch = self._open_batch(project)
        if batch is not None:
            iteration, missing, _ = batch
            submissions = list(self.client.submissions(study.study_id))
            self._reclaim(project, study, submissions)
            active = self._answering(project, submissions, iteration)
            taken = int(remote.get("places_taken", 0))
            wanted = places_wanted(before, taken, active, missing, study.questions)
            minutes, _ = self.quote(project)
            if minutes > study.minutes:
                note(
                    f"batch {iteration} takes about {minutes} min per participant but study "
                    f"{study.study_id} pays for {study.minutes}: consider a bonus"
                )
        cost = (wanted - before) * study.reward * (1 + study.fee_rate)
        return TopUp(study, remote["status"], before, wanted, cost)

    @staticmethod
    def _reclaim(project: Project, study: ProlificStudy, submissions: Iterable[dict]) -> int:
        """The poll's reconciliation: participants Prolific shows as gone (returned, timed out,
        rejected) give back the questions they still hold, should their event have been lost
        (or arrived while the server was down)."""
        gone = [s["participant_id"] for s in submissions if s["status"] in LEFT]
        released = project.store.reclaim_prolific_places(gone) if gone else 0
        if released:
            note(
                f"study {study.study_id}: {released} questions held by participants who left "
                "went back to the pool"
            )
        return released

    def _answering(self, project: Project, submissions: Iterable[dict], iteration: int) -> int:
        """Participants taking part now who may still answer in batch ``iteration``: those
        whose judge has answered fewer than the questions one participant answers, and fewer
        than ``per_batch`` of this batch (one who reached either is only on the way back to
        Prolific, or waits for the next batch)."""
        taking = {s["participant_id"] for s in submissions if s["status"] in TAKING_PART}
        judges = project.store.web_participants(iteration)
        judges = judges[judges["participant"].isin(taking)]
        done = judges["answered"] >= self.terms.questions
        if self.terms.per_batch:
            done |= judges["answered_in"] >= self.terms.per_batch
        return len(taking) - int(done.sum())

    def apply(self, project: Project, plan: TopUp) -> TopUp:
        """Publish the draft with the planned places, or add places to the published study
        (never fewer), after checking the budget; returns the plan with the study's new
        status."""
        study, wanted = plan.study, plan.places
        if wanted <= plan.before:
            return plan
        what = "publishing" if plan.status == "UNPUBLISHED" else "adding"
        self._check_budget(project, plan.cost, f"{what} {wanted - plan.before} places")
        if plan.status == "UNPUBLISHED":
            self.client.update_study(study.study_id, {"total_available_places": wanted})
            remote = self._publish(study.study_id)
            project.store.update_prolific_study(
                study.study_id, places=wanted, status=remote["status"], published_at=now()
            )
        else:
            remote = self.client.update_study(study.study_id, {"total_available_places": wanted})
            project.store.update_prolific_study(
                study.study_id, places=wanted, status=remote["status"]
            )
            if remote["status"] == "PAUSED":
                note(f"study {study.study_id} is paused on Prolific: start it there to recruit")
        return TopUp(study, remote["status"], plan.before, wanted, plan.cost)

    def top_up(self, project: Project) -> TopUp:
        """Give the study the places the open batch still needs (:meth:`plan`, then
        :meth:`apply`)."""
        return self.apply(project, self.plan(project))

    def keep_up(self, project: Project) -> TopUp | None:
        """Raise the published study's places to what the open batch still wants (more answers
        wanted, rejected answers offered again), with a note when places are added; nothing
        while the project has no published study (``publish`` makes one) or it was stopped."""
        study = project.store.prolific_study()
        if study is None or study.status in ("UNPUBLISHED", "COMPLETED"):
            return None
        done = self.top_up(project)
        if done.places > done.before:
            note(
                f"study {study.study_id}: {done.before} → {done.places} places for the answers "
                f"still wanted ({done.status.lower()})"
            )
        return done

    def _publish(self, study_id: str) -> dict:
        """Publish; a reply lost after Prolific published (the retry is refused) counts as
        published when the study says so."""
        try:
            return self.client.publish_study(study_id)
        except CrowdError:
            remote = self.client.study(study_id)
            if remote["status"] == "UNPUBLISHED":
                raise
            return remote

    def _study(self, project: Project) -> ProlificStudy:
        study = project.store.prolific_study()
        if study is None:
            raise StateError("the project has no Prolific study yet: publish it first")
        return study

    def status(self, project: Project) -> dict[str, Any]:
        """The study as Prolific reports it and what the open batch still needs, with the
        ``return_rate`` (returned and timed out over started; a log line above
        :data:`HIGH_RETURN_RATE`). A poll: questions still held by participants who left go
        back to the pool."""
        study = self._study(project)
        remote = self.client.study(study.study_id)
        listed = list(self.client.submissions(study.study_id))
        self._reclaim(project, study, listed)
        submissions = pd.DataFrame(listed)
        counts = submissions["status"].value_counts().to_dict() if len(submissions) else {}
        counts = {str(k): int(v) for k, v in counts.items()}
        rate = return_rate(counts)
        if rate > HIGH_RETURN_RATE:
            log.warning(
                "study %s: %d of %d participants returned it or timed out (%.0f%%, above %.0f%%)",
                study.study_id,
                sum(counts.get(s, 0) for s in RETURNED),
                sum(counts.values()),
                100 * rate,
                100 * HIGH_RETURN_RATE,
            )
        batch = self._open_batch(project)
        return {
            "study_id": study.study_id,
            "status": remote["status"],
            "places": int(remote["total_available_places"]),
            "places_taken": int(remote.get("places_taken", 0)),
            "reward": study.reward,
            "currency": study.currency,
            "minutes": study.minutes,
            "questions": study.questions,
            "submissions": counts,
            "return_rate": rate,
            "high_return_rate": rate > HIGH_RETURN_RATE,
            "batch": None if batch is None else batch[0],
            "answers_missing": 0 if batch is None else batch[1],
            "committed": project.store.prolific_committed() / 100,
        }

    # --- events and test runs ---------------------------------------------------------------

    def _workspace(self) -> str:
        """The workspace to subscribe in: :data:`~.client.WORKSPACE_ENV`, else the only one
        the token reaches."""
        chosen = os.environ.get(WORKSPACE_ENV, "").strip()
        if chosen:
            return chosen
        found = [str(w["id"]) for w in self.client.workspaces()]
        if len(found) != 1:
            raise InputError(
                f"the Prolific token reaches {len(found)} workspaces: set {WORKSPACE_ENV} to "
                "the study's"
            )
        return found[0]

    def subscribe(self, base_url: str) -> str:
        """Subscribe the server at ``base_url`` to the study's events (:data:`HOOK_EVENTS`, at
        :data:`HOOK_PATH`) where Prolific can reach it (public https), each once; one line
        saying what was done, or why nothing was (the server then relies on polling)."""
        target = base_url.rstrip("/") + HOOK_PATH
        why = not_public(base_url)
        if why:
            return (
                f"events: not subscribed, [web] base_url {base_url} {why} (Prolific posts to "
                "public https addresses only); the study is followed by polling"
            )
        workspace = self._workspace()
        held = {
            s["event_type"]
            for s in self.client.subscriptions(workspace)
            if s.get("target_url") == target and s.get("is_enabled")
        }
        added = [event for event in HOOK_EVENTS if event not in held]
        for event in added:
            self.client.subscribe(workspace, event, target)
        if not added:
            return f"events: {target} is subscribed"
        return f"events: subscribed {target} to {', '.join(added)}"

    def test_run(self, project: Project, testers: Iterable[str] = ()) -> dict[str, Any]:
        """A dry run in Prolific's test mode: the project's draft study (made if need be) is
        copied into a test study published to the workspace's test participants, the
        ``testers`` (emails Prolific does not know yet) added as test participants first;
        nothing is spent and the draft stays a draft. Refused, in Prolific's line, where the
        workspace does not have test studies. Returns ``draft``, ``study_id``, ``study_url``
        and the new ``testers``' participant ids."""
        self.terms.check()
        study = project.store.prolific_study()
        if study is None or study.status == "COMPLETED":
            study = self.create(project)
        remote = self.client.study(study.study_id)
        if remote["status"] != "UNPUBLISHED":
            raise StateError(
                f"study {study.study_id} is already {remote['status'].lower()}: a test run is "
                "made from a draft, before the study is published"
            )
        added = [self.client.add_test_participant(email) for email in testers]
        made = self.client.test_study(study.study_id)
        return {
            "draft": study.study_id,
            "study_id": str(made["study_id"]),
            "study_url": str(made.get("study_url") or ""),
            "testers": added,
        }

    # --- review and bonuses -----------------------------------------------------------------

    def answers(self, project: Project) -> pd.DataFrame:
        """The web crowd's answers (rejected ones included), as the review rules read them."""
        answers = project.store.answers(include_rejected=True)
        return answers[answers["crowd"] == self.name].reset_index(drop=True)

    def review(
        self, project: Project, flags: pd.DataFrame, rejected_answers: pd.DataFrame
    ) -> dict[str, int]:
        """Decide every submission awaiting review with the review rules' ``flags``
        (``worker_id, reason, rule``) and reject the single ``rejected_answers``
        (``assignment_id, reason``); store the decisions, apply them to the answers (a rejected
        participant's answers stop counting and their pairs are offered again), then send them
        to Prolific (rejections one by one, approvals in one call). Decisions stored earlier
        and not yet sent are sent first. The study then gets the places the answers offered
        again need (:meth:`keep_up`)."""
        study = self._study(project)
        decided = set(project.store.prolific_reviews()["submission_id"])
        awaiting = pd.DataFrame(
            [
                {
                    "submission_id": s["id"],
                    "study_id": study.study_id,
                    "participant_id": s["participant_id"],
                }
                for s in self.client.submissions(study.study_id)
                if s["status"] == "AWAITING REVIEW" and s["id"] not in decided
            ],
            columns=["submission_id", "study_id", "participant_id"],
        )
        judges = project.store.web_participants()
        answered = self.answers(project).groupby("worker_id").size()
        decisions = submission_decisions(awaiting, judges, answered, flags)
        stamp = now()
        if len(decisions):
            project.store.decide_prolific_reviews(decisions, stamp)
            rejected = decisions[decisions["decision"] == "reject"].dropna(subset=["judge_id"])
            approved = decisions.loc[decisions["decision"] == "approve", "judge_id"]
            mine = rejected_answers[rejected_answers["worker_id"].isin(approved)]
            project.store.decide_web_workers(
                list(zip(rejected["judge_id"], rejected["message"], strict=True)),
                approved.tolist(),
                stamp,
                list(zip(mine["assignment_id"], mine["reason"], strict=True)),
            )
        sent = self._send_reviews(project)
        self.keep_up(project)
        return sent

    def _send_reviews(self, project: Project) -> dict[str, int]:
        pending = project.store.pending_prolific_reviews()
        rejects = pending[pending["decision"] == "reject"]
        for submission, category, message in rejects[
            ["submission_id", "category", "message"]
        ].itertuples(index=False):
            self.client.reject(submission, message, category)
            project.store.applied_prolific_reviews([submission], now())
        approves = pending.loc[pending["decision"] == "approve", "submission_id"].tolist()
        if approves:
            self.client.approve(approves)
            project.store.applied_prolific_reviews(approves, now())
        return {"approved": len(approves), "rejected": len(rejects)}

    def bonus(self, project: Project, per_answer: float) -> dict[str, int]:
        """Pay each approved participant ``per_answer`` (major units) for every answer of theirs
        that counts, less what earlier bonuses gave them; bonuses set up before and not known
        to be paid are paid first. Returns ``participants`` and ``amount`` (minor units)."""
        study = self._study(project)
        unit = round(per_answer * 100)
        if unit < 1 or abs(per_answer * 100 - unit) > 1e-6:
            raise InputError(f"a bonus is a positive sum of whole pence or cents, got {per_answer}")
        for bonus_id in project.store.unpaid_prolific_bonuses()["bonus_id"]:
            self._pay(project, study.study_id, bonus_id)
        submissions = list(self.client.submissions(study.study_id))
        approved = {s["participant_id"] for s in submissions if s["status"] == "APPROVED"}
        judges = project.store.web_participants().set_index("judge_id")["participant"]
        answers = self.answers(project)
        usable = answers[answers["status"] != "rejected"]
        answered = usable.groupby(usable["worker_id"].map(judges)).size()
        answered = answered[answered.index.isin(approved)]
        lines = bonus_lines(unit, answered, project.store.prolific_bonus_totals())
        if not lines:
            return {"participants": 0, "amount": 0}
        amount = sum(a for _, a in lines)
        self._check_budget(
            project, amount * (1 + self.settings.fee_rate), f"a bonus of {amount / 100:.2f}"
        )
        bonus = self.client.set_up_bonuses(study.study_id, lines)
        project.store.add_prolific_bonus(
            bonus["id"], study.study_id, lines, self.settings.fee_rate, now()
        )
        self._pay(project, study.study_id, bonus["id"])
        return {"participants": len(lines), "amount": amount}

    def _pay(self, project: Project, study_id: str, bonus_id: str) -> None:
        """Pay a bonus set up before; a reply lost after Prolific paid (the retry is refused)
        counts as paid when every participant's bonuses show it."""
        try:
            self.client.pay_bonuses(bonus_id)
        except CrowdError:
            given = {
                s["participant_id"]: sum(s.get("bonus_payments") or [])
                for s in self.client.submissions(study_id)
            }
            paid = project.store.prolific_bonus_totals()  # this bonus included
            lines = project.store.prolific_bonus_lines(bonus_id)
            if not all(given.get(p, 0) >= paid.get(p, 0) for p in lines["participant_id"]):
                raise
        project.store.paid_prolific_bonus(bonus_id, now())
