"""The campaign driver: next → publish → collect → aggregate, one iteration (batch) at a time.

Each step is one transaction on the project's state and may be repeated or resumed after a
crash: ``next_batch`` returns the open batch until it is aggregated; ``publish`` and ``collect``
skip what the crowd already holds; ``aggregate`` runs once every pair has its answers. A batch
moves on only through the one state machine (:mod:`crowdprefs.campaign.batches`, applied by
:meth:`~crowdprefs.campaign.store.Store.advance_batch`). The sort's segments are never stored:
they are replayed from the candidates' initial order and the aggregated verdicts
(:func:`crowdprefs.campaign.sorting.replay`), so state and lists cannot disagree.

Collecting runs the :class:`~crowdprefs.campaign.crowd.Review` it is handed after each
collection (and each further round of adaptive or ``[fragility]`` answers), and collects the
replacements of rejected answers and of answers dropped from blocked workers: the driver
orchestrates, the crowd adapter only offers the calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import lazy_loader

from crowdprefs.campaign.adaptive import FragilityRule, StoppingRule, decide, fragile, wanted_next
from crowdprefs.campaign.aggregate import fitted_verdicts, inter_agreement, verdicts
from crowdprefs.campaign.budget import batch_cost, check_budget, hit_costs
from crowdprefs.campaign.checks import add_checks
from crowdprefs.campaign.crowd import Crowd, Review, reachable_size
from crowdprefs.campaign.prior import (
    fix_prior,
    machine_audit,
    prior_policy,
    pseudo_answers,
    triage_needed,
)
from crowdprefs.campaign.project import Project
from crowdprefs.campaign.project_state import (
    cached_sort,
    check_spending,
    committed_cost,
    lists,  # noqa: F401  (driver.lists: where the commands and the API reference find it)
    note_settings_changes,
    project_budget,
    remember_budget,
    remember_settings,
    remembered_budget,
    replayed_sort,
    sort_counts,
    sort_states,
)
from crowdprefs.campaign.sorting import (
    SortState,
    StateCounts,
    contradictions,
)
from crowdprefs.errors import BudgetError, InputError, StateError
from crowdprefs.progress import note

np = lazy_loader.load("numpy")  # imported on first use
pd = lazy_loader.load("pandas")  # imported on first use


def next_batch(
    project: Project, crowd: Crowd | None = None, *, partial: bool = False
) -> int | None:
    """The iteration whose batch is open, building it when the last one is aggregated.

    Returns ``None`` when every query's list is closed. The pairs of a new batch come in a random
    order and with a random side shown as variation A (the preference-judgments paper §4.2), both
    fixed by the project seed and the iteration number; attention checks are mixed in when
    ``[checks]`` asks for them (:mod:`crowdprefs.campaign.checks`).

    With the ``crowd`` the batch is built for (``run``, ``advance``, ``mturk publish``), a new
    batch is built only when that crowd can answer it and the budget covers it (all of it, or
    with ``partial`` its first pair): a refused step writes nothing.
    """
    store = project.store
    last = store.last_batch()
    if last is not None and last["status"] != "aggregated":
        return last["iteration"]
    rule = stopping_rule(project)  # a bad [adaptive] section is refused before any work
    fragility_rule(project)  # and a bad [fragility] section
    skip = prior_policy(project).skip  # and a bad [prior] section
    fix_prior(project)  # and a prior that does not cover the candidates or changed
    from crowdprefs.campaign.ranking import RankSettings, project_standing

    ranked = RankSettings.of(project)  # and a bad [systems] section
    iteration = 1 if last is None else last["iteration"] + 1
    while True:
        fingerprints = store.verdict_fingerprints()
        states, stale = replayed_sort(project, fingerprints, SortState.from_json, lambda s: s)
        needed = [(query, x, y) for query, state in states.items() for x, y in state.needed]
        if needed and ranked:  # only what can still change how two systems compare
            needed = project_standing(project, states, iteration).wanted(needed)
        if not needed:
            if stale:
                store.cache_states(stale)
            return None
        rng = np.random.default_rng([project.seed, iteration, 0xBA7C])
        position = rng.permutation(len(needed))
        a_is_x = rng.integers(0, 2, len(needed))
        wanted = project.settings.answers_per_pair if rule is None else rule.initial
        pairs = pd.DataFrame(needed, columns=["query", "x", "y"]).assign(
            a_is_x=a_is_x.astype(int), position=position, kind="sort", answers_wanted=wanted
        )
        machine = None
        if skip is not None:  # the machine prior decides the pairs it is sure about
            asked, machine = triage_needed(project, skip, pairs)
            if not asked.any():  # it decided every needed pair: they split, sort on
                store.add_machine_verdicts(iteration, machine)
                continue
            pairs = pairs[asked]
        break
    batch = add_checks(project, iteration, pairs, states)
    if crowd is not None:
        ordered = batch.sort_values("position", kind="stable")
        check_crowd(project, crowd, ordered)
        affordable(project, ordered["answers_wanted"].to_numpy(), partial=partial)
    if stale:  # the cache is written only once the step is sure to be taken
        store.cache_states(stale)
    store.create_batch(iteration, batch, machine)
    remember_settings(project)
    return iteration


def check_crowd(project: Project, crowd: Crowd, pairs: pd.DataFrame) -> None:
    """Raise :class:`InputError`, before anything is written, when ``crowd`` cannot answer
    ``pairs`` as the project asks: its own ``check`` (e.g. the simulated crowd's workers and
    truth), and an adaptive maximum beyond what the crowd can extend a HIT to."""
    rule, barrier = stopping_rule(project), crowd.extension_barrier
    if rule is not None and barrier is not None and rule.initial < barrier <= rule.maximum:
        raise InputError(
            f"[adaptive] maximum = {rule.maximum} cannot be reached on MTurk ({crowd.name}): a "
            f"HIT created with fewer than {barrier} assignments (initial = {rule.initial}) is "
            f"never extended to {barrier} or more; set maximum = {barrier - 1} or initial >= "
            f"{barrier}"
        )
    check = getattr(crowd, "check", None)  # optional: see Crowd
    if check is not None:
        check(project, pairs)


def affordable(project: Project, sizes: np.ndarray, *, partial: bool = False) -> int:
    """How many of the HITs of ``sizes`` assignments (in publishing order) the budget covers:
    all of them, else :class:`BudgetError`; with ``partial`` the most that fit, at least one."""
    settings = project.settings
    committed = committed_cost(project)
    budget = project_budget(project)
    try:
        check_budget(batch_cost(settings.reward, sizes, settings.fees), committed, budget)
    except BudgetError:
        if not partial:
            raise
        unit = settings.fees.per_assignment(settings.reward, sizes) * sizes
        fits = int(np.searchsorted(np.cumsum(unit), budget - committed + 1e-9, side="right"))
        if fits == 0:
            raise
        remember_budget(project)
        return fits
    remember_budget(project)
    return len(sizes)


@dataclass(frozen=True)
class PublishQuote:
    """What publishing the open batch to a crowd would cost, before it is published."""

    hits: int
    assignments: int
    cost: float
    """Rewards and fees of those assignments (US$)."""
    committed: float
    """What the project's published HITs already cost (US$)."""
    budget: float | None


