"""The audit's contradictions and transitivity tables, over
:mod:`crowdprefs.campaign.transitivity`.

:func:`contradictions`: non-transitive verdict triples per query, and :func:`transitivity`: how
often complete triples violate transitivity, per query (verdicts) and per worker (their own
answers).
"""

from __future__ import annotations

import pandas as pd

from crowdprefs.campaign.aggregate import usable
from crowdprefs.campaign.sorting import contradictions as triple_contradictions
from crowdprefs.campaign.transitivity import violation_rates


def contradictions(pairs: pd.DataFrame) -> pd.DataFrame:
    """Non-transitive verdict triples per query (:func:`crowdprefs.campaign.sorting.contradictions`)
    from aggregated sorting pairs: ``query, a, b, c``. A pair decided twice keeps its last one."""
    sort = pairs[pairs["kind"] == "sort"].sort_values("iteration", kind="stable")
    by_query: dict[str, dict[tuple, int]] = {}
    for query, x, y, verdict in zip(
        sort["query"], sort["x"], sort["y"], sort["verdict"].astype(int), strict=True
    ):
        by_query.setdefault(query, {})[(x, y)] = int(verdict)
    rows = []
    for query in sorted(by_query):
        known = by_query[query]
        documents = sorted({d for pair in known for d in pair})
        rows.extend((query, *t) for t in triple_contradictions(documents, known))
    return pd.DataFrame(rows, columns=["query", "a", "b", "c"])


def transitivity(answers: pd.DataFrame, pairs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Transitivity-violation rates (:func:`crowdprefs.campaign.transitivity.violation_rates`:
    ``triples``, ``violations``, ``rate``): ``queries`` over the aggregated verdicts of the
    sorting pairs, indexed by query; ``workers`` over each worker's own usable answers to
    sorting pairs, indexed by ``worker_id`` (every worker; rate NaN without a complete
    triple). A complete triple is three candidates whose three
    pairs were judged; it violates transitivity when no weak order fits the judgments (a > b,
    b > c but a ≤ c; a = b, b = c but a ≠ c; …)."""
    sort = pairs[pairs["kind"] == "sort"]
    queries = violation_rates(sort[["query", "x", "y"]].assign(value=sort["verdict"]))
    good = usable(answers)
    good = good[good["kind"] == "sort"]
    judged = good[["worker_id", "query", "x", "y"]].assign(value=good["score"])
    everyone = pd.Index(sorted(answers["worker_id"].unique()), name="worker_id")
    workers = violation_rates(judged, by="worker_id").reindex(everyone)
    workers[["triples", "violations"]] = workers[["triples", "violations"]].fillna(0).astype(int)
    return {"queries": queries, "workers": workers}


def overall_rate(rates: pd.DataFrame) -> float:
    """Violations over complete triples, summed over the rows (NaN without a triple)."""
    triples = int(rates["triples"].sum())
    return float(rates["violations"].sum() / triples) if triples else float("nan")
