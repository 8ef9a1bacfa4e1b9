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
