"""Adaptive answers per pair: stop buying answers once a pair's verdict is settled.

The 2010 campaign of the preference-judgments paper (§4.2, §5.1) bought a fixed 10 answers for each
of its 281 pairs, although many pairs were settled long before the tenth answer (10 of 10 "equal",
or 8 to 0) and others were still ambiguous after it. Here a pair first gets ``initial`` answers;
after each round of answers (a *look*) it is *decided* or gets ``step`` more, up to ``maximum``.
Everything works on a pair's three answer counts (``more``: x preferred, ``equal``, ``less``: y
preferred; the preference-judgments paper §3.2) and is vectorised over pairs through a decision
table built once per rule over every state ``(more, equal, less)`` with at most ``maximum`` answers.

Two stopping rules:

``curtail`` (curtailment of the project's rule, exact or predictive)
    The verdict the project's :class:`~crowdprefs.campaign.aggregate.AggregationRule` gives after
    ``maximum`` answers is computed for every final state; walking back one answer at a time,
    each state gets the predictive probability of each final verdict: the remaining answers
    follow the Dirichlet-multinomial of a Dirichlet(``prior``, ``prior``, ``prior``) posterior
    on the pair's answer shares (a Pólya urn: the next answer is "more" with probability
    ``(more + prior) / (n + 3·prior)``). A pair is decided as soon as one verdict has predictive
    probability at least ``1 − epsilon`` (stochastic curtailment). With ``epsilon = 0`` (the
    default) that means every completion gives the same verdict: whatever the remaining answers
    say, the fixed design would give it, so a curtailed campaign gives exactly the verdicts (and
    lists) of the fixed design with ``maximum`` answers for the same answers, with fewer of
    them. With ``epsilon > 0`` a pair stops once the fixed design's verdict is predictable with
    probability ``1 − epsilon``, for any aggregation rule; the verdict is the predicted one.

``sequential`` (a group-sequential Mann-Whitney test with a stated error rate ``alpha``)
    At every look the pair's Mann-Whitney p-value (the preference-judgments paper §3.2; the
    project's sidedness, method and continuity correction) is compared with one nominal level α′ (a
    Pocock design): ``p <= α′`` declares the pair different (the side with more votes). α′ is the
    largest level for which the probability of a false "different" verdict on a truly equal pair
    stays at most ``alpha`` over the whole schedule of looks (``initial``, ``initial + step``, …,
    ``maximum``), computed exactly by propagating the answer counts (:func:`nominal_level`). A truly
    equal pair is one where a worker prefers x as often as y (p_more = p_less); how often workers
    answer "equal" on such pairs matters to a test on ternary answers, so the bound is taken over
    every p_equal from ``equal_share`` to 1 (default 0.5: half the answers of the 2010 campaign were
    "equal" overall, the preference-judgments paper §5.3, and truly equal pairs draw more of them;
    ``equal_share = 0`` makes the bound hold whatever p_equal is, at a cost in power). A pair not
    declared different is declared equal at ``maximum`` answers, or earlier when the predictive
    probability of still crossing the boundary by ``maximum`` is at most ``futility`` (stochastic
    curtailment; predictive law: the Dirichlet-multinomial of a Dirichlet(``prior``, ``prior``,
    ``prior``) posterior on the answer shares, i.e. a Pólya urn). Stopping for futility only removes
    chances to cross, so the error bound still holds; its price is power (truly different pairs
    called equal), given exactly by :func:`operating` and measured on whole campaigns by
    ``benchmarks/adaptive_vs_fixed.py``.

A third rule buys answers where they matter rather than saving them: :class:`FragilityRule`
(``[fragility]``) gives a pair ``step`` more answers, up to ``maximum``, while its verdict under
the project's rule is *fragile*: fewer than ``min_flips`` of its answers, changed to another
choice, would give it another verdict (:func:`~crowdprefs.campaign.aggregate.fewest_changes`).
It applies on its own (to the fixed design) or beside a stopping rule, a pair then wanting the
larger of the two counts (:func:`wanted_next`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

import lazy_loader

from crowdprefs.campaign.aggregate import AggregationRule, fewest_changes, verdicts
from crowdprefs.campaign.rules.mann_whitney import RULE as MANN_WHITNEY
from crowdprefs.campaign.settings import CONFIG_NAME, check_section, check_values
from crowdprefs.errors import InputError

np = lazy_loader.load("numpy")  # imported on first use

Method = Literal["curtail", "sequential"]
UNDECIDED = 2
"""Value of a decision table for a state where the pair needs more answers."""


@dataclass(frozen=True)
class StoppingRule:
    """When a pair stops getting answers, and which verdict it then gets.

    ``initial`` answers are asked first, then ``step`` more per round while the pair is
    undecided, never more than ``maximum`` in all. ``aggregation`` is the project's rule (the
    verdict ``curtail`` predicts; its test settings are those of ``sequential``); ``epsilon``
    belongs to ``curtail``, ``alpha``, ``equal_share`` and ``futility`` to ``sequential``, and
    ``prior`` (the Pólya urn's) to both (see the module doc).

    The defaults (4 + 2 + 2 + 2 answers up to 10, ``alpha = 0.3``, ``futility = 0.2``) are those
    with which ``benchmarks/adaptive_vs_fixed.py`` finds lists as good as the fixed 10 answers'
    (by ADR and order relations recovered) for about a third fewer answers (the Benchmarks
    page quotes its current figures), at the price of splitting more truly equal pairs.
    ``alpha = 0.3`` bounds the worst case (p_equal = 0.5); the fixed design's own Mann-Whitney
    at nominal 0.05 falsely separates 13.5% of truly equal pairs at p_equal = 0.5 (exact,
    :func:`operating`), because its tie correction makes a lead of three votes significant
    among many "equal" answers.
    """

    method: Method = "sequential"
    initial: int = 4
    step: int = 2
    maximum: int = 10
    alpha: float = 0.3
    equal_share: float = 0.5
    futility: float = 0.2
    prior: float = 1.0
    epsilon: float = 0.0
    aggregation: AggregationRule = field(default_factory=AggregationRule)

    def __post_init__(self) -> None:
        check_values("adaptive", self)
        if self.method == "off":
            raise InputError("[adaptive] a stopping rule is curtail or sequential ('off' is none)")
        if self.initial > self.maximum:
            raise InputError(
                f"[adaptive] initial ({self.initial}) must not exceed maximum ({self.maximum})"
            )

    @property
    def looks(self) -> tuple[int, ...]:
        """The answer counts at which a pair is looked at: initial, initial + step, …, maximum."""
        return (*range(self.initial, self.maximum, self.step), self.maximum)

    @classmethod
    def from_section(
        cls, section: dict[str, Any], answers_per_pair: int, aggregation: AggregationRule
    ) -> StoppingRule | None:
        """The rule of a project's ``[adaptive]`` TOML section; ``None`` when it is off.

        ``method = "off"`` (the default) keeps the fixed design of ``answers_per_pair`` answers;
        ``maximum`` defaults to ``answers_per_pair``.
        """
        check_section("adaptive", section, CONFIG_NAME)
        data = dict(section)
        method = data.pop("method", "off")
        if method == "off":
            return None
        data.setdefault("maximum", answers_per_pair)
        data.setdefault("initial", min(cls.initial, data["maximum"]))
        return cls(method=method, aggregation=aggregation, **data)


def _cube(top: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every ``(more, equal, less)`` of a cube of side ``top + 1``, and their sums."""
    m, e, q = np.indices((top + 1,) * 3)
    return m, e, q, m + e + q


def _test(aggregation: AggregationRule) -> AggregationRule:
    """The Mann-Whitney settings of the sequential test (the project's, when it uses one)."""
    if aggregation.decider is MANN_WHITNEY:
        return aggregation
    return AggregationRule()


def _p_values(more, equal, less, rule: StoppingRule) -> np.ndarray:
    """Mann-Whitney p-value of every state (1 for a state without answers)."""
    more, equal, less = (np.asarray(a) for a in (more, equal, less))
    p = np.ones(more.shape)
    some = (more + equal + less) > 0
    p[some] = verdicts(more[some], equal[some], less[some], _test(rule.aggregation))[1]
    return p


def _crossed(more, equal, less, rule: StoppingRule, level: float) -> np.ndarray:
    """Where the sequential boundary is crossed: ``p <= level`` and one side leads."""
    return (_p_values(more, equal, less, rule) <= level) & (np.asarray(more) != np.asarray(less))


def _propagate(
    table: np.ndarray, looks: tuple[int, ...], shares: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Verdict probabilities (G, 3: more, equal, less), expected answers and rounds (G,) of a
    decision table, for G answer-share vectors, looking at the pairs after ``looks`` answers."""
    size = table.shape[0]
    state = np.zeros((len(shares), size, size, size))
    state[:, 0, 0, 0] = 1.0
    p_more, p_equal, p_less = (shares[:, i, None, None, None] for i in range(3))
    out = np.zeros((len(shares), 3))
    answers = np.zeros(len(shares))
    rounds = np.zeros(len(shares))
    n = 0
    for look in looks:
        rounds += state.sum(axis=(1, 2, 3))
        while n < look:
            grown = np.zeros_like(state)
            grown[:, 1:] += p_more * state[:, :-1]
            grown[:, :, 1:] += p_equal * state[:, :, :-1]
            grown[:, :, :, 1:] += p_less * state[:, :, :, :-1]
            state, n = grown, n + 1
        for slot, verdict in enumerate((1, 0, -1)):
            out[:, slot] += state[:, table == verdict].sum(axis=1)
        decided = table != UNDECIDED
        answers += n * state[:, decided].sum(axis=1)
        state[:, decided] = 0.0
    return out, answers, rounds


def _null_shares(rule: StoppingRule) -> np.ndarray:
    """Answer shares of truly equal pairs: p_more = p_less, p_equal from equal_share to 1."""
    p_equal = np.linspace(rule.equal_share, 0.995, 41)
    side = (1 - p_equal) / 2
    return np.stack([side, p_equal, side], axis=1)


@lru_cache(maxsize=32)
def nominal_level(rule: StoppingRule) -> tuple[float, float]:
    """The per-look level α′ of the sequential rule and its exact worst false-different rate.

    α′ is the largest Mann-Whitney p-value of a state such that declaring "different" at every
    look where ``p <= α′`` gives a false-different probability of at most ``alpha`` for every
    p_equal in [equal_share, 1) (a grid of 41 values; the rate falls as p_equal grows). The
    rate is non-decreasing in α′, so α′ is bisected over the p-values of the states.
    """
    m, e, q, n = _cube(rule.maximum)
    inside = (n >= 1) & (n <= rule.maximum)
    p = np.full(m.shape, np.inf)
    p[inside] = _p_values(m[inside], e[inside], q[inside], rule)
    p[m == q] = np.inf
    candidates = np.unique(p[np.isfinite(p)])
    shares = _null_shares(rule)

    def error(level: float) -> float:
        table = np.full(m.shape, UNDECIDED, dtype=np.int8)
        table[n == rule.maximum] = 0
        cross = p <= level
        table[cross & inside] = np.sign(m - q)[cross & inside]
        out, _, _ = _propagate(table, rule.looks, shares)
        return float((out[:, 0] + out[:, 2]).max())

    low, high = -1, len(candidates) - 1  # invariant: error(candidates[low]) <= alpha (low=-1: none)
    while low < high:
        middle = (low + high + 1) // 2
        if error(float(candidates[middle])) <= rule.alpha:
            low = middle
        else:
            high = middle - 1
    if low < 0:
        return 0.0, 0.0
    level = float(candidates[low])
    return level, error(level)


@dataclass(frozen=True)
class Policy:
    """The decision table of a rule: ``table[more, equal, less]`` is −1, 0, +1 or UNDECIDED;
    ``level`` is the sequential rule's per-look level α′ (None for curtailment)."""

    rule: StoppingRule
    table: np.ndarray
    level: float | None


def _terminal(more, equal, less, rule: StoppingRule, level: float | None) -> np.ndarray:
    """The verdict once no more answers will come (at ``maximum`` answers or beyond)."""
    if rule.method == "curtail":
        return verdicts(more, equal, less, rule.aggregation)[0]
    assert level is not None
    crossed = _crossed(more, equal, less, rule, level)
    return np.where(crossed, np.sign(np.asarray(more) - np.asarray(less)), 0).astype(np.int8)


def _verdict_chances(table: np.ndarray, prior: float) -> np.ndarray:
    """Predictive probability of each final verdict (more, equal, less) from every state, shape
    ``(3, …table.shape)``, by the Pólya urn walked back from the final layer of ``table``.

    A verdict unreachable from a state has probability exactly 0 (sums of zeros)."""
    top = table.shape[0] - 1
    m, e, q = np.indices(table.shape)
    n = m + e + q
    size = top + 2
    chance = np.zeros((3,) + (size,) * 3)
    final = n == top
    for slot, verdict in enumerate((1, 0, -1)):
        chance[slot][np.nonzero(final & (table == verdict))] = 1.0
    for layer in range(top - 1, -1, -1):
        a, b, c = m[n == layer], e[n == layer], q[n == layer]
        chance[:, a, b, c] = (
            (a + prior) * chance[:, a + 1, b, c]
            + (b + prior) * chance[:, a, b + 1, c]
            + (c + prior) * chance[:, a, b, c + 1]
        ) / (layer + 3 * prior)
    return chance[:, : top + 1, : top + 1, : top + 1]


@lru_cache(maxsize=32)
def policy(rule: StoppingRule) -> Policy:
    """Build (once per rule) the decision table of every state with at most ``maximum`` answers."""
    top = rule.maximum
    m, e, q, n = _cube(top)
    inside = n <= top
    table = np.full(m.shape, UNDECIDED, dtype=np.int8)
    final = n == top
    level = nominal_level(rule)[0] if rule.method == "sequential" else None
    table[final] = _terminal(m[final], e[final], q[final], rule, level)
    size = top + 2

    if rule.method == "curtail":
        chance = _verdict_chances(table, rule.prior)
        best = chance.argmax(axis=0)
        doubt = chance.sum(axis=0) - chance.max(axis=0)  # exactly 0 where one verdict is certain
        settled = inside & ~final & (doubt <= rule.epsilon)
        table[settled] = (1 - best[settled]).astype(np.int8)
        return Policy(rule, table, None)

    assert level is not None
    crossed = np.zeros(m.shape, dtype=bool)
    crossed[inside] = _crossed(m[inside], e[inside], q[inside], rule, level)
    now = inside & ~final & crossed
    table[now] = np.sign(m - q)[now]
    # reach[s]: predictive probability (Pólya urn) of crossing by ``maximum`` answers from s
    reach = np.zeros((size,) * 3)
    reach[: top + 1, : top + 1, : top + 1][crossed] = 1.0
    a0 = rule.prior
    for layer in range(top - 1, -1, -1):
        sel = (n == layer) & ~crossed
        a, b, c = m[sel], e[sel], q[sel]
        reach[a, b, c] = (
            (a + a0) * reach[a + 1, b, c]
            + (b + a0) * reach[a, b + 1, c]
            + (c + a0) * reach[a, b, c + 1]
        ) / (layer + 3 * a0)
    chance = reach[: top + 1, : top + 1, : top + 1]
    hopeless = inside & ~final & ~crossed & (chance <= rule.futility)
    table[hopeless] = 0
    return Policy(rule, table, level)


def decide(more, equal, less, rule: StoppingRule) -> tuple[np.ndarray, np.ndarray]:
    """Per pair: ``(decided, verdict)``; the verdict (+1, 0, −1) is 0 where undecided.

    Pairs with ``maximum`` answers or more are always decided (by the rule's final verdict).
    """
    more, equal, less = (np.asarray(a, dtype=np.int64) for a in (more, equal, less))
    if (more < 0).any() or (equal < 0).any() or (less < 0).any():
        raise InputError("answer counts must be non-negative")
    plan = policy(rule)
    n = more + equal + less
    inside = n <= rule.maximum
    value = np.full(n.shape, UNDECIDED, dtype=np.int8)
    value[inside] = plan.table[more[inside], equal[inside], less[inside]]
    over = ~inside
    if over.any():
        value[over] = _terminal(more[over], equal[over], less[over], rule, plan.level)
    decided = value != UNDECIDED
    return decided, np.where(decided, value, 0).astype(np.int8)


def answers_wanted(
    more, equal, less, rule: StoppingRule, decided: np.ndarray | None = None
) -> np.ndarray:
    """How many answers each pair should have next: ``initial`` while it has fewer, its count
    once decided (by :func:`decide`, or as ``decided`` says: e.g. with a machine prior,
    :func:`crowdprefs.machine.stopping.decide_with_prior`), else ``step`` more (capped at
    ``maximum``)."""
    more, equal, less = (np.asarray(a, dtype=np.int64) for a in (more, equal, less))
    n = more + equal + less
    if decided is None:
        decided, _ = decide(more, equal, less, rule)
    grown = np.minimum(n + rule.step, rule.maximum)
    return np.where(n < rule.initial, rule.initial, np.where(decided, n, grown))


@dataclass(frozen=True)
class Operating:
    """Exact behaviour of a rule on pairs whose answers have fixed shares (p_more, p_equal, p_less).

    ``more``, ``equal``, ``less``: probability of each verdict; ``answers``: expected answers;
    ``rounds``: expected rounds of answers (the first one included).
    """

    more: float
    equal: float
    less: float
    answers: float
    rounds: float


def operating(rule: StoppingRule, p_more: float, p_equal: float, p_less: float) -> Operating:
    """The exact verdict probabilities and expected answers of ``rule`` (forward recursion).

    The distribution of the counts is propagated one answer at a time; at each look decided
    states leave with their verdict. For a truly equal pair (``p_more = p_less``) ``more + less``
    is the false "different" rate. The fixed design is ``StoppingRule("curtail", initial=n,
    maximum=n)``.
    """
    shares = np.array([[p_more, p_equal, p_less]], dtype=float)
    if (shares < 0).any() or abs(shares.sum() - 1) > 1e-6:
        raise InputError(f"answer shares must be >= 0 and sum to 1, got {shares[0].tolist()}")
    out, answers, rounds = _propagate(policy(rule).table, rule.looks, shares / shares.sum())
    return Operating(*map(float, out[0]), float(answers[0]), float(rounds[0]))


@dataclass(frozen=True)
class FragilityRule:
    """More answers for the pairs whose verdict a few changed answers would flip.

    A sorting pair is *fragile* when fewer than ``min_flips`` of its answers, changed to another
    choice, give it another verdict under ``aggregation`` (its flips, from
    :func:`~crowdprefs.campaign.aggregate.fewest_changes`; a verdict no change can flip is not
    fragile). A fragile pair gets ``step`` more answers per further round, never more than
    ``maximum`` in all, so the published lists have no verdict fewer than ``min_flips`` answers
    decide, except on pairs at their maximum. The ``bradley-terry`` rule decides pairs from every
    answer of the query, not from their own answers, and is refused.
    """

    min_flips: int = 2
    step: int = 2
    maximum: int = 20
    aggregation: AggregationRule = field(default_factory=AggregationRule)

    def __post_init__(self) -> None:
        check_values("fragility", self)
        if self.min_flips < 2:
            raise InputError(
                f"[fragility] min_flips = {self.min_flips} asks no further answers (a verdict "
                "takes at least one changed answer to flip): use 2 or more, or 0 for off"
            )
        if self.aggregation.decider.whole_query:
            raise InputError(
                f"[fragility] judges each pair on its own answers; the {self.aggregation.rule} "
                "rule decides pairs from every answer of the query: turn one of them off"
            )

    @classmethod
    def from_section(
        cls, section: dict[str, Any], answers_per_pair: int, aggregation: AggregationRule
    ) -> FragilityRule | None:
        """The rule of a project's ``[fragility]`` TOML section; ``None`` when it is off
        (``min_flips = 0``, the default). ``maximum`` defaults to twice ``answers_per_pair``."""
        check_section("fragility", section, CONFIG_NAME)
        data = dict(section)
        if data.get("min_flips", 0) == 0:
            return None
        data.setdefault("maximum", 2 * answers_per_pair)
        return cls(aggregation=aggregation, **data)


_FLIPS: dict[tuple[AggregationRule, int, int, int], int] = {}
"""The flips of every answer counts met so far, per rule (a pure function of both: a planned
campaign meets the same few hundred counts in every round)."""


def _flips(counts: np.ndarray, aggregation: AggregationRule) -> np.ndarray:
    """:func:`~crowdprefs.campaign.aggregate.fewest_changes`' flips of each ``(more, equal,
    less)`` row (each with an answer at least), each distinct row computed once per process."""
    rows, inverse = np.unique(counts, axis=0, return_inverse=True)
    keys = [(aggregation, *row) for row in rows.tolist()]
    missing = [i for i, key in enumerate(keys) if key not in _FLIPS]
    if missing:
        if len(_FLIPS) > 100_000:
            _FLIPS.clear()
        found = fewest_changes(*rows[missing].T, aggregation)[1]
        _FLIPS.update(zip([keys[i] for i in missing], found.tolist(), strict=True))
    return np.array([_FLIPS[key] for key in keys], dtype=np.int64)[inverse.ravel()]


def fragile(more, equal, less, rule: FragilityRule) -> np.ndarray:
    """Per pair, whether its verdict is fragile (see :class:`FragilityRule`); a pair without
    answers is not (it has no verdict yet)."""
    more, equal, less = (np.asarray(a, dtype=np.int64) for a in (more, equal, less))
    out = np.zeros(more.shape, dtype=bool)
    some = (more + equal + less) > 0
    if some.any():
        counts = np.column_stack([more[some], equal[some], less[some]])
        flips = _flips(counts, rule.aggregation)
        out[some] = (flips >= 0) & (flips < rule.min_flips)
    return out


def wanted_next(
    more,
    equal,
    less,
    stopping: StoppingRule | None,
    fragility: FragilityRule | None,
    decided: np.ndarray | None = None,
) -> np.ndarray:
    """How many answers each pair should have next under both rules, the larger of the two:
    the stopping rule's (:func:`answers_wanted`, with ``decided`` when given; without a rule,
    the answers it has) and, for a fragile pair below the fragility ``maximum``, ``step`` more
    (capped at that maximum)."""
    more, equal, less = (np.asarray(a, dtype=np.int64) for a in (more, equal, less))
    n = more + equal + less
    wanted = n if stopping is None else answers_wanted(more, equal, less, stopping, decided)
    if fragility is None:
        return wanted
    weak = fragile(more, equal, less, fragility) & (n < fragility.maximum)
    grown = np.where(weak, np.minimum(n + fragility.step, fragility.maximum), n)
    return np.maximum(wanted, grown)
