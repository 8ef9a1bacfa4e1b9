"""Commands: ``prolific publish | status | review | bonus``.

A Prolific study recruits participants for the project's web server (``crowdprefs serve``).
The API token is read from the environment variable ``PROLIFIC_TOKEN`` only; ``--fake`` works
on the project's local fake of Prolific instead (no network, no money, no token).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console
from crowdprefs.cli.options import finite

if TYPE_CHECKING:
    from crowdprefs.campaign.crowd import Crowd
    from crowdprefs.campaign.project import Project
    from crowdprefs.crowds.prolific.crowd import ProlificCrowd

prolific_app = typer.Typer(
    help="Recruit the web server's judges with a Prolific study: publish it, follow it, review "
    "submissions, pay bonuses (token from PROLIFIC_TOKEN).",
    no_args_is_help=True,
)
app.add_typer(prolific_app, name="prolific")

ProjectDir = Annotated[
    Path, typer.Argument(help="The project folder (holds crowdprefs.toml and state.sqlite).")
]
Fake = Annotated[
    bool,
    typer.Option("--fake", help="Use the project's local fake of Prolific (no network, no money)."),
]
Yes = Annotated[bool, typer.Option("--yes", "-y", help="Spend without asking to confirm.")]

FAKE_TOKEN = "local-fake-token"
"""The token between the CLI and the local fake (it never leaves this machine)."""


def crowd_backend(name: str, project: Project, *, simulated_on_real: bool = False) -> Crowd:
    """The crowd backend called ``name`` (:func:`crowdprefs.crowds.get_crowd`); the Prolific
    crowd is handed the study terms of the project's judges' site, and the simulated crowd
    may answer a project holding other crowds' answers only with ``simulated_on_real``
    (:meth:`~crowdprefs.crowds.simulated.SimulatedCrowd.check`)."""
    from crowdprefs.crowds import get_crowd

    if name == "simulated":
        from crowdprefs.crowds.simulated import SimulatedCrowd

        return SimulatedCrowd.for_project(project, on_real=simulated_on_real)
    if name != "prolific":
        return get_crowd(name, project)
    from crowdprefs.web.assign import study_terms

    return get_crowd(name, project, study_terms=study_terms(project))


def _crowd(project: Project, fake: bool) -> tuple[ProlificCrowd, object | None]:
    """The project's Prolific crowd, and the fake it talks to (``None`` for Prolific)."""
    from crowdprefs.crowds.prolific.client import ProlificClient
    from crowdprefs.crowds.prolific.crowd import ProlificCrowd
    from crowdprefs.web.assign import study_terms

    if not fake:
        return ProlificCrowd.for_project(project, study_terms(project)), None
    from crowdprefs.crowds.prolific.fake import start_for_project

    server = start_for_project(project.root, FAKE_TOKEN)
    client = ProlificClient(FAKE_TOKEN, server.url)
    return ProlificCrowd(project, client, study_terms(project)), server


def check_served(project: Project, directory: Path) -> None:
    """Refuse to recruit for a batch the judges' site does not offer, where participants would
    find no question: one still ``built`` was published by no server (``crowdprefs serve``
    publishes each batch as it opens), and one published to another crowd is not the site's."""
    from crowdprefs.errors import StateError

    last = project.store.last_batch()
    where = shlex.quote(str(directory))
    if last is not None and last["status"] == "built":
        raise StateError(
            f"batch {last['iteration']} is not on the judges' site: no server has published it, "
            f"so participants would find no question; start 'crowdprefs serve {where}' (it "
            "publishes the batch), then run this again"
        )
    if last is not None and last["status"] == "published" and last["crowd"] != "web":
        raise StateError(
            f"batch {last['iteration']} belongs to the {last['crowd']} crowd, not the judges' "
            "site: participants would find no question; the next batch can go to the site "
            f"once this one is aggregated ('crowdprefs serve {where}' publishes it)"
        )


def note_unserved(project: Project, directory: Path) -> None:
    """A note when nothing answers at ``[web] base_url``: participants would find no site."""
    import httpx

    from crowdprefs.progress import note
    from crowdprefs.web.assign import WebSettings

    where = shlex.quote(str(directory))
    site = WebSettings.from_project(project).base_url.rstrip("/")
    try:
        answered = httpx.get(f"{site}/healthz", timeout=5.0).status_code == 200
    except httpx.HTTPError:
        answered = False
    if not answered:
        note(
            f"nothing answers at {site}/healthz ([web] base_url): participants who open the "
            f"study now find no site; start 'crowdprefs serve {where}' there"
        )


