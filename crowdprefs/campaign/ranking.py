"""A campaign that knows its systems: the ``[systems]`` setting, and where the systems stand on
a project's partly sorted lists (:mod:`crowdprefs.campaign.systems` on the project's state).

``[systems]`` (written by ``init --runs``): ``runs`` (a run file in the project folder),
``measure`` (``ADR@5`` by default; ``AG@k``, ``nDCG@k``), ``confidence`` (0.95), ``samples``
(drawn finished lists per decision, 100) and ``max_pairs`` (pairs per batch at most; all that
matter by default). With it, each batch asks only the segments whose order can still change how
two systems compare, most informative first, and the campaign ends when every pair of systems is
decided at the confidence (the driver's ``next_batch`` then has nothing to ask). ``init --runs``
also fixes each query's first pivot at the systems' consensus k-th place, in the project's
candidate order (:func:`consensus_orders`). With a machine prior (``[prior] scores``) the unknown
verdicts are drawn from its scores instead of the systems' consensus.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import lazy_loader

from crowdprefs.campaign import systems as S
from crowdprefs.campaign.sorting import SortState
from crowdprefs.errors import InputError

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project

np = lazy_loader.load("numpy")  # imported on first use
pd = lazy_loader.load("pandas")  # imported on first use: status checks [systems] without it

SECTION = "systems"
RUNS_NAME = "runs.txt"
"""The file ``init --runs`` writes the runs to, in the project folder."""
DEFAULT_MEASURE = "ADR@5"
DEFAULT_CONFIDENCE = 0.95
DEFAULT_SAMPLES = 100


@dataclass(frozen=True)
class RankSettings:
    """The ``[systems]`` section, checked."""

    runs: Path
    measure: S.RankMeasure
    confidence: float = DEFAULT_CONFIDENCE
    samples: int = DEFAULT_SAMPLES
    max_pairs: int | None = None

    @classmethod
    def of(cls, project: Project) -> RankSettings | None:
        """The project's setting (``None`` without a ``[systems]`` section)."""
        section = project.section(SECTION)
        if not section:
            return None
        if "runs" not in section:
            raise InputError("[systems] needs runs = the run file of the systems to rank")
        return cls(
            project.root / section["runs"],
            S.parse_rank_measure(section.get("measure", DEFAULT_MEASURE)),
            float(section.get("confidence", DEFAULT_CONFIDENCE)),
            int(section.get("samples", DEFAULT_SAMPLES)),
            section.get("max_pairs"),
        )


