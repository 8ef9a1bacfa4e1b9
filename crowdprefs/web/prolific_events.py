"""``POST /prolific/events``: Prolific's events (webhooks) about the project's study.

Prolific posts an event to each subscribed address (``crowdprefs prolific publish`` subscribes
``[web] base_url`` to :data:`~crowdprefs.crowds.prolific.study.HOOK_EVENTS`) when a study's
status or progress changes, and when a submission's status does. Following Prolific's
documentation (API reference, *Webhooks*: Verifying, Idempotency and the X-Event-ID header,
Handling event order with X-Timestamp, Receiving):

- **signature**: ``X-Prolific-Request-Signature`` is the base64 of the HMAC-SHA256, keyed by the
  workspace's secret (``POST /api/v1/hooks/secrets/``; one at a time per workspace), of
  ``X-Prolific-Request-Timestamp`` (UNIX seconds when the request was sent) followed by the
  body. Prolific's own example signs ``json.dumps(body)`` of the parsed body, so the raw body is
  tried first, then that serialisation; both compared with :func:`hmac.compare_digest`. The
  secret comes from :data:`~crowdprefs.crowds.prolific.client.HOOK_SECRET_ENV` only;
- **staleness**: a request timestamp more than :data:`MAX_AGE` seconds away from now is refused
  (a replayed request);
- **once**: ``X-Event-ID`` is the same across Prolific's re-deliveries (at least once): each id is
  stored, and applied once;
- **order**: ``X-Timestamp`` (UNIX time) orders the events, which Prolific does not deliver in
  order: an event older than one applied to the same resource is stored, not applied, so a status
  never moves back;
- **body**: ``event_type``, ``resource_id`` (the study or submission), ``status``, and for a
  submission its ``participant_id``.

An unsigned, wrongly signed or stale request is refused (401, or 400 when stale) in one log
line; without the secret set, every event is refused (503: Prolific delivers it again later).
Refusals are not free for whoever posts them (:class:`Refusals`): beyond
:attr:`Refusals.per_address` refusals from one address, or :attr:`Refusals.total` from all,
within :attr:`Refusals.window` seconds, a refused request gets 429 (the address over its share
before its body is read) and no line of its own; one line per window then sums them up, so
anyone posting unsigned events writes a bounded log. A correctly signed event from an address
within its share is always verified and applied.
An accepted event is stored and applied in one transaction
(:meth:`~crowdprefs.crowds.prolific.store.ProlificStore.record_prolific_event`): a
participant who returned the study or timed out gives their questions back at once. Then, when
the server reaches Prolific and moves the campaign on by itself, a participant who left moves
the campaign on after the answer is sent: the study's places follow, and its submissions are
polled (the reconciliation of events lost, or posted while the server was down, which every
poll of the study also does).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import logging
import os
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse

from crowdprefs.crowds.prolific.client import HOOK_SECRET_ENV
from crowdprefs.crowds.prolific.store import LEFT, SUBMISSION_STATUS, ProlificEvent
from crowdprefs.web.advancing import move_on
from crowdprefs.web.clock import stamp
from crowdprefs.web.http import store_call

log = logging.getLogger("crowdprefs.web")

MAX_AGE = 300.0
"""Seconds an event's request timestamp may be away from now (Prolific's retries are new
requests, signed when sent)."""
ID = re.compile(r"[\w.: -]{1,128}", re.ASCII)
"""What an id, an event type or a status of an event may be (a status such as ``AWAITING
REVIEW`` has a space; nothing has a line break or another control character)."""


class Refused(Exception):
    """An event refused: HTTP ``status`` and the reason, for the log line."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


