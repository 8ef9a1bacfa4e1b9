"""Preference answers without a project: verdicts, lists, agreement, worker flags, a tie model.

For people with their own answers — from another platform, a lab study, or crowd-kit — in a
pandas frame of one answer per row, ``worker, query, left, right, label`` (``label`` one of
``left``, ``right``, ``equal``, or crowd-kit's preferred item; an optional ``seconds`` column
holds work times), checked by :func:`crowdprefs.exchange.preference_frame`. Everything here is a
pure function of such a frame, or, for the model, a small class with crowd-kit's
``fit``/``fit_predict`` surface:

* :func:`verdicts`: one verdict per pair with the Mann-Whitney, vote-margin or Bradley–Terry
  rule of :mod:`crowdprefs.campaign.aggregate` and each pair's inter-agreement;
* :func:`sort_lists`: partially ordered lists by replaying the modified QuickSort of
  :mod:`crowdprefs.campaign.sorting` on those verdicts (the answers must hold the comparisons
  the sort needs, as a QuickSort campaign's do);
* :class:`TieBradleyTerry`: the tie-aware Bradley–Terry model with worker reliabilities of
  :mod:`crowdprefs.campaign.bradley_terry`, fitted on all answers — scores, a tie parameter,
  reliabilities and lists for answers on arbitrary pairs;
* :func:`agreement`: inter-agreement, Krippendorff's α and Fleiss' κ;
* :func:`worker_flags`: the audit's worker-flag rules
  (:func:`crowdprefs.quality.flags.flag_workers`);
* :func:`transitivity_violations`: how often verdicts, or a worker's own answers, are not
  transitive, per query or per worker;
* :func:`to_answers_frame` and :func:`from_answers_frame`: to and from the audit's answers frame
  (a project's answers or an MTurk results file).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from crowdprefs.campaign import aggregate
from crowdprefs.campaign.aggregate import AggregationRule, pair_verdicts
from crowdprefs.campaign.bradley_terry import (
    Reliability,
    TieModel,
    fallback_line,
    fit_bradley_terry,
)
from crowdprefs.campaign.sorting import Segment, initial_order, lookup, settle
from crowdprefs.campaign.transitivity import violation_rates
from crowdprefs.errors import InputError
from crowdprefs.exchange import preference_frame
from crowdprefs.quality.agreement import fleiss_kappa, krippendorff_alpha
from crowdprefs.quality.flags import FlagRules, flag_workers
from crowdprefs.results_file import FRAME_COLUMNS

VERDICT_COLUMNS = [
    "query",
    "left",
    "right",
    "more",
    "equal",
    "less",
    "verdict",
    "p_value",
    "agreement",
]
LIST_COLUMNS = ["query", "document", "group"]


def _oriented(answers: pd.DataFrame) -> pd.DataFrame:
    """The answers with ``pair_id`` (per query and unordered pair, in order of appearance),
    the pair's orientation ``x, y`` (as first seen), ``a_is_x`` and ``score`` (from x's view)."""
    left, right = answers["left"].to_numpy(), answers["right"].to_numpy()
    items, names = pd.factorize(np.concatenate([left, right]))
    a, b = items[: len(left)], items[len(left) :]
    unordered = pd.factorize(np.minimum(a, b) * len(names) + np.maximum(a, b))[0]
    query = pd.factorize(answers["query"].to_numpy())[0]
    pair_id = pd.factorize(query * (unordered.max(initial=0) + 1) + unordered)[0]
    first = np.unique(pair_id, return_index=True)[1][pair_id]  # ids in order of appearance
    x, y = left[first], right[first]
    a_is_x = left == x
    side = answers["label"].map({"left": 1, "equal": 0, "right": -1}).to_numpy()
    return answers.assign(
        pair_id=pair_id, x=x, y=y, a_is_x=a_is_x, score=np.where(a_is_x, side, -side)
    )


def verdicts(answers: pd.DataFrame, rule: AggregationRule = AggregationRule()) -> pd.DataFrame:
    """One verdict per pair: ``query, left, right, more, equal, less, verdict, p_value,
    agreement``, one row per query and unordered pair in order of first appearance.

    The pair is oriented as first seen (``left``, ``right``); ``more``/``less`` count the answers
    preferring ``left``/``right`` whichever side they were shown on; ``verdict`` is +1 (left
    more similar), 0 (equal) or −1 by ``rule`` (:func:`crowdprefs.campaign.aggregate.verdicts`:
    Mann-Whitney by default, or the vote margin; the ``bradley-terry`` rule decides every pair
    from one fit on all the answers, each read on the sides it was shown, with one reliability
    per worker across queries: :func:`crowdprefs.campaign.aggregate.fitted_verdicts`),
    ``p_value`` the test's (NaN for the margin rule) and ``agreement`` the pair's
    inter-agreement (:func:`crowdprefs.campaign.aggregate.inter_agreement`; NaN below two
    answers).
    """
    oriented = _oriented(preference_frame(answers))
    counts = aggregate.count_answers(oriented[["pair_id", "score"]])
    info = oriented.groupby("pair_id")[["query", "x", "y"]].first().loc[counts.index]
    table = pd.DataFrame(
        {"query": info["query"], "left": info["x"], "right": info["y"]}, index=counts.index
    ).join(counts)
    if rule.decider.whole_query:
        shown = oriented.rename(columns={"worker": "worker_id"})
        table["verdict"], table["p_value"] = aggregate.fitted_verdicts(
            shown, info.assign(kind="sort"), table.index, rule
        )
    else:
        table["verdict"], table["p_value"] = aggregate.verdicts(
            table["more"], table["equal"], table["less"], rule
        )
    table["agreement"] = aggregate.inter_agreement(table["more"], table["equal"], table["less"])
    return table.reset_index(drop=True)[VERDICT_COLUMNS]


def sort_lists(
    answers: pd.DataFrame, rule: AggregationRule = AggregationRule(), seed: int = 0
) -> pd.DataFrame:
    """Partially ordered lists ``query, document, group`` from the modified QuickSort.

    Each query's candidates start in one segment in the random order fixed by ``seed``
    (:func:`crowdprefs.campaign.sorting.initial_order`, as a campaign with that seed orders
    them); the sort is replayed on the :func:`verdicts`, every open segment splitting on the
    last member compared with all the others. Group 1 is the most similar. When the answers lack
    a comparison the sort needs, :class:`InputError` names it: answers on arbitrary pairs are
    for :class:`TieBradleyTerry`.
    """
    pairs = verdicts(answers, rule)
    rows = []
    for query, frame in pairs.groupby("query", sort=True):
        known = dict(
            zip(zip(frame["left"], frame["right"], strict=True), frame["verdict"], strict=True)
        )
        documents = sorted(set(frame["left"]) | set(frame["right"]))
        segments = settle([Segment((), tuple(initial_order(documents, seed, query)))], known)
        for segment in segments:
            if not segment.closed:
                missing = next(c for c in segment.comparisons() if lookup(known, *c) is None)
                raise InputError(
                    f"query {query!r}: no answer compares {missing[0]!r} with {missing[1]!r}, "
                    "which the sort needs; fit TieBradleyTerry for answers on arbitrary pairs"
                )
        rows.extend(
            (query, document, group)
            for group, segment in enumerate(segments, start=1)
            for document in segment.members
        )
    return pd.DataFrame(rows, columns=LIST_COLUMNS)


def _agreement_row(pairs: pd.DataFrame) -> dict:
    counts = pairs[["more", "equal", "less"]].to_numpy(dtype=float)
    return {
        "pairs": len(pairs),
        "answers": int(counts.sum()),
        "agreement": float(pairs["agreement"].mean()),
        "alpha": krippendorff_alpha(counts),
        "kappa": fleiss_kappa(counts),
    }


def agreement(answers: pd.DataFrame, by_query: bool = False) -> pd.Series | pd.DataFrame:
    """How much the workers agree: ``pairs``, ``answers``, ``agreement`` (the mean inter-agreement
    of the pairs with two answers or more, the preference-judgments paper §5.3), ``alpha``
    (Krippendorff's α, ordinal on less < equal < more) and ``kappa`` (Fleiss' κ).

    A Series over all answers, or with ``by_query`` a frame with one row per query.
    """
    pairs = verdicts(answers)
    if by_query:
        rows = {query: _agreement_row(frame) for query, frame in pairs.groupby("query")}
        return pd.DataFrame.from_dict(rows, orient="index").rename_axis("query")
    return pd.Series(_agreement_row(pairs))


def to_answers_frame(
    answers: pd.DataFrame, ids: tuple[pd.Series, pd.Series] | None = None, *, checked: bool = False
) -> pd.DataFrame:
    """The answers as the audit's answers frame (:data:`crowdprefs.results_file.FRAME_COLUMNS`).

    One HIT per query and pair (``pair_id`` as in :func:`verdicts`), all in iteration 1, sorting
    pairs shown as A = ``left``; work times from ``seconds`` when given; times, rewards and
    listening times unknown. ``ids``: each answer's ``hit_id`` and ``assignment_id`` instead;
    ``checked``: ``answers`` is already a :func:`preference_frame` (not checked again).
    """
    oriented = _oriented(answers if checked else preference_frame(answers))
    seconds = oriented.get("seconds", np.nan)
    if ids is None:
        ids = (
            "pair-" + oriented["pair_id"].astype(str),
            "answer-" + pd.Series(np.arange(len(oriented)), oriented.index).astype(str),
        )
    frame = pd.DataFrame(
        {
            "iteration": pd.array(np.ones(len(oriented), int), dtype="Int64"),
            "pair_id": oriented["pair_id"],
            "hit_id": np.asarray(ids[0]),
            "created_at": pd.NaT,
            "max_assignments": np.nan,
            "reward": np.nan,
            "query": oriented["query"],
            "x": oriented["x"],
            "y": oriented["y"],
            "a_is_x": oriented["a_is_x"].astype(int),
            "kind": "sort",
            "expected": np.nan,
            "pivot_known": False,
            "worker_id": oriented["worker"],
            "assignment_id": np.asarray(ids[1]),
            "status": "submitted",
            "choice": oriented["label"].map({"left": "A", "equal": "equal", "right": "B"}),
            "score": oriented["score"].astype(float),
            "seconds": seconds,
            "listen_seconds": np.nan,
            "accepted_at": pd.NaT,
            "submitted_at": pd.NaT,
            "background": "",
            "comment": "",
        },
        index=oriented.index,
    )
    frame.attrs["empty_rows"] = []
    return frame[list(FRAME_COLUMNS)].reset_index(drop=True)


def from_answers_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The usable sorting answers of an audit answers frame (a project's, or an MTurk results
    file's) as a preference frame: rejected and empty answers and attention checks are left
    out; ``left`` is the variation shown as A; ``seconds`` is kept."""
    missing = [c for c in ("worker_id", "query", "x", "y", "a_is_x", "choice") if c not in frame]
    if missing:
        raise InputError(f"the answers frame lacks column(s) {', '.join(missing)}")
    keep = frame["choice"].isin(["A", "B", "equal"])
    if "status" in frame:
        keep &= frame["status"] != "rejected"
    if "kind" in frame:
        keep &= frame["kind"] == "sort"
    used = frame[keep]
    shown_a = used["a_is_x"].astype(bool)
    data = pd.DataFrame(
        {
            "worker": used["worker_id"],
            "query": used["query"],
            "left": np.where(shown_a, used["x"], used["y"]),
            "right": np.where(shown_a, used["y"], used["x"]),
            "label": used["choice"].map({"A": "left", "equal": "equal", "B": "right"}),
        },
        index=used.index,
    )
    if "seconds" in used:
        data["seconds"] = used["seconds"]
    return preference_frame(data)


