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
participant's token). A request body may not exceed
:data:`~crowdprefs.web.middleware.MAX_BODY` bytes: refused (413) from its Content-Length, or
while it streams in when it has none. Failed token attempts are limited
per client address (429), and only they: a valid token always passes, so the judges behind a
shared address (a proxy, a lab's NAT) are never locked out by a guesser among them. A request's
store calls run off the event loop, on a thread pool as large as the store's connection pool
(:func:`~crowdprefs.web.http.store_call`), each change in one short transaction, so concurrent
posts are serialised by the database and a request waiting for the writers' lock holds up no
other. A judge's request reads what it needs (the client's throttle, the judge, their question
and its clips) in one statement (:func:`~crowdprefs.web.http.session`); clip downloads are
admitted apart from pages and answers (:class:`~crowdprefs.web.middleware.Admission`). Moving
the campaign on after a batch's last answer (aggregating, building and publishing the next
batch, reaching Prolific) runs on a worker thread with a project of its own
(:mod:`crowdprefs.web.advancing`): the judge whose answer completed the batch waits for it, the
others are served meanwhile. The site tells time by the clock it is given
(:mod:`crowdprefs.web.clock`).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from starlette.applications import Starlette
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

from crowdprefs.campaign.answers import ROLES
from crowdprefs.campaign.project import Project
from crowdprefs.crowds.prolific.client import ProlificClient, token_from_environment
from crowdprefs.crowds.prolific.study import HOOK_PATH
from crowdprefs.crowds.web.store import Posted, WebJudge, WebQuestion
from crowdprefs.errors import CrowdprefsError, InputError, StateError
from crowdprefs.hits.render import HitSettings, render_preference_hit
from crowdprefs.web import advancing, assign
from crowdprefs.web.assign import Forbidden, ScreenFirst, TooManyAttempts, WebError, WebSettings
from crowdprefs.web.clock import Clock, wall_clock
from crowdprefs.web.http import (
    JUDGE_COOKIE,
    SECURITY_HEADERS,
    address,
    error,
    failed,
    form,
    judge,
    now,
    off_loop,
    own,
    page,
    project,
    question,
    redirect,
    same_origin,
    session,
    set_session,
    settings,
    store_call,
)
from crowdprefs.web.middleware import MAX_BODY, Admission, BodyLimit
from crowdprefs.web.prolific_events import Refusals, prolific_event
from crowdprefs.web.researcher import researcher, researcher_login
from crowdprefs.web.security import (
    RESEARCHER_TOKEN_ENV,
    Throttle,
    check_researcher_token,
    servable_clip,
    token_hash,
)

log = logging.getLogger("crowdprefs.web")

# --- judges ----------------------------------------------------------------------------------
# Each handler awaits what it must (the posted form), then runs its work on the store in one
# call off the event loop (:func:`~crowdprefs.web.http.off_loop`).


async def invitation(request: Request) -> RedirectResponse | HTMLResponse:
    return await off_loop(request, _invitation)


def _invitation(request: Request) -> RedirectResponse | HTMLResponse:
    token = request.path_params["token"]
    try:
        session(request, token)
    except Forbidden:
        return error("This invitation link is not valid.", 403)
    response = redirect("/welcome")
    set_session(response, request, JUDGE_COOKIE, token)
    return response


async def study(request: Request) -> RedirectResponse | HTMLResponse:
    return await off_loop(request, _study)


def _study(request: Request) -> RedirectResponse | HTMLResponse:
    participant = request.query_params.get(settings(request).participant_param, "")
    key = request.path_params["key"]
    try:
        _, token = assign.join_study(project(request), key, participant, now(request))
    except Forbidden:
        failed(request, key)
        raise
    response = redirect("/welcome")
    set_session(response, request, JUDGE_COOKIE, token)
    return response


async def welcome(request: Request) -> HTMLResponse:
    return await off_loop(request, _welcome)


def _welcome(request: Request) -> HTMLResponse:
    who, state = judge(request), project(request)
    answered = state.store.web_answered(who.judge_id)
    hit = HitSettings.from_project(state)
    web = settings(request)
    screen = state.store.web_screen(who.judge_id)
    return page(
        "web_landing.html",
        judge=who.judge_id,
        answered=answered,
        limit=web.questions_per_judge,
        title=hit.title,
        instructions=hit.instructions,
        screen=assign.needs_screen(who, web) and not (screen and screen.passed),
    )


def _hand_out(request: Request, who: WebJudge) -> RedirectResponse:
    """Hand the judge a question (the one they hold, if any) and send them to it; to the
    completion page when none is left; to the headphone check (started now if need be) while
    they must pass it. Called by POST routes only."""
    state, web, at = project(request), settings(request), now(request)
    try:
        assignment = assign.next_assignment(state, who, web, at)
    except ScreenFirst:
        assign.start_screen(state, who, web, at)
        return redirect("/headphones")
    if assignment is None:
        return redirect("/done")
    return redirect(f"/hit/{assignment.assignment_id}")