@dataclass
class Refusals:
    """The refused events of one server process, counted per client address and in all over
    fixed windows of ``window`` seconds (the first starts at the first refusal). The first
    ``per_address`` refusals of an address, up to ``total`` of all, are logged one by one; the
    others are *quiet*: answered 429 until the window ends, counted, and summed up in one line
    when it does (:meth:`flush`), per address past its share, else as "other addresses".
    Addresses are remembered up to ``total`` per window (further ones are within their share),
    so a flood from many addresses holds little memory."""

    per_address: int = 10
    total: int = 100
    window: float = 60.0
    clock: Callable[[], float] = time.monotonic
    started: float | None = None
    logged: int = 0
    """Refusals logged one by one in the window."""
    counts: Counter[str] = field(default_factory=Counter)
    """Refusals per address in the window."""
    quiet: Counter[tuple[str, str]] = field(default_factory=Counter)
    """Quiet refusals in the window per (address, reason)."""
    scheduled: bool = False

    OTHERS = ""
    """The address quiet refusals of addresses not remembered are counted under."""

    def left(self) -> float:
        """Seconds until the window ends (0 without a window)."""
        return 0.0 if self.started is None else max(self.started + self.window - self.clock(), 0)

    def wait(self, address: str) -> float:
        """Seconds ``address`` must wait before its events are read again (0: now): it was
        refused ``per_address`` times in this window."""
        self.flush()
        return self.left() if self.counts[address] >= self.per_address else 0.0

    def refuse(self, address: str, reason: str) -> bool:
        """Count a refusal of ``address`` for ``reason``; whether it is logged one by one
        (else it is quiet: 429, summed up when the window ends)."""
        self.flush()
        if self.started is None:
            self.started = self.clock()
        if address in self.counts or len(self.counts) < self.total:
            self.counts[address] += 1
        within = self.counts[address] <= self.per_address
        if within and self.logged < self.total:
            self.logged += 1
            return True
        self.quiet[self.OTHERS if within else address, reason.split(":", 1)[0]] += 1
        return False

    def summary(self) -> str | None:
        """The line summing up the window's quiet refusals (``None``: there were none): the
        three addresses with most, with their reasons, and the rest together."""
        if not self.quiet:
            return None
        by_address: dict[str, Counter[str]] = {}
        for (address, reason), count in self.quiet.items():
            by_address.setdefault(address, Counter())[reason] += count
        named = sorted(
            (a for a in by_address if a != self.OTHERS), key=lambda a: -by_address[a].total()
        )
        rest = Counter[str]()
        for address in [*named[3:], self.OTHERS]:
            rest.update(by_address.get(address, Counter()))
        others = len(named[3:]) + (self.OTHERS in by_address)

        def reasons(counter: Counter[str]) -> str:
            return ", ".join(f"{n} {reason}" for reason, n in counter.most_common())

        parts = [f"{by_address[a].total()} from {a} ({reasons(by_address[a])})" for a in named[:3]]
        if rest:
            more = "other addresses" if self.OTHERS in by_address else f"{others} other addresses"
            parts.append(f"{rest.total()} from {more} ({reasons(rest)})")
        return (
            f"Prolific events refused in {self.window:.0f} s and not logged one by one: "
            + "; ".join(parts)
        )

    def flush(self, force: bool = False) -> None:
        """When the window has ended (or with ``force``): log its summary, start afresh."""
        if self.started is None or (not force and self.left() > 0):
            return
        line = self.summary()
        if line is not None:
            log.warning("%s", line)
        self.started, self.logged, self.scheduled = None, 0, False
        self.counts.clear()
        self.quiet.clear()

    def schedule(self) -> None:
        """Have this window's summary logged when it ends, though no refusal comes after."""
        if not self.scheduled:
            self.scheduled = True
            asyncio.get_running_loop().call_later(self.left() + 0.01, self.flush)


def signature(secret: str, timestamp: str, body: bytes) -> bytes:
    """Prolific's signature: base64 of the HMAC-SHA256 of ``timestamp`` then ``body``."""
    digest = hmac.new(secret.encode(), timestamp.encode() + body, hashlib.sha256).digest()
    return base64.b64encode(digest)


def check_signature(secret: str, timestamp: str, body: bytes, given: str) -> bool:
    """Whether ``given`` signs the raw ``body``, or its ``json.dumps`` as Prolific's example
    signs it; constant-time comparisons."""
    sent = given.strip().encode()
    if hmac.compare_digest(signature(secret, timestamp, body), sent):
        return True
    try:
        again = json.dumps(json.loads(body)).encode()
    except ValueError:
        return False
    return again != body and hmac.compare_digest(signature(secret, timestamp, again), sent)


def _seconds(value: str, what: str) -> float:
    """A UNIX time header (seconds; milliseconds are recognised by their size)."""
    try:
        seconds = float(value)
    except ValueError:
        raise Refused(400, f"{what} is not a UNIX time") from None
    if seconds != seconds or seconds in (float("inf"), float("-inf")):
        raise Refused(400, f"{what} is not a UNIX time")
    return seconds / 1000 if seconds > 1e11 else seconds


