"""Who answers what on the web crowd, and storing what they answer.

A judge is a person with a personal invitation token (``crowdprefs invite``) or a participant
of a study platform who arrived through the study link. Every question handed out is an
*assignment* (``web_assignments``): one pair for one judge, with a CSRF token and a deadline.

Rules (each enforced inside one ``BEGIN IMMEDIATE`` transaction, so concurrent judges cannot
break them):

- a pair is offered only while ``answers + open assignments < answers_wanted``, so every pair
  gets exactly its configured number of answers, from distinct judges;
- a judge never gets the same pair twice (``UNIQUE (pair_id, judge_id)``), not even after
  abandoning it;
- an open assignment older than the timeout is *released*: its slot goes back to the pool;
  a late answer to it is still taken if the pair has room, otherwise refused;
- among the pairs with room the judge gets one of the least-answered, ties broken by a
  per-judge hash, so concurrent judges spread over the batch instead of racing for one pair;
- an answer is validated and stored in ``answers`` (crowd ``web``) the moment it is posted,
  with the server-measured seconds from hand-out to submission (seed 002 §5.1 notes that
  MTurk's time counts from accepting the HIT; this is the same measure). Posting the same
  assignment again changes nothing.
"""

from __future__ import annotations

import json
import re
import secrets
import sqlite3
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from crowdprefs.campaign.crowd import score_of
from crowdprefs.campaign.store import ANSWER_COLUMNS
from crowdprefs.errors import CrowdError, InputError
from crowdprefs.rng import counter_uniform
from crowdprefs.web.security import completion_code, judge_key, new_token, same, token_hash

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project

CHOICES = ("A", "B", "equal")
SCORES = dict(
    zip(
        [(c, a) for a in (1, 0) for c in CHOICES],
        score_of(pd.Series(CHOICES * 2), pd.Series([1, 1, 1, 0, 0, 0])),
        strict=True,
    )
)
"""``(choice, a_is_x) → score`` from :func:`~crowdprefs.campaign.crowd.score_of`."""
PARTICIPANT = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")


class WebError(CrowdError):
    """A request the web crowd refuses; ``status`` is the HTTP status to answer with."""

    status = 400


class Forbidden(WebError):
    status = 403


class Gone(WebError):
    status = 409


def _stamp(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="milliseconds")


def _now(at: datetime | None) -> datetime:
    return at or datetime.now(UTC)


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

    def __post_init__(self) -> None:
        if self.timeout_minutes <= 0:
            raise InputError(f"[web] timeout_minutes must be positive, got {self.timeout_minutes}")
        if self.questions_per_judge < 0:
            raise InputError(
                f"[web] questions_per_judge must be 0 or more, got {self.questions_per_judge}"
            )
        if not self.base_url.startswith(("http://", "https://")):
            raise InputError(f"[web] base_url must start with http:// or https://: {self.base_url}")

    @classmethod
    def from_project(cls, project: Project) -> WebSettings:
        section = project.section("web")
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(section) - names)
        if unknown:
            raise InputError(f"unknown [web] setting(s): {', '.join(unknown)}")
        try:
            return cls(**section)
        except TypeError as error:
            raise InputError(f"invalid [web] setting: {error}") from None


@dataclass(frozen=True)
class Judge:
    judge_id: str
    source: str
    completion_code: str
    key: int


@dataclass(frozen=True)
class Assignment:
    assignment_id: str
    pair_id: int
    judge_id: str
    csrf: str
    issued_at: str
    expires_at: str
    status: str


# --- judges ---------------------------------------------------------------------------------


def _next_judge_id(conn: sqlite3.Connection, prefix: str) -> str:
    count = conn.execute(
        "SELECT COUNT(*) FROM web_judges WHERE judge_id LIKE ?", (f"{prefix}%",)
    ).fetchone()[0]
    return f"{prefix}{count + 1:04d}"


def invite(project: Project, judges: int) -> list[tuple[str, str]]:
    """Create ``judges`` invited judges; returns ``(judge_id, token)`` (tokens are shown once)."""
    if judges < 1:
        raise InputError(f"--judges must be at least 1, got {judges}")
    created = []
    with project.store.transaction() as conn:
        for _ in range(judges):
            token = new_token()
            judge_id = _next_judge_id(conn, "J")
            conn.execute(
                "INSERT INTO web_judges (judge_id, token_hash, source, completion_code, created_at)"
                " VALUES (?, ?, 'invite', ?, ?)",
                (judge_id, token_hash(token), completion_code(), _stamp(_now(None))),
            )
            created.append((judge_id, token))
    return created


