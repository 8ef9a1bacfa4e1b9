"""Crowd backends: where the answers come from.

``simulated``  a seeded pool of workers answering from a hidden truth (no network, no money).
``web``        the judges of the project's own server (``crowdprefs serve``).
``mturk-sandbox``  Amazon Mechanical Turk's sandbox (live MTurk only via ``mturk ... --live``).
``mturk-fake``     the MTurk code path against a local fake answered by the simulated workers.
``prolific``   the web crowd, its participants recruited by a Prolific study.

Every backend implements :class:`crowdprefs.campaign.crowd.Crowd` (the MTurk ones also the
review's calls, :class:`~crowdprefs.campaign.crowd.ReviewedCrowd`); this module is the one
registry of them: :func:`get_crowd` builds one by name for a project. Adapters are handed what
they need (the project and its store; the Prolific crowd also the study terms of the judges'
site) and never import the driver or the server: the driver calls them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crowdprefs.campaign.crowd import Crowd
from crowdprefs.errors import InputError

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project
    from crowdprefs.crowds.prolific.crowd import StudyTerms

CROWDS = ("simulated", "web", "mturk-sandbox", "mturk-fake", "prolific")


def get_crowd(name: str, project: Project, *, study_terms: StudyTerms | None = None) -> Crowd:
    """The crowd backend called ``name``, configured from the project's settings.

    ``prolific`` also needs the ``study_terms`` of the judges' site
    (:func:`crowdprefs.web.assign.study_terms`), which the caller computes."""
    if name == "simulated":
        from crowdprefs.crowds.simulated import SimulatedCrowd

        return SimulatedCrowd.for_project(project)
    if name in ("mturk-sandbox", "mturk-fake"):
        from crowdprefs.crowds.mturk.crowd import MTurkCrowd

        return MTurkCrowd.for_crowd_name(name, project)
    if name == "mturk":
        raise InputError(
            "live MTurk spends real money and is never chosen by name: build it explicitly, "
            "MTurkCrowd(project, target='live')"
        )
    if name == "prolific":  # the web crowd, recruited by a Prolific study (PROLIFIC_TOKEN)
        from crowdprefs.crowds.prolific.crowd import ProlificCrowd

        if study_terms is None:
            raise InputError(
                "the prolific crowd needs the study terms of the judges' site "
                "(crowdprefs.web.assign.study_terms(project))"
            )
        return ProlificCrowd.for_project(project, study_terms)
    if name == "web":
        from crowdprefs.crowds.web import WebCrowd

        return WebCrowd()
    raise InputError(f"unknown crowd {name!r}: choose one of {', '.join(CROWDS)}")
