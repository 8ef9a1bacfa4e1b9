"""From worker answers to one verdict per pair (the preference-judgments paper §3.2).

For a pair (x, y) every answer gives *x* the rank score +1 when x was preferred, −1 when y was
preferred and 0 for "equally similar"; *y* gets the opposite score. A pair's answers are thus
summarised by three counts: ``more`` (x preferred), ``equal`` and ``less`` (y preferred).

Three rules give a verdict (+1 x more similar, 0 equal, −1 x less similar), the first two from
the pair's counts alone:

``mann-whitney`` (default; the preference-judgments paper §3.2)
    The two rank samples are compared with a Mann-Whitney U test; a significant difference
    (p < α) gives the side with the larger mean rank, otherwise "equal". With n answers per pair
    the samples are x = (+1)·more, 0·equal, (−1)·less and y its negation, so

        U₁ = more² + 2·more·equal + more·less + equal²/2,

    the tie term of the normal approximation is Σ(t³ − t) over the combined counts
    (more+less, 2·equal, more+less), and the p-values equal ``scipy.stats.mannwhitneyu`` with
    the same ``alternative``, ``method`` and continuity correction (tested on random samples).
    What it means for groups: with the defaults (α = 0.05, two-sided, asymptotic) and 10
    answers, 3–0 with 7 "equal" separates two candidates (p = 0.019) but 2–0 with 8 "equal"
    (p = 0.058), 4–1 with 5 (p = 0.071) and 3–1 with 6 do not: a lead of about three clean
    votes is needed, so the lists have fewer, larger groups than the margin-2 rule gives.

``margin``
    x wins when at least *m* more workers preferred it than preferred y (and vice versa); otherwise
    "equal". A margin of 2 reproduces the lists published with the preference-judgments paper, which
    no conventional Mann-Whitney level does. Smaller margins give more, smaller groups.

``bradley-terry``
    Not from the pair's counts: one fit of the tie-aware Bradley–Terry model with per-worker
    reliability (:mod:`crowdprefs.campaign.bradley_terry`; ``ties`` = ``davidson`` or
    ``rao-kupper``) on every usable answer of every sorting pair so far (all iterations and
    queries: the workers' reliabilities are shared across queries; attention checks are left
    out), each answer read on the sides it was shown. A pair's verdict is the sign of
    s_x − s_y when the two-sided test of equal scores (the null variance of the difference)
    rejects at level α, else "equal"; ``p_value`` is that test's. An answer from a careless
    worker weighs less, and a pair's verdict borrows from the comparisons of x and y with the
    other candidates. Attention checks, outside the fit, get the Mann-Whitney verdict of their
    own answers at the same α (:func:`fitted_verdicts`).

Everything is vectorised over pairs: a million pairs are decided without a Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import lazy_loader
import numpy as np

from crowdprefs.campaign.settings import check_values
from crowdprefs.errors import InputError

pd = lazy_loader.load("pandas")  # imported on first use

Rule = Literal["mann-whitney", "margin", "bradley-terry"]
Alternative = Literal["two-sided", "greater", "less"]
Method = Literal["asymptotic", "exact", "auto"]


@dataclass(frozen=True)
class AggregationRule:
    """How answers become a verdict. See the module docstring for the meaning of each rule."""

    rule: Rule = "mann-whitney"
    alpha: float = 0.05
    sided: Literal["two-sided", "one-sided"] = "two-sided"
    method: Method = "asymptotic"
    continuity: bool = True
    margin: int = 2
    ties: Literal["davidson", "rao-kupper"] = "davidson"

    def __post_init__(self) -> None:
        check_values("aggregation", self)


def _counts(more, equal, less) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    arrays = [np.asarray(a, dtype=np.int64) for a in (more, equal, less)]
    if any((a < 0).any() for a in arrays):
        raise InputError("answer counts must be non-negative")
    return np.broadcast_arrays(*arrays)


@lru_cache(maxsize=64)
def _mwu_sf_table(n1: int, n2: int) -> np.ndarray:
    """``P(U ≥ u)`` for u = 0 … n1·n2 under H0 without ties (the exact null distribution).

    Built with the recurrence f(u; m, n) = m/(m+n)·f(u−n; m−1, n) + n/(m+n)·f(u; m, n−1).
    """
    size = n1 * n2 + 1
    # pmf[m][n] for the current m, as a table over n = 0..n2
    pmf = [np.zeros(size) for _ in range(n2 + 1)]
    for n in range(n2 + 1):
        pmf[n][0] = 1.0  # m = 0: U is always 0
    for m in range(1, n1 + 1):
        new = [np.zeros(size) for _ in range(n2 + 1)]
        new[0][0] = 1.0  # n = 0: U is always 0
        for n in range(1, n2 + 1):
            shifted = np.zeros(size)
            shifted[n:] = pmf[n][: size - n]
            new[n] = (m * shifted + n * new[n - 1]) / (m + n)
        pmf = new
    return np.cumsum(pmf[n2][::-1])[::-1]


def mann_whitney(
    more,
    equal,
    less,
    *,
    alternative: Alternative = "two-sided",
    method: Method = "asymptotic",
    continuity: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    """Mann-Whitney U of x's rank sample against y's, from the answer counts of each pair.

    Returns ``(U1, p)`` arrays equal to ``scipy.stats.mannwhitneyu(x, y, ...)`` for
    x = [+1]*more + [0]*equal + [−1]*less and y = −x. ``alternative="greater"`` tests that x
    ranks higher (is more similar). ``method="auto"`` chooses as scipy does: exact when both
    samples have at most 8 values and there are no ties, asymptotic otherwise. Without the
    continuity correction, a pair whose answers are all "equal" has p = 0/0 = NaN, as in
    scipy; :func:`verdicts` reads that as "equal".
    """
    p_, e, q = (a.astype(np.float64) for a in _counts(more, equal, less))
    n = p_ + e + q
    if (n == 0).any():
        raise InputError("every pair needs at least one answer to be aggregated")
    u1 = p_ * p_ + 2 * p_ * e + p_ * q + e * e / 2
    u2 = n * n - u1
    if alternative == "greater":
        u, factor = u1, 1.0
    elif alternative == "less":
        u, factor = u2, 1.0
    else:
        u, factor = np.maximum(u1, u2), 2.0

    total = 2 * n
    sides, zeros = p_ + q, 2 * e
    tie_term = 2 * (sides**3 - sides) + (zeros**3 - zeros)
    if method == "auto":
        no_ties = (tie_term == 0) & (n <= 8)
        exact = no_ties
    else:
        exact = np.full(n.shape, method == "exact")

    p = np.empty(n.shape)
    asym = ~exact
    if asym.any():
        s = np.sqrt(
            n[asym] ** 2
            / 12
            * ((total[asym] + 1) - tie_term[asym] / (total[asym] * (total[asym] - 1)))
        )
        numerator = u[asym] - n[asym] ** 2 / 2 - (0.5 if continuity else 0.0)
        from scipy import special  # here: reading a project's state never waits for scipy

        with np.errstate(divide="ignore", invalid="ignore"):
            p[asym] = special.ndtr(-(numerator / s))
    for size in np.unique(n[exact]).astype(int):
        rows = exact & (n == size)
        p[rows] = _mwu_sf_table(size, size)[u[rows].astype(np.int64)]
    return u1, np.clip(p * factor, 0.0, 1.0)


def verdicts(
    more, equal, less, rule: AggregationRule = AggregationRule()
) -> tuple[np.ndarray, np.ndarray]:
    """One verdict per pair: +1 (x more similar), 0 (equal) or −1, with the p-value used.

    For the margin rule the p-value column is NaN. A one-sided Mann-Whitney test is run in
    the observed direction (x ≠ y by the side with more votes) at level α. The
    ``bradley-terry`` rule needs the answers themselves (:func:`fitted_verdicts`) and is refused.
    """
    if rule.rule == "bradley-terry":
        raise InputError(
            "the bradley-terry rule decides a pair from every answer of its query, "
            "not from the pair's own counts"
        )
    more, equal, less = _counts(more, equal, less)
    lead = more - less
    if rule.rule == "margin":
        verdict = np.where(lead >= rule.margin, 1, np.where(-lead >= rule.margin, -1, 0))
        return verdict.astype(np.int8), np.full(lead.shape, np.nan)
    if rule.sided == "two-sided":
        _, p = mann_whitney(more, equal, less, method=rule.method, continuity=rule.continuity)
    else:
        _, p_greater = mann_whitney(
            more, equal, less, alternative="greater", method=rule.method, continuity=rule.continuity
        )
        _, p_less = mann_whitney(
            more, equal, less, alternative="less", method=rule.method, continuity=rule.continuity
        )
        p = np.where(lead >= 0, p_greater, p_less)
    verdict = np.where(p < rule.alpha, np.sign(lead), 0)
    return verdict.astype(np.int8), p


def fewest_deciding(rule: AggregationRule, most: int = 50) -> int | None:
    """The fewest answers per pair with which ``rule`` can give a verdict other than equal (all
    answers preferring one side), ``None`` when not even ``most`` can; 1 for the
    ``bradley-terry`` rule, which decides from every answer of the query. Mann-Whitney's
    smallest p-value shrinks with the answers: two-sided at α = 0.05 it needs 3 answers (4 with
    the exact method, 5 at α = 0.01); the margin rule needs its margin."""
    if rule.rule == "bradley-terry":
        return 1
    for answers in range(1, most + 1):  # the exact test's table grows with the answers
        verdict, _ = verdicts([answers], [0], [0], rule)
        if verdict[0] != 0:
            return answers
    return None


VERDICTS = (1, 0, -1)
"""The verdicts in the column order of :func:`change_costs`."""


def _decided(rows: np.ndarray, rule: AggregationRule) -> np.ndarray:
    """The verdicts of count rows (k × 3), 0 for a row without answers."""
    decided = np.zeros(len(rows), np.int8)
    answered = rows.sum(axis=1) > 0
    if answered.any():
        decided[answered] = verdicts(*rows[answered].T, rule)[0]
    return decided


def _last(start: np.ndarray, step, stop: np.ndarray, holds, rule: AggregationRule) -> np.ndarray:
    """Per line of count rows ``start + k·step`` (k = 0 … ``stop``), the last k whose verdict
    ``holds`` (−1 when none), for a ``holds`` true on a prefix of each line: a binary search
    run in lockstep over every line, about log₂(stop) calls of :func:`verdicts`."""
    step = np.asarray(step, np.int64)
    low, high = np.full(len(start), -1, np.int64), stop + 1  # holds at low, not at high
    while True:
        open_ = np.flatnonzero(high - low > 1)
        if not len(open_):
            return low
        middle = (low[open_] + high[open_]) // 2
        true = holds(_decided(start[open_] + middle[:, None] * step, rule))
        low[open_[true]] = middle[true]
        high[open_[~true]] = middle[~true]


def _lines(counts: np.ndarray, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per count row, ``lengths`` + 1 lines: the row's index (``owner``) and k = 0 … length."""
    owner = np.repeat(np.arange(len(counts)), lengths + 1)
    first = np.cumsum(lengths + 1) - (lengths + 1)
    return owner, np.arange(len(owner)) - first[owner]


