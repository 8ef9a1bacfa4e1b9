"""Agreement of the answers: with the verdicts, between the workers, with reference lists.

* :func:`answer_agreement`: the preference-judgments paper §5.3's points between two judgments;
* chance-corrected agreement over :func:`choice_counts` (:func:`krippendorff_alpha`,
  :func:`fleiss_kappa`), shown beside the paper's inter-agreement score (§5.3,
  :func:`crowdprefs.campaign.aggregate.inter_agreement`) in
  :func:`crowdprefs.quality.iterations.iteration_table`;
* :func:`reference_agreement`: the preference-judgments paper Tables 3–6, the less/equal/more
  confusion of aggregated verdicts and of single answers against reference lists (e.g. an expert
  ground truth).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from crowdprefs.campaign.aggregate import tally, usable
from crowdprefs.errors import InputError
from crowdprefs.quality.frames import CHOICES

OUTCOMES = {1: "less", 0: "equal", -1: "greater"}
"""The preference-judgments paper's labels of a preference in Tables 3–6, as ranks: x ranks ``less``
than (before) y when it is more similar (score +1), ``greater`` (after) when it is less similar."""


# --------------------------------------------------------------------------- verdicts


def answer_agreement(score, verdict) -> np.ndarray:
    """The preference-judgments paper §5.3's points between two judgments, divided by 2: 1 when they
    agree, ½ when one is "equal" and the other picks a side, 0 when they pick opposite sides."""
    score, verdict = np.asarray(score, dtype=float), np.asarray(verdict, dtype=float)
    return 1.0 - np.abs(score - verdict) / 2.0


# --------------------------------------------------------------------------- chance-corrected


def choice_counts(answers: pd.DataFrame) -> np.ndarray:
    """Units × categories: per pair, how many usable answers chose A, equal and B (as shown)."""
    good = usable(answers)
    return tally(good["pair_id"], good["choice"], CHOICES).to_numpy(dtype=np.float64)


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' κ over units × categories counts (units with fewer than two ratings ignored).

    κ = (P̄ − Pₑ)/(1 − Pₑ), with Pᵢ = (Σⱼ nᵢⱼ² − nᵢ)/(nᵢ(nᵢ − 1)) the agreement within unit i,
    P̄ their mean, pⱼ = Σᵢ nᵢⱼ / Σᵢ nᵢ and Pₑ = Σⱼ pⱼ². With the same number of ratings per
    unit this is Fleiss (1971), as ``statsmodels.stats.inter_rater.fleiss_kappa``; otherwise each
    unit's Pᵢ uses its own nᵢ. NaN when Pₑ = 1 (one category only). Integer counts stay
    64-bit integers (exact sums), and with as many ratings n in every unit
    P̄ = (Σᵢⱼ nᵢⱼ² − Σᵢ nᵢ)/(units·n(n − 1)) is one sum of squares.
    """
    counts = np.asarray(counts)
    counts = counts.astype(np.int64 if counts.dtype.kind in "iu" else np.float64, copy=False)
    if not counts.size:
        return float("nan")
    if len(counts) <= 64:
        n = counts.sum(axis=1)
    else:  # column by column: faster than a sum along the short axis
        n = counts[:, 0].copy()
        for column in counts.T[1:]:
            n += column
    low, high = n.min(), n.max()
    if low < 2:
        keep = n >= 2
        if not keep.any():
            return float("nan")
        counts, n = counts[keep], n[keep]
        low, high = n.min(), n.max()
    totals = counts.sum(axis=0, dtype=np.float64)
    total = totals.sum()
    p_j = totals / total
    expected = float(p_j @ p_j)
    if abs(expected - 1.0) <= 1e-8 + 1e-5:  # np.isclose(expected, 1): one category only
        return float("nan")
    if low == high:
        low = float(low)
        squares = float(
            np.vdot(counts, counts)
            if counts.size < 8192
            else np.einsum("ij,ij->", counts, counts)  # no BLAS threads
        )
        observed = (squares - total) / (len(n) * low * (low - 1.0))
    else:
        n = n.astype(np.float64)
        squares = np.einsum("ij,ij->i", counts, counts)
        observed = float(((squares - n) / (n * (n - 1))).mean())
    return (observed - expected) / (1.0 - expected)


