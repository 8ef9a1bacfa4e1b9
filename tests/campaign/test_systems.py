"""Ranking systems on partly sorted lists: scores from groups, the array sort, completions, the
order of system pairs and which open segments matter."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdprefs.campaign import systems as S
from crowdprefs.campaign.sorting import replay
from crowdprefs.errors import InputError
from crowdprefs.evaluation.measures import score


def collection(seed: int, sizes=(7, 5, 9, 3)):
    """Query codes, document names, dense true groups and queries of a small collection."""
    rng = np.random.default_rng(seed)
    query = np.repeat(np.arange(len(sizes)), sizes)
    group = np.concatenate([rng.integers(1, 4, n) for n in sizes])
    for q in range(len(sizes)):
        group[query == q] = np.unique(group[query == q], return_inverse=True)[1] + 1
    documents = np.array([f"d{i}" for i in range(len(query))])
    return query, documents, group, [f"q{i}" for i in range(len(sizes))]


def random_runs(seed: int, query, documents, queries, systems=5, depth=4) -> pd.DataFrame:
    """Runs that mix candidates with documents no list holds, some shorter than ``depth``."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(systems):
        for q, name in enumerate(queries):
            pool = [*documents[query == q], "other1", "other2"]
            picked = rng.permutation(pool)[: rng.integers(1, depth + 1)]
            rows += [(f"s{s}", name, d, r + 1) for r, d in enumerate(picked)]
    return pd.DataFrame(rows, columns=["system", "query", "document", "rank"])


