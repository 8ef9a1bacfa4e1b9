"""What every handler of the judges' site uses: its pages, redirects and session cookies, the
request's project, settings and clock, the judge of the session (checked against the
throttle on failed token attempts), and :func:`store_call`, which runs a request's work on the
store off the event loop.

A handler is an ``async`` shell: it reads what it must await (the posted form), then hands
the rest — its store calls, shaped like the transactions they need, and the page they lead to
— to one call of :func:`store_call`, on a thread pool as large as the store's connection
pool (:attr:`~crowdprefs.crowds.web.store.WebStore.web_threads`). A request waiting for the
writers' lock (a batch advance, another process's transaction) then holds a thread, never the
event loop: the other requests of the process are served meanwhile.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio.to_thread
import jinja2
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse

from crowdprefs.campaign.project import Project
from crowdprefs.crowds.web.store import WebJudge, WebQuestion, WebSession
from crowdprefs.hits.render import TEMPLATE_DIR
from crowdprefs.web import assign
from crowdprefs.web.assign import Forbidden, TooManyAttempts, WebSettings
from crowdprefs.web.security import same, security_headers, token_hash

log = logging.getLogger("crowdprefs.web")

JUDGE_COOKIE = "crowdprefs_judge"
RESEARCHER_COOKIE = "crowdprefs_researcher"
MAX_FORM_FIELDS = 40
SECURITY_HEADERS = security_headers(TEMPLATE_DIR)

Result = TypeVar("Result")


async def store_call(app: Any, work: Callable[..., Result], *args: Any) -> Result:
    """``work(*args)`` on the app's store threads (``app.state.store_threads``, a limiter
    as large as the store's connection pool), awaited without holding the event loop."""
    call = functools.partial(work, *args)
    return await anyio.to_thread.run_sync(call, limiter=app.state.store_threads)


async def off_loop(request: Request, work: Callable[..., Result], *args: Any) -> Result:
    """``work(request, *args)``: a handler's work on the store (:func:`store_call`)."""
    return await store_call(request.app, work, request, *args)


@functools.cache
def _templates() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATE_DIR),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,  # included styles verbatim: their hashes are in the CSP
    )


def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
    """The template ``name`` rendered with ``context``, with the security headers."""
    html = _templates().get_template(name).render(**context)
    return HTMLResponse(html, status_code=status, headers=SECURITY_HEADERS)


def error(
    message: str, status: int, headers: dict[str, str] | None = None, back: str = ""
) -> HTMLResponse:
    """The error page: ``message``, and a link ``back`` to the page to try again from."""
    response = page("web_error.html", status, message=message, back=back)
    response.headers.update(headers or {})
    return response


async def form(request: Request) -> dict[str, str]:
    """The posted form's text fields, each sent once (:func:`assign.form_fields`)."""
    posted = await request.form(max_files=0, max_fields=MAX_FORM_FIELDS)
    return assign.form_fields(posted.multi_items())


def redirect(url: str) -> RedirectResponse:
    return RedirectResponse(url, status_code=303, headers=SECURITY_HEADERS)


def set_session(response: RedirectResponse, request: Request, name: str, token: str) -> None:
    response.set_cookie(
        name,
        token,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
        path="/",
    )


def project(request: Request) -> Project:
    """The server's project: its state is reached through the store's own connections, and
    its changes never take the project lock (each is one transaction the database serialises),
    so the researcher's commands run beside the server."""
    return request.app.state.project


def settings(request: Request) -> WebSettings:
    return request.app.state.settings


def now(request: Request) -> datetime:
    """The site's time for this request (the app's clock, :mod:`crowdprefs.web.clock`)."""
    return request.app.state.clock()


# --- tokens ----------------------------------------------------------------------------------


def address(request: Request) -> str:
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


def failed(request: Request, token: str, wait: float | None = None) -> None:
    """A wrong ``token``: refused (429) while the client must ``wait`` (read now when not
    given), else counted against it (the same stale token again counts once) in one log line.
    Only failed attempts are slowed down: every caller checks the token first, so a valid
    session, invitation, study link or researcher token always passes, whatever others behind
    the same address (a proxy, a lab's NAT) tried."""
    throttle, store, client = request.app.state.throttle, project(request).store, address(request)
    _refuse_waiting(throttle.wait(store, client) if wait is None else wait)
    throttle.fail(store, client, token)
    log.warning("failed token attempt from %s on %s", client, request.url.path)


def session(request: Request, token: str | None, assignment_id: str | None = None) -> WebSession:
    """The judge holding ``token`` (and their question ``assignment_id``, when given), read in
    one statement with the client's throttle; for no token or a wrong one :class:`Forbidden`
    (a failed attempt, :func:`failed`), or :class:`TooManyAttempts` while the client must
    wait."""
    if not token:
        raise Forbidden("open your personal invitation link first")
    throttle = request.app.state.throttle
    found = throttle.session(project(request).store, address(request), token, assignment_id)
    if found.judge is None:
        failed(request, token, found.wait)
        raise Forbidden("open your personal invitation link first")
    return found


def judge(request: Request) -> WebJudge:
    """The judge of the session's cookie (:func:`session`)."""
    found = session(request, request.cookies.get(JUDGE_COOKIE)).judge
    assert found is not None
    return found


def question(request: Request) -> tuple[WebJudge, WebQuestion | None]:
    """The judge of the session and their question of the path's ``assignment`` (``None``:
    unknown, or someone else's), read at once."""
    token, assignment_id = request.cookies.get(JUDGE_COOKIE), request.path_params["assignment"]
    found = session(request, token, assignment_id)
    assert found.judge is not None
    return found.judge, found.question


def own(held: WebQuestion | None) -> WebQuestion:
    """``held`` (of :func:`question`); :class:`Forbidden` for ``None``."""
    if held is None:
        raise Forbidden("this question is not yours")
    return held


def is_researcher(request: Request, token: str | None) -> bool:
    """Whether ``token`` is the researcher's (a wrong one counts as a failed attempt)."""
    if not token:
        return False
    if same(token_hash(token), request.app.state.researcher_sha):
        return True
    failed(request, token)
    return False


def same_origin(request: Request) -> None:
    """Refuse a cross-site form post: it carries a foreign ``Origin`` (browsers send one with
    every POST)."""
    origin = request.headers.get("origin")
    if origin is None:
        return
    if origin == "null" or urlsplit(origin).netloc != request.headers.get("host"):
        raise Forbidden("cross-site form posts are refused")
