"""Generalised adaptive-weight means (GAWM) and HITS over a system×topic score matrix.

The calibration-model paper (Kazai et al.). For m systems and n topics (queries) with
scores ``P[i, j]`` in [0, 1] (higher = better):

* system performance ``E_s[i] = M_s(P[i, *], W_t)`` (eq. 1) and topic ease
  ``E_t[j] = M_t(P[*, j], W_s)`` (eq. 2), with a generalised weighted mean ``M`` (§4.3: min,
  harmonic, geometric, arithmetic, max) and weights normalised to sum to 1;
* adaptive weights (§3.3, §4.1): axioms **A1/A2** – topic discernment
  ``W_t[j] = ‖P[*, j] − E_t[j]‖`` (eq. 7) and system conformity
  ``W_s[i] = 1 − ‖P[i, *] − E_t‖`` (eq. 8); axioms **B1/B2** – the same ``W_t`` and system
  discernment ``W_s[i] = ‖P[i, *] − E_s[i]‖`` (eq. 9); or ``"uniform"`` weights (MAP/AAP);
* the fixed point is found by the calibration-model paper's iteration (§3.2: W_s, W_t, then E_s,
  E_t) from the
  uniform means, until no quantity moves by more than ``tol`` or ``max_iter`` is reached.

``‖·‖`` is the root-mean-square distance (Euclidean distance / √count): eqs. 7 and 9 are
unchanged by it once the weights are normalised, and it keeps eq. 8 within [0, 1] for scores
in [0, 1] (the plain Euclidean distance over 50 topics exceeds 1, making weights negative).

Also: :func:`hits` (Mizzaro & Robertson's hubs and authorities, §2.2, §4.2), :func:`p_better`
(the Gaussian probability that one system beats another, §4.4), :func:`correlations` (the
seed's Tables 2–3) and :func:`leave_one_topic_out` (§4.5.1). All core functions take stacks
``(..., systems, topics)`` so that the leave-one-out matrices are solved at once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from crowdprefs.errors import InputError
from crowdprefs.evaluation.stats import validate_scores

MEANS = ("min", "harmonic", "geometric", "arithmetic", "max")
AXIOMS = ("A", "B", "uniform")


def weighted_mean(x: np.ndarray, w: np.ndarray, kind: str, axis: int = -1) -> np.ndarray:
    """The generalised weighted means of the calibration-model paper §4.3, along ``axis``, weights
    summing to 1.

    min: ``min x_i``; harmonic: ``1 / Σ w_i/x_i``; geometric: ``Π x_i^{w_i}``; arithmetic:
    ``Σ w_i x_i``; max: ``max x_i``. A zero score with a positive weight makes the harmonic
    and geometric means 0.
    """
    if kind not in MEANS:
        raise InputError(f"unknown mean {kind!r}; choose one of {', '.join(MEANS)}")
    w = w / w.sum(axis=axis, keepdims=True)
    if kind == "min":
        return x.min(axis=axis)
    if kind == "max":
        return x.max(axis=axis)
    if kind == "arithmetic":
        return (w * x).sum(axis=axis)
    positive = w > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        if kind == "geometric":
            return np.exp(np.where(positive, w * np.log(x), 0.0).sum(axis=axis))
        inverse = np.where(positive, w / x, 0.0).sum(axis=axis)
    return np.where(np.isinf(inverse), 0.0, 1.0 / inverse)


def _rms(deviation: np.ndarray, axis: int) -> np.ndarray:
    return np.sqrt((deviation**2).mean(axis=axis))


def _normalised(w: np.ndarray) -> np.ndarray:
    total = w.sum(axis=-1, keepdims=True)
    return np.where(total > 0, w / np.where(total > 0, total, 1.0), 1.0 / w.shape[-1])


@dataclass(frozen=True)
class GAWMArrays:
    """Raw GAWM result of a stack: ``E_s, W_s (..., m)``, ``E_t, W_t (..., n)``."""

    system_score: np.ndarray
    topic_ease: np.ndarray
    system_weight: np.ndarray
    topic_weight: np.ndarray
    iterations: int
    converged: np.ndarray


def gawm_arrays(
    values: np.ndarray,
    axioms: str = "A",
    system_mean: str = "arithmetic",
    topic_mean: str = "arithmetic",
    tol: float = 1e-9,
    max_iter: int = 1000,
) -> GAWMArrays:
    """Solve GAWM for a stack of score matrices ``(..., systems, topics)`` (see module doc).

    Weights are returned normalised to sum to 1 (a weight vector that sums to 0 becomes
    uniform).
    """
    if axioms not in AXIOMS:
        raise InputError(f"unknown axioms {axioms!r}; choose one of {', '.join(AXIOMS)}")
    for kind in (system_mean, topic_mean):
        if kind not in MEANS:
            raise InputError(f"unknown mean {kind!r}; choose one of {', '.join(MEANS)}")
    values = np.asarray(values, dtype=float)
    m, n = values.shape[-2:]
    w_s = np.full(values.shape[:-1], 1.0 / m)
    w_t = np.full(values.shape[:-2] + (n,), 1.0 / n)
    e_s = weighted_mean(values, w_t[..., None, :], system_mean, axis=-1)
    e_t = weighted_mean(values, w_s[..., :, None], topic_mean, axis=-2)
    converged = np.zeros(values.shape[:-2], dtype=bool)
    iterations = 0
    if axioms == "uniform":
        return GAWMArrays(e_s, e_t, w_s, w_t, 0, ~converged)
    while iterations < max_iter and not converged.all():
        iterations += 1
        if axioms == "A":  # eq. 8: conformity of the system to the topic ease vector
            new_w_s = 1.0 - _rms(values - e_t[..., None, :], axis=-1)
        else:  # eq. 9: discernment of the system around its own performance
            new_w_s = _rms(values - e_s[..., :, None], axis=-1)
        new_w_t = _rms(values - e_t[..., None, :], axis=-2)  # eq. 7: topic discernment
        new_w_s, new_w_t = _normalised(np.maximum(new_w_s, 0.0)), _normalised(new_w_t)
        new_e_s = weighted_mean(values, new_w_t[..., None, :], system_mean, axis=-1)
        new_e_t = weighted_mean(values, new_w_s[..., :, None], topic_mean, axis=-2)
        change = np.max(
            [
                np.abs(new - old).max(axis=-1)
                for new, old in ((new_w_s, w_s), (new_w_t, w_t), (new_e_s, e_s), (new_e_t, e_t))
            ],
            axis=0,
        )
        w_s, w_t, e_s, e_t = new_w_s, new_w_t, new_e_s, new_e_t
        converged = change <= tol
    return GAWMArrays(e_s, e_t, w_s, w_t, iterations, converged)


@dataclass(frozen=True)
class GAWMResult:
    """GAWM of one matrix: per-system and per-topic tables, and the iteration outcome."""

    systems: pd.DataFrame  # columns: score (E_s), weight (W_s), mean (MAP-like)
    topics: pd.DataFrame  # columns: ease (E_t), weight (W_t), mean (AAP-like)
    iterations: int
    converged: bool


def validate_unit_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """:func:`crowdprefs.evaluation.stats.validate_scores` plus the [0, 1] range GAWM needs."""
    values = validate_scores(scores)
    low, high = values.to_numpy().min(), values.to_numpy().max()
    if low < 0 or high > 1:
        raise InputError(
            f"GAWM needs scores in [0, 1], found {low:g}…{high:g}: rescale them first "
            "(e.g. divide AG on the 0–100 Fine scale by 100)"
        )
    return values


def gawm(
    scores: pd.DataFrame,
    axioms: str = "A",
    system_mean: str = "arithmetic",
    topic_mean: str = "arithmetic",
    tol: float = 1e-9,
    max_iter: int = 1000,
) -> GAWMResult:
    """GAWM system performance and topic ease of a system×topic matrix (the calibration-model paper,
    §3–4).

    ``systems`` (index = system) has ``score`` (E_s), ``weight`` (W_s) and ``mean`` (the plain
    mean, MAP-like); ``topics`` has ``ease`` (E_t), ``weight`` (W_t) and ``mean`` (AAP-like).
    """
    values = validate_unit_scores(scores)
    result = gawm_arrays(values.to_numpy(), axioms, system_mean, topic_mean, tol, max_iter)
    matrix = values.to_numpy()
    systems = pd.DataFrame(
        {"score": result.system_score, "weight": result.system_weight, "mean": matrix.mean(1)},
        index=values.index,
    )
    topics = pd.DataFrame(
        {"ease": result.topic_ease, "weight": result.topic_weight, "mean": matrix.mean(0)},
        index=values.columns,
    )
    return GAWMResult(systems, topics, result.iterations, bool(result.converged))


def _leading_pair(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u, _, vt = np.linalg.svd(matrix, full_matrices=False)
    return u[:, 0], vt[0]


def hits(scores: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Hubs and authorities of the system–topic graph (Mizzaro & Robertson; the calibration-model
    paper §2.2, §4.2).

    Nodes are the systems and the topics, with the mean-centring the seed applies: an edge
    system→topic weighs ``P[i, j] − MAP[i]`` (how much easier than the system's average the
    topic is) and an edge topic→system ``P[i, j] − AAP[j]`` (how much better than the average
    system it does on the topic). HITS, ``h = N a`` and ``a = Nᵀ h`` over that bipartite
    adjacency ``N``, splits into two chains: system hubs with topic authorities (the leading
    singular pair of ``P − MAP``) and topic hubs with system authorities (that of
    ``(P − AAP)ᵀ``). Vectors have unit length and are signed so that the authorities
    correlate positively with MAP resp. AAP. Returns ``(systems, topics)`` with ``hub,
    authority``.
    """
    values = validate_scores(scores)
    matrix = values.to_numpy()
    system_mean, topic_mean = matrix.mean(axis=1), matrix.mean(axis=0)
    system_hub, topic_authority = _leading_pair(matrix - system_mean[:, None])
    topic_hub, system_authority = _leading_pair((matrix - topic_mean[None, :]).T)
    if np.dot(topic_authority, topic_mean - topic_mean.mean()) < 0:
        system_hub, topic_authority = -system_hub, -topic_authority
    if np.dot(system_authority, system_mean - system_mean.mean()) < 0:
        topic_hub, system_authority = -topic_hub, -system_authority
    return (
        pd.DataFrame({"hub": system_hub, "authority": system_authority}, index=values.index),
        pd.DataFrame({"hub": topic_hub, "authority": topic_authority}, index=values.columns),
    )


