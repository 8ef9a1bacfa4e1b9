"""Who answers what on the web crowd, and storing what they answer.

A judge is a person with a personal invitation token (``crowdprefs invite``) or a participant
of a study platform who arrived through the study link. Every question handed out is an
*assignment* (``web_assignments``): one pair for one judge, with a CSRF token and a deadline.

Rules (each applied by one method of the project's store in one transaction, so concurrent
judges cannot break them; :mod:`crowdprefs.crowds.web.store`):

- a pair is offered only while ``answers + open assignments < answers_wanted``, so every pair
  gets exactly its configured number of answers, from distinct judges;
- a judge never gets the same pair twice (``UNIQUE (pair_id, judge_id)``), not even after
  abandoning it;
- an open assignment older than the timeout is *released*: its slot goes back to the pool;
  a late answer to it is still taken if the pair has room, otherwise refused;
- among the pairs with room the judge gets one of the least-answered, ties broken by a
  per-judge hash, so concurrent judges spread over the batch instead of racing for one pair;
- an answer is validated and stored in ``answers`` (crowd ``web``) the moment it is posted,
  with the server-measured seconds from hand-out to submission (the preference-judgments paper §5.1
  notes that MTurk's time counts from accepting the HIT; this is the same measure). Posting the same
  assignment again changes nothing;
- the page's listening gate is checked again on the server from its play log, by the page's own
  rule: every clip played to its end and heard for (nearly) its duration, covered by the merged
  intervals heard (the stored log keeps the coverage the server found), and nothing claimed
  beyond the seconds since the hand-out (:func:`check_listening`); of what a post carries, only
  the answer and the play log are kept, and a field sent twice refuses the post
  (:func:`form_fields`).

Quality control in the style of ITU-T Rec. P.808 (crowdsourced listening tests), each a
``[web]`` setting with a default:

- a headphone screen before a judge's first question (``headphone_screen``: study-platform
  participants by default; the Huggins-pitch test of :mod:`crowdprefs.web.headphones`, passed
  with ``headphone_pass`` of ``headphone_trials`` right, once: a failed screen is final);
- per-judge caps: ``questions_per_judge`` in all, ``questions_per_batch`` in one batch;
- each question shows its two variations in an order of its own (``randomise_sides``, from
  the assignment's random id), logged with the answer: the raw record keeps which candidate was
  A and B, the button pressed and the judge's question number; ``choice`` and ``score`` are
  stored on the pair's own sides, so counts and agreement read every answer alike.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from crowdprefs.campaign import answers
from crowdprefs.campaign.answers import CHOICES, LISTEN_LOG, PLAY_LOG, SPANS, TEXT_LIMITS
from crowdprefs.campaign.crowd import score_of
from crowdprefs.campaign.settings import check_values
from crowdprefs.crowds.prolific.study import StudyTerms
from crowdprefs.crowds.web.store import (
    HandOut,
    Posted,
    WebAssignment,
    WebJudge,
    WebQuestion,
    WebScreen,
)
from crowdprefs.errors import CrowdError, InputError
from crowdprefs.hits.render import HitSettings
from crowdprefs.rng import counter_uniform
from crowdprefs.web import headphones
from crowdprefs.web.clock import stamp, wall_clock
from crowdprefs.web.security import completion_code, judge_key, new_token, same, token_hash

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project

SCORES = dict(
    zip(
        [(c, a) for a in (1, 0) for c in CHOICES],
        score_of(pd.Series(CHOICES * 2), pd.Series([1, 1, 1, 0, 0, 0])),
        strict=True,
    )
)
"""``(choice, a_is_x) → score`` from :func:`~crowdprefs.campaign.crowd.score_of`."""
PARTICIPANT = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
CLIP_NAMES = {"query": "the original melody", "a": "variation A", "b": "variation B"}
LISTEN_SLACK = answers.PAGE_SLACK
"""Seconds of listening a clip may fall short on this server: the HIT page's own rule
(:data:`~crowdprefs.campaign.answers.PAGE_SLACK`), less than a stored answer's, since a judge
refused here can listen again and resend."""


class WebError(CrowdError):
    """A request the web crowd refuses; ``status`` is the HTTP status to answer with."""

    status = 400


class Forbidden(WebError):
    status = 403


class Gone(WebError):
    status = 409


class NotListened(WebError):
    """An answer whose page reports a clip not heard (played to its end, long enough)."""

    status = 422


class TooLarge(WebError):
    status = 413


class ScreenFirst(WebError):
    """The judge must pass the headphone screen before any question."""

    status = 403


class TooManyAttempts(WebError):
    """Too many failed token attempts from one address; ``retry_after`` in seconds."""

    status = 429

    def __init__(self, message: str, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _now(at: datetime | None) -> datetime:
    """``at``, else the wall clock's time (the server gives its own clock's, see
    :mod:`crowdprefs.web.clock`)."""
    return wall_clock() if at is None else at


@dataclass(frozen=True)
class WebSettings:
    """The ``[web]`` section of ``crowdprefs.toml``."""

    timeout_minutes: float = 20.0
    """An assignment not answered within this time is released to other judges."""
    questions_per_judge: int = 0
    """Questions one judge may answer (0: no limit); then the completion page is shown."""
    completion_code: str = ""
    """A study-wide completion code (study platforms); empty: one random code per judge."""
    completion_url: str = ""
    """Where a platform participant is sent when done; ``{code}`` is replaced by the code."""
    participant_param: str = "PROLIFIC_PID"
    """The query parameter of the study link that carries the participant id."""
    base_url: str = "http://127.0.0.1:8000"
    """The server's public address, used to print invitation links."""
    advance: bool = True
    """The server aggregates a completed batch and publishes the next one by itself."""
    max_text: int = 2000
    """Longest accepted background or comment, in characters."""
    questions_per_batch: int = 0
    """Questions one judge may answer in one batch (0: no limit)."""
    headphone_screen: str = "platform"
    """Who passes the headphone screen before their first question: ``platform`` (study-platform
    participants), ``all`` (invited judges too) or ``off``."""
    headphone_trials: int = 3
    """Trials of the headphone screen (three noises each)."""
    headphone_pass: int = 3
    """Trials a judge must get right to pass the screen (chance: 1 in 3 per trial)."""
    randomise_sides: bool = True
    """Each question shows the two variations in an order of its own (logged with the answer)."""
    trusted_proxies: tuple[str, ...] = ()
    """Addresses of the reverse proxies (HTTPS) in front of the server: only from these is the
    client's address taken from the forwarded headers (empty: the peer's address is the
    client's)."""
    max_in_flight: int = 64
    """Pages and answers one server process works on at once, and as many clip downloads apart;
    beyond, a judge gets a page asking to come back in a minute (503) instead of an ever longer
    wait."""

    def __post_init__(self) -> None:
        check_values("web", self)
        object.__setattr__(self, "trusted_proxies", tuple(self.trusted_proxies))
        if self.headphone_pass > self.headphone_trials:
            raise InputError(
                f"[web] headphone_pass ({self.headphone_pass}) must not exceed headphone_trials "
                f"({self.headphone_trials})"
            )

    @classmethod
    def from_project(cls, project: Project) -> WebSettings:
        return cls(**project.section("web"))  # checked against the schema at open


