"""A gain model trained on a judged collection and applied to another (as the seed trains
L_output on other MIREX editions, §4.2.3): a cumulative logit on output-based document features
and system profiles that need no judgment, its per-system error spread and variance scale,
saved as JSON."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace

import numpy as np

from crowdprefs.errors import InputError
from crowdprefs.evaluation.mtc.collection import (
    MAX_GAIN,
    Collection,
    PairMetadata,
    Scale,
    query_folds,
)
from crowdprefs.evaluation.mtc.effects import fit_system_errors, with_system_errors
from crowdprefs.evaluation.mtc.estimators import GainEstimator, output_features
from crowdprefs.evaluation.mtc.ordinal import fit_level_model, level_moments
from crowdprefs.evaluation.mtc.statistics import (
    Estimates,
    pair_statistics,
    upper_pairs,
    with_judgments,
)

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