STUDY_META = "web_study_key_sha256"


def new_study_key(project: Project) -> str:
    """A new secret for the study-platform link (replaces the previous one)."""
    key = new_token()
    with project.store.transaction() as conn:
        conn.execute(
            "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (STUDY_META, token_hash(key))
        )
    return key


def _judge(row: tuple | None) -> Judge | None:
    if row is None:
        return None
    judge_id, source, code, sha = row
    return Judge(judge_id, source, code, judge_key(sha))


def judge_for_token(project: Project, token: str | None) -> Judge | None:
    """The judge holding ``token`` (``None`` for an unknown or missing token)."""
    if not token:
        return None
    row = project.store.conn.execute(
        "SELECT judge_id, source, completion_code, token_hash FROM web_judges WHERE token_hash = ?",
        (token_hash(token),),
    ).fetchone()
    return _judge(row)


def join_study(project: Project, key: str, participant: str) -> tuple[Judge, str]:
    """The judge of a study participant (created on first visit) and a fresh session token.

    Raises :class:`Forbidden` for a wrong study key and :class:`WebError` for a malformed
    participant id. A returning participant keeps their judge id and answers; their previous
    session token stops working.
    """
    expected = project.store.meta(STUDY_META)
    if expected is None or token_hash(key) != expected:
        raise Forbidden("this study link is not valid")
    if not PARTICIPANT.match(participant or ""):
        raise WebError("the study link carries no valid participant id")
    token = new_token()
    with project.store.transaction() as conn:
        row = conn.execute(
            "SELECT judge_id FROM web_judges WHERE participant = ?", (participant,)
        ).fetchone()
        if row is None:
            conn.execute(
                "INSERT INTO web_judges (judge_id, token_hash, source, participant,"
                " completion_code, created_at) VALUES (?, ?, 'platform', ?, ?, ?)",
                (
                    _next_judge_id(conn, "P"),
                    token_hash(token),
                    participant,
                    completion_code(),
                    _stamp(_now(None)),
                ),
            )
        else:
            conn.execute(
                "UPDATE web_judges SET token_hash = ? WHERE judge_id = ?",
                (token_hash(token), row[0]),
            )
    judge = judge_for_token(project, token)
    assert judge is not None
    return judge, token


# --- handing out questions -------------------------------------------------------------------


def release_expired(conn: sqlite3.Connection, at: datetime | None = None) -> int:
    """Release every open assignment past its deadline; returns how many."""
    before = conn.total_changes
    conn.execute(
        "UPDATE web_assignments SET status = 'released' WHERE status = 'open' AND expires_at < ?",
        (_stamp(_now(at)),),
    )
    return conn.total_changes - before


def open_iteration(conn: sqlite3.Connection) -> int | None:
    """The batch the web crowd answers now: the last one, while built or published for it."""
    row = conn.execute(
        "SELECT iteration, status, crowd FROM batches ORDER BY iteration DESC LIMIT 1"
    ).fetchone()
    if row is None or row[1] not in ("built", "published") or row[2] not in (None, "web"):
        return None
    return row[0]


def choose_pair(pair_id: np.ndarray, filled: np.ndarray, wanted: np.ndarray, key: int) -> int:
    """Index of the pair to hand out: least filled among those with room, ties by a per-judge
    hash of the pair; ``-1`` when no pair has room."""
    room = filled < wanted
    if not room.any():
        return -1
    tie = counter_uniform(key, pair_id.astype(np.int64))
    order = np.lexsort((tie, filled))
    return int(order[room[order]][0])


_ASSIGNMENT = (
    "SELECT assignment_id, pair_id, judge_id, csrf, issued_at, expires_at, status"
    " FROM web_assignments"
)


def answered_by(conn: sqlite3.Connection, judge_id: str) -> int:
    return conn.execute(
        "SELECT COUNT(*) FROM web_assignments WHERE judge_id = ? AND status = 'submitted'",
        (judge_id,),
    ).fetchone()[0]