def worker_flags(
    answers: pd.DataFrame,
    rules: FlagRules = FlagRules(),
    rule: AggregationRule = AggregationRule(),
) -> pd.DataFrame:
    """``worker, flag, evidence``: one row per flag rule a worker breaks
    (:class:`crowdprefs.quality.flags.FlagRules`; agreement is judged against the verdicts of
    ``rule``). Without a ``seconds`` column the time rules cannot fire."""
    frame = to_answers_frame(answers)
    flags = flag_workers(frame, pair_verdicts(frame, rule), rules)
    return flags.rename(columns={"worker_id": "worker"})


def transitivity_violations(
    answers: pd.DataFrame,
    by: Literal["query", "worker"] = "query",
    rule: AggregationRule = AggregationRule(),
) -> pd.DataFrame:
    """How often preferences are not transitive: ``triples``, ``violations``, ``rate``
    (:func:`crowdprefs.campaign.transitivity.violation_rates`), indexed by query or worker.

    ``by="query"``: over the :func:`verdicts` of each query (by ``rule``). ``by="worker"``: over
    each worker's own answers, query by query, summed (a pair a worker answered more than once
    counts with the sign of their mean answer).
    """
    if by not in ("query", "worker"):
        raise InputError(f"by must be 'query' or 'worker', got {by!r}")
    if by == "query":
        pairs = verdicts(answers, rule)
        judgments = pairs.rename(columns={"left": "x", "right": "y", "verdict": "value"})
    else:
        judgments = _oriented(preference_frame(answers)).rename(columns={"score": "value"})
    return violation_rates(judgments, by=by)


