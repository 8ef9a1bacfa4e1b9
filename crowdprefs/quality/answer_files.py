"""A project's answers and open batch in the field's files, and such files' answers for the
audit and the importer.

* :func:`project_preferences`: a project's usable sorting answers as a preference frame
  (:func:`crowdprefs.exchange.preference_frame`), ``left`` being the variation the judge saw as
  A, for :func:`crowdprefs.exchange.long_csv`, :func:`~crowdprefs.exchange.crowdkit_csv` and
  :func:`~crowdprefs.exchange.choix_json`;
* :func:`open_pairs`: the open batch's pairs as ``query, left, right, answers_wanted`` (``left``
  shown as A), the questions another tool asks; its answers come back in the long format;
* :func:`preference_answers`: a preference frame (a long-format or crowd-kit file) as the
  audit's answers frame (:data:`crowdprefs.results_file.FRAME_COLUMNS`), each answer identified
  by its content (:func:`crowdprefs.exchange.answer_ids`), for
  :func:`crowdprefs.quality.audit.audit` and :func:`crowdprefs.crowds.results.import_answers`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError, StateError
from crowdprefs.exchange import answer_ids, preference_frame
from crowdprefs.quality.frames import project_answers
from crowdprefs.quality.preferences import from_answers_frame, to_answers_frame

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project

PAIR_COLUMNS = ["query", "left", "right", "answers_wanted"]


def project_preferences(project: Project) -> pd.DataFrame:
    """The project's usable sorting answers (not rejected, not empty, no attention check) as a
    preference frame with ``seconds``, in the order they arrived. :class:`InputError` when the
    project has none yet."""
    preferences = from_answers_frame(project_answers(project)).reset_index(drop=True)
    if preferences.empty:
        raise InputError(f"{project.root} has no answers yet")
    return preferences


def open_pairs(project: Project) -> pd.DataFrame:
    """The pairs of the batch not yet aggregated, in asking order: ``query, left, right,
    answers_wanted`` with ``left`` the candidate shown as A. :class:`StateError` when every
    batch is aggregated (or none was built)."""
    last = project.store.last_batch()
    if last is None or last["status"] == "aggregated":
        raise StateError("no batch is open")
    pairs = project.store.pairs(last["iteration"])
    a_is_x = pairs["a_is_x"].astype(bool)
    return pd.DataFrame(
        {
            "query": pairs["query"],
            "left": pairs["x"].where(a_is_x, pairs["y"]),
            "right": pairs["y"].where(a_is_x, pairs["x"]),
            "answers_wanted": pairs["answers_wanted"].astype(int),
        }
    )[PAIR_COLUMNS]


def preference_answers(preferences: pd.DataFrame, source: str) -> pd.DataFrame:
    """A preference frame as the audit's answers frame, all in iteration 1: one HIT per row
    (``row-N``, N = the row's number from 1, matching no published HIT), each answer's id from
    its content (:func:`crowdprefs.exchange.answer_ids`); ``attrs`` name the ``source``."""
    preferences = preference_frame(preferences)
    hits = "row-" + pd.Series(np.arange(1, len(preferences) + 1)).astype(str)
    ids = (hits, answer_ids(preferences))
    frame = to_answers_frame(preferences, ids, checked=True)
    frame.attrs.update(
        source=source, identity="(worker, query, left, right)", empty_rows=[], encoding=None
    )
    return frame