def next_assignment(
    project: Project, judge: Judge, settings: WebSettings, at: datetime | None = None
) -> Assignment | None:
    """The judge's open assignment, or a new one; ``None`` when nothing is left for them."""
    at = _now(at)
    with project.store.transaction() as conn:
        release_expired(conn, at)
        row = conn.execute(
            f"{_ASSIGNMENT} WHERE judge_id = ? AND status = 'open' ORDER BY issued_at LIMIT 1",
            (judge.judge_id,),
        ).fetchone()
        if row is not None:
            return Assignment(*row)
        limit = settings.questions_per_judge
        if limit and answered_by(conn, judge.judge_id) >= limit:
            return None
        iteration = open_iteration(conn)
        if iteration is None:
            return None
        candidates = np.array(
            conn.execute(
                """
                SELECT p.pair_id,
                       (SELECT COUNT(*) FROM answers a
                         WHERE a.pair_id = p.pair_id AND a.status != 'rejected')
                     + (SELECT COUNT(*) FROM web_assignments w
                         WHERE w.status = 'open' AND w.pair_id = p.pair_id),
                       p.answers_wanted
                FROM pairs p JOIN hits h ON h.pair_id = p.pair_id AND h.crowd = 'web'
                WHERE p.iteration = ? AND p.pair_id NOT IN
                      (SELECT pair_id FROM web_assignments WHERE judge_id = ?)
                """,
                (iteration, judge.judge_id),
            ).fetchall(),
            dtype=np.int64,
        ).reshape(-1, 3)
        chosen = choose_pair(candidates[:, 0], candidates[:, 1], candidates[:, 2], judge.key)
        if chosen < 0:
            return None
        assignment = Assignment(
            assignment_id=secrets.token_urlsafe(12),
            pair_id=int(candidates[chosen, 0]),
            judge_id=judge.judge_id,
            csrf=new_token(),
            issued_at=_stamp(at),
            expires_at=_stamp(at + timedelta(minutes=settings.timeout_minutes)),
            status="open",
        )
        conn.execute(
            "INSERT INTO web_assignments (assignment_id, pair_id, judge_id, csrf, issued_at,"
            " expires_at, status) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                assignment.assignment_id,
                assignment.pair_id,
                assignment.judge_id,
                assignment.csrf,
                assignment.issued_at,
                assignment.expires_at,
                assignment.status,
            ),
        )
    return assignment


def assignment_of(project: Project, judge: Judge, assignment_id: str) -> Assignment:
    """The judge's own assignment; :class:`Forbidden` for anyone else's or an unknown id."""
    row = project.store.conn.execute(
        f"{_ASSIGNMENT} WHERE assignment_id = ?", (assignment_id,)
    ).fetchone()
    if row is None or row[2] != judge.judge_id:
        raise Forbidden("this question is not yours")
    return Assignment(*row)


def pair_row(project: Project, pair_id: int) -> dict[str, Any]:
    """The ``pairs`` row of ``pair_id`` as a dict."""
    cursor = project.store.conn.execute("SELECT * FROM pairs WHERE pair_id = ?", (pair_id,))
    return dict(zip([d[0] for d in cursor.description], cursor.fetchone(), strict=True))


def batch_complete(conn: sqlite3.Connection, pair_id: int) -> bool:
    """Whether every pair of ``pair_id``'s batch has its answers (checked in that order: the
    pair first, the batch only when the pair is complete)."""
    have_all = """
        SELECT COUNT(*) FROM pairs p
        WHERE {where} AND p.answers_wanted > (
            SELECT COUNT(*) FROM answers a WHERE a.pair_id = p.pair_id AND a.status != 'rejected'
        )
    """
    if conn.execute(have_all.format(where="p.pair_id = ?"), (pair_id,)).fetchone()[0]:
        return False
    iteration = "p.iteration = (SELECT iteration FROM pairs WHERE pair_id = ?)"
    return conn.execute(have_all.format(where=iteration), (pair_id,)).fetchone()[0] == 0


# --- answers ---------------------------------------------------------------------------------


def validate_answer(form: dict[str, str], settings: WebSettings) -> dict[str, Any]:
    """``choice, background, comment, raw`` from a posted form; :class:`WebError` if invalid."""
    choice = form.get("choice")
    if choice not in CHOICES:
        raise WebError("choose one of the three answers before submitting")
    text = {}
    for name in ("background", "comment"):
        value = (form.get(name) or "").strip()
        if len(value) > settings.max_text:
            raise WebError(f"the {name} is longer than {settings.max_text} characters")
        text[name] = value or None
    raw = {k: v for k, v in form.items() if k != "csrf"}
    return {"choice": choice, **text, "raw": json.dumps(raw, ensure_ascii=False, sort_keys=True)}