# --- judges ---------------------------------------------------------------------------------


MAX_JUDGES = 10_000
"""The most judges one ``invite`` makes: each is a row written under the project lock."""


def invite(project: Project, judges: int) -> list[tuple[str, str]]:
    """Create ``judges`` invited judges; returns ``(judge_id, token)`` (tokens are shown once)."""
    if judges < 1:
        raise InputError(f"the number of judges to invite must be at least 1, got {judges}")
    tokens = [new_token() for _ in range(judges)]
    ids = project.store.add_invited_judges(
        [(token_hash(t), completion_code()) for t in tokens], stamp(_now(None))
    )
    return list(zip(ids, tokens, strict=True))


def new_study_key(project: Project) -> str:
    """A new secret for the study-platform link (replaces the previous one)."""
    key = new_token()
    project.store.set_web_study_key_hash(token_hash(key))
    return key


@dataclass(frozen=True)
class Invitations:
    """New links: ``links`` (``judge_id, url``, one personal link each), ``study_link`` (the
    study-platform link with its participant placeholder, or ``None``), ``site``, the address
    they point to, and ``source``, where it came from (:func:`site_address`)."""

    links: pd.DataFrame
    study_link: str | None
    site: str
    source: str


SITE_SOURCES = ("given", "settings", "remembered", "served", "default")
"""Where the links' address comes from, first found first: ``--base-url`` now, ``[web]
base_url``, the ``--base-url`` of an earlier invitation, the address ``serve`` serves the site
at, the default (this machine, port 8000)."""