def _removal_costs(unique: np.ndarray, rule: AggregationRule) -> np.ndarray:
    """:func:`change_costs`' removals of distinct count rows, each verdict searched for on
    every number b of "equal" answers kept. A verdict +1 keeps every "more" answer and the
    most "less" answers with which x still wins (a "more" answer never takes a win away, a
    "less" answer never gives one); −1 the mirror; "equal" keeps every answer of both sides
    when that is equal, else every answer of the losing side and the most of the winning
    side that leave it equal (the band of "equal" rows widens with the losing side)."""
    owner, b = _lines(unique, unique[:, 1])
    more, less = unique[owner, 0], unique[owner, 2]
    none = np.zeros_like(b)
    kept = np.full((len(unique), 3), -1, np.int64)

    def keep(column: int, rows: np.ndarray, where) -> None:
        where = where & (rows.sum(axis=1) > 0)
        np.maximum.at(kept[:, column], owner[where], rows[where].sum(axis=1))

    wins = np.column_stack([more, b, none])
    c = _last(wins, (0, 0, 1), less, lambda v: v == 1, rule)
    keep(0, wins + np.outer(np.maximum(c, 0), (0, 0, 1)), c >= 0)
    loses = np.column_stack([none, b, less])
    a = _last(loses, (1, 0, 0), more, lambda v: v == -1, rule)
    keep(2, loses + np.outer(np.maximum(a, 0), (1, 0, 0)), a >= 0)
    corner = np.column_stack([more, b, less])
    decided = _decided(corner, rule)
    keep(1, corner, decided == 0)
    for side, start, step, limit in ((1, loses, (1, 0, 0), more), (-1, wins, (0, 0, 1), less)):
        lines = np.flatnonzero(decided == side)
        k = _last(start[lines], step, limit[lines], lambda v, s=side: v != s, rule)
        rows = start[lines] + np.outer(k, step)
        keep_rows = np.zeros(len(owner), bool)
        keep_rows[lines] = _decided(rows, rule) == 0
        full = np.zeros_like(corner)
        full[lines] = rows
        keep(1, full, keep_rows)
    return np.where(kept > 0, unique.sum(axis=1)[:, None] - kept, -1)


