"""A simulated crowd: seeded workers answering preference questions from a hidden truth.

The truth gives every candidate a latent similarity to its query; candidates in the same true
group are equally similar (groups are one unit apart, group 1 most similar). A worker asked
"is A or B more similar?" perceives ``d = s_A − s_B + noise·z − bias`` and answers "equal" when
``|d| < band``, A when ``d > 0``, B otherwise, where each honest worker has their own noise
(accuracy), band ("equal" tendency) and bias (a lean towards variation B), and a log-normal answer
time; when the clips' durations are known, at least the time to hear the three clips plus an
exponential decision time, since the HIT only takes an answer once every clip played through.
Careless workers answer at random and fast; bots answer "equal" in exactly 8 s, like the two
robots of seed 002 §4.2. Workers take HITs with Zipf-like activity, each pair going to distinct
workers.

The defaults are calibrated so that a campaign on the demo collection gives about 50% "equal",
21% A and 29% B answers with a median of about 21 s per answer, as in the 2010 campaign of seed
002 (Table 2). Randomness is counter-based: answer *k* of pair *p* depends only on the crowd seed,
*p* and *k*, so collecting in any order, after any crash, gives the same answers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import special

from crowdprefs.campaign.crowd import score_of
from crowdprefs.campaign.store import now
from crowdprefs.errors import InputError
from crowdprefs.io import read_lists
from crowdprefs.rng import counter_uniform

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project


@dataclass(frozen=True)
class CrowdModel:
    """Parameters of the simulated crowd (all in units of the gap between true groups)."""

    workers: int = 80
    careless_share: float = 0.05
    bots: int = 2
    bot_seconds: float = 8.0
    noise: float = 0.7
    noise_spread: float = 0.4
    equal_band: float = 1.1
    equal_spread: float = 0.3
    position_bias: float = 0.15
    bias_spread: float = 0.1
    median_seconds: float = 21.0
    worker_seconds_spread: float = 0.35
    answer_seconds_spread: float = 0.5
    careless_seconds: float = 6.0
    think_seconds: float = 2.0
    activity: float = 1.0
    completion_hours: float = 3.0

    def __post_init__(self) -> None:
        if self.workers < 1 or self.bots < 0 or not 0 <= self.careless_share <= 1:
            raise InputError("the simulated crowd needs at least one worker and shares in [0, 1]")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CrowdModel:
        """The model from a ``[simulated]`` TOML table; values are checked against each field's
        type (every field is a number), one clear error for the first that is not."""
        kinds = {f.name: type(f.default) for f in fields(cls)}
        unknown = set(data) - set(kinds)
        if unknown:
            raise InputError(f"unknown simulated-crowd setting(s): {', '.join(sorted(unknown))}")
        values = {}
        for name, value in data.items():
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise InputError(f"simulated-crowd setting {name} must be a number, got {value!r}")
            if kinds[name] is int and value != int(value):
                raise InputError(f"simulated-crowd setting {name} must be a whole number")
            values[name] = kinds[name](value)
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class WorkerPool:
    """The drawn workers: ids, kinds and personal parameters (arrays over workers)."""

    ids: np.ndarray
    kind: np.ndarray  # "honest", "careless" or "bot"
    weight: np.ndarray
    noise: np.ndarray
    band: np.ndarray
    bias: np.ndarray
    median_seconds: np.ndarray

    @classmethod
    def draw(cls, model: CrowdModel, seed: int) -> WorkerPool:
        rng = np.random.default_rng([seed, 0x5C0])
        n = model.workers + model.bots
        kind = np.full(n, "honest", dtype=object)
        careless = rng.random(model.workers) < model.careless_share
        kind[: model.workers][careless] = "careless"
        kind[model.workers :] = "bot"
        order = rng.permutation(n)  # bots and careless workers are anywhere in the ranking
        kind = kind[order]
        weight = 1.0 / np.arange(1, n + 1) ** model.activity
        return cls(
            ids=np.array([f"W{seed % 1000:03d}{i:04d}" for i in range(n)]),
            kind=kind,
            weight=weight,
            noise=model.noise * rng.lognormal(0.0, model.noise_spread, n),
            band=model.equal_band * rng.lognormal(0.0, model.equal_spread, n),
            bias=rng.normal(model.position_bias, model.bias_spread, n),
            median_seconds=model.median_seconds
            * rng.lognormal(0.0, model.worker_seconds_spread, n),
        )


def latent_similarity(truth: pd.DataFrame) -> dict[tuple[str, str], float]:
    """``(query, document) → s`` from group qrels (group 1 most similar: s = −group)."""
    return {
        (q, d): -float(g)
        for q, d, g in truth[["query", "document", "group"]].itertuples(index=False)
    }


def random_truth(candidates: pd.DataFrame, seed: int) -> pd.DataFrame:
    """A hidden truth for candidates without one: about three members per group, seeded."""
    rng = np.random.default_rng([seed, 0x7207])
    parts = []
    for query, frame in candidates.groupby("query", sort=False):
        levels = max(1, round(len(frame) / 3))
        parts.append(
            pd.DataFrame(
                {
                    "query": query,
                    "document": frame["document"].to_numpy(),
                    "group": rng.integers(1, levels + 1, len(frame)),
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def simulate_answers(
    pairs: pd.DataFrame,
    similarity: dict[tuple[str, str], float],
    pool: WorkerPool,
    model: CrowdModel,
    seed: int,
    first: np.ndarray | None = None,
    published_at: datetime | None = None,
) -> pd.DataFrame:
    """Answers ``first[i] … answers_wanted[i]−1`` of every pair, vectorised over all of them.

    ``pairs`` needs ``pair_id, query, x, y, a_is_x, answers_wanted``. An ``x`` equal to its
    query (an attention check) is identical to the query, so more similar than any candidate.
    Returns rows ready for :meth:`crowdprefs.campaign.store.Store.add_answers`.
    """
    wanted = pairs["answers_wanted"].to_numpy(dtype=np.int64)
    first = (
        np.zeros(len(pairs), dtype=np.int64) if first is None else np.asarray(first, dtype=np.int64)
    )
    if (wanted > len(pool.ids)).any():
        raise InputError(
            f"the simulated crowd has {len(pool.ids)} workers; "
            f"a pair cannot get {wanted.max()} distinct answers"
        )
    todo = np.maximum(wanted - first, 0)
    row = np.repeat(np.arange(len(pairs)), todo)
    k = np.concatenate(
        [np.arange(f, w) for f, w in zip(first, wanted, strict=True) if w > f]
        or [np.zeros(0, np.int64)]
    )
    if len(row) == 0:
        return pd.DataFrame(columns=["pair_id"])
    pair_id = pairs["pair_id"].to_numpy(dtype=np.int64)

    # Distinct workers per pair: the Gumbel-top-k ranking of the pool, keyed by pair.
    worker_index = np.arange(len(pool.ids))
    u = counter_uniform(seed, 1, pair_id[:, None], worker_index[None, :])
    ranking = np.argsort(-(np.log(pool.weight)[None, :] - np.log(-np.log(u))), axis=1)
    worker = ranking[row, k]

    def draw(stream: int) -> np.ndarray:
        return counter_uniform(seed, stream, pair_id[row], k)

    def latent(column: str) -> np.ndarray:
        keys = zip(pairs["query"], pairs[column], strict=True)
        return np.array([similarity.get(key, np.nan) for key in keys])

    sx, sy = latent("x"), latent("y")
    top = np.nanmax(list(similarity.values())) if similarity else 0.0
    sx = np.where(pairs["x"].to_numpy() == pairs["query"].to_numpy(), top + 3.0, sx)
    if np.isnan(sx).any() or np.isnan(sy).any():
        missing = pairs.loc[np.isnan(sx) | np.isnan(sy)].iloc[0]
        raise InputError(
            f"the simulated crowd's truth has no similarity for query {missing['query']!r}, "
            f"pair {missing['x']!r}/{missing['y']!r}"
        )
    a_is_x = pairs["a_is_x"].to_numpy(dtype=bool)
    gap = np.where(a_is_x, sx - sy, sy - sx)[row]  # s_A − s_B

    perceived = gap + pool.noise[worker] * special.ndtri(draw(2)) - pool.bias[worker]
    choice = np.where(
        np.abs(perceived) < pool.band[worker], "equal", np.where(perceived > 0, "A", "B")
    ).astype(object)
    seconds = pool.median_seconds[worker] * np.exp(
        model.answer_seconds_spread * special.ndtri(draw(3))
    )
    if "listen_seconds" in pairs:  # an honest worker hears the three clips, then decides
        listen = pairs["listen_seconds"].to_numpy(dtype=np.float64)[row]
        floor = listen - model.think_seconds * np.log(draw(7))
        seconds = np.where(np.isnan(listen), seconds, np.maximum(seconds, floor))

    kind = pool.kind[worker]
    careless = kind == "careless"
    choice[careless] = np.array(["A", "B", "equal"], dtype=object)[
        (draw(4)[careless] * 3).astype(int)
    ]
    seconds[careless] = model.careless_seconds * np.exp(0.3 * special.ndtri(draw(5)[careless]))
    bots = kind == "bot"
    choice[bots] = "equal"
    seconds[bots] = model.bot_seconds

    start = published_at or datetime.fromisoformat(now())
    accepted = [start + timedelta(hours=h) for h in model.completion_hours * draw(6)]
    frame = pd.DataFrame(
        {
            "pair_id": pair_id[row],
            "crowd": "simulated",
            "assignment_id": [f"sim-{p}-{j}" for p, j in zip(pair_id[row], k, strict=True)],
            "worker_id": pool.ids[worker],
            "choice": choice,
            "seconds": np.round(seconds, 1),
            "accepted_at": [t.isoformat(timespec="milliseconds") for t in accepted],
            "submitted_at": [
                (t + timedelta(seconds=float(sec))).isoformat(timespec="milliseconds")
                for t, sec in zip(accepted, seconds, strict=True)
            ],
        }
    )
    frame["score"] = score_of(frame["choice"], pd.Series(a_is_x[row].astype(int)))
    return frame


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
        have = project.store.answers_per_pair(self.name)
        first = pairs["pair_id"].map(have).fillna(0).to_numpy(dtype=np.int64)
        published = project.store.hits(self.name).set_index("pair_id")["created_at"]
        start = pairs["pair_id"].map(published).dropna()
        published_at = datetime.fromisoformat(start.iloc[0]) if len(start) else None
        answers = simulate_answers(
            pairs.assign(listen_seconds=listening_seconds(project, pairs)),
            self.similarity,
            self.pool,
            self.model,
            self.seed,
            first,
            published_at,
        )
        if answers.empty:
            return 0
        return project.store.add_answers(self.name, answers)