@pytest.mark.parametrize("name", ["ADR@3", "ADR@5", "AG@3", "nDCG@4"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_scores_from_groups_equal_the_measures_on_the_lists(name, seed):
    query, documents, group, queries = collection(seed)
    runs = random_runs(seed, query, documents, queries)
    measure = S.parse_rank_measure(name)
    found = S.retrieved(runs, queries, documents, query, measure.k)
    mine = S.scores(group[None], query, found, measure)[0]
    truth = pd.DataFrame({"query": np.array(queries)[query], "document": documents, "group": group})
    expected = score(runs, truth, [name]).pivot(index="system", columns="query", values="score")
    assert list(found.systems) == list(expected.index)
    np.testing.assert_allclose(mine, expected.to_numpy(), atol=1e-12)


@pytest.mark.parametrize("text", ["P@5", "ADR", "AG@0", "nDCG@x", "ADR@100000"])
def test_a_measure_systems_cannot_be_ranked_by_is_refused(text):
    with pytest.raises(InputError, match="measure"):
        S.parse_rank_measure(text)


def test_the_array_sort_is_the_replay_of_the_same_verdicts():
    query, documents, group, queries = collection(4)
    position = np.random.default_rng(4).random(len(query))
    rng = np.random.default_rng(5)
    partial = S.Partial.start(query, position)
    verdicts = {}
    while True:
        x, y = partial.needed()
        if not len(x):
            break
        noisy = np.sign(group[y] - group[x]) * (rng.random(len(x)) > 0.2)  # some wrong ties
        verdicts |= {
            (documents[a], documents[b]): int(v) for a, b, v in zip(x, y, noisy, strict=True)
        }
        partial = partial.split(x, y, noisy)
    for q, name in enumerate(queries):
        members = np.flatnonzero(query == q)
        order = list(documents[members[np.argsort(position[members])]])
        state = replay(order, verdicts)
        assert state.closed
        produced = partial.groups()[members]
        expected = {d: g + 1 for g, grp in enumerate(state.groups()) for d in grp}
        assert list(produced) == [expected[d] for d in documents[members]], name


def test_from_states_reads_the_drivers_segments():
    query, documents, group, queries = collection(6)
    position = np.random.default_rng(6).random(len(query))
    partial = S.Partial.start(query, position)
    x, y = partial.needed()
    verdict = np.sign(group[y] - group[x])
    partial = partial.split(x, y, verdict)
    verdicts = {(documents[a], documents[b]): int(v) for a, b, v in zip(x, y, verdict, strict=True)}
    states, candidates = {}, {}
    for q, name in enumerate(queries):
        members = np.flatnonzero(query == q)
        states[name] = replay(list(documents[members[np.argsort(position[members])]]), verdicts)
        candidates[name] = list(documents[members])
    again = S.from_states(states, candidates)
    np.testing.assert_array_equal(again.segment, partial.segment)
    np.testing.assert_array_equal(again.todo, partial.todo)
    assert np.array_equal(*(p.needed()[1] for p in (again, partial)))


def test_completions_refine_the_segments_and_keep_what_is_known():
    query, documents, group, queries = collection(7, sizes=(12, 8))
    partial = S.Partial.start(query, np.arange(len(query)))
    x, y = partial.needed()
    partial = partial.split(x, y, np.sign(group[y] - group[x]))
    drawn = S.complete(partial, 300, np.random.default_rng(0))
    seg = partial.segment
    earlier = (seg[:, None] < seg[None, :]) & (query[:, None] == query[None, :])
    # a candidate of an earlier segment is in an earlier group in every draw
    assert np.all(~earlier[None] | (drawn[:, :, None] < drawn[:, None, :]))
    # former pivots stay with the pivot they were judged equal to, and closed segments are whole
    done = ~partial.todo
    for s in np.unique(seg):
        members = np.flatnonzero(seg == s)
        fixed = members[done[members]]
        if len(fixed) > 1 or not partial.open()[s]:
            assert (
                drawn[:, members if not partial.open()[s] else fixed]
                == drawn[:, [fixed[0] if len(fixed) else members[0]]]
            ).all()
    # open segments are drawn in varied orders
    open_members = np.flatnonzero(partial.open()[seg])
    assert len({tuple(row) for row in drawn[:, open_members]}) > 10


def first_build_campaign():
    """The seeded collection, runs and first split of the guards below (``query``, ``group``,
    ``runs``, ``partial``), as the first build's figures were recorded on them."""
    query, documents, group, queries = collection(11, sizes=(14, 9, 17, 6, 11))
    frame = random_runs(11, query, documents, queries, systems=6, depth=5)
    runs = S.retrieved(frame, queries, documents, query, 5)
    partial = S.Partial.start(query, np.random.default_rng(11).random(len(query)))
    x, y = partial.needed()
    partial = partial.split(x, y, np.sign(group[y] - group[x]))
    return query, group, runs, partial


@pytest.mark.parametrize(
    ("depth", "checksum", "priority"),
    [
        (5, 23458614, [0.428473, 0.988387, 1.637599, 0.401958, 0.401958, 0.390109]),
        (None, 29555423, [0.398116, 0.887171, 1.582324, 0.394195, 0.394195, 0.405421]),
    ],
)
def test_the_drawn_lists_and_the_chosen_batch_are_those_of_the_first_build(
    depth, checksum, priority
):
    """A guard for speed work: the same seed draws the same lists and chooses the same batch
    as the first build did (figures recorded from it)."""
    query, group, runs, partial = first_build_campaign()
    model = S.VerdictModel(8.0, 0.7)
    rng = np.random.default_rng(3)
    drawn = S.complete(partial, 60, rng, model, depth, score=S.consensus(runs, len(query)))
    assert int((drawn * np.arange(1, drawn.size + 1).reshape(drawn.shape)).sum()) == checksum
    measure = S.RankMeasure("ADR", 5)
    scored = S.scores(drawn, query, runs, measure)
    pairs = S.system_pairs(scored, 0.95)
    weight = S.priorities(partial, runs, measure, scored, pairs)
    chosen = S.choose(partial, weight)
    assert np.flatnonzero(chosen).tolist() == [0, 3, 5, 7, 8, 10]
    assert weight[chosen] == pytest.approx(priority, abs=1e-6)


@pytest.mark.parametrize(("depth", "checksum"), [(5, 21517358), (None, 26685297)])
def test_lists_drawn_around_known_verdicts_are_those_of_the_first_build(depth, checksum):
    """The same guard with known verdicts in both directions looked up (figures recorded from
    the first build, which searched every drawn pair among them)."""
    query, group, runs, partial = first_build_campaign()
    n = len(query)
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, n, 400), rng.integers(0, n, 400)
    keep = (query[a] == query[b]) & (a != b)
    keys, first = np.unique(a[keep] * n + b[keep], return_index=True)
    known = (keys, np.sign(group[b[keep]] - group[a[keep]])[first])
    model = S.VerdictModel(8.0, 0.7)
    score = S.consensus(runs, n)
    drawn = S.complete(partial, 60, np.random.default_rng(3), model, depth, known, score)
    assert int((drawn * np.arange(1, drawn.size + 1).reshape(drawn.shape)).sum()) == checksum


def test_known_verdicts_are_used_and_deep_segments_stay_whole():
    query = np.zeros(6, dtype=np.int64)
    partial = S.Partial.start(query, np.arange(6))  # pivot: candidate 5
    keys = np.array([0 * 6 + 5, 1 * 6 + 5])
    known = (keys, np.array([1, -1]))  # 0 beats the pivot, 1 loses to it
    drawn = S.complete(partial, 200, np.random.default_rng(1), known=known)
    assert (drawn[:, 0] < drawn[:, 5]).all() and (drawn[:, 1] > drawn[:, 5]).all()
    # with one place that matters, the part after the pivot starts past it: it stays whole
    top = S.complete(partial, 200, np.random.default_rng(2), depth=1, known=known)
    after = top > top[:, [5]]
    assert after[:, 1].all()
    assert all(len(set(row[mask])) == 1 for row, mask in zip(top, after, strict=True))
    assert len({tuple(row) for row in drawn[:, 1:]}) > len({tuple(row) for row in top[:, 1:]})


def test_identical_systems_are_tied_for_sure_and_distinct_ones_are_not():
    query, documents, group, queries = collection(8)
    runs = random_runs(8, query, documents, queries, systems=2)
    twin = runs[runs["system"] == "s0"].assign(system="s9")
    found = S.retrieved(pd.concat([runs, twin]), queries, documents, query, 4)
    partial = S.Partial.start(query, np.arange(len(query)))
    drawn = S.scores(
        S.complete(partial, 200, np.random.default_rng(0)), query, found, S.RankMeasure("ADR", 4)
    )
    pairs = S.system_pairs(drawn, 0.95)
    twins = (pairs.first == 0) & (pairs.second == 2)
    assert pairs.order[twins] == 0 and pairs.decided[twins] and pairs.holds[twins] == 1
    assert not S.system_pairs(drawn[:10], 0.95).decided.any()  # 10 draws decide nothing
    priority = S.priorities(partial, found, S.RankMeasure("ADR", 4), drawn, pairs)
    assert (priority > 0).any()


def test_only_segments_an_undecided_system_retrieves_near_the_top_matter():
    query = np.zeros(10, dtype=np.int64)
    documents = np.array([f"d{i}" for i in range(10)])
    # segments after one split on pivot 9: {0, 1} more, {9} equal, {2..8} less
    partial = S.Partial.start(query, np.arange(10))
    x, y = partial.needed()
    verdict = np.where(x < 2, 1, -1)
    partial = partial.split(x, y, verdict)
    runs = pd.DataFrame(
        {
            "system": ["a", "a", "b", "b"],
            "query": "q0",
            "document": ["d0", "d5", "d1", "d6"],
            "rank": [1, 2, 1, 2],
        }
    )
    measure = S.RankMeasure("ADR", 2)
    found = S.retrieved(runs, ["q0"], documents, query, 2)
    drawn = S.scores(
        S.complete(partial, 200, np.random.default_rng(0), depth=2), query, found, measure
    )
    pairs = S.system_pairs(drawn, 0.95)
    priority = S.priorities(partial, found, measure, drawn, pairs)
    first = partial.segment[0]
    assert priority[first] > 0  # the top two: their order decides a against b
    assert priority[partial.segment[5]] == 0  # starts at place 3: no allowed set holds it
    chosen = S.choose(partial, priority)
    assert chosen[first] and chosen.sum() == 1


def test_a_machine_prior_that_ranks_like_the_truth_steers_the_drawn_lists():
    """With a prior that ranks like the truth (and verdicts agreeing), the drawn finished lists
    favour the system that retrieves the truly best candidates; the systems' consensus, equal
    for both systems' candidates, cannot tell them apart."""
    from crowdprefs.campaign.ranking import standing
    from crowdprefs.campaign.sorting import initial_order

    rng = np.random.default_rng(9)
    docs = [f"d{i}" for i in range(30)]
    group = dict(zip(docs, rng.integers(1, 8, 30).tolist(), strict=True))
    order = initial_order(docs, 1, "q")
    verdicts = {(x, y): int(np.sign(group[y] - group[x])) for x, y in replay(order, {}).needed}
    state = replay(order, verdicts)
    ranked = sorted(docs, key=lambda d: group[d])
    runs = pd.DataFrame(
        {
            "system": ["good"] * 5 + ["bad"] * 5,
            "query": "q",
            "document": ranked[:5] + ranked[-5:],
            "rank": [1, 2, 3, 4, 5] * 2,
        }
    )
    args = ({"q": docs}, {"q": state}, {"q": verdicts}, runs, S.RankMeasure("ADR", 5))
    prior = {"q": {d: -float(group[d]) + 0.01 * i for i, d in enumerate(docs)}}
    steered = standing(*args, prior=prior, samples=300, seed=(3,))
    blind = standing(*args, samples=300, seed=(3,))

    def good(result) -> float:
        return float(result.drawn[:, list(result.runs.systems).index("good")].mean())

    assert good(steered) > good(blind) + 0.1
    assert good(steered) > 0.9
