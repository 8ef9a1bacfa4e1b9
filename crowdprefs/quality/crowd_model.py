"""The crowd model: workers with persistent identities answering preference questions.

The truth gives every candidate a latent similarity to its query; candidates in the same true group
are equally similar (groups are one unit apart, group 1 most similar). A worker asked "is A or B
more similar?" perceives ``d = s_A − s_B + noise·z − bias`` and answers "equal" when ``|d| < band``,
A when ``d > 0``, B otherwise (an ordered-probit answer: Thurstone's law of comparative judgment
with an indifference band). Workers are a continuum: each one's noise and band are log-normal around
the model's medians (``noise``, ``equal_band``; log standard deviations ``noise_spread``,
``equal_spread``) and their bias, a lean towards the variation shown as B, is normal
(``position_bias``, ``bias_spread``). A ``careless_share`` of workers answers at random; ``bots``
answer "equal" in exactly ``bot_seconds`` (the two robots of the preference-judgments paper §4.2).
Answer times are log-normal around each worker's median; when the clips' durations are known, at
least the time to hear the three clips plus an exponential decision time, since the HIT only takes
an answer once every clip played through.

Workers take HITs with Zipf-like activity (weight ``rank^−activity``), each pair going to
distinct workers: a pair's answers are a weighted sample of the pool without replacement
(successive sampling), so one worker gives at most one answer per pair, as on MTurk.

Time: a HIT's answers are accepted within ``completion_hours`` of its publication
(:func:`simulate_answers`' timestamps). A *round* of ``N`` answers published together (one batch, or
one more look of adaptive answers) is complete after
``(round_hours + N / answers_per_hour) · exp(round_spread · z)`` hours: a latency for workers to
find the HITs plus the crowd's throughput (small batches of the preference-judgments paper Table 2
finished in under an hour, the first one in 13.5 h).

The defaults give about 50% "equal", 21% A and 29% B answers on the demo collection with a median of
about 21 s per answer, as in the 2010 campaign of the preference-judgments paper (Table 2).
Randomness in :func:`simulate_answers` is counter-based: answer *k* of pair *p* depends only on the
crowd seed, *p* and *k*, so collecting in any order, after any crash, gives the same answers.
:mod:`crowdprefs.quality.crowd_fit` fits the model to a recorded campaign.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import special

from crowdprefs.campaign.settings import check_section, check_values
from crowdprefs.clock import now
from crowdprefs.errors import InputError
from crowdprefs.files import read_text
from crowdprefs.rng import counter_uniform


@dataclass(frozen=True)
class CrowdModel:
    """Parameters of the simulated crowd (similarities in units of the gap between true groups).

    ``noise``, ``equal_band`` are the workers' medians, ``*_spread`` the standard deviations of
    their logarithms; ``position_bias`` and ``bias_spread`` the mean and standard deviation of
    the workers' lean to B. See the module doc for the rest.
    """

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
    round_hours: float = 0.5
    answers_per_hour: float = 90.0
    round_spread: float = 0.5

    def __post_init__(self) -> None:
        check_values("simulated", self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CrowdModel:
        """The model from a ``[simulated]`` TOML table, checked as the project's ``[simulated]``
        section is (:func:`~crowdprefs.campaign.settings.check_values`: a whole number where
        one is expected, ``workers = 40.0`` included); one clear error for the first value
        that does not fit. A whole number given for a fractional setting is taken as a float."""
        kinds = {f.name: type(f.default) for f in fields(cls)}
        unknown = set(data) - set(kinds)
        if unknown:
            raise InputError(f"unknown simulated-crowd setting(s): {', '.join(sorted(unknown))}")
        values = {
            name: float(value)
            if kinds[name] is float and type(value) is int  # not bool: the check refuses it
            else value
            for name, value in data.items()
        }
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


REJECTION_TRIES = 4
"""Draws from the whole pool per answer before :func:`distinct_workers` masks taken workers."""


def choice_shares(noise, band, bias, gap_a) -> np.ndarray:
    """``(P(A), P(equal), P(B))`` of honest workers (broadcast arrays) at signed gaps
    ``gap_a = s_A − s_B``: ``P(A) = Φ((g − bias − band)/noise)``, ``P(B) = Φ((−g + bias −
    band)/noise)``. The last axis of the result holds the three shares."""
    p_a = special.ndtr((gap_a - bias - band) / noise)
    p_b = special.ndtr((-gap_a + bias - band) / noise)
    return np.stack([p_a, 1.0 - p_a - p_b, p_b], axis=-1)


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

    def shares(self, gap_a: np.ndarray) -> np.ndarray:
        """Each worker's ``(P(A), P(equal), P(B))`` at each gap: shape ``(workers, gaps, 3)``;
        careless workers answer each option with probability 1/3, bots always "equal"."""
        gap = np.asarray(gap_a, dtype=float)[None, :]
        table = choice_shares(self.noise[:, None], self.band[:, None], self.bias[:, None], gap)
        table[self.kind == "careless"] = 1.0 / 3.0
        table[self.kind == "bot"] = (0.0, 1.0, 0.0)
        return table


def distinct_workers(
    weight: np.ndarray, taken: np.ndarray, uniform: Callable[[int, np.ndarray], np.ndarray]
) -> np.ndarray:
    """One more worker for each row of ``taken`` (the workers already answering that pair, −1
    for empty slots), drawn by ``weight`` among the workers not taken yet: successive sampling
    without replacement. Draws from the whole pool are rejected while they repeat a worker (up
    to :data:`REJECTION_TRIES` times); the rows left then draw from their masked weights.
    ``uniform(t, rows)`` gives the uniform numbers of try ``t`` for those rows."""
    cumulative = np.cumsum(weight / weight.sum())
    last = len(weight) - 1
    pick = np.full(len(taken), -1, dtype=np.int64)
    todo = np.arange(len(taken))
    for t in range(REJECTION_TRIES):
        if len(todo) == 0:
            return pick
        draw = np.minimum(np.searchsorted(cumulative, uniform(t, todo)), last)
        fresh = ~(taken[todo] == draw[:, None]).any(axis=1)
        pick[todo[fresh]] = draw[fresh]
        todo = todo[~fresh]
    if len(todo):
        masked = np.tile(weight, (len(todo), 1))
        used = taken[todo]
        rows = np.broadcast_to(np.arange(len(todo))[:, None], used.shape)
        masked[rows[used >= 0], used[used >= 0]] = 0.0
        if (masked.sum(axis=1) <= 0).any():
            raise InputError("the simulated crowd has too few workers for distinct answers")
        masked = np.cumsum(masked, axis=1)
        u = uniform(REJECTION_TRIES, todo) * masked[:, -1]
        pick[todo] = np.minimum((masked <= u[:, None]).sum(axis=1), last)
    return pick


def round_hours(model: CrowdModel, answers, z=0.0) -> np.ndarray:
    """Hours until a round of ``answers`` answers published together is complete, at standard
    normal deviates ``z`` (0: the median round; see the module doc)."""
    median = model.round_hours + np.asarray(answers, dtype=float) / model.answers_per_hour
    return median * np.exp(model.round_spread * np.asarray(z, dtype=float))


def latent_similarity(truth: pd.DataFrame) -> dict[tuple[str, str], float]:
    """``(query, document) → s`` from group qrels (group 1 most similar: s = −group)."""
    return {
        (q, d): -float(g)
        for q, d, g in truth[["query", "document", "group"]].itertuples(index=False)
    }


def random_truth(candidates: pd.DataFrame, seed: int) -> pd.DataFrame:
    """A hidden truth for candidates without one: about three members per group, seeded (the
    queries in their order of appearance)."""
    rng = np.random.default_rng([seed, 0x7207])
    codes, queries = pd.factorize(candidates["query"])
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes, minlength=len(queries)).tolist()
    groups = [rng.integers(1, max(1, round(n / 3)) + 1, n) for n in sizes]
    return pd.DataFrame(
        {
            "query": candidates["query"].to_numpy()[order],
            "document": candidates["document"].to_numpy()[order],
            "group": np.concatenate(groups) if groups else np.zeros(0, dtype=np.int64),
        }
    )


ANSWER_COLUMNS = [
    "pair_id", "crowd", "assignment_id", "worker_id", "choice", "seconds", "accepted_at",
    "submitted_at", "score",
]  # fmt: skip
"""The columns of :func:`simulate_answers`' rows."""

