"""The audit's answers frames (the preference-judgments paper §4.2 and §5).

An *answers frame* has one row per answer, the columns of
:data:`crowdprefs.results_file.FRAME_COLUMNS`; it is built from a project by
:func:`project_answers` or read from an MTurk results CSV by
:func:`crowdprefs.results_file.read_results`. Rejected answers and empty answers are kept in the
frame (and counted in the worker profiles) but left out of every agreement and aggregation.
:func:`validate` checks a frame before any metric, :func:`infer_iterations` numbers the batches of
a recorded campaign, and :func:`project_verdicts` are a project's verdicts to judge workers
against.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crowdprefs.campaign.aggregate import pair_verdicts
from crowdprefs.errors import InputError
from crowdprefs.results_file import FRAME_COLUMNS

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project

CHOICES = ("A", "equal", "B")
"""The options as shown, in their natural order (A more similar … B more similar)."""


def project_answers(project: Project, crowd: str | None = None) -> pd.DataFrame:
    """A project's answers (rejected ones included; only ``crowd``'s when given) as an answers
    frame.

    Each answer's ``a_is_x`` and ``choice`` are the sides the judge was shown and the button
    they pressed: a web question with sides randomised per question logs its own order, and
    its stored choice (on the pair's sides) is turned back into the button, so position shares
    and a constant button read what the judge did; ``score`` stays from x's point of view.
    The listening time of a HIT is the sum of the three clips' durations when all are known.
    The reward is the one the HIT was published at (the project's current ``[crowd] reward``
    when unknown); a HIT not recorded in ``hits`` (answers imported from a CSV) takes its
    batch's publication time as creation time.
    """
    frame = project.store.audit_answers(crowd)
    shown = frame.pop("shown_a_is_x").astype(int)
    flipped = shown != frame["a_is_x"].astype(int)
    frame.loc[flipped, "choice"] = frame.loc[flipped, "choice"].replace({"A": "B", "B": "A"})
    frame["a_is_x"] = shown
    frame["hit_id"] = frame["hit_id"].fillna("pair-" + frame["pair_id"].astype(str))
    frame["reward"] = pd.to_numeric(frame["reward"]).fillna(project.settings.reward)
    frame["pivot_known"] = frame["kind"] == "sort"
    for column in ("created_at", "accepted_at", "submitted_at"):
        frame[column] = pd.to_datetime(frame[column], utc=True, format="ISO8601")
    for column in ("background", "comment"):
        frame[column] = frame[column].fillna("")
    frame["iteration"] = frame["iteration"].astype("Int64")
    numbers = ["max_assignments", "expected", "score", "seconds", "listen_seconds"]
    frame[numbers] = frame[numbers].astype(float)
    frame.attrs["source"] = str(project.root)
    frame.attrs["empty_rows"] = []
    return frame[list(FRAME_COLUMNS)]


def project_verdicts(project: Project, answers: pd.DataFrame) -> pd.DataFrame:
    """:func:`pair_verdicts` with the project's rule, keeping the verdicts the driver stored
    (answers imported after a pair was aggregated do not change its recorded verdict)."""
    pairs = pair_verdicts(answers, project.settings.aggregation)
    stored = project.store.pairs().set_index("pair_id")["verdict"].reindex(pairs.index)
    pairs["verdict"] = stored.fillna(pairs["verdict"]).astype(int)
    return pairs


def validate(answers: pd.DataFrame) -> pd.DataFrame:
    """Check an answers frame before any metric: columns, choices, scores and iterations."""
    missing = [c for c in FRAME_COLUMNS if c not in answers.columns]
    if missing:
        raise InputError(f"the answers frame lacks column(s) {', '.join(missing)}")
    bad = ~answers["choice"].isin([*CHOICES, ""])
    if bad.any():
        raise InputError(f"unknown choice {answers.loc[bad, 'choice'].iloc[0]!r}")
    given = answers["choice"] != ""
    if not answers.loc[given, "score"].isin((-1, 0, 1)).all():
        raise InputError("every non-empty answer needs a score of -1, 0 or +1")
    if answers["iteration"].isna().any():
        raise InputError("answers without an iteration: run infer_iterations first")
    return answers


def iterations_from_pivots(answers: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Number the batches of a recorded QuickSort campaign without times from its pairs alone;
    also returns how many segments had more than one possible pivot.

    A segment's pairs are its pivot against every other member still to place (the
    preference-judgments paper §3.2), and later pairs stay inside the segments they split it
    into. So among a query's pairs not yet numbered, each connected set of documents is a
    segment whose pivot is the document paired with all the others: its pairs with them are the
    iteration, and the rest are numbered again, one iteration deeper. Where several documents
    qualify (everything went to one side of the first pivot, so the next pivot is paired with
    all the others too), the one whose pairs come first in the file is taken (``pair_id``
    numbers the HITs in order of appearance) and the segment counted; a set in which none does,
    and attention checks, take the iteration they are met in (checks: 1).
    """
    pair_ids = answers.groupby("pair_id", sort=True)[["query", "x", "y", "kind"]].first()
    iteration = pd.Series(1, index=pair_ids.index, dtype=np.int64)
    ambiguous = 0
    for _, pairs in pair_ids[pair_ids["kind"] == "sort"].groupby("query", sort=False):
        edges = {pid: (x, y) for pid, x, y in pairs[["x", "y"]].itertuples()}
        depth = 1
        while edges:
            parent = {}

            def root(d, parent=parent):
                while parent.setdefault(d, d) != d:
                    d = parent[d]
                return d

            for x, y in edges.values():
                parent[root(x)] = root(y)
            members: dict = {}
            for x, y in edges.values():
                members.setdefault(root(x), set()).update((x, y))
            taken = []
            for group in members.values():
                inside = [pid for pid, (x, y) in edges.items() if x in group]
                degree = Counter(d for pid in inside for d in edges[pid])
                centres = [d for d, n in degree.items() if n == len(group) - 1]
                ambiguous += len(group) > 2 and len(centres) > 1
                if centres:
                    first = min(centres, key=lambda c: min(p for p in inside if c in edges[p]))
                    taken += [pid for pid in inside if first in edges[pid]]
                else:
                    taken += inside
            for pid in taken:
                iteration[pid] = depth
                del edges[pid]
            depth += 1
    result = answers.copy()
    result["iteration"] = result["pair_id"].map(iteration).astype("Int64")
    return result, ambiguous


def infer_iterations(answers: pd.DataFrame, batch_gap: float = 600.0) -> pd.DataFrame:
    """Number the batches of a recorded campaign from its HITs' creation times.

    HITs are sorted by creation time and a new batch (iteration) starts wherever the gap to the
    previous HIT is longer than ``batch_gap`` seconds: MTurk creates a batch's HITs seconds apart
    while the preference-judgments paper's batches were hours apart (Table 2). The simulated crowd
    creates a batch's HITs at one instant, so ``batch_gap = 0`` separates its batches.
    """
    if answers["created_at"].isna().any():
        hit = answers.loc[answers["created_at"].isna(), "hit_id"].iloc[0]
        raise InputError(f"HIT {hit} has no creation (or accept) time to place it in a batch")
    created = answers.groupby("hit_id")["created_at"].min().sort_values(kind="stable")
    gaps = created.diff().dt.total_seconds().fillna(0.0).to_numpy()
    batch = pd.Series(np.cumsum(gaps > batch_gap) + 1, index=created.index)
    result = answers.copy()
    result["iteration"] = result["hit_id"].map(batch).astype("Int64")
    return result
