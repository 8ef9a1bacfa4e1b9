"""The simulated crowd as a campaign's crowd: answers from the crowd model, stored in the project.

The model of the workers and their answers lives in :mod:`crowdprefs.quality.crowd_model`
(:class:`~crowdprefs.quality.crowd_model.CrowdModel`, its drawn
:class:`~crowdprefs.quality.crowd_model.WorkerPool` and
:func:`~crowdprefs.quality.crowd_model.answer_chunks`); this adapter reads the project's pairs,
draws the model's answers for them a few thousand pairs at a time and streams them to the store,
so that a round of millions of answers never sits in memory.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError
from crowdprefs.io import read_lists
from crowdprefs.quality.crowd_model import (
    CrowdModel,
    WorkerPool,
    answer_chunks,
    latent_similarity,
    random_truth,
)

if TYPE_CHECKING:
    from crowdprefs.campaign.budget import FeeModel
    from crowdprefs.campaign.project import Project


def listening_seconds(project: Project, pairs: pd.DataFrame) -> np.ndarray:
    """Seconds to hear each pair's three clips once (NaN while a duration is unknown)."""
    seconds = project.store.clip_seconds(pairs["pair_id"]).sum(axis=1, min_count=3)
    return pairs["pair_id"].map(seconds).to_numpy(dtype=np.float64)


class SimulatedCrowd:
    """The simulated crowd as a :class:`~crowdprefs.campaign.crowd.Crowd` backend."""

    name = "simulated"
    extension_barrier = None

    def __init__(
        self, truth: pd.DataFrame, model: CrowdModel, seed: int, *, on_real: bool = False
    ) -> None:
        self.similarity = latent_similarity(truth)
        self.model = model
        self.seed = seed
        self.pool = WorkerPool.draw(model, seed)
        self.on_real = on_real
        """Whether the crowd may answer a project holding other crowds' answers (said so)."""

    @classmethod
    def for_crowd(cls, name: str, project: Project, **_: object) -> SimulatedCrowd:
        """The crowd of the registry (:data:`crowdprefs.crowds.REGISTRY`): :meth:`for_project`."""
        return cls.for_project(project)

    @classmethod
    def for_project(cls, project: Project, *, on_real: bool = False) -> SimulatedCrowd:
        """From the project's ``[simulated]`` section: ``truth`` (group qrels) and model fields;
        ``on_real``: see :meth:`check`."""
        section = project.section("simulated")
        truth_path = section.pop("truth", None)
        seed = int(section.pop("seed", project.seed))
        if truth_path:
            truth = read_lists(project.root / Path(truth_path))
        else:
            truth = random_truth(project.store.candidates(), seed)
        return cls(truth, CrowdModel.from_dict(section), seed, on_real=on_real)

    def fees(self, project: Project) -> FeeModel:
        """The fee model this crowd prices its HITs with: MTurk's commission of ``[fees]``, so
        that a campaign reports what the same answers would cost on MTurk."""
        return project.settings.fees

    def check(self, project: Project, pairs: pd.DataFrame) -> None:
        """Raise :class:`InputError` when the crowd cannot answer ``pairs``: the project holds
        answers of other crowds (people's, or a stand-in's for them: invented answers would mix
        into them) unless the crowd was made ``on_real``, fewer workers not blocked than a
        pair's wanted answers, or a truth without one of their documents."""
        others = {c: n for c, n in project.store.answer_crowds().items() if c != self.name}
        if others and not self.on_real:
            held = ", ".join(f"{n} of the {crowd} crowd" for crowd, n in others.items())
            raise InputError(
                f"the project holds answers of other crowds ({held}): the simulated crowd "
                "would mix invented answers into them; publish to the campaign's crowd, or say "
                "--simulated-on-real to mix them anyway"
            )
        blocked = np.isin(self.pool.ids, list(project.store.blocked_workers(self.name)))
        available, wanted = int((~blocked).sum()), pairs["answers_wanted"].max()
        if len(pairs) and wanted > available:
            raise InputError(
                f"the simulated crowd has {available} worker(s) not blocked; a pair cannot get "
                f"{wanted} distinct answers ([simulated] workers, or answers_per_pair)"
            )
        self.check_truth(pairs)

    def check_truth(self, pairs: pd.DataFrame) -> None:
        """Raise :class:`InputError` when the truth has no group for a document of ``pairs`` (a
        truth of other queries): checked before a batch is built, for this crowd and for the
        MTurk fake it answers."""
        sort = pairs[pairs["x"] != pairs["query"]]  # a check's x is its query itself
        queries = sort["query"].tolist() + pairs["query"].tolist()
        documents = sort["x"].tolist() + pairs["y"].tolist()
        unknown = [key for key in zip(queries, documents, strict=True)
                   if key not in self.similarity]  # fmt: skip
        if unknown:
            raise InputError(
                f"the simulated crowd's truth ([simulated] truth) has no group for query "
                f"{unknown[0][0]!r}, document {unknown[0][1]!r}"
            )

    def publish(self, project: Project, pairs: pd.DataFrame) -> int:
        project.store.add_hits(self.name, pairs, project.settings.reward, self.fees(project))
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
        chunks = answer_chunks(
            pairs.assign(listen_seconds=listening_seconds(project, pairs), answers_wanted=slots),
            self.similarity,
            self.pool,
            self.model,
            self.seed,
            first,
            published_at,
            np.isin(self.pool.ids, list(store.blocked_workers(self.name))),
        )
        if not (slots.to_numpy() > first).any():
            return 0
        return store.add_answer_stream(self.name, chunks)  # chunk by chunk, as they are drawn
