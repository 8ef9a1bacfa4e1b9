"""The active sampler: pairs within queries, the information of an answer, and the greedy
allocation of a batch by expected information gain."""

from __future__ import annotations

import numpy as np
import pytest

from crowdprefs.campaign.bradley_terry import outcome_probabilities
from crowdprefs.errors import InputError
from crowdprefs.quality.sampling import allocate_answers, answer_information, within_block_pairs


def test_within_block_pairs_lists_every_pair_of_a_query_once():
    block = np.array([1, 0, 1, 0, 1, 2])
    first, second = within_block_pairs(block)
    got = sorted(tuple(sorted(p)) for p in zip(first.tolist(), second.tolist(), strict=True))
    assert got == [(0, 2), (0, 4), (1, 3), (2, 4)]
    assert (block[first] == block[second]).all()


def test_an_answer_tells_most_about_close_candidates():
    info = answer_information([0.0, 1.0, 3.0, 8.0], tie=1.0)
    assert info[0] > info[1] > info[2] > info[3] > 0


def test_the_information_matches_the_fisher_information_of_the_three_outcomes():
    d, h = 0.7, 1e-4
    p = outcome_probabilities(d, 0.8)[0]
    slope = (outcome_probabilities(d + h, 0.8)[0] - outcome_probabilities(d - h, 0.8)[0]) / (2 * h)
    assert answer_information(d, 0.8)[0] == pytest.approx((slope**2 / p).sum(), rel=1e-5)


def test_careless_answers_carry_less_information():
    full = answer_information(0.5, tie=1.0)
    assert answer_information(0.5, tie=1.0, reliability=0.6)[0] < full[0]


def test_a_batch_goes_first_to_the_most_uncertain_informative_pairs():
    counts = allocate_answers([4.0, 0.01, 1.0], [0.2, 0.2, 0.2], answers=5)
    assert counts.sum() == 5
    assert counts[0] >= counts[2] > counts[1] == 0


def test_the_gain_of_more_answers_to_one_pair_diminishes_so_answers_spread():
    counts = allocate_answers([1.0, 1.0], [1.0, 1.0], answers=6)
    assert counts.tolist() == [3, 3]


def test_no_pair_gets_more_than_its_cap_and_the_batch_shrinks_to_what_fits():
    counts = allocate_answers([9.0, 0.1], [1.0, 1.0], answers=50, most_per_pair=4)
    assert counts.tolist() == [4, 4]


def test_mismatched_or_negative_inputs_are_refused():
    with pytest.raises(InputError, match="one shape"):
        allocate_answers([1.0, 2.0], [1.0], answers=1)
    with pytest.raises(InputError, match="reliability"):
        answer_information(0.0, tie=1.0, reliability=0.0)
