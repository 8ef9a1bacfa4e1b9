"""The Starlette application of ``crowdprefs serve``: judges answer the HITs on the lab's server.

Routes (judges are identified by an HttpOnly, SameSite=Lax session cookie holding their token,
set when they open their invitation link; the link's token then leaves the address bar):

==============================  =============================================================
``GET /invite/{token}``         an invitation: sets the session, then the welcome page
``GET /study/{key}?PID=…``      a study-platform participant (parameter ``[web] participant_param``)
``GET /welcome``                instructions and a start button
``POST /next``                  hands the judge a question (theirs if they hold one), then its
                                page; the completion page when none is left; the headphone
                                check first when the judge must pass it (``[web]
                                headphone_screen``)
``GET|POST /headphones``        the headphone check (three sets of three noises) and its
                                answers; passed: the first question, failed: final
``GET /headphones/{t}/{s}``     noise ``s`` of set ``t`` of the judge's own check (WAV)
``GET /next``                   the question the judge holds, else the welcome page (changes
                                nothing)
``GET|POST /hit/{assignment}``  the preference HIT (the MTurk template in ``web`` mode); the
                                post is CSRF-checked, validated (with the page's play log: the
                                listening gate) and stored at once, then the next question
``GET /clip/{assignment}/{r}``  the clip ``query``, ``a`` or ``b`` of the judge's own question,
                                only from files listed in the project's state
``GET /done``                   thanks, and the completion code; a study participant who
                                finished is taken back to the platform after
                                :data:`RETURN_SECONDS`
``GET /researcher/{token}``     the researcher's session, then ``GET /researcher``: batch
                                progress, answers per judge, live audit figures, the campaign
                                in pictures (:mod:`crowdprefs.web.plots`) and the study's return
                                rate (read-only)
``POST /prolific/events``       Prolific's signed events (:mod:`crowdprefs.web.prolific_events`)
``GET /healthz``                liveness (``ok``)
==============================  =============================================================

While the project has a Prolific study, the campaign moves on through the Prolific crowd
(:class:`~crowdprefs.crowds.prolific.crowd.ProlificCrowd`): each batch the server publishes, and
each answer more the open batch wants, raises the study's places by itself (token from
``PROLIFIC_TOKEN``; :func:`create_app`'s ``prolific`` says how to reach Prolific).

Every state change is a POST (a GET changes nothing but the session cookie, and a study
participant's token). A request body may not exceed :data:`MAX_BODY` bytes: refused (413) from
its Content-Length, or while it streams in when it has none. Failed token attempts are limited
per client address (429), and only they: a valid token always passes, so the judges behind a
shared address (a proxy, a lab's NAT) are never locked out by a guesser among them. Requests
reach the state on the event loop's thread, each change in one short transaction, so concurrent
posts are serialised by the database. A judge's request reads what it needs (the client's
throttle, the judge, their question and its clips) in one statement (:func:`_session`); clip
downloads are admitted apart from pages and answers (:class:`Admission`).
Moving the campaign on after a batch's last answer (aggregating, building and publishing the
next batch, reaching Prolific) runs on a worker thread with a connection of its own: the judge
whose answer completed the batch waits for it, the others are served meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jinja2
import pandas as pd
import uvicorn
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import (
    FileResponse,
    HTMLResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from crowdprefs.campaign import driver
from crowdprefs.campaign.aggregate import usable
from crowdprefs.campaign.answers import ROLES
from crowdprefs.campaign.crowd import Crowd
from crowdprefs.campaign.driver import advance
from crowdprefs.campaign.project import Project
from crowdprefs.campaign.store.web import WebJudge, WebQuestion, WebSession
from crowdprefs.crowds.prolific.client import ProlificClient, token_from_environment
from crowdprefs.crowds.prolific.crowd import HOOK_PATH, ProlificCrowd, event_returns
from crowdprefs.crowds.web import WebCrowd
from crowdprefs.errors import CrowdprefsError, InputError, StateError
from crowdprefs.hits.render import TEMPLATE_DIR, HitSettings, render_preference_hit
from crowdprefs.quality.flags import flag_workers, worker_profiles
from crowdprefs.quality.frames import project_answers, project_verdicts
from crowdprefs.quality.iterations import iteration_table
from crowdprefs.quality.review import Reviewer
from crowdprefs.web import assign, plots
from crowdprefs.web.assign import (
    Forbidden,
    ScreenFirst,
    TooLarge,
    TooManyAttempts,
    WebError,
    WebSettings,
    study_terms,
)
from crowdprefs.web.prolific_events import Refusals, prolific_event
from crowdprefs.web.security import (
    RESEARCHER_TOKEN_ENV,
    Throttle,
    check_researcher_token,
    same,
    security_headers,
    servable_clip,
    token_hash,
)

log = logging.getLogger("crowdprefs.web")

JUDGE_COOKIE = "crowdprefs_judge"
RESEARCHER_COOKIE = "crowdprefs_researcher"
MAX_BODY = 64 * 1024
"""Largest request body accepted, in bytes (an answer with full texts takes under 20 KB)."""
MAX_FORM_FIELDS = 40
SECURITY_HEADERS = security_headers(TEMPLATE_DIR)


@functools.cache
def _templates() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,  # included styles verbatim: their hashes are in the CSP
    )


def _page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    html = _templates().get_template(name).render(**context)
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)


def _error(
    message: str, status: int, headers: dict[str, str] | None = None, back: str = ""
) -> HTMLResponse:
    """The error page: ``message``, and a link ``back`` to the page to try again from."""
    response = _page("web_error.html", status, message=message, back=back)
    response.headers.update(headers or {})
    return response


async def _form(request: Request) -> dict[str, str]:
    """The posted form's text fields, each sent once (:func:`assign.form_fields`)."""
    form = await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)
    return assign.form_fields(form.multi_items())


