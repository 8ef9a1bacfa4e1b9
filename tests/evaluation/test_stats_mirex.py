"""Statistics on the real MIREX 2011 AMS data (skipped when ../shared is absent)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from crowdprefs.evaluation.gawm import correlations, gawm
from crowdprefs.evaluation.power import power_study, read_strata, stability_study
from crowdprefs.evaluation.stats import friedman, friedman_tukey, pairwise_tests

pytestmark = pytest.mark.shared


@pytest.fixture(scope="module")
def measures(mirex2011) -> dict[str, pd.DataFrame]:
    """AG@5 and nDCG@5 (log base 2; seed 001 §3) of the 18 systems × 100 queries, Fine gains."""
    ids = {"system": str, "query": str, "document": str}  # ids like 0001e0 are not numbers
    runs = pd.read_csv(mirex2011 / "runs.txt", sep="\t", names=list(ids), dtype=ids)
    names = ["query", "document", "gain"]
    gains = pd.read_csv(mirex2011 / "judgments.txt", sep="\t", names=names, dtype=ids)
    runs["rank"] = runs.groupby(["system", "query"]).cumcount()
    top = runs[runs["rank"] < 5].merge(gains, how="left").fillna({"gain": 0})
    discount = np.maximum(1, np.log2(top["rank"] + 1))
    dcg = (top.gain / discount).groupby([top["system"], top["query"]]).sum()
    ideal = gains.sort_values("gain", ascending=False).groupby("query").head(5).copy()
    ideal["rank"] = ideal.groupby("query").cumcount()
    idcg = (ideal.gain / np.maximum(1, np.log2(ideal["rank"] + 1))).groupby(ideal["query"]).sum()
    ndcg = dcg / idcg.reindex(dcg.index.get_level_values("query")).to_numpy()
    ag = top.groupby(["system", "query"]).gain.mean()
    return {"AG@5": ag.unstack("query"), "nDCG@5": ndcg.unstack("query")}


@pytest.fixture(scope="module")
def strata(mirex2011) -> pd.Series:
    return read_strata(mirex2011 / "metadata.txt")


def test_mirex_shapes(measures, strata):
    assert measures["AG@5"].shape == (18, 100)
    assert strata.loc[measures["AG@5"].columns].value_counts().tolist() == [10] * 10


def test_friedman_tukey_and_wilcoxon_on_ag5(measures):
    ag = measures["AG@5"]
    result = friedman(ag)
    reference = sps.friedmanchisquare(*ag.to_numpy())
    assert result.statistic == pytest.approx(reference.statistic)
    ft = friedman_tukey(ag, alpha=0.05)
    w1 = pairwise_tests(ag, "wilcoxon", alpha=0.01, one_sided=True)
    assert len(ft) == len(w1) == 153
    # Seed 001 §6: the 1-tailed Wilcoxon at α = 0.01 finds more differences than FT, and
    # every pair FT declares significant is in the direction of the mean difference.
    assert w1.significant.sum() > ft.significant.sum() > 0.4 * 153
    significant = ft[ft.significant]
    assert (np.sign(significant.rank_difference) == np.sign(significant.difference)).mean() > 0.95
    for row in w1.sample(20, random_state=0).itertuples():
        x, y = ag.loc[row.system_a], ag.loc[row.system_b]
        side = "greater" if row.difference >= 0 else "less"
        p = sps.wilcoxon(x, y, alternative=side, method="asymptotic", correction=False).pvalue
        assert row.p == pytest.approx(p)  # ties in the Fine scores: normal approximation


def test_power_and_stability_on_mirex(measures, strata):
    power = power_study(measures, strata, [25, 50, 100], 40, ("FT", "W1"), seed=0)
    at = power.set_index(["measure", "procedure", "size"]).power
    for measure in measures:
        assert at[measure, "FT", 25] < at[measure, "FT", 50] < at[measure, "FT", 100]
        assert at[measure, "W1", 50] > at[measure, "FT", 50]  # seed 001 §6.1, Figure 3
        # ... and W1 with half the queries is about as powerful as FT with all of them
        assert at[measure, "W1", 50] > at[measure, "FT", 100] - 0.05
    stable = stability_study(measures, strata, [50], 40, ("FT", "W1"), seed=0)
    assert (stable.significant_swaps < 0.002).all()  # seed 001 §5: no significant swaps
    assert (stable.conflicts < 0.25).all()


def test_gawm_on_mirex(measures):
    ag = measures["AG@5"] / 100
    for axioms in ("A", "B"):
        result = gawm(ag, axioms=axioms)
        assert result.converged
        table = correlations(ag, result)
        assert table["MAP~E_s"] > 0.99 and table["AAP~E_t"] > 0.99  # seed 004 Table 2
        assert table["MAP~A(s)"] > 0.95 and table["AAP~A(t)"] > 0.95
