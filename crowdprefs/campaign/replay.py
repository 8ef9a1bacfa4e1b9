"""Replay a recorded QuickSort campaign without its project (the preference-judgments paper §3.2,
§4.2, Table 1).

A recorded campaign is an answers frame (:func:`crowdprefs.results_file.read_results`) whose
iterations were inferred from the HITs' creation times
(:func:`crowdprefs.quality.frames.infer_iterations`). Its lists are rebuilt by re-aggregating every
pair with a chosen rule and replaying the modified QuickSort of :mod:`crowdprefs.campaign.sorting`,
iteration by iteration:

* each query starts as one segment holding every document its HITs mention;
* in iteration *t* an open segment's pivot is the member that the recorded pairs of *t* compare
  with every other ``todo`` member of the segment (the centre of the star the batch asked); the
  recorded pivot (``Input.pivot``) wins when the file has one. A segment of two ``todo`` members
  has no centre: its pivot is the side named by ``pivot_side`` (``a`` or ``b``). This matters only
  when the segment also holds former pivots (which join the pivot's group); such choices are
  reported as ``ambiguous-pivot``;
* the segment splits on the re-aggregated verdicts (:func:`crowdprefs.campaign.sorting.split`).

Where the recording and the replay part ways, the replay says so (:attr:`Replay.issues`; the
:data:`NOTES` among them only inform):
``unneeded`` recorded pairs the replayed segments did not need in that iteration, ``missing``
comparisons a replayed segment needs that were never recorded (its query stays open),
``ambiguous-pivot`` as above, ``reused`` a segment split after the last batch on verdicts asked
in other iterations, ``open`` a query whose list could not be completed. With the rule the
campaign used, a complete recording replays without issues and gives back the campaign's lists;
with another rule the issues show where the ground truth moves and which questions would have had
to be asked.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from crowdprefs.campaign.aggregate import AggregationRule, pair_verdicts
from crowdprefs.campaign.budget import FeeModel
from crowdprefs.campaign.project import Project, Settings
from crowdprefs.campaign.settings import SCHEMA
from crowdprefs.campaign.sorting import Segment, lookup, settle, split
from crowdprefs.errors import InputError, StateError

ISSUE_COLUMNS = ["iteration", "query", "issue", "detail"]
NOTES = ("ambiguous-pivot", "reused")
"""Issues that only inform (the replay chose or reused something); the others are where the
recording and the replay differ."""


@dataclass
class Replay:
    """The replayed lists (``query, document, group``; only closed queries unless partial),
    the verdicts used per pair, the issues met, and which queries closed."""

    lists: pd.DataFrame
    pairs: pd.DataFrame
    issues: pd.DataFrame
    closed: dict[str, bool]
    pivots: pd.DataFrame | None = None
    """``query, iteration, pivot``: the pivot each split used (after the last iteration for
    splits on verdicts asked elsewhere)."""

    def orders(self) -> dict[str, list[Hashable]]:
        """Each closed query's initial order whose QuickSort takes the replay's pivots
        (:func:`sort_order`): :func:`crowdprefs.campaign.sorting.replay` of it with the
        replay's verdicts gives the replayed list."""
        pivots = self.pivots if self.pivots is not None else pd.DataFrame(columns=["query"])
        return {
            query: sort_order(sorted(members["document"]), pivots[pivots["query"] == query])
            for query, members in self.lists.groupby("query", sort=True)
            if self.closed.get(query)
        }


