"""Crowd backends: where the answers come from.

``simulated``  a seeded pool of workers answering from a hidden truth (no network, no money).
``web``        the judges of the project's own server (``crowdprefs serve``).
``mturk-sandbox``  Amazon Mechanical Turk's sandbox (live MTurk only via ``mturk ... --live``).
``mturk-fake``     the MTurk code path against a local fake answered by the simulated workers.
``prolific``   the web crowd, its participants recruited by a Prolific study.

Every backend implements :class:`crowdprefs.campaign.crowd.Crowd` (the MTurk ones also the
review's calls, :class:`~crowdprefs.campaign.crowd.ReviewedCrowd`); :data:`REGISTRY` (name →
adapter) is the one list of them, read by :func:`get_crowd` and by the command line's
``--crowd``: the adapters of :data:`crowdprefs.registry.PLATFORMS`, where each crowd also names
the state it keeps, if any (this module imports nothing heavy, so ``--help`` stays fast).
Adapters are handed what they need (the project and its store; the Prolific crowd also the
study terms of the judges' site) and never import the driver or the server: the driver calls
them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from crowdprefs.errors import InputError
from crowdprefs.registry import REGISTRY

__all__ = ["CROWDS", "REGISTRY", "get_crowd"]

if TYPE_CHECKING:
    from crowdprefs.campaign.crowd import Crowd
    from crowdprefs.campaign.project import Project
    from crowdprefs.crowds.prolific.study import StudyTerms

CROWDS = tuple(REGISTRY)
"""The crowds' names, as ``--crowd`` offers them."""


def get_crowd(name: str, project: Project, *, study_terms: StudyTerms | None = None) -> Crowd:
    """The crowd backend called ``name``, configured from the project's settings.

    ``prolific`` also needs the ``study_terms`` of the judges' site
    (:func:`crowdprefs.web.assign.study_terms`), which the caller computes."""
    if name == "mturk":
        raise InputError(
            "live MTurk spends real money and is never chosen by name: build it explicitly, "
            "MTurkCrowd(project, target='live')"
        )
    if name not in REGISTRY:
        raise InputError(f"unknown crowd {name!r}: choose one of {', '.join(CROWDS)}")
    module, _, adapter = REGISTRY[name].partition(":")
    return getattr(importlib.import_module(module), adapter).for_crowd(
        name, project, study_terms=study_terms
    )
