"""A local fake of the MTurk requester API, for tests and ``demo --crowd mturk-fake``.

moto has no MTurk service, so this is a loopback HTTP server speaking MTurk's JSON 1.1
protocol (``X-Amz-Target: MTurkRequesterServiceV20170117.<Operation>``): the real boto3 client
talks to it. Every request is validated against botocore's own MTurk service model
(``ParamValidator`` on the operation's input shape) and the ``Question`` XML is checked as MTurk
does (well-formed ``HTMLQuestion``, at most 65,535 bytes). The fake keeps HIT types, HITs,
assignments, worker blocks and request tokens in SQLite (a file, so the state outlives a killed
client), enforces ``UniqueRequestToken`` on ``CreateHITWithHITType`` and
``CreateAdditionalAssignmentsForHIT``, the assignment-status rules of approve/reject, and
MTurk's rule that a HIT created with fewer than 10 assignments cannot be extended to 10 or more.

Assignments are answered the moment they are created, by a *responder* (for the campaign: the
simulated workers of :mod:`crowdprefs.crowds.simulated`, via :class:`SimulatedResponder`);
blocked workers and workers who already answered a HIT never take one of its assignments.
``fault_rate`` injects throttling and server faults, half of them after the operation took effect
(the reply is lost), which is what ``UniqueRequestToken`` exists for.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import re
import sqlite3
import sys
import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import botocore.session
import numpy as np
import pandas as pd
from botocore.validate import ParamValidator
from defusedxml import ElementTree as SafeElementTree

from crowdprefs.campaign.store import Location, Store
from crowdprefs.crowds.fake_state import open_state
from crowdprefs.crowds.simulated import SimulatedCrowd
from crowdprefs.hits.render import HTML_QUESTION_NS, QUESTION_LIMIT
from crowdprefs.quality.crowd_model import simulate_answers

TARGET_PREFIX = "MTurkRequesterServiceV20170117."
ANSWER_NS = (
    "http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/2005-10-01/"
    "QuestionFormAnswers.xsd"
)

Responder = Callable[[dict, int, int], list[dict]]
"""``(hit, first, count) → answers k = first … first+count−1`` (fewer when none are left).