def publish_quote(
    project: Project, crowd_name: str, committed: float | None = None
) -> PublishQuote:
    """The cost of the open batch's pairs not yet published to ``crowd_name`` (one HIT each);
    ``committed``: :func:`committed_cost` when the caller has it already."""
    iteration = _open_batch(project, ("built", "published"))
    wanted = project.store.unpublished_sizes(iteration, crowd_name)
    settings = project.settings
    return PublishQuote(
        hits=len(wanted),
        assignments=int(wanted.sum()),
        cost=batch_cost(settings.reward, wanted, settings.fees),
        committed=committed_cost(project) if committed is None else committed,
        budget=settings.budget,
    )


def partly_published(project: Project, iteration: int) -> str | None:
    """The crowd holding part of a batch still ``built`` (a partial publish waiting for
    budget), ``None`` when no pair of it is published."""
    return project.store.batch_crowd(iteration)


def campaign_crowd(project: Project) -> str | None:
    """The crowd the campaign's batch belongs to: the crowd the latest batch was published to
    (all of it, or part while it waits for budget); for a batch no crowd holds, the crowd of
    the latest answers (a results file is imported under its crowd's name); ``None`` while no
    crowd holds or answered a batch. A bare ``publish`` or ``collect`` goes to this crowd."""
    last = project.store.last_batch()
    if last is not None and last["crowd"]:
        return last["crowd"]
    if last is not None and last["status"] == "built":
        held = partly_published(project, last["iteration"])
        if held:
            return held
    return project.store.latest_answer_crowd()


