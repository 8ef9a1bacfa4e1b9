"""The researcher's pages of the judges' site: ``GET /researcher/{token}`` opens the
researcher's session, ``GET /researcher`` shows batch progress, answers per judge, live audit
figures, the campaign in pictures (:mod:`crowdprefs.web.plots`) and the study's return rate
(read-only; its store calls and drawing run off the event loop)."""

from __future__ import annotations

import time
from typing import Any

import pandas as pd
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse

from crowdprefs.campaign import driver
from crowdprefs.campaign.aggregate import usable
from crowdprefs.campaign.project import Project
from crowdprefs.crowds.prolific.study import event_returns
from crowdprefs.quality.flags import flag_workers, worker_profiles
from crowdprefs.quality.frames import project_answers, project_verdicts
from crowdprefs.quality.iterations import iteration_table
from crowdprefs.web import plots
from crowdprefs.web.http import (
    RESEARCHER_COOKIE,
    error,
    is_researcher,
    off_loop,
    page,
    redirect,
    set_session,
    settings,
)


async def researcher_login(request: Request) -> RedirectResponse | HTMLResponse:
    return await off_loop(request, _login)


def _login(request: Request) -> RedirectResponse | HTMLResponse:
    token = request.path_params["token"]
    if not is_researcher(request, token):
        return error("This researcher link is not valid.", 403)
    response = redirect("/researcher")
    set_session(response, request, RESEARCHER_COOKIE, token)
    return response


AUDIT_EVERY = 10.0
"""Seconds between two recomputations of the researcher page's audit (a store thread runs it)."""


def audit_figures(project: Project) -> dict[str, Any]:
    """The live audit (:mod:`crowdprefs.quality.audit`): the preference-judgments paper Table 2 per
    iteration so far, with chance-corrected agreement, and the workers its rules flag, with their
    evidence; and ``plots``, the pictures drawn from the same frames
    (:mod:`crowdprefs.web.plots`: answers over time, workers' agreement, listening coverage)."""
    answers = project_answers(project)
    if answers.empty:
        profiles = pd.DataFrame(columns=["verdict_agreement", "listen_ratio"])
        return {"iterations": [], "flags": [], "plots": _audit_plots(answers, profiles)}
    pairs = project_verdicts(project, answers)
    table = iteration_table(answers, pairs, project.settings.fees)
    profiles = worker_profiles(answers, pairs)
    flags = flag_workers(answers, pairs, profiles=profiles)
    return {
        "iterations": _records(table),
        "flags": flags.to_dict("records"),
        "plots": _audit_plots(answers, profiles),
    }


def _audit_plots(answers: pd.DataFrame, profiles: pd.DataFrame) -> dict[str, Markup]:
    """The audit's pictures, escaped inside (:mod:`crowdprefs.web.plots`)."""
    return {
        "time": Markup(plots.answers_over_time(usable(answers)["submitted_at"])),
        "agreement": Markup(plots.agreement_histogram(profiles)),
        "listening": Markup(plots.listening_coverage(profiles)),
    }


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """The rows of ``frame`` as dicts, a missing value (NaN) as ``None`` (shown as "–")."""
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def _cached_audit(app: Starlette, project: Project, count: int) -> dict[str, Any]:
    """The audit, recomputed when ``count`` (of answers) changed and it is older than
    :data:`AUDIT_EVERY`."""
    cached = getattr(app.state, "audit", None)
    if cached is None or (cached[0] != count and time.monotonic() - cached[1] > AUDIT_EVERY):
        app.state.audit = (count, time.monotonic(), audit_figures(project))
    return app.state.audit[2]


def _batch_plot(app: Starlette, project: Project, progress: dict[str, Any]) -> Markup:
    """The batch's picture (:func:`~crowdprefs.web.plots.batch_progress`), read and drawn again
    only when the batch's progress changed (grouping a large batch's pairs costs a scan)."""
    key = tuple(sorted(progress.items()))
    cached = getattr(app.state, "batch_plot", None)
    if cached is None or cached[0] != key:
        picture = plots.batch_progress(project.store.web_batch_fill(), progress)
        cached = app.state.batch_plot = (key, Markup(picture))
    return cached[1]


def campaign_status(line: str | None, progress: dict[str, Any], advance: bool) -> str:
    """What the researcher page says of the campaign: the server's last line of it
    (:func:`~crowdprefs.campaign.driver.advance`'s outcome, or why it stopped) told with the
    last batch's ``progress`` (:meth:`~crowdprefs.campaign.store.Store.web_batch_progress`),
    so a published batch reads as the answers it collects, not as "waiting"."""
    if line is not None and line.startswith("stopped"):
        return line
    if line == "done":
        return "done: every list is closed"
    batch, status = progress.get("iteration"), progress.get("status")
    who = "the server" if advance else "your commands ([web] advance = false)"
    if batch is None:
        return f"no batch yet; moved on by {who}"
    if status == "published" and progress.get("crowd") in (None, "web"):
        answers, wanted = progress.get("answers", 0), progress.get("answers_wanted", 0)
        return (
            f"batch {batch} published, collecting answers ({answers} of {wanted}); "
            f"moved on by {who}"
        )
    if line == "other crowd" or progress.get("crowd") not in (None, "web"):
        return f"batch {batch} is {status} on the {progress.get('crowd')} crowd, not this site"
    return f"batch {batch} {status}; moved on by {who}"


async def researcher(request: Request) -> HTMLResponse:
    return await off_loop(request, _researcher_page)


def _researcher_page(request: Request) -> HTMLResponse:
    if not is_researcher(request, request.cookies.get(RESEARCHER_COOKIE)):
        return error("Open the researcher link printed by 'crowdprefs serve'.", 403)
    project = request.app.state.project
    totals = driver.status(project)["totals"]
    progress = project.store.web_batch_progress()
    audit = _cached_audit(request.app, project, totals["answers"])
    batch = _batch_plot(request.app, project, progress)
    return page(
        "web_researcher.html",
        progress=progress,
        totals=totals,
        judges=_records(project.store.web_judge_table()),
        audit=audit,
        plots={**audit["plots"], "batch": batch},
        comments=project.store.web_comments(20).to_dict("records"),
        campaign=campaign_status(project.store.web_campaign(), progress, settings(request).advance),
        returns=event_returns(project.store.prolific_events()),
    )
