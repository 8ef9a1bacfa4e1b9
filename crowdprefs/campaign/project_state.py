"""What a project keeps in its store beside ``crowdprefs.toml``, and the checks that read it.

The value modules below this one know nothing of a :class:`~crowdprefs.campaign.project.Project`:
:mod:`~crowdprefs.campaign.settings` checks settings, :mod:`~crowdprefs.campaign.budget` prices
answers and :mod:`~crowdprefs.campaign.clips` probes and measures clips. The functions here take
the open project and join those values with what its store remembers: the settings the open
batch was built under, the budget the project last spent under (a budget removed from the
settings stops spending instead of lifting the limit), what its published HITs cost, the clips
it holds, and each query's sort replayed from its verdicts (:func:`sort_states`, through the
store's sort cache) with the lists it gives. The driver, the ranking of systems, the machine
prior's audit and the quality reports read them here, so none of them imports the driver.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import lazy_loader

from crowdprefs.campaign.budget import BUDGET_KEY, check_budget, hit_costs
from crowdprefs.campaign.settings import CONFIG_NAME, SETTINGS_KEY, settings_changes
from crowdprefs.campaign.sorting import SortState, StateCounts, initial_orders, replay
from crowdprefs.errors import BudgetError, StateError

if TYPE_CHECKING:
    from audio_prep import PrepareOptions
    from crowdprefs.campaign.project import Project

State = TypeVar("State")

np = lazy_loader.load("numpy")  # imported on first use
pd = lazy_loader.load("pandas")  # imported on first use: status and next load no pandas


def remember_settings(project: Project) -> None:
    """Store the project's settings as those its newly built batch was built under."""
    current = project.settings.to_toml(project.seed)
    project.store.set_meta(SETTINGS_KEY, json.dumps(current, sort_keys=True))


def note_settings_changes(project: Project, iteration: int) -> None:
    """One note naming the settings changed since ``next`` built the open batch ``iteration``
    (a new reward, rule or budget applies to the rest of the batch: the user should know)."""
    stored = project.store.meta(SETTINGS_KEY)
    if stored is None:
        return
    changes = settings_changes(json.loads(stored), project.settings.to_toml(project.seed))
    if changes:
        from crowdprefs.progress import note

        note(f"{CONFIG_NAME} changed since 'next' built batch {iteration}: {'; '.join(changes)}")


def project_budget(project: Project) -> float | None:
    """The budget a command that spends checks against: ``[crowd] budget``. A missing budget
    never means no budget for a project that had one: when the project remembers a budget
    (:func:`remember_budget`) and ``crowdprefs.toml`` has none (the key removed, the file
    emptied), :class:`BudgetError` names the budget it had."""
    budget = project.settings.budget
    remembered = remembered_budget(project)
    if budget is None and remembered is not None:
        raise BudgetError(
            f"{project.root / CONFIG_NAME} has no [crowd] budget, but this project had a budget "
            f"of ${remembered:.2f}: a missing budget is not 'no budget'; set [crowd] "
            "budget again (up to 1e9 to spend without a practical limit)"
        )
    return budget


def remembered_budget(project: Project) -> float | None:
    """The budget the project last spent under (:func:`remember_budget`); ``None`` when it
    never had one."""
    remembered = project.store.meta(BUDGET_KEY)
    return None if remembered is None else float(remembered)


def remember_budget(project: Project) -> None:
    """Store the configured budget in the state once a spend was checked against it, so that
    :func:`project_budget` refuses to spend if it later disappears from the settings."""
    budget = project.settings.budget
    if budget is not None and project.store.meta(BUDGET_KEY) != repr(budget):
        project.store.set_meta(BUDGET_KEY, repr(budget))


def committed_cost(project: Project) -> float:
    """What every published HIT of the project costs, at the price it was published at (HITs
    published before prices were stored: at the configured reward and fees)."""
    prices = project.store.hit_prices()
    settings = project.settings
    costs = hit_costs(prices, prices["size"], settings.reward, settings.fees)
    return round(float(np.sum(costs * prices["hits"])), 2)


def check_spending(project: Project, cost: float, committed: float) -> None:
    """:func:`check_budget` against :func:`project_budget`, remembering the budget when the
    spend passes (the one check of every command that spends)."""
    check_budget(cost, committed, project_budget(project))
    remember_budget(project)


def project_clips(project: Project) -> pd.DataFrame:
    """Every clip of the project: ``query``, ``document`` (``None`` for the query's own clip),
    ``audio`` and ``seconds`` as stored."""
    store = project.store
    columns = ["query", "document", "audio", "seconds"]
    queries = store.queries().assign(document=None)[columns]
    clips = pd.concat([queries, store.candidates()[columns]], ignore_index=True)
    text = ["query", "document", "audio"]
    clips[text] = clips[text].astype(object).where(clips[text].notna(), None)
    return clips