def _choose_pivot(
    todo: tuple[Hashable, ...], asked: pd.DataFrame, upto: pd.DataFrame, pivot_side: str
) -> tuple[Hashable | None, bool]:
    """``(pivot, ambiguous)`` of an open segment in a batch, or ``(None, False)``.

    The segment takes part in the batch when the batch asked a pair inside it; its pivot is the
    recorded one, else the member compared with every other member by the pairs asked so far
    (a batch published in parts completes its stars later), else for two members the side
    ``pivot_side`` of the pair as shown.
    """
    members = set(todo)
    now = asked[asked["x"].isin(members) & asked["y"].isin(members)]
    if now.empty:
        return None, False
    recorded = set(now.loc[now["pivot_known"], "y"])
    if len(recorded) == 1:
        return recorded.pop(), False
    if len(todo) == 2:
        row = now.iloc[-1]
        shown_a, shown_b = (row["x"], row["y"]) if row["a_is_x"] else (row["y"], row["x"])
        return (shown_a if pivot_side == "a" else shown_b), True
    inside = upto[upto["x"].isin(members) & upto["y"].isin(members)]
    pairs = {frozenset(p) for p in zip(inside["x"], inside["y"], strict=True)}
    degree = pd.Series([d for pair in pairs for d in pair]).value_counts()
    centres = [d for d in todo if degree.get(d, 0) == len(todo) - 1]
    return (centres[-1], False) if centres else (None, False)


def _settle(
    segments: list[Segment],
    recorded: pd.DataFrame,
    query: str,
    issues: list,
    last: int,
    pivots: list,
) -> list[Segment]:
    """After the recorded batches, split what every recorded verdict allows.

    An open segment splits on the last ``todo`` member whose comparisons with all the others are
    known from any batch (a re-aggregation can form segments whose pairs the campaign asked in
    other iterations); each such split is reported as ``reused``.
    """
    ordered = recorded.sort_values("iteration", kind="stable")
    known = {(x, y): int(v) for x, y, v in ordered[["x", "y", "verdict"]].itertuples(False)}

    def reused(segment: Segment, pivot: str) -> None:
        pivots.append((query, last + 0.5, pivot))
        issues.append(
            (
                last,
                query,
                "reused",
                f"{list(segment.todo)} split on {pivot} after "
                "the recorded batches, with verdicts asked elsewhere",
            )
        )

    return settle(segments, known, reused)


