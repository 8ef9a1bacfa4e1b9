"""The crowd platforms crowdprefs knows, one entry each: the crowd's name, its adapter and, for
a crowd that keeps state of its own, its part of the project's state.

Only strings, imported when used: the command line reads the names (``--crowd``, so this module
imports nothing and ``--help`` stays fast), :func:`crowdprefs.crowds.get_crowd` builds the
adapter, and the project's store (:mod:`crowdprefs.campaign.store.store`) takes each state part's
role and migrations when it is first used. The store reads this list and imports no crowd by
name: a new crowd platform is its folder under ``crowds/`` and one entry here.
"""

from __future__ import annotations

import sys
from typing import NamedTuple


class Platform(NamedTuple):
    """A crowd platform: its ``name`` (``--crowd``), its ``adapter`` class (``module:Class``,
    whose ``for_crowd(name, project, *, study_terms)`` configures it from the project) and, if
    it keeps state of its own, that ``state`` (``module:NAME`` of a
    :class:`~crowdprefs.campaign.store.schema.StatePart`: its store role and its migrations)."""

    name: str
    adapter: str
    state: str | None = None


PLATFORMS: list[Platform] = [
    Platform("simulated", "crowdprefs.crowds.simulated:SimulatedCrowd"),
    Platform("web", "crowdprefs.crowds.web:WebCrowd", "crowdprefs.crowds.web.store:STATE"),
    Platform("mturk-sandbox", "crowdprefs.crowds.mturk.crowd:MTurkCrowd"),
    Platform("mturk-fake", "crowdprefs.crowds.mturk.crowd:MTurkCrowd"),
    Platform(
        "prolific",
        "crowdprefs.crowds.prolific.crowd:ProlificCrowd",
        "crowdprefs.crowds.prolific.store:STATE",
    ),
]
"""Every crowd platform, in the order ``--crowd`` lists them and the store takes their state."""

REGISTRY: dict[str, str] = {platform.name: platform.adapter for platform in PLATFORMS}
"""Each crowd's name and its adapter class (``module:Class``, imported when the crowd is built),
whose ``for_crowd(name, project, *, study_terms)`` configures it from the project."""


def register(platform: Platform) -> None:
    """Add a crowd platform kept outside the package. One that keeps state is refused once the
    store of the process is made (:mod:`crowdprefs.campaign.store.store` takes the state parts
    registered by then): register it first."""
    if platform.state and "crowdprefs.campaign.store.store" in sys.modules:
        raise RuntimeError(
            f"the crowd {platform.name!r} keeps state: register it before the first store is used"
        )
    PLATFORMS.append(platform)
    REGISTRY[platform.name] = platform.adapter


def state_parts() -> list[str]:
    """The addresses of the registered platforms' state parts, each once, in registry order."""
    return list(dict.fromkeys(platform.state for platform in PLATFORMS if platform.state))