async def take_question(request: Request) -> RedirectResponse:
    same_origin(request)
    return await off_loop(request, _take_question)


def _take_question(request: Request) -> RedirectResponse:
    return _hand_out(request, judge(request))


async def held_question(request: Request) -> RedirectResponse:
    return await off_loop(request, _held_question)


def _held_question(request: Request) -> RedirectResponse:
    held = project(request).store.web_open_assignment(judge(request).judge_id)
    return redirect("/welcome" if held is None else f"/hit/{held.assignment_id}")


def _shown_pair(request: Request, held: WebQuestion) -> dict[str, Any]:
    return assign.shown_pair(held.pair, held.assignment.assignment_id, settings(request))


def _hit_page(request: Request, held: WebQuestion) -> HTMLResponse:
    assignment = held.assignment
    pair = _shown_pair(request, held)
    base = f"/clip/{assignment.assignment_id}"
    urls: dict[str, str] = {}
    for role, path in assign.clip_paths(pair).items():
        if path:
            urls.setdefault(path, path if "://" in path else f"{base}/{role}")
    html = render_preference_hit(
        project(request),
        pair,
        mode="web",
        submit_url=f"/hit/{assignment.assignment_id}",
        extra_hidden={"csrf": assignment.csrf},
        clip_url=urls.__getitem__,
    )
    return HTMLResponse(html, headers=SECURITY_HEADERS)


async def question_page(request: Request) -> RedirectResponse | HTMLResponse:
    return await off_loop(request, _question_page)


def _question_page(request: Request) -> RedirectResponse | HTMLResponse:
    held = own(question(request)[1])
    if held.assignment.status != "open":
        return redirect("/next")
    return _hit_page(request, held)


async def answer(request: Request) -> RedirectResponse | HTMLResponse:
    """Store the posted answer (off the loop); when it completed its batch, move the campaign
    on (a worker thread, :func:`~crowdprefs.web.advancing.move_on`) before the next question."""
    same_origin(request)
    who, held = await off_loop(request, question)
    fields = await form(request)
    posted = await off_loop(request, _submit, who, held, fields)
    if posted.batch_complete and settings(request).advance:
        await advancing.move_on(request.app, advancing.MOVE_ON_WAIT)
    if posted.next is not None:
        return redirect(f"/hit/{posted.next.assignment_id}")
    return await off_loop(request, _hand_out, who)


def _submit(
    request: Request, who: WebJudge, held: WebQuestion | None, fields: dict[str, str]
) -> Posted:
    csrf = fields.pop("csrf", None)
    return assign.submit(
        project(request),
        who,
        request.path_params["assignment"],
        csrf,
        fields,
        settings(request),
        now(request),
        question=held,
    )


async def clip(request: Request) -> FileResponse | HTMLResponse:
    """A clip of the judge's own question: one statement reads the client's throttle, the
    judge and the question's clips (:func:`~crowdprefs.web.http.question`)."""
    _, held = await off_loop(request, question)
    role = request.path_params["role"]
    if role not in ROLES:
        return error("No such clip.", 404)
    file = servable_clip(assign.clip_paths(_shown_pair(request, own(held)))[role])
    if file is None:
        return error("This clip is not available.", 404)
    return FileResponse(
        file, headers={**SECURITY_HEADERS, "Cache-Control": "private, max-age=3600"}
    )


def _screen_failed(state: Project, who: WebJudge, web: WebSettings) -> bool:
    """Whether the judge failed the headphone check they must pass (final: no question)."""
    if not assign.needs_screen(who, web):
        return False
    screen = state.store.web_screen(who.judge_id)
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
    return await off_loop(request, _done)


def _done(request: Request) -> HTMLResponse | RedirectResponse:
    who, state, web = judge(request), project(request), settings(request)
    hand_out = assign.hand_out(who, web, now(request))
    held, room = state.store.web_lookout(who.judge_id, hand_out)
    if held is not None:
        return redirect(f"/hit/{held.assignment_id}")
    code = web.completion_code or who.completion_code
    url = web.completion_url.replace("{code}", code) if who.source == "platform" else ""
    answered = state.store.web_answered(who.judge_id)
    quota = bool(web.questions_per_judge) and answered >= web.questions_per_judge
    platform = who.source == "platform"
    waiting = not quota and state.store.web_campaign() != "done"
    return page(
        "web_done.html",
        answered=answered,
        waiting=waiting,
        ready=waiting and room and not _screen_failed(state, who, web),
        look_again=LOOK_AGAIN_SECONDS,
        code=code,
        show_code=answered > 0 if platform else bool(web.questions_per_judge),
        return_study=platform and answered == 0,
        completion_url=url,
        return_seconds=RETURN_SECONDS,
    )


# --- the headphone check ---------------------------------------------------------------------