def p_better(scores: pd.DataFrame, topic_weight: pd.Series | None = None) -> pd.DataFrame:
    """``p(S_i > S_j) = Φ((s̃_i − s̃_j) / √(ṽ_i + ṽ_j))`` for all system pairs (the
    calibration-model paper §4.4).

    Each system is a Gaussian with mean s̃ and variance ṽ of its per-topic scores, weighted by
    ``topic_weight`` (e.g. GAWM's W_t; uniform when omitted). Returns a system×system frame.
    """
    values = validate_scores(scores)
    matrix = values.to_numpy()
    if topic_weight is None:
        w = np.full(matrix.shape[1], 1.0 / matrix.shape[1])
    else:
        w = _normalised(topic_weight.reindex(values.columns).to_numpy(dtype=float))
    mean = matrix @ w
    variance = ((matrix - mean[:, None]) ** 2) @ w
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (mean[:, None] - mean[None, :]) / np.sqrt(variance[:, None] + variance[None, :])
    probability = np.where(np.isnan(z), 0.5, sps.norm.cdf(z))
    return pd.DataFrame(probability, index=values.index, columns=values.index)


def correlations(scores: pd.DataFrame, result: GAWMResult) -> pd.Series:
    """Pearson correlations of GAWM and HITS with MAP and AAP (the calibration-model paper, Tables
    2–3)."""
    systems, topics = hits(scores)
    pearson = {
        "MAP~E_s": (result.systems["mean"], result.systems.score),
        "MAP~A(s)": (result.systems["mean"], systems.authority),
        "AAP~E_t": (result.topics["mean"], result.topics.ease),
        "AAP~A(t)": (result.topics["mean"], topics.authority),
        "MAP~W_s": (result.systems["mean"], result.systems.weight),
        "AAP~W_t": (result.topics["mean"], result.topics.weight),
    }
    return pd.Series({name: _pearson(x, y) for name, (x, y) in pearson.items()})


