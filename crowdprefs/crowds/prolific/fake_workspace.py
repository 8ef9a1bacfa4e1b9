"""The fake Prolific's workspace and people, mixins of
:class:`~crowdprefs.crowds.prolific.fake.FakeProlific` over its state (``conn``, ``lock``, its
studies and submissions), with what the fake's modules share: Prolific's error body, its ids,
times and event signature.

:class:`FakeEvents`        the workspace's secret, event subscriptions (confirmed with the
                           ``X-Hook-Secret`` they were answered) and the signed events queued in
                           the outbox for the caller to deliver.
:class:`FakeParticipants`  test participants and test studies, and the participants the caller
                           plays: taking a place, completing, returning.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import sqlite3
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

from crowdprefs.crowds.prolific.study import COMPLETE_URL, not_public

COMPLETE_HOST = urlsplit(COMPLETE_URL).netloc
HOLDS_PLACE = ("RESERVED", "ACTIVE", "AWAITING REVIEW", "APPROVED")
TAKING_PART = ("RESERVED", "ACTIVE")
STUDY_REQUIRED = {
    "name": str,
    "description": str,
    "external_study_url": str,
    "prolific_id_option": str,
    "completion_codes": list,
    "total_available_places": int,
    "estimated_completion_time": int,
    "reward": int,
}
STUDY_OPTIONAL = {
    "internal_name": str,
    "maximum_allowed_time": int,
    "device_compatibility": list,
    "peripheral_requirements": list,
    "filters": list,
    "submissions_config": dict,
}
EVENT_TYPES = ("study.status.change", "study.progress.change", "submission.status.change")


def sign(secret: str, timestamp: str, body: str) -> str:
    """Prolific's signature of an event: HMAC-SHA256 of the timestamp then the body, keyed by
    the workspace's secret, base64-encoded."""
    digest = hmac.new(secret.encode(), (timestamp + body).encode(), hashlib.sha256).digest()
    return base64.b64encode(digest).decode()


class ProlificError(Exception):
    """A refusal, answered with ``status`` and Prolific's error body."""

    def __init__(self, status: int, detail: Any, title: str | None = None) -> None:
        super().__init__(str(detail))
        self.status, self.detail = status, detail
        self.title = title or {
            400: "Bad Request",
            401: "Unauthorized",
            404: "Not Found",
            405: "Method Not Allowed",
        }.get(status, "Error")

    def body(self) -> dict:
        code = self.status * 1000 + 1
        return {
            "error": {
                "status": self.status,
                "error_code": code,
                "title": self.title,
                "detail": self.detail,
                "additional_information": f"/api/v1/errors/{code}",
            }
        }


def now_text() -> str:
    """The time now as Prolific writes it (ISO 8601, UTC, milliseconds, ``Z``)."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id() -> str:
    """An id shaped like Prolific's (24 hexadecimal digits)."""
    return secrets.token_hex(12)


def check_types(body: dict, required: dict, optional: dict) -> None:
    """Refuse a body missing a required field, with a field of the wrong type or an unknown
    field, as Prolific does (400, the errors by field)."""
    errors: dict[str, list[str]] = {}
    for name, kind in {**required, **optional}.items():
        if name not in body:
            if name in required:
                errors[name] = ["This field is required."]
            continue
        value = body[name]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            errors[name] = [f"Expected {kind.__name__}."]
    unknown = sorted(set(body) - set(required) - set(optional))
    for name in unknown:
        errors[name] = ["Unknown field."]
    if errors:
        raise ProlificError(400, errors)


