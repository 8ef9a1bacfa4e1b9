"""Gain estimators (the MTC paper §4): uniform, L_output and L_judge with the reference
coefficients, and a cumulative logit refitted from the judgments at hand, cross-fitted by query
folds.

An estimator's ``predict`` gives E and Var of every pair's gain (judged pairs predicted
without their own judgment); calling it gives the :class:`Estimates` in which judged pairs
take their gain (E = gain, V = 0).
"""

from __future__ import annotations

import numpy as np

from crowdprefs.errors import InputError
from crowdprefs.evaluation.mtc.collection import (
    MAX_GAIN,
    Collection,
    PairMetadata,
    Scale,
    query_folds,
    query_groups,
)
from crowdprefs.evaluation.mtc.ordinal import (
    cumulative_logit_probabilities,
    fit_cumulative_logit,
    fit_level_model,
    gain_levels,
    ordinal_moments,
)
from crowdprefs.evaluation.mtc.statistics import Estimates, with_judgments

# L_output and L_judge of the MTC paper (§4.2.3), as shipped with the reference tool (MTC.md):
# P(G ≥ L_{l+1} | θ) = logistic(α_l + β·θ), l = 1..9, on the Fine labels L = (5, 15, ..., 95).
# L_output and L_judge of the MTC paper (§4.2.3), as shipped with the reference tool (MTC.md):
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


def uniform_moments(scale: Scale) -> tuple[float, float]:
    """Expectation and variance of a gain uniform over the scale's levels (the MTC paper §4.1).

    Fine (0..100): E = 50, V = (101² − 1)/12 = 850; Broad (0, 1, 2): E = 1, V = 2/3.
    """
    n = int(MAX_GAIN[scale]) + 1
    return MAX_GAIN[scale] / 2, (n * n - 1) / 12


class GainEstimator:
    """Base of the gain estimators: ``predict`` gives E and Var of every pair's gain, judged
    pairs included but predicted without their own judgment; calling the estimator gives the
    :class:`Estimates` in which judged pairs take their gain."""

    def predict(self, gains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def __call__(self, gains: np.ndarray) -> Estimates:
        return with_judgments(*self.predict(gains), gains)


class UniformEstimator(GainEstimator):
    """Every unjudged pair uniform over the scale's levels (the MTC paper §4.1)."""

    def __init__(self, col: Collection, scale: Scale = "fine") -> None:
        e, v = uniform_moments(scale)
        self.mean, self.var = np.full(col.n_pairs, e), np.full(col.n_pairs, v)

    def predict(self, gains: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return self.mean, self.var


def _share_in_pool(col: Collection, codes: np.ndarray) -> np.ndarray:
    """Share of the documents with known metadata in the pair's query pool P_q that have the
    same code (0 for an unknown code, −1); the reference tool's denominator (MTC.md)."""
    group = query_groups(col, codes)
    pool = np.bincount(col.query_of, codes >= 0)[col.query_of]
    share = np.divide(np.bincount(group)[group], pool, out=np.zeros(col.n_pairs), where=pool > 0)
    return np.where(codes >= 0, share, 0.0)


def output_features(col: Collection, meta: PairMetadata) -> np.ndarray:
    """θ of L_output (the MTC paper §4.2.1, MTC.md): (fSYS, OV, fSYS·OV, fART, sGEN, fGEN,
    sGEN·fGEN).

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
        raise InputError(f"{model} has coefficients for the Fine scale only")


class OutputEstimator(GainEstimator):
    """L_output (the MTC paper §4.2.3) with the reference's coefficients; uniform where metadata
    lacks.

    It uses no judgment, so its estimates are computed once (the MTC paper §5.2: ranking without
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
    """θ of L_judge (the MTC paper §4.2.2, MTC.md): (fSYS, aSYS, aART) and where it is defined.

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
    """L_judge (the MTC paper §4.2.3) where its features are defined, L_output elsewhere
    (MTC.md)."""

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


def fitted_features(
    col: Collection, gains: np.ndarray, scale: Scale, artist_group: np.ndarray | None
) -> np.ndarray:
    """Features of the refitted model; none uses the pair's own judgment (the MTC paper §4.2).

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
