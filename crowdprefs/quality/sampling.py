"""Which pairs to ask next: an active sampler under a fitted tie-aware Bradley–Terry model.

After a fit (:func:`crowdprefs.campaign.bradley_terry.fit_bradley_terry`) every pair ``(i, j)``
of a query has an estimated score difference ``d = s_i − s_j`` and a posterior variance ``v``
(Laplace approximation; here ``v ≈ se_i² + se_j²`` from the fit's standard errors). One answer
carries the Fisher information ``I(d) = Σ_o (η·∂p_o/∂d)² / (η·p_o + (1 − η)/3)`` about ``d``
(the model's outcomes mixed with a careless worker's coin, reliability ``η``), so ``m`` answers
leave the variance ``v / (1 + m·v·I)`` and the ``m``-th answer gains the information (in nats)

    ΔH_m = ½ · ln((1 + m·v·I) / (1 + (m − 1)·v·I)),

the Gaussian form of the expected information gain that Crowd-BT picks its pairs by (Chen,
Bennett, Collins-Thompson & Horvitz, *Pairwise ranking aggregation in a crowdsourced setting*,
WSDM 2013). The gains fall with ``m``, so handing a batch of answers out greedily by the largest
next gain is :func:`allocate_answers`: the batch's answers go to the largest ``ΔH_m`` of all
pairs and counts at once. Pairs sharing a candidate are treated as independent within a batch.
"""

from __future__ import annotations

import numpy as np

from crowdprefs.campaign.bradley_terry import TieModel, outcome_probabilities
from crowdprefs.errors import InputError


def within_block_pairs(block) -> tuple[np.ndarray, np.ndarray]:
    """Every unordered pair of items in the same block (``block[i]``: item i's query code), as
    two arrays of item indices, ``first < second`` in the block's order of items."""
    block = np.asarray(block)
    n = len(block)
    order = np.argsort(block, kind="stable")
    ends = np.searchsorted(block[order], block[order], side="right")
    later = ends - np.arange(n) - 1
    first = np.repeat(np.arange(n), later)
    start = np.repeat(np.cumsum(later) - later, later)
    second = first + 1 + np.arange(len(first)) - start
    return order[first], order[second]


def answer_information(
    difference, tie: float, ties: TieModel = "davidson", reliability: float = 1.0
) -> np.ndarray:
    """Fisher information of one answer about the score difference at ``difference`` (module
    docstring), the derivatives of :func:`outcome_probabilities` by central differences."""
    if not 0 < reliability <= 1:
        raise InputError(f"reliability must lie in (0, 1], got {reliability}")
    d = np.atleast_1d(np.asarray(difference, dtype=float))
    h = 1e-5
    slope = (outcome_probabilities(d + h, tie, ties) - outcome_probabilities(d - h, tie, ties)) / (
        2 * h
    )
    p = reliability * outcome_probabilities(d, tie, ties) + (1 - reliability) / 3
    return ((reliability * slope) ** 2 / np.maximum(p, 1e-300)).sum(axis=1)


def allocate_answers(variance, information, answers: int, most_per_pair: int = 10) -> np.ndarray:
    """How many of ``answers`` new answers each pair gets: the greedy maximiser of the summed
    expected information gain ``ΔH_m`` (module docstring), at most ``most_per_pair`` each; ties
    go to the earlier pair."""
    v = np.asarray(variance, dtype=float)
    info = np.asarray(information, dtype=float)
    if v.shape != info.shape or (v < 0).any() or (info < 0).any():
        raise InputError("variances and informations must be non-negative arrays of one shape")
    if answers < 0 or most_per_pair < 1:
        raise InputError("ask a non-negative number of answers, at least one per pair allowed")
    answers = min(answers, most_per_pair * len(v))
    m = np.arange(1, most_per_pair + 1)[None, :]
    vi = (v * info)[:, None]
    gain = 0.5 * (np.log1p(m * vi) - np.log1p((m - 1) * vi))
    best = np.argsort(-gain.ravel(), kind="stable")[:answers]
    return np.bincount(best // most_per_pair, minlength=len(v))