def site_address(project: Project, base_url: str | None = None) -> tuple[str, str]:
    """The site's public address for links, and where it came from (:data:`SITE_SOURCES`):
    ``base_url`` (checked), else ``[web] base_url`` when the project sets it, else the address
    remembered from an earlier ``invite --base-url``, else where ``crowdprefs serve`` serves
    the site, else the default."""
    settings = WebSettings.from_project(project)
    if base_url is not None:
        base, source = base_url, "given"
    elif settings.base_url != WebSettings.base_url:
        base, source = settings.base_url, "settings"
    elif (remembered := project.store.web_site("given")) is not None:
        base, source = remembered, "remembered"
    elif (served := project.store.web_site("served")) is not None:
        base, source = served, "served"
    else:
        base, source = settings.base_url, "default"
    base = base.rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise InputError(f"the site's address must start with http:// or https://: {base}")
    return base, source


def invitation_links(
    project: Project, judges: int, base_url: str | None = None, study: bool = False
) -> Invitations:
    """Invite ``judges`` judges (0: none) and, with ``study``, make a new study-platform link
    (the previous one stops working), on the site at ``base_url`` (remembered for the next
    invitations; default :func:`site_address`). The links hold the tokens, which the state
    keeps only as hashes: they are shown only now."""
    settings = WebSettings.from_project(project)
    base, source = site_address(project, base_url)
    if not 0 <= judges <= MAX_JUDGES or (judges == 0 and not study):
        raise InputError(
            f"the number of judges to invite must be at least 1 (or 0 with a study link) and at "
            f"most {MAX_JUDGES}, got {judges}"
        )
    if source == "given":
        project.store.set_web_site("given", base)
    created = invite(project, judges) if judges else []
    links = pd.DataFrame(
        [(judge, f"{base}/invite/{token}") for judge, token in created],
        columns=["judge_id", "url"],
    )
    if not study:
        return Invitations(links, None, base, source)
    param = settings.participant_param
    link = f"{base}/study/{new_study_key(project)}?{param}={{{{%{param}%}}}}"
    return Invitations(links, link, base, source)


def study_terms(project: Project) -> StudyTerms:
    """What the judges' site tells a Prolific study (``[web]``): a maker of new study links, the
    questions one participant answers (in all and per batch), the completion code and the
    address the done page sends participants to."""
    settings = WebSettings.from_project(project)
    return StudyTerms(
        make_link=lambda: invitation_links(project, 0, study=True).study_link,
        questions=settings.questions_per_judge,
        completion_code=settings.completion_code,
        completion_url=settings.completion_url,
        per_batch=settings.questions_per_batch,
    )