def _money(minor: float, currency: str) -> str:
    return f"{minor / 100:.2f} {currency}"


def subscribe_events(project: Project, crowd: ProlificCrowd) -> None:
    """Subscribe the server to the study's events where Prolific can post them, and say so
    (or why not) in one line; a note when this shell lacks the hook secret the server needs."""
    import os

    from crowdprefs.crowds.prolific.client import HOOK_SECRET_ENV
    from crowdprefs.progress import note
    from crowdprefs.web.assign import WebSettings

    line = crowd.subscribe(WebSettings.from_project(project).base_url)
    console.print(escape(line), highlight=False, soft_wrap=True)
    if not line.startswith("events: not") and not os.environ.get(HOOK_SECRET_ENV):
        note(
            f"set {HOOK_SECRET_ENV} for crowdprefs serve to the workspace's hook secret: the "
            "server refuses events it cannot check"
        )


def test_run(project: Project, crowd: ProlificCrowd, testers: list[str]) -> None:
    """``publish --test``: the draft study copied into a test study for test participants."""
    done = crowd.test_run(project, testers)
    for email, participant in zip(testers, done["testers"], strict=True):
        console.print(
            f"test participant {escape(participant)} ({escape(email)})",
            highlight=False,
            soft_wrap=True,
        )
    console.print(
        f"test study {escape(done['study_id'])} (from draft {escape(done['draft'])}) is open "
        f"to the workspace's test participants at no cost: {escape(done['study_url'])}",
        highlight=False,
        soft_wrap=True,
    )


@prolific_app.command("publish")
def publish(
    directory: ProjectDir,
    fake: Fake = False,
    yes: Yes = False,
    test: Annotated[
        bool,
        typer.Option(
            "--test",
            help="A dry run: the draft study copied into Prolific's test mode for the "
            "workspace's test participants (nothing spent; where the workspace allows it).",
        ),
    ] = False,
    tester: Annotated[
        list[str] | None,
        typer.Option(
            help="With --test: add a test participant with this email (one Prolific does not "
            "know yet); repeatable."
        ),
    ] = None,
) -> None:
    """Create the study if need be, then publish it or add places for the open batch.

    The batch must be on the judges' site (start crowdprefs serve first: it publishes each
    batch); without --fake, a note says when nothing answers at \\[web] base_url.

    Places cover the answers the open batch still needs (questions per participant from
    \\[web] questions_per_judge); the reward follows \\[prolific] reward_per_hour and the clips'
    durations. Places only go up. Afterwards the server (crowdprefs serve, with PROLIFIC_TOKEN
    set) adds the places of each new batch by itself; run this again after a batch opened
    while it was not running. Where \\[web] base_url is public https, the server is subscribed
    to the study's events (PROLIFIC_HOOK_SECRET for crowdprefs serve checks them).
    """
    from crowdprefs.campaign.project import Project
    from crowdprefs.errors import InputError

    if tester and not test:
        raise InputError("--tester adds test participants for a --test run only")
    with Project(directory) as project:
        check_served(project, directory)
        crowd, server = _crowd(project, fake)
        try:
            if not fake:
                note_unserved(project, directory)
            if test:
                test_run(project, crowd, list(tester or []))
                subscribe_events(project, crowd)
                return
            plan = crowd.plan(project)
            study = plan.study
            currency = study.currency
            console.print(
                f"study {escape(study.study_id)} ({plan.status.lower()}): {plan.before} → "
                f"{plan.places} places at {_money(study.reward, currency)} for "
                f"{study.minutes} min ({study.questions} questions each)",
                highlight=False,
                soft_wrap=True,
            )
            if plan.places <= plan.before:
                console.print("no new places needed", highlight=False, soft_wrap=True)
            else:
                if not (fake or yes):
                    typer.confirm(
                        f"spend up to {_money(plan.cost, currency)} (fees included) on Prolific?",
                        abort=True,
                    )
                done = crowd.apply(project, plan)
                console.print(
                    f"study {escape(study.study_id)} is {done.status.lower()} with "
                    f"{done.places} places",
                    highlight=False,
                    soft_wrap=True,
                )
            if plan.status != "UNPUBLISHED" or plan.places > plan.before:
                subscribe_events(project, crowd)
        finally:
            crowd.client.close()
            if server is not None:
                server.close()


