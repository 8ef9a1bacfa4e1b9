"""Auditing a campaign's workers (the preference-judgments paper §4.2 and §5): the whole audit.

:func:`audit` runs every table of an answers frame (:mod:`crowdprefs.quality.frames`) into an
:class:`Audit`; :func:`audit_project` audits a project. The tables come from one module each:

* :mod:`crowdprefs.quality.iterations`: the preference-judgments paper Table 2 per iteration and
  in total;
* :mod:`crowdprefs.quality.flags`: worker profiles and the one set of worker-flag rules;
* :mod:`crowdprefs.quality.agreement`: chance-corrected agreement and the preference-judgments
  paper Tables 3–6 against reference lists;
* :mod:`crowdprefs.quality.transitivity`: non-transitive verdict triples and transitivity
  violations per query and per worker;
* :mod:`crowdprefs.quality.fragility` and :mod:`crowdprefs.quality.stability`: how many answers
  would have to change for each verdict and each list to change, and how often resampled crowds
  rebuild each list (:func:`how_sure`).

The names that lived here before those modules were split off (:data:`MOVED`) still work, with a
:class:`DeprecationWarning` naming their new home, for one release.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crowdprefs.campaign.aggregate import AggregationRule, pair_verdicts, usable
from crowdprefs.campaign.budget import FeeModel
from crowdprefs.errors import InputError
from crowdprefs.io import csv_frame, csv_text
from crowdprefs.moved import moved_names
from crowdprefs.parallel import SERIAL, Runner
from crowdprefs.quality import fragility, stability
from crowdprefs.quality.agreement import agreement_summary, reference_agreement
from crowdprefs.quality.flags import FlagRules, flag_workers, review_reasons, worker_profiles
from crowdprefs.quality.frames import validate
from crowdprefs.quality.iterations import iteration_table
from crowdprefs.quality.sorted_campaign import SortedCampaign
from crowdprefs.quality.transitivity import contradictions, overall_rate, transitivity

if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path

    from crowdprefs.campaign.project import Project
    from crowdprefs.files import OutputFolder

MOVED = {
    **dict.fromkeys(
        ("project_answers", "project_verdicts", "infer_iterations"), "crowdprefs.quality.frames"
    ),
    **dict.fromkeys(
        (
            "answer_agreement",
            "choice_counts",
            "fleiss_kappa",
            "krippendorff_alpha",
            "reference_verdicts",
            "confusion_table",
        ),
        "crowdprefs.quality.agreement",
    ),  # fmt: skip
    **dict.fromkeys(
        (
            "answer_costs",
            "round_dollars",
            "summarise_iterations",
            "money",
            "duration",
            "table_2_cells",
        ),
        "crowdprefs.quality.iterations",
    ),  # fmt: skip
    **dict.fromkeys(("background_class", "flag_quality"), "crowdprefs.quality.flags"),
}
"""Public names moved from this module to another: name → the module that now holds it."""

__getattr__ = moved_names(__name__, MOVED)


FRAGILE_COLUMNS = ["query", "x", "y", "kind", "more", "equal", "less", "verdict", "removals",
                   "flips", "exact", "confirmed"]  # fmt: skip
"""The columns of :attr:`Audit.fragile_pairs`."""


@dataclass(frozen=True)
class Sureness:
    """How sure a campaign's lists are (:func:`how_sure`): every pair's fragility, the most
    fragile first (:data:`FRAGILE_COLUMNS`); per list its fragility and stability
    (:data:`crowdprefs.quality.fragility.LIST_COLUMNS` and
    :data:`crowdprefs.quality.stability.LIST_COLUMNS`); per group boundary how often it
    reappears; and a summary."""

    pairs: pd.DataFrame
    lists: pd.DataFrame
    boundaries: pd.DataFrame
    summary: dict


def how_sure(
    campaign: SortedCampaign,
    *,
    resamples: int = 0,
    seed: int = 0,
    runner: Runner = SERIAL,
    on_resample: Callable[[int], None] | None = None,
) -> Sureness:
    """The fragility of every verdict and closed list of ``campaign``
    (:mod:`crowdprefs.quality.fragility`) and, with ``resamples``, the lists' stability over
    that many bootstrap crowds (:mod:`crowdprefs.quality.stability`)."""
    costs = fragility.verdict_costs(campaign.pairs, campaign.rule, campaign.answers)
    pairs = fragility.pair_fragility(campaign.pairs, costs=costs)
    lists = fragility.list_fragility(
        campaign.pairs, campaign.orders, costs=costs, scores=campaign.scores
    )
    summary = fragility.summary(pairs, lists) | {"exact": bool(pairs["exact"].all())}
    boundaries = pd.DataFrame(columns=stability.BOUNDARY_COLUMNS)
    if campaign.rule.decider.whole_query:
        resamples = 0  # one refit per resample: not offered (stability.resample_groups)
        summary["stability"] = f"not computed for the {campaign.rule.rule} rule"
    if resamples and campaign.orders:
        resampled = stability.resample_groups(
            campaign.answers, campaign.pairs, campaign.orders, campaign.rule,
            resamples=resamples, seed=seed, runner=runner, on_done=on_resample,
            scores=campaign.scores,
        )  # fmt: skip
        stable, boundaries = stability.stability(resampled, seed)
        lists = lists.merge(stable.drop(columns="groups"), on="query", how="left")
        summary |= {
            "resamples": resamples,
            "boundaries_kept": float(stable["boundaries_kept"].mean()),
            "same_list": float(stable["same_list"].mean()),
            "same_top": float(stable["same_top"].mean()),
            "expected_adr": float(stable["expected_adr"].mean()),
        }
    order = pairs.assign(_key=pairs["flips"].fillna(np.iinfo(np.int64).max))
    order = order.sort_values(["_key", "removals"], kind="stable", na_position="last")
    return Sureness(order[FRAGILE_COLUMNS].reset_index(), lists, boundaries, summary)


@dataclass
class Audit:
    """Every table of an audit (see :func:`audit`)."""

    iterations: pd.DataFrame
    workers: pd.DataFrame
    flags: pd.DataFrame
    pairs: pd.DataFrame
    contradictions: pd.DataFrame
    transitivity: dict[str, pd.DataFrame] = field(default_factory=dict)
    reference: dict[str, pd.DataFrame] = field(default_factory=dict)
    facts: dict = field(default_factory=dict)
    answers: pd.DataFrame | None = None
    sureness: Sureness | None = None

    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table by name, flat (the worker review flags included), for CSV exports."""
        return {
            "iterations": self.iterations,
            "workers": self.workers.reset_index(),
            "flags": self.flags,
            "review_flags": review_reasons(self.flags),
            "contradictions": self.contradictions,
            **{f"transitivity {k}": v.reset_index() for k, v in self.transitivity.items()},
            **{f"reference {k}": v.reset_index() for k, v in self.reference.items()},
            **(
                {}
                if self.sureness is None
                else {
                    "fragile_pairs": self.sureness.pairs,
                    "lists": self.sureness.lists,
                    "list_boundaries": self.sureness.boundaries,
                }
            ),
        }

    def write_csv(self, folder: Path | OutputFolder) -> list[Path]:
        """Write every table of :meth:`tables` as ``folder/NAME.csv`` (every file checked
        before any is written: :class:`~crowdprefs.files.OutputFolder`); returns the files."""
        from crowdprefs.files import OutputFolder

        folder = folder if isinstance(folder, OutputFolder) else OutputFolder(folder)
        tables = self.tables()
        outputs = folder.files(f"{table_name(name)}.csv" for name in tables)
        for out, table in zip(outputs, tables.values(), strict=True):
            out.write(csv_text(table))
        return [out.path for out in outputs]

    def to_json(self) -> dict:
        """Plain JSON-ready data: every table as a list of rows (NaN as null)."""

        def rows(frame: pd.DataFrame, index: bool = False) -> list[dict]:
            frame = frame.reset_index() if index else frame
            return frame.astype(object).to_dict(orient="records")

        def plain(value):
            if isinstance(value, dict):
                return {k: plain(v) for k, v in value.items()}
            if isinstance(value, list):
                return [plain(v) for v in value]
            if value is pd.NA or value is pd.NaT:
                return None
            if isinstance(value, np.generic):
                value = value.item()
            return None if isinstance(value, float) and np.isnan(value) else value

        return plain(
            {
                "facts": self.facts,
                "iterations": rows(self.iterations),
                "workers": rows(self.workers, index=True),
                "flags": rows(self.flags),
                "contradictions": rows(self.contradictions),
                "transitivity": {
                    name: rows(table, index=True) for name, table in self.transitivity.items()
                },
                "reference": {
                    name: {
                        "table": rows(table, index=True),
                        "summary": agreement_summary(table),
                    }
                    for name, table in self.reference.items()
                },
                **(
                    {}
                    if self.sureness is None
                    else {
                        "fragility": self.sureness.summary,
                        "fragile_pairs": rows(self.sureness.pairs),
                        "lists": rows(self.sureness.lists),
                        "list_boundaries": rows(self.sureness.boundaries),
                    }
                ),
            }
        )


