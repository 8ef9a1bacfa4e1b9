"""The judges' site's ASGI middleware: :class:`BodyLimit` refuses (413) a request body larger
than :data:`MAX_BODY`, and :class:`Admission` works on at most ``[web] max_in_flight``
requests at once (clip downloads counted apart), answering 503 beyond."""

from __future__ import annotations

import logging

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from crowdprefs.web.assign import TooLarge
from crowdprefs.web.http import error, page

log = logging.getLogger("crowdprefs.web")

MAX_BODY = 64 * 1024
"""Largest request body accepted, in bytes (an answer with full texts takes under 20 KB)."""


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
            await error("The request is too large.", status)(scope, receive, send)
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
            busy = page("web_busy.html", 503, retry=BUSY_RETRY)
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