def _redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303, headers=SECURITY_HEADERS)


def _set_session(response: RedirectResponse, request: Request, name: str, token: str) -> None:
    response.set_cookie(
        name,
        token,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
        path="/",
    )


def _project(request: Request) -> Project:
    """The server's project: its state is reached through the store's own connections, and
    its changes never take the project lock (each is one transaction the database serialises),
    so the researcher's commands run beside the server."""
    return request.app.state.project


def _settings(request: Request) -> WebSettings:
    return request.app.state.settings


# --- tokens ----------------------------------------------------------------------------------


def _address(request: Request) -> str:
    """The client's address: the peer's, or behind a proxy listed in ``[web] trusted_proxies``
    the address that proxy forwarded (uvicorn's proxy headers, trusted from those only)."""
    return request.client.host if request.client else "unknown"


def _refuse_waiting(wait: float) -> None:
    """Refuse (429) a client that must ``wait`` seconds before trying a token again."""
    if wait > 0:
        raise TooManyAttempts(
            f"too many wrong links from your address: try again in {max(wait / 60, 1):.0f} minutes",
            wait,
        )


def _failed(request: Request, token: str, wait: float | None = None) -> None:
    """A wrong ``token``: refused (429) while the client must ``wait`` (read now when not
    given), else counted against it (the same stale token again counts once) in one log line.
    Only failed attempts are slowed down: every caller checks the token first, so a valid
    session, invitation, study link or researcher token always passes, whatever others behind
    the same address (a proxy, a lab's NAT) tried."""
    throttle, store, address = (
        request.app.state.throttle,
        _project(request).store,
        _address(request),
    )
    _refuse_waiting(throttle.wait(store, address) if wait is None else wait)
    throttle.fail(store, address, token)
    log.warning("failed token attempt from %s on %s", address, request.url.path)


def _session(request: Request, token: str | None, assignment_id: str | None = None) -> WebSession:
    """The judge holding ``token`` (and their question ``assignment_id``, when given), read in
    one statement with the client's throttle; for no token or a wrong one :class:`Forbidden`
    (a failed attempt, :func:`_failed`), or :class:`TooManyAttempts` while the client must
    wait."""
    if not token:
        raise Forbidden("open your personal invitation link first")
    throttle = request.app.state.throttle
    session = throttle.session(_project(request).store, _address(request), token, assignment_id)
    if session.judge is None:
        _failed(request, token, session.wait)
        raise Forbidden("open your personal invitation link first")
    return session


def _judge(request: Request) -> WebJudge:
    judge = _session(request, request.cookies.get(JUDGE_COOKIE)).judge
    assert judge is not None
    return judge


def _question(request: Request) -> tuple[WebJudge, WebQuestion | None]:
    """The judge of the session and their question of the path's ``assignment`` (``None``:
    unknown, or someone else's), read at once."""
    token, assignment_id = request.cookies.get(JUDGE_COOKIE), request.path_params["assignment"]
    session = _session(request, token, assignment_id)
    assert session.judge is not None
    return session.judge, session.question


def _own(question: WebQuestion | None) -> WebQuestion:
    """``question`` (of :func:`_question`); :class:`Forbidden` for ``None``."""
    if question is None:
        raise Forbidden("this question is not yours")
    return question


def _is_researcher(request: Request, token: str | None) -> bool:
    """Whether ``token`` is the researcher's (a wrong one counts as a failed attempt)."""
    if not token:
        return False
    if same(token_hash(token), request.app.state.researcher_sha):
        return True
    _failed(request, token)
    return False


def _same_origin(request: Request) -> None:
    """Refuse a cross-site form post: it carries a foreign ``Origin`` (browsers send one with
    every POST)."""
    origin = request.headers.get("origin")
    if origin is None:
        return
    if origin == "null" or urlsplit(origin).netloc != request.headers.get("host"):
        raise Forbidden("cross-site form posts are refused")


