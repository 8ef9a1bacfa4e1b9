"""The runs as arrays: systems, queries, the distinct retrieved (query, document) pairs and
their S×P incidence matrix; judged gains, document metadata and query folds on those pairs.

The MTC paper (Urbano & Schedl, "Minimal test collections for low-cost
evaluation of Audio Music Similarity and Retrieval systems"), §3: every retrieved (query,
document) is a *pair* ``d`` with gain G_d. Everything else in :mod:`crowdprefs.evaluation.mtc`
works on the incidence matrix X (X_sd = 1 when system s retrieved d), so a sum per system is
X w and an S×S product X diag(w) Xᵀ.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError
from crowdprefs.io import read_fields

Scale = Literal["fine", "broad"]
MAX_GAIN: dict[str, float] = {"fine": 100.0, "broad": 2.0}


@dataclass(frozen=True, eq=False)
class Collection:
    """The runs as arrays: systems, queries, distinct pairs and their S×P incidence matrix.

    Orders are those of first appearance in the runs (systems; queries; the pairs grouped by
    query in query order, documents in first-appearance order within the query), which is what
    makes the reference tool's tie-breaks reproducible.
    """

    systems: pd.Index
    queries: pd.Index
    pairs: pd.DataFrame  # query, document, q (query position), c (systems retrieving it)
    incidence: np.ndarray  # S × P float, 1 where the system retrieved the pair
    k: int

    @property
    def n_systems(self) -> int:
        return len(self.systems)

    @property
    def n_queries(self) -> int:
        return len(self.queries)

    @property
    def n_pairs(self) -> int:
        return len(self.pairs)

    @cached_property
    def query_of(self) -> np.ndarray:
        return self.pairs["q"].to_numpy()

    @cached_property
    def retrieved_by(self) -> np.ndarray:
        """c_d: the number of systems that retrieved each pair."""
        return self.incidence.sum(axis=0)

    @cached_property
    def mean_over_systems(self) -> np.ndarray:
        """S×P: X_{sd}/c_d, whose column d averages a per-system quantity over the systems
        that retrieved d."""
        return self.incidence / self.retrieved_by

    @cached_property
    def retrievals(self) -> tuple[np.ndarray, np.ndarray]:
        """(system, pair) of every nonzero of the incidence matrix."""
        return np.nonzero(self.incidence)

    @cached_property
    def co_retrievals(self) -> tuple[np.ndarray, np.ndarray]:
        """(A·S + B, pair) for every ordered pair of systems (A, B) that both retrieved a pair."""
        system, pair = self.retrievals
        order = np.argsort(pair, kind="stable")
        starts = np.flatnonzero(np.r_[True, np.diff(pair[order]) != 0])
        sizes = np.diff(np.r_[starts, order.size])
        squares = sizes * sizes
        first = np.repeat(starts, squares)
        offset = np.arange(first.size) - np.repeat(np.cumsum(squares) - squares, squares)
        span = np.repeat(sizes, squares)
        left, right = order[first + offset // span], order[first + offset % span]
        return system[left] * self.n_systems + system[right], pair[left]

    def gram(self, weights: np.ndarray) -> np.ndarray:
        """X diag(w) Xᵀ (S×S) from the co-retrievals, without a dense product."""
        cell, pair = self.co_retrievals
        return np.bincount(cell, weights[pair], self.n_systems**2).reshape(
            self.n_systems, self.n_systems
        )

    def per_system(self, weights: np.ndarray) -> np.ndarray:
        """X w (S): the sum of ``weights`` over the pairs each system retrieved."""
        system, pair = self.retrievals
        return np.bincount(system, weights[pair], self.n_systems)

    @property
    def overlap(self) -> float:
        """OV of the MTC paper (§4.2.1): distinct pairs / (S·Q·k)."""
        return self.n_pairs / (self.n_systems * self.n_queries * self.k)

    def subset(self, systems: np.ndarray, queries: np.ndarray) -> tuple[Collection, np.ndarray]:
        """The collection of the chosen systems' runs on the chosen queries (boolean masks in
        system and query order), and for each of its pairs the position of that pair here."""
        incidence = self.incidence[systems]
        kept = np.flatnonzero((incidence.sum(axis=0) > 0) & queries[self.query_of])
        incidence = incidence[:, kept]
        pairs = self.pairs.iloc[kept].reset_index(drop=True)
        pairs["q"] = (np.cumsum(queries) - 1)[pairs["q"].to_numpy()]
        pairs["c"] = incidence.sum(axis=0).astype(int)
        part = Collection(self.systems[systems], self.queries[queries], pairs, incidence, self.k)
        return part, kept

    def pair_index(self, frame: pd.DataFrame) -> np.ndarray:
        """Position of each (query, document) row of ``frame`` among the pairs; −1 if absent."""
        keys = pd.MultiIndex.from_frame(self.pairs[["query", "document"]])
        wanted = pd.MultiIndex.from_arrays(
            [frame["query"].astype(str).to_numpy(), frame["document"].astype(str).to_numpy()]
        )
        return keys.get_indexer(wanted)


def validate_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """Check the ``[system, query, document]`` columns and that no run repeats a document."""
    missing = {"system", "query", "document"} - set(runs.columns)
    if missing:
        raise InputError(f"runs: missing column(s) {', '.join(sorted(missing))}")
    if runs.empty:
        raise InputError("runs: no rows")
    runs = runs.astype({"system": str, "query": str, "document": str})
    repeated = runs.duplicated(["system", "query", "document"]).to_numpy()
    if repeated.any():
        row = runs[repeated].iloc[0]
        raise InputError(
            f"runs: document {row.document!r} repeated in system {row.system!r} query {row.query!r}"
        )
    return runs


def build_collection(runs: pd.DataFrame) -> Collection:
    """The :class:`Collection` of ``runs`` (``[system, query, document]``, rank = row order)."""
    runs = validate_runs(runs)
    systems = pd.Index(pd.unique(runs["system"]))
    queries = pd.Index(pd.unique(runs["query"]))
    rows = runs.assign(q=queries.get_indexer(runs["query"]))
    pairs = (
        rows.drop_duplicates(["query", "document"])
        .sort_values("q", kind="stable")[["query", "document", "q"]]
        .reset_index(drop=True)
    )
    keys = pd.MultiIndex.from_frame(pairs[["query", "document"]])
    column = keys.get_indexer(pd.MultiIndex.from_frame(rows[["query", "document"]]))
    incidence = np.zeros((len(systems), len(pairs)))
    incidence[systems.get_indexer(rows["system"]), column] = 1.0
    pairs["c"] = incidence.sum(axis=0).astype(int)
    k = int(rows.groupby(["system", "query"], sort=False).size().max())
    return Collection(systems, queries, pairs, incidence, k)


def gains_vector(col: Collection, judgments: pd.DataFrame | None, scale: Scale) -> np.ndarray:
    """Judged gain of each pair (NaN = unjudged) from ``[query, document, gain]``.

    Judgments of pairs no system retrieved are ignored; a gain outside [0, M] is an error.
    """
    gains = np.full(col.n_pairs, np.nan)
    if judgments is None or judgments.empty:
        return gains
    values = judgments["gain"].to_numpy(dtype=float)
    bad = ~((values >= 0) & (values <= MAX_GAIN[scale]))
    if bad.any():
        row = judgments.iloc[int(np.flatnonzero(bad)[0])]
        raise InputError(
            f"judgments: gain {row.gain!r} of ({row.query}, {row.document}) is outside "
            f"0..{MAX_GAIN[scale]:g} of the {scale} scale"
        )
    where = col.pair_index(judgments)
    gains[where[where >= 0]] = values[where >= 0]
    return gains


def validate_metadata(metadata: pd.DataFrame) -> pd.DataFrame:
    """``[document, artist, genre]`` as strings indexed by document (one row per document)."""
    missing = {"document", "artist", "genre"} - set(metadata.columns)
    if missing:
        raise InputError(f"metadata: missing column(s) {', '.join(sorted(missing))}")
    metadata = metadata.astype({"document": str, "artist": str, "genre": str})
    repeated = metadata.duplicated("document").to_numpy()
    if repeated.any():
        raise InputError(f"metadata: document {metadata.document[repeated].iloc[0]!r} repeated")
    return metadata.set_index("document")[["artist", "genre"]]


@dataclass(frozen=True, eq=False)
class PairMetadata:
    """Per pair: artist and genre codes of the document, genre of the query (−1 = unknown)."""

    artist: np.ndarray
    genre: np.ndarray
    query_genre: np.ndarray

    @property
    def known(self) -> np.ndarray:
        return (self.artist >= 0) & (self.genre >= 0) & (self.query_genre >= 0)

    def take(self, pairs: np.ndarray) -> PairMetadata:
        """The metadata of the pairs at these positions (of :meth:`Collection.subset`)."""
        return PairMetadata(self.artist[pairs], self.genre[pairs], self.query_genre[pairs])


def pair_metadata(col: Collection, metadata: pd.DataFrame) -> PairMetadata:
    """Look up artist and genre of every pair's document and query in ``metadata``."""
    meta = validate_metadata(metadata)
    artists = pd.Index(pd.unique(meta["artist"]))
    genres = pd.Index(pd.unique(meta["genre"]))
    doc = meta.reindex(col.pairs["document"])
    query = meta.reindex(col.pairs["query"])
    return PairMetadata(
        artists.get_indexer(doc["artist"]),
        genres.get_indexer(doc["genre"]),
        genres.get_indexer(query["genre"]),
    )


