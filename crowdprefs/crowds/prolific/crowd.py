"""Prolific as a crowd: a study recruits participants for the project's own web server.

Participants take the study once each; the study's link opens the judges' site (``crowdprefs
serve``) with ``{{%PROLIFIC_PID%}}``, ``{{%STUDY_ID%}}`` and ``{{%SESSION_ID%}}`` filled in by
Prolific, they answer ``[web] questions_per_judge`` questions there (after the headphone check),
and the done page sends them back to ``https://app.prolific.com/submissions/complete?cc=CODE``
with the study's completion code. Their answers are web answers (crowd ``web``): this crowd
records its pairs as the web crowd's, so the server hands them out and moves the campaign on.

What the study is given, from the project:

- **places**: the participants still needed for the open batch, ``⌈answers still wanted /
  questions per participant⌉`` less those taking part now, on top of the places already taken
  (:func:`places_wanted`); places only ever go up, as Prolific allows once a study is
  published;
- **estimated time**: the questions one participant answers, each the seconds of its three clips
  plus ``[prolific] seconds_per_question``, plus ``setup_minutes`` for the instructions and the
  headphone check (:func:`estimated_minutes`);
- **reward** per place: ``[prolific] reward_per_hour`` for that time, in pence or cents
  (:func:`reward_per_place`); a rate below Prolific's minimum (£6.00 / $8.00 an hour) is refused;
- the allow and block lists (``[prolific] allowlist`` / ``blocklist``, and participants blocked by
  earlier reviews), which Prolific freezes once the study is published.

Places follow the campaign by themselves: publishing a batch to this crowd gives the study the
places the batch needs, and collecting (more answers wanted by adaptive rounds) or reviewing
(rejected answers offered again) raises them to what the open batch still wants
(:meth:`ProlificCrowd.keep_up`); the judges' server does both as it moves the campaign on.
Prolific moves a study to ``AWAITING REVIEW`` when its places are briefly all taken (between two
batches); adding places is how it becomes active again (a ``START`` is only for a study the
researcher paused, which is left paused). Spending is checked against ``[crowd] budget``
(in the study's currency) before publishing, adding places or paying bonuses, with ``[prolific]
fee_rate`` for Prolific's service fee. Reviews apply decisions made by the project's review rules
(:mod:`crowdprefs.quality.workers`) to whole submissions; each decision is stored before it is
sent.

A participant who returns the study, or times out (or is rejected before finishing), gives
their questions back at once: Prolific's event says so to the server
(:mod:`crowdprefs.web.prolific_events`, subscribed by :meth:`ProlificCrowd.subscribe`), and
every poll of the study's submissions (:meth:`ProlificCrowd.plan`, :meth:`ProlificCrowd.status`)
catches an event that was lost. The share of participants who left is in
:meth:`ProlificCrowd.status`, with a log line above :data:`HIGH_RETURN_RATE`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from crowdprefs.campaign.project_state import project_budget, remember_budget
from crowdprefs.clock import now
from crowdprefs.crowds.prolific.client import (
    WORKSPACE_ENV,
    ProlificClient,
    token_from_environment,
)
from crowdprefs.crowds.prolific.store import (
    LEFT,
    ProlificStudy,
)
from crowdprefs.crowds.prolific.study import (
    HIGH_RETURN_RATE,
    HOOK_EVENTS,
    HOOK_PATH,
    RETURNED,
    TAKING_PART,
    URL_PARAMETERS,
    ProlificSettings,
    StudyTerms,
    bonus_lines,
    estimated_minutes,
    not_public,
    places_wanted,
    return_rate,
    reward_per_place,
    submission_decisions,
)
from crowdprefs.crowds.web import WebCrowd
from crowdprefs.errors import BudgetError, CrowdError, InputError, StateError
from crowdprefs.hits.render import HitSettings
from crowdprefs.moved import moved_names
from crowdprefs.progress import note

if TYPE_CHECKING:
    from crowdprefs.campaign.budget import FeeModel
    from crowdprefs.campaign.project import Project

log = logging.getLogger("crowdprefs.prolific")


# --- the crowd ------------------------------------------------------------------------------


@dataclass(frozen=True)
class TopUp:
    """A study's places: ``before`` (0 while a draft) and ``places`` wanted, the ``cost`` of
    the difference with fees (minor units), and the study's Prolific ``status``."""

    study: ProlificStudy
    status: str
    before: int
    places: int
    cost: float