def _flip_costs(unique: np.ndarray, rule: AggregationRule) -> np.ndarray:
    """:func:`change_costs`' changes of distinct count rows: for every number b of "equal"
    answers after the change, the rows (a, b, n − b − a) are decided −1, then equal, then +1
    as a grows (a "less" answer turned "more" only strengthens x's case at a fixed number of
    answers and ties), so two searches find the verdicts' ranges of a and the cheapest a in
    each is the one nearest the pair's own ``more`` (the cost is convex in a)."""
    total = unique.sum(axis=1)
    owner, b = _lines(unique, total)
    rest = total[owner] - b
    start = np.column_stack([np.zeros_like(b), b, rest])
    step = (1, 0, -1)
    up = _last(start, step, rest, lambda v: v != 1, rule) + 1
    down = _last(start, step, rest, lambda v: v == -1, rule)
    best = np.full((len(unique), 3), np.iinfo(np.int64).max)
    more, equal, less = unique[owner].T
    for column, low, high in ((0, up, rest), (1, down + 1, up - 1), (2, 0 * rest, down)):
        a = np.clip(more, low, high)
        cost = np.maximum(a - more, 0) + np.maximum(b - equal, 0) + np.maximum(rest - a - less, 0)
        reached = low <= high
        np.minimum.at(best[:, column], owner[reached], cost[reached])
    return np.where(best == np.iinfo(np.int64).max, -1, best)