def read_worker_attribute(path: Path) -> pd.Series:
    """``worker_id → attribute`` from a CSV whose first column is the worker and second the
    attribute (to split the single-answer reference tables by, e.g. musical training)."""

    from crowdprefs.files import read_text

    if not path.exists():  # anything else (a folder, a named pipe): read_text says what it is
        raise InputError(f"{path}: no such file")
    text, _ = read_text(path, "worker attribute file")
    table = csv_frame(text, path)
    if table.shape[1] < 2:
        raise InputError(f"{path}: need two columns, worker_id and an attribute")
    return table.set_index(table.columns[0])[table.columns[1]]


def audit(
    answers: pd.DataFrame,
    *,
    pairs: pd.DataFrame | None = None,
    rule: AggregationRule = AggregationRule(),
    fees: FeeModel = FeeModel(),
    reward: float | None = None,
    reference: pd.DataFrame | None = None,
    split_by: pd.Series | None = None,
    rules: FlagRules = FlagRules(),
    found_contradictions: pd.DataFrame | None = None,
    sureness: Sureness | None = None,
    aggregated: bool | None = None,
) -> Audit:
    """The whole audit of an answers frame.

    ``pairs`` are the verdicts to judge workers against (a project's own; otherwise the answers
    are aggregated with ``rule``); ``fees`` and ``reward`` (where the answers do not know
    theirs) price the answers; ``reference`` ordered lists give the confusion tables, split by
    ``split_by`` (worker → attribute) or else by the background class;
    ``found_contradictions`` replaces the triples computed from ``pairs`` (a project's driver
    reports its own); ``sureness`` (:func:`how_sure`) joins the audit as it is. ``aggregated``
    says the ``pairs`` given were aggregated with ``rule`` (not a project's stored verdicts).
    """
    validate(answers)
    aggregated = pairs is None if aggregated is None else aggregated
    if pairs is None:
        pairs = pair_verdicts(answers, rule)
    profiles = worker_profiles(answers, pairs)
    flags = flag_workers(answers, pairs, rules, profiles)
    table = iteration_table(answers, pairs, fees, reward=reward)
    tables = {}
    if reference is not None:
        by = split_by if split_by is not None else profiles["background_class"]
        tables = reference_agreement(answers, pairs, reference, by)
    empty = answers.attrs.get("empty_rows", [])
    rates = transitivity(answers, pairs)
    facts = {
        "source": answers.attrs.get("source"),
        "answers": len(answers),
        "usable_answers": len(usable(answers)),
        "empty_answers": int((answers["choice"] == "").sum()),
        "empty_rows": [int(r) for r in empty],
        "rejected_answers": int((answers["status"] == "rejected").sum()),
        "workers": int(answers["worker_id"].nunique()),
        "flagged_workers": int(flags["worker_id"].nunique()),
        "transitivity_violation_rate": overall_rate(rates["queries"]),
        "overall_median_seconds": float(usable(answers)["seconds"].median()),
        "rule": rule.rule if aggregated else "the project's verdicts",
        "identity": answers.attrs.get("identity"),
        "encoding": answers.attrs.get("encoding"),
    }
    return Audit(
        iterations=table,
        workers=profiles,
        flags=flags,
        pairs=pairs,
        contradictions=contradictions(pairs)
        if found_contradictions is None
        else found_contradictions,
        transitivity=rates,
        reference=tables,
        facts=facts,
        answers=answers,
        sureness=sureness,
    )