def verify(headers: Any, body: bytes, secret: str, at: float) -> float:
    """Check the request's signature and age at UNIX time ``at``; its timestamp (seconds)."""
    given = headers.get("x-prolific-request-signature")
    stamp = headers.get("x-prolific-request-timestamp")
    if not given or not stamp:
        raise Refused(401, "unsigned")
    if not check_signature(secret, stamp, body, given):
        raise Refused(401, "bad signature")
    sent = _seconds(stamp, "the request timestamp")
    if abs(at - sent) > MAX_AGE:
        when = f"{at - sent:.0f} s ago" if at >= sent else f"{sent - at:.0f} s in the future"
        raise Refused(400, f"stale: signed {when} (clocks may differ by at most {MAX_AGE:.0f} s)")
    return sent


def _text(payload: dict, name: str) -> str | None:
    """A field of the body that names something (an id, a type, a status): :data:`ID`, so what
    the log line repeats of it cannot forge a line."""
    value = payload.get(name)
    if value is None:
        return None
    if not isinstance(value, str) or not ID.fullmatch(value):
        raise Refused(400, f"{name} is not an id")
    return value


def parse(headers: Any, body: bytes, sent: float) -> ProlificEvent:
    """The event of a verified request: its id (``X-Event-ID``; else the digest of the signed
    request), its time (``X-Timestamp``; else when it was sent) and the body's fields."""
    try:
        payload = json.loads(body)
    except ValueError:
        raise Refused(400, "the body is not JSON") from None
    if not isinstance(payload, dict):
        raise Refused(400, "the body is not a JSON object")
    event_type, resource = _text(payload, "event_type"), _text(payload, "resource_id")
    if event_type is None or resource is None:
        raise Refused(400, "no event_type or resource_id")
    event_id = headers.get("x-event-id", "").strip()
    if event_id and not ID.fullmatch(event_id):
        raise Refused(400, "X-Event-ID is not an id")
    if not event_id:
        stamp = headers.get("x-prolific-request-timestamp", "")
        event_id = "sha256:" + hashlib.sha256(stamp.encode() + body).hexdigest()
    stamp = headers.get("x-timestamp")
    return ProlificEvent(
        event_id=event_id,
        event_type=event_type,
        resource_id=resource,
        status=_text(payload, "status"),
        participant_id=_text(payload, "participant_id"),
        event_at=_seconds(stamp, "X-Timestamp") if stamp else sent,
    )


def _moves_on(request: Request, event: ProlificEvent, outcome: str) -> bool:
    """Whether the campaign is moved on after this event: the server reaches Prolific and moves
    the campaign by itself, and a participant newly left (the study's places follow)."""
    state = request.app.state
    if state.prolific is None or not state.settings.advance or outcome != "applied":
        return False
    return event.event_type == SUBMISSION_STATUS and event.status in LEFT


async def prolific_event(request: Request) -> JSONResponse:
    """Take one event from Prolific (see the module): 200 with what became of it, else a 4xx
    (or 503 without the secret) and one log line."""
    address = request.client.host if request.client else "unknown"
    refusals: Refusals = request.app.state.refusals
    secret = os.environ.get(HOOK_SECRET_ENV, "")
    try:
        if refusals.wait(address) > 0:
            raise Refused(429, "too many refused events")
        body = await request.body()
        if not secret:
            raise Refused(503, f"{HOOK_SECRET_ENV} is not set")
        sent = verify(request.headers, body, secret, time.time())
        event = parse(request.headers, body, sent)
    except Refused as refused:
        if refusals.refuse(address, str(refused)):
            log.warning("Prolific event refused from %s: %s", address, refused)
            return JSONResponse({"error": str(refused)}, status_code=refused.status)
        refusals.schedule()
        wait = f"{max(refusals.left(), 1):.0f}"
        return JSONResponse(
            {"error": f"too many refused events: try again in {wait} s"},
            status_code=429,
            headers={"Retry-After": wait},
        )
    store, at = request.app.state.project.store, stamp(request.app.state.clock())
    result = await store_call(request.app, store.record_prolific_event, event, at)
    log.info(
        "Prolific event %s %s %s: %s%s",
        event.event_type,
        event.resource_id,
        event.status or "",
        result.outcome,
        f", {result.released} questions back to the pool" if result.released else "",
    )
    moves_on = _moves_on(request, event, result.outcome)
    task = BackgroundTask(move_on, request.app) if moves_on else None
    return JSONResponse({"event": result.outcome, "released": result.released}, background=task)
