"""The simulated crowd as a campaign's crowd: answers from the crowd model, stored in the project.

The model of the workers and their answers lives in :mod:`crowdprefs.quality.crowd_model`
(:class:`~crowdprefs.quality.crowd_model.CrowdModel`, its drawn
:class:`~crowdprefs.quality.crowd_model.WorkerPool` and
:func:`~crowdprefs.quality.crowd_model.simulate_answers`); this adapter reads the project's
pairs, hands them to the model and stores the answers.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crowdprefs.io import read_lists
from crowdprefs.quality.crowd_model import (
    CrowdModel,
    WorkerPool,
    latent_similarity,
    random_truth,
    simulate_answers,
)

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project


def listening_seconds(project: Project, pairs: pd.DataFrame) -> np.ndarray:
    """Seconds to hear each pair's three clips once (NaN while a duration is unknown)."""
    seconds = project.store.clip_seconds(pairs["pair_id"]).sum(axis=1, min_count=3)
    return pairs["pair_id"].map(seconds).to_numpy(dtype=np.float64)


class SimulatedCrowd:
    """The simulated crowd as a :class:`~crowdprefs.campaign.crowd.Crowd` backend."""

    name = "simulated"
    extension_barrier = None

    def __init__(self, truth: pd.DataFrame, model: CrowdModel, seed: int) -> None:
        self.similarity = latent_similarity(truth)
        self.model = model
        self.seed = seed
        self.pool = WorkerPool.draw(model, seed)

    @classmethod
    def for_project(cls, project: Project) -> SimulatedCrowd:
        """From the project's ``[simulated]`` section: ``truth`` (group qrels) and model fields."""
        section = project.section("simulated")
        truth_path = section.pop("truth", None)
        seed = int(section.pop("seed", project.seed))
        if truth_path:
            truth = read_lists(project.root / Path(truth_path))
        else:
            truth = random_truth(project.store.candidates(), seed)
        return cls(truth, CrowdModel.from_dict(section), seed)

    def publish(self, project: Project, pairs: pd.DataFrame) -> int:
        settings = project.settings
        project.store.add_hits(self.name, pairs, settings.reward, settings.fees)
        return len(pairs)

    def collect(self, project: Project, pairs: pd.DataFrame) -> int:
        """Answer the pairs up to their wanted answers, one more for each answer rejected or
        dropped on review (a pair's answers are slots ``0 … wanted + rejected − 1``), from
        workers not blocked."""
        store = project.store
        have = store.answers_per_pair(self.name)
        first = pairs["pair_id"].map(have).fillna(0).to_numpy(dtype=np.int64)
        rejected = pd.concat(
            [store.batch_hits(self.name, int(i))["rejected"] for i in pairs["iteration"].unique()]
            or [pd.Series(dtype=np.int64)]
        )
        slots = pairs["answers_wanted"] + pairs["pair_id"].map(rejected).fillna(0).astype(int)
        published = store.hits(self.name).set_index("pair_id")["created_at"]
        start = pairs["pair_id"].map(published).dropna()
        published_at = datetime.fromisoformat(start.iloc[0]) if len(start) else None
        answers = simulate_answers(
            pairs.assign(listen_seconds=listening_seconds(project, pairs), answers_wanted=slots),
            self.similarity,
            self.pool,
            self.model,
            self.seed,
            first,
            published_at,
            np.isin(self.pool.ids, list(store.blocked_workers(self.name))),
        )
        if answers.empty:
            return 0
        return project.store.add_answers(self.name, answers)
