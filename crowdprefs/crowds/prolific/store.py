"""The Prolific study's part of the project state: the study, review decisions, bonuses and
the events Prolific posts to the server.

Money is counted in the study currency's minor unit (pence or cents), as Prolific does. Every
decision is stored before it is sent to Prolific and marked applied afterwards, so a crash in
between is finished by the next run; a bonus is stored once set up, before it is paid, so a
participant is never owed the same bonus twice. An event is stored and applied in one
transaction, once (by its id: Prolific delivers at least once), and only when no later event of
the same resource was applied before it (Prolific does not keep their order).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from typing import Literal

import lazy_loader
from sqlalchemy import bindparam, func, select, update

from crowdprefs.campaign.store.base import StoreBase, insert_ignore, now
from crowdprefs.campaign.store.schema import StatePart
from crowdprefs.crowds.prolific import schema
from crowdprefs.crowds.prolific import tables as pt
from crowdprefs.crowds.web.sql import release_participants

pd = lazy_loader.load("pandas")  # imported on first use


@dataclass(frozen=True)
class ProlificStudy:
    """A Prolific study of the project, as crowdprefs created and last saw it: ``reward`` per
    place in minor units for ``minutes`` of estimated completion time and ``questions`` per
    participant, the service ``fee_rate`` counted against the budget, the ``completion_code``,
    total ``places`` and ``status``."""

    study_id: str
    created_at: str
    reward: int
    currency: str
    minutes: int
    questions: int
    fee_rate: float
    completion_code: str
    places: int
    status: str
    published_at: str | None = None

    @property
    def committed(self) -> float:
        """What the study's places cost at most, fee included (minor units)."""
        return self.places * self.reward * (1 + self.fee_rate)


LEFT = ("RETURNED", "TIMED-OUT", "REJECTED")
"""Submission statuses of a participant who left the study before finishing (a rejected one
who had finished holds no question): their questions go back to the pool at once."""
STUDY_STATUS, STUDY_PROGRESS, SUBMISSION_STATUS = (
    "study.status.change",
    "study.progress.change",
    "submission.status.change",
)


@dataclass(frozen=True)
class ProlificEvent:
    """One event Prolific posted: its ``event_id`` (``X-Event-ID``), ``event_type``, the
    ``resource_id`` (a study or a submission), the new ``status`` and the submission's
    ``participant_id`` where the event has them, and ``event_at``, Prolific's UNIX time of it."""

    event_id: str
    event_type: str
    resource_id: str
    status: str | None
    participant_id: str | None
    event_at: float


EventOutcome = Literal["applied", "duplicate", "older", "ignored"]


@dataclass(frozen=True)
class EventResult:
    """What became of an event: ``applied``; ``duplicate`` (stored before: nothing changes);
    ``older`` than an event of the same resource applied before (stored, not applied: a status
    never moves back); ``ignored`` (stored; not the project's study, or an unknown type).
    ``released``: the questions it gave back to the pool."""

    outcome: EventOutcome
    released: int = 0


_STUDY_COLUMNS = [pt.prolific_studies.c[field.name] for field in fields(ProlificStudy)]


_DECISION = tuple(
    pt.prolific_reviews.c[name]
    for name in ("submission_id", "participant_id", "decision", "category", "message")
)
"""A submission's review decision, as the study is told it."""