def join_study(
    project: Project, key: str, participant: str, at: datetime | None = None
) -> tuple[WebJudge, str]:
    """The judge of a study participant (created on first visit) and a fresh session token.

    Raises :class:`Forbidden` for a wrong study key and :class:`WebError` for a malformed
    participant id. A returning participant keeps their judge id and answers; their previous
    session token stops working.
    """
    expected = project.store.web_study_key_hash()
    if expected is None or not same(token_hash(key), expected):
        raise Forbidden("this study link is not valid")
    if not PARTICIPANT.match(participant or ""):
        raise WebError("the study link carries no valid participant id")
    token = new_token()
    judge = project.store.join_web_participant(
        participant, token_hash(token), completion_code(), stamp(_now(at))
    )
    return judge, token


# --- handing out questions -------------------------------------------------------------------


def choose_pair(pair_id: np.ndarray, filled: np.ndarray, wanted: np.ndarray, key: int) -> int:
    """Index of the pair to hand out: least filled among those with room, ties by a per-judge
    hash of the pair; ``-1`` when no pair has room."""
    room = filled < wanted
    if not room.any():
        return -1
    tie = counter_uniform(key, pair_id.astype(np.int64))
    order = np.lexsort((tie, filled))
    return int(order[room[order]][0])


def hand_out(judge: WebJudge, settings: WebSettings, at: datetime | None = None) -> HandOut:
    """What the judge's next assignment gets if one is handed out at ``at``: a random id and
    CSRF token, the deadline ``[web] timeout_minutes`` later, the judge's caps, and
    :func:`choose_pair` with the judge's own tie-breaking key."""
    at = _now(at)
    key = judge_key(judge.token_hash)
    return HandOut(
        assignment_id=secrets.token_urlsafe(12),
        csrf=new_token(),
        issued_at=stamp(at),
        expires_at=stamp(at + timedelta(minutes=settings.timeout_minutes)),
        limit=settings.questions_per_judge,
        batch_limit=settings.questions_per_batch,
        choose=lambda pair_id, filled, wanted: choose_pair(pair_id, filled, wanted, key),
    )


def next_assignment(
    project: Project, judge: WebJudge, settings: WebSettings, at: datetime | None = None
) -> WebAssignment | None:
    """The judge's open assignment, or a new one; ``None`` when nothing is left for them (a
    judge blocked on review gets no further question: the store checks it in the hand-out's
    transaction).

    Raises :class:`ScreenFirst` while the judge must still pass the headphone screen (a
    blocked judge is not sent to it)."""
    if needs_screen(judge, settings):
        screen = project.store.web_screen(judge.judge_id)
        if screen is None or not screen.passed:
            if judge.judge_id in project.store.blocked_workers("web"):
                return None
            raise ScreenFirst("take the headphone check before the first question")
    return project.store.issue_web_assignment(judge.judge_id, hand_out(judge, settings, at))


# --- the headphone screen --------------------------------------------------------------------


def needs_screen(judge: WebJudge, settings: WebSettings) -> bool:
    """Whether ``[web] headphone_screen`` asks this judge to pass the headphone screen."""
    return settings.headphone_screen == "all" or (
        settings.headphone_screen == "platform" and judge.source == "platform"
    )


def start_screen(
    project: Project, judge: WebJudge, settings: WebSettings, at: datetime | None = None
) -> WebScreen:
    """The judge's headphone screen: the one they started, else a new one with a secret seed
    and the trials and pass mark configured now."""
    return project.store.start_web_screen(
        judge.judge_id,
        seed=secrets.randbits(62),
        trials=settings.headphone_trials,
        pass_mark=settings.headphone_pass,
        csrf=new_token(),
        started_at=stamp(_now(at)),
    )


def screen_sound(screen: WebScreen, trial: int, index: int) -> bytes:
    """The WAV of sound ``index`` (1–3) of ``trial`` (1-based) of an unanswered screen;
    :class:`Gone` once it is answered, :class:`WebError` for a sound it does not have."""
    if screen.finished_at is not None:
        raise Gone("the headphone check is over")
    try:
        stereo = headphones.sound(screen.seed, screen.trials, trial - 1, index - 1)
    except IndexError:
        raise WebError("no such sound") from None
    return headphones.wav(stereo)