class ProlificCrowd:
    """Prolific recruiting for the web crowd: a :class:`~crowdprefs.campaign.crowd.Crowd`
    (pairs are published to the web crowd and the study gets the places they need) and the
    study's calls (create, top up, status, review, bonuses)."""

    #: Answers arrive through the web crowd's server, so pairs and answers are the web crowd's.
    name = "web"
    extension_barrier = None

    def __init__(
        self,
        project: Project,
        client: ProlificClient,
        terms: StudyTerms,
        settings: ProlificSettings | None = None,
    ) -> None:
        self.client = client
        self.terms = terms
        self.settings = settings or ProlificSettings.from_project(project)
        self.web = WebCrowd()

    @classmethod
    def for_crowd(
        cls, name: str, project: Project, *, study_terms: StudyTerms | None = None
    ) -> ProlificCrowd:
        """The crowd of the registry (:data:`crowdprefs.crowds.REGISTRY`): :meth:`for_project`
        with the ``study_terms`` of the judges' site, which the caller computes."""
        if study_terms is None:
            raise InputError(
                "the prolific crowd needs the study terms of the judges' site "
                "(crowdprefs.web.assign.study_terms(project))"
            )
        return cls.for_project(project, study_terms)

    @classmethod
    def for_project(cls, project: Project, terms: StudyTerms) -> ProlificCrowd:
        """The crowd on Prolific's API with the token from ``PROLIFIC_TOKEN``; ``terms`` come
        from the judges' site (:func:`crowdprefs.web.assign.study_terms`), which the caller
        asks: an adapter does not reach up into the server."""
        return cls(project, ProlificClient(token_from_environment()), terms)

    # --- the Crowd port ---------------------------------------------------------------------

    def fees(self, project: Project) -> FeeModel:
        """The fee model of the pairs' HITs: the web crowd's, which holds them (Prolific's own
        service fee, ``[prolific] fee_rate``, is charged on the study's places)."""
        return self.web.fees(project)

    def publish(self, project: Project, pairs: pd.DataFrame) -> int:
        """Give the study the places the open batch needs, then offer ``pairs`` on the web
        crowd (so a refused study leaves them unpublished, to be published again)."""
        self.top_up(project)
        self.web.publish(project, pairs)
        return len(pairs)

    def collect(self, project: Project, pairs: pd.DataFrame) -> int:
        """The answers the pairs hold (the web crowd's), then the study's places raised to
        what the open batch still wants (:meth:`keep_up`: adaptive rounds want more)."""
        held = self.web.collect(project, pairs)
        self.keep_up(project)
        return held

    # --- the study --------------------------------------------------------------------------

    def _open_batch(self, project: Project) -> tuple[int, int, int] | None:
        """``(iteration, missing answers, pairs)`` of the web crowd's open batch, if any."""
        progress = project.store.web_batch_progress()
        if progress["status"] not in ("built", "published") or progress["crowd"] not in (
            None,
            self.name,
        ):
            return None
        missing = int(progress["answers_wanted"]) - int(progress["answers"])
        return int(progress["iteration"]), missing, int(progress["pairs"])

    @staticmethod
    def _listen_seconds(project: Project, iteration: int) -> np.ndarray:
        """Seconds to hear each pair of the batch once (its three clips; NaN while unknown)."""
        ids = project.store.pairs(iteration)["pair_id"]
        return project.store.clip_seconds(ids).sum(axis=1, min_count=3).to_numpy()

    def _questions(self, pairs: int) -> int:
        """Questions one participant answers in a batch of ``pairs`` pairs."""
        cap = min(self.terms.questions, pairs)
        return min(cap, self.terms.per_batch) if self.terms.per_batch else cap

    def quote(self, project: Project) -> tuple[int, int]:
        """``(minutes, reward per place)`` of the open batch's participants."""
        batch = self._open_batch(project)
        if batch is None:
            raise StateError("no batch of the web crowd is open: build the next batch first")
        iteration, _, pairs = batch
        s = self.settings
        minutes = estimated_minutes(
            self._listen_seconds(project, iteration),
            self._questions(pairs),
            s.seconds_per_question,
            s.setup_minutes,
        )
        return minutes, reward_per_place(s.reward_per_hour, minutes)

    def _filters(self, project: Project) -> list[dict]:
        blocked = project.store.blocked_participants()
        lists = {
            "custom_allowlist": sorted(set(self.settings.allowlist)),
            "custom_blocklist": sorted(set(self.settings.blocklist) | set(blocked)),
        }
        return [{"filter_id": k, "selected_values": v} for k, v in lists.items() if v]

    def create(self, project: Project) -> ProlificStudy:
        """A new draft study for the open batch (nothing is spent until it is published)."""
        self.terms.check()
        minutes, reward = self.quote(project)
        hit = HitSettings.from_project(project)
        questions = self._questions(self._open_batch(project)[2])
        body = {
            "name": self.settings.name or hit.title,
            "internal_name": f"crowdprefs {project.root.name}",
            "description": self.settings.description or hit.description,
            "external_study_url": self.terms.make_link() + URL_PARAMETERS,
            "prolific_id_option": "url_parameters",
            "completion_codes": [
                {
                    "code": self.terms.completion_code,
                    "code_type": "COMPLETED",
                    "actions": [{"action": "MANUALLY_REVIEW"}],
                }
            ],
            "total_available_places": 1,
            "estimated_completion_time": minutes,
            "reward": reward,
            "device_compatibility": list(self.settings.devices),
            "peripheral_requirements": ["audio"],
            "filters": self._filters(project),
            "submissions_config": {"max_submissions_per_participant": 1},
        }
        remote = self.client.create_study(body)
        if remote.get("currency_code", self.settings.currency) != self.settings.currency:
            raise InputError(
                f"the Prolific workspace pays in {remote['currency_code']} but [prolific] "
                f"currency is {self.settings.currency}: set it to {remote['currency_code']} "
                f"(draft study {remote['id']} was left unpublished)"
            )
        study = ProlificStudy(
            study_id=remote["id"],
            created_at=now(),
            reward=reward,
            currency=self.settings.currency,
            minutes=minutes,
            questions=questions,
            fee_rate=self.settings.fee_rate,
            completion_code=self.terms.completion_code,
            places=int(remote["total_available_places"]),
            status=remote["status"],
        )
        project.store.add_prolific_study(study)
        return study

    def _check_frozen(self, study: ProlificStudy, remote: dict) -> None:
        """Refuse allow/block lists changed in ``[prolific]`` after the study was published."""
        if remote["status"] == "UNPUBLISHED":
            return
        lists = {f["filter_id"]: set(f["selected_values"]) for f in remote.get("filters", [])}
        if set(self.settings.allowlist) != lists.get("custom_allowlist", set()) or not set(
            self.settings.blocklist
        ) <= lists.get("custom_blocklist", set()):
            raise InputError(
                f"[prolific] allowlist or blocklist differs from study {study.study_id}'s, which "
                "Prolific froze when it was published: restore them as they were"
            )

    def _check_budget(self, project: Project, cost: float, what: str) -> None:
        """``cost`` (minor units, fee included) on top of what is committed, against
        ``[crowd] budget`` (major units of the study's currency)."""
        budget = project_budget(project)
        committed = project.store.prolific_committed()
        if budget is not None and committed + cost > budget * 100 + 1e-6:
            c = self.settings.currency
            raise BudgetError(
                f"{what} costs {cost / 100:.2f} {c} with fees; with {committed / 100:.2f} {c} "
                f"committed it would cross the budget of {budget:.2f} {c} "
                "(raise [crowd] budget in crowdprefs.toml)"
            )
        remember_budget(project)

    def plan(self, project: Project) -> TopUp:
        """What :meth:`apply` would do for the open batch (nothing is spent): the study (a new
        draft when there is none), its places now and the places wanted, and what the new
        places cost with fees."""
        self.terms.check()
        study = project.store.prolific_study()
        if study is None or study.status == "COMPLETED":
            study = self.create(project)
        remote = self.client.study(study.study_id)
        if remote["status"] == "COMPLETED":
            raise StateError(f"study {study.study_id} was stopped on Prolific")
        self._check_frozen(study, remote)
        published = remote["status"] != "UNPUBLISHED"
        before = int(remote["total_available_places"]) if published else 0
        wanted = before
        batch = self._open_batch(project)
        if batch is not None:
            iteration, missing, _ = batch
            submissions = list(self.client.submissions(study.study_id))
            self._reclaim(project, study, submissions)
            active = self._answering(project, submissions, iteration)
            taken = int(remote.get("places_taken", 0))
            wanted = places_wanted(before, taken, active, missing, study.questions)
            minutes, _ = self.quote(project)
            if minutes > study.minutes:
                note(
                    f"batch {iteration} takes about {minutes} min per participant but study "
                    f"{study.study_id} pays for {study.minutes}: consider a bonus"
                )
        cost = (wanted - before) * study.reward * (1 + study.fee_rate)
        return TopUp(study, remote["status"], before, wanted, cost)

    @staticmethod
    def _reclaim(project: Project, study: ProlificStudy, submissions: Iterable[dict]) -> int:
        """The poll's reconciliation: participants Prolific shows as gone (returned, timed out,
        rejected) give back the questions they still hold, should their event have been lost
        (or arrived while the server was down)."""
        gone = [s["participant_id"] for s in submissions if s["status"] in LEFT]
        released = project.store.reclaim_prolific_places(gone) if gone else 0
        if released:
            note(
                f"study {study.study_id}: {released} questions held by participants who left "
                "went back to the pool"
            )
        return released

    def _answering(self, project: Project, submissions: Iterable[dict], iteration: int) -> int:
        """Participants taking part now who may still answer in batch ``iteration``: those
        whose judge has answered fewer than the questions one participant answers, and fewer
        than ``per_batch`` of this batch (one who reached either is only on the way back to
        Prolific, or waits for the next batch)."""
        taking = {s["participant_id"] for s in submissions if s["status"] in TAKING_PART}
        judges = project.store.web_participants(iteration)
        judges = judges[judges["participant"].isin(taking)]
        done = judges["answered"] >= self.terms.questions
        if self.terms.per_batch:
            done |= judges["answered_in"] >= self.terms.per_batch
        return len(taking) - int(done.sum())

    def apply(self, project: Project, plan: TopUp) -> TopUp:
        """Publish the draft with the planned places, or add places to the published study
        (never fewer), after checking the budget; returns the plan with the study's new
        status."""
        study, wanted = plan.study, plan.places
        if wanted <= plan.before:
            return plan
        what = "publishing" if plan.status == "UNPUBLISHED" else "adding"
        self._check_budget(project, plan.cost, f"{what} {wanted - plan.before} places")
        if plan.status == "UNPUBLISHED":
            self.client.update_study(study.study_id, {"total_available_places": wanted})
            remote = self._publish(study.study_id)
            project.store.update_prolific_study(
                study.study_id, places=wanted, status=remote["status"], published_at=now()
            )
        else:
            remote = self.client.update_study(study.study_id, {"total_available_places": wanted})
            project.store.update_prolific_study(
                study.study_id, places=wanted, status=remote["status"]
            )
            if remote["status"] == "PAUSED":
                note(f"study {study.study_id} is paused on Prolific: start it there to recruit")
        return TopUp(study, remote["status"], plan.before, wanted, plan.cost)

    def top_up(self, project: Project) -> TopUp:
        """Give the study the places the open batch still needs (:meth:`plan`, then
        :meth:`apply`)."""
        return self.apply(project, self.plan(project))

    def keep_up(self, project: Project) -> TopUp | None:
        """Raise the published study's places to what the open batch still wants (more answers
        wanted, rejected answers offered again), with a note when places are added; nothing
        while the project has no published study (``publish`` makes one) or it was stopped."""
        study = project.store.prolific_study()
        if study is None or study.status in ("UNPUBLISHED", "COMPLETED"):
            return None
        done = self.top_up(project)
        if done.places > done.before:
            note(
                f"study {study.study_id}: {done.before} → {done.places} places for the answers "
                f"still wanted ({done.status.lower()})"
            )
        return done

    def _publish(self, study_id: str) -> dict:
        """Publish; a reply lost after Prolific published (the retry is refused) counts as
        published when the study says so."""
        try:
            return self.client.publish_study(study_id)
        except CrowdError:
            remote = self.client.study(study_id)
            if remote["status"] == "UNPUBLISHED":
                raise
            return remote

    def _study(self, project: Project) -> ProlificStudy:
        study = project.store.prolific_study()
        if study is None:
            raise StateError("the project has no Prolific study yet: publish it first")
        return study

    def status(self, project: Project) -> dict[str, Any]:
        """The study as Prolific reports it and what the open batch still needs, with the
        ``return_rate`` (returned and timed out over started; a log line above
        :data:`HIGH_RETURN_RATE`). A poll: questions still held by participants who left go
        back to the pool."""
        study = self._study(project)
        remote = self.client.study(study.study_id)
        listed = list(self.client.submissions(study.study_id))
        self._reclaim(project, study, listed)
        submissions = pd.DataFrame(listed)
        counts = submissions["status"].value_counts().to_dict() if len(submissions) else {}
        counts = {str(k): int(v) for k, v in counts.items()}
        rate = return_rate(counts)
        if rate > HIGH_RETURN_RATE:
            log.warning(
                "study %s: %d of %d participants returned it or timed out (%.0f%%, above %.0f%%)",
                study.study_id,
                sum(counts.get(s, 0) for s in RETURNED),
                sum(counts.values()),
                100 * rate,
                100 * HIGH_RETURN_RATE,
            )
        batch = self._open_batch(project)
        return {
            "study_id": study.study_id,
            "status": remote["status"],
            "places": int(remote["total_available_places"]),
            "places_taken": int(remote.get("places_taken", 0)),
            "reward": study.reward,
            "currency": study.currency,
            "minutes": study.minutes,
            "questions": study.questions,
            "submissions": counts,
            "return_rate": rate,
            "high_return_rate": rate > HIGH_RETURN_RATE,
            "batch": None if batch is None else batch[0],
            "answers_missing": 0 if batch is None else batch[1],
            "committed": project.store.prolific_committed() / 100,
        }

    # --- events and test runs ---------------------------------------------------------------

    def _workspace(self) -> str:
        """The workspace to subscribe in: :data:`~.client.WORKSPACE_ENV`, else the only one
        the token reaches."""
        chosen = os.environ.get(WORKSPACE_ENV, "").strip()
        if chosen:
            return chosen
        found = [str(w["id"]) for w in self.client.workspaces()]
        if len(found) != 1:
            raise InputError(
                f"the Prolific token reaches {len(found)} workspaces: set {WORKSPACE_ENV} to "
                "the study's"
            )
        return found[0]

    def subscribe(self, base_url: str) -> str:
        """Subscribe the server at ``base_url`` to the study's events (:data:`HOOK_EVENTS`, at
        :data:`HOOK_PATH`) where Prolific can reach it (public https), each once; one line
        saying what was done, or why nothing was (the server then relies on polling)."""
        target = base_url.rstrip("/") + HOOK_PATH
        why = not_public(base_url)
        if why:
            return (
                f"events: not subscribed, [web] base_url {base_url} {why} (Prolific posts to "
                "public https addresses only); the study is followed by polling"
            )
        workspace = self._workspace()
        held = {
            s["event_type"]
            for s in self.client.subscriptions(workspace)
            if s.get("target_url") == target and s.get("is_enabled")
        }
        added = [event for event in HOOK_EVENTS if event not in held]
        for event in added:
            self.client.subscribe(workspace, event, target)
        if not added:
            return f"events: {target} is subscribed"
        return f"events: subscribed {target} to {', '.join(added)}"

    def test_run(self, project: Project, testers: Iterable[str] = ()) -> dict[str, Any]:
        """A dry run in Prolific's test mode: the project's draft study (made if need be) is
        copied into a test study published to the workspace's test participants, the
        ``testers`` (emails Prolific does not know yet) added as test participants first;
        nothing is spent and the draft stays a draft. Refused, in Prolific's line, where the
        workspace does not have test studies. Returns ``draft``, ``study_id``, ``study_url``
        and the new ``testers``' participant ids."""
        self.terms.check()
        study = project.store.prolific_study()
        if study is None or study.status == "COMPLETED":
            study = self.create(project)
        remote = self.client.study(study.study_id)
        if remote["status"] != "UNPUBLISHED":
            raise StateError(
                f"study {study.study_id} is already {remote['status'].lower()}: a test run is "
                "made from a draft, before the study is published"
            )
        added = [self.client.add_test_participant(email) for email in testers]
        made = self.client.test_study(study.study_id)
        return {
            "draft": study.study_id,
            "study_id": str(made["study_id"]),
            "study_url": str(made.get("study_url") or ""),
            "testers": added,
        }

    # --- review and bonuses -----------------------------------------------------------------

    def answers(self, project: Project) -> pd.DataFrame:
        """The web crowd's answers (rejected ones included), as the review rules read them."""
        answers = project.store.answers(include_rejected=True)
        return answers[answers["crowd"] == self.name].reset_index(drop=True)

    def review(
        self, project: Project, flags: pd.DataFrame, rejected_answers: pd.DataFrame
    ) -> dict[str, int]:
        """Decide every submission awaiting review with the review rules' ``flags``
        (``worker_id, reason, rule``) and reject the single ``rejected_answers``
        (``assignment_id, reason``); store the decisions, apply them to the answers (a rejected
        participant's answers stop counting and their pairs are offered again), then send them
        to Prolific (rejections one by one, approvals in one call). Decisions stored earlier
        and not yet sent are sent first. The study then gets the places the answers offered
        again need (:meth:`keep_up`)."""
        study = self._study(project)
        decided = set(project.store.prolific_reviews()["submission_id"])
        awaiting = pd.DataFrame(
            [
                {
                    "submission_id": s["id"],
                    "study_id": study.study_id,
                    "participant_id": s["participant_id"],
                }
                for s in self.client.submissions(study.study_id)
                if s["status"] == "AWAITING REVIEW" and s["id"] not in decided
            ],
            columns=["submission_id", "study_id", "participant_id"],
        )
        judges = project.store.web_participants()
        answered = self.answers(project).groupby("worker_id").size()
        decisions = submission_decisions(awaiting, judges, answered, flags)
        stamp = now()
        if len(decisions):
            project.store.decide_prolific_reviews(decisions, stamp)
            rejected = decisions[decisions["decision"] == "reject"].dropna(subset=["judge_id"])
            approved = decisions.loc[decisions["decision"] == "approve", "judge_id"]
            mine = rejected_answers[rejected_answers["worker_id"].isin(approved)]
            project.store.decide_web_workers(
                list(zip(rejected["judge_id"], rejected["message"], strict=True)),
                approved.tolist(),
                stamp,
                list(zip(mine["assignment_id"], mine["reason"], strict=True)),
            )
        sent = self._send_reviews(project)
        self.keep_up(project)
        return sent

    def _send_reviews(self, project: Project) -> dict[str, int]:
        pending = project.store.pending_prolific_reviews()
        rejects = pending[pending["decision"] == "reject"]
        for submission, category, message in rejects[
            ["submission_id", "category", "message"]
        ].itertuples(index=False):
            self.client.reject(submission, message, category)
            project.store.applied_prolific_reviews([submission], now())
        approves = pending.loc[pending["decision"] == "approve", "submission_id"].tolist()
        if approves:
            self.client.approve(approves)
            project.store.applied_prolific_reviews(approves, now())
        return {"approved": len(approves), "rejected": len(rejects)}

    def bonus(self, project: Project, per_answer: float) -> dict[str, int]:
        """Pay each approved participant ``per_answer`` (major units) for every answer of theirs
        that counts, less what earlier bonuses gave them; bonuses set up before and not known
        to be paid are paid first. Returns ``participants`` and ``amount`` (minor units)."""
        study = self._study(project)
        unit = round(per_answer * 100)
        if unit < 1 or abs(per_answer * 100 - unit) > 1e-6:
            raise InputError(f"a bonus is a positive sum of whole pence or cents, got {per_answer}")
        for bonus_id in project.store.unpaid_prolific_bonuses()["bonus_id"]:
            self._pay(project, study.study_id, bonus_id)
        submissions = list(self.client.submissions(study.study_id))
        approved = {s["participant_id"] for s in submissions if s["status"] == "APPROVED"}
        judges = project.store.web_participants().set_index("judge_id")["participant"]
        answers = self.answers(project)
        usable = answers[answers["status"] != "rejected"]
        answered = usable.groupby(usable["worker_id"].map(judges)).size()
        answered = answered[answered.index.isin(approved)]
        lines = bonus_lines(unit, answered, project.store.prolific_bonus_totals())
        if not lines:
            return {"participants": 0, "amount": 0}
        amount = sum(a for _, a in lines)
        self._check_budget(
            project, amount * (1 + self.settings.fee_rate), f"a bonus of {amount / 100:.2f}"
        )
        bonus = self.client.set_up_bonuses(study.study_id, lines)
        project.store.add_prolific_bonus(
            bonus["id"], study.study_id, lines, self.settings.fee_rate, now()
        )
        self._pay(project, study.study_id, bonus["id"])
        return {"participants": len(lines), "amount": amount}

    def _pay(self, project: Project, study_id: str, bonus_id: str) -> None:
        """Pay a bonus set up before; a reply lost after Prolific paid (the retry is refused)
        counts as paid when every participant's bonuses show it."""
        try:
            self.client.pay_bonuses(bonus_id)
        except CrowdError:
            given = {
                s["participant_id"]: sum(s.get("bonus_payments") or [])
                for s in self.client.submissions(study_id)
            }
            paid = project.store.prolific_bonus_totals()  # this bonus included
            lines = project.store.prolific_bonus_lines(bonus_id)
            if not all(given.get(p, 0) >= paid.get(p, 0) for p in lines["participant_id"]):
                raise
        project.store.paid_prolific_bonus(bonus_id, now())


MOVED = dict.fromkeys(
    (
        "MIN_HOURLY", "COMPLETE_URL", "REJECTION_CATEGORIES", "CATEGORY_OF_RULE", "REJECTION_NOTE",
        "NO_ANSWERS", "PARTICIPANT_ID", "event_returns",
    ),
    "crowdprefs.crowds.prolific.study",
)  # fmt: skip
"""The study's terms and rules, moved to :mod:`crowdprefs.crowds.prolific.study`."""
__getattr__ = moved_names(__name__, MOVED)