def krippendorff_alpha(counts: np.ndarray, level: str = "ordinal") -> float:
    """Krippendorff's α from units × categories counts (categories in their natural order).

    The coincidence matrix is o = Σᵤ (nᵤnᵤᵀ − diag nᵤ)/(mᵤ − 1) over units with mᵤ ≥ 2 values;
    n_c = Σₖ o_ck and n = Σ n_c. α = 1 − (n − 1)·Σ o_ck δ²_ck / Σ n_c n_k δ²_ck with the
    ordinal metric δ²_ck = (Σ_{g=c..k} n_g − (n_c + n_k)/2)², the interval metric (c − k)², or
    the nominal one [c ≠ k] (Krippendorff, *Content Analysis*, 2004, §11.3). NaN when no
    disagreement is expected.
    """
    counts = np.asarray(counts, dtype=np.float64)
    m = counts.sum(axis=1)
    counts, m = counts[m >= 2], m[m >= 2]
    if not len(m):
        return float("nan")
    weighted = counts / (m - 1)[:, None]
    o = weighted.T @ counts - np.diag(weighted.sum(axis=0))
    n_c = o.sum(axis=1)
    k = len(n_c)
    c, g = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    if level == "ordinal":
        cumulative = np.concatenate([[0.0], np.cumsum(n_c)])
        low, high = np.minimum(c, g), np.maximum(c, g)
        delta = (cumulative[high + 1] - cumulative[low] - (n_c[c] + n_c[g]) / 2) ** 2
    elif level == "interval":
        delta = (c - g).astype(float) ** 2
    elif level == "nominal":
        delta = (c != g).astype(float)
    else:
        raise InputError(f"unknown level {level!r}: use ordinal, interval or nominal")
    expected = float((np.outer(n_c, n_c) * delta).sum())
    if expected == 0:
        return float("nan")
    return 1.0 - (n_c.sum() - 1) * float((o * delta).sum()) / expected


# --------------------------------------------------------------------------- reference lists


def reference_verdicts(pairs: pd.DataFrame, lists: pd.DataFrame) -> pd.Series:
    """The reference verdict of each pair from ordered lists ``query, document, group``:
    +1 when x's group is more similar (lower) than y's, 0 in the same group, −1 otherwise;
    NaN when the reference does not list both documents."""
    group = lists.set_index(["query", "document"])["group"]
    gx = pd.Series(pd.MultiIndex.from_arrays([pairs["query"], pairs["x"]]).map(group), pairs.index)
    gy = pd.Series(pd.MultiIndex.from_arrays([pairs["query"], pairs["y"]]).map(group), pairs.index)
    return np.sign(gy.astype(float) - gx.astype(float))


def confusion_table(reference, observed) -> pd.DataFrame:
    """The preference-judgments paper Tables 3–6: reference (rows) against workers (columns),
    ``less, equal, greater`` as ranks (:data:`OUTCOMES`: ``less`` = x more similar, ranked before
    y)."""
    frame = pd.DataFrame({"reference": reference, "observed": observed}).dropna()
    labels = list(OUTCOMES.values())
    table = tally(
        frame["reference"].astype(int).map(OUTCOMES).astype(object),
        frame["observed"].astype(int).map(OUTCOMES),
        labels,
    ).reindex(index=labels, fill_value=0)
    table.index.name, table.columns.name = "reference", "workers"
    return table


def agreement_summary(table: pd.DataFrame) -> dict:
    """Complete, partial and no agreement in a confusion table and the preference-judgments paper
    §5.3's score (2 points per complete, 1 per partial agreement, over 2 per judgment: 0.735 for
    Table 3)."""
    values = table.to_numpy(dtype=float)
    total = values.sum()
    complete = float(np.trace(values))
    none = float(values[0, 2] + values[2, 0])
    partial = total - complete - none
    return {
        "judgments": int(total),
        "complete": int(complete),
        "partial": int(partial),
        "none": int(none),
        "score": (2 * complete + partial) / (2 * total) if total else float("nan"),
    }


def reference_agreement(
    answers: pd.DataFrame,
    pairs: pd.DataFrame,
    lists: pd.DataFrame,
    by: pd.Series | None = None,
) -> dict[str, pd.DataFrame]:
    """Confusion tables against reference lists: ``aggregated`` (one verdict per pair, Table 3),
    ``answers`` (single answers) and, when ``by`` maps workers to an attribute (e.g. the
    background class), ``answers: <value>`` for each value (Tables 4–6)."""
    sort_pairs = pairs[pairs["kind"] == "sort"]
    tables = {
        "aggregated": confusion_table(reference_verdicts(sort_pairs, lists), sort_pairs["verdict"])
    }
    good = usable(answers)
    good = good[good["kind"] == "sort"]
    reference = reference_verdicts(good, lists)
    tables["answers"] = confusion_table(reference, good["score"])
    if by is not None:
        attribute = good["worker_id"].map(by).fillna("unknown")
        for value in sorted(attribute.unique()):
            chosen = attribute == value
            tables[f"answers: {value}"] = confusion_table(reference[chosen], good["score"][chosen])
    return tables
