"""What the MTurk code path costs against the in-process simulated crowd, on one campaign.

Runs the same synthetic campaign twice, with the same simulated workers: once with the simulated
crowd (no network: the baseline) and once through the MTurk backend (real boto3 client, HTML
rendering, HTMLQuestion XML, the loopback fake validating every request against botocore's model,
answer XML parsing, review). Prints wall time of each, their ratio, API calls per answer and the
mean time per call, and whether both runs produced the same lists (review may legitimately make
them differ: it rejects the bots' answers and buys replacements).

Run: ``python benchmarks/mturk_fake.py [--answers 5] [--seed 11]``
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from crowdprefs.campaign import driver
from crowdprefs.campaign.project import Project, Settings, init_project
from crowdprefs.crowds.mturk.crowd import MTurkCrowd
from crowdprefs.crowds.mturk.fake import FakeMTurk, SimulatedResponder
from crowdprefs.crowds.simulated import SimulatedCrowd
from crowdprefs.demo import make_collection
from crowdprefs.io import write_lists

SIZES = (8, 7, 6, 5, 4)


def make(root: Path, answers: int, seed: int) -> Project:
    candidates, truth = make_collection(seed, SIZES)
    root.mkdir(parents=True)
    candidates.to_csv(root / "candidates.csv", index=False)
    write_lists(truth, root / "truth.qrel", tag="truth")
    settings = Settings(
        answers_per_pair=answers,
        sections={"simulated": {"truth": "../truth.qrel"}},
    )
    return init_project(root / "project", root / "candidates.csv", seed=seed, settings=settings)


def campaign(project: Project, crowd) -> float:
    started = time.perf_counter()
    while driver.next_batch(project) is not None:
        status = project.store.last_batch()["status"]
        if status == "built":
            driver.publish(project, crowd)
        elif status == "published":
            driver.collect(project, crowd)
        else:
            driver.aggregate(project)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--answers", type=int, default=5)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = make(Path(tmp) / "simulated", args.answers, args.seed)
        baseline = campaign(base, SimulatedCrowd.for_project(base))
        project = make(Path(tmp) / "mturk", args.answers, args.seed)
        fake = FakeMTurk(
            ":memory:",
            SimulatedResponder(project.store.location, SimulatedCrowd.for_project(project)),
        )
        crowd = MTurkCrowd(project, target="fake", endpoint_url=fake.start())
        through = campaign(project, crowd)
        calls = sum(fake.calls().values())
        answers = len(project.store.answers(include_rejected=True))
        same = driver.lists(base).equals(driver.lists(project))
        pairs = len(project.store.pairs())
        fake.stop()
    print(
        f"campaign: {len(SIZES)} queries, {sum(SIZES)} candidates, {pairs} pairs, {answers} answers"
    )
    print(f"simulated crowd (baseline): {baseline:8.2f} s")
    print(f"MTurk code path + fake:     {through:8.2f} s   ratio {through / baseline:6.1f}x")
    print(
        f"API calls: {calls} ({calls / answers:.2f} per answer), "
        f"{through / calls * 1000:.1f} ms per call"
    )
    print(f"same lists as the simulated crowd: {same}")


if __name__ == "__main__":
    main()