class BodyLimit:
    """Refuses (413) a request body larger than ``limit`` bytes: at once when its
    Content-Length says so, else while it streams in (a chunked body has no length), never
    reading more than one chunk past the limit."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = Headers(scope=scope).get("content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            status = 413 if length.isdigit() else 400
            await _error("The request is too large.", status)(scope, receive, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise TooLarge("the request is too large")
            return message

        await self.app(scope, limited, send)


class Admission:
    """Works on at most ``[web] max_in_flight`` requests at once (``/healthz`` aside); beyond,
    answers 503
    with a page that asks the judge to come back in a minute and reloads itself
    (``Retry-After``), so an overloaded server says so at once instead of letting every wait
    grow. Nothing a judge holds is lost: their question stays theirs until it expires.

    Clip downloads (``/clip/…``) count apart, against a limit of the same size: they hold a
    request open while the file streams to the browser (three per question, preloaded at once),
    and pages and answers never wait behind them nor are refused for them."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.active = {False: 0, True: 0}
        """Requests in flight: pages and answers (``False``), clip downloads (``True``)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] == "/healthz":
            await self.app(scope, receive, send)
            return
        clip = scope["path"].startswith(CLIP_PATH)
        if self.active[clip] >= scope["app"].state.settings.max_in_flight:
            what = "clip downloads" if clip else "requests"
            log.warning("busy: %d %s at once, asked a judge to come back", self.active[clip], what)
            busy = _page("web_busy.html", 503, retry=BUSY_RETRY)
            busy.headers["Retry-After"] = str(BUSY_RETRY)
            await busy(scope, receive, send)
            return
        self.active[clip] += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.active[clip] -= 1


CLIP_PATH = "/clip/"
"""The path of clip downloads, admitted apart (:class:`Admission`)."""
BUSY_RETRY = 30
"""Seconds after which the busy page reloads itself (and its ``Retry-After``)."""


# --- judges ----------------------------------------------------------------------------------


async def invitation(request: Request) -> RedirectResponse | HTMLResponse:
    token = request.path_params["token"]
    try:
        _session(request, token)
    except Forbidden:
        return _error("This invitation link is not valid.", 403)
    response = _redirect("/welcome")
    _set_session(response, request, JUDGE_COOKIE, token)
    return response


async def study(request: Request) -> RedirectResponse | HTMLResponse:
    settings = _settings(request)
    participant = request.query_params.get(settings.participant_param, "")
    key = request.path_params["key"]
    try:
        _, token = assign.join_study(_project(request), key, participant)
    except Forbidden:
        _failed(request, key)
        raise
    response = _redirect("/welcome")
    _set_session(response, request, JUDGE_COOKIE, token)
    return response


async def welcome(request: Request) -> HTMLResponse:
    judge = _judge(request)
    project = _project(request)
    answered = project.store.web_answered(judge.judge_id)
    hit = HitSettings.from_project(project)
    settings = _settings(request)
    screen = project.store.web_screen(judge.judge_id)
    return _page(
        "web_landing.html",
        judge=judge.judge_id,
        answered=answered,
        limit=settings.questions_per_judge,
        title=hit.title,
        instructions=hit.instructions,
        screen=assign.needs_screen(judge, settings) and not (screen and screen.passed),
    )


def _hand_out(request: Request, judge: WebJudge) -> RedirectResponse:
    """Hand the judge a question (the one they hold, if any) and send them to it; to the
    completion page when none is left; to the headphone check (started now if need be) while
    they must pass it. Called by POST routes only."""
    project, settings = _project(request), _settings(request)
    try:
        assignment = assign.next_assignment(project, judge, settings)
    except ScreenFirst:
        assign.start_screen(project, judge, settings)
        return _redirect("/headphones")
    if assignment is None:
        return _redirect("/done")
    return _redirect(f"/hit/{assignment.assignment_id}")


async def take_question(request: Request) -> RedirectResponse:
    _same_origin(request)
    return _hand_out(request, _judge(request))


async def held_question(request: Request) -> RedirectResponse:
    held = _project(request).store.web_open_assignment(_judge(request).judge_id)
    return _redirect("/welcome" if held is None else f"/hit/{held.assignment_id}")


def _shown_pair(request: Request, question: WebQuestion) -> dict[str, Any]:
    return assign.shown_pair(question.pair, question.assignment.assignment_id, _settings(request))


def _hit_page(request: Request, question: WebQuestion) -> HTMLResponse:
    project, assignment = _project(request), question.assignment
    pair = _shown_pair(request, question)
    base = f"/clip/{assignment.assignment_id}"
    urls: dict[str, str] = {}
    for role, path in assign.clip_paths(pair).items():
        if path:
            urls.setdefault(path, path if "://" in path else f"{base}/{role}")
    html = render_preference_hit(
        project,
        pair,
        mode="web",
        submit_url=f"/hit/{assignment.assignment_id}",
        extra_hidden={"csrf": assignment.csrf},
        clip_url=urls.__getitem__,
    )
    return HTMLResponse(html, headers=SECURITY_HEADERS)


async def question(request: Request) -> RedirectResponse | HTMLResponse:
    question = _own(_question(request)[1])
    if question.assignment.status != "open":
        return _redirect("/next")
    return _hit_page(request, question)


async def answer(request: Request) -> RedirectResponse | HTMLResponse:
    _same_origin(request)
    judge, question = _question(request)
    project = _project(request)
    fields = await _form(request)
    assignment_id = request.path_params["assignment"]
    csrf = fields.pop("csrf", None)
    posted = assign.submit(
        project, judge, assignment_id, csrf, fields, _settings(request), question=question
    )
    if posted.batch_complete and _settings(request).advance:
        await run_in_threadpool(_advance_apart, request.app, MOVE_ON_WAIT)
    if posted.next is not None:
        return _redirect(f"/hit/{posted.next.assignment_id}")
    return _hand_out(request, judge)


def _crowd(app: Starlette, project: Project) -> Crowd:
    """The crowd the campaign moves on with: the web crowd, recruited by the project's Prolific
    study when it has one that was not stopped and the app reaches Prolific (``prolific``)."""
    connect = app.state.prolific
    study = project.store.prolific_study()
    if connect is None or study is None or study.status == "COMPLETED":
        return WebCrowd()
    return ProlificCrowd(project, connect(), study_terms(project))


def _advance(app: Starlette, project: Project, wait: float = 0.0) -> None:
    """Move the campaign on, at most one process at a time across every server process and
    host, and never beside a command of the researcher's: it runs only while it holds the
    project lock (:mod:`crowdprefs.campaign.store.lock`: a file lock on SQLite, an advisory
    lock on PostgreSQL), else it is left to its holder, who moves the campaign as far as the
    answers allow (:func:`~crowdprefs.campaign.driver.advance` reads where the campaign stands,
    so running it again after another process is harmless). With ``wait`` seconds, a holder
    (another thread or process) is waited for that long, and the campaign moved on after it:
    the judge whose answer completed the batch is then handed the next batch's question even
    when a server's watch (:func:`_watch`) or another server process moved it on. A refusal
    (budget, Prolific, settings) stops the campaign with its line on the researcher page and
    in the log; answers are still taken. The line is kept in the state, so every server
    process shows the same."""
    if not (_ADVANCING.acquire(timeout=wait) if wait > 0 else _ADVANCING.acquire(False)):
        return  # another thread of this process is moving it on
    try:
        deadline = time.monotonic() + wait
        while not project.store.lock.try_acquire():
            if time.monotonic() >= deadline:
                log.info("campaign: moved on by another process (it holds the project lock)")
                return
            time.sleep(LOCK_POLL)
        _advance_holding_the_lock(app, project)
    finally:
        _ADVANCING.release()


MOVE_ON_WAIT = 20.0
"""Seconds the judge whose answer completed a batch waits at most for another thread or
process moving the campaign on (then, or when nothing is free, the done page)."""
LOCK_POLL = 0.25
"""Seconds between two tries of the project lock while waiting for its holder."""


_ADVANCING = threading.Lock()
"""Held by the thread of this process that moves the campaign on (the project lock belongs to
the process: it keeps other processes out, this keeps the process's other threads out)."""


def _advance_holding_the_lock(app: Starlette, project: Project) -> None:
    crowd: Crowd | None = None
    try:
        crowd = _crowd(app, project)
        line = advance(project, crowd, Reviewer())
    except CrowdprefsError as error:
        line = f"stopped: {error}"
    finally:
        if isinstance(crowd, ProlificCrowd):
            crowd.client.close()
    try:
        project.store.set_web_campaign(line)
    finally:
        project.store.lock.release()
    log.info("campaign: %s", line)


WATCH_EVERY = 5.0
"""Seconds between two looks of each server process for a batch whose answers are all in but
that was not moved on (the process that took its last answer ended meanwhile)."""


async def _watch(app: Starlette) -> None:
    """Every :data:`WATCH_EVERY` seconds, move the campaign on when the open web batch has all
    its answers (:func:`_advance_apart`): a server process killed while moving it on leaves
    the work to the others, or to itself once restarted."""
    while True:
        await asyncio.sleep(WATCH_EVERY)
        try:
            progress = app.state.project.store.web_batch_progress()
        except CrowdprefsError as error:
            log.warning("cannot read the campaign: %s", error)
            continue
        stalled = progress["status"] == "collected" or (
            progress["status"] in ("built", "published")
            and progress["crowd"] in (None, "web")
            and 0 < progress["pairs"] == progress["pairs_complete"]
        )
        if stalled:
            await run_in_threadpool(_advance_apart, app)


def _advance_apart(app: Starlette, wait: float = 0.0) -> None:
    """:func:`_advance` on this (worker) thread, through a project opened for it (its changes
    take the project lock, released when it is done)."""
    with Project(app.state.root) as project:
        _advance(app, project, wait)


async def clip(request: Request) -> FileResponse | HTMLResponse:
    """A clip of the judge's own question: one statement reads the client's throttle, the
    judge and the question's clips (:func:`_question`)."""
    _, question = _question(request)
    role = request.path_params["role"]
    if role not in ROLES:
        return _error("No such clip.", 404)
    file = servable_clip(assign.clip_paths(_shown_pair(request, _own(question)))[role])
    if file is None:
        return _error("This clip is not available.", 404)
    return FileResponse(
        file, headers={**SECURITY_HEADERS, "Cache-Control": "private, max-age=3600"}
    )


def _screen_failed(project: Project, judge: WebJudge, settings: WebSettings) -> bool:
    """Whether the judge failed the headphone check they must pass (final: no question)."""
    if not assign.needs_screen(judge, settings):
        return False
    screen = project.store.web_screen(judge.judge_id)
    return screen is not None and screen.finished_at is not None and not screen.passed


LOOK_AGAIN_SECONDS = 10
"""Seconds after which the done page of a judge waiting for a question reloads itself."""
RETURN_SECONDS = 5
"""Seconds the done page shows a study participant their completion code before it takes them
back to the study platform (its completion address) by itself."""


async def done(request: Request) -> HTMLResponse | RedirectResponse:
    """Thanks, and the completion code; a study participant who answered nothing gets no code
    (they are asked to return the study instead). A participant who has finished is taken back
    to the study platform after :data:`RETURN_SECONDS`. While the campaign goes on, the page
    looks again by itself (:data:`LOOK_AGAIN_SECONDS`) and reads what a hand-out would find
    (changing nothing): the question the judge holds (they are sent to it), or a question free
    for them (the page says so, with its button), so a judge who waited while the next round
    was published gets to it by reloading."""
    judge = _judge(request)
    project = _project(request)
    settings = _settings(request)
    held, room = project.store.web_lookout(judge.judge_id, assign.hand_out(judge, settings))
    if held is not None:
        return _redirect(f"/hit/{held.assignment_id}")
    code = settings.completion_code or judge.completion_code
    url = settings.completion_url.replace("{code}", code) if judge.source == "platform" else ""
    answered = project.store.web_answered(judge.judge_id)
    quota = bool(settings.questions_per_judge) and answered >= settings.questions_per_judge
    platform = judge.source == "platform"
    waiting = not quota and project.store.web_campaign() != "done"
    return _page(
        "web_done.html",
        answered=answered,
        waiting=waiting,
        ready=waiting and room and not _screen_failed(project, judge, settings),
        look_again=LOOK_AGAIN_SECONDS,
        code=code,
        show_code=answered > 0 if platform else bool(settings.questions_per_judge),
        return_study=platform and answered == 0,
        completion_url=url,
        return_seconds=RETURN_SECONDS,
    )


# --- the headphone check ---------------------------------------------------------------------


async def headphone_check(request: Request) -> RedirectResponse | HTMLResponse:
    judge = _judge(request)
    screen = _project(request).store.web_screen(judge.judge_id)
    if screen is None or screen.passed:
        return _redirect("/welcome")
    return _page(
        "web_headphones.html",
        trials=range(1, screen.trials + 1),
        sounds=range(1, 4),
        csrf=screen.csrf,
        failed=screen.finished_at is not None,
        correct=screen.correct,
        pass_mark=screen.pass_mark,
    )


async def headphone_sound(request: Request) -> Response:
    judge = _judge(request)
    screen = _project(request).store.web_screen(judge.judge_id)
    if screen is None:
        return _error("No such sound.", 404)
    data = assign.screen_sound(screen, request.path_params["trial"], request.path_params["sound"])
    return Response(data, media_type="audio/wav", headers=SECURITY_HEADERS)


async def headphone_answers(request: Request) -> RedirectResponse:
    _same_origin(request)
    judge = _judge(request)
    fields = await _form(request)
    screen = assign.answer_screen(_project(request), judge, fields.pop("csrf", None), fields)
    log.info("headphone check of %s: %s of %s right", judge.judge_id, screen.correct, screen.trials)
    return _hand_out(request, judge) if screen.passed else _redirect("/headphones")


# --- researcher ------------------------------------------------------------------------------


async def researcher_login(request: Request) -> RedirectResponse | HTMLResponse:
    token = request.path_params["token"]
    if not _is_researcher(request, token):
        return _error("This researcher link is not valid.", 403)
    response = _redirect("/researcher")
    _set_session(response, request, RESEARCHER_COOKIE, token)
    return response


AUDIT_EVERY = 10.0
"""Seconds between two recomputations of the researcher page's audit (it runs on the loop)."""


def audit_figures(project: Project) -> dict[str, Any]:
    """The live audit (:mod:`crowdprefs.quality.audit`): the preference-judgments paper Table 2 per
    iteration so far, with chance-corrected agreement, and the workers its rules flag, with their
    evidence; and ``plots``, the pictures drawn from the same frames
    (:mod:`crowdprefs.web.plots`: answers over time, workers' agreement, listening coverage)."""
    answers = project_answers(project)
    if answers.empty:
        profiles = pd.DataFrame(columns=["verdict_agreement", "listen_ratio"])
        return {"iterations": [], "flags": [], "plots": _audit_plots(answers, profiles)}
    pairs = project_verdicts(project, answers)
    table = iteration_table(answers, pairs, project.settings.fees)
    profiles = worker_profiles(answers, pairs)
    flags = flag_workers(answers, pairs, profiles=profiles)
    return {
        "iterations": _records(table),
        "flags": flags.to_dict("records"),
        "plots": _audit_plots(answers, profiles),
    }


def _audit_plots(answers: pd.DataFrame, profiles: pd.DataFrame) -> dict[str, Markup]:
    """The audit's pictures, escaped inside (:mod:`crowdprefs.web.plots`)."""
    return {
        "time": Markup(plots.answers_over_time(usable(answers)["submitted_at"])),
        "agreement": Markup(plots.agreement_histogram(profiles)),
        "listening": Markup(plots.listening_coverage(profiles)),
    }


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``frame`` as dicts, a missing value (NaN) as ``None`` (shown as "–")."""
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def _cached_audit(app: Starlette, project: Project, count: int) -> dict[str, Any]:
    """The audit, recomputed when ``count`` (of answers) changed and it is older than
    :data:`AUDIT_EVERY`."""
    cached = getattr(app.state, "audit", None)
    if cached is None or (cached[0] != count and time.monotonic() - cached[1] > AUDIT_EVERY):
        app.state.audit = (count, time.monotonic(), audit_figures(project))
    return app.state.audit[2]


def _batch_plot(app: Starlette, project: Project, progress: dict[str, Any]) -> Markup:
    """The batch's picture (:func:`~crowdprefs.web.plots.batch_progress`), read and drawn again
    only when the batch's progress changed (grouping a large batch's pairs costs a scan)."""
    key = tuple(sorted(progress.items()))
    cached = getattr(app.state, "batch_plot", None)
    if cached is None or cached[0] != key:
        picture = plots.batch_progress(project.store.web_batch_fill(), progress)
        cached = app.state.batch_plot = (key, Markup(picture))
    return cached[1]


def campaign_status(line: str | None, progress: dict[str, Any], advance: bool) -> str:
    """What the researcher page says of the campaign: the server's last line of it
    (:func:`~crowdprefs.campaign.driver.advance`'s outcome, or why it stopped) told with the
    last batch's ``progress`` (:meth:`~crowdprefs.campaign.store.Store.web_batch_progress`),
    so a published batch reads as the answers it collects, not as "waiting"."""
    if line is not None and line.startswith("stopped"):
        return line
    if line == "done":
        return "done: every list is closed"
    batch, status = progress.get("iteration"), progress.get("status")
    who = "the server" if advance else "your commands ([web] advance = false)"
    if batch is None:
        return f"no batch yet; moved on by {who}"
    if status == "published" and progress.get("crowd") in (None, "web"):
        answers, wanted = progress.get("answers", 0), progress.get("answers_wanted", 0)
        return (
            f"batch {batch} published, collecting answers ({answers} of {wanted}); "
            f"moved on by {who}"
        )
    if line == "other crowd" or progress.get("crowd") not in (None, "web"):
        return f"batch {batch} is {status} on the {progress.get('crowd')} crowd, not this site"
    return f"batch {batch} {status}; moved on by {who}"


async def researcher(request: Request) -> HTMLResponse:
    if not _is_researcher(request, request.cookies.get(RESEARCHER_COOKIE)):
        return _error("Open the researcher link printed by 'crowdprefs serve'.", 403)
    project = _project(request)
    totals = driver.status(project)["totals"]
    progress = project.store.web_batch_progress()
    audit = _cached_audit(request.app, project, totals["answers"])
    batch = _batch_plot(request.app, project, progress)
    return _page(
        "web_researcher.html",
        progress=progress,
        totals=totals,
        judges=_records(project.store.web_judge_table()),
        audit=audit,
        plots={**audit["plots"], "batch": batch},
        comments=project.store.web_comments(20).to_dict("records"),
        campaign=campaign_status(
            project.store.web_campaign(), progress, _settings(request).advance
        ),
        returns=event_returns(project.store.prolific_events()),
    )


async def healthz(request: Request) -> PlainTextResponse:
    """``ok`` with the database's engine and schema while the database answers; 503 and the
    cause otherwise (a load balancer takes this process out of service)."""
    try:
        version = _project(request).store.version
    except CrowdprefsError as error:
        return PlainTextResponse(f"database unavailable: {error}", status_code=503)
    return PlainTextResponse(f"ok: {_project(request).store.dialect} database, schema {version}")


async def home(request: Request) -> HTMLResponse:
    return _error("Open your personal invitation link to take part.", 200)


RETRIED = ("/hit/", "/headphones")
"""Pages whose refused post the judge sends again from the page itself (a link back to it)."""


def _back(request: Request, status: int) -> str:
    """Where a judge whose post was refused with ``status`` tries again: the question or the
    headphone check they posted (a GET shows it again), for an answer they can fix (400, 413,
    422); else nowhere."""
    path = request.url.path
    fixable = request.method == "POST" and status in (400, 413, 422)
    return path if fixable and path.startswith(RETRIED) else ""


async def web_error(request: Request, error: Exception) -> HTMLResponse:
    assert isinstance(error, WebError)
    if isinstance(error, TooManyAttempts):
        return _error(str(error), error.status, {"Retry-After": f"{error.retry_after:.0f}"})
    return _error(str(error), error.status, back=_back(request, error.status))


async def body_cut(request: Request, error: Exception) -> HTMLResponse:
    """A request whose body ended before its Content-Length, or whose chunked framing broke
    (the server then drops the connection): one log line, and 400 if the client still listens."""
    log.warning(
        "%s %s from %s: the request body was cut short or malformed",
        request.method,
        request.url.path,
        _address(request),
    )
    return _error("The request's body was cut short; send it again.", 400)


def create_app(
    root: Path, researcher_token: str, *, prolific: Callable[[], ProlificClient] | None = None
) -> Starlette:
    """The web crowd's ASGI application for the project at ``root``.

    ``researcher_token`` opens the researcher page (``/researcher/{token}``); a weak one is
    refused (:func:`~crowdprefs.web.security.check_researcher_token`). The project is
    opened when the server starts; with ``[web] advance`` (the default) the campaign is moved
    on at once (first batch built and published) and after each batch's last answer.
    ``prolific`` opens a client of Prolific's API (:func:`connect_prolific`, or a local fake's):
    with it, while the project has a Prolific study, moving the campaign on also raises the
    study's places; without it, places are added with ``crowdprefs prolific publish``.
    """

    researcher_sha = token_hash(check_researcher_token(researcher_token))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        project = Project(root, lock=False)
        app.state.root = root
        app.state.project = project
        app.state.settings = WebSettings.from_project(project)
        app.state.researcher_sha = researcher_sha
        app.state.throttle = Throttle()
        app.state.refusals = Refusals()
        app.state.prolific = prolific
        watch = None
        if app.state.settings.advance:
            await run_in_threadpool(_advance_apart, app)
            watch = asyncio.create_task(_watch(app))
        try:
            yield
        finally:
            if watch is not None:
                watch.cancel()
            app.state.refusals.flush(force=True)
            project.close()

    routes = [
        Route("/", home),
        Route("/healthz", healthz),
        Route("/invite/{token}", invitation),
        Route("/study/{key}", study),
        Route("/welcome", welcome),
        Route("/next", held_question, methods=["GET"]),
        Route("/next", take_question, methods=["POST"]),
        Route("/headphones", headphone_check, methods=["GET"]),
        Route("/headphones", headphone_answers, methods=["POST"]),
        Route("/headphones/{trial:int}/{sound:int}", headphone_sound),
        Route("/hit/{assignment}", question, methods=["GET"]),
        Route("/hit/{assignment}", answer, methods=["POST"]),
        Route("/clip/{assignment}/{role}", clip),
        Route("/done", done),
        Route("/researcher/{token}", researcher_login),
        Route("/researcher", researcher),
        Route(HOOK_PATH, prolific_event, methods=["POST"]),
    ]
    return Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[
            Middleware(Admission),
            Middleware(BodyLimit, limit=MAX_BODY),
        ],
        exception_handlers={WebError: web_error, ClientDisconnect: body_cut},
    )


def connect_prolific() -> ProlificClient:
    """A client of Prolific's API with the token of ``PROLIFIC_TOKEN``."""
    return ProlificClient(token_from_environment())