class FakeEvents:
    """The workspace's events: its secret, subscriptions and the signed events it queues."""

    @property
    def workspace_id(self) -> str:
        return self._workspace("id")

    @property
    def secret(self) -> str:
        """The workspace's current secret, which signs its events."""
        return self._workspace("secret")

    def _workspace(self, key: str) -> str:
        query = "SELECT value FROM workspace WHERE key = ?"
        return self.conn.execute(query, (key,)).fetchone()[0]

    def hooks(self) -> list[dict]:
        rows = self.conn.execute("SELECT data FROM hooks ORDER BY rowid")
        return [json.loads(r[0]) for r in rows]

    def signed(
        self,
        payload: dict,
        *,
        event_id: str | None = None,
        event_at: float | None = None,
        sent_at: float | None = None,
        secret: str | None = None,
    ) -> tuple[dict[str, str], bytes]:
        """An event as Prolific posts it: ``(headers, body)`` with its ``X-Event-ID``,
        ``X-Timestamp`` (when it happened) and the signature headers (when it is sent: now
        unless given), signed with the workspace's secret (or ``secret``)."""
        sent = str(int(time.time() if sent_at is None else sent_at))
        body = json.dumps(payload)
        headers = {
            "Content-Type": "application/json",
            "X-Event-ID": event_id or new_id(),
            "X-Timestamp": f"{time.time() if event_at is None else event_at:.3f}",
            "X-Prolific-Request-Timestamp": sent,
            "X-Prolific-Request-Signature": sign(secret or self.secret, sent, body),
        }
        return headers, body.encode()

    def _emit(self, event_type: str, payload: dict) -> None:
        """Queue the event for every enabled subscription to its type."""
        for hook in self.hooks():
            if hook["event_type"] != event_type or not hook["is_enabled"]:
                continue
            headers, body = self.signed({**payload, "event_type": event_type})
            self.conn.execute(
                "INSERT INTO outbox (event_id, target_url, headers, body) VALUES (?, ?, ?, ?)",
                (headers["X-Event-ID"], hook["target_url"], json.dumps(headers), body.decode()),
            )

    def _submission_changed(self, submission: dict) -> None:
        self._emit(
            "submission.status.change",
            {
                "resource_id": submission["id"],
                "participant_id": submission["participant_id"],
                "status": submission["status"],
            },
        )
        self._emit("study.progress.change", {"resource_id": submission["study_id"]})

    def outbox(self, after: int = 0) -> list[tuple[int, str, dict[str, str], bytes]]:
        """The events queued after number ``after``, in order: ``(number, target_url, headers,
        body)``; delivering them is the caller's (Prolific delivers at least once, in no
        guaranteed order)."""
        rows = self.conn.execute(
            "SELECT seq, target_url, headers, body FROM outbox WHERE seq > ? ORDER BY seq",
            (after,),
        )
        return [(n, url, json.loads(h), b.encode()) for n, url, h, b in rows]

    def _list_workspaces(self, body: dict, query: dict) -> tuple[int, dict]:
        return 200, {"results": [{"id": self.workspace_id, "title": "crowdprefs fake"}]}

    def _check_workspace(self, body: dict) -> None:
        if body.get("workspace_id", self.workspace_id) != self.workspace_id:
            raise ProlificError(404, "Workspace not found.")

    def _create_secret(self, body: dict, query: dict) -> tuple[int, dict]:
        self._check_workspace(body)
        value = secrets.token_urlsafe(32)
        self.conn.execute("UPDATE workspace SET value = ? WHERE key = 'secret'", (value,))
        return 201, {"id": new_id(), "value": value, "workspace_id": self.workspace_id}

    def _list_hooks(self, body: dict, query: dict) -> tuple[int, dict]:
        self._check_workspace(query)
        hooks = [{k: v for k, v in h.items() if k != "secret"} for h in self.hooks()]
        return 200, {"results": hooks}

    def _create_hook(self, body: dict, query: dict) -> tuple[int, dict, dict[str, str]]:
        check_types(body, {"workspace_id": str, "event_type": str, "target_url": str}, {})
        self._check_workspace(body)
        if body["event_type"] not in EVENT_TYPES:
            raise ProlificError(400, {"event_type": ["Not an event type this fake knows."]})
        why = not_public(body["target_url"])
        if why:
            raise ProlificError(
                400, {"target_url": [f"The target URL must be public https; it {why}."]}
            )
        hook = {
            "id": new_id(),
            "event_type": body["event_type"],
            "target_url": body["target_url"],
            "workspace_id": self.workspace_id,
            "is_enabled": False,
            "secret": secrets.token_hex(16),
        }
        self.conn.execute("INSERT INTO hooks VALUES (?, ?)", (hook["id"], json.dumps(hook)))
        _, listed = self._list_hooks({}, {})
        return 201, listed, {"X-Hook-Secret": hook["secret"]}

    def _confirm_hook(self, body: dict, query: dict, id: str) -> tuple[int, dict]:  # noqa: A002
        row = self.conn.execute("SELECT data FROM hooks WHERE hook_id = ?", (id,)).fetchone()
        if row is None:
            raise ProlificError(404, "Subscription not found.")
        hook = json.loads(row[0])
        if body.get("secret") != hook["secret"]:
            raise ProlificError(400, {"secret": ["This is not the subscription's secret."]})
        hook["is_enabled"] = True
        self.conn.execute("UPDATE hooks SET data = ? WHERE hook_id = ?", (json.dumps(hook), id))
        return 200, {k: v for k, v in hook.items() if k != "secret"}