def answer_screen(
    project: Project,
    judge: WebJudge,
    csrf: str | None,
    form: Mapping[str, str],
    at: datetime | None = None,
) -> WebScreen:
    """Score the judge's answers to their screen (``trial_1`` … each ``1``–``3``) and record
    the outcome once; an answered screen is returned as it was (no second attempt)."""
    screen = project.store.web_screen(judge.judge_id)
    if screen is None:
        raise Forbidden("open the headphone check first")
    if not same(csrf, screen.csrf):
        raise Forbidden("the form's security token is missing or wrong; reload the page")
    if screen.finished_at is not None:
        return screen
    chosen = []
    for trial in range(1, screen.trials + 1):
        value = form.get(f"trial_{trial}", "")
        if value not in ("1", "2", "3"):
            raise WebError(f"choose one of the three noises of set {trial}")
        chosen.append(int(value) - 1)
    right = headphones.correct(chosen, screen.seed, screen.trials)
    return project.store.finish_web_screen(
        judge.judge_id,
        answers=json.dumps([c + 1 for c in chosen]),
        correct=right,
        passed=right >= screen.pass_mark,
        finished_at=stamp(_now(at)),
    )


# --- the order a question shows --------------------------------------------------------------


def shown_pair(pair: Mapping[str, Any], assignment_id: str, settings: WebSettings) -> dict:
    """``pair`` (a row of :meth:`~crowdprefs.campaign.store.Store.web_pair`) with ``a_is_x`` as
    this assignment shows it: with ``[web] randomise_sides`` a coin from the assignment's
    random id (the same on every reload), else the pair's own sides."""
    shown = dict(pair)
    if settings.randomise_sides:
        shown["a_is_x"] = hashlib.sha256(assignment_id.encode()).digest()[0] & 1
    return shown


def on_pair_sides(choice: str, shown_a_is_x: int, pair_a_is_x: int) -> str:
    """The choice made on a page showing the sides ``shown_a_is_x``, as the pair's own sides
    name it (A and B swap when the page showed them the other way round)."""
    if int(shown_a_is_x) == int(pair_a_is_x) or choice == "equal":
        return choice
    return "B" if choice == "A" else "A"


def question_of(project: Project, judge: WebJudge, assignment_id: str) -> WebQuestion:
    """The judge's own assignment with its pair; :class:`Forbidden` for anyone else's or an
    unknown id."""
    question = project.store.web_question(assignment_id)
    if question is None or question.assignment.judge_id != judge.judge_id:
        raise Forbidden("this question is not yours")
    return question