PAIRS_PER_CHUNK = 5_000
"""Pairs answered and stored at a time: a round's millions of answers never sit in memory."""

CHOICES = np.array(["A", "B", "equal"])
"""The choices by code (0, 1, 2), in the order careless workers draw them."""


def whole_microseconds(value: np.ndarray, per_unit: int) -> np.ndarray:
    """``timedelta(hours=v)`` (``per_unit`` 3,600,000,000) or ``timedelta(seconds=v)``
    (1,000,000) of each positive ``v``, in microseconds, rounded exactly as CPython rounds it:
    the whole units, the fraction's microseconds truncated, their rest half to even."""
    fraction, whole = np.modf(value)
    rest, part = np.modf(fraction * float(per_unit))
    micro = whole.astype(np.int64) * per_unit + part.astype(np.int64)
    return micro + ((rest > 0.5) | ((rest == 0.5) & (micro % 2 == 1)))


def iso_times(start: datetime, micro: np.ndarray) -> np.ndarray:
    """``(start + timedelta(microseconds=m)).isoformat(timespec="milliseconds")`` of each
    ``m`` (``start`` naive or at a fixed offset, in years 1970 to 9999), written digit by
    digit: numpy's own formatting of each time is several times slower."""
    naive = start.replace(tzinfo=None)
    stamp = naive.isoformat(timespec="milliseconds")
    offset = start.isoformat(timespec="milliseconds")[len(stamp) :].encode()
    ms = (np.datetime64(naive, "us") + micro.astype("timedelta64[us]")).astype("datetime64[ms]")
    day, in_day = np.divmod(ms.astype(np.int64), 86_400_000)
    days, which = np.unique(day, return_inverse=True)
    dates = np.datetime_as_string(days.astype("datetime64[D]")).astype("S10")
    width = len(stamp) + len(offset)
    text = np.empty((len(ms), width), dtype=np.uint8)
    text[:, :10] = dates.view(np.uint8).reshape(-1, 10)[which]
    text[:, [10, 13, 16, 19]] = np.frombuffer(b"T::.", dtype=np.uint8)
    hours, minutes = in_day // 3_600_000, in_day // 60_000 % 60
    seconds, milli = in_day // 1000 % 60, in_day % 1000
    digits = {11: hours // 10, 12: hours % 10, 14: minutes // 10, 15: minutes % 10,
              17: seconds // 10, 18: seconds % 10,
              20: milli // 100, 21: milli // 10 % 10, 22: milli % 10}  # fmt: skip
    for place, digit in digits.items():
        text[:, place] = 48 + digit  # ASCII "0" + the digit
    text[:, len(stamp) :] = np.frombuffer(offset, dtype=np.uint8)
    return text.view(f"S{width}").ravel().astype(f"U{width}")


def latent_of(
    similarity: dict[tuple[str, str], float], pairs: pd.DataFrame
) -> tuple[np.ndarray, np.ndarray]:
    """``s_x`` and ``s_y`` of each pair, NaN where the truth has none; an ``x`` equal to its
    query that the truth does not group (an attention check) is more similar than any candidate
    (a query that is one of its own candidates keeps its group)."""
    query = pairs["query"].tolist()
    keys = (zip(query, pairs[column].tolist(), strict=True) for column in ("x", "y"))
    sx, sy = (np.array([similarity.get(key, np.nan) for key in k], dtype=float) for k in keys)
    top = np.nanmax(list(similarity.values())) if similarity else 0.0
    check = (pairs["x"].to_numpy() == pairs["query"].to_numpy()) & np.isnan(sx)
    return np.where(check, top + 3.0, sx), sy


def _shown_gaps(
    pairs: pd.DataFrame, similarity: dict[tuple[str, str], float], a_is_x: np.ndarray
) -> np.ndarray:
    """Each pair's latent ``s_A − s_B`` as shown (:func:`latent_of`); a pair the truth has no
    similarity for is refused, naming the first."""
    sx, sy = latent_of(similarity, pairs)
    missing = np.isnan(sx) | np.isnan(sy)
    if missing.any():
        bad = pairs.loc[missing].iloc[0]
        raise InputError(
            f"the simulated crowd's truth has no similarity for query {bad['query']!r}, "
            f"pair {bad['x']!r}/{bad['y']!r}"
        )
    return np.where(a_is_x, sx - sy, sy - sx)


def answer_chunks(
    pairs: pd.DataFrame,
    similarity: dict[tuple[str, str], float],
    pool: WorkerPool,
    model: CrowdModel,
    seed: int,
    first: np.ndarray | None = None,
    published_at: datetime | None = None,
    blocked: np.ndarray | None = None,
) -> Iterator[dict[str, np.ndarray | list[str]]]:
    """:func:`crowdprefs.quality.crowd_model.simulate_answers`' answers (``pairs`` with
    ``listen_seconds``), the same to the bit, :data:`PAIRS_PER_CHUNK` pairs at a time and
    vectorised to their times' text (answer *k* of pair *p* depends only on the seed, *p* and
    *k*): columns of arrays, as :meth:`~crowdprefs.campaign.store.Store.add_answer_stream`
    takes them. The pairs are checked at once (workers enough, a similarity for each), not on
    the first chunk."""
    wanted = pairs["answers_wanted"].to_numpy(dtype=np.int64)
    first = np.zeros(len(pairs), np.int64) if first is None else np.asarray(first, np.int64)
    blocked = np.zeros(len(pool.ids), dtype=bool) if blocked is None else blocked
    available = int((~blocked).sum())
    if (wanted > available).any():
        raise InputError(
            f"the simulated crowd has {available} workers not blocked; "
            f"a pair cannot get {wanted.max()} distinct answers"
        )
    if not (wanted > first).any():
        return iter(())
    a_is_x = pairs["a_is_x"].to_numpy(dtype=bool)
    gap = _shown_gaps(pairs, similarity, a_is_x)
    pair_ids = pairs["pair_id"].to_numpy(dtype=np.int64)
    listen_seconds = (
        pairs["listen_seconds"].to_numpy(dtype=np.float64)
        if "listen_seconds" in pairs
        else np.full(len(pairs), np.nan)
    )
    with np.errstate(divide="ignore"):  # blocked workers rank last (log 0 = −∞)
        log_weight = np.log(np.where(blocked, 0.0, pool.weight))
    workers = np.arange(len(pool.ids))
    careless_worker, bot_worker = pool.kind == "careless", pool.kind == "bot"
    start = published_at or datetime.fromisoformat(now())

    def stream() -> Iterator[dict[str, np.ndarray | list[str]]]:
        for begin in range(0, len(pairs), PAIRS_PER_CHUNK):
            part = slice(begin, begin + PAIRS_PER_CHUNK)
            todo = np.maximum(wanted[part] - first[part], 0)
            if not todo.any():
                continue
            row = np.repeat(np.arange(len(todo)), todo)
            k = first[part][row] + np.arange(len(row)) - np.repeat(np.cumsum(todo) - todo, todo)
            pair_id = pair_ids[part]
            # Distinct workers per pair: the Gumbel-top-k ranking of the pool, keyed by pair.
            u = counter_uniform(seed, 1, pair_id[:, None], workers[None, :])
            ranking = np.argsort(-(log_weight[None, :] - np.log(-np.log(u))), axis=1)
            worker = ranking[row, k]
            pair_id = pair_id[row]

            def draw(stream: int, where: np.ndarray | slice = slice(None)) -> np.ndarray:
                return counter_uniform(seed, stream, pair_id[where], k[where])  # noqa: B023

            perceived = (
                gap[part][row] + pool.noise[worker] * special.ndtri(draw(2)) - pool.bias[worker]
            )
            choice = np.where(
                np.abs(perceived) < pool.band[worker], 2, np.where(perceived > 0, 0, 1)
            )
            seconds = pool.median_seconds[worker] * np.exp(
                model.answer_seconds_spread * special.ndtri(draw(3))
            )
            # an honest worker hears the three clips, then decides
            listen = listen_seconds[part][row]
            floor = listen - model.think_seconds * np.log(draw(7))
            seconds = np.where(np.isnan(listen), seconds, np.maximum(seconds, floor))
            careless, bots = careless_worker[worker], bot_worker[worker]
            choice[careless] = (draw(4, careless) * 3).astype(int)
            seconds[careless] = model.careless_seconds * np.exp(
                0.3 * special.ndtri(draw(5, careless))
            )
            choice[bots] = 2
            seconds[bots] = model.bot_seconds
            accepted = whole_microseconds(model.completion_hours * draw(6), 3_600_000_000)
            submitted = accepted + whole_microseconds(seconds, 1_000_000)
            side = np.array([1, -1, 0])[choice]
            yield {
                "pair_id": pair_id,
                "assignment_id": [
                    f"sim-{p}-{j}" for p, j in zip(pair_id.tolist(), k.tolist(), strict=True)
                ],
                "worker_id": pool.ids[worker],
                "choice": CHOICES[choice],
                "score": np.where(a_is_x[part][row], side, -side),
                "seconds": np.round(seconds, 1),
                "accepted_at": iso_times(start, accepted),
                "submitted_at": iso_times(start, submitted),
            }

    return stream()


def simulate_answers(
    pairs: pd.DataFrame,
    similarity: dict[tuple[str, str], float],
    pool: WorkerPool,
    model: CrowdModel,
    seed: int,
    first: np.ndarray | None = None,
    published_at: datetime | None = None,
    blocked: np.ndarray | None = None,
) -> pd.DataFrame:
    """:func:`answer_chunks` of every pair at once, as rows ready for
    :meth:`crowdprefs.campaign.store.Store.add_answers`."""
    parts = list(answer_chunks(pairs, similarity, pool, model, seed, first, published_at, blocked))
    if not parts:
        return pd.DataFrame(columns=["pair_id"])
    columns = {name: np.concatenate([part[name] for part in parts]) for name in parts[0]}
    return pd.DataFrame(columns).assign(crowd="simulated")[ANSWER_COLUMNS]


def model_file_section(path: str | os.PathLike) -> dict[str, Any]:
    """The parsed TOML of a crowd model file, one clear error when it is missing or invalid."""
    path = Path(path)
    text, _ = read_text(path, "crowd model file")  # a byte-order mark is dropped
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise InputError(f"{path}: invalid TOML: {error}") from None


MODEL_TABLES = ("simulated", "fit")
"""The tables of a crowd-model file: the model, and what ``crowd-model fit`` says of its fit."""


def load_crowd_model(path: str | os.PathLike) -> CrowdModel:
    """The :class:`CrowdModel` of a TOML file's ``[simulated]`` table (``crowd-model fit``),
    checked against the settings schema's ``[simulated]`` keys (types and bounds). A file
    without that table, with another table (``[simulatd]``) or with keys outside a table is
    refused: it would otherwise be read as the default crowd."""
    data = model_file_section(path)
    for name, value in data.items():
        if name not in MODEL_TABLES or not isinstance(value, dict):
            close = difflib.get_close_matches(name, MODEL_TABLES, n=1, cutoff=0.6)
            hint = f" (did you mean [{close[0]}]?)" if close else ""
            what = "table" if isinstance(value, dict) else "top-level key"
            raise InputError(
                f"{path}: unknown {what} {name!r}{hint}; a crowd-model file holds "
                "[simulated] (and [fit])"
            )
    if "simulated" not in data:
        raise InputError(f"{path}: no [simulated] table (write one with 'crowd-model fit')")
    check_section("simulated", data["simulated"], path)
    section = dict(data["simulated"])
    section.pop("truth", None)
    section.pop("seed", None)
    try:
        return CrowdModel.from_dict(section)
    except InputError as error:
        raise InputError(f"{path}: {error}") from None
    except TypeError as error:
        raise InputError(f"{path}: invalid crowd model: {error}") from None