def change_costs(
    more, equal, less, rule: AggregationRule = AggregationRule()
) -> tuple[np.ndarray, np.ndarray]:
    """Per pair and per verdict of :data:`VERDICTS` (+1, 0, −1): the fewest of the pair's answers
    whose removal, and separately whose change to another choice, gives it that verdict under
    ``rule``; two (pairs × 3) arrays, −1 for its own verdict and where no removal (change) can.

    Exact for the rules that decide a pair from its own counts (``margin``, ``mann-whitney``):
    a removal leaves counts (a, b, c) ≤ (more, equal, less) with at least one answer, at cost
    n − (a + b + c); a change keeps n and reaches (a, b, c) at cost
    max(0, a − more) + max(0, b − equal) + max(0, c − less) (each changed answer moves one unit
    from one count to another). Nothing is enumerated: both rules' verdicts move monotonically
    along a count (a "more" answer added, or a "less" answer taken away or turned "more",
    never takes a win of x away; the margin rule reads more − less; for Mann-Whitney, at a
    fixed number of answers and ties, U grows with x's lead while its null variance stays, and
    for a removal of one side's answer this was checked for every row of up to 150 answers at
    every setting, 30 with the exact method), so per number of "equal" answers a binary search
    finds where each verdict starts (:func:`_removal_costs`, :func:`_flip_costs`): about
    (equal + 1)·log₂ n, resp. (n + 1)·log₂ n verdicts per distinct count row instead of the
    (more + 1)(equal + 1)(less + 1), resp. (n + 1)(n + 2)/2, reachable rows, and the answers
    equal those of deciding every reachable row (a test compares them on every setting).
    The ``bradley-terry`` rule decides from every answer of the query and is refused
    (its approximation: :func:`crowdprefs.campaign.bradley_terry.verdict_fragility`).
    """
    if rule.rule == "bradley-terry":
        raise InputError(
            "the bradley-terry rule decides a pair from every answer of its query: its "
            "fragility is approximated from the fit"
        )
    counts = np.column_stack(_counts(more, equal, less)).reshape(-1, 3)
    if not len(counts):
        return np.zeros((0, 3), np.int64), np.zeros((0, 3), np.int64)
    unique, inverse = np.unique(counts, axis=0, return_inverse=True)
    if (unique.sum(axis=1) == 0).any():
        raise InputError("every pair needs at least one answer to be aggregated")
    own = 1 - verdicts(*unique.T, rule)[0].astype(np.int64)  # +1, 0, −1 → column 0, 1, 2
    tables = []
    for table in (_removal_costs(unique, rule), _flip_costs(unique, rule)):
        table[np.arange(len(unique)), own] = -1
        tables.append(table[inverse.ravel()])
    return tables[0], tables[1]