class FakeParticipants:
    """Test runs (test participants, test studies) and the participants the caller plays."""

    def _need_test_studies(self) -> None:
        if not self.test_studies:
            raise ProlificError(
                403,
                "Test studies are not enabled for this workspace; ask Prolific's support.",
                "Forbidden",
            )

    def testers(self) -> list[str]:
        return [r[0] for r in self.conn.execute("SELECT participant_id FROM testers ORDER BY 1")]

    def _add_tester(self, body: dict, query: dict) -> tuple[int, dict]:
        self._need_test_studies()
        check_types(body, {"email": str}, {})
        if not re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", body["email"]):
            raise ProlificError(400, {"email": ["Enter a valid email address."]})
        participant = new_id()
        try:
            self.conn.execute("INSERT INTO testers VALUES (?, ?)", (participant, body["email"]))
        except sqlite3.IntegrityError:
            raise ProlificError(400, {"email": ["This email is registered already."]}) from None
        return 201, {"participant_id": participant}

    def _test_study(self, body: dict, query: dict, id: str) -> tuple[int, dict]:  # noqa: A002
        self._need_test_studies()
        draft = self.study(id)
        if draft["status"] != "UNPUBLISHED":
            raise ProlificError(400, "A test study is made from a draft study.")
        testers = self.testers()
        if not testers:
            raise ProlificError(400, "Create a test participant first.")
        study = {k: v for k, v in draft.items() if k in STUDY_REQUIRED or k in STUDY_OPTIONAL}
        study.update(
            id=new_id(),
            status="ACTIVE",
            date_created=now_text(),
            published_at=now_text(),
            currency_code=self.currency,
            is_test=True,
            total_available_places=max(draft["total_available_places"], len(testers)),
            filters=[{"filter_id": "custom_allowlist", "selected_values": testers}],
        )
        self._save_study(study)
        return 200, {"study_id": study["id"], "study_url": f"{self.url}/studies/{study['id']}"}

    def take_place(self, study_id: str, participant_id: str) -> tuple[str, str]:
        """A participant starts the study: ``(submission_id, study URL)`` with the
        participant, study and session filled in. :class:`ProlificError` when the study is not
        recruiting, is full, excludes the participant or was already taken by them."""
        with self.lock:
            study = self.study(study_id)
            if study["status"] != "ACTIVE":
                raise ProlificError(400, f"The study is {study['status']}, not recruiting.")
            if study["places_taken"] >= study["total_available_places"]:
                raise ProlificError(400, "The study has no free place.")
            lists = {f["filter_id"]: set(f["selected_values"]) for f in study["filters"]}
            if participant_id in lists.get("custom_blocklist", set()) or (
                "custom_allowlist" in lists and participant_id not in lists["custom_allowlist"]
            ):
                raise ProlificError(400, "The study's filters exclude this participant.")
            submission = {
                "id": new_id(),
                "study_id": study_id,
                "participant_id": participant_id,
                "status": "ACTIVE",
                "started_at": now_text(),
                "completed_at": None,
                "study_code": None,
                "bonus_payments": [],
            }
            seq = self.conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM submissions")
            try:
                self.conn.execute(
                    "INSERT INTO submissions VALUES (?, ?, ?, ?, ?)",
                    (
                        submission["id"],
                        study_id,
                        participant_id,
                        seq.fetchone()[0],
                        json.dumps(submission),
                    ),
                )
            except sqlite3.IntegrityError:
                raise ProlificError(400, "The participant already took this study.") from None
            self._submission_changed(submission)
            url = study["external_study_url"]
            for name, value in (
                ("PROLIFIC_PID", participant_id),
                ("STUDY_ID", study_id),
                ("SESSION_ID", submission["id"]),
            ):
                url = url.replace("{{%" + name + "%}}", value)
            return submission["id"], url

    def complete(self, submission_id: str, redirect: str) -> dict:
        """The participant follows the completion redirect ``redirect``; it must be Prolific's
        completion address (``https://app.prolific.com/submissions/complete?cc=CODE``). The
        submission then awaits review with the code given."""
        split = urlsplit(redirect)
        if (split.scheme, split.netloc, split.path) != (
            "https",
            COMPLETE_HOST,
            "/submissions/complete",
        ):
            raise ProlificError(400, f"{redirect} is not Prolific's completion address.")
        code = parse_qs(split.query).get("cc", [""])[-1]
        with self.lock:
            submission = self.submission(submission_id)
            if submission["status"] not in TAKING_PART:
                raise ProlificError(400, f"The submission is {submission['status']}.")
            submission.update(
                status="AWAITING REVIEW", completed_at=now_text(), study_code=code or "NOCODE"
            )
            self._save_submission(submission)
            self._settle(submission["study_id"])
            return submission

    def return_submission(self, submission_id: str, status: str = "RETURNED") -> None:
        """The participant returns the study (or, with ``status="TIMED-OUT"``, runs out of
        time): their place frees up."""
        if status not in ("RETURNED", "TIMED-OUT"):
            raise ValueError(f"a submission is returned or timed out, not {status}")
        with self.lock:
            submission = self.submission(submission_id)
            if submission["status"] not in TAKING_PART:
                raise ProlificError(400, f"The submission is {submission['status']}.")
            submission["status"] = status
            self._save_submission(submission)
            self._settle(submission["study_id"])
