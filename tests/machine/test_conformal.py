"""The machine's selection with a per-campaign bound on its wrong verdicts: the hypergeometric
bound, the selection, the evidence pooled over rounds, and the promise campaign by campaign."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from crowdprefs.errors import InputError
from crowdprefs.machine.conformal import calibration_needed, select, wrong_bound


def test_the_bound_is_the_largest_count_the_calibration_leaves_plausible():
    # 40 calibration pairs, none wrong, beside 40 candidates: V wrong candidates leave a clean
    # calibration with probability C(80 − V, 40) / C(80, 40), about 2^−V
    bound = wrong_bound(np.array([0, 2]), np.array([40, 40]), np.array([40, 40]), 0.05)
    tail = stats.hypergeom.cdf(0, 80, np.arange(41), 40)
    assert bound[0] == np.flatnonzero(tail > 0.05).max()
    assert 3 <= bound[0] <= 5 and bound[1] > bound[0]  # wrong calibration pairs raise it
    assert wrong_bound(np.array([0]), np.array([0]), np.array([7]), 0.05).tolist() == [7]


def test_a_clean_large_calibration_selects_and_a_small_or_wrong_one_does_not():
    u = np.linspace(0, 1, 200)
    clean = np.zeros(200, dtype=bool)
    chosen, bound, _ = select(u, u, clean, 0.1)
    assert chosen.all() and bound <= 0.1 * 200
    assert not select(u, u[:10], clean[:10], 0.1)[0].any()  # 10 pairs cannot show 10 %
    assert not select(u, u, u > 0.5, 0.1)[0][u > 0.5].any()  # never past the errors
    assert select(np.zeros(0), u, clean, 0.1)[0].size == 0
    with pytest.raises(InputError, match="level"):
        select(u, u, clean, 0.0)
    with pytest.raises(InputError, match="flags"):
        select(u, u, clean[:3], 0.1)


@pytest.mark.parametrize("alpha", [0.1, 0.2])
def test_the_share_of_wrong_selected_verdicts_is_at_most_alpha_in_95_percent_of_rounds(alpha):
    """Exchangeable calibration and candidates, a model wrong with probability rising with its
    uncertainty: the share of wrong verdicts among those selected stays ≤ α in at least 95 %
    of the draws (not only on average), and the selection is not empty."""
    rng = np.random.default_rng(4)
    within, sizes = [], []
    for _ in range(400):
        u = rng.random(400)
        wrong = rng.random(400) < 0.6 * u**2
        cal, test = slice(0, 200), slice(200, None)
        chosen = select(u[test], u[cal], wrong[cal], alpha)[0]
        sizes.append(chosen.sum())
        within.append(wrong[test][chosen].sum() <= alpha * chosen.sum())
    assert np.mean(within) >= 0.95
    assert np.mean(sizes) > 10


def test_fewer_calibration_pairs_than_needed_can_never_take_a_pair():
    """At α = 0.1 and 95 %, 44 calibration pairs, all right, are the fewest that can show the
    share; with 43 nothing is taken however many candidates, with 60 beside 600 it is."""
    assert calibration_needed(0.1) == 44 and calibration_needed(0.5) == 7
    u = np.linspace(0, 1, 600)
    assert not select(u, np.zeros(43), np.zeros(43, bool), 0.1)[0].any()
    assert select(u, np.zeros(60), np.zeros(60, bool), 0.1)[0].all()
    with pytest.raises(InputError, match="level"):
        calibration_needed(1.0)


def test_earlier_rounds_evidence_is_pooled_into_the_bound():
    """A clean round of 30 calibration pairs cannot show 5 % alone (90 are needed); after
    earlier rounds that took 100 pairs on 100 clean calibration pairs it can, and the evidence
    it adds is its own; earlier rounds with many wrong verdicts stop a round that alone would
    take pairs."""
    u = np.linspace(0, 1, 100)
    alone = select(u, np.zeros(30), np.zeros(30, bool), 0.05)
    assert not alone[0].any() and alone[2] == (0, 0, 0)
    pooled = select(u, np.zeros(30), np.zeros(30, bool), 0.05, earlier=(100, 0, 100))
    assert pooled[0].all() and pooled[2] == (30, 0, 100) and pooled[1] <= 0.05 * 200
    assert select(u, np.zeros(60), np.zeros(60, bool), 0.1)[0].any()
    assert not select(u, np.zeros(60), np.zeros(60, bool), 0.1, earlier=(60, 15, 60))[0].any()


def test_the_campaign_share_of_wrong_verdicts_is_at_most_alpha_in_95_percent_of_campaigns():
    """Campaigns of three rounds, each round smaller and harder than the last (its pairs closer:
    more wrong at the same uncertainty), each with its own calibration draw of 30 pairs: the
    share of wrong verdicts among every pair the campaign takes stays ≤ α in at least 95 % of
    campaigns, and pooling takes pairs where one round's bound alone takes fewer."""
    rng = np.random.default_rng(11)
    alpha, within, pooled_taken, alone_taken = 0.2, [], 0, 0
    for _ in range(300):
        earlier, wrong_taken, taken = (0, 0, 0), 0, 0
        for size, hardness in ((150, 0.15), (100, 0.3), (70, 0.45)):
            u = rng.random(size)
            wrong = rng.random(size) < hardness * u
            cal = rng.permutation(size) < 30
            chosen, _, evidence = select(u[~cal], u[cal], wrong[cal], alpha, earlier=earlier)
            alone_taken += select(u[~cal], u[cal], wrong[cal], alpha)[0].sum()
            earlier = tuple(a + b for a, b in zip(earlier, evidence, strict=True))
            wrong_taken += wrong[~cal][chosen].sum()
            taken += chosen.sum()
        pooled_taken += taken
        within.append(wrong_taken <= alpha * taken)
    assert np.mean(within) >= 0.95
    assert pooled_taken > alone_taken > 0