def fewest_changes(
    more, equal, less, rule: AggregationRule = AggregationRule()
) -> tuple[np.ndarray, np.ndarray]:
    """The fragility of each pair's verdict: ``(removals, flips)``, the fewest of its answers
    whose removal, and separately whose change to another choice, gives the pair another
    verdict under ``rule`` (−1 when none can): the cheapest of :func:`change_costs`. In the
    spirit of the fragility index of clinical trials (Walsh et al., *The statistical
    significance of randomized controlled trial results is frequently fragile*, J. Clin.
    Epidemiol. 2014), here for three outcomes and either direction."""
    removal, flip = change_costs(more, equal, less, rule)
    return cheapest(removal), cheapest(flip)


def cheapest(costs: np.ndarray) -> np.ndarray:
    """Per row of a costs table (−1 = unreachable), the smallest cost; −1 when none."""
    top = np.iinfo(np.int64).max
    best = np.where(costs < 0, top, costs).min(axis=1, initial=top)
    return np.where(best == top, -1, best)


def inter_agreement(more, equal, less) -> np.ndarray:
    """The preference-judgments paper §5.3's inter-agreement score of each pair's answers, in [0,
    1].

    Over the n(n−1)/2 pairs of answers: 2 points when two answers agree, 1 when one says
    "equal" and the other picks a side, 0 when they pick opposite sides; divided by n(n−1)
    (90 for 10 answers). NaN for pairs with fewer than two answers.
    """
    p, e, q = (a.astype(np.float64) for a in _counts(more, equal, less))
    n = p + e + q
    agree = p * (p - 1) + e * (e - 1) + q * (q - 1)  # 2 points × C(k, 2) for each option
    partial = e * (p + q)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(n >= 2, (agree + partial) / (n * (n - 1)), np.nan)


def tally(keys: pd.Series, values: pd.Series, categories) -> pd.DataFrame:
    """Counts of each category per key (a vectorised crosstab: one ``bincount``), keys sorted.

    Values outside ``categories`` are not counted.
    """
    key_codes, key_index = pd.factorize(keys, sort=True)
    value_codes = pd.Categorical(values, categories=list(categories)).codes
    known = value_codes >= 0
    width = len(categories)
    flat = np.bincount(
        key_codes[known] * width + value_codes[known], minlength=len(key_index) * width
    )
    return pd.DataFrame(flat.reshape(-1, width), index=key_index, columns=list(categories))


