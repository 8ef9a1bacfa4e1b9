"""Valid inputs around the demo project, for the tests that aim bad inputs and outputs at the
console script: the demo's truth lists, systems' runs from them and an MTurk results file."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from crowdprefs.demo import create_demo_project

TIME = "Mon Nov 23 10:00:00 PST 2026"
RESULTS_HEADER = (
    "HITId,WorkerId,AssignmentId,CreationTime,SubmitTime,Input.query,Input.docA,Input.docB,"
    "Answer.choice\n"
)


@dataclass(frozen=True)
class DemoInputs:
    """The demo project under ``root`` (``root / "project"``), its ``truth`` lists and their
    rows (``run, query, document, level``), the ``runs`` of the systems, and ``results``: 40
    HITs of the truth's pairs, each answered by four workers."""

    root: Path
    truth: Path
    lines: list[list[str]]
    runs: Path
    results: Path


def finished_demo(root: Path) -> Path:
    """The demo project under ``root`` (``root / "project"``, its truth beside it) sorted to the
    end by the simulated crowd; returns ``root / "project"``."""
    from crowdprefs.campaign import driver
    from crowdprefs.crowds import get_crowd

    with create_demo_project(root) as project:
        driver.run(project, get_crowd("simulated", project))
    return root / "project"


def demo_inputs(root: Path, systems: Sequence[str]) -> DemoInputs:
    """Create the demo project under ``root`` and the inputs of :class:`DemoInputs`; the first
    of ``systems`` ranks as the truth does, the others in reverse."""
    create_demo_project(root).close()
    truth = root / "truth.qrel"
    lines = [line.split() for line in truth.read_text().splitlines()]
    runs = root / "runs.txt"
    runs.write_text(
        "".join(
            f"{s} {q} {d}\n"
            for s in systems
            for _, q, d, _ in lines[:: 1 if s == systems[0] else -1]
        )
    )
    rows = []
    for i, (_, q, a, _) in enumerate(lines[:40]):
        b = lines[i + 1][2] if lines[i + 1][1] == q else lines[i - 1][2]
        rows += [
            f"H{i},W{w},A{i}-{w},{TIME},{TIME},{q},{a},{b},{'AB'[(i + w) % 2]}\n" for w in range(4)
        ]
    results = root / "results.csv"
    results.write_text(RESULTS_HEADER + "".join(rows), encoding="utf-8")
    return DemoInputs(root, truth, lines, runs, results)