Each answer: ``WorkerId``, ``AcceptTime`` and ``SubmitTime`` (datetimes) and ``fields`` (the form's
name → value)."""


class FakeError(Exception):
    def __init__(self, code: str, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


_SCHEMA = """
CREATE TABLE IF NOT EXISTS hit_types (hit_type_id TEXT PRIMARY KEY, params TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS hits (
    hit_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, token TEXT UNIQUE,
    data TEXT NOT NULL, next_k INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS assignments (
    assignment_id TEXT PRIMARY KEY, hit_id TEXT NOT NULL, seq INTEGER NOT NULL,
    worker_id TEXT NOT NULL, data TEXT NOT NULL, UNIQUE (hit_id, worker_id)
);
CREATE TABLE IF NOT EXISTS blocks (worker_id TEXT PRIMARY KEY, reason TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS extend_tokens (token TEXT PRIMARY KEY, hit_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS calls (operation TEXT PRIMARY KEY, n INTEGER NOT NULL);
"""


def _epoch(value: datetime) -> float:
    return value.timestamp()


def _now() -> datetime:
    return datetime.now(UTC)


def answer_xml(fields: dict[str, Any]) -> str:
    """A ``QuestionFormAnswers`` document holding the form's fields (as MTurk stores them)."""
    root = ElementTree.Element("QuestionFormAnswers", xmlns=ANSWER_NS)
    for name, value in fields.items():
        answer = ElementTree.SubElement(root, "Answer")
        ElementTree.SubElement(answer, "QuestionIdentifier").text = name
        ElementTree.SubElement(answer, "FreeText").text = str(value)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ElementTree.tostring(root, "unicode")


def _check_question(question: str) -> None:
    if len(question.encode("utf-8")) > QUESTION_LIMIT:
        raise FakeError("ParameterValidationError", "Question is larger than 65535 bytes")
    try:
        root = SafeElementTree.fromstring(question.encode("utf-8"))
    except Exception as error:  # defusedxml raises several kinds
        raise FakeError("ParameterValidationError", f"Question is not valid XML: {error}") from None
    content = root.find(f"{{{HTML_QUESTION_NS}}}HTMLContent")
    height = root.find(f"{{{HTML_QUESTION_NS}}}FrameHeight")
    if root.tag != f"{{{HTML_QUESTION_NS}}}HTMLQuestion" or content is None or height is None:
        raise FakeError("ParameterValidationError", "Question is not an HTMLQuestion")
    if not (content.text or "").lstrip().lower().startswith("<!doctype html>"):
        raise FakeError("ParameterValidationError", "HTMLContent must start with <!DOCTYPE html>")


class FakeMTurk:
    """The fake's state and operations; :meth:`start` serves them on ``127.0.0.1``."""

    def __init__(
        self,
        state: Path | str = ":memory:",
        responder: Responder | None = None,
        *,
        balance: str = "10000.00",
        fault_rate: float = 0.0,
        seed: int = 0,
    ) -> None:
        self.model = botocore.session.get_session().get_service_model("mturk")
        self.validator = ParamValidator()
        self.state = str(state)
        self.responder = responder
        self.balance = balance
        self.fault_rate = fault_rate
        self.random = random.Random(seed)
        self.lock = threading.RLock()
        self.server: ThreadingHTTPServer | None = None

    @functools.cached_property
    def conn(self) -> sqlite3.Connection:
        """The fake's store, opened (and its file made) when first used: a command refused
        before it reaches MTurk leaves no ``mturk-fake.sqlite`` behind."""
        with self.lock:
            if "conn" in self.__dict__:  # another thread opened it meanwhile
                return self.__dict__["conn"]
            conn = open_state(self.state, _SCHEMA)
            self.__dict__["conn"] = conn
            return conn

    # --- serving ----------------------------------------------------------------------------

    def start(self) -> str:
        """Serve on a free loopback port in a daemon thread; return the endpoint URL."""
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as MTurk's endpoint
            disable_nagle_algorithm = True

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length", 0))
                target = self.headers.get("X-Amz-Target", "")
                status, body = fake.dispatch(target, self.rfile.read(length))
                data = json.dumps(body).encode("utf-8")
                self.send_response(status)
                self.send_header("Content-Type", "application/x-amz-json-1.1")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("x-amzn-RequestId", str(uuid.uuid4()))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address) -> None:
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)  # a client gone is no error

        self.server = Server(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def dispatch(self, target: str, raw: bytes) -> tuple[int, dict]:
        """Validate and run one request; return the HTTP status and the JSON body."""
        try:
            if not target.startswith(TARGET_PREFIX):
                raise FakeError("UnknownOperationException", f"bad X-Amz-Target {target!r}")
            name = target[len(TARGET_PREFIX) :]
            if name not in self.model.operation_names:
                raise FakeError("UnknownOperationException", f"unknown operation {name}")
            params = json.loads(raw or b"{}")
            report = self.validator.validate(params, self.model.operation_model(name).input_shape)
            if report.has_errors():
                raise FakeError("ValidationException", report.generate_report())
            handler = getattr(self, f"op_{name}", None)
            if handler is None:
                raise FakeError("RequestError", f"the MTurk fake does not implement {name}")
            fault = self.random.random() < self.fault_rate
            after = fault and self.random.random() < 0.5
            if fault and not after:
                return self._fault()
            with self.lock:
                self.conn.execute(
                    "INSERT INTO calls VALUES (?, 1)"
                    " ON CONFLICT(operation) DO UPDATE SET n = n + 1",
                    (name,),
                )
                self.conn.execute("BEGIN IMMEDIATE")
                try:
                    result = handler(params)
                except BaseException:
                    self.conn.execute("ROLLBACK")
                    raise
                self.conn.execute("COMMIT")
            return self._fault() if after else (200, result)
        except FakeError as error:
            return error.status, {"__type": error.code, "Message": error.message}

    def _fault(self) -> tuple[int, dict]:
        if self.random.random() < 0.5:
            return 400, {"__type": "ThrottlingException", "Message": "Rate exceeded"}
        return 500, {"__type": "ServiceFault", "Message": "We encountered an unexpected error"}

    # --- state helpers ----------------------------------------------------------------------

    def calls(self) -> dict[str, int]:
        """How many times each operation took effect."""
        return dict(self.conn.execute("SELECT operation, n FROM calls").fetchall())

    def _hit(self, hit_id: str) -> dict:
        row = self.conn.execute("SELECT data FROM hits WHERE hit_id = ?", (hit_id,)).fetchone()
        if row is None:
            raise FakeError("RequestError", f"Hit {hit_id} does not exist.")
        return json.loads(row[0])

    def _save_hit(self, hit: dict) -> None:
        self.conn.execute(
            "UPDATE hits SET data = ? WHERE hit_id = ?", (json.dumps(hit), hit["HITId"])
        )

    def _assignment(self, assignment_id: str) -> dict:
        row = self.conn.execute(
            "SELECT data FROM assignments WHERE assignment_id = ?", (assignment_id,)
        ).fetchone()
        if row is None:
            raise FakeError("RequestError", f"Assignment {assignment_id} does not exist.")
        return json.loads(row[0])

    def _save_assignment(self, assignment: dict) -> None:
        self.conn.execute(
            "UPDATE assignments SET data = ? WHERE assignment_id = ?",
            (json.dumps(assignment), assignment["AssignmentId"]),
        )

    def hits(self) -> list[dict]:
        return [json.loads(r[0]) for r in self.conn.execute("SELECT data FROM hits ORDER BY seq")]

    def assignments(self, hit_id: str | None = None) -> list[dict]:
        where, params = ("WHERE hit_id = ?", (hit_id,)) if hit_id else ("", ())
        rows = self.conn.execute(f"SELECT data FROM assignments {where} ORDER BY seq", params)
        return [json.loads(r[0]) for r in rows]

    def blocked(self) -> dict[str, str]:
        return dict(self.conn.execute("SELECT worker_id, reason FROM blocks").fetchall())

    def _refresh_counts(self, hit: dict) -> None:
        done = self.conn.execute(
            "SELECT COUNT(*) FROM assignments WHERE hit_id = ?", (hit["HITId"],)
        ).fetchone()[0]
        expired = hit["Expiration"] <= _epoch(_now())
        hit["NumberOfAssignmentsCompleted"] = done
        hit["NumberOfAssignmentsPending"] = 0
        hit["NumberOfAssignmentsAvailable"] = 0 if expired else hit["MaxAssignments"] - done
        if expired or done >= hit["MaxAssignments"]:
            hit["HITStatus"] = "Reviewable"
        else:
            hit["HITStatus"] = "Assignable"

    def _answer(self, hit: dict, wanted: int) -> None:
        """Let the responder's workers take up to ``wanted`` new assignments of ``hit``."""
        if self.responder is None or wanted <= 0:
            return
        row = self.conn.execute(
            "SELECT next_k FROM hits WHERE hit_id = ?", (hit["HITId"],)
        ).fetchone()
        k = row[0]
        taken = {
            r[0]
            for r in self.conn.execute(
                "SELECT worker_id FROM assignments WHERE hit_id = ?", (hit["HITId"],)
            )
        }
        blocked = set(self.blocked())
        seq = self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM assignments").fetchone()[0]
        while wanted > 0:
            answers = self.responder(hit, k, wanted)
            if not answers:
                break
            for answer in answers:
                k += 1
                worker = answer["WorkerId"]
                if worker in blocked or worker in taken or wanted == 0:
                    continue
                seq += 1
                taken.add(worker)
                wanted -= 1
                submitted = answer["SubmitTime"]
                assignment = {
                    "AssignmentId": uuid.uuid4().hex.upper()[:30],
                    "WorkerId": worker,
                    "HITId": hit["HITId"],
                    "AssignmentStatus": "Submitted",
                    "AcceptTime": _epoch(answer["AcceptTime"]),
                    "SubmitTime": _epoch(submitted),
                    "AutoApprovalTime": _epoch(
                        submitted + timedelta(seconds=hit["AutoApprovalDelayInSeconds"])
                    ),
                    "Deadline": _epoch(
                        answer["AcceptTime"] + timedelta(seconds=hit["AssignmentDurationInSeconds"])
                    ),
                    "Answer": answer_xml(answer["fields"]),
                }
                self.conn.execute(
                    "INSERT INTO assignments VALUES (?, ?, ?, ?, ?)",
                    (assignment["AssignmentId"], hit["HITId"], seq, worker, json.dumps(assignment)),
                )
        self.conn.execute("UPDATE hits SET next_k = ? WHERE hit_id = ?", (k, hit["HITId"]))

    @staticmethod
    def _page(items: list, params: dict, key: str, default: int = 10) -> dict:
        start = int(params.get("NextToken") or 0)
        size = int(params.get("MaxResults") or default)
        chunk = items[start : start + size]
        result: dict[str, Any] = {"NumResults": len(chunk), key: chunk}
        if start + size < len(items):
            result["NextToken"] = str(start + size)
        return result

    # --- operations -------------------------------------------------------------------------

    def op_GetAccountBalance(self, params: dict) -> dict:  # noqa: N802
        return {"AvailableBalance": self.balance}

    def op_CreateHITType(self, params: dict) -> dict:  # noqa: N802
        text = json.dumps(params, sort_keys=True)
        type_id = hashlib.sha256(text.encode()).hexdigest().upper()[:30]
        self.conn.execute("INSERT OR IGNORE INTO hit_types VALUES (?, ?)", (type_id, text))
        return {"HITTypeId": type_id}

    def op_CreateHITWithHITType(self, params: dict) -> dict:  # noqa: N802
        row = self.conn.execute(
            "SELECT params FROM hit_types WHERE hit_type_id = ?", (params["HITTypeId"],)
        ).fetchone()
        if row is None:
            raise FakeError("RequestError", f"HITType {params['HITTypeId']} does not exist.")
        token = params.get("UniqueRequestToken")
        if token:
            known = self.conn.execute(
                "SELECT hit_id FROM hits WHERE token = ?", (token,)
            ).fetchone()
            if known:
                raise FakeError(
                    "RequestError",
                    "AWS.MechanicalTurk.HitAlreadyExists: There is already a HIT which exists "
                    f"with the same UniqueRequestToken. HITId: {known[0]}",
                )
        if not 1 <= params["MaxAssignments"] <= 1_000_000_000:
            raise FakeError("ParameterValidationError", "MaxAssignments must be at least 1")
        _check_question(params["Question"])
        hit_type = json.loads(row[0])
        created = _now()
        hit = {
            "HITId": uuid.uuid4().hex.upper()[:30],
            "HITTypeId": params["HITTypeId"],
            "HITGroupId": params["HITTypeId"],
            "CreationTime": _epoch(created),
            "Title": hit_type["Title"],
            "Description": hit_type["Description"],
            "Question": params["Question"],
            "Keywords": hit_type.get("Keywords", ""),
            "HITStatus": "Assignable",
            "MaxAssignments": params["MaxAssignments"],
            "Reward": hit_type["Reward"],
            "AutoApprovalDelayInSeconds": hit_type.get("AutoApprovalDelayInSeconds", 2592000),
            "Expiration": _epoch(created + timedelta(seconds=params["LifetimeInSeconds"])),
            "AssignmentDurationInSeconds": hit_type["AssignmentDurationInSeconds"],
            "RequesterAnnotation": params.get("RequesterAnnotation", ""),
            "QualificationRequirements": hit_type.get("QualificationRequirements", []),
            "HITReviewStatus": "NotReviewed",
        }
        seq = self.conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM hits").fetchone()[0]
        self.conn.execute(
            "INSERT INTO hits (hit_id, seq, token, data) VALUES (?, ?, ?, ?)",
            (hit["HITId"], seq, token, json.dumps(hit)),
        )
        self._answer(hit, hit["MaxAssignments"])
        self._refresh_counts(hit)
        self._save_hit(hit)
        return {"HIT": hit}

    def op_GetHIT(self, params: dict) -> dict:  # noqa: N802
        hit = self._hit(params["HITId"])
        self._refresh_counts(hit)
        return {"HIT": hit}

    def op_ListHITs(self, params: dict) -> dict:  # noqa: N802
        hits = self.hits()
        for hit in hits:
            self._refresh_counts(hit)
        return self._page(hits, params, "HITs")

    def op_ListAssignmentsForHIT(self, params: dict) -> dict:  # noqa: N802
        self._hit(params["HITId"])
        statuses = set(params.get("AssignmentStatuses") or ("Submitted", "Approved", "Rejected"))
        items = [a for a in self.assignments(params["HITId"]) if a["AssignmentStatus"] in statuses]
        return self._page(items, params, "Assignments")

    def op_GetAssignment(self, params: dict) -> dict:  # noqa: N802
        assignment = self._assignment(params["AssignmentId"])
        return {"Assignment": assignment, "HIT": self._hit(assignment["HITId"])}

    def op_ApproveAssignment(self, params: dict) -> dict:  # noqa: N802
        assignment = self._assignment(params["AssignmentId"])
        allowed = {"Submitted"} | ({"Rejected"} if params.get("OverrideRejection") else set())
        if assignment["AssignmentStatus"] not in allowed:
            raise FakeError(
                "RequestError",
                f"This operation can be called with a status of: Submitted "
                f"(assignment {assignment['AssignmentId']} is {assignment['AssignmentStatus']})",
            )
        assignment["AssignmentStatus"] = "Approved"
        assignment["ApprovalTime"] = _epoch(_now())
        if "RequesterFeedback" in params:
            assignment["RequesterFeedback"] = params["RequesterFeedback"]
        self._save_assignment(assignment)
        return {}

    def op_RejectAssignment(self, params: dict) -> dict:  # noqa: N802
        assignment = self._assignment(params["AssignmentId"])
        if assignment["AssignmentStatus"] != "Submitted":
            raise FakeError(
                "RequestError",
                f"This operation can be called with a status of: Submitted "
                f"(assignment {assignment['AssignmentId']} is {assignment['AssignmentStatus']})",
            )
        assignment["AssignmentStatus"] = "Rejected"
        assignment["RejectionTime"] = _epoch(_now())
        assignment["RequesterFeedback"] = params["RequesterFeedback"]
        self._save_assignment(assignment)
        return {}

    def op_CreateWorkerBlock(self, params: dict) -> dict:  # noqa: N802
        self.conn.execute(
            "INSERT INTO blocks VALUES (?, ?) ON CONFLICT(worker_id) DO UPDATE SET reason = ?",
            (params["WorkerId"], params["Reason"], params["Reason"]),
        )
        return {}

    def op_ListWorkerBlocks(self, params: dict) -> dict:  # noqa: N802
        blocks = [{"WorkerId": w, "Reason": r} for w, r in sorted(self.blocked().items())]
        return self._page(blocks, params, "WorkerBlocks")

    def op_CreateAdditionalAssignmentsForHIT(self, params: dict) -> dict:  # noqa: N802
        hit = self._hit(params["HITId"])
        token = params.get("UniqueRequestToken")
        if (
            token
            and self.conn.execute(
                "SELECT 1 FROM extend_tokens WHERE token = ?", (token,)
            ).fetchone()
        ):
            raise FakeError(
                "RequestError",
                "AWS.MechanicalTurk.ExtendHITAlreadyExists: the HIT was already extended with "
                f"this UniqueRequestToken. RequestId: {uuid.uuid4()}",
            )
        extra = params["NumberOfAdditionalAssignments"]
        before = hit["MaxAssignments"]
        if extra < 1:
            raise FakeError("ParameterValidationError", "NumberOfAdditionalAssignments must be ≥ 1")
        if before < 10 <= before + extra:
            raise FakeError(
                "RequestError",
                "AWS.MechanicalTurk.InvalidMaximumAssignmentsIncrease: a HIT created with fewer "
                "than 10 assignments cannot be extended to 10 or more",
            )
        if token:
            self.conn.execute("INSERT INTO extend_tokens VALUES (?, ?)", (token, hit["HITId"]))
        hit["MaxAssignments"] = before + extra
        self._answer(hit, extra)
        self._refresh_counts(hit)
        self._save_hit(hit)
        return {}

    def op_UpdateExpirationForHIT(self, params: dict) -> dict:  # noqa: N802
        hit = self._hit(params["HITId"])
        expire = params["ExpireAt"]
        hit["Expiration"] = min(hit["Expiration"], float(expire))
        self._refresh_counts(hit)
        self._save_hit(hit)
        return {}

    def op_DeleteHIT(self, params: dict) -> dict:  # noqa: N802
        hit = self._hit(params["HITId"])
        self._refresh_counts(hit)
        pending = [
            a for a in self.assignments(hit["HITId"]) if a["AssignmentStatus"] == "Submitted"
        ]
        if hit["HITStatus"] != "Reviewable" or pending:
            raise FakeError("RequestError", f"Hit {hit['HITId']} is not in a deletable state.")
        self.conn.execute("DELETE FROM assignments WHERE hit_id = ?", (hit["HITId"],))
        self.conn.execute("DELETE FROM hits WHERE hit_id = ?", (hit["HITId"],))
        return {}


_ANNOTATION = re.compile(r"^crowdprefs (?P<project>\S+) pair (?P<pair>\d+)$")


class SimulatedResponder:
    """Answers a project's HITs with the simulated workers (the pair comes from the annotation).

    Answer *k* of a pair is :func:`~crowdprefs.crowds.simulated.simulate_answers`' answer *k*,
    so a campaign through the fake is as reproducible as one with the simulated crowd. The page
    reports every clip played once, heard for its duration when known (else a quarter of the
    answer's time). The pair is read from the project's state through its store, as the real
    workers read it from the HIT.
    """

    def __init__(self, location: Location, crowd: SimulatedCrowd) -> None:
        self.location = location
        self.check = crowd.check_truth
        """Raise :class:`InputError` when the truth lacks a document of the pairs (checked
        before a batch is built: :meth:`crowdprefs.crowds.mturk.crowd.MTurkCrowd.check`)."""
        self.similarity, self.pool = crowd.similarity, crowd.pool
        self.model, self.seed = crowd.model, crowd.seed

    def __call__(self, hit: dict, first: int, count: int) -> list[dict]:
        match = _ANNOTATION.match(hit.get("RequesterAnnotation", ""))
        count = min(count, len(self.pool.ids) - first)
        if match is None or count <= 0:
            return []
        store = Store(self.location, lock=False)
        try:
            stored = store.pair(int(match["pair"]))
            clips = store.clip_seconds([int(match["pair"])])
        finally:
            store.close()
        if stored is None:
            return []
        query, x, y = clips.iloc[0][["query", "x", "y"]]
        a, b = (x, y) if stored["a_is_x"] else (y, x)
        heard = {"query": query, "a": a, "b": b}
        pair = pd.DataFrame([stored])[["pair_id", "query", "x", "y", "a_is_x"]]
        pair["listen_seconds"] = query + x + y
        pair["answers_wanted"] = first + count
        created = datetime.fromtimestamp(hit["CreationTime"], UTC)
        frame = simulate_answers(
            pair, self.similarity, self.pool, self.model, self.seed, np.array([first]), created
        )
        return [
            {
                "WorkerId": row.worker_id,
                "AcceptTime": datetime.fromisoformat(row.accepted_at),
                "SubmitTime": datetime.fromisoformat(row.submitted_at),
                "fields": {
                    "choice": row.choice,
                    "background": "",
                    "comment": "",
                    **{f"plays_{c}": "1" for c in heard},
                    **{
                        f"listen_{c}": f"{row.seconds / 4 if np.isnan(s) else s:.1f}"
                        for c, s in heard.items()
                    },
                    "seconds_on_page": f"{row.seconds:.1f}",
                },
            }
            for row in frame.itertuples(index=False)
        ]


def start_for_project(project) -> tuple[FakeMTurk, str]:
    """A fake for ``project`` answered by its simulated crowd (the ``[simulated]`` section).

    Its state lives in ``mturk-fake.sqlite`` beside the project's state, so a campaign killed at
    any moment resumes against the same HITs and answers.
    """
    responder = SimulatedResponder(project.store.location, SimulatedCrowd.for_project(project))
    fake = FakeMTurk(project.root / "mturk-fake.sqlite", responder)
    return fake, fake.start()