def count_answers(answers: pd.DataFrame) -> pd.DataFrame:
    """Per pair, the counts ``more``, ``equal``, ``less`` from a frame of ``pair_id, score``.

    ``score`` is the answer from x's point of view (+1, 0, −1). The result is indexed by
    ``pair_id`` with the three integer count columns.
    """
    bad = ~answers["score"].isin((-1, 0, 1))
    if bad.any():
        raise InputError(
            f"answer scores must be -1, 0 or +1; got {answers.loc[bad, 'score'].iloc[0]!r}"
        )
    counts = tally(answers["pair_id"], answers["score"], (1, 0, -1))
    counts.columns = ["more", "equal", "less"]
    counts.index.name = "pair_id"
    return counts.astype(np.int64)


def usable(answers: pd.DataFrame) -> pd.DataFrame:
    """The answers that count: not rejected and not empty (``status``, ``choice``)."""
    return answers[(answers["status"] != "rejected") & (answers["choice"] != "")]


def pair_verdicts(answers: pd.DataFrame, rule: AggregationRule = AggregationRule()) -> pd.DataFrame:
    """Per pair:
    ``iteration, query, x, y, kind, pivot_known, more, equal, less, verdict, p_value, agreement``
    from the usable answers of an answers frame (one row per answer with
    ``pair_id, iteration, query, x, y, kind, pivot_known, status, choice, score``, as
    :data:`crowdprefs.results_file.FRAME_COLUMNS`), decided with ``rule`` (the preference-judgments
    paper §3.2) and scored with the §5.3 inter-agreement. Indexed by ``pair_id``; pairs without
    usable answers are left out.
    """
    good = usable(answers)
    info = good.groupby("pair_id")[["iteration", "query", "x", "y", "kind", "pivot_known"]].first()
    pairs = info.join(count_answers(good.assign(score=good["score"].astype(int))))
    if rule.rule == "bradley-terry":  # each iteration's pairs from the answers so far
        pairs["verdict"], pairs["p_value"] = np.int8(0), np.nan
        for iteration in pairs["iteration"].unique():
            batch = pairs.index[pairs["iteration"] == iteration]
            so_far = good[good["iteration"] <= iteration]
            decided = fitted_verdicts(so_far, pairs, batch, rule)
            pairs.loc[batch, "verdict"], pairs.loc[batch, "p_value"] = decided
    else:
        pairs["verdict"], pairs["p_value"] = verdicts(
            pairs["more"], pairs["equal"], pairs["less"], rule
        )
    pairs["agreement"] = inter_agreement(pairs["more"], pairs["equal"], pairs["less"])
    return pairs


@dataclass(frozen=True)
class _Coded:
    """Sorting answers coded for the Bradley–Terry fit: each answer's shown ``first``,
    ``second``, ``outcome`` and ``worker``, each item's ``block`` (query), the sorting pairs'
    ``x`` and ``y`` items (indexed like ``pairs``), and the counts of items and workers."""

    first: np.ndarray
    second: np.ndarray
    outcome: np.ndarray
    worker: np.ndarray
    block: np.ndarray
    pairs: pd.Index
    x: np.ndarray
    y: np.ndarray
    items: int
    workers: int


def _coded_answers(answers: pd.DataFrame, sorting: pd.DataFrame) -> _Coded | None:
    """The usable ``answers`` of the ``sorting`` pairs, coded (each answer read on the sides it
    was shown); ``None`` when there are none."""
    row = sorting.index.get_indexer(answers["pair_id"])
    fitted = row >= 0
    if not fitted.any():
        return None
    query = sorting["query"].to_numpy()
    items = pd.MultiIndex.from_arrays(
        [np.concatenate([query, query]), np.concatenate([sorting["x"], sorting["y"]])]
    )
    codes, unique = pd.factorize(items)
    x, y = codes[: len(sorting)], codes[len(sorting) :]
    row = row[fitted]
    a_is_x = answers["a_is_x"].to_numpy()[fitted].astype(bool)
    score = answers["score"].to_numpy()[fitted].astype(np.int64)
    workers, names = pd.factorize(answers["worker_id"].to_numpy()[fitted])
    return _Coded(
        first=np.where(a_is_x, x[row], y[row]),
        second=np.where(a_is_x, y[row], x[row]),
        outcome=np.where(a_is_x, score, -score),
        worker=workers,
        block=pd.factorize(unique.get_level_values(0))[0],
        pairs=sorting.index,
        x=x,
        y=y,
        items=len(unique),
        workers=len(names),
    )


