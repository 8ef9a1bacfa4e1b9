"""How much two ground truths agree on the systems: Kendall's τ between the rankings they give.

Two ground truths of the same queries (e.g. the crowd's lists and an expert's) may order the
candidates differently and still rank the retrieval systems alike, which is what an evaluation
needs of them (Voorhees, *Variations in relevance judgments and the measurement of retrieval
effectiveness*, 2000). :func:`ranking_agreement` scores the runs against each truth on the
queries both judge and compares the two rankings of the systems by their mean scores with
Kendall's τ-b (ties counted as in :func:`scipy.stats.kendalltau`).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pandas as pd
from scipy import stats

from crowdprefs.errors import InputError
from crowdprefs.evaluation import measures as M
from crowdprefs.evaluation.evaluate import evaluate

AGREEMENT_COLUMNS = ["measure", "systems", "queries", "tau", "p_value", "swaps"]


def ranking_agreement(
    runs: pd.DataFrame,
    a: pd.DataFrame,
    b: pd.DataFrame,
    measures: Iterable[str | M.Measure] = ("AG@5",),
    k: int | None = None,
) -> pd.DataFrame:
    """Per measure, Kendall's τ-b between the systems ranked by their mean score against
    truth ``a`` and against truth ``b`` (lists or levels), on the queries both truths judge.

    Returns ``[measure, systems, queries, tau, p_value, swaps]``: ``swaps`` counts the system
    pairs the two truths order oppositely; ``p_value`` is scipy's test of τ = 0 (NaN with fewer
    than two systems). ``measures`` and ``k`` as in :func:`crowdprefs.evaluation.measures.score`.
    """
    shared = set(a["query"]) & set(b["query"])
    if not shared:
        raise InputError("the two ground truths have no query in common")
    a, b = a[a["query"].isin(shared)], b[b["query"].isin(shared)]
    runs = runs[runs["query"].isin(shared)]
    if runs.empty:
        raise InputError("no run answers a query both ground truths judge")
    parsed = M.parse_measures(measures, k)
    means = [
        evaluate(runs, truth, parsed, test=None)
        .summary.pivot(index="system", columns="measure", values="mean")
        .sort_index()
        for truth in (a, b)
    ]
    rows = []
    for measure in (str(m) for m in parsed):
        x, y = means[0][measure].to_numpy(), means[1][measure].to_numpy()
        tau, p_value = stats.kendalltau(x, y) if len(x) > 1 else (np.nan, np.nan)
        upper = np.triu_indices(len(x), 1)
        dx, dy = np.subtract.outer(x, x)[upper], np.subtract.outer(y, y)[upper]
        rows.append(
            {
                "measure": measure,
                "systems": len(x),
                "queries": len(shared),
                "tau": float(tau),
                "p_value": float(p_value),
                "swaps": int((dx * dy < 0).sum()),
            }
        )
    return pd.DataFrame(rows, columns=AGREEMENT_COLUMNS)
