"""The modified QuickSort: seed 002's Table 1, recovery of consistent truths, termination."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from crowdprefs.campaign.sorting import (
    Segment,
    SortState,
    StateCounts,
    contradictions,
    initial_order,
    placed,
    replay,
    with_first_pivots,
)

TABLE1_ORDER = list("CDEAGBF")
TABLE1_TRUTH = {"A": 1, "B": 1, "C": 1, "D": 2, "E": 2, "F": 3, "G": 3}


def truthful(truth: dict[str, int], x: str, y: str) -> int:
    """+1 when x is in a more similar (smaller) group than y."""
    return (truth[x] < truth[y]) - (truth[x] > truth[y])


def run_to_end(order, answer, max_batches=1000):
    """Drive ``replay`` batch by batch; returns (batches of pairs, final state, verdicts)."""
    verdicts: dict[tuple[str, str], int] = {}
    batches = []
    state = replay(order, verdicts)
    while not state.closed:
        assert len(batches) < max_batches, "the sort did not terminate"
        batches.append(state.needed)
        for x, y in state.needed:
            verdicts[(x, y)] = answer(x, y)
        state = replay(order, verdicts)
    return batches, state, verdicts


def as_groups(state) -> list[set]:
    return [set(g) for g in state.groups()]


def test_table1_of_seed_002_batch_for_batch():
    answer = lambda x, y: truthful(TABLE1_TRUTH, x, y)  # noqa: E731
    batches, state, _ = run_to_end(TABLE1_ORDER, answer)
    # Iteration 1: every member against the pivot F (C<F, D<F, E<F, A<F, G=F, B<F).
    assert batches[0] == tuple((m, "F") for m in "CDEAGB")
    # Iteration 2: the left segment's pivot is B (C=B, D>B, E>B, A=B); <F, G> is closed.
    assert batches[1] == (("C", "B"), ("D", "B"), ("E", "B"), ("A", "B"))
    # Iteration 3: <B | C, A> refined with pivot A, and <D, E> with pivot E.
    assert batches[2] == (("C", "A"), ("D", "E"))
    # Iteration 4 asks nothing: the lists are closed.
    assert len(batches) == 3 and state.closed
    assert state.groups() == [("A", "B", "C"), ("E", "D"), ("F", "G")]
    assert sum(len(b) for b in batches) == 12  # not all 21 pairs were needed


def test_table1_intermediate_segments():
    verdicts = {(m, "F"): truthful(TABLE1_TRUTH, m, "F") for m in "CDEAGB"}
    state = replay(TABLE1_ORDER, verdicts)
    assert state.segments == (Segment((), tuple("CDEAB")), Segment(("F",), ("G",)))
    verdicts |= {(m, "B"): truthful(TABLE1_TRUTH, m, "B") for m in "CDEA"}
    state = replay(TABLE1_ORDER, verdicts)
    # The former pivot B heads the equal segment; D and E leave to the right.
    assert state.segments[0] == Segment(("B",), ("C", "A"))
    assert state.segments[1] == Segment((), ("D", "E"))
    assert state.open_segments == 2


def test_known_verdicts_are_reused_in_either_orientation():
    verdicts = {("F", m): -truthful(TABLE1_TRUTH, m, "F") for m in "CDEAGB"}
    state = replay(TABLE1_ORDER, verdicts)
    assert state.needed == (("C", "B"), ("D", "B"), ("E", "B"), ("A", "B"))


truths = st.lists(st.integers(1, 5), min_size=2, max_size=14).map(
    lambda groups: {f"d{i}": g for i, g in enumerate(groups)}
)


@settings(max_examples=150, deadline=None)
@given(truth=truths, seed=st.integers(0, 10_000))
def test_consistent_answers_recover_the_true_groups(truth, seed):
    order = initial_order(list(truth), seed, "q")
    batches, state, verdicts = run_to_end(order, lambda x, y: truthful(truth, x, y))
    levels = sorted(set(truth.values()))
    expected = [{d for d, g in truth.items() if g == level} for level in levels]
    assert as_groups(state) == expected
    asked = [p for b in batches for p in b]
    n = len(truth)
    assert len(asked) <= n * (n - 1) // 2
    assert len({frozenset(p) for p in asked}) == len(asked), "a pair was asked twice"
    assert contradictions(order, verdicts) == []


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(2, 14),
    answers=st.lists(st.sampled_from([-1, 0, 1]), min_size=200, max_size=200),
    seed=st.integers(0, 1000),
)
def test_arbitrary_answers_terminate_with_every_candidate_placed_once(n, answers, seed):
    documents = [f"d{i}" for i in range(n)]
    order = initial_order(documents, seed, "q")
    stream = itertools.cycle(answers)
    batches, state, _ = run_to_end(order, lambda x, y: next(stream), max_batches=n)
    placed = [d for g in state.groups() for d in g]
    assert sorted(placed) == sorted(documents)
    assert len(batches) <= n - 1


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 12),
    answers=st.lists(st.sampled_from([-1, 0, 1]), min_size=60, max_size=60),
    rounds=st.integers(0, 4),
)
def test_counts_read_from_a_states_json_match_the_state(n, answers, rounds):
    order = initial_order([f"d{i}" for i in range(n)], 7, "q")
    stream = itertools.cycle(answers)
    verdicts: dict[tuple[str, str], int] = {}
    state = replay(order, verdicts)
    for _ in range(rounds):  # part-way through the sort: open and closed segments mixed
        verdicts |= {pair: next(stream) for pair in state.needed}
        state = replay(order, verdicts)
    counts = StateCounts.from_json(state.to_json())
    assert counts == StateCounts.of(SortState.from_json(state.to_json()))
    assert (counts.size, counts.open_segments, counts.needed) == (
        n,
        state.open_segments,
        len(state.needed),
    )
    assert counts.closed == state.closed


def test_contradictions_are_found_once_per_triple():
    order = list("ABC")
    assert contradictions(order, {("A", "B"): 1, ("B", "C"): 1, ("A", "C"): 1}) == []
    cycle = contradictions(order, {("A", "B"): 1, ("B", "C"): 1, ("C", "A"): 1})
    assert len(cycle) == 1 and set(cycle[0]) == {"A", "B", "C"}
    # "equal" is transitive in a weak order: A=B, B=C but A>C contradicts.
    assert len(contradictions(order, {("A", "B"): 0, ("B", "C"): 0, ("A", "C"): 1})) == 1
    # A>B, B=C but C>A contradicts; two of three known is no contradiction.
    assert len(contradictions(order, {("A", "B"): 1, ("B", "C"): 0, ("C", "A"): 1})) == 1
    assert contradictions(order, {("A", "B"): 1, ("B", "C"): 1}) == []


def test_initial_order_is_seeded_per_query():
    docs = [f"d{i}" for i in range(20)]
    assert initial_order(docs, 1, "q1") == initial_order(docs, 1, "q1")
    assert initial_order(docs, 1, "q1") != initial_order(docs, 2, "q1")
    assert initial_order(docs, 1, "q1") != initial_order(docs, 1, "q2")
    assert sorted(initial_order(docs, 1, "q1")) == sorted(docs)


def test_placed_documents_give_back_the_wanted_initial_order():
    wanted = [f"d{i}" for i in (3, 0, 4, 1, 2, 5, 6)]
    stored = placed(wanted, 9, "q")
    assert sorted(stored) == sorted(wanted) and stored != wanted
    assert initial_order(stored, 9, "q") == wanted


def test_a_chosen_first_pivot_only_swaps_places_with_the_seeds_last_member():
    documents = {"q1": [f"a{i}" for i in range(9)], "q2": ["b0", "b1", "b2"]}
    placed_orders = with_first_pivots(documents, 5, {"q1": "a4", "q2": "b1"})
    for query, pivot in (("q1", "a4"), ("q2", "b1")):
        seeded = initial_order(documents[query], 5, query)
        now = initial_order(placed_orders[query], 5, query)
        assert now[-1] == pivot
        moved = [i for i, (a, b) in enumerate(zip(seeded, now, strict=True)) if a != b]
        assert moved in ([], [seeded.index(pivot), len(seeded) - 1])
    assert with_first_pivots(documents, 5, {}) == {}
