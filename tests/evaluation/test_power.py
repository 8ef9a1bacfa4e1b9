"""Tests of crowdprefs.evaluation.power: stratified subsets, power and stability studies, plots."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdprefs.errors import InputError
from crowdprefs.evaluation.power import (
    PROCEDURES,
    plot_curves,
    power_study,
    read_strata,
    stability_study,
    stratified_subsets,
)
from crowdprefs.evaluation.stats import friedman_tukey, pairwise_tests


def _scores(seed: int = 0, systems: int = 6, queries: int = 40, effect: float = 0.25):
    rng = np.random.default_rng(seed)
    values = rng.normal(size=(systems, queries)) + effect * np.arange(systems)[:, None]
    values += rng.normal(size=queries)  # query difficulty shared by all systems
    return pd.DataFrame(
        np.round(values, 1),  # ties and zero differences, as real scores have
        index=[f"S{i}" for i in range(systems)],
        columns=[f"q{j:02d}" for j in range(queries)],
    )


def _strata(queries, groups: int = 4) -> pd.Series:
    return pd.Series([f"g{i % groups}" for i in range(len(queries))], index=queries)


@settings(max_examples=40, deadline=None)
@given(
    sizes=st.lists(st.integers(1, 12), min_size=1, max_size=5),
    size=st.integers(1, 30),
    seed=st.integers(0, 1000),
)
def test_stratified_subsets_equal_priors(sizes, size, seed):
    codes = np.repeat(np.arange(len(sizes)), sizes)
    rng = np.random.default_rng(seed)
    base, extra = divmod(size, len(sizes))
    feasible = min(sizes) >= base and sum(s > base for s in sizes) >= extra
    if not feasible:
        with pytest.raises(InputError, match="cannot draw"):
            stratified_subsets(codes, size, 5, rng)
        return
    a, b = stratified_subsets(codes, size, 5, rng)
    assert b is None and a.shape == (5, size)
    for row in a:
        assert len(set(row)) == size
        per_stratum = np.bincount(codes[row], minlength=len(sizes))
        assert set(per_stratum) <= {base, base + 1}


def test_disjoint_subsets_share_no_query_and_extra_strata_are_uniform():
    codes = np.repeat(np.arange(10), 10)
    a, b = stratified_subsets(codes, 25, 2000, np.random.default_rng(1), disjoint=True)
    assert not any(set(x) & set(y) for x, y in zip(a, b, strict=True))
    for subsets in (a, b):
        counts = np.stack([np.bincount(codes[row], minlength=10) for row in subsets])
        assert set(counts.ravel()) == {2, 3}
        share_with_three = (counts == 3).mean(axis=0)  # 5 of 10 strata get the extra query
        np.testing.assert_allclose(share_with_three, 0.5, atol=0.05)
    odd = np.repeat(np.arange(4), 5)  # strata of 5: 10 = 2+2+3+3 twice needs other extras
    a, b = stratified_subsets(odd, 10, 50, np.random.default_rng(2), disjoint=True)
    assert not any(set(x) & set(y) for x, y in zip(a, b, strict=True))
    with pytest.raises(InputError, match="two disjoint"):
        stratified_subsets(codes, 60, 1, np.random.default_rng(1), disjoint=True)


def test_power_equals_a_loop_over_the_same_subsets():
    """The vectorised study equals pairwise_tests / friedman_tukey run subset by subset."""
    scores = _scores()
    strata = _strata(scores.columns)
    sizes, samples, seed = [8, 20, 40], 6, 3
    table = power_study({"m": scores}, strata, sizes, samples, ("FT", "W1", "T1"), seed, 500)
    codes = pd.factorize(strata.loc[scores.columns])[0]
    rng = np.random.default_rng(seed)
    for size in sizes:
        a, _ = stratified_subsets(codes, size, 1 if size == 40 else samples, rng)
        subsets = [scores.iloc[:, row] for row in a]
        expected = {
            "FT": np.mean([friedman_tukey(s).significant.mean() for s in subsets]),
            "W1": np.mean(
                [pairwise_tests(s, "wilcoxon", 0.01, True).significant.mean() for s in subsets]
            ),
            "T1": np.mean([pairwise_tests(s, "t", 0.01, True).significant.mean() for s in subsets]),
        }
        for procedure, value in expected.items():
            row = table[(table["size"] == size) & (table.procedure == procedure)].iloc[0]
            assert row.power == pytest.approx(value)
            assert row.samples == len(a)


def test_stability_equals_a_loop_and_is_chunk_independent():
    scores = _scores(seed=5)
    strata = _strata(scores.columns)
    table = stability_study({"m": scores}, strata, [12], 5, ("W1",), seed=9, budget=10**6)
    chunked = stability_study({"m": scores}, strata, [12], 5, ("W1",), seed=9, budget=50)
    pd.testing.assert_frame_equal(table, chunked)
    codes = pd.factorize(strata.loc[scores.columns])[0]
    a, b = stratified_subsets(codes, 12, 5, np.random.default_rng(9), disjoint=True)
    conflicts, swaps = [], []
    for row_a, row_b in zip(a, b, strict=True):
        first = pairwise_tests(scores.iloc[:, row_a], "wilcoxon", 0.01, True)
        second = pairwise_tests(scores.iloc[:, row_b], "wilcoxon", 0.01, True)
        conflicts.append((first.significant != second.significant).mean())
        swaps.append((np.sign(first.difference) * np.sign(second.difference) < 0).mean())
    row = table.iloc[0]
    assert row.conflicts == pytest.approx(np.mean(conflicts))
    assert row.swaps == pytest.approx(np.mean(swaps))
    assert row.stable == pytest.approx(row.power - row.conflicts)


def test_identical_systems_keep_the_share_of_significant_pairs_near_alpha():
    """H0 true for every pair: the two-sided test is significant for ≈ α of the pairs; the
    1-tailed test in the observed direction (seed 001's W1) for ≈ 2α; FT stays below α."""
    rng = np.random.default_rng(0)
    scores = pd.DataFrame(rng.normal(size=(8, 60)), index=[f"S{i}" for i in range(8)])
    scores.columns = [f"q{j}" for j in range(60)]
    table = power_study({"null": scores}, None, [30], 400, ("W2", "W1", "FT"), seed=1)
    power = table.set_index("procedure").power
    assert power["W2"] == pytest.approx(0.05, abs=0.015)
    assert power["W1"] == pytest.approx(0.02, abs=0.008)
    assert power["FT"] < 0.05


def test_more_queries_give_more_power():
    scores = _scores(seed=2, effect=0.15)
    table = power_study({"m": scores}, None, [10, 20, 40], 30, ("FT", "W1"), seed=0)
    for _, rows in table.groupby("procedure"):
        assert rows.sort_values("size").power.is_monotonic_increasing


def test_study_input_errors(tmp_path):
    scores = _scores()
    with pytest.raises(InputError, match="unknown procedure 'X'"):
        power_study({"m": scores}, procedures=("X",))
    with pytest.raises(InputError, match="outside 2…20"):
        stability_study({"m": scores}, sizes=[25])
    with pytest.raises(InputError, match="has no stratum"):
        power_study({"m": scores}, scores.columns[:5].to_series(), sizes=[5])
    other = scores.iloc[:, :10]
    with pytest.raises(InputError, match="other systems or queries"):
        power_study({"m": scores, "n": other})


def test_read_strata_formats(tmp_path):
    (tmp_path / "meta.txt").write_text("d1\tartist1\tpop\nd2\tartist2\trock\n")
    strata = read_strata(tmp_path / "meta.txt")
    assert strata.to_dict() == {"d1": "pop", "d2": "rock"}
    assert read_strata(tmp_path / "meta.txt", column=2).to_dict() == {
        "d1": "artist1",
        "d2": "artist2",
    }
    (tmp_path / "s.csv").write_text("query,genre\nq1,jazz\nq2,blues\n")
    assert read_strata(tmp_path / "s.csv").to_dict() == {"q1": "jazz", "q2": "blues"}
    with pytest.raises(InputError, match="no column 7"):
        read_strata(tmp_path / "s.csv", column=7)
    with pytest.raises(InputError, match="no such strata file"):
        read_strata(tmp_path / "none.csv")


def test_plot_curves_writes_png(tmp_path):
    table = power_study({"a": _scores(), "b": _scores(seed=1)}, None, [10, 20], 5, ("FT", "W1"))
    path = plot_curves(table, "power", tmp_path / "power.png", title="power")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not list(tmp_path.glob(".*"))  # no temporary left


def test_procedures_are_documented():
    assert {"FT", "W1"} <= set(PROCEDURES)
    assert all(p.description for p in PROCEDURES.values())
