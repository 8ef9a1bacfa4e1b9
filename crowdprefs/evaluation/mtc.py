"""Minimal Test Collections (MTC) for AG@k: rank systems with few level judgments.

Seed ``000_83a62199e0fa5fac.txt`` (Urbano & Schedl, "Minimal test collections for low-cost
evaluation of Audio Music Similarity and Retrieval systems"); its lost equations and the
coefficients of its models are restated in ``shared/MTC.md``. Notation: S systems, Q queries,
k documents per run, maximum gain M (100 Fine, 2 Broad). Every retrieved (query, document) is a
*pair* ``d`` with gain G_d, estimated by its expectation E_d and variance V_d (judged: E = gain,
V = 0).

* AG@k of system s (§3.1): E[AG_s] = Σ_{d∈D(s)} E_d / (QkM), Var = Σ V_d / (QkM)².
* Difference of A and B (§3.2): E[Δ] = (Σ_{D(A)} E_d − Σ_{D(B)} E_d)/(QkM),
  Var[Δ] = Σ_{d ∈ D(A) △ D(B)} V_d / (QkM)²; confidence in its sign (§3.3) Φ(|E|/√Var), or
  P(Δ > δ) resp. P(Δ < −δ) for a minimum effect δ.
* Confidence in the ranking (§3.4): the mean of the pair confidences (or their minimum).
* Gain estimators (§4): uniform, the ordinal logistic models L_output and L_judge of the seed
  (coefficients of MTC.md), and a cumulative-logit model refitted from the judgments at hand,
  cross-fitted by query folds, with a per-system random effect for the correlated error of the
  documents a system retrieves; and a model trained on a judged collection (as the seed
  trains L_output on other editions) on document features and system profiles that need no
  judgment, used on another collection or cross-fitted by query folds.
* Selection (§3.4): the reference tool's static weight c·(S − c) and an adaptive weight.

Everything is vectorised over one S×P incidence matrix (P = distinct pairs), so a simulation
is a loop over judgment batches only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
from scipy.optimize import minimize
from scipy.special import expit
from scipy.stats import norm

from crowdprefs.errors import InputError

Scale = Literal["fine", "broad"]
MAX_GAIN: dict[str, float] = {"fine": 100.0, "broad": 2.0}

# L_output and L_judge of the seed (§4.2.3), as shipped with the reference tool (MTC.md):
# P(G ≥ L_{l+1} | θ) = logistic(α_l + β·θ), l = 1..9, on the Fine labels L = (5, 15, ..., 95).
FINE_LABELS = np.arange(5.0, 100.0, 10.0)
OUTPUT_ALPHA = np.array(
    [-1.315410, -2.049103, -2.609735, -3.085994, -3.524842, -3.990695, -4.577862, -5.447831,
     -6.708953]
)  # fmt: skip
OUTPUT_BETA = np.array([-6.344153, 1.321577, 11.686008, 3.129546, 1.887742, 5.009749, -3.072573])
JUDGE_ALPHA = np.array(
    [-2.7554, -4.9168, -7.0128, -9.001, -10.8548, -12.7158, -14.6722, -16.8831, -19.2536]
)
JUDGE_BETA = np.array([0.7954, 0.0128, 0.2078])


# --------------------------------------------------------------------------- collection


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
        """OV of the seed (§4.2.1): distinct pairs / (S·Q·k)."""
        return self.n_pairs / (self.n_systems * self.n_queries * self.k)

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


# --------------------------------------------------------------------------- estimates


@dataclass(frozen=True)
class Estimates:
    """Gain estimates of every pair: expectation, variance, and which pairs are judged.

    ``system_cov`` (S×S, optional) is the covariance of per-system errors b_s, by which an
    unjudged pair's gain is off by mean_{s retrieving d} b_s; it makes the errors of a
    system's documents correlated (MTC.md, "Why confidence 0.95 comes with accuracy 0.90").
    """

    mean: np.ndarray
    var: np.ndarray
    judged: np.ndarray
    system_cov: np.ndarray | None = None


def with_judgments(mean: np.ndarray, var: np.ndarray, gains: np.ndarray) -> Estimates:
    """Estimates where judged pairs take their gain and variance 0."""
    judged = ~np.isnan(gains)
    return Estimates(np.where(judged, gains, mean), np.where(judged, 0.0, var), judged)


def uniform_moments(scale: Scale) -> tuple[float, float]:
    """Expectation and variance of a gain uniform over the scale's levels (seed §4.1).

    Fine (0..100): E = 50, V = (101² − 1)/12 = 850; Broad (0, 1, 2): E = 1, V = 2/3.
    """
    n = int(MAX_GAIN[scale]) + 1
    return MAX_GAIN[scale] / 2, (n * n - 1) / 12


def ordinal_moments(
    alpha: np.ndarray, eta: np.ndarray, labels: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """E and Var of a gain under the cumulative logit of the seed (§4.1, MTC.md).

    P(G ≥ L_{l+1}) = logistic(α_l + η) for l = 1..len(α), P(G ≥ L_1) = 1;
    p_l = P(G ≥ L_l) − P(G ≥ L_{l+1}); E = Σ p_l L_l; V = Σ p_l L_l² − E².
    """
    upper = expit(alpha[None, :] + np.asarray(eta, dtype=float)[:, None])
    ones, zeros = np.ones((len(upper), 1)), np.zeros((len(upper), 1))
    p = np.hstack([ones, upper]) - np.hstack([upper, zeros])
    mean = p @ labels
    return mean, np.maximum(p @ labels**2 - mean**2, 0.0)


class GainEstimator:
    """Base of the gain estimators: ``predict`` gives E and Var of every pair's gain, judged
    pairs included but predicted without their own judgment; calling the estimator gives the
    :class:`Estimates` in which judged pairs take their gain."""

    def predict(self, gains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def __call__(self, gains: np.ndarray) -> Estimates:
        return with_judgments(*self.predict(gains), gains)


class UniformEstimator(GainEstimator):
    """Every unjudged pair uniform over the scale's levels (seed §4.1)."""

    def __init__(self, col: Collection, scale: Scale = "fine") -> None:
        e, v = uniform_moments(scale)
        self.mean, self.var = np.full(col.n_pairs, e), np.full(col.n_pairs, v)

    def predict(self, gains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.mean, self.var


@dataclass(frozen=True, eq=False)
class PairMetadata:
    """Per pair: artist and genre codes of the document, genre of the query (−1 = unknown)."""

    artist: np.ndarray
    genre: np.ndarray
    query_genre: np.ndarray

    @property
    def known(self) -> np.ndarray:
        return (self.artist >= 0) & (self.genre >= 0) & (self.query_genre >= 0)


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


def _share_in_pool(col: Collection, codes: np.ndarray) -> np.ndarray:
    """Share of the documents with known metadata in the pair's query pool P_q that have the
    same code (0 for an unknown code, −1); the reference tool's denominator (MTC.md)."""
    group = query_groups(col, codes)
    pool = np.bincount(col.query_of, codes >= 0)[col.query_of]
    share = np.divide(np.bincount(group)[group], pool, out=np.zeros(col.n_pairs), where=pool > 0)
    return np.where(codes >= 0, share, 0.0)


def output_features(col: Collection, meta: PairMetadata) -> np.ndarray:
    """θ of L_output (seed §4.2.1, MTC.md): (fSYS, OV, fSYS·OV, fART, sGEN, fGEN, sGEN·fGEN).

    fSYS = c/S; OV = P/(S·Q·k); fART, fGEN = share of the query's pool with the document's
    artist, genre; sGEN = 1 if the document's genre is the query's.
    """
    fsys = col.retrieved_by / col.n_systems
    ov = np.full(col.n_pairs, col.overlap)
    fart = _share_in_pool(col, meta.artist)
    fgen = _share_in_pool(col, meta.genre)
    sgen = ((meta.genre == meta.query_genre) & (meta.genre >= 0)).astype(float)
    return np.column_stack([fsys, ov, fsys * ov, fart, sgen, fgen, sgen * fgen])


def _fine_only(scale: Scale, model: str) -> None:
    if scale != "fine":
        raise InputError(f"{model} has coefficients for the Fine scale only; use --scale fine")


class OutputEstimator(GainEstimator):
    """L_output (seed §4.2.3) with the reference's coefficients; uniform where metadata lacks.

    It uses no judgment, so its estimates are computed once (seed §5.2: ranking without
    judgments).
    """

    def __init__(self, col: Collection, meta: PairMetadata, scale: Scale = "fine") -> None:
        _fine_only(scale, "L_output")
        mean, var = ordinal_moments(
            OUTPUT_ALPHA, output_features(col, meta) @ OUTPUT_BETA, FINE_LABELS
        )
        e, v = uniform_moments(scale)
        self.mean = np.where(meta.known, mean, e)
        self.var = np.where(meta.known, var, v)

    def predict(self, gains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.mean, self.var


def judge_features(
    col: Collection, gains: np.ndarray, artist_group: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """θ of L_judge (seed §4.2.2, MTC.md): (fSYS, aSYS, aART) and where it is defined.

    aSYS = mean over the systems retrieving d of each system's mean judged gain over all
    queries (a system without judgments counts as 0 in that mean); aART = mean judged gain of
    the documents of d's artist in d's query (``artist_group`` from :func:`query_groups`).
    A judged pair's own judgment is left out of its features. Defined when some retrieving
    system has a judgment and some document of the artist in the query is judged.
    """
    judged = ~np.isnan(gains)
    g = np.where(judged, gains, 0.0)
    system, pair = col.retrievals
    total = col.per_system(g)[system] - g[pair]
    count = col.per_system(judged.astype(float))[system] - judged[pair]
    mean = np.divide(total, count, out=np.zeros(total.size), where=count > 0)
    asys = np.bincount(pair, mean, col.n_pairs) / col.retrieved_by
    any_system = np.bincount(pair, count > 0, col.n_pairs) > 0
    art_n = np.bincount(artist_group, judged)[artist_group] - judged
    art_sum = np.bincount(artist_group, g)[artist_group] - g
    aart = np.divide(art_sum, art_n, out=np.zeros(col.n_pairs), where=art_n > 0)
    fsys = col.retrieved_by / col.n_systems
    return np.column_stack([fsys, asys, aart]), any_system & (art_n > 0)


class JudgeEstimator(GainEstimator):
    """L_judge (seed §4.2.3) where its features are defined, L_output elsewhere (MTC.md)."""

    def __init__(self, col: Collection, meta: PairMetadata, scale: Scale = "fine") -> None:
        _fine_only(scale, "L_judge")
        self.col = col
        self.output = OutputEstimator(col, meta, scale)
        self.artist_group = query_groups(col, meta.artist)
        self.has_artist = meta.artist >= 0

    def predict(self, gains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        theta, defined = judge_features(self.col, gains, self.artist_group)
        use = np.flatnonzero(defined & self.has_artist)
        mean, var = self.output.mean.copy(), self.output.var.copy()
        mean[use], var[use] = ordinal_moments(JUDGE_ALPHA, theta[use] @ JUDGE_BETA, FINE_LABELS)
        return mean, var


# --------------------------------------------------------------------------- fitted model


def fit_cumulative_logit(
    x: np.ndarray,
    y: np.ndarray,
    n_levels: int,
    offset: np.ndarray | None = None,
    prior_mean: np.ndarray | None = None,
    prior_precision: np.ndarray | None = None,
) -> np.ndarray:
    """Cumulative logit (the seed's §4.1 ordinal logistic framework), ML or MAP.

    P(y ≤ j | x) = logistic(κ_j − x·β − o), j = 0..J−2, with κ_0 = θ_0 and
    κ_j = κ_{j−1} + exp(θ_j) (the parametrisation of statsmodels' ``OrderedModel``, whose
    estimates these are without prior and offset o). Returns (β, θ). A Gaussian prior adds
    ½ Σ precision·(params − mean)² to the negative log-likelihood (then levels may be absent
    from ``y``); without one every level 0..J−1 must occur.
    """
    n, m = x.shape
    offset = np.zeros(n) if offset is None else offset
    lower_index, upper_index = y - 1, y  # κ index below and above each observation
    at_top, at_bottom = y == n_levels - 1, y == 0
    center = np.zeros(m + n_levels - 1) if prior_mean is None else prior_mean
    precision = np.zeros(m + n_levels - 1) if prior_precision is None else prior_precision

    def objective(params: np.ndarray) -> tuple[float, np.ndarray]:
        beta, theta = params[:m], params[m:]
        steps = np.exp(theta[1:])
        kappa = theta[0] + np.r_[0.0, np.cumsum(steps)]
        eta = x @ beta + offset
        upper = np.where(at_top, np.inf, kappa[np.minimum(upper_index, n_levels - 2)] - eta)
        lower = np.where(at_bottom, -np.inf, kappa[np.maximum(lower_index, 0)] - eta)
        su, sl = expit(upper), expit(lower)
        p = np.maximum(su - sl, 1e-300)
        du, dl = su * (1 - su) / p, sl * (1 - sl) / p  # σ'(u)/p and σ'(l)/p; 0 at ±inf
        grad_kappa = -np.bincount(upper_index[~at_top], du[~at_top], n_levels - 1) + np.bincount(
            lower_index[~at_bottom], dl[~at_bottom], n_levels - 1
        )
        tail = np.cumsum(grad_kappa[::-1])[::-1]  # Σ_{j ≥ i} ∂/∂κ_j
        gap = params - center
        value = -np.log(p).sum() + 0.5 * (precision * gap) @ gap
        gradient = np.r_[x.T @ (du - dl), tail[0], steps * tail[1:]] + precision * gap
        return value, gradient

    if prior_mean is not None:
        start = prior_mean
    else:
        share = np.cumsum(np.bincount(y, minlength=n_levels))[:-1] / n
        kappa = np.log(share / (1 - share))
        start = np.r_[np.zeros(m), kappa[0], np.log(np.maximum(np.diff(kappa), 1e-3))]
    result = minimize(objective, start, jac=True, method="BFGS", options={"maxiter": 500})
    return result.x


def cumulative_logit_probabilities(
    x: np.ndarray, params: np.ndarray, offset: np.ndarray | None = None
) -> np.ndarray:
    """P(y = j | x) (n × J) under the parameters of :func:`fit_cumulative_logit`."""
    n, m = x.shape
    beta, theta = params[:m], params[m:]
    kappa = theta[0] + np.r_[0.0, np.cumsum(np.exp(theta[1:]))]
    eta = x @ beta + (0.0 if offset is None else offset)
    below = expit(kappa[None, :] - eta[:, None])
    return np.hstack([below, np.ones((n, 1))]) - np.hstack([np.zeros((n, 1)), below])


def fitted_features(
    col: Collection, gains: np.ndarray, scale: Scale, artist_group: np.ndarray | None
) -> np.ndarray:
    """Features of the refitted model; none uses the pair's own judgment (seed §4.2).

    * fSYS = c/S;
    * aSYS: mean over the systems retrieving d of each system's mean judged gain over the
      *other* queries, /M;
    * aDOC: mean judged gain of the other judged documents of d's query, /M;
    * aART: the same over the other judged documents of d's artist in d's query, /M, and an
      indicator that it exists (when it does not, aART = aDOC).

    An undefined mean takes the mean of all judgments (0.5·M when there is none).
    """
    m = MAX_GAIN[scale]
    judged = ~np.isnan(gains)
    g = np.where(judged, gains, 0.0) / m
    overall = g.sum() / judged.sum() if judged.any() else 0.5
    system, pair = col.retrievals
    q = col.query_of[pair]
    cells = system * col.n_queries + q
    size = col.n_systems * col.n_queries
    cell_sum = np.bincount(cells, g[pair], size).reshape(col.n_systems, col.n_queries)
    cell_n = np.bincount(cells, judged[pair], size).reshape(col.n_systems, col.n_queries)
    other_sum = cell_sum.sum(axis=1, keepdims=True) - cell_sum
    other_n = cell_n.sum(axis=1, keepdims=True) - cell_n
    loqo = np.divide(other_sum, other_n, out=np.full(other_sum.shape, overall), where=other_n > 0)
    asys = np.bincount(pair, loqo[system, q], col.n_pairs) / col.retrieved_by

    def leave_self_out(group: np.ndarray, fallback: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        total = np.bincount(group, g)[group] - g
        count = np.bincount(group, judged)[group] - judged
        mean = np.divide(total, count, out=fallback.astype(float).copy(), where=count > 0)
        return mean, count > 0

    adoc, _ = leave_self_out(col.query_of, np.full(col.n_pairs, overall))
    columns = [col.retrieved_by / col.n_systems, asys, adoc]
    if artist_group is not None:
        aart, has = leave_self_out(artist_group, adoc)
        columns += [aart, has.astype(float)]
    return np.column_stack(columns)


def gain_levels(gains: np.ndarray, scale: Scale) -> np.ndarray:
    """Ordinal level of each gain: Fine in ten bins [0,10), ..., [90,100]; Broad as is."""
    if scale == "broad":
        return np.round(gains).astype(int)
    return np.minimum(gains // 10, 9).astype(int)


def quality_direction(quality: np.ndarray) -> np.ndarray:
    """m: the systems' estimated AG@k standardised (zeros when all are equal)."""
    spread = quality.std()
    return (quality - quality.mean()) / spread if spread > 0 else np.zeros(quality.size)


def system_error_covariance(sigma: float, tau: float, quality: np.ndarray) -> np.ndarray:
    """Σ = σ² m mᵀ + τ² I, the covariance of per-system errors b = γ·m + u (S×S), with m the
    :func:`quality_direction`, γ ~ N(0, σ²) and u ~ N(0, τ² I): σ is the error shared by
    systems of similar quality (good systems retrieve better documents than predicted), τ
    what is proper to each system."""
    m = quality_direction(quality)
    return sigma**2 * np.outer(m, m) + tau**2 * np.eye(quality.size)


def fit_system_errors(
    z: np.ndarray,
    residual: np.ndarray,
    noise: np.ndarray,
    quality: np.ndarray,
    scale: Scale,
) -> tuple[float, float]:
    """σ and τ of :func:`system_error_covariance` from the residuals of judged pairs.

    Model: r_d = z_d·b + ε_d, ε_d ~ N(0, V_d), z_d = X_{·d}/c_d (the mean over the systems
    retrieving d). σ and τ maximise the marginal likelihood r ~ N(0, z Σ zᵀ + V) over a grid,
    computed in S dimensions with A = zᵀV⁻¹z, h = zᵀV⁻¹r: log|I + ΣA| and
    rᵀV⁻¹r − hᵀ(I + ΣA)⁻¹Σh; (0, 0) unless some Σ explains the residuals better than none.
    """
    s = z.shape[1]
    w = 1.0 / np.maximum(noise, 1e-6 * MAX_GAIN[scale] ** 2)
    a = z.T @ (z * w[:, None])
    h = z.T @ (w * residual)
    m = quality_direction(quality)
    grid = np.r_[0.0, MAX_GAIN[scale] * np.geomspace(0.002, 0.2, 12)]
    sigma, tau = (g.ravel() for g in np.meshgrid(grid, grid, indexing="ij"))
    covs = sigma[:, None, None] ** 2 * np.outer(m, m) + tau[:, None, None] ** 2 * np.eye(s)
    inner = np.eye(s) + covs @ a
    sign, logdet = np.linalg.slogdet(inner)
    quad = np.einsum("i,gi->g", h, np.linalg.solve(inner, (covs @ h)[..., None])[..., 0])
    score = np.where(sign > 0, -0.5 * (logdet - quad), -np.inf)
    best = int(np.argmax(score))
    return (float(sigma[best]), float(tau[best])) if score[best] > 0 else (0.0, 0.0)


def query_folds(
    col: Collection, folds: int, seed: int = 0, groups: np.ndarray | None = None
) -> np.ndarray:
    """Fold (0..folds−1) of every pair by its query, queries dealt to folds in a seeded order.

    ``groups`` (one label per query) keeps queries with the same label in one fold (copies
    of a query in a bootstrap collection).
    """
    labels = np.arange(col.n_queries) if groups is None else pd.factorize(groups)[0]
    order = np.random.default_rng(seed).permutation(labels.max() + 1)
    return (np.argsort(order) % folds)[labels][col.query_of]


def fit_level_model(
    x: np.ndarray, gains: np.ndarray, scale: Scale, l2: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """A ridge cumulative logit on the observed levels of ``gains`` (:func:`gain_levels`).

    Returns the parameters of :func:`fit_cumulative_logit`, each observed level's value (the
    mean gain of its training rows) and spread (their variance); None with fewer than two
    levels observed.
    """
    present, y = np.unique(gain_levels(gains, scale), return_inverse=True)
    if present.size < 2:
        return None
    count = np.bincount(y)
    value = np.bincount(y, gains) / count
    spread = np.bincount(y, gains**2) / count - value**2
    precision = np.r_[np.full(x.shape[1], l2), np.zeros(present.size - 1)]
    params = fit_cumulative_logit(x, y, present.size, None, np.zeros_like(precision), precision)
    return params, value, spread


def level_moments(
    x: np.ndarray, params: np.ndarray, value: np.ndarray, spread: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """E and Var of the gain under a :func:`fit_level_model` model: a mixture of its levels."""
    p = cumulative_logit_probabilities(x, params)
    mean = p @ value
    return mean, np.maximum(p @ (value**2 + spread) - mean**2, 0.0)


class FittedEstimator(GainEstimator):
    """A cumulative-logit model refitted from the judgments so far, cross-fitted by query folds.

    Queries are split into ``folds`` folds; the gains of a fold's pairs are predicted by a
    model fitted only on the judgments of the other folds, whose features are computed without
    any judgment of that fold (so no judgment predicts itself and every prediction is for
    queries the model did not see), with the features of :func:`fitted_features` (centred on
    the training rows).

    With metadata (Fine scale) the model starts from L_output: its linear predictor is an
    offset, the ten Fine bins keep L_output's labels (5, 15, ..., 95, each with the spread of a
    uniform bin), and a Gaussian prior centres the thresholds on L_output's (κ = −α) and the
    new coefficients on 0, so that with few judgments it stays close to L_output and moves
    away as they accumulate (MAP). Without metadata it is a ridge fit on the observed levels,
    valued at their training means. Models are refitted when ``refit_every`` new judgments
    have arrived; until a fold has ``min_train`` training judgments the ``fallback`` estimator
    (L_output, or uniform without metadata) is used.
    """

    def __init__(
        self,
        col: Collection,
        scale: Scale = "fine",
        meta: PairMetadata | None = None,
        folds: int = 5,
        refit_every: int = 20,
        min_train: int = 20,
        l2: float = 1.0,
        threshold_precision: float = 4.0,
        seed: int = 0,
    ) -> None:
        self.col, self.scale, self.folds = col, scale, folds
        self.refit_every, self.min_train = refit_every, min_train
        self.l2, self.threshold_precision = l2, threshold_precision
        if meta is not None and scale == "fine":
            self.fallback: GainEstimator = OutputEstimator(col, meta, scale)
            self.offset: np.ndarray | None = output_features(col, meta) @ OUTPUT_BETA
        else:
            self.fallback, self.offset = UniformEstimator(col, scale), None
        self.artist_group = query_groups(col, meta.artist) if meta is not None else None
        self.fold = query_folds(col, folds, seed)
        self.models: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        self.fitted_at = -refit_every

    def _fit_fold(self, x: np.ndarray, gains: np.ndarray, offset: np.ndarray | None):
        m = x.shape[1]
        levels = gain_levels(gains, self.scale)
        if offset is not None:
            kappa = -OUTPUT_ALPHA
            theta = np.r_[kappa[0], np.log(np.diff(kappa))]
            params = fit_cumulative_logit(
                x,
                levels,
                len(FINE_LABELS),
                offset,
                np.r_[np.zeros(m), theta],
                np.r_[np.full(m, self.l2), np.full(theta.size, self.threshold_precision)],
            )
            return params, FINE_LABELS, np.full(len(FINE_LABELS), (10**2 - 1) / 12)
        return fit_level_model(x, gains, self.scale, self.l2)

    def _refit(self, gains: np.ndarray) -> None:
        """Fit one model per fold f on the judgments outside f, with features computed as if
        fold f had no judgment at all (so nothing of fold f reaches its model)."""
        judged = ~np.isnan(gains)
        self.models = {}
        for f in range(self.folds):
            train = judged & (self.fold != f)
            if train.sum() < self.min_train:
                continue
            masked = np.where(self.fold == f, np.nan, gains)
            x = fitted_features(self.col, masked, self.scale, self.artist_group)[train]
            shift = x.mean(axis=0)
            offset = None if self.offset is None else self.offset[train]
            fitted = self._fit_fold(x - shift, gains[train], offset)
            if fitted is not None:
                self.models[f] = (shift, *fitted)
        self.fitted_at = int(judged.sum())

    def predict(self, gains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mean, var = (a.copy() for a in self.fallback.predict(gains))
        if int((~np.isnan(gains)).sum()) >= self.fitted_at + self.refit_every:
            self._refit(gains)
        if not self.models:
            return mean, var
        features = fitted_features(self.col, gains, self.scale, self.artist_group)
        for f, (shift, params, value, spread) in self.models.items():
            rows = np.flatnonzero(self.fold == f)
            offset = None if self.offset is None else self.offset[rows]
            p = cumulative_logit_probabilities(features[rows] - shift, params, offset)
            mean[rows] = p @ value
            var[rows] = np.maximum(p @ (value**2 + spread) - mean[rows] ** 2, 0.0)
        return mean, var


class SystemEffects(GainEstimator):
    """Wrap an estimator with correlated per-system errors (MTC.md, "Honest variances").

    The residuals of the judged pairs against the wrapped estimator's predictions (which never
    use a pair's own judgment) give the covariance Σ of per-system errors b_s
    (:func:`fit_system_errors`); an unjudged pair's gain is off by mean_{s∋d} b_s, so Σ
    enters every variance of AG@k and of differences (:func:`pair_statistics`) and the errors
    of one system's documents are no longer taken as independent. The expectations are left
    as the wrapped estimator gives them: moving them by the posterior mean of b was tried and
    dropped, because with a few judgments per system that mean is noise (over query-bootstrap
    collections of MIREX 2011 it lowered the accuracy curve from 0.927 to 0.849 on average and
    to 0.09 in the worst case; ``benchmarks/mtc_vs_reference.py``).
    """

    def __init__(
        self, base: GainEstimator, col: Collection, scale: Scale, min_judged: int = 20
    ) -> None:
        self.base, self.col, self.scale, self.min_judged = base, col, scale, min_judged
        self.z = col.mean_over_systems.T

    def predict(self, gains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.base.predict(gains)

    def __call__(self, gains: np.ndarray) -> Estimates:
        mean, var = self.predict(gains)
        est = with_judgments(mean, var, gains)
        if est.judged.sum() < self.min_judged:
            return est
        quality = pair_statistics(self.col, est, self.scale).mean
        judged = est.judged
        sigma, tau = fit_system_errors(
            self.z[judged], gains[judged] - mean[judged], var[judged], quality, self.scale
        )
        return with_system_errors(self.col, est, sigma, tau, self.scale)


def with_system_errors(
    col: Collection, est: Estimates, sigma: float, tau: float, scale: Scale
) -> Estimates:
    """``est`` with the per-system error covariance Σ(σ, τ) of :func:`system_error_covariance`,
    its direction m from the systems' AG@k under ``est``."""
    quality = pair_statistics(col, est, scale).mean
    cov = system_error_covariance(sigma, tau, quality)
    return Estimates(est.mean, est.var, est.judged, cov)


# --------------------------------------------------------------------------- trained model

TRAINED_FEATURES = ("fSYS", "fART", "sGEN", "fGEN", "sGEN*fGEN", "sysPOP", "sysGEN")
GAIN_MODEL_FORMAT = "crowdprefs-mtc-gain-model"


def system_profiles(col: Collection, meta: PairMetadata) -> tuple[np.ndarray, np.ndarray]:
    """Two output-based numbers per system, from the runs alone (no judgment).

    Popularity: the mean fSYS = c/S of the pairs it retrieved (how far the other systems
    retrieve the same documents; systems agreeing with the crowd of systems tend to be the
    good ones). Genre rate: the share of its retrieved documents in the query's genre (seed
    §4.2.1: documents of the query's genre are usually judged similar).
    """
    retrieved = col.per_system(np.ones(col.n_pairs))
    same_genre = ((meta.genre == meta.query_genre) & (meta.genre >= 0)).astype(float)
    popularity = col.per_system(col.retrieved_by / col.n_systems) / retrieved
    return popularity, col.per_system(same_genre) / retrieved


def trained_features(
    col: Collection,
    meta: PairMetadata,
    profiles: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """θ of the trained model (:data:`TRAINED_FEATURES`), computed without judgments.

    L_output's document features (fSYS, fART, sGEN, fGEN, sGEN·fGEN; OV is left out, being
    constant within a collection) and the mean over the systems retrieving d of their
    :func:`system_profiles` (sysPOP, sysGEN): a document retrieved by popular systems with a
    high genre rate is likely more similar than its own features tell. ``profiles`` replaces
    the systems' profiles (to check that they carry signal, by permuting them).
    """
    output = output_features(col, meta)
    popularity, genre_rate = system_profiles(col, meta) if profiles is None else profiles
    return np.column_stack(
        [np.delete(output, [1, 2], axis=1), popularity @ col.mean_over_systems,
         genre_rate @ col.mean_over_systems]
    )  # fmt: skip


@dataclass(frozen=True, eq=False)
class GainModel:
    """A cumulative logit of the gain on :data:`TRAINED_FEATURES` (standardised by the
    training rows' ``center`` and ``spread``), with each level valued at its training mean
    gain (``values``, within-level variance ``value_spreads``), and the per-system error
    spread (σ, τ of :func:`system_error_covariance`) of its training residuals; all its
    variances are multiplied by ``variance_scale`` λ (:func:`pair_variance_scale`).

    Trained on a judged collection (seed §4.2.3 trains L_output on other MIREX editions) and
    used on another as a static prior, saved as JSON by :meth:`to_json`.
    """

    scale: Scale
    center: np.ndarray
    spread: np.ndarray
    params: np.ndarray  # (β, θ) of fit_cumulative_logit
    values: np.ndarray
    value_spreads: np.ndarray
    sigma: float
    tau: float
    variance_scale: float
    judgments: int

    def moments(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """E and Var of the gain of pairs with features ``x``."""
        standard = (x - self.center) / self.spread
        return level_moments(standard, self.params, self.values, self.value_spreads)

    def to_json(self) -> str:
        m = len(TRAINED_FEATURES)
        return json.dumps(
            {
                "format": GAIN_MODEL_FORMAT,
                "version": 1,
                "scale": self.scale,
                "features": list(TRAINED_FEATURES),
                "center": self.center.tolist(),
                "spread": self.spread.tolist(),
                "beta": self.params[:m].tolist(),
                "theta": self.params[m:].tolist(),
                "values": self.values.tolist(),
                "value_spreads": self.value_spreads.tolist(),
                "sigma": self.sigma,
                "tau": self.tau,
                "variance_scale": self.variance_scale,
                "judgments": self.judgments,
            },
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str, source: str = "model") -> GainModel:
        """Read :meth:`to_json`'s output; anything else is an :class:`InputError`."""
        try:
            data = json.loads(text)
            if data.get("format") != GAIN_MODEL_FORMAT or data.get("version") != 1:
                raise ValueError(f"format is not {GAIN_MODEL_FORMAT} version 1")
            if data["features"] != list(TRAINED_FEATURES):
                raise ValueError(f"features {data['features']} are not {list(TRAINED_FEATURES)}")
            if data["scale"] not in MAX_GAIN:
                raise ValueError(f"unknown scale {data['scale']!r}")
            arrays = {
                key: np.asarray(data[key], dtype=float)
                for key in ("center", "spread", "beta", "theta", "values", "value_spreads")
            }
            m, levels = len(TRAINED_FEATURES), arrays["values"].size
            shapes = {"center": m, "spread": m, "beta": m, "theta": levels - 1}
            shapes["value_spreads"] = levels
            for key, size in shapes.items():
                if arrays[key].shape != (size,):
                    raise ValueError(f"{key} has {arrays[key].size} values, expected {size}")
            sigma, tau = float(data["sigma"]), float(data["tau"])
            variance_scale = float(data["variance_scale"])
            numbers = np.r_[np.concatenate(list(arrays.values())), sigma, tau, variance_scale]
            if levels < 2 or not np.isfinite(numbers).all() or (arrays["spread"] <= 0).any():
                raise ValueError("non-finite numbers, fewer than two levels or a zero spread")
            if sigma < 0 or tau < 0 or variance_scale <= 0:
                raise ValueError("negative sigma or tau, or a variance scale not above 0")
            return cls(
                data["scale"],
                arrays["center"],
                arrays["spread"],
                np.r_[arrays["beta"], arrays["theta"]],
                arrays["values"],
                arrays["value_spreads"],
                sigma,
                tau,
                variance_scale,
                int(data["judgments"]),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as error:
            raise InputError(f"{source}: not a crowdprefs MTC gain model ({error})") from None


def _fit_gain_model(
    col: Collection, x: np.ndarray, gains: np.ndarray, scale: Scale, train: np.ndarray, l2: float
) -> GainModel:
    """The cumulative logit and σ, τ of :func:`train_gain_model`, with variance scale 1."""
    if train.sum() < 20:
        raise InputError(f"training a gain model needs 20 judged pairs or more, not {train.sum()}")
    center = x[train].mean(axis=0)
    spread = x[train].std(axis=0)
    spread[spread == 0] = 1.0
    fitted = fit_level_model((x[train] - center) / spread, gains[train], scale, l2)
    if fitted is None:
        raise InputError("training a gain model needs judgments on two gain levels or more")
    mean, var = level_moments((x - center) / spread, *fitted)
    z = col.mean_over_systems[:, train].T
    sigma, tau = fit_system_errors(
        z, gains[train] - mean[train], var[train], col.per_system(mean), scale
    )
    return GainModel(scale, center, spread, *fitted, sigma, tau, 1.0, int(train.sum()))


def pair_variance_scale(
    col: Collection,
    x: np.ndarray,
    gains: np.ndarray,
    scale: Scale,
    train: np.ndarray,
    l2: float = 1.0,
    folds: int = 5,
    groups: np.ndarray | None = None,
) -> float:
    """λ = max(1, mean over system pairs of z²_AB) on the training queries, where
    z_AB = (Δ_AB − E[Δ_AB]) / √Var[Δ_AB] and every training query is predicted by a model
    fitted on the other inner query folds (with its σ, τ): how much the variances of
    differences fall short out of sample (the model's own coefficients err per system)."""
    inner = query_folds(col, folds, seed=1, groups=groups)
    used = np.unique(inner[train])  # inner folds holding training queries
    smallest = min(int((train & (inner != f)).sum()) for f in used)
    if used.size < 2 or smallest < 20:
        raise InputError(
            f"training a gain model needs judgments in several queries, so that 20 or more lie "
            f"outside each of its {folds} inner query folds (found {smallest} outside one)"
        )
    models = [_fit_gain_model(col, x, gains, scale, train & (inner != f), l2) for f in used]
    fold = np.where(train, np.searchsorted(used, inner), 0)
    # pairs outside the training rows count as known, with gain 0 on both sides
    est = TrainedEstimator(col, x, models, fold)(np.where(train, np.nan, 0.0))
    stats = pair_statistics(col, est, scale)
    observed = col.per_system(np.where(train, gains, 0.0)) / (
        col.n_queries * col.k * MAX_GAIN[scale]
    )
    a, b = upper_pairs(col.n_systems)
    spread = stats.diff_var[a, b]
    error = observed[a] - observed[b] - stats.diff[a, b]
    z2 = error[spread > 0] ** 2 / spread[spread > 0]
    return max(float(z2.mean()), 1.0) if z2.size else 1.0


def train_gain_model(
    col: Collection,
    x: np.ndarray,
    gains: np.ndarray,
    scale: Scale,
    rows: np.ndarray | None = None,
    l2: float = 1.0,
    groups: np.ndarray | None = None,
) -> GainModel:
    """Fit a :class:`GainModel` on the judged pairs (of ``rows``, if given).

    The cumulative logit is a ridge fit (precision ``l2`` on the standardised coefficients,
    :func:`fit_level_model`); σ and τ come from its residuals on the training pairs by
    :func:`fit_system_errors`, the direction m from the systems' predicted AG@k; the variance
    scale λ from inner query folds (:func:`pair_variance_scale`; ``groups`` as in
    :func:`query_folds`).
    """
    train = ~np.isnan(gains) if rows is None else rows & ~np.isnan(gains)
    model = _fit_gain_model(col, x, gains, scale, train, l2)
    variance_scale = pair_variance_scale(col, x, gains, scale, train, l2, groups=groups)
    return replace(model, variance_scale=variance_scale)


class TrainedEstimator(GainEstimator):
    """Static gains from trained :class:`GainModel` s (pairs of fold f from ``models[f]``),
    with the models' per-system error covariance entering the variances (mean σ², τ² over the
    models) and the variances scaled by their λ (none of this when ``effects`` is false).
    Judgments replace the gains they judge."""

    def __init__(
        self,
        col: Collection,
        x: np.ndarray,
        models: list[GainModel],
        fold: np.ndarray | None = None,
        effects: bool = True,
    ) -> None:
        self.col, self.scale = col, models[0].scale
        fold = np.zeros(col.n_pairs, dtype=int) if fold is None else fold
        self.mean, self.var = np.empty(col.n_pairs), np.empty(col.n_pairs)
        for f, model in enumerate(models):
            rows = fold == f
            self.mean[rows], self.var[rows] = model.moments(x[rows])
            self.var[rows] *= model.variance_scale if effects else 1.0
        scaled = [(m.variance_scale * m.sigma**2, m.variance_scale * m.tau**2) for m in models]
        sigma2, tau2 = np.mean(scaled, axis=0) if effects else (0.0, 0.0)
        self.sigma, self.tau = float(np.sqrt(sigma2)), float(np.sqrt(tau2))

    def predict(self, gains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.mean, self.var

    def __call__(self, gains: np.ndarray) -> Estimates:
        est = with_judgments(self.mean, self.var, gains)
        if self.sigma == 0 and self.tau == 0:
            return est
        return with_system_errors(self.col, est, self.sigma, self.tau, self.scale)


def cross_fitted_estimator(
    col: Collection,
    x: np.ndarray,
    gains: np.ndarray,
    scale: Scale,
    folds: int = 5,
    seed: int = 0,
    groups: np.ndarray | None = None,
    effects: bool = True,
) -> TrainedEstimator:
    """A :class:`TrainedEstimator` cross-fitted by query folds (:func:`query_folds`): the
    pairs of fold f are predicted by a model trained on the judgments of the other folds
    only, so no query is predicted by a model that saw its judgments."""
    fold = query_folds(col, folds, seed, groups)
    models = [
        train_gain_model(col, x, gains, scale, fold != f, groups=groups) for f in range(folds)
    ]
    return TrainedEstimator(col, x, models, fold, effects)


# --------------------------------------------------------------------------- AG@k and confidence


@dataclass(frozen=True)
class PairStatistics:
    """Estimated AG@k of every system and of every difference, with variances (S, S×S)."""

    mean: np.ndarray  # E[AG_s]
    var: np.ndarray  # Var[AG_s]
    diff: np.ndarray  # E[Δ_AB] = E[AG_A] − E[AG_B]
    diff_var: np.ndarray  # Var[Δ_AB]

    def confidence(self, delta: float = 0.0) -> np.ndarray:
        """Confidence in the sign of each Δ_AB (seed §3.3): Φ(|E| / √Var).

        With a minimum effect δ, the probability that the estimated leader wins by more than
        δ: Φ((|E| − δ) / √Var). A zero variance gives 1 (or 0.5 for an exact tie with δ = 0).
        """
        sd = np.sqrt(self.diff_var)
        margin = np.abs(self.diff) - delta
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(sd > 0, margin / sd, np.sign(margin) * np.inf)
        z = np.where((sd == 0) & (margin == 0), 0.0, z)
        return norm.cdf(z)


def pair_statistics(col: Collection, est: Estimates, scale: Scale) -> PairStatistics:
    """E and Var of AG@k per system and per difference (seed §3.1–3.2, MTC.md).

    With n = QkM: E[AG_s] = (X E)_s / n; Var[Δ_AB] = Σ_{d∈A△B} V_d / n², computed as
    ((XV)_A + (XV)_B − 2 (X diag V Xᵀ)_AB) / n² since documents retrieved by both cancel.
    With per-system errors of covariance C, an unjudged d is off by mean_{s∋d} b_s in its
    gain, so Δ_AB gains the load a_AB = L_A − L_B with L = X diag(u/c) Xᵀ / n (u = unjudged)
    and the variance a_AB C a_ABᵀ.
    """
    n = col.n_queries * col.k * MAX_GAIN[scale]
    mean = col.per_system(est.mean) / n
    own = col.per_system(est.var)
    var = own / n**2
    diff_var = (own[:, None] + own[None, :] - 2 * col.gram(est.var)) / n**2
    if est.system_cov is not None:
        load = col.gram(~est.judged / col.retrieved_by) / n
        var = var + np.einsum("as,st,at->a", load, est.system_cov, load)
        gap = load[:, None, :] - load[None, :, :]
        diff_var = diff_var + np.einsum("abs,st,abt->ab", gap, est.system_cov, gap)
    return PairStatistics(mean, var, mean[:, None] - mean[None, :], np.maximum(diff_var, 0.0))


def upper_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (A, B), A < B, of the S(S−1)/2 system pairs."""
    return np.triu_indices(n, k=1)


def ranking_confidence(
    stats: PairStatistics, delta: float = 0.0, rule: Literal["mean", "min"] = "mean"
) -> float:
    """Confidence in the ranking (seed §3.4): mean (or, the seed's variant, minimum) over pairs."""
    a, b = upper_pairs(len(stats.mean))
    conf = stats.confidence(delta)[a, b]
    if conf.size == 0:
        return 1.0
    return float(conf.mean() if rule == "mean" else conf.min())


def system_table(col: Collection, stats: PairStatistics, level: float = 0.95) -> pd.DataFrame:
    """Systems ranked by E[AG@k] with a normal ``level`` interval (seed §3.3, §5.2)."""
    half = norm.ppf(0.5 + level / 2) * np.sqrt(stats.var)
    table = pd.DataFrame(
        {
            "system": col.systems,
            "ag": stats.mean,
            "sd": np.sqrt(stats.var),
            "low": stats.mean - half,
            "high": stats.mean + half,
        }
    )
    table = table.sort_values("ag", ascending=False, kind="stable").reset_index(drop=True)
    table.insert(0, "rank", np.arange(1, len(table) + 1))
    return table


def pair_table(col: Collection, stats: PairStatistics, delta: float = 0.0) -> pd.DataFrame:
    """Every system pair with E[Δ], its standard deviation, the estimated leader and confidence."""
    a, b = upper_pairs(col.n_systems)
    diff = stats.diff[a, b]
    lead = np.where(diff >= 0, a, b)
    trail = np.where(diff >= 0, b, a)
    return pd.DataFrame(
        {
            "better": col.systems[lead],
            "worse": col.systems[trail],
            "delta": np.abs(diff),
            "sd": np.sqrt(stats.diff_var[a, b]),
            "confidence": stats.confidence(delta)[a, b],
        }
    )


def sign_accuracy(stats: PairStatistics, truth: np.ndarray) -> tuple[float, float]:
    """Share of pairs whose estimated sign of Δ is the true one, and Kendall's τ_b.

    ``truth`` is each system's AG@k under all judgments; τ_b = Σ sign·sign / √(n₁ n₂) with
    n₁, n₂ the untied pairs of each ranking.
    """
    a, b = upper_pairs(len(truth))
    estimated, true = np.sign(stats.diff[a, b]), np.sign(truth[a] - truth[b])
    if not a.size:
        return 1.0, 1.0
    ties = np.sqrt(np.count_nonzero(estimated) * np.count_nonzero(true))
    tau = float((estimated * true).sum() / ties) if ties > 0 else float("nan")
    return float((estimated == true).mean()), tau


def calibration_table(
    confidence: np.ndarray,
    correct: np.ndarray,
    edges: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0),
) -> pd.DataFrame:
    """Accuracy against stated confidence in bins (the seed's "accuracy versus confidence" tables).

    Bins are [e_i, e_{i+1}); the last one is closed. Columns: bin, pairs, share, mean stated
    confidence, realised accuracy.
    """
    confidence, correct = np.asarray(confidence, float), np.asarray(correct, bool)
    index = np.clip(np.searchsorted(edges, confidence, side="right") - 1, 0, len(edges) - 2)
    frame = pd.DataFrame({"bin": index, "confidence": confidence, "correct": correct})
    grouped = frame.groupby("bin").agg(
        pairs=("correct", "size"), stated=("confidence", "mean"), accuracy=("correct", "mean")
    )
    grouped = grouped.reindex(range(len(edges) - 1))
    grouped["pairs"] = grouped["pairs"].fillna(0).astype(int)
    grouped.insert(
        0, "bin", [f"[{lo:.2f}, {hi:.2f})" for lo, hi in zip(edges[:-1], edges[1:], strict=True)]
    )
    grouped.insert(2, "share", grouped["pairs"] / max(len(frame), 1))
    return grouped.reset_index(drop=True)


# --------------------------------------------------------------------------- selection


def reference_weights(col: Collection) -> np.ndarray:
    """The reference tool's static weight c·(S − c): system pairs where exactly one retrieved d."""
    c = col.retrieved_by
    return c * (col.n_systems - c)


def adaptive_weights(
    col: Collection, est: Estimates, stats: PairStatistics, target: float = 0.95
) -> np.ndarray:
    """Variance- and undecided-pair-aware weight of every unjudged pair.

    w_d = Σ_{A<B, C_AB < target, d ∈ A△B} V_d / Var[Δ_AB]: the share of each still undecided
    pair's variance that judging d would remove (the seed's §3.4 variant that counts only
    pairs below the target). With binary X, Σ_{A<B} U_AB |X_Ad − X_Bd| = (U1)ᵀX_d − X_dᵀ U X_d.
    """
    conf = stats.confidence()
    with np.errstate(divide="ignore"):
        u = np.where((conf < target) & (stats.diff_var > 0), 1.0 / stats.diff_var, 0.0)
    np.fill_diagonal(u, 0.0)
    x = col.incidence
    spread = u.sum(axis=1) @ x - ((u @ x) * x).sum(axis=0)
    return np.where(est.judged, 0.0, spread * est.var)


def take_batch(
    col: Collection, weights: np.ndarray, judged: np.ndarray, batches: int, size: int
) -> np.ndarray:
    """The pairs to judge next, batched as the reference tool does (MTC.md, "Selecting").

    Per query, the unjudged pairs sorted by weight (descending; ties in first-appearance order)
    are cut into chunks of ``size``; chunks are ranked by summed weight (descending, stable:
    ties in query order) and the first ``batches`` chunks are taken. The pairs come back in
    that order (best chunk first).
    """
    open_ = np.flatnonzero(~judged)
    if open_.size == 0:
        return open_
    if size == 1:  # one pair per chunk: a stable global sort (pairs are in query order)
        return open_[np.argsort(-weights[open_], kind="stable")[:batches]]
    q = col.query_of[open_]
    w = weights[open_]
    order = np.lexsort((-w, q))  # by query, then weight descending; stable
    open_, q, w = open_[order], q[order], w[order]
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    within = np.arange(q.size) - np.repeat(starts, np.diff(np.r_[starts, q.size]))
    chunk = np.unique(q * (q.size + 1) + within // size, return_inverse=True)[1]
    ranked = np.argsort(-np.bincount(chunk, w), kind="stable")[:batches]
    rank = np.full(chunk.max() + 1, ranked.size)
    rank[ranked] = np.arange(ranked.size)
    taken = np.flatnonzero(rank[chunk] < ranked.size)
    return open_[taken[np.argsort(rank[chunk[taken]], kind="stable")]]


# --------------------------------------------------------------------------- simulation

Estimator = Callable[[np.ndarray], Estimates]
Selector = Callable[[Estimates, PairStatistics], np.ndarray]


@dataclass(frozen=True)
class Simulation:
    """Outcome of :func:`simulate`: per-iteration log, the order of judgments, final pairs."""

    log: pd.DataFrame  # iteration, judgments, confidence, min_confidence, accuracy, tau
    order: np.ndarray  # pair positions in the order they were judged
    pairs: pd.DataFrame  # final pair table with a ``correct`` column
    stopped: bool  # the target was reached
    confidences: np.ndarray  # iterations × system pairs (A < B): stated confidence
    correct: np.ndarray  # iterations × system pairs: estimated sign is the true one

    def first_reaching(self, target: float) -> int | None:
        """The first iteration whose confidence in the ranking reached ``target``."""
        hits = np.flatnonzero(self.log["confidence"].to_numpy() >= target)
        return int(hits[0]) if hits.size else None

    def calibration(self, iterations: slice | int = slice(None)) -> pd.DataFrame:
        """:func:`calibration_table` of the pairs at one iteration, or pooled over a slice."""
        return calibration_table(
            self.confidences[iterations].ravel(), self.correct[iterations].ravel()
        )

    def at(self, judgments: int) -> pd.Series:
        """The log row in force after ``judgments`` judgments (the last one not past it)."""
        rows = self.log[self.log["judgments"] <= judgments]
        return rows.iloc[-1]


def simulate(
    col: Collection,
    truth: np.ndarray,
    estimator: Estimator,
    selector: Selector,
    scale: Scale,
    target: float = 0.95,
    rule: Literal["mean", "min"] = "mean",
    delta: float = 0.0,
    max_judgments: int | None = None,
    stop_at_target: bool = True,
    initial: np.ndarray | None = None,
    progress: Callable[[int], None] | None = None,
) -> Simulation:
    """Run MTC against a complete oracle ``truth`` (gain of every pair; seed §5).

    Each iteration estimates all gains, logs the confidence in the ranking and the accuracy
    and τ against the ranking under all judgments, stops when the confidence reaches
    ``target`` (unless ``stop_at_target`` is false) or ``max_judgments`` is reached, and
    otherwise judges the pairs the selector returns. ``initial`` holds known gains (NaN =
    unjudged) to start from.
    """
    if np.isnan(truth).any():
        missing = col.pairs.iloc[int(np.flatnonzero(np.isnan(truth))[0])]
        raise InputError(
            f"judgments: the oracle lacks ({missing.query}, {missing.document}); "
            "simulation needs every retrieved pair judged"
        )
    full = pair_statistics(col, with_judgments(truth, truth, truth), scale).mean
    gains = np.full(col.n_pairs, np.nan) if initial is None else initial.copy()
    limit = col.n_pairs if max_judgments is None else max_judgments
    order: list[np.ndarray] = []
    records, confidences, correct = [], [], []
    a, b = upper_pairs(col.n_systems)
    reached = False
    for iteration in range(col.n_pairs + 1):
        est = estimator(gains)
        stats = pair_statistics(col, est, scale)
        pair_conf = stats.confidence(delta)[a, b]
        conf = float(pair_conf.mean() if rule == "mean" else pair_conf.min())
        accuracy, tau = sign_accuracy(stats, full)
        done = int(est.judged.sum())
        confidences.append(pair_conf)
        correct.append(np.sign(stats.diff[a, b]) == np.sign(full[a] - full[b]))
        records.append((iteration, done, conf, float(pair_conf.min()), accuracy, tau))
        if progress is not None:
            progress(done)
        reached = reached or conf >= target
        if (reached and stop_at_target) or done >= limit or est.judged.all():
            break
        batch = selector(est, stats)[: limit - done]
        if batch.size == 0:
            break
        gains[batch] = truth[batch]
        order.append(batch)
    log = pd.DataFrame(
        records,
        columns=["iteration", "judgments", "confidence", "min_confidence", "accuracy", "tau"],
    )
    pairs = pair_table(col, stats, delta)
    pairs["correct"] = correct[-1]
    done_order = np.concatenate(order) if order else np.array([], dtype=int)
    return Simulation(
        log, done_order, pairs, reached, np.array(confidences), np.array(correct, dtype=bool)
    )


# --------------------------------------------------------------------------- front end

ESTIMATORS = ("uniform", "output", "judge", "fitted", "trained")
SELECTIONS = ("reference", "adaptive")


def read_metadata(path: str | Path) -> pd.DataFrame:
    """Read ``document artist genre`` lines (whitespace-separated) as a DataFrame."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{path}: no such file")
    frame = pd.read_csv(
        path, sep=r"\s+", header=None, dtype=str, keep_default_na=False, engine="python"
    )
    if frame.shape[1] != 3:
        raise InputError(
            f"{path}: expected 3 fields (document artist genre), found {frame.shape[1]}"
        )
    frame.columns = ["document", "artist", "genre"]
    return frame


def make_estimator(
    name: str,
    col: Collection,
    scale: Scale = "fine",
    meta: PairMetadata | None = None,
    effects: bool = True,
    seed: int = 0,
    model: GainModel | None = None,
) -> GainEstimator:
    """The estimator ``name`` (one of :data:`ESTIMATORS`), wrapped in :class:`SystemEffects`
    when ``effects`` (per-system error covariance from the judgments so far); ``trained``
    applies ``model`` (with its own per-system error covariance when ``effects``)."""
    if name not in ESTIMATORS:
        raise InputError(f"unknown estimator {name!r}; choose one of {', '.join(ESTIMATORS)}")
    if name in ("output", "judge", "trained") and meta is None:
        raise InputError(f"estimator {name!r} needs --metadata (document artist genre)")
    if name == "trained":
        if model is None:
            raise InputError("estimator 'trained' needs --model (a file of `mtc train`)")
        if model.scale != scale:
            raise InputError(f"the model is for the {model.scale} scale, not {scale}")
        return TrainedEstimator(col, trained_features(col, meta), [model], effects=effects)
    if name == "uniform":
        base: GainEstimator = UniformEstimator(col, scale)
    elif name == "output":
        base = OutputEstimator(col, meta, scale)
    elif name == "judge":
        base = JudgeEstimator(col, meta, scale)
    else:
        base = FittedEstimator(col, scale, meta, seed=seed)
    return SystemEffects(base, col, scale) if effects else base


def make_selector(
    name: str, col: Collection, batches: int, size: int, target: float = 0.95
) -> Selector:
    """Selection ``name`` (:data:`SELECTIONS`): ``batches`` chunks of ``size`` pairs per call."""
    if name not in SELECTIONS:
        raise InputError(f"unknown selection {name!r}; choose one of {', '.join(SELECTIONS)}")
    if batches < 1 or size < 1:
        raise InputError(f"batches and batch size must be at least 1 (got {batches}, {size})")
    if name == "reference":
        weights = reference_weights(col)
        return lambda est, stats: take_batch(col, weights, est.judged, batches, size)
    return lambda est, stats: take_batch(
        col, adaptive_weights(col, est, stats, target), est.judged, batches, size
    )