@dataclass
class TieBradleyTerry:
    """The tie-aware Bradley–Terry model with worker reliabilities
    (:mod:`crowdprefs.campaign.bradley_terry`), with crowd-kit's ``fit``/``fit_predict`` surface.

    ``ties``: ``davidson`` (Davidson 1970) or ``rao-kupper`` (Rao & Kupper 1967);
    ``reliability``: fit each worker's reliability and noise (Crowd-BT, Chen et al. 2013;
    ``True``), trust every answer (``False``) or fit them unless they are not identifiable
    (``"auto"``: too few answers per worker; one line on stderr then says so);
    ``alpha``: the level of the test separating groups.

    After :meth:`fit`: ``scores_`` (Series indexed by ``query, document``; higher = more
    similar), ``standard_errors_`` (same index), ``lists_`` (``query, document, group``, group 1
    most similar), ``tie_`` (ν or θ), ``reliabilities_`` (Series by worker, η in (0, 1): the
    probability that an answer follows the model), ``noise_`` (per worker, the shares of
    ``left, equal, right`` when they do not), ``log_likelihood_``, ``converged_`` and
    ``fallback_`` (why reliabilities were dropped, or ``None``).
    """

    ties: TieModel = "davidson"
    reliability: Reliability = "auto"
    alpha: float = 0.05
    scores_: pd.Series = field(init=False, repr=False)
    standard_errors_: pd.Series = field(init=False, repr=False)
    lists_: pd.DataFrame = field(init=False, repr=False)
    tie_: float = field(init=False, repr=False)
    reliabilities_: pd.Series = field(init=False, repr=False)
    noise_: pd.DataFrame = field(init=False, repr=False)
    log_likelihood_: float = field(init=False, repr=False)
    converged_: bool = field(init=False, repr=False)
    fallback_: str | None = field(init=False, repr=False)

    def fit(self, answers: pd.DataFrame) -> TieBradleyTerry:
        """Fit on every answer of every query (one tie parameter and one reliability per worker
        across queries, scores per query)."""
        answers = preference_frame(answers)
        items = pd.MultiIndex.from_arrays(
            [
                np.concatenate([answers["query"], answers["query"]]),
                np.concatenate([answers["left"], answers["right"]]),
            ],
            names=["query", "document"],
        )
        codes, unique = pd.factorize(items, sort=True)
        n = len(answers)
        workers, worker_names = pd.factorize(answers["worker"], sort=True)
        block, _ = pd.factorize(unique.get_level_values(0))
        outcome = answers["label"].map({"left": 1, "equal": 0, "right": -1}).to_numpy()
        fit = fit_bradley_terry(
            codes[:n],
            codes[n:],
            outcome,
            workers,
            block,
            n_items=len(unique),
            n_workers=len(worker_names),
            ties=self.ties,
            reliability=self.reliability,
            alpha=self.alpha,
        )
        index = pd.MultiIndex.from_tuples(list(unique), names=["query", "document"])
        self.scores_ = pd.Series(fit.scores, index=index, name="score")
        self.standard_errors_ = pd.Series(fit.standard_errors, index=index, name="standard_error")
        lists = pd.DataFrame(
            {
                "query": index.get_level_values("query"),
                "document": index.get_level_values("document"),
                "group": fit.groups,
                "score": fit.scores,
            }
        )
        lists = lists.sort_values(["query", "group", "score"], ascending=[True, True, False])
        self.lists_ = lists[LIST_COLUMNS].reset_index(drop=True)
        self.tie_ = fit.tie
        workers_index = pd.Index(worker_names, name="worker")
        self.reliabilities_ = pd.Series(fit.reliability, index=workers_index, name="reliability")
        self.noise_ = pd.DataFrame(
            fit.noise, index=workers_index, columns=["left", "equal", "right"]
        )
        self.log_likelihood_ = fit.log_likelihood
        self.converged_ = fit.converged
        self.fallback_ = fit.fallback
        line = fallback_line(fit)
        if line is not None:
            from crowdprefs import progress

            progress.note(f"bradley-terry: {line}")
        return self

    def fit_predict(self, answers: pd.DataFrame) -> pd.Series:
        """:meth:`fit`, then the scores."""
        return self.fit(answers).scores_
