"""A local fake of Prolific's REST API, for tests and for trying the Prolific commands offline.

A loopback HTTP server (``127.0.0.1`` only) answering the calls of
:class:`~crowdprefs.crowds.prolific.client.ProlificClient` the way Prolific documents them, and
refusing what Prolific refuses, with Prolific's error body (``{"error": {"status", "error_code",
"title", "detail", "additional_information"}}``; the numeric codes are the fake's own):

- a request without the workspace's token (``Authorization: Token …``) → 401; an unknown path or
  method → 404 / 405; a body that is not a JSON object → 400;
- a study with a missing or mistyped field, a field Prolific does not know, no completion code,
  a URL without ``{{%PROLIFIC_PID%}}`` while the ID comes by URL parameters, or a reward below
  Prolific's minimum hourly rate for the workspace's currency (£6.00 / $8.00 per hour) → 400;
- once published: places only go up, the allow and block lists (``custom_allowlist``,
  ``custom_blocklist`` filters) and every other field are frozen; publishing twice, or with too
  little balance for places × reward plus fees → 400;
- a rejection without a message of at least 100 characters or a known rejection category, an
  approval or rejection of a submission that is not awaiting review (a repeated one is ignored,
  as Prolific does) → 400; a bonus for someone without a submission in the study, an amount
  that is not a positive sum of whole pence/cents, or paying a bonus twice → 400.

Events (webhooks) are modelled as Prolific documents them: the workspace's secret (``POST
/api/v1/hooks/secrets/``, one at a time; the fake starts with one, :attr:`FakeProlific.secret`),
subscriptions to a public ``https://`` target only (``POST /api/v1/hooks/subscriptions/``
answers the ``X-Hook-Secret`` header, then ``POST …/subscriptions/{id}/`` with it confirms), and
test runs (``POST /api/v1/researchers/participants/`` makes a test participant; ``POST
/api/v1/studies/{id}/test-study`` copies a draft into a test study published to them at no cost,
refused without ``test_studies``). Each status change of a study or a submission, with a
subscription to its type, queues an event signed as Prolific signs them
(:meth:`FakeProlific.outbox`): the caller delivers them, or loses or repeats some.

A study becomes ``AWAITING REVIEW`` when its places are all taken and nobody is still taking
part, and ``ACTIVE`` again when places are added (or a rejected or returned submission frees
one). Participants are played by the caller: :meth:`FakeProlific.take_place` gives the study URL
with ``{{%PROLIFIC_PID%}}``, ``{{%STUDY_ID%}}`` and ``{{%SESSION_ID%}}`` filled in, and
:meth:`FakeProlific.complete` follows the completion redirect to ``app.prolific.com``. The state
is kept in SQLite (a file, so it outlives a command, or memory). ``fault_rate`` answers some
calls with throttling or a server fault, half of them after the call took effect (the reply is
lost). The events and the participants are :class:`FakeProlific`'s mixins in
:mod:`crowdprefs.crowds.prolific.fake_workspace`.
"""

from __future__ import annotations

import functools
import json
import random
import re
import secrets
import sqlite3
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

from crowdprefs.crowds.fake_state import open_state
from crowdprefs.crowds.prolific.fake_workspace import (
    HOLDS_PLACE,
    STUDY_OPTIONAL,
    STUDY_REQUIRED,
    TAKING_PART,
    FakeEvents,
    FakeParticipants,
    ProlificError,
    check_types,
    new_id,
    now_text,
    sign,
)
from crowdprefs.crowds.prolific.study import MIN_HOURLY, REJECTION_CATEGORIES

__all__ = ["FakeProlific", "ProlificError", "sign", "start_for_project"]

