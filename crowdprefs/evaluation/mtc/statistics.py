"""AG@k of systems and of their differences as random variables, the confidence in their
signs and in the ranking, and how estimates are scored against the truth.

The MTC paper (Urbano & Schedl), equations restated in ``shared/MTC.md``.
With n = QkM (Q queries, k documents per run, maximum gain M):

* AG@k of system s (§3.1): E[AG_s] = Σ_{d∈D(s)} E_d / n, Var = Σ V_d / n².
* Difference of A and B (§3.2): E[Δ] = (Σ_{D(A)} E_d − Σ_{D(B)} E_d)/n,
  Var[Δ] = Σ_{d ∈ D(A) △ D(B)} V_d / n²; confidence in its sign (§3.3) Φ(|E|/√Var), or
  P(Δ > δ) resp. P(Δ < −δ) for a minimum effect δ.
* Confidence in the ranking (§3.4): the mean of the pair confidences (or their minimum).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy.stats import norm

from crowdprefs.evaluation.mtc.collection import MAX_GAIN, Collection, Scale


@dataclass(frozen=True)
class Estimates:
    """Gain estimates of every pair: expectation, variance, and which pairs are judged.

    ``system_cov`` (S×S, optional) is the covariance of per-system errors b_s, by which an
    unjudged pair's gain is off by mean_{s retrieving d} b_s; it makes the errors of a
    system's documents correlated (MTC.md, "Why confidence 0.95 comes with accuracy 0.90").
    ``learning`` says that ``system_cov`` is a posterior that each further judgment narrows
    (the judged gain tells about the errors of the systems that retrieved it), which the
    adaptive selection counts. ``query_var`` (η²) is the variance of an error q_j shared by
    the unjudged pairs of each query j, which cancels in a difference of two systems as far as
    both have the same number of unjudged pairs in the query.
    """

    mean: np.ndarray
    var: np.ndarray
    judged: np.ndarray
    system_cov: np.ndarray | None = None
    learning: bool = False
    query_var: float = 0.0


def with_judgments(mean: np.ndarray, var: np.ndarray, gains: np.ndarray) -> Estimates:
    """Estimates where judged pairs take their gain and variance 0."""
    judged = ~np.isnan(gains)
    return Estimates(np.where(judged, gains, mean), np.where(judged, 0.0, var), judged)


@dataclass(frozen=True)
class PairStatistics:
    """Estimated AG@k of every system and of every difference, with variances (S, S×S)."""

    mean: np.ndarray  # E[AG_s]
    var: np.ndarray  # Var[AG_s]
    diff: np.ndarray  # E[Δ_AB] = E[AG_A] − E[AG_B]
    diff_var: np.ndarray  # Var[Δ_AB]

    def confidence(self, delta: float = 0.0) -> np.ndarray:
        """Confidence in the sign of each Δ_AB (the MTC paper §3.3): Φ(|E| / √Var).

        With a minimum effect δ, the probability that the estimated leader wins by more than
        δ: Φ((|E| − δ) / √Var). A zero variance gives 1 (or 0.5 for an exact tie with δ = 0).
        """
        sd = np.sqrt(self.diff_var)
        margin = np.abs(self.diff) - delta
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(sd > 0, margin / sd, np.sign(margin) * np.inf)
        z = np.where((sd == 0) & (margin == 0), 0.0, z)
        return norm.cdf(z)


def unjudged_counts(col: Collection, judged: np.ndarray) -> np.ndarray:
    """U (S × Q): the number of unjudged pairs of each system in each query."""
    system, pair = col.retrievals
    cell = system * col.n_queries + col.query_of[pair]
    counts = np.bincount(cell, ~judged[pair], col.n_systems * col.n_queries)
    return counts.reshape(col.n_systems, col.n_queries)


def pair_statistics(col: Collection, est: Estimates, scale: Scale) -> PairStatistics:
    """E and Var of AG@k per system and per difference (the MTC paper §3.1–3.2, MTC.md).

    With n = QkM: E[AG_s] = (X E)_s / n; Var[Δ_AB] = Σ_{d∈A△B} V_d / n², computed as
    ((XV)_A + (XV)_B − 2 (X diag V Xᵀ)_AB) / n² since documents retrieved by both cancel.
    With per-system errors of covariance C, an unjudged d is off by mean_{s∋d} b_s in its
    gain, so Δ_AB gains the load a_AB = L_A − L_B with L = X diag(u/c) Xᵀ / n (u = unjudged)
    and the variance a_AB C a_ABᵀ. With a query error of variance η² shared by the unjudged
    pairs of each query, AG_s gains η² Σ_j U_sj² / n² and Δ_AB gains η² Σ_j (U_Aj − U_Bj)² / n²,
    U_sj the number of unjudged pairs of system s in query j (zero while nothing is judged:
    every system then has all k of each query).
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
    if est.query_var > 0:
        counts = unjudged_counts(col, est.judged)
        shared = counts @ counts.T  # Σ_j U_Aj U_Bj
        own_q = np.diag(shared)
        var = var + est.query_var * own_q / n**2
        diff_var = diff_var + est.query_var * (own_q[:, None] + own_q[None, :] - 2 * shared) / n**2
    return PairStatistics(mean, var, mean[:, None] - mean[None, :], np.maximum(diff_var, 0.0))