def _pearson(x: pd.Series, y: pd.Series) -> float:
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.std() == 0 or y.std() == 0:
        return float("nan")
    return float(np.corrcoef(x, y)[0, 1])


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's τ-b between ``x`` and ``y`` along the last axis, vectorised (as
    :func:`scipy.stats.kendalltau`): ``(C − D) / √((n0 − n1)(n0 − n2))``; NaN when either
    side is constant."""
    i, j = np.triu_indices(x.shape[-1], k=1)
    sx, sy = np.sign(x[..., i] - x[..., j]), np.sign(y[..., i] - y[..., j])
    with np.errstate(divide="ignore", invalid="ignore"):
        return (sx * sy).sum(axis=-1) / np.sqrt((sx != 0).sum(axis=-1) * (sy != 0).sum(axis=-1))


def leave_one_topic_out(
    scores: pd.DataFrame,
    axioms: str = "B",
    system_mean: str = "arithmetic",
    topic_mean: str = "arithmetic",
    tol: float = 1e-9,
    max_iter: int = 1000,
) -> pd.DataFrame:
    """Predictive check of the calibration-model paper §4.5.1: hold each topic out, rank the systems
    by MAP and by GAWM's E_s over the other n − 1 topics (all n matrices solved at once), and
    correlate each ranking (Kendall τ-b) with the ranking by the held-out topic alone.

    Returns one row per held-out topic: ``topic, tau_mean, tau_gawm`` (NaN when the held-out
    topic ties all systems).
    """
    values = validate_unit_scores(scores)
    matrix = values.to_numpy()
    n = matrix.shape[1]
    if n < 3:
        raise InputError("leave-one-topic-out needs at least 3 topics")
    keep = np.array([np.delete(np.arange(n), j) for j in range(n)])  # (n, n − 1)
    stack = matrix[:, keep].transpose(1, 0, 2)  # (n, systems, n − 1)
    result = gawm_arrays(stack, axioms, system_mean, topic_mean, tol, max_iter)
    held_out = matrix.T  # (n, systems)
    return pd.DataFrame(
        {
            "topic": values.columns,
            "tau_mean": kendall_tau_b(stack.mean(axis=-1), held_out),
            "tau_gawm": kendall_tau_b(result.system_score, held_out),
        }
    )