class ProlificStore(StoreBase):
    """The Prolific methods of :class:`~crowdprefs.campaign.store.Store` (a mixin)."""

    # --- the study ------------------------------------------------------------------------------

    def prolific_study(self) -> ProlificStudy | None:
        """The project's latest Prolific study, if any."""
        studies = pt.prolific_studies
        row = self.rows(
            select(*_STUDY_COLUMNS)
            .order_by(studies.c.created_at.desc(), studies.c.study_id.desc())
            .limit(1)
        )
        return ProlificStudy(*row[0]) if row else None

    def add_prolific_study(self, study: ProlificStudy) -> None:
        """Record a study just created on Prolific."""
        with self.transaction() as conn:
            conn.execute(pt.prolific_studies.insert().values(**asdict(study)))

    def update_prolific_study(
        self,
        study_id: str,
        *,
        places: int | None = None,
        status: str | None = None,
        published_at: str | None = None,
    ) -> None:
        """Record what Prolific now says of the study (``None``: unchanged)."""
        studies = pt.prolific_studies
        changes = {"places": places, "status": status}
        values = {name: value for name, value in changes.items() if value is not None}
        with self.transaction() as conn:
            conn.execute(
                update(studies)
                .where(studies.c.study_id == study_id)
                .values(**values, published_at=func.coalesce(studies.c.published_at, published_at))
            )

    def prolific_committed(self) -> float:
        """Everything the project's Prolific studies may cost, in minor units: every place at
        its study's reward and every bonus set up, each with its service fee."""
        studies, bonuses = pt.prolific_studies, pt.prolific_bonuses
        places = select(
            func.coalesce(
                func.sum(studies.c.places * studies.c.reward * (1 + studies.c.fee_rate)), 0
            )
        ).where(studies.c.published_at.is_not(None))
        bonus = select(func.coalesce(func.sum(bonuses.c.amount * (1 + bonuses.c.fee_rate)), 0))
        with self.read() as conn:
            return float(conn.execute(places).scalar()) + float(conn.execute(bonus).scalar())

    # --- events ---------------------------------------------------------------------------------

    def record_prolific_event(self, event: ProlificEvent, received_at: str) -> EventResult:
        """Store ``event`` and apply it, in one transaction (see :class:`EventResult`): a study
        event sets the project's study's status; a submission whose participant left
        (:data:`LEFT`) releases the questions their judge holds, so other judges get them at
        once; a progress event changes nothing here (the caller polls the study)."""
        events, studies = pt.prolific_events, pt.prolific_studies
        with self.transaction() as conn:
            stored = conn.execute(
                insert_ignore(conn, events)
                .values(**asdict(event), received_at=received_at)
                .returning(events.c.event_id)
            ).first()
            if stored is None:
                return EventResult("duplicate")
            later = conn.execute(
                select(func.count()).where(
                    events.c.resource_id == event.resource_id,
                    events.c.event_type == event.event_type,
                    events.c.applied_at.is_not(None),
                    events.c.event_at > event.event_at,
                )
            ).scalar_one()
            if later:
                return EventResult("older")
            ours = studies.c.study_id == event.resource_id
            released, applied = 0, False
            if event.event_type == STUDY_STATUS and event.status:
                changed = conn.execute(update(studies).where(ours).values(status=event.status))
                applied = changed.rowcount > 0
            elif event.event_type == STUDY_PROGRESS:
                applied = conn.execute(select(func.count()).where(ours)).scalar_one() > 0
            elif event.event_type == SUBMISSION_STATUS and event.status:
                applied = True
                if event.status in LEFT and event.participant_id:
                    released = release_participants(conn, [event.participant_id], received_at)
            if not applied:
                return EventResult("ignored")
            conn.execute(
                update(events)
                .where(events.c.event_id == event.event_id)
                .values(applied_at=received_at)
            )
        return EventResult("applied", released)

    def reclaim_prolific_places(self, participants: Sequence[str]) -> int:
        """The poll's side of :meth:`record_prolific_event`: release the questions held by the
        judges of ``participants`` whose submissions Prolific shows as left (:data:`LEFT`), an
        event of which may have been lost; returns how many."""
        with self.transaction() as conn:
            return release_participants(conn, participants, now())

    def prolific_events(self) -> pd.DataFrame:
        """Every event received, in Prolific's order: ``event_id, event_type, resource_id,
        status, participant_id, event_at, received_at, applied_at``."""
        events = pt.prolific_events
        return self.frame(select(events).order_by(events.c.event_at, events.c.received_at))

    # --- review decisions -----------------------------------------------------------------------

    def decide_prolific_reviews(self, decisions: pd.DataFrame, decided_at: str) -> None:
        """Store decisions ``submission_id, study_id, participant_id, decision, category,
        message`` (a submission decided before keeps its first decision)."""
        rows = decisions[
            ["submission_id", "study_id", "participant_id", "decision", "category", "message"]
        ]
        rows = rows.astype(object).where(rows.notna(), None).assign(decided_at=decided_at)
        if not len(rows):
            return
        with self.transaction() as conn:
            conn.execute(insert_ignore(conn, pt.prolific_reviews), rows.to_dict("records"))

    def pending_prolific_reviews(self) -> pd.DataFrame:
        """Decisions not yet sent: ``submission_id, participant_id, decision, category,
        message``."""
        reviews = pt.prolific_reviews
        return self.frame(
            select(*_DECISION)
            .where(reviews.c.applied_at.is_(None))
            .order_by(reviews.c.decided_at, reviews.c.submission_id)
        )

    def prolific_reviews(self) -> pd.DataFrame:
        """Every decision: ``submission_id, participant_id, decision, category, message,
        decided_at, applied_at``."""
        reviews = pt.prolific_reviews
        return self.frame(
            select(
                *_DECISION,
                reviews.c.decided_at,
                reviews.c.applied_at,
            ).order_by(reviews.c.decided_at, reviews.c.submission_id)
        )

    def applied_prolific_reviews(self, submission_ids: Sequence[str], applied_at: str) -> None:
        """Mark decisions as sent to Prolific."""
        if not len(submission_ids):
            return
        reviews = pt.prolific_reviews
        with self.transaction() as conn:
            conn.execute(
                update(reviews)
                .where(reviews.c.submission_id == bindparam("submission"))
                .values(applied_at=applied_at),
                [{"submission": str(s)} for s in submission_ids],
            )

    # --- bonuses --------------------------------------------------------------------------------

    def add_prolific_bonus(
        self,
        bonus_id: str,
        study_id: str,
        lines: Sequence[tuple[str, int]],
        fee_rate: float,
        created_at: str,
    ) -> None:
        """Record a bonus set up on Prolific (not paid yet): ``(participant_id, amount)``
        lines in minor units."""
        with self.transaction() as conn:
            conn.execute(
                pt.prolific_bonuses.insert().values(
                    bonus_id=bonus_id,
                    study_id=study_id,
                    amount=int(sum(a for _, a in lines)),
                    fee_rate=fee_rate,
                    created_at=created_at,
                )
            )
            if lines:
                conn.execute(
                    pt.prolific_bonus_lines.insert(),
                    [
                        {"bonus_id": bonus_id, "participant_id": p, "amount": int(a)}
                        for p, a in lines
                    ],
                )

    def unpaid_prolific_bonuses(self) -> pd.DataFrame:
        """Bonuses set up but not known to be paid: ``bonus_id, study_id, amount``."""
        bonuses = pt.prolific_bonuses
        return self.frame(
            select(bonuses.c.bonus_id, bonuses.c.study_id, bonuses.c.amount)
            .where(bonuses.c.paid_at.is_(None))
            .order_by(bonuses.c.created_at, bonuses.c.bonus_id)
        )

    def prolific_bonus_lines(self, bonus_id: str) -> pd.DataFrame:
        """``participant_id, amount`` of one bonus."""
        lines = pt.prolific_bonus_lines
        return self.frame(
            select(lines.c.participant_id, lines.c.amount)
            .where(lines.c.bonus_id == bonus_id)
            .order_by(lines.c.participant_id)
        )

    def paid_prolific_bonus(self, bonus_id: str, paid_at: str) -> None:
        bonuses = pt.prolific_bonuses
        with self.transaction() as conn:
            conn.execute(
                update(bonuses).where(bonuses.c.bonus_id == bonus_id).values(paid_at=paid_at)
            )

    def prolific_bonus_totals(self) -> dict[str, int]:
        """Per participant, every bonus set up so far (paid or not), in minor units."""
        lines = pt.prolific_bonus_lines
        query = select(lines.c.participant_id, func.sum(lines.c.amount)).group_by(
            lines.c.participant_id
        )
        return {p: int(a) for p, a in self.rows(query)}


STATE = StatePart(role=ProlificStore, migrations=schema.MIGRATIONS)
"""The Prolific study's part of the project state (:data:`crowdprefs.registry.PLATFORMS` names
it): its role and its migrations (:mod:`.schema`)."""