def audit_project(
    project: Project,
    *,
    reference: pd.DataFrame | None = None,
    split_by: pd.Series | None = None,
    rules: FlagRules = FlagRules(),
    resamples: int = 0,
    seed: int = 0,
    runner: Runner = SERIAL,
    on_resample: Callable[[int], None] | None = None,
) -> Audit:
    """:func:`audit` of a project: its answers (with the listening their stored play logs
    prove: :func:`crowdprefs.quality.review.listened_answers`), its stored verdicts, its fees,
    the contradictions its driver met, and how sure its lists are (:func:`how_sure` with
    ``resamples`` bootstrap crowds). :class:`InputError` when it has no answers yet."""
    from crowdprefs.campaign.driver import query_contradictions
    from crowdprefs.campaign.prior import machine_audit
    from crowdprefs.quality.review import listened_answers

    campaign = SortedCampaign.of_project(project, listened_answers(project))
    sureness = how_sure(
        campaign, resamples=resamples, seed=seed, runner=runner, on_resample=on_resample
    )
    result = audit(
        campaign.answers,
        pairs=campaign.pairs,
        fees=project.settings.fees,
        reference=reference,
        split_by=split_by,
        rules=rules,
        found_contradictions=query_contradictions(project),
        sureness=sureness,
    )
    machine = machine_audit(project)
    if machine is not None:  # the lists hold verdicts of the machine prior: its audit
        result.facts["machine"] = machine
    return result


_SAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def table_name(name: str) -> str:
    """A file-name-safe version of a table's name (for CSV exports)."""
    return _SAFE.sub("_", name).strip("_")
