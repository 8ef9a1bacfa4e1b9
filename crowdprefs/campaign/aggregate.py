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

Each rule is an object of :mod:`crowdprefs.campaign.rules` (one module per rule, looked up by
name in its registry); :class:`AggregationRule` holds the ``[aggregation]`` settings and its
:attr:`~AggregationRule.decider` is the rule, which the functions here ask.

Everything is vectorised over pairs: a million pairs are decided without a Python loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import lazy_loader

from crowdprefs.campaign import rules
from crowdprefs.campaign.rules.base import counts_of
from crowdprefs.campaign.rules.mann_whitney import Alternative, Method, mann_whitney
from crowdprefs.campaign.settings import check_values
from crowdprefs.errors import InputError

if TYPE_CHECKING:
    from crowdprefs.campaign.rules.base import Rule as RuleObject

np = lazy_loader.load("numpy")  # imported on first use
pd = lazy_loader.load("pandas")  # imported on first use

__all__ = [
    "VERDICTS", "AggregationRule", "Alternative", "Method", "Rule", "change_costs", "cheapest",
    "count_answers", "fewest_changes", "fewest_deciding", "fitted_fragility", "fitted_verdicts",
    "inter_agreement", "mann_whitney", "pair_verdicts", "tally", "usable", "verdicts",
]  # fmt: skip

Rule = str
"""The name of a registered rule (:data:`crowdprefs.campaign.rules.NAMES`)."""


@dataclass(frozen=True)
class AggregationRule:
    """How answers become a verdict: the ``[aggregation]`` settings. See the module docstring
    for the meaning of each rule; :attr:`decider` is the rule itself."""

    rule: Rule = "mann-whitney"
    alpha: float = 0.05
    sided: Literal["two-sided", "one-sided"] = "two-sided"
    method: Method = "asymptotic"
    continuity: bool = True
    margin: int = 2
    ties: Literal["davidson", "rao-kupper"] = "davidson"

    def __post_init__(self) -> None:
        check_values("aggregation", self)

    @property
    def decider(self) -> RuleObject:
        """The rule object named by ``rule`` (:mod:`crowdprefs.campaign.rules`)."""
        return rules.rule_of(self.rule)


def verdicts(
    more, equal, less, rule: AggregationRule = AggregationRule()
) -> tuple[np.ndarray, np.ndarray]:
    """One verdict per pair: +1 (x more similar), 0 (equal) or −1, with the p-value used.

    For the margin rule the p-value column is NaN. A one-sided Mann-Whitney test is run in
    the observed direction (x ≠ y by the side with more votes) at level α. A rule that decides
    a whole query (``bradley-terry``) needs the answers themselves (:func:`fitted_verdicts`)
    and is refused.
    """
    return rule.decider.verdicts(more, equal, less, rule)


def fewest_deciding(rule: AggregationRule, most: int = 50) -> int | None:
    """The fewest answers per pair with which ``rule`` can give a verdict other than equal (all
    answers preferring one side), ``None`` when not even ``most`` can; 1 for the
    ``bradley-terry`` rule, which decides from every answer of the query. Mann-Whitney's
    smallest p-value shrinks with the answers: two-sided at α = 0.05 it needs 3 answers (4 with
    the exact method, 5 at α = 0.01); the margin rule needs its margin."""
    return rule.decider.fewest_deciding(rule, most)


VERDICTS = (1, 0, -1)
"""The verdicts in the column order of :func:`change_costs`."""


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
    return rule.decider.change_costs(more, equal, less, rule)


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
    p, e, q = (a.astype(np.float64) for a in counts_of(more, equal, less))
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
    if rule.decider.whole_query:  # each iteration's pairs from the answers so far
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


def fitted_fragility(
    answers: pd.DataFrame, pairs: pd.DataFrame, rule: AggregationRule
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For a rule that decides a whole query (``bradley-terry``): per sorting pair of ``pairs``
    (in their order), the approximate fewest answers whose removal, resp. change, changes its
    verdict in one fit on every answer, and whether a refit confirmed both (an upper bound;
    :func:`crowdprefs.campaign.bradley_terry.verdict_fragility`). −1 where none was found;
    inputs as for :func:`fitted_verdicts`."""
    return rule.decider.fragility(answers, pairs, rule)


def fitted_verdicts(
    answers: pd.DataFrame, pairs: pd.DataFrame, decide, rule: AggregationRule
) -> tuple[np.ndarray, np.ndarray]:
    """The verdicts and p-values of the pairs ``decide`` (pair ids) under a rule that decides a
    whole query (``bradley-terry``).

    ``answers``: usable answers ``pair_id, worker_id, score`` (from x's point of view) and
    ``a_is_x`` *as the judge was shown it*; ``pairs``: every pair they or ``decide`` name,
    indexed by ``pair_id``, with ``query, x, y, kind``. Sorting pairs are decided by one fit on
    every sorting answer (:func:`crowdprefs.campaign.bradley_terry.fit_verdicts`), attention
    checks by the Mann-Whitney test of their own answers at the same α (module docstring).
    When worker reliabilities are not identifiable the fit drops them and one line on stderr
    says so (once per process).
    """
    return rule.decider.decide(answers, pairs, decide, rule)