@prolific_app.command("status")
def status(directory: ProjectDir, fake: Fake = False) -> None:
    """Show the study as Prolific reports it, its submissions and what the batch still needs."""
    from crowdprefs.campaign.project import Project

    with Project(directory) as project:
        crowd, server = _crowd(project, fake)
        try:
            report = crowd.status(project)
        finally:
            crowd.client.close()
            if server is not None:
                server.close()
    currency = report["currency"]
    console.print(
        f"study {escape(report['study_id'])}: {report['status'].lower()}, "
        f"{report['places_taken']}/{report['places']} places taken, "
        f"{_money(report['reward'], currency)} for {report['minutes']} min",
        highlight=False,
        soft_wrap=True,
    )
    submissions = ", ".join(
        f"{n} {escape(s.lower())}" for s, n in sorted(report["submissions"].items())
    )
    console.print(f"submissions: {submissions or 'none'}", highlight=False, soft_wrap=True)
    if report["return_rate"]:
        high = " (high: is the estimated time right? does the site work for everyone?)"
        console.print(
            f"returned or timed out: {100 * report['return_rate']:.0f}%"
            + (high if report["high_return_rate"] else ""),
            highlight=False,
            soft_wrap=True,
        )
    if report["batch"] is not None:
        console.print(
            f"batch {report['batch']}: {report['answers_missing']} answers still wanted",
            highlight=False,
            soft_wrap=True,
        )
    console.print(
        f"committed: {report['committed']:.2f} {currency} (fees included)", soft_wrap=True
    )


@prolific_app.command("review")
def review(
    directory: ProjectDir,
    fake: Fake = False,
    flags: Annotated[
        Path | None,
        typer.Option(help="CSV worker_id,reason of more judges to reject (and block)."),
    ] = None,
    consistency: Annotated[
        bool,
        typer.Option(
            "--consistency",
            help="Also reject judges who straight-line or contradict themselves on pairs they "
            "met twice.",
        ),
    ] = False,
) -> None:
    """Approve or reject every submission awaiting review, with the project's \\[review] rules.

    A participant with no answer is rejected (no data); one flagged by the rules is rejected
    with the reason, their answers stop counting and their pairs are offered again; the others
    are approved (and paid) in one call.
    """
    import pandas as pd

    from crowdprefs.campaign.project import Project
    from crowdprefs.quality import consistency as checks
    from crowdprefs.quality.frames import project_answers
    from crowdprefs.quality.review import ReviewRules, read_flags
    from crowdprefs.quality.workers import worker_decisions

    with Project(directory) as project:
        crowd, server = _crowd(project, fake)
        try:
            answers = project_answers(project, crowd.name)
            parts = [read_flags(flags)] if flags else []
            if consistency:
                parts.append(
                    checks.flags(
                        checks.straight_lining(answers),
                        checks.repeated_pair_consistency(answers),
                    )
                )
            extra = pd.concat(parts, ignore_index=True) if parts else None
            rules = ReviewRules.from_project(project)
            verdicts = project.settings.aggregation
            decided = worker_decisions(answers, rules, extra, verdicts)
            done = crowd.review(project, decided.flags, decided.rejected_answers)
        finally:
            crowd.client.close()
            if server is not None:
                server.close()
    console.print(
        f"approved {done['approved']}, rejected {done['rejected']} submissions", soft_wrap=True
    )


@prolific_app.command("bonus")
def bonus(
    directory: ProjectDir,
    per_answer: Annotated[
        float,
        typer.Option(
            help="Bonus per accepted answer, in pounds or dollars (e.g. 0.05); each "
            "participant gets what earlier bonuses did not already give.",
            parser=finite,
        ),
    ],
    fake: Fake = False,
    yes: Yes = False,
) -> None:
    """Pay approved participants a bonus for each of their answers that counts."""
    from crowdprefs.campaign.project import Project

    with Project(directory) as project:
        crowd, server = _crowd(project, fake)
        try:
            if not (fake or yes):
                typer.confirm(
                    f"pay {per_answer:.2f} {crowd.settings.currency} per accepted answer (plus "
                    "fees) on Prolific?",
                    abort=True,
                )
            paid = crowd.bonus(project, per_answer)
        finally:
            crowd.client.close()
            if server is not None:
                server.close()
    currency = crowd.settings.currency
    console.print(
        f"paid {_money(paid['amount'], currency)} to {paid['participants']} participants",
        highlight=False,
        soft_wrap=True,
    )