def site_url(settings: WebSettings, host: str, port: int) -> str:
    """The site's public address: ``[web] base_url`` when the project sets it, else the bound
    address."""
    if settings.base_url != WebSettings.base_url:
        return settings.base_url.rstrip("/")
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def _specific(host: str) -> bool:
    """Whether binding to ``host`` names one address (not ``0.0.0.0`` or ``::``: every
    address of the machine, none of which the judges' links could name for sure)."""
    try:
        return not ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return True  # a host name


SERVE_ROOT_ENV = "CROWDPREFS_SERVE_ROOT"
"""Where ``serve --workers N`` tells its worker processes the project is (:func:`worker_app`)."""


def worker_app() -> Starlette:
    """The application of one of ``serve --workers N``'s processes (a uvicorn factory): the
    project of :data:`SERVE_ROOT_ENV`, the researcher token of
    :data:`~crowdprefs.web.security.RESEARCHER_TOKEN_ENV`, Prolific itself."""
    return create_app(Path(os.environ[SERVE_ROOT_ENV]), os.environ[RESEARCHER_TOKEN_ENV])


def log_config(level: str = "info") -> dict[str, Any]:
    """uvicorn's logging, and crowdprefs', to standard output (where a container's logs are
    read), one line per event with its time."""
    handler = {"class": "logging.StreamHandler", "stream": "ext://sys.stdout", "formatter": "line"}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"line": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
        "handlers": {"stdout": handler},
        "loggers": {
            name: {"handlers": ["stdout"], "level": level.upper(), "propagate": False}
            for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "crowdprefs")
        },
    }