def _open_batch(project: Project, allowed: tuple[str, ...], crowd: Crowd | None = None) -> int:
    last = project.store.last_batch()
    waiting = last is not None and last["status"] == "built" and "built" not in allowed
    held_by = partly_published(project, last["iteration"]) if waiting else None
    if held_by is not None:
        quote = publish_quote(project, held_by)
        raise StateError(
            f"batch {last['iteration']} is partly published: {quote.hits} pairs wait for budget "
            f"(${quote.cost:.2f} more) before it can be collected"
        )
    if last is None or last["status"] not in allowed:
        state = "no batch yet" if last is None else f"batch {last['iteration']} is {last['status']}"
        raise StateError(
            f"nothing to do ({state}); expected a batch that is {' or '.join(allowed)}"
        )
    if crowd is not None and last["crowd"] not in (None, crowd.name):
        raise StateError(
            f"batch {last['iteration']} belongs to the {last['crowd']} crowd, not {crowd.name}"
        )
    note_settings_changes(project, last["iteration"])
    return last["iteration"]


def publish(project: Project, crowd: Crowd, *, partial: bool = False) -> int:
    """Publish the open batch's pairs not yet published, after checking the budget.

    With ``partial``, a batch that would cross the budget is published up to what fits (in the
    batch's order); otherwise nothing is published and :class:`BudgetError` is raised. The batch
    is ``published`` once the crowd holds every pair.
    """
    iteration = _open_batch(project, ("built", "published"), crowd)
    store = project.store
    pairs = store.unpublished_pairs(iteration, crowd.name)
    check_crowd(project, crowd, pairs)
    if len(pairs):
        pairs = pairs.iloc[
            : affordable(project, pairs["answers_wanted"].to_numpy(), partial=partial)
        ]
        crowd.publish(project, pairs)
    store.advance_batch(iteration, "published", crowd=crowd.name)
    return len(pairs)


def stopping_rule(project: Project) -> StoppingRule | None:
    """The project's adaptive rule (``[adaptive]`` section), ``None`` for the fixed design."""
    settings = project.settings
    rule = StoppingRule.from_section(
        project.section("adaptive"), settings.answers_per_pair, settings.aggregation
    )
    aggregation = settings.aggregation
    if rule is not None and aggregation.decider.whole_query:
        raise InputError(
            f"[adaptive] answers stop each pair on its own answers; the {aggregation.rule} rule "
            "decides pairs from every answer of the query: turn one of them off"
        )
    return rule


def fragility_rule(project: Project) -> FragilityRule | None:
    """The project's ``[fragility]`` rule (more answers for fragile verdicts), ``None`` when off;
    refused with the bradley-terry rule (:class:`~crowdprefs.campaign.adaptive.FragilityRule`)."""
    settings = project.settings
    return FragilityRule.from_section(
        project.section("fragility"), settings.answers_per_pair, settings.aggregation
    )


def _extend_wanted(
    project: Project,
    iteration: int,
    rules: tuple[StoppingRule | None, FragilityRule | None],
    crowd: Crowd,
) -> int:
    """Further answers: raise ``answers_wanted`` (and the HITs' assignments) of the batch's
    sorting pairs to what the stopping and fragility ``rules`` want next
    (:func:`~crowdprefs.campaign.adaptive.wanted_next`: undecided pairs, fragile verdicts),
    after checking the budget; returns how many pairs grew.

    A pair never wants more than its HIT can reach on ``crowd`` (its extension barrier) less
    its rejected answers, so a batch never waits for answers that cannot come. The extra
    assignments cost what each HIT was published at."""
    store = project.store
    pairs = store.pairs(iteration).set_index("pair_id")
    pairs = pairs[pairs["kind"] == "sort"]
    counts = store.answer_counts(iteration).reindex(pairs.index)
    hits = store.batch_hits(crowd.name, iteration).reindex(pairs.index)
    hits[["size", "rejected"]] = hits[["size", "rejected"]].fillna(0).astype(int)
    rejected = hits["rejected"].to_numpy()
    counts = counts[["more", "equal", "less"]].fillna(0).astype(np.int64)
    decided = _prior_decisions(project, rules[0], pairs, counts)[0]
    wanted = wanted_next(counts["more"], counts["equal"], counts["less"], *rules, decided)
    reachable = reachable_size(hits["size"], wanted + rejected, crowd.extension_barrier)
    wanted = np.minimum(wanted, reachable - rejected)
    grow = wanted > pairs["answers_wanted"].to_numpy()
    if not grow.any():
        return 0
    settings = project.settings
    grown, new = pairs.index[grow], wanted[grow]
    before, after = hits["size"].to_numpy()[grow], new + rejected[grow]
    prices = hits[grow]
    extra = float(
        np.sum(hit_costs(prices, after, settings.reward, settings.fees))
        - np.sum(hit_costs(prices, before, settings.reward, settings.fees))
    )
    check_spending(project, round(extra, 2), committed_cost(project))
    store.resize_pairs(
        crowd.name,
        wanted=dict(zip(grown, new, strict=True)),
        sizes=dict(zip(grown, after, strict=True)),
    )
    return int(grow.sum())