def _fitted(coded: _Coded, rule: AggregationRule):
    """One fit of the tie-aware Bradley–Terry model on the coded answers; the line saying the
    fit dropped worker reliabilities, once per process."""
    from crowdprefs.campaign import bradley_terry  # here: scipy loads only for this rule

    fit = bradley_terry.fit_bradley_terry(
        coded.first, coded.second, coded.outcome, coded.worker, coded.block,
        n_items=coded.items, n_workers=coded.workers, ties=rule.ties, alpha=rule.alpha,
    )  # fmt: skip
    line = bradley_terry.fallback_line(fit)  # once per process, however many refits
    if line is not None:
        from crowdprefs import progress

        progress.note(f"bradley-terry: {line}")
    return fit


def fitted_fragility(
    answers: pd.DataFrame, pairs: pd.DataFrame, rule: AggregationRule
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For the ``bradley-terry`` rule: per sorting pair of ``pairs`` (in their order), the
    approximate fewest answers whose removal, resp. change, changes its verdict in one fit on
    every answer, and whether a refit confirmed both (an upper bound;
    :func:`crowdprefs.campaign.bradley_terry.verdict_fragility`). −1 where none was found;
    inputs as for :func:`fitted_verdicts`."""
    from crowdprefs.campaign import bradley_terry

    sorting = pairs[pairs["kind"] == "sort"]
    empty = np.full(len(sorting), -1, np.int64)
    coded = _coded_answers(answers, sorting)
    if coded is None:
        return empty, empty.copy(), np.zeros(len(sorting), bool)
    fit = _fitted(coded, rule)
    found = bradley_terry.verdict_fragility(
        fit, coded.first, coded.second, coded.outcome, coded.worker, coded.block,
        coded.x, coded.y, alpha=rule.alpha,
    )  # fmt: skip
    confirmed = found.removals_confirmed & found.flips_confirmed
    return found.removals, found.flips, confirmed


def fitted_verdicts(
    answers: pd.DataFrame, pairs: pd.DataFrame, decide, rule: AggregationRule
) -> tuple[np.ndarray, np.ndarray]:
    """The ``bradley-terry`` rule's verdicts and p-values of the pairs ``decide`` (pair ids).

    ``answers``: usable answers ``pair_id, worker_id, score`` (from x's point of view) and
    ``a_is_x`` *as the judge was shown it*; ``pairs``: every pair they or ``decide`` name,
    indexed by ``pair_id``, with ``query, x, y, kind``. Sorting pairs are decided by one fit on
    every sorting answer (:func:`crowdprefs.campaign.bradley_terry.pair_verdicts`), attention
    checks by the Mann-Whitney test of their own answers at the same α (module docstring).
    When worker reliabilities are not identifiable the fit drops them and one line on stderr
    says so (once per process).
    """
    decide = pd.Index(decide)
    verdict, p = np.zeros(len(decide), np.int8), np.full(len(decide), np.nan)
    is_sort = pairs["kind"] == "sort"
    sort = is_sort.reindex(decide).fillna(False).to_numpy(bool)
    coded = _coded_answers(answers, pairs[is_sort])
    if sort.any() and coded is not None:
        fit = _fitted(coded, rule)
        target = coded.pairs.get_indexer(decide[sort])
        verdict[sort], p[sort] = fit.verdicts(coded.x[target], coded.y[target], rule.alpha)
    checks = decide[~sort]
    if len(checks):
        own = answers[answers["pair_id"].isin(checks)]
        counts = count_answers(own.assign(score=own["score"].astype(int)))
        counts = counts.reindex(checks, fill_value=0).to_numpy()
        answered = counts.sum(axis=1) > 0
        decided = np.zeros(len(checks), np.int8), np.full(len(checks), np.nan)
        decided[0][answered], decided[1][answered] = verdicts(
            *counts[answered].T, AggregationRule(alpha=rule.alpha)
        )
        verdict[~sort], p[~sort] = decided
    return verdict, p
