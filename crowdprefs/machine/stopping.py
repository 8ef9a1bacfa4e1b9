"""The machine prior inside the adaptive stopping rule: a Pólya urn per pair.

:func:`crowdprefs.campaign.adaptive.decide` predicts a pair's remaining answers with one Pólya
urn for every pair, the Dirichlet-multinomial of a Dirichlet(prior, prior, prior) posterior on
its answer shares. :func:`decide_with_prior` gives each pair its own Dirichlet(α_i), α_i =
``pseudo[i]`` = (α_more, α_equal, α_less) pseudo-answers, e.g. ``weight ·
Link.probabilities(d, s)`` from the calibrated *answer* link: from a state (a, b, c) with
n = a + b + c answers the next answer is "more" with probability (a + α_more)/(n + Σα), and so on
(the predictive of a Dirichlet-multinomial; Spiegelhalter, Freedman & Blackburn 1986, *Monitoring
clinical trials: conditional or predictive power?*, Control. Clin. Trials 7, for predictive
stochastic curtailment). Only the predictive part of each rule changes:

``curtail``
    the probability of each verdict of the fixed design at ``maximum`` answers (the final layer of
    :func:`~crowdprefs.campaign.adaptive.policy`'s table) is walked back under the pair's urn; the
    pair is decided when one verdict has probability ≥ 1 − ``epsilon``. With ``epsilon = 0`` that
    still means every completion gives the same verdict, so the prior changes nothing.

``sequential``
    the boundary (the crossed states, ±1 in the policy table) is unchanged; a pair not crossed is
    declared equal early when its urn's probability of still crossing by ``maximum`` is at most
    ``futility``. A prior saying "equal" stops it sooner; one saying "different" keeps it longer.

The recursions are those of :mod:`~crowdprefs.campaign.adaptive`, term for term and in the same
order, over (verdict, more, equal, pairs) arrays one answer count at a time, so with every
``pseudo`` equal to ``rule.prior`` the decisions are exactly :func:`adaptive.decide`'s.
"""

from __future__ import annotations

import numpy as np

from crowdprefs.campaign.adaptive import StoppingRule, decide, policy
from crowdprefs.errors import InputError

CHUNK = 4096
"""Pairs walked back together (memory: 3·(maximum + 2)²·CHUNK floats)."""


def _walk_back(
    final: np.ndarray,
    crossed: np.ndarray | None,
    states: np.ndarray,
    pseudo: np.ndarray,
) -> np.ndarray:
    """Per pair (P), the urn probabilities (K, P) of the K indicator layers of ``final`` at the
    pair's state, walked back from ``maximum`` answers under the pair's own Dirichlet(pseudo).

    ``final``: (K, T+1, T+1, T+1) indicators, read at the states with T = maximum answers;
    ``crossed``: (T+1,)*3 states whose value stays that of ``final`` (the sequential boundary),
    or None. ``states``: (P, 3) counts with fewer than T answers. At each answer count L the
    array ``chance[k, a, b, p]`` holds the value of state (a, b, L − a − b) for pair p; cells
    with a + b > L are never read by a cell with a + b <= L.
    """
    top = final.shape[1] - 1
    alpha_more, alpha_equal, alpha_less = (pseudo[:, j] for j in range(3))
    total = pseudo.sum(axis=1)
    n_state = states.sum(axis=1)
    a_idx, b_idx = np.indices((top + 1, top + 1))
    chance = final[:, a_idx, b_idx, np.clip(top - a_idx - b_idx, 0, top)][..., None]
    chance = np.where((a_idx + b_idx <= top)[..., None], chance, 0.0) * np.ones(len(states))
    out = np.zeros((final.shape[0], len(states)))
    for layer in range(top - 1, int(n_state.min()) - 1, -1):
        a = np.arange(layer + 1)[:, None, None]
        b = np.arange(layer + 1)[None, :, None]
        chance = (
            (a + alpha_more) * chance[:, 1:, : layer + 1]
            + (b + alpha_equal) * chance[:, : layer + 1, 1:]
            + (layer - a - b + alpha_less) * chance[:, : layer + 1, : layer + 1]
        ) / (layer + total)
        if crossed is not None:  # the boundary's states keep their final value
            a_l, b_l = a_idx[: layer + 1, : layer + 1], b_idx[: layer + 1, : layer + 1]
            c_l = np.clip(layer - a_l - b_l, 0, top)
            pinned = (a_l + b_l <= layer) & crossed[a_l, b_l, c_l]
            chance = np.where(pinned[..., None], final[:, a_l, b_l, c_l][..., None], chance)
        here = np.flatnonzero(n_state == layer)
        if here.size:
            out[:, here] = chance[:, states[here, 0], states[here, 1], here]
    return out


def decide_with_prior(
    more, equal, less, pseudo, rule: StoppingRule
) -> tuple[np.ndarray, np.ndarray]:
    """Per pair ``(decided, verdict)`` as :func:`~crowdprefs.campaign.adaptive.decide`, with the
    Pólya urn of pair i a Dirichlet(``pseudo[i]``) (pseudo-answers more, equal, less, > 0)."""
    decided, verdict = decide(more, equal, less, rule)
    shape = decided.shape
    counts = np.column_stack([np.asarray(v, dtype=np.int64).ravel() for v in (more, equal, less)])
    pseudo = np.asarray(pseudo, dtype=float)
    if pseudo.shape != (len(counts), 3):
        raise InputError(f"pseudo-answers must have shape ({len(counts)}, 3), got {pseudo.shape}")
    if not np.isfinite(pseudo).all() or (pseudo <= 0).any():
        raise InputError("pseudo-answers must be finite and positive")
    decided, verdict = decided.ravel().copy(), verdict.ravel().copy()
    plan = policy(rule)
    top = rule.maximum
    table = plan.table
    n = counts.sum(axis=1)
    early = n < top
    if rule.method == "curtail":
        todo = np.flatnonzero(early)
        layers = np.stack([table == v for v in (1, 0, -1)]).astype(float)
        crossed = None
    else:
        pinned = np.zeros(len(counts), dtype=bool)
        pinned[early] = np.isin(table[tuple(counts[early].T)], (1, -1))
        todo = np.flatnonzero(early & ~pinned)
        crossed = (table == 1) | (table == -1)
        layers = crossed[None].astype(float)
    for start in range(0, todo.size, CHUNK):
        chunk = todo[start : start + CHUNK]
        chance = _walk_back(layers, crossed, counts[chunk], pseudo[chunk])
        if rule.method == "curtail":
            best = chance.argmax(axis=0)
            doubt = chance.sum(axis=0) - chance.max(axis=0)
            settled = doubt <= rule.epsilon
            decided[chunk] = settled
            verdict[chunk] = np.where(settled, 1 - best, 0)
        else:
            hopeless = chance[0] <= rule.futility
            decided[chunk] = hopeless
            verdict[chunk] = 0
    return decided.reshape(shape), verdict.reshape(shape).astype(np.int8)
