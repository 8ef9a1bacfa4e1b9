"""The Amazon Mechanical Turk backend (boto3): one HIT per pair, reviewed answers.

Targets: ``sandbox`` (the default; crowd name ``mturk-sandbox``), ``live`` (only through an
explicit ``--live``; crowd name ``mturk``) and ``fake`` (the local fake of
:mod:`crowdprefs.crowds.mturk.fake`; ``mturk-fake``). The crowd name is part of every stored HIT
and answer, so HITs of the sandbox are never collected, reviewed or paid as live ones.

Publishing (the preference-judgments paper §4.1–4.2): one HIT type per project (title, description
and keywords from ``[hit]``; reward; duration; auto-approval delay; qualifications: approval rate ≥
95% and a minimum of approved HITs by default, locales optional); one HIT per pair with
``MaxAssignments`` = answers per pair, its ``HTMLQuestion`` rendered from the shared template, a
``RequesterAnnotation`` naming project and pair, and a ``UniqueRequestToken`` derived from (project,
iteration, pair) so that a retry or a resume never posts a pair twice. Each HIT id is saved the
moment the HIT exists. A resumed publish first adopts HITs MTurk holds for the project that the
state lost (MTurk forgets tokens after 24 hours).

Collecting pages through ``ListAssignmentsForHIT``, parses each answer with defusedxml, checks it
(:func:`crowdprefs.campaign.answers.check_answer`: choice, texts, listening evidence against the
pair's clip durations) and stores it at once (raw XML and parsed fields); an answer with a problem
is stored rejected, the problem its reason (an answer without a valid choice is only rejected).
The adapter offers the review's calls (approve, reject, block, extend:
:class:`~crowdprefs.campaign.crowd.ReviewedCrowd`); deciding them is the review's job
(:mod:`crowdprefs.quality.review`), run by the driver after each collection. Throttling and
transient faults are retried by botocore's adaptive retry mode; any other fault ends in one
:class:`~crowdprefs.errors.CrowdError` line.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import pandas as pd
from defusedxml import ElementTree as SafeElementTree

from crowdprefs.campaign.answers import check_answer
from crowdprefs.campaign.budget import FeeModel, batch_cost
from crowdprefs.campaign.crowd import reachable_size, score_of
from crowdprefs.campaign.settings import check_values
from crowdprefs.errors import BudgetError, CrowdError, InputError
from crowdprefs.hits.hosting import ClipHost, host_for_project, is_url
from crowdprefs.hits.render import (
    LIVE_SUBMIT,
    SANDBOX_SUBMIT,
    HitSettings,
    htmlquestion_xml,
    pair_clips,
    render_preference_hit,
)
from crowdprefs.progress import make_progress, note

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project

ENDPOINTS = {
    "sandbox": "https://mturk-requester-sandbox.us-east-1.amazonaws.com",
    "live": "https://mturk-requester.us-east-1.amazonaws.com",
}
CROWD_NAMES = {"sandbox": "mturk-sandbox", "live": "mturk", "fake": "mturk-fake"}
APPROVAL_RATE_QUALIFICATION = "000000000000000000L0"
APPROVED_HITS_QUALIFICATION = "00000000000000000040"
LOCALE_QUALIFICATION = "00000000000000000071"
_HIT_ID = re.compile(r"\b[A-Z0-9]{20,64}\b")


@dataclass(frozen=True)
class MTurkSettings:
    """The ``[mturk]`` section."""

    lifetime_hours: float = 72.0
    duration_minutes: float = 10.0
    auto_approval_days: float = 3.0
    min_approval_rate: int = 95
    min_approved_hits: int = 100
    locales: list[str] = field(default_factory=list)
    region: str = "us-east-1"
    page_size: int = 100
    max_attempts: int = 10

    def __post_init__(self) -> None:
        check_values("mturk", self)
        bad = [c for c in self.locales if not re.fullmatch(r"[A-Z]{2}(-[A-Z0-9]{1,3})?", c)]
        if bad:
            raise InputError(f"[mturk] locales must be like 'US' or 'US-NY', got {bad[0]!r}")

    @classmethod
    def from_project(cls, project: Project) -> MTurkSettings:
        return cls(**project.section("mturk"))  # checked against the schema at open

    @property
    def lifetime_seconds(self) -> int:
        return int(self.lifetime_hours * 3600)

    @property
    def duration_seconds(self) -> int:
        return int(self.duration_minutes * 60)

    def qualifications(self) -> list[dict[str, Any]]:
        """MTurk ``QualificationRequirements``: approval rate, approved HITs, locales."""
        found: list[dict[str, Any]] = []
        if self.min_approval_rate > 0:
            found.append(
                {
                    "QualificationTypeId": APPROVAL_RATE_QUALIFICATION,
                    "Comparator": "GreaterThanOrEqualTo",
                    "IntegerValues": [self.min_approval_rate],
                    "ActionsGuarded": "Accept",
                }
            )
        if self.min_approved_hits > 0:
            found.append(
                {
                    "QualificationTypeId": APPROVED_HITS_QUALIFICATION,
                    "Comparator": "GreaterThanOrEqualTo",
                    "IntegerValues": [self.min_approved_hits],
                    "ActionsGuarded": "Accept",
                }
            )
        if self.locales:
            values = []
            for code in self.locales:
                country, _, subdivision = code.partition("-")
                values.append(
                    {"Country": country, "Subdivision": subdivision}
                    if subdivision
                    else {"Country": country}
                )
            found.append(
                {
                    "QualificationTypeId": LOCALE_QUALIFICATION,
                    "Comparator": "In",
                    "LocaleValues": values,
                    "ActionsGuarded": "Accept",
                }
            )
        return found


def project_uid(project: Project) -> str:
    """A stable identifier of the project (from the facts fixed at init)."""
    text = f"{project.store.meta('created_at')}|{project.seed}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def request_token(project: Project, iteration: int, query: str, x: str, y: str) -> str:
    """``UniqueRequestToken`` of a pair's HIT: the same pair of the same batch, the same token."""
    text = json.dumps([project_uid(project), int(iteration), query, x, y])
    return "cp" + hashlib.sha256(text.encode()).hexdigest()[:48]