KEEP_ALIVE_SECONDS = 5
"""An idle connection is closed after this long (uvicorn's default, named here because clients
that keep connections open longer race the close: see the simulated judges)."""

GRACE_SECONDS = 30
"""On SIGTERM or Ctrl-C the server stops taking connections and lets the requests in flight
finish for at most this long (answers being posted are stored)."""


def serve(
    root: Path,
    researcher_token: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    access_log: bool = False,
    announce: Callable[[str], None] = lambda url: None,
    prolific: Callable[[], ProlificClient] | None = connect_prolific,
) -> None:
    """Serve the project at ``root`` to its judges with uvicorn until interrupted.

    Settings, port and token are checked first; the site's address is then remembered for
    ``crowdprefs invite`` (unless ``host`` binds every address), and ``announce`` receives the
    researcher page's link (it holds the token: show it only to the researcher).
    ``prolific``: as for :func:`create_app` (by default Prolific itself, once the project has a
    study). ``workers`` server processes share the campaign through its database: more than one
    needs PostgreSQL (one SQLite file has one writer at a time), and on SQLite a second server
    of the same project is refused. Logs go to standard output; a stop lets requests in flight
    finish (:data:`GRACE_SECONDS`).
    """
    if not 0 < port < 65536:
        raise InputError(f"the port must be between 1 and 65535, got {port}")
    if not 1 <= workers <= 64:
        raise InputError(f"the number of server workers must be between 1 and 64, got {workers}")
    check_researcher_token(researcher_token)
    with Project(root, lock=False) as project:
        settings = WebSettings.from_project(project)  # bad settings refused before anything
        many = project.store.many_processes
        guard = project.store.server_lock()
    if workers > 1 and not many:
        raise InputError(
            f"{workers} server workers need the state in PostgreSQL: a SQLite file takes one "
            "writer at a time; move the state there first ('crowdprefs migrate')"
        )
    if workers > 1 and prolific is not connect_prolific:
        raise InputError("several server workers reach Prolific itself, not its local fake")
    if guard is not None and not guard.try_acquire():
        holder = guard.path.read_text(errors="replace").strip() or "another process"
        raise StateError(
            f"{root} is already served ({holder}); a SQLite project has one server: stop it "
            "first, or move the state to PostgreSQL for several"
        )
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "access_log": access_log,
        "log_config": log_config(),
        "proxy_headers": bool(settings.trusted_proxies),
        "forwarded_allow_ips": ",".join(settings.trusted_proxies) or None,
        "timeout_graceful_shutdown": GRACE_SECONDS,
        "timeout_keep_alive": KEEP_ALIVE_SECONDS,
    }
    site = site_url(settings, host, port)
    try:
        if _specific(host):
            with Project(root, lock=False) as project:
                project.store.set_web_site("served", site)  # for 'crowdprefs invite' beside it
        announce(f"{site}/researcher/{researcher_token}")
        if workers == 1:
            uvicorn.run(create_app(root, researcher_token, prolific=prolific), **options)
            return
        os.environ[SERVE_ROOT_ENV] = str(Path(root).resolve())
        os.environ[RESEARCHER_TOKEN_ENV] = researcher_token
        uvicorn.run(f"{__name__}:worker_app", factory=True, workers=workers, **options)
    finally:
        if guard is not None:
            guard.release()