# --- answers ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    """A validated answer: the choice, the optional texts and the page's play log
    (:data:`PLAY_LOG`: plays and listening seconds per clip, seconds on the page; where the
    page sends them, :data:`~crowdprefs.campaign.answers.LISTEN_LOG` and the merged intervals
    heard, :data:`~crowdprefs.campaign.answers.SPANS`)."""

    choice: str
    background: str | None
    comment: str | None
    log: dict[str, Any]

    def raw(
        self, order: Mapping[str, Any], seconds: Mapping[str, float | None] | None = None
    ) -> str:
        """The answer's raw record: the play log (as the MTurk crowd keeps it, under
        ``fields``: :func:`~crowdprefs.campaign.answers.stored_log`, each clip's coverage as
        judged against its duration in ``seconds``, role → seconds) and the question's
        ``order`` (what the page showed as A and B, the button pressed, the judge's question
        number); nothing else a post may carry is kept."""
        fields = answers.stored_log(self.log, seconds or {})
        return json.dumps({"fields": fields, "order": dict(order)}, sort_keys=True)


def text_limits(settings: WebSettings) -> dict[str, int]:
    """The free texts' limits on this server: the HIT page's (:data:`TEXT_LIMITS`), lowered by
    ``[web] max_text`` where it is smaller."""
    return {name: min(limit, settings.max_text) for name, limit in TEXT_LIMITS.items()}


def form_fields(items: Iterable[tuple[str, Any]]) -> dict[str, str]:
    """The text fields of a posted form (``(name, value)`` in the order sent); :class:`WebError`
    naming a field sent more than once (the pages send each once: which one counts would be a
    guess)."""
    fields: dict[str, str] = {}
    for name, value in items:
        if name in fields:
            raise WebError(f"the form sends the field {name[:40]!r} twice; reload the page")
        if isinstance(value, str):
            fields[name] = value
    return fields


def validate_answer(form: Mapping[str, str], settings: WebSettings) -> Answer:
    """The answer in a posted form, by the field checks every crowd applies
    (:func:`crowdprefs.campaign.answers.check_fields`, with :func:`text_limits`);
    :class:`WebError` naming the first problem, so the judge fixes it and sends again (a crowd
    that stores answers rejects them instead). Fields other than the HIT's
    (:data:`~crowdprefs.hits.render.ANSWER_FIELDS`) are ignored; a missing play-log field
    counts as 0."""
    answer, problems = answers.check_fields(form, text_limits(settings))
    for problem in problems[:1]:
        if problem.kind == "choice":
            raise WebError("choose one of the three answers before submitting")
        if problem.kind == "text":
            raise WebError(f"the {problem.name} is longer than {problem.limit} characters")
        raise WebError(
            f"the page's play log is damaged ({problem.name} = {problem.sent!r}); reload it"
        )
    log: dict[str, Any] = {name: float(answer[name]) for name in PLAY_LOG}
    log.update({name: answer[name] for name in LISTEN_LOG + SPANS if answer[name] is not None})
    return Answer(answer["choice"], answer["background"], answer["comment"], log)


def clip_seconds(pair: Mapping[str, Any]) -> dict[str, float | None]:
    """The durations of the clips ``query``, ``a`` and ``b`` shown for ``pair`` (a row of
    :meth:`~crowdprefs.campaign.store.Store.web_pair`); ``None`` while unknown."""
    x, y = pair["x_seconds"], pair["y_seconds"]
    a_is_x = bool(int(pair["a_is_x"]))
    return {"query": pair["query_seconds"], "a": x if a_is_x else y, "b": y if a_is_x else x}


def clip_paths(pair: Mapping[str, Any]) -> dict[str, str | None]:
    """The stored clips (paths or URLs) of ``query``, ``a`` and ``b`` shown for ``pair`` (a
    question's pair as :meth:`~crowdprefs.campaign.store.Store.web_session` reads it, with
    ``query_audio, x_audio, y_audio``), as :func:`~crowdprefs.hits.render.pair_clips` finds
    them; ``None`` where unknown."""
    x, y = pair["x_audio"], pair["y_audio"]
    a_is_x = bool(int(pair["a_is_x"]))
    return {"query": pair["query_audio"], "a": x if a_is_x else y, "b": y if a_is_x else x}


def check_listening(
    log: Mapping[str, Any],
    seconds: Mapping[str, float | None],
    min_coverage: float,
    elapsed: float | None = None,
) -> None:
    """The listening gate of the HIT page, checked again on the server by the listening checks
    every crowd applies (:func:`crowdprefs.campaign.answers.check_listening`) with the page's
    own slack (:data:`LISTEN_SLACK`): every clip played to its end at least once, heard for at
    least ``min_coverage`` of its duration less the slack where it is known, at normal speed,
    and (where the page sends its intervals heard) with ``min_coverage`` of it covered, each
    part once: seeking past a part, or playing it muted or faster, does not cover it. With
    ``elapsed`` (seconds since the hand-out), a log claiming more than they allow is refused
    first (:class:`WebError`: not sent by the page); :class:`NotListened` naming the
    first clip not heard otherwise."""
    problems = answers.check_listening(
        log, seconds, min_coverage=min_coverage, slack=LISTEN_SLACK, elapsed=elapsed
    )
    for problem in problems[:1]:
        if problem.kind == "claimed":
            raise WebError(
                f"the page's play log is damaged ({problem.name} = {problem.sent} but the "
                f"question was handed out {problem.seconds:.1f} s ago); reload it"
            )
        clip = CLIP_NAMES[problem.name]
        if problem.kind == "unplayed":
            raise NotListened(f"{clip} was not played to its end: play every clip")
        if problem.kind == "uncovered":
            raise NotListened(
                f"only {problem.heard:.0%} of {clip} was heard (parts skipped, or played muted "
                "or faster, do not count): listen to every clip to its end at normal speed"
            )
        raise NotListened(
            f"{clip} lasts {problem.seconds:.1f} s but was heard for {problem.heard:.1f} s: "
            "listen to every clip at normal speed"
        )


def submit(
    project: Project,
    judge: WebJudge,
    assignment_id: str,
    csrf: str | None,
    form: Mapping[str, str],
    settings: WebSettings,
    at: datetime | None = None,
    *,
    question: WebQuestion | None = None,
) -> Posted:
    """Store the judge's answer to their assignment and hand them their next question, in
    one transaction of the store (an answer stored before is not stored again; the next
    question is handed out all the same).

    Raises :class:`Forbidden` (not the judge's assignment, wrong CSRF token), :class:`WebError`
    (invalid answer, or a play log claiming more than the seconds since the hand-out allow),
    :class:`NotListened` (the clips were not heard: :func:`check_listening`
    with the project's ``[hit] min_coverage``) or :class:`Gone` (the judge was blocked on review
    since the hand-out, or released and the pair has all its answers meanwhile). The choice is
    stored on the pair's sides (:func:`on_pair_sides`), with the order the page showed in the
    raw record. ``question``: the judge's assignment ``assignment_id`` as read already with the
    request's session (:meth:`~crowdprefs.campaign.store.Store.web_session`); read here
    otherwise.
    """
    at = _now(at)
    answer = validate_answer(form, settings)
    if question is None or question.assignment.assignment_id != assignment_id:
        question = question_of(project, judge, assignment_id)
    elif question.assignment.judge_id != judge.judge_id:
        raise Forbidden("this question is not yours")
    assignment, pair = question.assignment, question.pair
    if not same(csrf, assignment.csrf):
        raise Forbidden("the form's security token is missing or wrong; reload the page")
    shown = shown_pair(pair, assignment_id, settings)
    issued = datetime.fromisoformat(assignment.issued_at)
    if assignment.status != "submitted":
        min_coverage = HitSettings.from_project(project).min_coverage
        elapsed = max((at - issued).total_seconds(), 0.0)
        check_listening(answer.log, clip_seconds(shown), min_coverage, elapsed)
    a_is_x = int(shown["a_is_x"])
    order = {
        "a": pair["x"] if a_is_x else pair["y"],
        "b": pair["y"] if a_is_x else pair["x"],
        "clicked": answer.choice,
        "question": question.answered + 1,
    }
    posted = project.store.answer_web_question(
        assignment_id,
        choice=on_pair_sides(answer.choice, a_is_x, int(pair["a_is_x"])),
        score=SCORES[answer.choice, a_is_x],
        seconds=round((at - issued).total_seconds(), 3),
        submitted_at=stamp(at),
        background=answer.background,
        comment=answer.comment,
        raw=answer.raw(order, clip_seconds(shown)),
        hand_out=hand_out(judge, settings, at),
    )
    if posted.outcome == "blocked":
        raise Gone("your answers are no longer taken in this study")
    if posted.outcome == "gone":
        raise Gone("this question expired and was answered by others meanwhile")
    return posted