def replay_campaign(
    answers: pd.DataFrame,
    rule: AggregationRule = AggregationRule(),
    pivot_side: Literal["a", "b"] = "b",
    *,
    partial: bool = False,
) -> Replay:
    """Rebuild the lists of a recorded campaign (see the module docstring)."""
    if pivot_side not in ("a", "b"):
        raise InputError(f"the pivot side must be a or b, got {pivot_side!r}")
    if answers["iteration"].isna().any():
        raise InputError("answers without an iteration: number the batches first")
    pairs = pair_verdicts(answers, rule)
    sort = pairs[pairs["kind"] == "sort"].copy()
    sides = answers.groupby("pair_id")["a_is_x"].first()
    sort["a_is_x"] = sort.index.map(sides)
    iterations = sorted(int(i) for i in sort["iteration"].unique())
    issues: list[tuple] = []
    rows: list[tuple] = []
    pivots: list[tuple] = []
    closed: dict[str, bool] = {}
    for query, recorded in sort.groupby("query", sort=True):
        documents = tuple(sorted(set(recorded["x"]) | set(recorded["y"])))
        segments = [Segment((), documents)]
        for iteration in iterations:
            upto = recorded[recorded["iteration"] <= iteration].sort_values(
                "iteration", kind="stable"
            )
            known = {(x, y): int(v) for x, y, v in upto[["x", "y", "verdict"]].itertuples(False)}
            asked = recorded[recorded["iteration"] == iteration]
            needed: set[frozenset] = set()
            next_segments: list[Segment] = []
            for segment in segments:
                if segment.closed:
                    next_segments.append(segment)
                    continue
                pivot, ambiguous = _choose_pivot(segment.todo, asked, upto, pivot_side)
                if pivot is None:
                    next_segments.append(segment)
                    inside = asked["x"].isin(segment.todo) & asked["y"].isin(segment.todo)
                    needed.update(map(frozenset, asked.loc[inside, ["x", "y"]].to_numpy()))
                    if inside.any():
                        detail = f"no member of {list(segment.todo)} compared with all others yet"
                        issues.append((iteration, query, "missing", detail))
                    continue
                if ambiguous and segment.done:
                    issues.append(
                        (
                            iteration,
                            query,
                            "ambiguous-pivot",
                            f"{pivot} taken as pivot of {list(segment.todo)} "
                            f"(side {pivot_side}); former pivots {list(segment.done)}",
                        )
                    )
                ordered = Segment(
                    segment.done, tuple(d for d in segment.todo if d != pivot) + (pivot,)
                )
                comparisons = ordered.comparisons()
                needed.update(frozenset(c) for c in comparisons)
                parts = split(ordered, known)
                if parts is None:
                    unknown = [c for c in comparisons if lookup(known, *c) is None]
                    issues.append((iteration, query, "missing", f"never asked: {unknown}"))
                    next_segments.append(segment)
                else:
                    pivots.append((query, iteration, pivot))
                    next_segments.extend(parts)
            segments = next_segments
            for x, y in asked[["x", "y"]].itertuples(index=False):
                if frozenset((x, y)) not in needed:
                    issues.append((iteration, query, "unneeded", f"{x} vs {y}"))
        segments = _settle(segments, recorded, query, issues, iterations[-1], pivots)
        is_closed = all(s.closed for s in segments)
        closed[query] = is_closed
        if not is_closed:
            todo = [list(s.todo) for s in segments if not s.closed]
            issues.append((iterations[-1], query, "open", f"segments still open: {todo}"))
        if is_closed or partial:
            for group, segment in enumerate(segments, start=1):
                rows.extend((query, document, group) for document in segment.members)
    return Replay(
        lists=pd.DataFrame(rows, columns=["query", "document", "group"]),
        pairs=pairs,
        issues=pd.DataFrame(issues, columns=ISSUE_COLUMNS),
        closed=closed,
        pivots=pd.DataFrame(pivots, columns=["query", "iteration", "pivot"]),
    )


def sort_order(documents: list[Hashable], pivots: pd.DataFrame) -> list[Hashable]:
    """An initial order whose QuickSort takes the recorded pivots: each segment's pivot is its
    last ``todo`` member, so documents never a pivot come first, then the pivots, those of
    later iterations before those of earlier ones (a pivot follows every member of its
    segment; the members still to place are non-pivots or pivots of later iterations)."""
    when = pivots.groupby("pivot")["iteration"].min()
    rank = {d: -when[d] if d in when.index else float("-inf") for d in documents}
    return sorted(documents, key=lambda d: rank[d])


def recorded_settings(
    answers: pd.DataFrame,
    root: Path,
    rule: AggregationRule,
    reward: float | None,
    fees: FeeModel,
) -> Settings:
    """The settings of the project :func:`recorded_project` would write at ``root``, checked
    before anything is replayed, printed or written: ``root`` must be new or an empty folder,
    the reward known (``reward``, else the file's median reward) and every pair's answers
    within ``[crowd] answers_per_pair``'s range (a recording with thousands of answers per pair
    replays, but cannot become a project)."""
    root = Path(root)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise StateError(f"{root} exists and is not an empty folder; choose another folder")
    paid = answers["reward"].dropna()
    if reward is None and paid.empty:
        raise InputError("the file has no reward: give --reward (the project prices with it)")
    per_pair = answers[answers["choice"] != ""].groupby("pair_id").size()
    most = int(per_pair.max()) if len(per_pair) else 1
    allowed = SCHEMA["crowd"]["answers_per_pair"]
    if not allowed.accepts(most):
        hit = answers.loc[answers["pair_id"] == per_pair.idxmax(), "hit_id"].iloc[0]
        raise InputError(
            f"HIT {hit!r} has {most} answers, and a project's pair takes {allowed.expected()} "
            "([crowd] answers_per_pair): this recording replays, but not as a project "
            "(leave out --project)"
        )
    return Settings(
        answers_per_pair=most,
        reward=float(paid.median()) if reward is None else reward,
        aggregation=rule,
        fees=fees,
    )