def prepare_project(
    project: Project,
    options: PrepareOptions | None = None,
    jobs: int = 1,
    *,
    dst: Path | None = None,
    progress: bool = True,
) -> pd.DataFrame:
    """Prepare the project's clips into ``dst`` (default ``PROJECT/clips``) and store each
    prepared clip's path and duration; sources used by several clips are prepared once.

    Returns one row per clip: ``query, document, source`` (``None`` for URLs and missing
    audio), ``audio`` and ``seconds`` as now stored, and ``error`` (empty when prepared or
    skipped). :class:`StateError` when no clip has a local file.
    """
    from crowdprefs.campaign.clips import (  # pandas and audio_prep: only when preparing
        CLIPS_FOLDER,
        audio_errors,
        progress_callback,
        source_paths,
    )

    dst = Path(dst) if dst is not None else project.root / CLIPS_FOLDER
    clips = project_clips(project)
    clips["source"] = source_paths(clips["audio"], dst)
    local = clips["source"].notna()
    if not local.any():
        raise StateError(f"{project.root}: no query or candidate has a local audio file to prepare")
    from audio_prep import prepare_clips

    with audio_errors(), progress_callback("preparing clips", visible=progress) as report:
        manifest = prepare_clips(
            sorted(set(clips.loc[local, "source"])), dst, options, jobs, progress=report
        )
    by_source = manifest.set_index("source")
    result = by_source.reindex(clips["source"].where(local, ""))
    clips["error"] = np.where(local, result["error"].fillna("").to_numpy(), "")
    ready = local & (clips["error"] == "").to_numpy()
    seconds = np.where(ready, result["seconds_after"].to_numpy(), clips["seconds"])
    prepared = [str(dst.resolve() / out) for out in result["output"].fillna("")]
    audio = np.where(ready, prepared, clips["audio"])
    changed = ready & ((audio != clips["audio"]) | (seconds != clips["seconds"]))
    clips["audio"], clips["seconds"] = audio, seconds.astype(float)
    clips["source"] = clips["source"].astype(object).where(local, None)
    for row in clips[changed].itertuples(index=False):
        project.store.set_clip(row.query, row.document, row.audio, float(row.seconds))
    return clips[["query", "document", "source", "audio", "seconds", "error"]]


def prior_scores(project: Project) -> dict[str, dict[str, float]] | None:
    """The state's prior per query and document (``None`` without one): what the sort reads."""
    return project.store.prior_map()


def sort_states(project: Project) -> dict[str, SortState]:
    """Every query's current segments and needed pairs, replayed from the aggregated verdicts.

    The replay is the truth; the ``sort_cache`` table only saves redoing it: a cached state is
    used while the fingerprint of its query's verdicts is unchanged, and the other queries are
    replayed (loading only their verdicts) and cached again.
    """
    fingerprints = project.store.verdict_fingerprints()
    return cached_sort(project, fingerprints, SortState.from_json, lambda state: state)


def sort_counts(project: Project) -> dict[str, StateCounts]:
    """Every query's sort in counts (candidates, open segments, needed pairs): what
    :func:`sort_states` gives, without rebuilding the cached states' segments."""
    fingerprints = project.store.verdict_fingerprints()
    return cached_sort(project, fingerprints, StateCounts.from_json, StateCounts.of)


def cached_sort(
    project: Project,
    fingerprints: Mapping[str, str],
    read: Callable[[str], State],
    convert: Callable[[SortState], State],
) -> dict[str, State]:
    """Per query, its cached state ``read`` from JSON, or replayed, cached and ``convert``-ed
    when its verdicts' fingerprint changed since (:func:`sort_states`)."""
    states, stale = replayed_sort(project, fingerprints, read, convert)
    if stale:
        project.store.cache_states(stale)
    return states


def replayed_sort(
    project: Project,
    fingerprints: Mapping[str, str],
    read: Callable[[str], State],
    convert: Callable[[SortState], State],
) -> tuple[dict[str, State], list[tuple[str, str, str]]]:
    """:func:`cached_sort` without writing: the states, and the rows the cache lacks."""
    store = project.store
    cached = store.cached_states()
    states: dict[str, State | None] = {}
    stale: dict[str, str] = {}
    for query in store.query_names():
        fingerprint = fingerprints.get(query, "0:0")
        hit = cached.get(query)
        if hit is not None and hit[0] == fingerprint:
            states[query] = read(hit[1])
        else:
            states[query] = None
            stale[query] = fingerprint
    if stale:
        documents = store.candidate_orders()
        orders = initial_orders({q: documents[q] for q in stale}, project.seed)
        few = len(stale) <= 500  # a few stale queries: load only theirs (bounded SQL parameters)
        verdicts = store.verdict_maps(list(stale) if few else None)
        scores = prior_scores(project) or {}
        fresh = {q: replay(orders[q], verdicts.get(q, {}), scores.get(q)) for q in stale}
        states.update({q: convert(state) for q, state in fresh.items()})
        return states, [(q, stale[q], state.to_json()) for q, state in fresh.items()]
    return states, []


def lists(project: Project, *, partial: bool = False) -> pd.DataFrame:
    """The partially ordered lists ``query, document, group`` (group 1 = most similar).

    Only closed queries are listed unless ``partial``, which lists open segments as groups too.
    """
    rows = []
    for query, state in sort_states(project).items():
        if state.closed or partial:
            for group, members in enumerate(state.groups(), start=1):
                rows.extend((query, document, group) for document in members)
    return pd.DataFrame(rows, columns=["query", "document", "group"])
