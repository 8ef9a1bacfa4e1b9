"""A small MTurk campaign against the local fake, shared by the tests of several folders."""

from __future__ import annotations

from pathlib import Path

from crowdprefs.campaign import driver
from crowdprefs.campaign.project import Project, Settings, init_project
from crowdprefs.crowds.mturk.fake import FakeMTurk, SimulatedResponder
from crowdprefs.crowds.simulated import SimulatedCrowd
from crowdprefs.demo import make_collection
from crowdprefs.io import write_lists
from crowdprefs.quality.review import Reviewer

SIZES = (4, 5, 3)


def make_project(
    root: Path, *, answers: int = 5, seed: int = 11, database: str | None = None, **sections
) -> Project:
    """A three-query campaign whose simulated truth sits beside it (its state in the
    PostgreSQL ``database`` when given, else the project's SQLite file)."""
    candidates, truth = make_collection(seed, SIZES)
    root.mkdir(parents=True, exist_ok=True)
    candidates.to_csv(root / "candidates.csv", index=False)
    write_lists(truth, root / "truth.qrel", tag="truth")
    settings = Settings(
        answers_per_pair=answers,
        sections={"simulated": {"truth": "../truth.qrel"}, **sections},
    )
    return init_project(
        root / "project", root / "candidates.csv", seed=seed, settings=settings, database=database
    )


def start_fake(
    project: Project, state: Path | str = ":memory:", **options
) -> tuple[FakeMTurk, str]:
    responder = SimulatedResponder(project.store.location, SimulatedCrowd.for_project(project))
    fake = FakeMTurk(state, responder, **options)
    return fake, fake.start()


def run_campaign(project: Project, crowd, limit: int = 60, review: Reviewer | None = None) -> None:
    """Every step of the loop, as a user would repeat them, until all lists are closed; each
    collection is reviewed (``review``, by default the project's ``[review]`` rules)."""
    for _ in range(limit):
        if driver.next_batch(project) is None:
            return
        status = project.store.last_batch()["status"]
        if status == "built":
            driver.publish(project, crowd)
        elif status == "published":
            driver.collect(project, crowd, review or Reviewer())
        else:
            driver.aggregate(project)
    raise AssertionError("the campaign did not finish")
