"""The Prolific study's part of the project state: the study, review decisions and bonuses.

Money is counted in the study currency's minor unit (pence or cents), as Prolific does. Every
decision is stored before it is sent to Prolific and marked applied afterwards, so a crash in
between is finished by the next run; a bonus is stored once set up, before it is paid, so a
participant is never owed the same bonus twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import lazy_loader

from crowdprefs.campaign.store.base import SQLiteBase

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


_STUDY = (
    "SELECT study_id, created_at, reward, currency, minutes, questions, fee_rate, completion_code,"
    " places, status, published_at FROM prolific_studies"
)


class ProlificStore(SQLiteBase):
    """The Prolific methods of :class:`~crowdprefs.campaign.store.Store` (a mixin)."""

    # --- the study ------------------------------------------------------------------------------

    def prolific_study(self) -> ProlificStudy | None:
        """The project's latest Prolific study, if any."""
        row = self.conn.execute(f"{_STUDY} ORDER BY created_at DESC, rowid DESC LIMIT 1").fetchone()
        return None if row is None else ProlificStudy(*row)

    def add_prolific_study(self, study: ProlificStudy) -> None:
        """Record a study just created on Prolific."""
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO prolific_studies (study_id, created_at, reward, currency, minutes,"
                " questions, fee_rate, completion_code, places, status, published_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    study.study_id,
                    study.created_at,
                    study.reward,
                    study.currency,
                    study.minutes,
                    study.questions,
                    study.fee_rate,
                    study.completion_code,
                    study.places,
                    study.status,
                    study.published_at,
                ),
            )

    def update_prolific_study(
        self,
        study_id: str,
        *,
        places: int | None = None,
        status: str | None = None,
        published_at: str | None = None,
    ) -> None:
        """Record what Prolific now says of the study (``None``: unchanged)."""
        with self.transaction() as conn:
            conn.execute(
                "UPDATE prolific_studies SET places = COALESCE(?, places),"
                " status = COALESCE(?, status), published_at = COALESCE(published_at, ?)"
                " WHERE study_id = ?",
                (places, status, published_at, study_id),
            )

    def prolific_committed(self) -> float:
        """Everything the project's Prolific studies may cost, in minor units: every place at
        its study's reward and every bonus set up, each with its service fee."""
        places, bonuses = self.conn.execute(
            "SELECT (SELECT COALESCE(SUM(places * reward * (1 + fee_rate)), 0)"
            " FROM prolific_studies WHERE published_at IS NOT NULL),"
            " (SELECT COALESCE(SUM(amount * (1 + fee_rate)), 0) FROM prolific_bonuses)"
        ).fetchone()
        return float(places) + float(bonuses)

    # --- review decisions -----------------------------------------------------------------------

    def decide_prolific_reviews(self, decisions: pd.DataFrame, decided_at: str) -> None:
        """Store decisions ``submission_id, study_id, participant_id, decision, category,
        message`` (a submission decided before keeps its first decision)."""
        rows = decisions[
            ["submission_id", "study_id", "participant_id", "decision", "category", "message"]
        ]
        rows = rows.astype(object).where(rows.notna(), None)
        with self.transaction() as conn:
            conn.executemany(
                "INSERT OR IGNORE INTO prolific_reviews (submission_id, study_id, participant_id,"
                " decision, category, message, decided_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(*row, decided_at) for row in rows.itertuples(index=False, name=None)],
            )

    def pending_prolific_reviews(self) -> pd.DataFrame:
        """Decisions not yet sent: ``submission_id, participant_id, decision, category,
        message``."""
        return self.frame(
            "SELECT submission_id, participant_id, decision, category, message"
            " FROM prolific_reviews WHERE applied_at IS NULL ORDER BY rowid"
        )

    def prolific_reviews(self) -> pd.DataFrame:
        """Every decision: ``submission_id, participant_id, decision, category, message,
        decided_at, applied_at``."""
        return self.frame(
            "SELECT submission_id, participant_id, decision, category, message, decided_at,"
            " applied_at FROM prolific_reviews ORDER BY rowid"
        )

    def applied_prolific_reviews(self, submission_ids: Sequence[str], applied_at: str) -> None:
        """Mark decisions as sent to Prolific."""
        with self.transaction() as conn:
            conn.executemany(
                "UPDATE prolific_reviews SET applied_at = ? WHERE submission_id = ?",
                [(applied_at, s) for s in submission_ids],
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
                "INSERT INTO prolific_bonuses (bonus_id, study_id, amount, fee_rate, created_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (bonus_id, study_id, int(sum(a for _, a in lines)), fee_rate, created_at),
            )
            conn.executemany(
                "INSERT INTO prolific_bonus_lines (bonus_id, participant_id, amount)"
                " VALUES (?, ?, ?)",
                [(bonus_id, p, int(a)) for p, a in lines],
            )

    def unpaid_prolific_bonuses(self) -> pd.DataFrame:
        """Bonuses set up but not known to be paid: ``bonus_id, study_id, amount``."""
        return self.frame(
            "SELECT bonus_id, study_id, amount FROM prolific_bonuses WHERE paid_at IS NULL"
            " ORDER BY rowid"
        )

    def prolific_bonus_lines(self, bonus_id: str) -> pd.DataFrame:
        """``participant_id, amount`` of one bonus."""
        return self.frame(
            "SELECT participant_id, amount FROM prolific_bonus_lines WHERE bonus_id = ?",
            (bonus_id,),
        )

    def paid_prolific_bonus(self, bonus_id: str, paid_at: str) -> None:
        with self.transaction() as conn:
            conn.execute(
                "UPDATE prolific_bonuses SET paid_at = ? WHERE bonus_id = ?", (paid_at, bonus_id)
            )

    def prolific_bonus_totals(self) -> dict[str, int]:
        """Per participant, every bonus set up so far (paid or not), in minor units."""
        return {
            p: int(a)
            for p, a in self.conn.execute(
                "SELECT participant_id, SUM(amount) FROM prolific_bonus_lines"
                " GROUP BY participant_id"
            )
        }