def recorded_orders(
    documents: dict[str, list[Hashable]], pivots: pd.DataFrame, seed: int
) -> dict[str, list[Hashable]]:
    """Each query's ``documents`` placed (as a candidates CSV lists them) so that the
    project's initial order from ``seed`` is :func:`sort_order`'s: its QuickSort then takes the
    recorded ``pivots``."""
    from crowdprefs.campaign.sorting import placed

    return {
        query: placed(sort_order(list(docs), pivots[pivots["query"] == query]), seed, query)
        for query, docs in documents.items()
    }


def store_recording(project: Project, answers: pd.DataFrame, crowd: str) -> None:
    """Write a recorded campaign's iterations into ``project`` as its batches, each holding
    the pairs as shown (sides included) as HITs of ``crowd`` with their recorded ids, creation
    times and rewards (the project's reward where unknown, priced with its fees) and the
    answers they received (``answers_wanted`` = those answers), collected and aggregated with
    the project's rule."""
    from crowdprefs.campaign import driver

    settings = project.settings
    good = answers[(answers["choice"] != "") & (answers["status"] != "rejected")]
    for iteration, batch in answers.groupby("iteration", sort=True):
        used = good[good["iteration"] == iteration]
        pairs = (
            batch.groupby("pair_id", sort=False)[["query", "x", "y", "a_is_x", "kind"]]
            .first()
            .join(batch.groupby("pair_id")["expected"].first())
            .join(used.groupby("pair_id").size().rename("answers_wanted"), how="inner")
        )
        pairs["position"] = np.arange(len(pairs))
        project.store.create_batch(int(iteration), pairs.reset_index(drop=True))
        stored = project.store.pairs(int(iteration))["pair_id"].to_numpy()
        pair_id = pd.Series(stored, index=pairs.index)
        given = batch[batch["pair_id"].isin(pairs.index) & (batch["choice"] != "")]
        project.store.add_answers(
            crowd,
            pd.DataFrame(
                {
                    "pair_id": given["pair_id"].map(pair_id).to_numpy(),
                    "assignment_id": given["assignment_id"].to_numpy(),
                    "worker_id": given["worker_id"].to_numpy(),
                    "choice": given["choice"].to_numpy(),
                    "score": given["score"].astype(int).to_numpy(),
                    "seconds": given["seconds"].to_numpy(),
                    "accepted_at": _iso(given["accepted_at"]),
                    "submitted_at": _iso(given["submitted_at"]),
                    "background": given["background"].replace("", None).to_numpy(),
                    "comment": given["comment"].replace("", None).to_numpy(),
                    "status": given["status"].to_numpy(),
                }
            ),
        )
        created = batch.groupby("pair_id")["created_at"].min().reindex(pairs.index)
        reward = batch.groupby("pair_id")["reward"].first().reindex(pairs.index)
        # a HIT's size is what was paid: every assignment not rejected, an empty one too
        # (MTurk pays it), so the project commits what the replay prices
        paid = batch[batch["status"] != "rejected"].groupby("pair_id").size()
        paid = paid.reindex(pairs.index)
        project.store.add_hits(
            crowd,
            pd.DataFrame(
                {
                    "pair_id": pair_id.to_numpy(),
                    "hit_id": batch.groupby("pair_id")["hit_id"].first().reindex(pairs.index),
                    "max_assignments": paid.to_numpy(),
                    "created_at": _iso(created),
                    "reward": reward.fillna(settings.reward).to_numpy(),
                }
            ).reset_index(drop=True),
            settings.reward,
            settings.fees,
        )
        project.store.advance_batch(int(iteration), "collected")
        driver.aggregate(project)


