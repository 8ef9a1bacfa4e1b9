"""The workers of a campaign and the one set of worker-flag rules (the preference-judgments
paper §4.2 and §5.3).

:func:`worker_profiles` and :func:`flag_workers`: who answered what, how fast, how well, and
which workers look careless or automatic (the rules are in :class:`FlagRules`). These are the
one set of worker-flag rules: the review of MTurk answers (:mod:`crowdprefs.quality.review`)
flags with them too, against the verdicts of the project's aggregation rule.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from crowdprefs.campaign.aggregate import AggregationRule, pair_verdicts, tally, usable
from crowdprefs.campaign.answers import LISTENING_FIELDS, listening_record
from crowdprefs.errors import InputError
from crowdprefs.quality.agreement import answer_agreement
from crowdprefs.quality.frames import CHOICES, validate


def background_class(text: pd.Series) -> pd.Series:
    """The preference-judgments paper §5.3's split of the background answers: ``some`` (the answer
    is ``yes``), ``none`` (``no``), ``unknown`` (no answer) or ``unclassified`` (free text: never
    guessed).

    The results reader maps a file's own yes/no values to ``yes``/``no``
    (:class:`crowdprefs.results_file.Columns`); the comparison ignores case.
    """
    text = text.fillna("").astype(str).str.strip().str.lower()
    classes = text.map({"yes": "some", "no": "none", "": "unknown"})
    return classes.fillna("unclassified").astype(str)


LISTENING_COLUMNS = ("listen_coverage", "listened")
"""Optional columns of an answers frame (:func:`with_listening`): each answer's mean share of
its clips heard through (NaN: its play log does not tell) and whether every clip was heard by
the listening rule every crowd applies (NaN: no play log)."""


def listening_columns(records: pd.DataFrame, min_coverage: float = 0.9) -> pd.DataFrame:
    """:data:`LISTENING_COLUMNS` of the answers ``records`` (same index): from each one's raw
    record (a ``raw`` column, JSON with the play log under ``fields``, as both crowds store it)
    or else from play-log columns (named as the page names them, with or without a results
    file's ``Answer.`` prefix), judged by
    :func:`crowdprefs.campaign.answers.listening_record` with ``min_coverage``."""
    if "raw" in records:
        logs = [_raw_fields(raw) for raw in records["raw"]]
    else:
        present = {
            c: n for c in records.columns if (n := c.removeprefix("Answer.")) in LISTENING_FIELDS
        }
        table = records[list(present)].rename(columns=present).astype(object)
        logs = table.where(table.notna(), None).to_dict("records")
    judged = [listening_record(log, min_coverage=min_coverage) for log in logs]
    return pd.DataFrame(
        {
            "listen_coverage": pd.Series([c for c, _ in judged], records.index, float),
            "listened": pd.Series([h for _, h in judged], records.index, "boolean"),
        }
    )


def _raw_fields(raw: object) -> dict:
    try:
        fields = json.loads(raw).get("fields") if isinstance(raw, str) else None
    except (ValueError, AttributeError):
        fields = None
    return fields if isinstance(fields, dict) else {}


def with_listening(
    answers: pd.DataFrame, records: pd.DataFrame, min_coverage: float = 0.9
) -> pd.DataFrame:
    """``answers`` (an answers frame) with :data:`LISTENING_COLUMNS` from ``records`` (the
    stored answers, with ``assignment_id, worker_id, raw``: :func:`listening_columns`),
    matched by assignment and worker; NaN where no record matches."""
    key = ["assignment_id", "worker_id"]
    found = records[key].join(listening_columns(records, min_coverage))
    found = found.drop_duplicates(key, keep="last")
    kept = answers.drop(columns=[c for c in LISTENING_COLUMNS if c in answers])
    joined = kept.merge(found, on=key, how="left", validate="many_to_one")
    joined.index = answers.index
    joined.attrs = dict(answers.attrs)
    return joined


def worker_profiles(answers: pd.DataFrame, pairs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per worker, indexed by ``worker_id``.

    ``answers`` (usable), ``empty``, ``rejected``; ``share_A``, ``share_equal``, ``share_B``;
    ``position_bias`` = share_A − share_B (−1 … 1: a lean to the variation shown first or second,
    the preference-judgments paper §4.2); ``median_seconds``, ``min_seconds`` and ``listen_ratio``
    (median of work time over the HIT's listening time); ``verdict_agreement`` (mean of
    :func:`answer_agreement` against the aggregated verdicts of the sorting pairs) over
    ``verdict_answers``; ``checks`` and ``check_failures`` (attention checks whose answer differs
    from the known one; rejected answers count here, since a failed check is a reason to reject);
    ``iterations`` worked and the ``first_iteration``; the last ``background`` answer and its
    :func:`background_class`; ``comments``; from the play logs (:data:`LISTENING_COLUMNS`,
    NaN where the frame has none), of the answers given (rejected ones included):
    ``listen_coverage``, the mean share of a clip heard through, ``logged_answers`` with a play
    log, ``unheard`` of them given without every clip heard, and ``unheard_share``.
    """
    validate(answers)
    if pairs is None:
        pairs = pair_verdicts(answers)
    good = usable(answers)
    worker = good.groupby("worker_id")
    counts = tally(good["worker_id"], good["choice"], CHOICES)
    shares = counts.div(counts.sum(axis=1), axis=0)
    profile = pd.DataFrame(index=pd.Index(answers["worker_id"].unique(), name="worker_id"))
    profile["answers"] = worker.size()
    profile["empty"] = (answers["choice"] == "").groupby(answers["worker_id"]).sum()
    profile["rejected"] = (answers["status"] == "rejected").groupby(answers["worker_id"]).sum()
    for choice in CHOICES:
        profile[f"share_{choice}"] = shares[choice]
    profile["position_bias"] = profile["share_A"] - profile["share_B"]
    profile["median_seconds"] = worker["seconds"].median()
    profile["min_seconds"] = worker["seconds"].min()
    profile["listen_ratio"] = (
        (good["seconds"] / good["listen_seconds"]).groupby(good["worker_id"]).median()
    )
    sort = good[(good["kind"] == "sort") & good["pair_id"].isin(pairs.index)]
    points = answer_agreement(sort["score"], sort["pair_id"].map(pairs["verdict"]))
    by_worker = pd.Series(points, index=sort.index).groupby(sort["worker_id"])
    profile["verdict_agreement"] = by_worker.mean()
    profile["verdict_answers"] = by_worker.size()
    given = answers[answers["choice"] != ""]
    checks = given[(given["kind"] == "check") & given["expected"].notna()]
    failed = checks["score"] != checks["expected"]
    profile["checks"] = checks.groupby("worker_id").size()
    profile["check_failures"] = failed.groupby(checks["worker_id"]).sum()
    profile["iterations"] = worker["iteration"].nunique()
    profile["first_iteration"] = worker["iteration"].min()
    given = answers[answers["background"].fillna("") != ""]
    profile["background"] = given.groupby("worker_id")["background"].last()
    profile["background"] = profile["background"].fillna("").astype(str)
    profile["background_class"] = background_class(profile["background"])
    profile["comments"] = (answers["comment"].fillna("") != "").groupby(answers["worker_id"]).sum()
    given = answers[answers["choice"] != ""]
    coverage = given.get("listen_coverage", pd.Series(np.nan, given.index)).astype(float)
    listened = given.get("listened", pd.Series(pd.NA, given.index, "boolean")).astype("boolean")
    logged = listened.notna()
    profile["listen_coverage"] = coverage.groupby(given["worker_id"]).mean()
    profile["logged_answers"] = logged.groupby(given["worker_id"]).sum()
    profile["unheard"] = (logged & ~listened.fillna(True)).groupby(given["worker_id"]).sum()
    counts = ["answers", "empty", "rejected", "verdict_answers", "checks", "check_failures",
              "logged_answers", "unheard"]  # fmt: skip
    profile[counts] = profile[counts].fillna(0).astype(int)
    profile["iterations"] = profile["iterations"].fillna(0).astype(int)
    logged_answers = profile["logged_answers"].where(profile["logged_answers"] > 0)
    profile["unheard_share"] = profile["unheard"] / logged_answers
    return profile.sort_values(["answers", "worker_id"], ascending=[False, True])


@dataclass(frozen=True)
class FlagRules:
    """The rules of :func:`flag_workers` (the preference-judgments paper §4.2: careless workers and
    robots).

    ``constant-answer``  at least ``min_answers`` answers, all the same option, and that this
                         happens by chance with probability below ``constant_p`` for a worker
                         answering like the crowd (p_cⁿ, p_c the crowd's share of that option;
                         the preference-judgments paper's two robots always answered "equal").
    ``constant-time``    at least ``min_answers`` answers, all with the same work time (the
                         robots took exactly 8 s each time).
    ``bot``              at least ``bot_answers`` answers, all the same option in the same work
                         time, whatever the crowd's shares (both robots at once; the rule the
                         MTurk review blocks on).
    ``too-fast``         at least ``min_answers`` answers and a median work time shorter than the
                         clips' listening time (when the durations are known: ``listen_ratio < 1``),
                         else shorter than ``fast_seconds`` (the preference-judgments paper §4.1:
                         hearing a HIT's three clips once took 13 s on average and never less
                         than 4 s). One fast answer is no evidence: clips can be heard in MTurk's
                         preview, before the work time starts.
    ``failed-checks``    at least ``min_checks`` attention checks, at least ``check_failures``
                         of them failed, making more than ``check_share`` of them.
    ``low-agreement``    at least ``min_answers`` answers on decided pairs whose agreement with the
                         aggregated verdicts lies ``z`` standard errors or more below the crowd's
                         (z = (a_w − ā)/(s/√n_w), ā and s the mean and standard deviation over all
                         answers).
    ``empty-answers``    at least ``empty_answers`` submissions without an answer.
    ``not-listening``    at least ``unheard_answers`` answers given without every clip heard
                         through (by the play log the page sent, :data:`LISTENING_COLUMNS`),
                         making more than ``unheard_share`` of the worker's answers with a log.
    """

    min_answers: int = 5
    constant_p: float = 0.001
    fast_seconds: float = 8.0
    bot_answers: int = 5
    min_checks: int = 1
    check_failures: int = 1
    check_share: float = 0.4
    z: float = 3.0
    empty_answers: int = 2
    unheard_answers: int = 2
    unheard_share: float = 0.2

    def __post_init__(self) -> None:
        if self.min_answers < 2 or self.bot_answers < 2 or self.z <= 0 or self.fast_seconds < 0:
            raise InputError(
                "flag rules need min_answers >= 2, bot_answers >= 2, z > 0 and fast_seconds >= 0"
            )
        if not 0 < self.constant_p <= 1:
            raise InputError(f"constant_p must lie in (0, 1], got {self.constant_p}")
        if self.min_checks < 1 or self.check_failures < 1 or not 0 <= self.check_share <= 1:
            raise InputError(
                "flag rules need min_checks >= 1, check_failures >= 1 and check_share in [0, 1]"
            )
        if self.unheard_answers < 1 or not 0 <= self.unheard_share <= 1:
            raise InputError("flag rules need unheard_answers >= 1 and unheard_share in [0, 1]")


FLAGS = (
    "constant-answer",
    "constant-time",
    "bot",
    "too-fast",
    "failed-checks",
    "low-agreement",
    "empty-answers",
    "not-listening",
)


def _flag_rules(
    p: pd.DataFrame, rules: FlagRules, chance: pd.Series, mean: float, z: pd.Series
) -> dict[str, tuple[pd.Series, Callable[[Any], str]]]:
    """Each flag's ``(mask of the workers of profile table p who break it, evidence of a
    profile row)``: ``chance`` each worker's chance of constant answers at the crowd's shares,
    ``z`` the worker's agreement score against the crowd's ``mean`` (see :class:`FlagRules`)."""
    enough = p["answers"] >= rules.min_answers
    known_listen = p["listen_ratio"].notna()

    def seconds(v: float) -> str:
        return f"{v:g} s"

    return {
        "constant-answer": (
            enough & (p["choice_nunique"] == 1) & (chance < rules.constant_p),
            lambda r: (
                f"all {r.answers} answers were {r.choice_first!r} "
                f"(chance {chance[r.Index]:.1g} at the crowd's shares)"
            ),
        ),
        "constant-time": (
            enough & (p["time_nunique"] == 1),
            lambda r: f"all {r.answers} answers took exactly {seconds(r.time_first)}",
        ),
        "bot": (
            (p["answers"] >= rules.bot_answers)
            & (p["choice_nunique"] == 1)
            & (p["time_nunique"] == 1),
            lambda r: f"{r.answers} identical answers in identical time",
        ),
        "too-fast": (
            enough
            & (
                (known_listen & (p["listen_ratio"] < 1))
                | (~known_listen & (p["median_seconds"] < rules.fast_seconds))
            ),
            lambda r: (
                f"median work time {r.median_seconds:.1f} s is {r.listen_ratio:.2f} of the "
                "clips' listening time"
                if pd.notna(r.listen_ratio)
                else f"median work time {r.median_seconds:.1f} s < {rules.fast_seconds:g} s "
                f"(over {r.answers} answers, fastest {seconds(r.min_seconds)})"
            ),
        ),
        "failed-checks": (
            (p["checks"] >= rules.min_checks)
            & (p["check_failures"] >= rules.check_failures)
            & (p["check_failures"] > rules.check_share * p["checks"]),
            lambda r: f"failed {r.check_failures} of {r.checks} attention checks",
        ),
        "low-agreement": (
            (p["verdict_answers"] >= rules.min_answers) & (z <= -rules.z),
            lambda r: (
                f"agreement with the verdicts {r.verdict_agreement:.3f} over {r.verdict_answers} "
                f"answers against the crowd's {mean:.3f} (z = {z[r.Index]:.1f})"
            ),
        ),
        "empty-answers": (
            p["empty"] >= rules.empty_answers,
            lambda r: f"{r.empty} submissions without an answer",
        ),
        "not-listening": (
            (p["unheard"] >= rules.unheard_answers) & (p["unheard_share"] > rules.unheard_share),
            lambda r: (
                f"{r.unheard} of {r.logged_answers} answers given without hearing every clip "
                "through"
                + (
                    f" (mean share of a clip heard {r.listen_coverage:.0%})"
                    if pd.notna(r.listen_coverage)
                    else ""
                )
            ),
        ),
    }


def flag_workers(
    answers: pd.DataFrame,
    verdicts: pd.DataFrame | AggregationRule,
    rules: FlagRules = FlagRules(),
    profiles: pd.DataFrame | None = None,
    *,
    select: tuple[str, ...] = FLAGS,
) -> pd.DataFrame:
    """``worker_id, flag, evidence``: one row per rule of ``select`` a worker breaks (see
    :class:`FlagRules`).

    ``verdicts`` are the pairs' verdicts to judge agreement against (:func:`pair_verdicts`,
    e.g. a project's own), or the aggregation rule that makes them from ``answers`` (a
    project's rule: a margin-rule project's workers are judged against margin verdicts). The
    evidence is one line a person can check; workers are in profile order (most answers first).
    Both the audit and the MTurk review (:mod:`crowdprefs.quality.review`) flag with it.
    """
    unknown = set(select) - set(FLAGS)
    if unknown:
        raise InputError(f"unknown worker flag(s) {', '.join(sorted(unknown))}")
    validate(answers)
    pairs = pair_verdicts(answers, verdicts) if isinstance(verdicts, AggregationRule) else verdicts
    if profiles is None:
        profiles = worker_profiles(answers, pairs)
    good = usable(answers)
    times = good.groupby("worker_id")["seconds"].agg(["nunique", "first"])
    choice = good.groupby("worker_id")["choice"].agg(["nunique", "first"])
    p = profiles.join(times.add_prefix("time_")).join(choice.add_prefix("choice_"))
    shares = good["choice"].value_counts(normalize=True)
    chance = p["choice_first"].map(shares).astype(float) ** p["answers"]
    sort = good[(good["kind"] == "sort") & good["pair_id"].isin(pairs.index)]
    points = answer_agreement(sort["score"], sort["pair_id"].map(pairs["verdict"]))
    mean, sd = (float(np.mean(points)), float(np.std(points))) if len(points) else (np.nan, np.nan)
    z = (p["verdict_agreement"] - mean) / (sd / np.sqrt(p["verdict_answers"].clip(lower=1)))
    rules_met = _flag_rules(p, rules, chance, mean, z)
    rows = []
    for flag in select:
        mask, evidence = rules_met[flag]
        rows.extend(
            (worker.Index, flag, evidence(worker)) for worker in p[mask.fillna(False)].itertuples()
        )
    order = {w: i for i, w in enumerate(p.index)}
    flags = pd.DataFrame(rows, columns=["worker_id", "flag", "evidence"])
    flags["_order"] = flags["worker_id"].map(order)
    flags["_flag"] = flags["flag"].map(FLAGS.index)
    return (
        flags.sort_values(["_order", "_flag"])
        .drop(columns=["_order", "_flag"])
        .reset_index(drop=True)
    )


def review_reasons(flags: pd.DataFrame) -> pd.DataFrame:
    """Flags as the MTurk review step takes them (``crowdprefs mturk collect --flags``): one
    row per worker, ``worker_id, reason``, the reason joining every ``flag: evidence``."""
    reason = (flags["flag"] + ": " + flags["evidence"]).groupby(flags["worker_id"], sort=False)
    return reason.agg("; ".join).rename("reason").reset_index()


def flag_quality(flags: pd.DataFrame, kinds: pd.Series) -> dict:
    """Precision and recall of the flags against known worker kinds (``honest`` or not), as the
    simulated crowd plants them (:class:`crowdprefs.crowds.simulated.WorkerPool`)."""
    flagged = set(flags["worker_id"])
    bad = set(kinds.index[kinds != "honest"])
    hits = len(flagged & bad)
    return {
        "flagged": len(flagged),
        "planted": len(bad),
        "true_positives": hits,
        "precision": hits / len(flagged) if flagged else float("nan"),
        "recall": hits / len(bad) if bad else float("nan"),
    }