def upper_pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices (A, B), A < B, of the S(S−1)/2 system pairs."""
    return np.triu_indices(n, k=1)


def ranking_confidence(
    stats: PairStatistics, delta: float = 0.0, rule: Literal["mean", "min"] = "mean"
) -> float:
    """Confidence in the ranking (the MTC paper §3.4): mean (or, the MTC paper's variant, minimum)
    over pairs."""
    a, b = upper_pairs(len(stats.mean))
    conf = stats.confidence(delta)[a, b]
    if conf.size == 0:
        return 1.0
    return float(conf.mean() if rule == "mean" else conf.min())


def system_table(col: Collection, stats: PairStatistics, level: float = 0.95) -> pd.DataFrame:
    """Systems ranked by E[AG@k] with a normal ``level`` interval (the MTC paper §3.3, §5.2)."""
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


def sign_agreement(estimated: np.ndarray, true: np.ndarray) -> np.ndarray:
    """Per pair, how right the estimated sign of a difference is: 1 when it is the true sign,
    0 when it is the opposite, ½ when exactly one of the two is a tie (a coin toss would
    order the pair right half of the time)."""
    estimated, true = np.sign(estimated), np.sign(true)
    return np.where(estimated == true, 1.0, np.where(estimated * true == 0, 0.5, 0.0))


def sign_accuracy(stats: PairStatistics, truth: np.ndarray) -> tuple[float, float]:
    """Mean :func:`sign_agreement` over the pairs (ties count ½), and Kendall's τ_b.

    ``truth`` is each system's AG@k under all judgments; τ_b = Σ sign·sign / √(n₁ n₂) with
    n₁, n₂ the untied pairs of each ranking.
    """
    a, b = upper_pairs(len(truth))
    if not a.size:
        return 1.0, 1.0
    estimated, true = np.sign(stats.diff[a, b]), np.sign(truth[a] - truth[b])
    ties = np.sqrt(np.count_nonzero(estimated) * np.count_nonzero(true))
    tau = float((estimated * true).sum() / ties) if ties > 0 else float("nan")
    return float(sign_agreement(estimated, true).mean()), tau


def calibration_table(
    confidence: np.ndarray,
    correct: np.ndarray,
    edges: tuple[float, ...] = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0),
) -> pd.DataFrame:
    """Accuracy against stated confidence in bins (the MTC paper's "accuracy versus confidence"
    tables).

    Bins are [e_i, e_{i+1}); the last one is closed. Columns: bin, pairs, share, mean stated
    confidence, realised accuracy.
    """
    confidence, correct = np.asarray(confidence, float), np.asarray(correct, float)
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