def recorded_project(
    answers: pd.DataFrame,
    replayed: Replay,
    root: Path,
    settings: Settings,
    seed: int,
    crowd: str = "mturk",
) -> Project:
    """Write a project at ``root`` holding a recorded campaign, so that the campaign carries on
    (``status``, ``audit``, ``export``, ``evaluate``, ``next``) from where it stopped.

    The candidates are every document the HITs mention; their order in the project is chosen
    so that the project's QuickSort (replayed from its seed's initial order and the verdicts,
    :mod:`crowdprefs.campaign.sorting`) takes the pivots ``replayed`` found
    (:func:`recorded_orders`); the iterations become its batches (:func:`store_recording`),
    aggregated with ``settings``' rule: the lists reached and the segments left open are the
    replay's. The answers are stored under ``crowd``. Nothing is written when any step fails.
    """
    from crowdprefs.campaign.project import init_project

    root = Path(root)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise StateError(f"{root} exists and is not an empty folder; choose another folder")
    documents = {
        query: sorted(set(group["x"]) | set(group["y"]))
        for query, group in answers[answers["kind"] == "sort"].groupby("query", sort=True)
    }
    orders = recorded_orders(documents, replayed.pivots, seed)
    rows = [(query, d) for query, placed in orders.items() for d in placed]
    candidates = pd.DataFrame(rows, columns=["query", "document"]).assign(audio="", query_audio="")
    staging = root.with_name(f".{root.name}.recording")
    project = init_project(staging, candidates, seed=seed, settings=settings)
    try:
        store_recording(project, answers, crowd)
    except BaseException:
        project.close()
        shutil.rmtree(staging, ignore_errors=True)
        raise
    project.close()
    if root.exists():
        root.rmdir()  # an empty folder (init_project refuses anything else)
    os.rename(staging, root)
    return Project(root)


def import_recording(project: Project, answers: pd.DataFrame, crowd: str = "mturk") -> Replay:
    """Store a recorded campaign (answers numbered in iterations) in a project that has no
    batch yet, e.g. one ``init``-ed from the campaign's published lists: its candidates are
    reordered (:func:`recorded_orders`) so that its QuickSort takes the recorded pivots, and the
    iterations become its batches (:func:`store_recording`), aggregated with the project's rule.
    Every document of the file must be a candidate of its query in the project (a candidate the
    file never mentions is left for the project's next batch). Everything is checked before the
    first write; returns the replay with the project's rule."""
    source = answers.attrs.get("source", "the results file")
    if project.store.last_batch() is not None:
        raise StateError(f"{project.root} already has batches: a recording goes to a new project")
    held = project.store.candidate_orders()
    known = pd.MultiIndex.from_tuples([(q, d) for q, docs in held.items() for d in docs])
    sort = answers["kind"].to_numpy() == "sort"
    for side in ("x", "y"):
        keys = pd.MultiIndex.from_arrays([answers["query"], answers[side]])
        outside = sort & ~keys.isin(known)
        if outside.any():
            i = int(np.flatnonzero(outside)[0])
            raise InputError(
                f"{source}: row {i + 1}: {answers[side].iloc[i]!r} is not a candidate of query "
                f"{answers['query'].iloc[i]!r} in the project {project.root}; nothing of the "
                "file was stored"
            )
    replayed = replay_campaign(answers, project.settings.aggregation, partial=True)
    project.store.set_candidate_orders(recorded_orders(held, replayed.pivots, project.seed))
    store_recording(project, answers, crowd)
    return replayed


def _iso(times: pd.Series) -> np.ndarray:
    """ISO 8601 UTC text (``None`` when unknown), as the store keeps times."""
    text = times.dt.strftime("%Y-%m-%dT%H:%M:%S.%f").str[:-3] + "Z"
    return text.where(times.notna(), None).to_numpy(dtype=object)
