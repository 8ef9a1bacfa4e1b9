"""The in-house web crowd as a :class:`~crowdprefs.campaign.crowd.Crowd` adapter.

Publishing a pair makes it available to the judges of ``crowdprefs serve`` (one ``hits`` row per
pair, crowd ``web``); the server stores each answer the moment it is posted and releases
abandoned questions when it hands out the next ones, so ``collect`` only counts what the pairs
hold. :func:`crowdprefs.campaign.driver.advance` with this crowd moves a web campaign on as far
as the answers allow: it is what the server calls after each answer, and what
``crowdprefs run --crowd web`` amounts to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from crowdprefs.campaign.budget import FeeModel
    from crowdprefs.campaign.project import Project


class WebCrowd:
    """Pairs published here are answered by the judges of the project's web server."""

    name = "web"
    extension_barrier = None

    @classmethod
    def for_crowd(cls, name: str, project: Project, **_: object) -> WebCrowd:
        """The crowd of the registry (:data:`crowdprefs.crowds.REGISTRY`): it needs nothing."""
        return cls()

    def fees(self, project: Project) -> FeeModel:
        """The fee model this crowd prices its HITs with: MTurk's commission of ``[fees]``, so
        that a campaign reports what the same answers would cost on MTurk."""
        return project.settings.fees

    def publish(self, project: Project, pairs: pd.DataFrame) -> int:
        project.store.add_hits(self.name, pairs, project.settings.reward, self.fees(project))
        return len(pairs)

    def collect(self, project: Project, pairs: pd.DataFrame) -> int:
        """How many web answers the pairs hold (the server stored them as they came)."""
        held = project.store.answers_per_pair(self.name)
        return int(held.reindex(pairs["pair_id"].astype(int), fill_value=0).sum())
