"""How often preferences are not transitive: per query, per worker, or per any other key.

People's weak preferences are often intransitive: a worker may find a and b equally similar to
the query, b and c too, yet prefer a to c. Over the judgments of a query (aggregated verdicts,
or one worker's own answers), a *complete triple* is a set of three candidates whose three
pairs are all judged; it *violates* transitivity when no weak order satisfies its judgments
(a > b > c but a ≤ c; a > b = c but a ≤ c; a = b > c but a ≤ c; a = b = c but a ≠ c), as
:func:`crowdprefs.campaign.sorting.contradictions` decides.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from crowdprefs.campaign.sorting import contradictions
from crowdprefs.errors import InputError

RATE_COLUMNS = ["triples", "violations", "rate"]


def _triples(x: np.ndarray, y: np.ndarray, value: np.ndarray) -> tuple[int, int]:
    """``(complete triples, violating triples)`` of one query's judged pairs.

    Complete triples are counted as trace(K³)/6 for the adjacency K of the judged pairs.
    """
    documents = sorted(set(x) | set(y))
    index = {d: i for i, d in enumerate(documents)}
    i = np.array([index[d] for d in x])
    j = np.array([index[d] for d in y])
    known = np.zeros((len(documents), len(documents)))
    known[i, j] = known[j, i] = 1.0
    complete = int(round(np.trace(known @ known @ known) / 6))
    if complete == 0:
        return 0, 0
    verdicts = dict(zip(zip(x, y, strict=True), value.tolist(), strict=True))
    return complete, len(contradictions(documents, verdicts))


def _may_close(pairs: pd.DataFrame, keys: list[str]) -> np.ndarray:
    """Per judged pair, whether its group (``keys``) can hold a complete triple: one with at
    least three documents judged twice or more (a triple's three corners are), found without
    a loop, so that the groups of a star of pairs around one pivot are not visited."""
    ends = pd.concat(
        [pairs[[*keys, end]].set_axis([*keys, "document"], axis=1) for end in ("x", "y")]
    )
    degree = ends.groupby([*keys, "document"], sort=False).size()
    corners = (degree >= 2).groupby(level=list(range(len(keys))), sort=False).sum()
    closing = corners.index[corners >= 3]
    group = pairs.set_index(keys).index
    return group.isin(closing)


def violation_rates(judgments: pd.DataFrame, by: str = "query") -> pd.DataFrame:
    """``triples``, ``violations`` and ``rate`` (violations / triples; NaN without a complete
    triple) per value of the column ``by``, summed over its queries.

    ``judgments`` has one row per judgment: ``query, x, y, value`` (+1 x more similar, 0 equal,
    −1 less) and the ``by`` column, e.g. aggregated verdicts with ``by="query"``, or single
    answers with ``by="worker"`` to rate each worker on their own answers. A pair judged more
    than once within a group counts with the sign of its mean judgment, whichever way round it
    was shown. Every value of ``by`` gets a row, in sorted order.
    """
    missing = [c for c in ("query", "x", "y", "value", by) if c not in judgments.columns]
    if missing:
        raise InputError(f"the judgments lack column(s) {', '.join(dict.fromkeys(missing))}")
    x, y = judgments["x"].to_numpy(), judgments["y"].to_numpy()
    value = judgments["value"].to_numpy(dtype=float)
    swap = x > y
    keys = list(dict.fromkeys([by, "query"]))
    pairs = pd.DataFrame(
        {
            **{key: judgments[key].to_numpy() for key in keys},
            "x": np.where(swap, y, x),
            "y": np.where(swap, x, y),
            "value": np.where(swap, -value, value),
        }
    )
    pairs = pairs.groupby([*keys, "x", "y"], sort=False)["value"].mean().reset_index()
    pairs["value"] = np.sign(pairs["value"]).astype(int)
    pairs = pairs[pairs.groupby(keys)["x"].transform("size").to_numpy() >= 3]
    counted = [
        (key[0], *_triples(group["x"].to_numpy(), group["y"].to_numpy(), group["value"].to_numpy()))
        for key, group in pairs[_may_close(pairs, keys)].groupby(keys, sort=False)
    ]
    rates = pd.DataFrame(counted, columns=[by, "triples", "violations"])
    rates = rates.astype({"triples": np.int64, "violations": np.int64})  # also when empty
    rates = rates.groupby(by)[["triples", "violations"]].sum()
    rates = rates.reindex(pd.Index(sorted(judgments[by].unique()), name=by), fill_value=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        rates["rate"] = np.where(
            rates["triples"] > 0, rates["violations"] / rates["triples"], np.nan
        )
    return rates[RATE_COLUMNS]