def query_groups(col: Collection, codes: np.ndarray) -> np.ndarray:
    """Group number of each pair by (query, code); pairs with an unknown code (−1) included."""
    return np.unique(col.query_of * (codes.max() + 2) + codes + 1, return_inverse=True)[1]


def query_folds(col: Collection, folds: int, seed: int = 0) -> np.ndarray:
    """Fold (0..folds−1) of every pair by its query, queries dealt to folds in a seeded order."""
    order = np.random.default_rng(seed).permutation(col.n_queries)
    return (np.argsort(order) % folds)[col.query_of]


def transfer_split(
    col: Collection, seed: int
) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """Disjoint halves of the systems and of the queries, drawn with ``seed``: the (systems,
    queries) masks of a training part and of a test part that shares neither with it, for
    :meth:`Collection.subset` (a model trained on last year's systems and queries meets new
    ones)."""
    rng = np.random.default_rng(seed)
    systems = rng.permutation(col.n_systems) < col.n_systems // 2
    queries = rng.permutation(col.n_queries) < col.n_queries // 2
    return (systems, queries), (~systems, ~queries)


def read_metadata(path: str | Path) -> pd.DataFrame:
    """Read ``document artist genre`` lines (whitespace-separated) as a DataFrame."""
    frame = read_fields(Path(path), (3,))
    frame.columns = ["document", "artist", "genre"]
    return frame