LIST_FILTERS = ("custom_allowlist", "custom_blocklist")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS studies (study_id TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS submissions (
    submission_id TEXT PRIMARY KEY, study_id TEXT NOT NULL, participant_id TEXT NOT NULL,
    seq INTEGER NOT NULL, data TEXT NOT NULL, UNIQUE (study_id, participant_id)
);
CREATE TABLE IF NOT EXISTS bonuses (bonus_id TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS account (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS calls (name TEXT PRIMARY KEY, n INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS workspace (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS hooks (hook_id TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS testers (participant_id TEXT PRIMARY KEY, email TEXT UNIQUE NOT NULL);
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL, target_url TEXT NOT NULL,
    headers TEXT NOT NULL, body TEXT NOT NULL
);
"""


class FakeProlific(FakeEvents, FakeParticipants):
    """The fake's state and operations; :meth:`start` serves them on ``127.0.0.1``."""

    def __init__(
        self,
        state: Path | str = ":memory:",
        *,
        token: str,
        currency: str = "GBP",
        balance: int = 10_000_000,
        fee_rate: float = 1 / 3,
        fault_rate: float = 0.0,
        seed: int = 0,
        test_studies: bool = True,
    ) -> None:
        if currency not in MIN_HOURLY:
            raise ValueError(f"currency must be one of {', '.join(MIN_HOURLY)}")
        self.token = token
        self.currency = currency
        self.fee_rate = fee_rate
        self.fault_rate = fault_rate
        self.random = random.Random(seed)
        self.state = str(state)
        self.initial_balance = balance
        self.test_studies = test_studies
        self.lock = threading.RLock()
        self.server: ThreadingHTTPServer | None = None
        self.url = ""

    @functools.cached_property
    def conn(self) -> sqlite3.Connection:
        """The fake's store, opened (and its file made) when first used: a command refused
        before it reaches Prolific leaves no ``prolific-fake.sqlite`` behind."""
        with self.lock:
            if "conn" in self.__dict__:  # another thread opened it meanwhile
                return self.__dict__["conn"]
            conn = open_state(self.state, _SCHEMA)
            conn.execute(
                "INSERT OR IGNORE INTO account VALUES ('balance', ?)", (self.initial_balance,)
            )
            for key, value in (("id", new_id()), ("secret", secrets.token_urlsafe(32))):
                conn.execute("INSERT OR IGNORE INTO workspace VALUES (?, ?)", (key, value))
            self.__dict__["conn"] = conn
            return conn

    # --- serving ----------------------------------------------------------------------------

    def start(self) -> str:
        """Serve on a free loopback port in a daemon thread; return the base URL."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                status, body, headers = fake.dispatch(
                    self.command, self.path, self.headers.get("Authorization", ""), raw
                )
                data = b"" if body is None else json.dumps(body).encode("utf-8")
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _answer  # noqa: N815

            def log_message(self, *args: object) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address) -> None:
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self.server = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        host, port = self.server.server_address[:2]
        self.url = f"http://{host}:{port}"
        return self.url

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def close(self) -> None:
        self.stop()
        if "conn" in self.__dict__:
            self.conn.close()

    _ROUTES = (
        ("POST", re.compile(r"^/api/v1/studies/?$"), "create_study"),
        ("GET", re.compile(r"^/api/v1/studies/(?P<id>\w+)/?$"), "get_study"),
        ("PATCH", re.compile(r"^/api/v1/studies/(?P<id>\w+)/?$"), "update_study"),
        ("POST", re.compile(r"^/api/v1/studies/(?P<id>\w+)/transition/?$"), "transition_study"),
        ("GET", re.compile(r"^/api/v1/submissions/?$"), "list_submissions"),
        ("POST", re.compile(r"^/api/v1/submissions/bulk-approve/?$"), "bulk_approve"),
        ("POST", re.compile(r"^/api/v1/submissions/bonus-payments/?$"), "set_up_bonuses"),
        (
            "POST",
            re.compile(r"^/api/v1/submissions/(?P<id>\w+)/transition/?$"),
            "transition_submission",
        ),
        ("POST", re.compile(r"^/api/v1/bulk-bonus-payments/(?P<id>\w+)/pay/?$"), "pay_bonuses"),
        ("POST", re.compile(r"^/api/v1/studies/(?P<id>\w+)/test-study/?$"), "test_study"),
        ("POST", re.compile(r"^/api/v1/researchers/participants/?$"), "add_tester"),
        ("GET", re.compile(r"^/api/v1/workspaces/?$"), "list_workspaces"),
        ("POST", re.compile(r"^/api/v1/hooks/secrets/?$"), "create_secret"),
        ("GET", re.compile(r"^/api/v1/hooks/subscriptions/?$"), "list_hooks"),
        ("POST", re.compile(r"^/api/v1/hooks/subscriptions/?$"), "create_hook"),
        ("POST", re.compile(r"^/api/v1/hooks/subscriptions/(?P<id>\w+)/?$"), "confirm_hook"),
    )

    def dispatch(
        self, method: str, target: str, authorization: str, raw: bytes
    ) -> tuple[int, dict | None, dict[str, str]]:
        """Check and run one request; return the HTTP status, the JSON body and headers."""
        try:
            if authorization != f"Token {self.token}":
                detail = "Invalid token." if authorization else "No credentials were provided."
                raise ProlificError(401, detail)
            split = urlsplit(target)
            query = {k: v[-1] for k, v in parse_qs(split.query).items()}
            found = [(m, r.match(split.path), name) for m, r, name in self._ROUTES]
            matching = [(m, match, name) for m, match, name in found if match]
            if not matching:
                raise ProlificError(404, f"No route for {split.path}")
            chosen = [(match, name) for m, match, name in matching if m == method]
            if not chosen:
                raise ProlificError(405, f'Method "{method}" not allowed.')
            match, name = chosen[0]
            body: dict = {}
            if method in ("POST", "PATCH"):
                try:
                    body = json.loads(raw or b"null")
                except ValueError:
                    raise ProlificError(400, "JSON parse error") from None
                if not isinstance(body, dict):
                    raise ProlificError(400, "Expected a JSON object.")
            fault = self.random.random() < self.fault_rate
            after = fault and self.random.random() < 0.5
            if fault and not after:
                return self._fault()
            with self.lock:
                self.conn.execute("BEGIN IMMEDIATE")
                try:
                    status, result, *more = getattr(self, f"_{name}")(
                        body, query, **match.groupdict()
                    )
                except BaseException:
                    self.conn.execute("ROLLBACK")
                    raise
                self.conn.execute(
                    "INSERT INTO calls VALUES (?, 1) ON CONFLICT(name) DO UPDATE SET n = n + 1",
                    (name,),
                )
                self.conn.execute("COMMIT")
            return self._fault() if after else (status, result, more[0] if more else {})
        except ProlificError as error:
            return error.status, error.body(), {}

    def _fault(self) -> tuple[int, dict, dict[str, str]]:
        if self.random.random() < 0.5:
            return (
                429,
                ProlificError(429, "Request was throttled.", "Too Many Requests").body(),
                {},
            )
        return 503, ProlificError(503, "Service unavailable.", "Service Unavailable").body(), {}

    # --- state helpers ----------------------------------------------------------------------

    def calls(self) -> dict[str, int]:
        """How many times each operation took effect."""
        return dict(self.conn.execute("SELECT name, n FROM calls").fetchall())

    @property
    def balance(self) -> int:
        return self.conn.execute("SELECT value FROM account WHERE key = 'balance'").fetchone()[0]

    def _spend(self, amount: float, what: str) -> None:
        cost = round(amount * (1 + self.fee_rate))
        if cost > self.balance:
            raise ProlificError(
                400,
                f"Insufficient balance to {what}: it costs {cost} and the workspace holds "
                f"{self.balance} (in {self.currency} minor units).",
            )
        self.conn.execute("UPDATE account SET value = value - ? WHERE key = 'balance'", (cost,))

    def study(self, study_id: str) -> dict:
        row = self.conn.execute(
            "SELECT data FROM studies WHERE study_id = ?", (study_id,)
        ).fetchone()
        if row is None:
            raise ProlificError(404, "Study not found.")
        study = json.loads(row[0])
        return self._counted(study)

    def _counted(self, study: dict) -> dict:
        statuses = [s["status"] for s in self.submissions(study["id"])]
        study["places_taken"] = sum(s in HOLDS_PLACE for s in statuses)
        study["number_of_submissions"] = len(statuses)
        study["total_cost"] = round(
            study["total_available_places"] * study["reward"] * (1 + self.fee_rate)
        )
        return study

    def _save_study(self, study: dict) -> None:
        stored = {k: v for k, v in study.items() if k not in ("places_taken", "total_cost")}
        row = self.conn.execute(
            "SELECT data FROM studies WHERE study_id = ?", (study["id"],)
        ).fetchone()
        if row is not None and json.loads(row[0])["status"] != study["status"]:
            self._emit(
                "study.status.change",
                {"resource_id": study["id"], "status": study["status"], "metadata": {}},
            )
        self.conn.execute(
            "INSERT OR REPLACE INTO studies VALUES (?, ?)", (study["id"], json.dumps(stored))
        )

    def submissions(self, study_id: str) -> list[dict]:
        rows = self.conn.execute(
            "SELECT data FROM submissions WHERE study_id = ? ORDER BY seq", (study_id,)
        )
        return [json.loads(r[0]) for r in rows]

    def submission(self, submission_id: str) -> dict:
        row = self.conn.execute(
            "SELECT data FROM submissions WHERE submission_id = ?", (submission_id,)
        ).fetchone()
        if row is None:
            raise ProlificError(404, "Submission not found.")
        return json.loads(row[0])

    def _save_submission(self, submission: dict) -> None:
        row = self.conn.execute(
            "SELECT data FROM submissions WHERE submission_id = ?", (submission["id"],)
        ).fetchone()
        if row is not None and json.loads(row[0])["status"] != submission["status"]:
            self._submission_changed(submission)
        self.conn.execute(
            "UPDATE submissions SET data = ? WHERE submission_id = ?",
            (json.dumps(submission), submission["id"]),
        )

    def _settle(self, study_id: str) -> None:
        """Prolific's own status moves: a full study with nobody taking part awaits review;
        a study with free places is active again."""
        study = self.study(study_id)
        if study["status"] not in ("ACTIVE", "AWAITING REVIEW"):
            return
        statuses = [s["status"] for s in self.submissions(study_id)]
        busy = any(s in TAKING_PART for s in statuses)
        full = study["places_taken"] >= study["total_available_places"]
        study["status"] = "AWAITING REVIEW" if full and not busy else "ACTIVE"
        self._save_study(study)

    # --- studies ----------------------------------------------------------------------------

    def _validated(self, study: dict) -> dict:
        """Prolific's checks of a whole study (at creation, and of a draft after a change)."""
        check_types(study, STUDY_REQUIRED, STUDY_OPTIONAL)
        errors: dict[str, list[str]] = {}
        url = urlsplit(study["external_study_url"])
        if url.scheme not in ("http", "https") or not url.netloc:
            errors["external_study_url"] = ["Enter a valid URL."]
        option = study["prolific_id_option"]
        if option not in ("question", "url_parameters", "not_required"):
            errors["prolific_id_option"] = [f'"{option}" is not a valid choice.']
        elif option == "url_parameters" and "{{%PROLIFIC_PID%}}" not in url.query:
            errors["external_study_url"] = [
                "The URL must carry {{%PROLIFIC_PID%}} when the participant ID comes by URL "
                "parameters."
            ]
        codes = study["completion_codes"]
        good = [
            c
            for c in codes
            if isinstance(c, dict)
            and isinstance(c.get("code"), str)
            and c["code"].strip()
            and isinstance(c.get("code_type"), str)
            and isinstance(c.get("actions"), list)
        ]
        if not codes or len(good) != len(codes):
            errors["completion_codes"] = ["Give at least one code with code_type and actions."]
        elif len({c["code"] for c in codes}) != len(codes):
            errors["completion_codes"] = ["Each code must be unique within a study."]
        for name in ("total_available_places", "estimated_completion_time", "reward"):
            if study[name] < 1:
                errors[name] = ["Ensure this value is greater than or equal to 1."]
        if "reward" not in errors and "estimated_completion_time" not in errors:
            hourly = study["reward"] * 60 / study["estimated_completion_time"]
            if hourly < MIN_HOURLY[self.currency]:
                errors["reward"] = [
                    f"The reward pays {hourly / 100:.2f} {self.currency} per hour, below the "
                    f"minimum of {MIN_HOURLY[self.currency] / 100:.2f}."
                ]
        devices = study.get("device_compatibility", [])
        if not set(devices) <= {"desktop", "tablet", "mobile"}:
            errors["device_compatibility"] = ["Unknown device."]
        needs = study.get("peripheral_requirements", [])
        if not set(needs) <= {"audio", "camera", "download", "microphone"}:
            errors["peripheral_requirements"] = ["Unknown peripheral."]
        for item in study.get("filters", []):
            if (
                not isinstance(item, dict)
                or item.get("filter_id") not in LIST_FILTERS
                or not isinstance(item.get("selected_values"), list)
                or not all(isinstance(v, str) for v in item["selected_values"])
            ):
                errors["filters"] = [f"Not a filter this fake knows: {item!r}."]
        if errors:
            raise ProlificError(400, errors)
        return study

    def _create_study(self, body: dict, query: dict) -> tuple[int, dict]:
        study = self._validated(dict(body))
        study.update(
            id=new_id(),
            status="UNPUBLISHED",
            date_created=now_text(),
            published_at=None,
            currency_code=self.currency,
        )
        study.setdefault("internal_name", study["name"])
        study.setdefault("filters", [])
        study.setdefault("device_compatibility", ["desktop", "tablet", "mobile"])
        study.setdefault("peripheral_requirements", [])
        self._save_study(study)
        return 201, self.study(study["id"])

    def _get_study(self, body: dict, query: dict, id: str) -> tuple[int, dict]:  # noqa: A002
        return 200, self.study(id)

    def _update_study(self, body: dict, query: dict, id: str) -> tuple[int, dict]:  # noqa: A002
        study = self.study(id)
        if study["status"] == "UNPUBLISHED":
            known = {k: v for k, v in study.items() if k in STUDY_REQUIRED or k in STUDY_OPTIONAL}
            merged = self._validated({**known, **body})
            study.update(merged)
            self._save_study(study)
            return 200, self.study(id)
        if study["status"] == "COMPLETED":
            raise ProlificError(400, "A completed study cannot be changed.")
        errors: dict[str, list[str]] = {}
        if "filters" in body and body["filters"] != study["filters"]:
            errors["filters"] = [
                "Allowlists and blocklists cannot change once a study is published."
            ]
        for name in sorted(set(body) - {"total_available_places", "filters"}):
            errors[name] = ["This field cannot change once the study is published."]
        places = body.get("total_available_places", study["total_available_places"])
        if not isinstance(places, int) or isinstance(places, bool):
            errors["total_available_places"] = ["Expected int."]
        elif places < study["total_available_places"]:
            errors["total_available_places"] = [
                f"Places can only be increased once a study is published (it has "
                f"{study['total_available_places']})."
            ]
        if errors:
            raise ProlificError(400, errors)
        extra = places - study["total_available_places"]
        if extra:
            self._spend(extra * study["reward"], f"add {extra} places")
        study["total_available_places"] = places
        self._save_study(study)
        self._settle(id)
        return 200, self.study(id)

    def _transition_study(self, body: dict, query: dict, id: str) -> tuple[int, dict]:  # noqa: A002
        study = self.study(id)
        action = body.get("action")
        moves = {
            "PUBLISH": ("UNPUBLISHED", "ACTIVE"),
            "PAUSE": ("ACTIVE", "PAUSED"),
            "START": ("PAUSED", "ACTIVE"),
        }
        if action == "STOP":
            if study["status"] in ("UNPUBLISHED", "COMPLETED"):
                raise ProlificError(400, f"A study that is {study['status']} cannot be stopped.")
            study["status"] = "COMPLETED"
        elif action in moves:
            before, after = moves[action]
            if study["status"] != before:
                raise ProlificError(
                    400, f"Cannot {action} a study that is {study['status']}, only {before}."
                )
            if action == "PUBLISH":
                self._spend(study["total_available_places"] * study["reward"], "publish this study")
                study["published_at"] = now_text()
            study["status"] = after
        else:
            raise ProlificError(400, {"action": [f'"{action}" is not a valid choice.']})
        self._save_study(study)
        self._settle(id)
        return 200, self.study(id)

    # --- submissions ------------------------------------------------------------------------

    def _list_submissions(self, body: dict, query: dict) -> tuple[int, dict]:
        if "study" not in query:
            raise ProlificError(400, {"study": ["This query parameter is required."]})
        self.study(query["study"])
        items = self.submissions(query["study"])
        try:
            page, size = int(query.get("page", 1)), int(query.get("page_size", 20))
        except ValueError:
            raise ProlificError(400, "page and page_size must be numbers.") from None
        if page < 1 or not 1 <= size <= 200:
            raise ProlificError(400, "Invalid page.")
        chunk = items[(page - 1) * size : page * size]
        following = None
        if page * size < len(items):
            args = urlencode({"study": query["study"], "page": page + 1, "page_size": size})
            following = f"{self.url}/api/v1/submissions/?{args}"
        return 200, {
            "results": chunk,
            "_links": {"next": {"href": following, "title": "Next"}},
            "meta": {"count": len(items)},
        }

    def _decide(self, submission: dict, action: str) -> bool:
        """Move an awaiting submission to APPROVED or REJECTED; ``False`` when it is already
        there (ignored, as Prolific does)."""
        target = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}[action]
        if submission["status"] == target:
            return False
        if submission["status"] != "AWAITING REVIEW":
            raise ProlificError(
                400,
                f"Submission {submission['id']} is {submission['status']}: only a submission "
                "awaiting review can be approved or rejected.",
            )
        submission["status"] = target
        submission["reviewed_at"] = now_text()
        return True

    def _transition_submission(
        self,
        body: dict,
        query: dict,
        id: str,  # noqa: A002
    ) -> tuple[int, dict]:
        submission = self.submission(id)
        action = body.get("action")
        if action not in ("APPROVE", "REJECT"):
            raise ProlificError(400, {"action": ["The fake knows APPROVE and REJECT."]})
        if action == "REJECT":
            errors: dict[str, list[str]] = {}
            message = body.get("message")
            if not isinstance(message, str) or len(message) < 100:
                errors["message"] = ["Required to reject, at least 100 characters long."]
            if body.get("rejection_category") not in REJECTION_CATEGORIES:
                errors["rejection_category"] = ["Required to reject, one of the categories."]
            if errors:
                raise ProlificError(400, errors)
        if self._decide(submission, action):
            if action == "REJECT":
                submission["rejection"] = {
                    "message": body["message"],
                    "category": body["rejection_category"],
                }
            self._save_submission(submission)
            self._settle(submission["study_id"])
        return 200, submission

    def _bulk_approve(self, body: dict, query: dict) -> tuple[int, dict]:
        if "submission_ids" in body:
            ids = body["submission_ids"]
            if set(body) != {"submission_ids"} or not isinstance(ids, list) or not ids:
                raise ProlificError(400, {"submission_ids": ["Give a non-empty list."]})
            found = [self.submission(str(i)) for i in ids]
        else:
            participants = body.get("participant_ids")
            if not isinstance(participants, list) or not participants or "study_id" not in body:
                raise ProlificError(400, "Give submission_ids, or study_id and participant_ids.")
            by_participant = {s["participant_id"]: s for s in self.submissions(body["study_id"])}
            missing = [p for p in participants if p not in by_participant]
            if missing:
                raise ProlificError(400, f"No submission of {missing[0]} in this study.")
            found = [by_participant[p] for p in participants]
        changed = [s for s in found if self._decide(s, "APPROVE")]
        for submission in changed:
            self._save_submission(submission)
        return 200, {"message": f"The request to bulk approve {len(found)} submissions was queued."}

    # --- bonuses ----------------------------------------------------------------------------

    def _set_up_bonuses(self, body: dict, query: dict) -> tuple[int, dict]:
        check_types(body, {"study_id": str, "csv_bonuses": str}, {})
        study = self.study(body["study_id"])
        by_participant = {s["participant_id"]: s for s in self.submissions(study["id"])}
        lines, seen = [], set()
        for number, line in enumerate(body["csv_bonuses"].strip().splitlines(), start=1):
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != 2 or not re.fullmatch(r"\d+(\.\d{1,2})?", parts[1]):
                raise ProlificError(400, f"Line {number}: expected participant_id,amount.")
            participant, amount = parts[0], round(float(parts[1]) * 100)
            if participant in seen:
                raise ProlificError(400, f"Line {number}: {participant} appears twice.")
            held = by_participant.get(participant)
            if held is None or held["status"] not in ("AWAITING REVIEW", "APPROVED"):
                raise ProlificError(
                    400, f"Line {number}: {participant} has no completed submission here."
                )
            if amount <= 0:
                raise ProlificError(400, f"Line {number}: the amount must be positive.")
            seen.add(participant)
            lines.append((participant, amount))
        if not lines:
            raise ProlificError(400, {"csv_bonuses": ["No bonuses given."]})
        total = sum(a for _, a in lines)
        fees = round(total * self.fee_rate)
        bonus = {
            "id": new_id(),
            "study": study["id"],
            "amount": total,
            "fees": fees,
            "vat": 0,
            "total_amount": total + fees,
            "lines": lines,
            "paid": False,
        }
        self.conn.execute("INSERT INTO bonuses VALUES (?, ?)", (bonus["id"], json.dumps(bonus)))
        return 201, {k: v for k, v in bonus.items() if k not in ("lines", "paid")}

    def _pay_bonuses(self, body: dict, query: dict, id: str) -> tuple[int, None]:  # noqa: A002
        row = self.conn.execute("SELECT data FROM bonuses WHERE bonus_id = ?", (id,)).fetchone()
        if row is None:
            raise ProlificError(404, "Bonus payment not found.")
        bonus = json.loads(row[0])
        if bonus["paid"]:
            raise ProlificError(400, "These bonuses have already been paid.")
        self._spend(bonus["amount"], "pay these bonuses")
        bonus["paid"] = True
        self.conn.execute("UPDATE bonuses SET data = ? WHERE bonus_id = ?", (json.dumps(bonus), id))
        by_participant = {s["participant_id"]: s for s in self.submissions(bonus["study"])}
        for participant, amount in bonus["lines"]:
            submission = by_participant[participant]
            submission["bonus_payments"].append(amount)
            self._save_submission(submission)
        return 202, None


def start_for_project(root: Path, token: str) -> FakeProlific:
    """The fake of ``crowdprefs prolific … --fake`` and ``crowdprefs serve --fake`` for the
    project at ``root``: its state in ``prolific-fake.sqlite`` beside the project's state, so
    one command's study is there for the next."""
    fake = FakeProlific(root / "prolific-fake.sqlite", token=token)
    fake.start()
    return fake