def annotation(project: Project, pair_id: int) -> str:
    return f"crowdprefs {project_uid(project)} pair {int(pair_id)}"


def parse_answer(xml: str) -> dict[str, str]:
    """The fields of a ``QuestionFormAnswers`` document (safely parsed), by identifier."""
    try:
        root = SafeElementTree.fromstring(xml.encode("utf-8"))
    except Exception as error:  # defusedxml forbids entities and DTDs by raising
        raise InputError(f"unreadable answer XML: {type(error).__name__}") from None
    found: dict[str, str] = {}
    for answer in root:
        if not answer.tag.endswith("Answer"):
            continue
        name = value = None
        for child in answer:
            tag = child.tag.rsplit("}", 1)[-1]
            if tag == "QuestionIdentifier":
                name = (child.text or "").strip()
            elif tag in ("FreeText", "SelectionIdentifier"):
                value = child.text or ""
        if name:
            found[name] = value or ""
    return found


class MTurkCrowd:
    """MTurk as a :class:`~crowdprefs.campaign.crowd.ReviewedCrowd`."""

    #: MTurk never extends a HIT created with fewer than 10 assignments to 10 or more.
    extension_barrier = 10

    def __init__(
        self,
        project: Project,
        *,
        target: str = "sandbox",
        endpoint_url: str | None = None,
        client=None,
        host: ClipHost | None = None,
    ) -> None:
        if target not in CROWD_NAMES:
            raise InputError(f"unknown MTurk target {target!r}: sandbox, live or fake")
        if target == "fake" and endpoint_url is None and client is None:
            raise InputError("the MTurk fake needs its endpoint URL")
        self.target = target
        self.name = CROWD_NAMES[target]
        self.settings = MTurkSettings.from_project(project)
        self.hit_settings = HitSettings.from_project(project)
        self.host = host if host is not None else host_for_project(project)
        self.fake = None
        self.client = client or self._client(endpoint_url or ENDPOINTS[target])

    @classmethod
    def for_crowd(cls, name: str, project: Project, **_: object) -> MTurkCrowd:
        """``mturk-sandbox``, or ``mturk-fake`` (starts the project's local fake); live MTurk is
        built only explicitly, with ``MTurkCrowd(project, target="live")``."""
        if name == "mturk-fake":
            from crowdprefs.crowds.mturk.fake import start_for_project

            MTurkSettings.from_project(project)  # checked before the fake writes its store
            HitSettings.from_project(project)
            fake, url = start_for_project(project)
            crowd = cls(project, target="fake", endpoint_url=url)
            crowd.fake = fake
            return crowd
        if name == "mturk-sandbox":
            return cls(project, target="sandbox")
        raise InputError(f"unknown MTurk crowd {name!r}: mturk-sandbox or mturk-fake")

    def fees(self, project: Project) -> FeeModel:
        """The fee model MTurk charges: its commission, as set in ``[fees]``."""
        return project.settings.fees

    def _client(self, endpoint: str):
        import boto3
        import botocore
        from botocore.config import Config

        config = Config(
            retries={"mode": "adaptive", "max_attempts": self.settings.max_attempts},
            connect_timeout=10,
            read_timeout=60,
            **({"signature_version": botocore.UNSIGNED} if self.target == "fake" else {}),
        )
        return boto3.session.Session().client(
            "mturk", region_name=self.settings.region, endpoint_url=endpoint, config=config
        )

    # --- calls ------------------------------------------------------------------------------

    def call(self, operation: str, **params: Any) -> dict:
        """One API call; every failure left after botocore's retries is one CrowdError line."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return getattr(self.client, _snake(operation))(**params)
        except ClientError as error:
            info = error.response.get("Error", {})
            raise CrowdError(
                f"MTurk ({self.target}) {operation}: {info.get('Code', '?')}: "
                f"{info.get('Message', '')}".strip()
            ) from None
        except BotoCoreError as error:
            raise CrowdError(f"MTurk ({self.target}) {operation}: {error}") from None

    def balance(self) -> float:
        return float(self.call("GetAccountBalance")["AvailableBalance"])

    def hit_type(self, reward: float) -> str:
        """The project's HIT type (MTurk returns the same id for the same parameters)."""
        if reward < 0.01 or abs(reward * 100 - round(reward * 100)) > 1e-6:
            raise InputError(f"MTurk pays whole cents of at least $0.01; the reward is {reward}")
        hit = self.hit_settings
        params: dict[str, Any] = {
            "AutoApprovalDelayInSeconds": int(self.settings.auto_approval_days * 86400),
            "AssignmentDurationInSeconds": self.settings.duration_seconds,
            "Reward": f"{reward:.2f}",
            "Title": hit.title,
            "Keywords": hit.keywords,
            "Description": hit.description,
            "QualificationRequirements": self.settings.qualifications(),
        }
        return self.call("CreateHITType", **params)["HITTypeId"]

    # --- publish ----------------------------------------------------------------------------

    def _clip_url(self, project: Project, pairs: pd.DataFrame):
        paths: set[str] = set()
        missing: list[str] = []
        for pair in pairs.to_dict("records"):
            for side, path in pair_clips(project, pair).items():
                if path:
                    paths.add(path)
                else:
                    missing.append(f"{pair['query']}: {side} of pair {pair['x']}/{pair['y']}")
        if missing and self.target != "fake":
            raise InputError(f"no audio for {missing[0]} (and {len(missing) - 1} more clips)")
        local = [p for p in paths if not is_url(p)]
        if self.host is None:
            if local and self.target != "fake":
                raise InputError(
                    f"clip {local[0]} is a local file: set [hosting] s3_bucket or base_url"
                )
            return lambda path: path
        self._check_url_lifetime()
        self.host.prepare(sorted(paths))
        return self.host.url

    def _check_url_lifetime(self) -> None:
        expires = getattr(self.host, "expires", None)
        needed = self.settings.lifetime_seconds + self.settings.duration_seconds
        if expires is not None and expires < needed:
            raise InputError(
                f"presigned clip URLs live {expires / 86400:.1f} days but a HIT lives "
                f"{needed / 86400:.1f} days with its last assignment: shorten "
                "[mturk] lifetime_hours or lengthen [hosting] url_expires_days"
            )

    def check(self, project: Project, pairs: pd.DataFrame) -> None:
        """Raise :class:`InputError` before a batch is built when the local fake's simulated
        workers cannot answer ``pairs`` (a truth without their documents)."""
        check = getattr(None if self.fake is None else self.fake.responder, "check", None)
        if check is not None:  # a responder may say which pairs it cannot answer
            check(pairs)

    def publish(self, project: Project, pairs: pd.DataFrame) -> int:
        """Create one HIT per pair (resumable; the budget was checked by the driver)."""
        if pairs.empty:
            return 0
        settings = project.settings
        cost = batch_cost(settings.reward, pairs["answers_wanted"].to_numpy(), self.fees(project))
        balance = self.balance()
        if balance + 1e-9 < cost:
            raise BudgetError(
                f"MTurk ({self.target}) balance ${balance:.2f} cannot pay this batch (${cost:.2f})"
            )
        clip_url = self._clip_url(project, pairs)
        if self._resuming(project, pairs):
            self.adopt(project)
        held = set(project.store.hits(self.name)["pair_id"])
        todo = pairs[~pairs["pair_id"].isin(held)]
        type_id = self.hit_type(settings.reward)
        submit = LIVE_SUBMIT if self.target == "live" else SANDBOX_SUBMIT
        with make_progress() as progress:
            task = progress.add_task(f"publishing to {self.name}", total=len(todo))
            for pair in todo.to_dict("records"):
                html = render_preference_hit(
                    project, pair, mode="mturk", submit_url=submit, clip_url=clip_url
                )
                self._create(
                    project, pair, type_id, htmlquestion_xml(html, self.hit_settings.frame_height)
                )
                progress.advance(task)
        return len(todo)

    def _resuming(self, project: Project, pairs: pd.DataFrame) -> bool:
        """Whether MTurk may hold HITs of this batch the state lost: some of its HITs exist, or
        the batch is older than MTurk's 24-hour memory of request tokens."""
        iteration = int(pairs["iteration"].iloc[0])
        held = (project.store.hits(self.name)["iteration"] == iteration).any()
        batches = project.store.batches().set_index("iteration")
        age = datetime.now(UTC) - datetime.fromisoformat(batches.loc[iteration, "created_at"])
        return bool(held) or age > timedelta(hours=23)

    def _create(self, project: Project, pair: dict, type_id: str, question: str) -> None:
        token = request_token(project, pair["iteration"], pair["query"], pair["x"], pair["y"])
        params = {
            "HITTypeId": type_id,
            "MaxAssignments": int(pair["answers_wanted"]),
            "LifetimeInSeconds": self.settings.lifetime_seconds,
            "Question": question,
            "RequesterAnnotation": annotation(project, pair["pair_id"]),
            "UniqueRequestToken": token,
        }
        try:
            hit = self.call("CreateHITWithHITType", **params)["HIT"]
            hit_id, size = hit["HITId"], hit["MaxAssignments"]
        except CrowdError as error:
            if "AlreadyExists" not in str(error):
                raise
            found = self._find_hit(project, int(pair["pair_id"]), str(error))
            hit_id, size = found["HITId"], found["MaxAssignments"]
        row = {"pair_id": int(pair["pair_id"]), "hit_id": hit_id, "max_assignments": int(size)}
        project.store.add_hits(
            self.name, pd.DataFrame([row]), project.settings.reward, self.fees(project)
        )

    def _find_hit(self, project: Project, pair_id: int, message: str) -> dict:
        for candidate in _HIT_ID.findall(message):
            try:
                hit = self.call("GetHIT", HITId=candidate)["HIT"]
            except CrowdError:
                continue
            if hit.get("RequesterAnnotation") == annotation(project, pair_id):
                return hit
        for hit in self.list_hits():
            if hit.get("RequesterAnnotation") == annotation(project, pair_id):
                return hit
        raise CrowdError(f"MTurk says pair {pair_id}'s HIT exists but it cannot be found")

    def list_hits(self) -> list[dict]:
        """Every HIT of the requester (paged)."""
        hits: list[dict] = []
        token = None
        while True:
            page = self.call(
                "ListHITs",
                MaxResults=self.settings.page_size,
                **({"NextToken": token} if token else {}),
            )
            hits.extend(page.get("HITs", []))
            token = page.get("NextToken")
            if not token:
                return hits

    def adopt(self, project: Project) -> pd.DataFrame:
        """Record HITs MTurk holds for this project's pairs that the state lost (orphans).

        Returns the project's remote HITs ``hit_id, pair_id, known`` (``known`` before adoption).
        """
        prefix = f"crowdprefs {project_uid(project)} pair "
        remote = [
            (
                h["HITId"],
                int(h["RequesterAnnotation"][len(prefix) :]),
                h["MaxAssignments"],
                float(h["Reward"]),
            )
            for h in self.list_hits()
            if h.get("RequesterAnnotation", "").startswith(prefix)
        ]
        local = project.store.hits(self.name)
        known_hits, known_pairs = set(local["hit_id"]), set(local["pair_id"])
        pairs = set(project.store.pairs()["pair_id"])
        adopt = pd.DataFrame(
            [
                (p, h, n, r)
                for h, p, n, r in remote
                if h not in known_hits and p not in known_pairs and p in pairs
            ],
            columns=["pair_id", "hit_id", "max_assignments", "reward"],
        )
        if len(adopt):  # priced at the reward MTurk holds for them
            project.store.add_hits(self.name, adopt, project.settings.reward, self.fees(project))
        return pd.DataFrame(
            [(h, p, h in known_hits) for h, p, _, _ in remote],
            columns=["hit_id", "pair_id", "known"],
        )

    # --- collect ----------------------------------------------------------------------------

    def assignments(self, hit_id: str) -> list[dict]:
        found: list[dict] = []
        token = None
        while True:
            page = self.call(
                "ListAssignmentsForHIT",
                HITId=hit_id,
                MaxResults=self.settings.page_size,
                AssignmentStatuses=["Submitted", "Approved", "Rejected"],
                **({"NextToken": token} if token else {}),
            )
            found.extend(page.get("Assignments", []))
            token = page.get("NextToken")
            if not token:
                return found

    def fetch(self, project: Project, pairs: pd.DataFrame) -> int:
        """Store every new assignment of the pairs' HITs (one transaction per HIT)."""
        store = project.store
        hits = store.hits(self.name)[["pair_id", "hit_id"]]
        hits = hits[hits["pair_id"].isin(pairs["pair_id"])].merge(
            pairs[["pair_id", "a_is_x"]], on="pair_id"
        )
        clips = store.clip_seconds(hits["pair_id"])
        known = store.known_assignments(self.name)
        new = 0
        with make_progress() as progress:
            task = progress.add_task(f"collecting from {self.name}", total=len(hits))
            for pair_id, hit_id, a_is_x in hits.itertuples(index=False):
                fresh = [a for a in self.assignments(hit_id) if a["AssignmentId"] not in known]
                if fresh:
                    query, x, y = clips.loc[pair_id, ["query", "x", "y"]]
                    seconds = {"query": query, "a": x, "b": y} if a_is_x else {
                        "query": query, "a": y, "b": x
                    }  # fmt: skip
                    new += self._store(project, int(pair_id), int(a_is_x), seconds, fresh)
                progress.advance(task)
        return new

    def _store(
        self,
        project: Project,
        pair_id: int,
        a_is_x: int,
        clip_seconds: dict[str, float],
        assignments: list[dict],
    ) -> int:
        """Check and store one HIT's new assignments; those with a problem are rejected (and
        stored when their choice is valid), the problem their reason."""
        rows, rejections = [], []
        for a in assignments:
            raw = a.get("Answer") or ""
            try:
                answer, problems = check_answer(
                    parse_answer(raw), clip_seconds, min_coverage=self.hit_settings.min_coverage
                )
            except InputError as error:
                answer, problems = None, [str(error)]
            if problems:
                rejections.append((a["AssignmentId"], pair_id, a["WorkerId"], "; ".join(problems)))
            if answer is None or answer["choice"] is None:
                continue
            accepted, submitted = a.get("AcceptTime"), a.get("SubmitTime")
            seconds = (
                round((submitted - accepted).total_seconds(), 1) if accepted and submitted else None
            )
            rows.append(
                {
                    "pair_id": pair_id,
                    "assignment_id": a["AssignmentId"],
                    "worker_id": a["WorkerId"],
                    "choice": answer["choice"],
                    "seconds": seconds,
                    "accepted_at": _iso(accepted),
                    "submitted_at": _iso(submitted),
                    "background": answer["background"],
                    "comment": answer["comment"],
                    "raw": json.dumps(
                        {
                            "answer_xml": raw,
                            "fields": {k: v for k, v in answer.items() if k != "choice"},
                            "mturk_status": a.get("AssignmentStatus"),
                            "problems": problems,
                        }
                    ),
                    # decisions made outside crowdprefs (e.g. on MTurk's site) are kept
                    "status": str(a.get("AssignmentStatus", "Submitted")).lower(),
                }
            )
        frame = pd.DataFrame(rows, columns=["pair_id", "choice", "status", "assignment_id"])
        if len(rows):
            frame = pd.DataFrame(rows)
            frame["score"] = score_of(frame["choice"], pd.Series([a_is_x] * len(frame)))
        rejected = pd.DataFrame(
            rejections, columns=["assignment_id", "pair_id", "worker_id", "reason"]
        )
        return project.store.add_answers(self.name, frame, rejections=rejected)

    def collect(self, project: Project, pairs: pd.DataFrame) -> int:
        """Extend the HITs whose size was raised locally, then fetch their new answers."""
        if pairs.empty:
            return 0
        iteration = int(pairs["iteration"].iloc[0])
        short = set(project.store.missing_answers(iteration)["pair_id"])
        self._sync_sizes(project, iteration, short)
        return self.fetch(project, pairs)

    def _sync_sizes(self, project: Project, iteration: int, short: set[int]) -> None:
        """Extend the batch's HITs (of the ``short`` pairs) whose size was raised locally
        (adaptive answers) but not on MTurk yet."""
        hits = project.store.batch_hits(self.name, iteration)
        for hit_id, local in hits.loc[hits.index.isin(short), ["hit_id", "size"]].itertuples(
            index=False
        ):
            remote = int(self.call("GetHIT", HITId=hit_id)["HIT"]["MaxAssignments"])
            after = int(reachable_size(remote, local, self.extension_barrier))
            if after > remote:
                self.add_assignments(hit_id, remote, after)

    # --- the reviewer's calls (idempotent) ---------------------------------------------------

    def block_worker(self, worker_id: str, reason: str) -> None:
        self.call("CreateWorkerBlock", WorkerId=worker_id, Reason=reason[:1024])

    def _status(self, assignment_id: str) -> str:
        return self.call("GetAssignment", AssignmentId=assignment_id)["Assignment"][
            "AssignmentStatus"
        ]

    def reject_assignment(self, assignment_id: str, reason: str) -> None:
        try:
            self.call(
                "RejectAssignment", AssignmentId=assignment_id, RequesterFeedback=reason[:1024]
            )
        except CrowdError:
            status = self._status(assignment_id)
            if status == "Approved":
                note(
                    f"assignment {assignment_id} was already approved (paid); "
                    "it stays excluded from aggregation"
                )
            elif status != "Rejected":
                raise

    def approve_assignment(self, assignment_id: str) -> None:
        try:
            self.call("ApproveAssignment", AssignmentId=assignment_id)
        except CrowdError:
            if self._status(assignment_id) != "Approved":
                raise

    def add_assignments(self, hit_id: str, before: int, after: int) -> None:
        token = "cpx" + hashlib.sha256(f"{hit_id}|{after}".encode()).hexdigest()[:48]
        try:
            self.call(
                "CreateAdditionalAssignmentsForHIT",
                HITId=hit_id,
                NumberOfAdditionalAssignments=after - before,
                UniqueRequestToken=token,
            )
        except CrowdError:
            if self.call("GetHIT", HITId=hit_id)["HIT"]["MaxAssignments"] < after:
                raise

    # --- maintenance ------------------------------------------------------------------------

    def expire(self, project: Project) -> int:
        """End every open HIT of the project at once (answers already given stay)."""
        hits = project.store.hits(self.name)
        open_hits = hits.loc[hits["status"] == "open", "hit_id"]
        past = datetime(2015, 1, 1, tzinfo=UTC)
        for hit_id in open_hits:
            self.call("UpdateExpirationForHIT", HITId=hit_id, ExpireAt=past)
            project.store.set_hit_status(self.name, hit_id, "expired")
        return len(open_hits)

    def reconcile(self, project: Project) -> dict[str, int]:
        """Compare the state with what MTurk holds and repair it.

        Adopts orphan HITs (created on MTurk, lost locally), counts local HITs MTurk no longer
        knows and fetches the open batch's missing answers (reviewed by the next collection).
        """
        remote = self.adopt(project)
        local = project.store.hits(self.name)
        unknown = set(local["hit_id"]) - set(remote["hit_id"])
        report = {
            "remote_hits": len(remote),
            "adopted": int((~remote["known"]).sum()),
            "local_unknown_remotely": len(unknown),
            "new_answers": 0,
        }
        last = project.store.last_batch()
        if last is not None and last["status"] in ("published", "collected", "built"):
            pairs = project.store.published_pairs(last["iteration"], self.name)
            if len(pairs):
                report["new_answers"] = self.collect(project, pairs)
        return report


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).isoformat(timespec="milliseconds")


def _snake(operation: str) -> str:
    from botocore import xform_name

    return xform_name(operation)