def _prior_decisions(
    project: Project, rule: StoppingRule | None, pairs: pd.DataFrame, counts: pd.DataFrame
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """The stopping rule's ``(decided, verdict)`` of the batch's ``pairs`` (their answer
    ``counts`` in the same order) with the machine prior's pseudo-answers when ``[prior]
    weight`` asks for them and the answers show the model helps
    (:func:`crowdprefs.machine.stopping.decide_with_prior`); ``(None, None)`` otherwise (the
    plain rule decides)."""
    weight = prior_policy(project).weight
    if rule is None or weight <= 0:
        return None, None
    from crowdprefs.machine.stopping import decide_with_prior

    pseudo = pseudo_answers(project, weight, pairs)
    if pseudo is None:
        return None, None
    more, equal, less = (counts[c].to_numpy(np.int64) for c in ("more", "equal", "less"))
    return decide_with_prior(more, equal, less, pseudo, rule)


def _gather(
    project: Project, crowd: Crowd, pairs: pd.DataFrame, iteration: int, review: Review | None
) -> int:
    """Collect the pairs' answers; review them and collect the replacements of rejected or
    dropped answers (a few rounds: they may be answered at once). Returns how many answers were
    new."""
    new = crowd.collect(project, pairs)
    if review is None:
        return new
    last = done = review(project, crowd, iteration)
    for _ in range(3):
        if not last["replaced"]:
            break
        short = set(project.store.missing_answers(iteration, crowd.name)["pair_id"])
        arrived = crowd.collect(project, pairs[pairs["pair_id"].isin(short)])
        if not arrived:
            break
        new += arrived
        last = review(project, crowd, iteration)
        done = {what: done[what] + last[what] for what in done}
    if any(done.values()):
        note("review: " + ", ".join(f"{count} {what}" for what, count in done.items() if count))
    return new


def collect(project: Project, crowd: Crowd, review: Review | None = None) -> int:
    """Collect the published batch's answers; marks it collected once every pair has them.

    ``review`` reviews the answers after each collection (:func:`_gather`). With adaptive
    answers or ``[fragility]``, pairs still undecided or fragile once they have their answers
    get more wanted (:func:`_extend_wanted`) and are collected again, until no pair wants more.
    """
    iteration = _open_batch(project, ("published", "collected"), crowd)
    store = project.store
    new = _gather(project, crowd, store.published_pairs(iteration, crowd.name), iteration, review)
    rules = stopping_rule(project), fragility_rule(project)
    while (
        rules != (None, None)
        and store.missing_answers(iteration).empty
        and _extend_wanted(project, iteration, rules, crowd)
    ):
        pairs = store.published_pairs(iteration, crowd.name)
        new += _gather(project, crowd, pairs, iteration, review)
    if rules[1] is not None and store.missing_answers(iteration).empty:
        _note_fragile_left(project, iteration, rules[1])
    store.advance_batch(iteration, "collected")
    return new


def _note_fragile_left(project: Project, iteration: int, rule: FragilityRule) -> None:
    """One note when sorting pairs of the collected batch are still fragile: they reached the
    rule's maximum, or their HIT could not grow (the crowd's extension barrier)."""
    store = project.store
    pairs = store.pairs(iteration, ("pair_id", "kind")).set_index("pair_id")
    counts = store.answer_counts(iteration).reindex(pairs.index)
    counts = counts[["more", "equal", "less"]].fillna(0).astype(np.int64)
    weak = fragile(counts["more"], counts["equal"], counts["less"], rule)
    left = int((weak & (pairs["kind"] == "sort").to_numpy()).sum())
    if left:
        note(
            f"batch {iteration}: {left} sorting pair(s) keep a verdict fewer than "
            f"{rule.min_flips} changed answers flip (at [fragility] maximum = {rule.maximum} "
            "or as far as their HITs can grow)"
        )


def aggregate(project: Project) -> pd.DataFrame:
    """Decide every pair of the collected batch with the project's rule and store the verdicts.

    Returns the batch's pairs (``pair_id, kind``, in asking order) with ``more, equal, less,
    verdict, p_value, agreement``.
    """
    iteration = _open_batch(project, ("collected",))
    store = project.store
    pairs = store.pairs(iteration, ("pair_id", "kind")).set_index("pair_id")
    counts = store.answer_counts(iteration).reindex(pairs.index)
    aggregation = project.settings.aggregation
    if aggregation.decider.whole_query:  # one fit on every answer so far
        every = store.pairs().set_index("pair_id")
        verdict, p = fitted_verdicts(store.shown_answers(), every, pairs.index, aggregation)
    else:
        verdict, p = verdicts(counts["more"], counts["equal"], counts["less"], aggregation)
    rule = stopping_rule(project)
    if rule is not None:  # adaptive answers: sorting pairs get the stopping rule's verdict
        adaptive = _prior_decisions(project, rule, store.pairs(iteration), counts)[1]
        if adaptive is None:
            adaptive = decide(counts["more"], counts["equal"], counts["less"], rule)[1]
        verdict = np.where((pairs["kind"] == "sort").to_numpy(), adaptive, verdict)
    result = pairs.join(counts)
    result["verdict"], result["p_value"] = verdict, p
    result["agreement"] = inter_agreement(counts["more"], counts["equal"], counts["less"])
    store.save_verdicts(
        iteration, pd.DataFrame({"pair_id": result.index, "verdict": verdict, "p_value": p})
    )
    sort_states(project)  # replay the batch's queries once, here, so status and next find them
    return result.reset_index()


def query_contradictions(project: Project) -> pd.DataFrame:
    """Non-transitive verdict triples met by the driver, per query: ``query, a, b, c``."""
    orders = project.store.candidate_orders()
    rows = [
        (query, *triple)
        for query, verdicts in project.store.verdict_maps().items()
        for triple in contradictions(orders[query], verdicts)
    ]
    return pd.DataFrame(rows, columns=["query", "a", "b", "c"])


def status(project: Project) -> dict:
    """Per query: iterations, open segments, pairs judged, closed; and campaign totals."""
    store = project.store
    progress = store.query_progress()
    fingerprints = {query: fingerprint for query, (_, _, fingerprint) in progress.items()}
    states = cached_sort(project, fingerprints, StateCounts.from_json, StateCounts.of)
    queries = []
    for query, state in states.items():
        iterations, judged, _ = progress.get(query, (0, 0, "0:0"))
        queries.append(
            {
                "query": query,
                "candidates": state.size,
                "iterations": iterations,
                "open_segments": state.open_segments,
                "pairs_judged": judged,
                "pairs_needed": state.needed,
                "closed": state.closed,
            }
        )
    answers = store.answer_total()
    last = store.last_batch()
    systems = system_status(project, 1 if last is None else last["iteration"] + 1)
    return {
        "queries": queries,
        "totals": {
            "queries": len(queries),
            "closed": sum(q["closed"] for q in queries),
            "iteration": 0 if last is None else last["iteration"],
            "batch_status": None if last is None else last["status"],
            "pairs_judged": sum(q["pairs_judged"] for q in queries),
            "answers": answers,
            "cost": committed_cost(project),
            "budget": project.settings.budget,
            "budget_had": remembered_budget(project),
            "ranking_done": systems is not None and not systems["next_pairs"],
        },
        "machine": machine_audit(project),
        "systems": systems,
    }


def system_status(project: Project, iteration: int) -> dict | None:
    """With ``[systems]``: the measure, the pairs of systems and how many are undecided at the
    confidence, and what the next batch (``iteration``) asks and costs; ``None`` without."""
    from crowdprefs.campaign.budget import batch_cost
    from crowdprefs.campaign.ranking import RankSettings, project_standing

    settings = RankSettings.of(project)
    if settings is None:
        return None
    states = sort_states(project)
    standing = project_standing(project, states, iteration)
    needed = [(q, x, y) for q, state in states.items() for x, y in state.needed]
    pairs = len(standing.wanted(needed)) if needed else 0
    rule = stopping_rule(project)
    wanted = project.settings.answers_per_pair if rule is None else rule.initial
    cost = batch_cost(project.settings.reward, np.full(pairs, wanted), project.settings.fees)
    return {
        "measure": str(settings.measure),
        "confidence": settings.confidence,
        "systems": len(standing.runs.systems),
        "pairs": len(standing.pairs.decided),
        "undecided": int((~standing.pairs.decided).sum()),
        "next_pairs": pairs,
        "next_answers": pairs * wanted,
        "next_cost": cost,
    }


@dataclass(frozen=True)
class IterationSummary:
    """One row of the per-iteration table printed by ``run`` and ``demo``."""

    iteration: int
    pairs: int
    answers: int
    cost: float
    agreement: float
    median_seconds: float
    seconds: float
    open_queries: int


def run_iteration(
    project: Project, crowd: Crowd, *, review: Review | None = None, partial: bool = False
) -> IterationSummary | None:
    """Take the campaign through one whole iteration (resuming wherever it stands)."""
    started = time.perf_counter()
    iteration = next_batch(project, crowd, partial=partial)
    if iteration is None:
        return None
    store = project.store
    if store.last_batch()["status"] == "built":
        publish(project, crowd, partial=partial)
        if store.last_batch()["status"] == "built":
            raise BudgetError(f"batch {iteration} was published only in part: the budget is spent")
    if store.last_batch()["status"] == "published":
        collect(project, crowd, review)
        if store.last_batch()["status"] != "collected":
            missing = store.missing_answers(iteration)
            raise StateError(
                f"batch {iteration} still waits for answers to {len(missing)} pair(s); "
                "collect again later"
            )
    result = aggregate(project)
    seconds = store.answer_seconds(iteration)
    timed = seconds[~np.isnan(seconds)]
    open_queries = sum(not s.closed for s in sort_counts(project).values())
    hits, settings = store.batch_hits(crowd.name, iteration), project.settings
    return IterationSummary(
        iteration=iteration,
        pairs=len(result),
        answers=len(seconds),
        cost=round(float(np.sum(hit_costs(hits, hits["size"], settings.reward, settings.fees))), 2),
        agreement=float(np.nanmean(result["agreement"])) if len(result) else float("nan"),
        median_seconds=float(np.median(timed)) if len(timed) else float("nan"),
        seconds=time.perf_counter() - started,
        open_queries=open_queries,
    )


def run(
    project: Project,
    crowd: Crowd,
    *,
    review: Review | None = None,
    max_iterations: int | None = None,
    on_iteration: Callable[[IterationSummary], None] | None = None,
) -> list[IterationSummary]:
    """Run iterations until every list is closed, ``max_iterations`` is reached or the budget
    stops it (:class:`BudgetError` propagates after the finished iterations were reported)."""
    done: list[IterationSummary] = []
    while max_iterations is None or len(done) < max_iterations:
        summary = run_iteration(project, crowd, review=review)
        if summary is None:
            break
        done.append(summary)
        if on_iteration:
            on_iteration(summary)
    return done


def advance(project: Project, crowd: Crowd, review: Review | None = None) -> str:
    """Take the campaign as far as the answers ``crowd`` holds allow (the web server calls it
    after each answer; for a crowd that answers at once it runs the whole campaign).

    Builds and publishes the next batch when none is open, collects and aggregates a batch once
    every pair has its answers, and repeats. Returns ``"waiting"`` (a batch awaits answers),
    ``"done"`` (every list is closed) or ``"other crowd"`` (the open batch belongs to another
    crowd). :class:`~crowdprefs.errors.BudgetError` propagates when the next batch does not fit.
    """
    store = project.store
    while True:
        if next_batch(project, crowd) is None:
            return "done"
        batch = store.last_batch()
        if batch["crowd"] not in (None, crowd.name):
            return "other crowd"
        if batch["status"] == "built":
            publish(project, crowd)
            if store.last_batch()["status"] == "built":
                return "waiting"
        if store.last_batch()["status"] == "published":
            collect(project, crowd, review)
            if store.last_batch()["status"] == "published":
                return "waiting"
        aggregate(project)
