"""The command that takes a campaign on from where it stands: the hint every step taken out of
order ends with, ``status``'s next step, and the crowd a command without ``--crowd`` goes to."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from crowdprefs.errors import StateError

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project


def next_step(
    project: Project,
    directory: Path,
    *,
    crowd: str = "",
    crowd_name: str | None = None,
    mturk: bool = False,
    totals: dict | None = None,
) -> str:
    """The command that takes the campaign on from where it stands (for hints after an error).

    A batch belongs to its crowd: a published one is collected from the crowd it went to, and
    a new one goes to the campaign's crowd (:func:`~crowdprefs.campaign.driver.campaign_crowd`)
    unless ``crowd_name`` names the crowd being published to (a batch moves to another crowd
    only before it is published). ``crowd`` is the option naming an MTurk target (``--fake``)
    and ``mturk`` says an MTurk command asks (they build a batch too), for a campaign no crowd
    answered yet. With the crowd publishing to, a batch the budget cannot cover asks for more
    budget. ``totals`` are the campaign's totals when the caller already has them.
    """
    from crowdprefs.campaign import driver

    last = project.store.last_batch()
    state = None if last is None else last["status"]
    where = shlex.quote(str(directory))
    if state == "published":
        step = f"next: {_collect_from(project, where, last['crowd'])}"
        if crowd_name and crowd_name != last["crowd"]:
            step += (
                f" (batch {last['iteration']} stays with the {last['crowd']} crowd it was "
                f"published to; once it is aggregated, the next batch can go to {crowd_name}: "
                f"{_publish_to(project, where, crowd_name, mturk=mturk)})"
            )
        return step
    if state == "collected":
        return f"next: crowdprefs aggregate {where}"
    owner = driver.campaign_crowd(project)
    held = None if state != "built" else driver.partly_published(project, last["iteration"])
    target = held or crowd_name or owner
    if target is None and mturk:
        target = {"--fake": "mturk-fake", "--live": "mturk"}.get(crowd, "mturk-sandbox")
    imported = target == owner and owner not in (None, SIMULATED, *project.store.batch_crowds())
    if state == "built":
        step = _publish_to(project, where, target, imported, mturk)
        committed = None if totals is None else totals["cost"]  # status has it already
        quote = None if target is None else driver.publish_quote(project, target, committed)
        if quote and quote.budget is not None and quote.committed + quote.cost > quote.budget:
            config = shlex.quote(str(directory / "crowdprefs.toml"))
            return f"raise budget in the [crowd] section of {config}, then: {step}"
        return f"next: {step}"
    totals = totals or driver.status(project)["totals"]
    if totals["closed"] == totals["queries"]:
        return f"every list is closed; next: crowdprefs export {where}"
    if totals.get("ranking_done"):
        runs = shlex.quote(str(directory / project.section("systems")["runs"]))
        return (
            "the systems' ranking needs nothing more ([systems]); next: crowdprefs evaluate "
            f"--truth {where} --runs {runs}, or crowdprefs export {where} --partial"
        )
    if target in MTURK_OPTIONS and not imported:
        return f"next: {_publish_to(project, where, target, mturk=True)} (it builds the batch)"
    return f"next: crowdprefs next {where}"


SIMULATED = "simulated"
MTURK_OPTIONS = {"mturk": " --live", "mturk-fake": " --fake", "mturk-sandbox": ""}
"""The MTurk crowds and the option of the ``mturk`` commands that reaches each."""


def _publish_to(
    project: Project,
    where: str,
    crowd_name: str | None,
    imported: bool = False,
    mturk: bool = False,
) -> str:
    """How a batch is published to ``crowd_name`` (``None``: the default, simulated crowd of a
    new campaign): by the ``mturk`` commands for live MTurk, or when ``mturk`` (an MTurk
    command asks, or the batch is still to be built: they build it); with ``imported``, the
    campaign's answers came from results files imported under that crowd's name, so their way
    is said first."""
    if imported:
        return (
            f"import its answers with 'crowdprefs import-answers {where} RESULTS.csv --crowd "
            f"{shlex.quote(str(crowd_name))}', or publish it to a crowd with 'crowdprefs "
            f"publish {where} --crowd NAME'"
        )
    if crowd_name in MTURK_OPTIONS and (mturk or crowd_name == "mturk"):
        return f"crowdprefs mturk publish {where}{MTURK_OPTIONS[crowd_name]}"
    if crowd_name in (None, SIMULATED):
        return f"crowdprefs publish {where}"
    if crowd_name == "web" and project.section("web").get("advance", True):
        return f"`crowdprefs serve {where}` publishes it and moves the campaign on"
    return f"crowdprefs publish {where} --crowd {shlex.quote(crowd_name)}"


def _collect_from(project: Project, where: str, crowd_name: str) -> str:
    """How a batch published to ``crowd_name`` is collected (its own commands and options)."""
    if crowd_name in MTURK_OPTIONS:
        return f"crowdprefs mturk collect {where}{MTURK_OPTIONS[crowd_name]}"
    if crowd_name == "web" and project.section("web").get("advance", True):
        return f"the judges answer; `crowdprefs serve {where}` moves the campaign on"
    return f"crowdprefs collect {where} --crowd {shlex.quote(crowd_name)}"


def chosen_crowd(project: Project, directory: Path, crowd: str | None) -> str:
    """The crowd a ``publish``, ``collect`` or ``run`` goes to: ``--crowd`` when given, else
    the crowd the campaign's batch belongs to (:func:`~crowdprefs.campaign.driver.
    campaign_crowd`), the simulated crowd for a new campaign. A campaign whose crowd these
    commands do not reach (live MTurk, results files) is refused with its own next step."""
    from crowdprefs.campaign import driver
    from crowdprefs.crowds import CROWDS

    if crowd is not None:
        return crowd
    name = driver.campaign_crowd(project) or SIMULATED
    if name not in CROWDS:
        raise StateError(
            f"the campaign's batches go to the {name} crowd, which this command does not reach; "
            f"{next_step(project, directory, crowd_name=name)}"
        )
    return name


@contextmanager
def hinting_next_step(
    project: Project,
    directory: Path,
    *,
    crowd: str = "",
    crowd_name: str | None = None,
    mturk: bool = False,
) -> Iterator[None]:
    """A step taken out of order (:class:`StateError`) says which command comes next."""
    try:
        yield
    except StateError as error:
        hint = next_step(project, directory, crowd=crowd, crowd_name=crowd_name, mturk=mturk)
        raise StateError(f"{error}; {hint}") from None


def crowd_option(crowd: str) -> str:
    """The ``--crowd`` option as typed again in a hint (empty for the default crowd)."""
    return "" if crowd == "simulated" else f"--crowd {shlex.quote(crowd)}"