async def headphone_check(request: Request) -> RedirectResponse | HTMLResponse:
    return await off_loop(request, _headphone_check)


def _headphone_check(request: Request) -> RedirectResponse | HTMLResponse:
    screen = project(request).store.web_screen(judge(request).judge_id)
    if screen is None or screen.passed:
        return redirect("/welcome")
    return page(
        "web_headphones.html",
        trials=range(1, screen.trials + 1),
        sounds=range(1, 4),
        csrf=screen.csrf,
        failed=screen.finished_at is not None,
        correct=screen.correct,
        pass_mark=screen.pass_mark,
    )


async def headphone_sound(request: Request) -> Response:
    return await off_loop(request, _headphone_sound)


def _headphone_sound(request: Request) -> Response:
    screen = project(request).store.web_screen(judge(request).judge_id)
    if screen is None:
        return error("No such sound.", 404)
    data = assign.screen_sound(screen, request.path_params["trial"], request.path_params["sound"])
    return Response(data, media_type="audio/wav", headers=SECURITY_HEADERS)


async def headphone_answers(request: Request) -> RedirectResponse:
    same_origin(request)
    who = await off_loop(request, judge)
    fields = await form(request)
    return await off_loop(request, _headphone_answers, who, fields)


def _headphone_answers(request: Request, who: WebJudge, fields: dict[str, str]) -> RedirectResponse:
    csrf = fields.pop("csrf", None)
    screen = assign.answer_screen(project(request), who, csrf, fields, now(request))
    log.info("headphone check of %s: %s of %s right", who.judge_id, screen.correct, screen.trials)
    return _hand_out(request, who) if screen.passed else redirect("/headphones")


# --- the site --------------------------------------------------------------------------------


async def healthz(request: Request) -> PlainTextResponse:
    """``ok`` with the database's engine and schema while the database answers; 503 and the
    cause otherwise (a load balancer takes this process out of service)."""
    store = project(request).store
    try:
        version = await store_call(request.app, lambda: store.version)
    except CrowdprefsError as failure:
        return PlainTextResponse(f"database unavailable: {failure}", status_code=503)
    return PlainTextResponse(f"ok: {store.dialect} database, schema {version}")


async def home(request: Request) -> HTMLResponse:
    return error("Open your personal invitation link to take part.", 200)


RETRIED = ("/hit/", "/headphones")
"""Pages whose refused post the judge sends again from the page itself (a link back to it)."""


def _back(request: Request, status: int) -> str:
    """Where a judge whose post was refused with ``status`` tries again: the question or the
    headphone check they posted (a GET shows it again), for an answer they can fix (400, 413,
    422); else nowhere."""
    path = request.url.path
    fixable = request.method == "POST" and status in (400, 413, 422)
    return path if fixable and path.startswith(RETRIED) else ""


async def web_error(request: Request, refused: Exception) -> HTMLResponse:
    assert isinstance(refused, WebError)
    if isinstance(refused, TooManyAttempts):
        return error(str(refused), refused.status, {"Retry-After": f"{refused.retry_after:.0f}"})
    return error(str(refused), refused.status, back=_back(request, refused.status))


async def body_cut(request: Request, cut: Exception) -> HTMLResponse:
    """A request whose body ended before its Content-Length, or whose chunked framing broke
    (the server then drops the connection): one log line, and 400 if the client still listens."""
    log.warning(
        "%s %s from %s: the request body was cut short or malformed",
        request.method,
        request.url.path,
        address(request),
    )
    return error("The request's body was cut short; send it again.", 400)


def create_app(
    root: Path,
    researcher_token: str,
    *,
    prolific: Callable[[], ProlificClient] | None = None,
    clock: Clock = wall_clock,
) -> Starlette:
    """The web crowd's ASGI application for the project at ``root``.

    ``researcher_token`` opens the researcher page (``/researcher/{token}``); a weak one is
    refused (:func:`~crowdprefs.web.security.check_researcher_token`). The project is
    opened when the server starts; with ``[web] advance`` (the default) the campaign is moved
    on at once (first batch built and published) and after each batch's last answer.
    ``prolific`` opens a client of Prolific's API (:func:`connect_prolific`, or a local fake's):
    with it, while the project has a Prolific study, moving the campaign on also raises the
    study's places; without it, places are added with ``crowdprefs prolific publish``.
    ``clock`` is the site's time (:mod:`crowdprefs.web.clock`: the wall clock, or a
    simulation's :class:`~crowdprefs.web.clock.TimeLapse`). The store calls of the requests
    run on as many threads as the store has connections
    (:attr:`~crowdprefs.crowds.web.store.WebStore.web_threads`).
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
        app.state.clock = clock
        app.state.store_threads = anyio.CapacityLimiter(project.store.web_threads)
        watch = None
        if app.state.settings.advance:
            await advancing.move_on(app)
            watch = asyncio.create_task(advancing.watch(app))
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
        Route("/hit/{assignment}", question_page, methods=["GET"]),
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