@dataclass(frozen=True)
class Standing:
    """Where the systems stand on the partly sorted lists: the candidates (``queries``,
    ``documents``, ``query`` codes), the :class:`~crowdprefs.campaign.systems.Partial`, the
    drawn scores (draws × systems × queries), the pairs of systems, and each segment's priority
    and whether the next batch asks it."""

    queries: list[str]
    documents: np.ndarray
    query: np.ndarray
    partial: S.Partial
    runs: S.Retrieved
    measure: S.RankMeasure
    drawn: np.ndarray
    pairs: S.SystemPairs
    priority: np.ndarray
    chosen: np.ndarray

    def wanted(self, needed: Sequence[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
        """The needed ``(query, x, pivot)`` pairs of the segments the next batch asks."""
        index = {
            (q, d): i for i, (q, d) in enumerate(zip(self.q_names, self.documents, strict=True))
        }
        return [p for p in needed if self.chosen[self.partial.segment[index[p[0], p[1]]]]]

    @property
    def q_names(self) -> np.ndarray:
        return np.asarray(self.queries, dtype=object)[self.query]

    def systems_frame(self, confidence: float) -> pd.DataFrame:
        """``system, mean, low, high``: each system's mean score over the drawn finished lists
        and its central ``confidence`` interval (the unsorted parts' uncertainty)."""
        means = self.drawn.mean(axis=2)  # draws × systems
        tail = (1 - confidence) / 2
        low, high = np.quantile(means, [tail, 1 - tail], axis=0)
        frame = pd.DataFrame(
            {"system": self.runs.systems, "mean": means.mean(axis=0), "low": low, "high": high}
        )
        return frame.sort_values("mean", ascending=False, kind="stable", ignore_index=True)

    def pairs_frame(self) -> pd.DataFrame:
        """``system_a, system_b, order, holds, decided`` (``order`` ``>``, ``=`` or ``<``: how
        ``system_a`` compares; ``holds`` the probability that order holds once the lists are
        finished), the least sure first."""
        pairs = self.pairs
        names = self.runs.systems
        ahead = pairs.order >= 0
        frame = pd.DataFrame(
            {
                "system_a": np.where(ahead, names[pairs.first], names[pairs.second]),
                "system_b": np.where(ahead, names[pairs.second], names[pairs.first]),
                "order": np.where(pairs.order == 0, "=", ">"),
                "holds": pairs.holds,
                "decided": pairs.decided,
            }
        )
        return frame.sort_values("holds", kind="stable", ignore_index=True)


def checked_runs(path: Path, measure: str, candidates: pd.DataFrame) -> tuple[pd.DataFrame, str]:
    """``init --runs``: the runs and the measure's canonical name, refused in one line when the
    measure is not one systems are ranked by or no run has a result for a candidate's query."""
    from crowdprefs.io import read_runs

    parsed = S.parse_rank_measure(measure)
    runs = read_runs(path)
    queries = candidates["query"].astype(str)
    S.retrieved(
        runs,
        sorted(set(queries)),
        candidates["document"].astype(str).to_numpy(),
        pd.Categorical(queries, categories=sorted(set(queries))).codes.astype(np.int64),
        parsed.k,
    )
    return runs, str(parsed)


def consensus_orders(
    candidates: Mapping[str, Sequence[str]], runs: pd.DataFrame, measure: str, seed: int
) -> dict[str, list[str]]:
    """``init --runs``: each query's ``candidates`` placed so that its QuickSort's first pivot is
    its candidate at the systems' consensus k-th place (:func:`~crowdprefs.campaign.systems.
    first_pivots`, ties by the seed's initial order). Fixed in the store's candidate order, it is
    the initial order every replay of the project rebuilds from the seed
    (:func:`~crowdprefs.campaign.sorting.with_first_pivots`); a machine prior's pivots rule
    over it (:func:`~crowdprefs.campaign.sorting.arranged`)."""
    from crowdprefs.campaign.sorting import initial_orders, with_first_pivots

    queries = list(candidates)
    documents = np.array([d for q in queries for d in candidates[q]], dtype=object)
    query = np.repeat(np.arange(len(queries)), [len(candidates[q]) for q in queries])
    k = S.parse_rank_measure(measure).k
    found = S.retrieved(runs, queries, documents, query, k)
    orders = initial_orders(candidates, seed)
    rank = {(q, d): i for q in queries for i, d in enumerate(orders[q])}
    position = np.array([rank[q, d] for q in queries for d in candidates[q]])
    pivots = S.first_pivots(query, S.consensus(found, len(documents)), k, position)
    chosen = {queries[query[i]]: documents[i] for i in pivots}
    return with_first_pivots(candidates, seed, chosen)


def read_systems_runs(path: Path) -> pd.DataFrame:
    """The runs of ``[systems] runs``, refused in one line when the file is gone."""
    from crowdprefs.io import read_runs

    if not path.exists():
        raise InputError(f"{path}: not found ([systems] runs); restore the file")
    return read_runs(path)


def standing(
    candidates: Mapping[str, Sequence[str]],
    states: Mapping[str, SortState],
    verdicts: Mapping[str, Mapping[tuple[str, str], int]],
    runs: pd.DataFrame,
    measure: S.RankMeasure,
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    samples: int = DEFAULT_SAMPLES,
    max_pairs: int | None = None,
    seed: Sequence[int] = (0,),
    prior: Mapping[str, Mapping[str, float]] | None = None,
) -> Standing:
    """Where the systems stand (:class:`Standing`) on the sort ``states`` of the queries'
    ``candidates``, with the known ``verdicts`` per query: unknown verdicts drawn from the
    systems' consensus calibrated on the known ones (:class:`~crowdprefs.campaign.systems.
    VerdictModel`), or, with a machine ``prior`` (each query's scores per document), the
    prior's scores standardised within each query; ``samples`` finished lists drawn with the
    stream ``seed``."""
    queries = list(candidates)
    documents = np.array([d for q in queries for d in candidates[q]], dtype=object)
    query = np.repeat(np.arange(len(queries)), [len(candidates[q]) for q in queries])
    partial = S.from_states(states, candidates)
    found = S.retrieved(runs, queries, documents, query, measure.k)
    consensus = S.consensus(found, len(documents))
    if prior is not None:
        consensus = _standardised(prior, queries, documents, query)
    names = np.asarray(queries)[query]
    index = {(q, d): i for i, (q, d) in enumerate(zip(names, documents, strict=True))}
    rows = [
        (index[q, x], index[q, y], v)
        for q, known in verdicts.items()
        for (x, y), v in known.items()
        if (q, x) in index and (q, y) in index
    ]
    x, y, v = (
        (np.array(c, dtype=np.int64) for c in zip(*rows, strict=True))
        if rows
        else (np.zeros(0, np.int64),) * 3
    )
    model = S.VerdictModel.fit(consensus[x] - consensus[y], v)
    depth = measure.k if measure.name == "ADR" else None
    rng = np.random.default_rng(list(seed))
    known = None
    if len(x):
        keys = x * len(documents) + y
        order = np.argsort(keys)
        known = (keys[order], v[order])
    groups = S.complete(partial, samples, rng, model, depth, known, consensus)
    drawn = S.scores(groups, query, found, measure)
    pairs = S.system_pairs(drawn, confidence)
    priority = S.priorities(partial, found, measure, drawn, pairs)
    chosen = S.choose(partial, priority, max_pairs)
    return Standing(
        queries, documents, query, partial, found, measure, drawn, pairs, priority, chosen
    )


def _standardised(prior, queries, documents, query) -> np.ndarray:
    """The prior's score of each candidate, standardised within its query (mean 0, s.d. 1)."""
    raw = np.array([prior[queries[q]][d] for q, d in zip(query, documents, strict=True)])
    mean = np.bincount(query, weights=raw) / np.bincount(query)
    spread = np.sqrt(np.bincount(query, weights=(raw - mean[query]) ** 2) / np.bincount(query))
    return (raw - mean[query]) / np.where(spread > 0, spread, 1.0)[query]


def project_standing(
    project: Project,
    states: Mapping[str, SortState] | None = None,
    iteration: int = 0,
    *,
    runs: pd.DataFrame | None = None,
    measure: S.RankMeasure | None = None,
    confidence: float | None = None,
    samples: int | None = None,
) -> Standing | None:
    """:func:`standing` of a project: its ``[systems]`` setting unless ``runs`` (and the
    others) are given; ``None`` when it has neither. Draws are fixed by the project seed and
    ``iteration``."""
    from crowdprefs.campaign.project_state import sort_states

    settings = RankSettings.of(project)
    if runs is None:
        if settings is None:
            return None
        runs = read_systems_runs(settings.runs)
    measure = measure or (settings.measure if settings else S.parse_rank_measure(DEFAULT_MEASURE))
    confidence = confidence or (settings.confidence if settings else DEFAULT_CONFIDENCE)
    samples = samples or (settings.samples if settings else DEFAULT_SAMPLES)
    store = project.store
    states = states if states is not None else sort_states(project)
    return standing(
        store.candidate_orders(),
        states,
        store.verdict_maps(None),
        runs,
        measure,
        confidence=confidence,
        samples=samples,
        max_pairs=settings.max_pairs if settings else None,
        seed=(project.seed, iteration, 0x5157),
        prior=store.prior_map(),
    )
