"""The in-house web crowd as a :class:`~crowdprefs.campaign.crowd.Crowd` backend.

Publishing a pair makes it available to the judges of ``crowdprefs serve`` (one ``hits`` row per
pair, crowd ``web``); the server stores each answer in ``answers`` the moment it is posted, so
``collect`` only releases abandoned questions and counts what the pairs hold. :func:`advance`
moves a web campaign on as far as the answers allow: it is what the server calls after each
answer, and what ``crowdprefs run --crowd web`` amounts to.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from crowdprefs.campaign import driver
from crowdprefs.campaign.store import now

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project


class WebCrowd:
    """Pairs published here are answered by the judges of the project's web server."""

    name = "web"
    extension_barrier = None

    def publish(self, project: Project, pairs: pd.DataFrame) -> int:
        project.store.record_hits(self.name, pairs)
        return len(pairs)

    def collect(self, project: Project, pairs: pd.DataFrame) -> int:
        """Release abandoned assignments; return how many web answers the pairs hold."""
        project.store.release_expired_assignments(now())
        ids = pairs["pair_id"].astype(int).tolist()
        if not ids:
            return 0
        return int(
            project.store.conn.execute(
                f"SELECT COUNT(*) FROM answers WHERE crowd = ? AND pair_id IN "
                f"({', '.join('?' * len(ids))})",
                (self.name, *ids),
            ).fetchone()[0]
        )


def advance(project: Project) -> str:
    """Take the web campaign as far as the stored answers allow.

    Builds and publishes the next batch when none is open, aggregates a batch once every pair
    has its answers, and repeats. Returns ``"waiting"`` (a batch awaits answers), ``"done"``
    (every list is closed) or ``"other crowd"`` (the open batch belongs to another crowd).
    :class:`~crowdprefs.errors.BudgetError` propagates when the next batch does not fit.
    """
    crowd = WebCrowd()
    while True:
        iteration = driver.next_batch(project)
        if iteration is None:
            return "done"
        batch = project.store.last_batch()
        if batch["crowd"] not in (None, crowd.name):
            return "other crowd"
        if batch["status"] == "built":
            driver.publish(project, crowd)
            if project.store.last_batch()["status"] == "built":
                return "waiting"
        if project.store.last_batch()["status"] == "published":
            driver.collect(project, crowd)
            if project.store.last_batch()["status"] == "published":
                return "waiting"
        driver.aggregate(project)