def submit(
    project: Project,
    judge: Judge,
    assignment_id: str,
    csrf: str | None,
    form: dict[str, str],
    settings: WebSettings,
    at: datetime | None = None,
) -> bool:
    """Store the judge's answer to their assignment; ``False`` when it was already stored.

    Raises :class:`Forbidden` (not the judge's assignment, wrong CSRF token), :class:`WebError`
    (invalid answer) or :class:`Gone` (released and the pair has all its answers meanwhile).
    """
    at = _now(at)
    answer = validate_answer(form, settings)
    with project.store.transaction() as conn:
        assignment = assignment_of(project, judge, assignment_id)
        if not same(csrf, assignment.csrf):
            raise Forbidden("the form's security token is missing or wrong; reload the page")
        if assignment.status == "submitted":
            return False
        pair = conn.execute(
            "SELECT a_is_x, answers_wanted FROM pairs WHERE pair_id = ?", (assignment.pair_id,)
        ).fetchone()
        if assignment.status == "released":
            filled = conn.execute(
                "SELECT (SELECT COUNT(*) FROM answers WHERE pair_id = ? AND status != 'rejected')"
                " + (SELECT COUNT(*) FROM web_assignments WHERE pair_id = ? AND status = 'open')",
                (assignment.pair_id, assignment.pair_id),
            ).fetchone()[0]
            if filled >= pair[1]:
                raise Gone("this question expired and was answered by others meanwhile")
        issued = datetime.fromisoformat(assignment.issued_at)
        row = {
            "pair_id": assignment.pair_id,
            "crowd": "web",
            "assignment_id": assignment.assignment_id,
            "worker_id": judge.judge_id,
            "score": SCORES[answer["choice"], int(pair[0])],
            "seconds": round((at - issued).total_seconds(), 3),
            "accepted_at": assignment.issued_at,
            "submitted_at": _stamp(at),
            **answer,
        }
        # One row: a plain INSERT (Store.insert_answers builds a DataFrame, ~50x slower here).
        conn.execute(
            f"INSERT OR IGNORE INTO answers ({', '.join(ANSWER_COLUMNS)})"
            f" VALUES ({', '.join('?' * len(ANSWER_COLUMNS))})",
            tuple(row[column] for column in ANSWER_COLUMNS),
        )
        conn.execute(
            "UPDATE web_assignments SET status = 'submitted' WHERE assignment_id = ?",
            (assignment_id,),
        )
    return True


# --- progress --------------------------------------------------------------------------------


def batch_progress(project: Project) -> dict[str, Any]:
    """The open batch: pairs complete, answers have/wanted, assignments open, judges active."""
    store = project.store
    last = store.last_batch()
    if last is None:
        return {"iteration": None, "status": None, "pairs": 0}
    frame = store.frame(
        """
        SELECT p.pair_id, p.answers_wanted AS wanted,
               (SELECT COUNT(*) FROM answers a
                 WHERE a.pair_id = p.pair_id AND a.status != 'rejected') AS have,
               (SELECT COUNT(*) FROM web_assignments w
                 WHERE w.pair_id = p.pair_id AND w.status = 'open') AS open
        FROM pairs p WHERE p.iteration = ?
        """,
        (last["iteration"],),
    )
    return {
        "iteration": last["iteration"],
        "status": last["status"],
        "crowd": last["crowd"],
        "pairs": len(frame),
        "pairs_complete": int((frame["have"] >= frame["wanted"]).sum()),
        "answers": int(frame["have"].sum()),
        "answers_wanted": int(frame["wanted"].sum()),
        "open_assignments": int(frame["open"].sum()),
    }


def judge_table(project: Project) -> pd.DataFrame:
    """Per judge: source, answers, share of "equal", median seconds, last answer."""
    return project.store.frame(
        """
        SELECT j.judge_id, j.source, COUNT(a.answer_id) AS answers,
               AVG(a.choice = 'equal') AS equal_share,
               AVG(a.choice = 'A') AS a_share,
               MAX(a.submitted_at) AS last_answer
        FROM web_judges j
        LEFT JOIN answers a ON a.worker_id = j.judge_id AND a.crowd = 'web'
        GROUP BY j.judge_id ORDER BY answers DESC, j.judge_id
        """
    ).merge(
        project.store.frame(
            "SELECT worker_id AS judge_id, seconds FROM answers WHERE crowd = 'web'"
        )
        .groupby("judge_id", as_index=False)["seconds"]
        .median()
        .rename(columns={"seconds": "median_seconds"}),
        on="judge_id",
        how="left",
    )
