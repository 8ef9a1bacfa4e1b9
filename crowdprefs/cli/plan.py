"""Planning commands: ``plan`` (simulate designs before paying) and ``crowd-model fit``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console, escape
from crowdprefs.cli.options import (
    AUDIT_SHARE,
    MAX_CAMPAIGNS,
    MAX_WRONG,
    MIN_VERDICTS,
    OUTPUT,
    SEQUENTIAL_ALPHA,
    SEQUENTIAL_FUTILITY,
    Alpha,
    AnswersPerPair,
    Candidates,
    ColumnsFile,
    CrowdModelFile,
    Margin,
    ResultsFile,
    Reward,
    Rule,
    Scheduler,
    Seed,
    StudyJobs,
    column_options,
    count,
    finite,
    setting,
)

if TYPE_CHECKING:
    from crowdprefs.results_file import Columns

crowd_model_app = typer.Typer(
    help="Calibrate the simulated crowd from recorded answers.", no_args_is_help=True
)
app.add_typer(crowd_model_app, name="crowd-model")

_LABELS = {
    "iterations": ("iterations", "{:.1f}"),
    "rounds": ("rounds of answers", "{:.1f}"),
    "pairs": ("pairs", "{:.0f}"),
    "answers": ("answers", "{:.0f}"),
    "cost": ("cost $ (fees incl.)", "{:.2f}"),
    "wall_hours": ("wall time h", "{:.1f}"),
    "rounds_pipelined": ("rounds, segments pipelined", "{:.1f}"),
    "wall_hours_pipelined": ("wall time h, segments pipelined", "{:.1f}"),
    "adr": ("ADR vs truth", "{:.3f}"),
    "order_recovered": ("order relations recovered", "{:.3f}"),
    "ties_kept": ("true ties kept", "{:.3f}"),
    "machine_pairs": ("pairs decided by the prior", "{:.1f}"),
}


@app.command()
def plan(
    candidates: Candidates,
    truth: Annotated[
        Path | None,
        typer.Option(
            help="Group qrels of a hidden truth to simulate against (default: a random truth of "
            "about three candidates per group)."
        ),
    ] = None,
    answers_per_pair: AnswersPerPair = 10,
    adaptive: Annotated[
        str,
        typer.Option(
            help="Adaptive answers: off, curtail or sequential; an adaptive design is shown "
            "beside the fixed one, compared campaign by campaign."
        ),
    ] = "off",
    maximum: Annotated[
        int | None,
        typer.Option(
            callback=setting("adaptive", "maximum"),
            help="Adaptive: most answers a pair can get (default: answers per pair).",
        ),
    ] = None,
    initial: Annotated[
        int,
        typer.Option(
            callback=setting("adaptive", "initial"), help="Adaptive: answers asked first."
        ),
    ] = 4,
    step: Annotated[
        int,
        typer.Option(
            callback=setting("adaptive", "step"), help="Adaptive: answers added per round."
        ),
    ] = 2,
    epsilon: Annotated[
        float,
        typer.Option(
            help="Curtail: stop a pair once the fixed rule's verdict after all its answers is "
            "predictable with probability 1 - epsilon (0: only when certain).",
            parser=finite,
        ),
    ] = 0.0,
    prior: Annotated[
        float,
        typer.Option(
            help="Adaptive: Dirichlet prior of the predictive (Pólya urn).", parser=finite
        ),
    ] = 1.0,
    alpha: Annotated[
        float,
        typer.Option(
            "--false-different-rate",
            help="Sequential: the stated rate of truly equal pairs declared different.",
            parser=finite,
        ),
    ] = SEQUENTIAL_ALPHA,
    futility: Annotated[
        float,
        typer.Option(
            help="Sequential: stop as equal below this chance to separate.", parser=finite
        ),
    ] = SEQUENTIAL_FUTILITY,
    rule: Rule = "mann-whitney",
    level: Alpha = 0.05,
    margin: Margin = 2,
    reward: Reward = 0.02,
    pivot_b_share: Annotated[
        float, typer.Option(help="Share of pairs showing the pivot as variation B.", parser=finite)
    ] = 0.5,
    flag_each_round: Annotated[
        bool,
        typer.Option(
            "--flag-each-round",
            help="Also show the last design with careless workers flagged after each round of "
            "answers (the audit's rules), blocked, and their answers replaced, as the "
            "\\[review] flag_each_round setting does.",
        ),
    ] = False,
    min_flips: Annotated[
        int,
        typer.Option(
            callback=setting("fragility", "min_flips"),
            help="Also show the last design with further answers for every pair whose verdict "
            "fewer than this many changed answers flip (2: none one answer flips), as the "
            "\\[fragility] min_flips setting does; 0: not shown.",
        ),
    ] = 0,
    fragile_step: Annotated[
        int,
        typer.Option(
            callback=setting("fragility", "step"),
            help="--min-flips: answers added per further round.",
        ),
    ] = 2,
    fragile_maximum: Annotated[
        int | None,
        typer.Option(
            callback=setting("fragility", "maximum"),
            help="--min-flips: most answers a pair can get (default: twice answers per pair).",
        ),
    ] = None,
    prior_correlation: Annotated[
        list[float] | None,
        typer.Option(
            help="Also show the last design with a machine prior whose scores have this "
            "Spearman correlation with the truth (repeat for several; negative: a model that "
            "ranks against it), as init --prior does.",
            show_default=False,
            parser=finite,
        ),
    ] = None,
    prior_bias: Annotated[
        float,
        typer.Option(
            help="--prior-correlation: the model's lean toward the clip shown first, in "
            "score standard deviations.",
            parser=finite,
        ),
    ] = 0.0,
    prior_skip: Annotated[
        bool,
        typer.Option(
            "--prior-skip",
            help="--prior-correlation: the calibrated model decides the pairs its calibration "
            "shows safe, less an audit sample, as \\[prior] skip = true does.",
        ),
    ] = False,
    max_wrong: Annotated[
        float,
        typer.Option(
            help="--prior-skip: the share of a campaign's machine verdicts that may differ "
            "from the human design's, shown by the calibration at 95% confidence, as \\[prior] "
            "max_wrong does.",
            parser=finite,
        ),
    ] = MAX_WRONG,
    audit_share: Annotated[
        float,
        typer.Option(help="--prior-skip: the share of each batch asked anyway.", parser=finite),
    ] = AUDIT_SHARE,
    min_verdicts: Annotated[
        int,
        typer.Option(
            callback=setting("prior", "min_verdicts"),
            help="--prior-skip: the calibration pairs each round of the sort asks first, as "
            "\\[prior] min_verdicts does.",
        ),
    ] = MIN_VERDICTS,
    skip_confidence: Annotated[
        float | None, typer.Option(hidden=True, help="Removed: see --max-wrong.", parser=finite)
    ] = None,
    max_overturn: Annotated[
        float | None, typer.Option(hidden=True, help="Removed: see --max-wrong.", parser=finite)
    ] = None,
    prior_weight: Annotated[
        float,
        typer.Option(
            help="--prior-correlation with --adaptive: pseudo-answers of the calibrated model "
            "in each pair's stopping rule (0: none), as \\[prior] weight does.",
            parser=finite,
        ),
    ] = 0.0,
    crowd_model: CrowdModelFile = None,
    runs: Annotated[
        Path | None,
        typer.Option(
            help="Run files of the systems to rank: also simulate the campaign that asks only "
            "what can change their order, beside the full sort."
        ),
    ] = None,
    measure: Annotated[
        str, typer.Option(help="--runs: the measure to rank the systems by (ADR@k, AG@k, nDCG@k).")
    ] = "ADR@5",
    confidence: Annotated[
        float,
        typer.Option(
            help="--runs: stop when every pair of systems holds with this probability.",
            parser=finite,
        ),
    ] = 0.95,
    campaigns: Annotated[
        int,
        typer.Option(callback=count(1, MAX_CAMPAIGNS), help="Campaigns to simulate per design."),
    ] = 100,
    seed: Seed = 0,
    csv_out: Annotated[
        Path | None,
        typer.Option(*OUTPUT, help="Also write one row per design and campaign to this CSV."),
    ] = None,
    jobs: StudyJobs = None,
    scheduler: Scheduler = None,
) -> None:
    """Estimate a campaign's cost, duration and list quality before any money is spent.

    Simulates the campaign many times with the simulated crowd: iterations, rounds, pairs,
    answers, cost, wall time, and how well the lists recover the hidden truth; an adaptive
    design, further answers for fragile verdicts, and flagging careless workers during the
    campaign, are compared with the fixed design on the same simulated campaigns."""
    from dataclasses import replace

    from crowdprefs.parallel import Runner

    runner = Runner.from_options(jobs, scheduler)
    from crowdprefs.campaign.adaptive import nominal_level
    from crowdprefs.campaign.aggregate import AggregationRule
    from crowdprefs.files import output as output_file
    from crowdprefs.machine.overturn import SkipRule
    from crowdprefs.machine.policy import PriorPolicy
    from crowdprefs.machine.simulated import SimulatedPrior
    from crowdprefs.progress import make_progress
    from crowdprefs.quality.crowd_model import CrowdModel, load_crowd_model
    from crowdprefs.quality.planning import compare_designs, simulate_designs

    out = output_file(
        csv_out,
        {
            "--candidates": candidates,
            "--truth": truth,
            "--crowd-model": crowd_model,
            "--runs": runs,
        },
    )
    ranked = _ranked_systems(runs, measure, confidence)
    frame, hidden = _hidden_truth(candidates, truth, seed)
    aggregation = AggregationRule(rule=rule, alpha=level, margin=margin)
    designs, stopping = _human_designs(
        aggregation, answers_per_pair, reward, pivot_b_share, adaptive=adaptive,
        initial=initial, step=step, maximum=maximum, alpha=alpha, futility=futility, prior=prior,
        epsilon=epsilon, min_flips=min_flips, fragile_step=fragile_step,
        fragile_maximum=fragile_maximum, flag_each_round=flag_each_round,
    )  # fmt: skip
    human_name, human = list(designs.items())[-1]
    _refuse_removed(skip_confidence, max_overturn)
    skip_set = (max_wrong, audit_share, min_verdicts) != (MAX_WRONG, AUDIT_SHARE, MIN_VERDICTS)
    _check_prior_options(
        prior_correlation, prior_bias, prior_skip, prior_weight, human.adaptive is not None,
        skip_set,
    )  # fmt: skip
    skip = None
    if prior_skip:
        skip = SkipRule(max_wrong=max_wrong, audit_share=audit_share, min_verdicts=min_verdicts)
    policy = PriorPolicy(skip, prior_weight)
    for correlation in prior_correlation or []:
        machine = SimulatedPrior(correlation, prior_bias)
        designs[f"{human_name} + prior r={correlation:g}"] = replace(
            human, prior=machine, machine=policy
        )
    model = load_crowd_model(crowd_model) if crowd_model else CrowdModel()
    with make_progress(transient=True) as progress:
        task = progress.add_task(
            f"simulating campaigns {runner.where}", total=campaigns * len(designs)
        )
        results = simulate_designs(
            hidden,
            designs,
            model,
            campaigns=campaigns,
            seed=seed,
            on_campaign=lambda done: progress.update(task, completed=done),
            runner=runner,
        )
    if out is not None:
        from crowdprefs.io import csv_text

        out.write(csv_text(results))
    shown = [m for m in _LABELS if m != "machine_pairs" or prior_correlation]
    table = _design_table(compare_designs(results, next(iter(designs))), list(designs), shown)
    table.title = (
        f"{campaigns} simulated campaigns per design: {frame['query'].nunique()} queries, "
        f"{len(frame)} candidates; mean ± 95% interval, differences paired"
    )
    console.print(table)
    for line in _prior_lines(results, designs):
        console.print(line, highlight=False, soft_wrap=True)
    if ranked is not None:
        _plan_systems(hidden, ranked, designs[next(iter(designs))], model, campaigns, seed)
    if stopping is not None and stopping.method == "sequential":
        per_look, worst = nominal_level(stopping)
        console.print(
            f"sequential rule: per-look Mann-Whitney level {per_look:.4f}; false 'different' "
            f"rate on truly equal pairs at most {worst:.3f} (stated {stopping.alpha})"
        )


def _hidden_truth(candidates: Path, truth: Path | None, seed: int):
    """``(candidates, hidden truth)`` for ``plan``: the truth read from ``truth`` (a random one
    of about three candidates per group without it), refused if a candidate has no group."""
    from crowdprefs.campaign.project import read_candidates
    from crowdprefs.errors import InputError
    from crowdprefs.io import read_lists
    from crowdprefs.quality.crowd_model import random_truth

    frame = read_candidates(candidates)
    hidden = read_lists(truth) if truth else random_truth(frame, seed)
    known = set(zip(hidden["query"], hidden["document"], strict=True))
    pairs = zip(frame["query"], frame["document"], strict=True)
    lacking = [(q, d) for q, d in pairs if (q, d) not in known]
    if lacking:
        raise InputError(
            f"{truth}: no group for query {lacking[0][0]!r}, document {lacking[0][1]!r}"
        )
    return frame, hidden.merge(frame[["query", "document"]], on=["query", "document"])


def _human_designs(
    aggregation, answers_per_pair: int, reward: float, pivot_b_share: float, *, adaptive: str,
    initial: int, step: int, maximum: int | None, alpha: float, futility: float, prior: float,
    epsilon: float, min_flips: int, fragile_step: int, fragile_maximum: int | None,
    flag_each_round: bool,
):  # fmt: skip
    """``({name: Design}, stopping rule or None)`` of ``plan``'s options: the fixed design,
    then the adaptive rule, further answers for fragile verdicts and flagging during the
    campaign, each added to the design before it."""
    from dataclasses import replace

    from crowdprefs.campaign.adaptive import FragilityRule, StoppingRule
    from crowdprefs.quality.planning import Design

    fixed = Design(answers_per_pair, aggregation, None, reward, pivot_b_share=pivot_b_share)
    designs = {f"{answers_per_pair} answers, {aggregation.decider.title(aggregation)}": fixed}
    stopping = None
    if adaptive != "off":
        most = maximum or answers_per_pair
        stopping = StoppingRule(
            method=adaptive,  # type: ignore[arg-type]
            initial=min(initial, most),
            step=step,
            maximum=most,
            alpha=alpha,
            futility=futility,
            prior=prior,
            epsilon=epsilon,
            aggregation=aggregation,
        )
        name = (
            f"{adaptive}{f' ε={epsilon:g}' if epsilon else ''} ({stopping.initial}+{step}…{most})"
        )
        designs[name] = Design(most, aggregation, stopping, reward, pivot_b_share=pivot_b_share)
    if min_flips:
        fragility = FragilityRule(
            min_flips=min_flips,
            step=fragile_step,
            maximum=fragile_maximum or 2 * answers_per_pair,
            aggregation=aggregation,
        )
        last_name, last = list(designs.items())[-1]
        designs[f"{last_name} + {_fragility_name(min_flips)}"] = replace(last, fragility=fragility)
    if flag_each_round:
        last_name, last = list(designs.items())[-1]
        designs[f"{last_name} + flag and block"] = replace(last, flag_each_round=True)
    return designs, stopping


def _refuse_removed(skip_confidence: float | None, max_overturn: float | None) -> None:
    """Refuse ``plan``'s removed options, naming the one that replaced them."""
    from crowdprefs.errors import InputError

    removed_options = (("--skip-confidence", skip_confidence), ("--max-overturn", max_overturn))
    for removed, value in removed_options:
        if value is not None:
            raise InputError(
                f"{removed} was removed: --max-wrong bounds the campaign's share of wrong "
                "machine verdicts (docs/tasks/prior.md)"
            )


def _ranked_systems(runs: Path | None, measure: str, confidence: float):
    """``(runs frame, measure, confidence)`` for ``plan --runs``, checked before anything runs;
    ``None`` without ``--runs``."""
    from crowdprefs.campaign.systems import parse_rank_measure
    from crowdprefs.errors import InputError
    from crowdprefs.io import read_runs

    if runs is None:
        if measure != "ADR@5" or confidence != 0.95:
            raise InputError("--measure and --confidence rank the systems of --runs: give --runs")
        return None
    if not 0.5 < confidence < 1:
        raise InputError(f"--confidence must lie in (0.5, 1), got {confidence}")
    return read_runs(runs), parse_rank_measure(measure), confidence


def _plan_systems(hidden, ranked, design, model, campaigns: int, seed: int) -> None:
    """Simulate the system-driven campaign beside the full sort and print both."""
    import numpy as np

    from crowdprefs.campaign.systems import retrieved
    from crowdprefs.progress import make_progress
    from crowdprefs.quality.planning import Collection
    from crowdprefs.quality.system_plan import compare_campaigns

    frame, measure, confidence = ranked
    collection = Collection.from_truth(hidden)
    found = retrieved(frame, collection.queries, collection.documents, collection.query, measure.k)
    rows = []
    with make_progress(transient=True) as progress:
        task = progress.add_task("simulating system-driven campaigns", total=campaigns)
        for i in range(campaigns):
            outcome = compare_campaigns(
                collection, design, model, found, measure, seed * 1_000_003 + i,
                confidence=confidence,
            )  # fmt: skip
            rows.append(outcome.summary)
            progress.update(task, completed=i + 1)
    table = Table(
        title=f"ranking {len(found.systems)} systems by {measure}: {campaigns} campaigns, the "
        f"full sort and the campaign that stops when every pair of systems holds at {confidence:g}"
    )
    for column in ("", "answers", "cost $", "batches", "Kendall τ vs finished", "pairs decided"):
        table.add_column(column, justify="left" if not column else "right")
    mean = {key: float(np.mean([row[key] for row in rows])) for key in rows[0] if key != "stopped"}
    table.add_row(
        "full sort", f"{mean['full_answers']:.0f}", f"{mean['full_cost']:.2f}",
        f"{mean['full_batches']:.1f}", "1", "all",
    )  # fmt: skip
    wrong = sum(row["decided_wrong"] for row in rows)
    decided = sum(row["decided"] for row in rows)
    table.add_row(
        "system-driven",
        f"{mean['answers']:.0f} ({mean['answer_share']:.0%})",
        f"{mean['cost']:.2f}",
        f"{mean['batches']:.1f}",
        f"{mean['kendall_tau']:.3f} (min {min(row['kendall_tau'] for row in rows):.3f})",
        f"{mean['decided']:.1f} of {mean['decided'] + mean['undecided']:.0f}",
    )
    console.print(table)
    swapped = sum(row["significant_swapped"] for row in rows)
    significant = sum(row["significant_pairs"] for row in rows)
    console.print(
        f"decided pairs that the finished lists order otherwise: {wrong} of {decided}; pairs "
        f"significant on the finished lists (Wilcoxon, 0.05) ordered otherwise: {swapped} of "
        f"{significant} (finished: the full sort from the campaign's first pivots, at the "
        "systems' consensus k-th places)",
        highlight=False,
        soft_wrap=True,
    )


def _fragility_name(min_flips: int) -> str:
    """``no verdict one answer flips`` (min_flips = 2), ``no verdict 2 answers flip`` (3)…"""
    fewest = min_flips - 1
    return "no verdict " + ("one answer flips" if fewest == 1 else f"{fewest} answers flip")


def _check_prior_options(
    correlations, bias: float, skip: bool, weight: float, adaptive: bool, skip_options: bool
) -> None:
    """Refuse, in one line, a prior option that would change nothing: one without
    --prior-correlation, --prior-weight without --adaptive, a skipping option without
    --prior-skip, a correlation given twice."""
    from crowdprefs.errors import InputError

    if not correlations and (bias or skip or weight or skip_options):
        raise InputError(
            "--prior-bias, --prior-skip and --prior-weight plan a prior: give --prior-correlation"
        )
    if weight and not adaptive:
        raise InputError(
            "--prior-weight weighs the adaptive stopping rule: give --adaptive curtail or "
            "sequential"
        )
    if skip_options and not skip:
        raise InputError("--max-wrong, --audit-share and --min-verdicts apply to --prior-skip")
    repeated = sorted({r for r in correlations or [] if list(correlations).count(r) > 1})
    if repeated:
        raise InputError(
            f"--prior-correlation {repeated[0]:g} is given twice: the designs would be identical"
        )


CORRELATION_TOLERANCE = 0.05
"""How far the realised correlation may lie from the one asked before plan says so (or three
standard errors of its mean over the campaigns, when more)."""


def _prior_lines(results, designs: dict) -> list[str]:
    """Per design with a simulated prior: the realised correlation (and a word when it is not
    the one asked) and, when it skips, the machine's share of wrong verdicts (true: over all
    campaigns, a campaign without one counting none, and over those that skipped; audited)
    against its level and the human design's own flip rate, how often the true share stayed
    within the level and the audit's interval covered it."""
    lines = []
    for name, design in designs.items():
        if design.prior is None:
            continue
        rows = results[results["design"] == name]
        realised = rows["prior_correlation"].mean()
        error = rows["prior_correlation"].std(ddof=1) / math.sqrt(len(rows)) if len(rows) > 1 else 0
        line = f"{escape(name)}: realised Spearman r {realised:+.2f}"
        if abs(realised - design.prior.correlation) > max(CORRELATION_TOLERANCE, 3 * error):
            line += (
                f" (not the {design.prior.correlation:+.2f} asked: the collection's queries, "
                "their sizes and ties, cannot realise it)"
            )
        skip = design.machine.skip
        if skip is not None:
            line += (
                f"; {rows['machine_pairs'].mean():.1f} pairs decided by the prior at max_wrong "
                f"{skip.max_wrong:g}; the human design's own verdicts flip between two crowds in "
                f"{rows['human_flip'].mean():.0%}"
            )
            needed = skip.calibration_needed()
            if skip.min_verdicts < needed:
                line += (
                    f"; {skip.min_verdicts} calibration pairs a round cannot show max_wrong "
                    f"{skip.max_wrong:g} at {skip.level:.0%} confidence (at least {needed} are "
                    "needed, --min-verdicts): the prior can decide no pair"
                )
            skipped = rows[rows["wrong_true"].notna()]
            if skipped.empty:
                line += "; no campaign left a pair to the prior"
            else:
                true = skipped["wrong_true"]
                share = rows["wrong_true"].fillna(0.0)  # no machine verdict: none wrong
                audited = skipped[skipped["audited"] > 0]
                covered = (audited["wrong_low"] <= audited["wrong_true"]) & (
                    audited["wrong_true"] <= audited["wrong_high"]
                )
                line += (
                    f"; wrong machine verdicts: {share.mean():.1%} over all campaigns, "
                    f"{true.mean():.1%} in the {len(skipped)} that skipped; at most max_wrong in "
                    f"{(share <= skip.max_wrong).mean():.0%} of campaigns (promised: 95%)"
                )
                if len(audited):
                    line += (
                        f"; audit {audited['wrong'].mean():.1%}, its interval covers the true "
                        f"share in {covered.mean():.0%} of {len(audited)} campaigns"
                    )
        lines.append(line)
    return lines


def _design_table(comparison, designs: list[str], measures: list[str]) -> Table:
    """The ``measures`` down; per design its mean ± the half-width of the 95% interval; then
    each later design's paired difference from the first."""
    table = Table()
    table.add_column("measure")
    for name in designs:
        table.add_column(escape(name), justify="right")
    for name in designs[1:]:
        table.add_column(f"Δ {escape(name)}", justify="right")

    def cell(fmt: str, mean: float, low: float, high: float) -> str:
        if math.isnan(mean):
            return "–"
        return f"{fmt.format(mean)} ± {fmt.format((high - low) / 2).lstrip('+')}"

    for measure in measures:
        label, fmt = _LABELS[measure]
        rows = [comparison.loc[(name, measure)] for name in designs]
        cells = [cell(fmt, r["mean"], r["ci_low"], r["ci_high"]) for r in rows]
        signed = fmt.replace("{:", "{:+")
        cells += [cell(signed, r["delta"], r["delta_low"], r["delta_high"]) for r in rows[1:]]
        table.add_row(label, *cells)
    return table


@crowd_model_app.command("fit")
@column_options
def fit(
    results: ResultsFile,
    lists: Annotated[
        Path | None,
        typer.Option(
            help="The lists the campaign produced (group qrels): each pair's gap is read from "
            "them, and the predictive check simulates against them."
        ),
    ] = None,
    rule: Rule = "mann-whitney",
    level: Alpha = 0.05,
    margin: Margin = 2,
    bootstrap: Annotated[  # max: crowdprefs.quality.planning.MAX_CAMPAIGNS, checked first
        int,
        typer.Option(
            callback=count(0, MAX_CAMPAIGNS),
            help="Bootstrap replicates (over workers) for the intervals.",
        ),
    ] = 50,
    campaigns: Annotated[
        int,
        typer.Option(
            callback=count(1, MAX_CAMPAIGNS),
            help="Simulated campaigns of the predictive check (needs --lists).",
        ),
    ] = 200,
    seed: Seed = 0,
    output: Annotated[
        Path, typer.Option(*OUTPUT, help="TOML file to write the fitted model to.")
    ] = Path("crowd-model.toml"),
    columns: Columns = None,
    columns_file: ColumnsFile = None,
    jobs: StudyJobs = None,
    scheduler: Scheduler = None,
) -> None:
    """Fit the simulated crowd to a recorded campaign, for 'plan --crowd-model'.

    The workers' noise, 'equal' tendency and lean to B (as distributions), careless share,
    bots, activity and times are fitted with bootstrap intervals and saved as TOML. With
    --lists the model is checked against the campaign: its recorded design simulated on its
    candidates against its lists. --rule, --alpha and --margin give the rule it used."""
    from crowdprefs.parallel import Runner

    runner = Runner.from_options(jobs, scheduler)
    from crowdprefs.campaign.aggregate import AggregationRule
    from crowdprefs.files import output as output_file
    from crowdprefs.io import read_lists
    from crowdprefs.progress import make_progress
    from crowdprefs.quality.crowd_fit import fit_crowd_model, predictive_check, save_fit
    from crowdprefs.results_file import read_results

    out = output_file(output, {"RESULTS": results, "--lists": lists, "--columns": columns_file})
    aggregation = AggregationRule(rule=rule, alpha=level, margin=margin)
    from crowdprefs.cli.audit import report_reading

    answers = read_results(results, columns)
    report_reading(answers)
    produced = read_lists(lists) if lists else None
    with make_progress() as progress:
        task = progress.add_task(
            f"fitting the crowd model, bootstrap {runner.where}", total=bootstrap or None
        )
        fitted = fit_crowd_model(
            answers,
            produced,
            bootstrap=bootstrap,
            seed=seed,
            runner=runner,
            on_replicate=lambda done: progress.update(task, completed=done),
        )
    save_fit(fitted, out)
    model = fitted.model
    source = "its lists" if produced is not None else "latent gaps"
    table = Table(
        title=f"crowd model fitted to {escape(str(results))} ({fitted.pairs} pairs, "
        f"{fitted.answers} answers, gaps from {source})"
    )
    table.add_column("parameter")
    table.add_column("value", justify="right")
    table.add_column("95% interval", justify="right")
    for name, value in model.to_dict().items():
        low_high = fitted.intervals.get(name)
        shown = f"{value:.3g}" if isinstance(value, float) else str(value)
        interval = f"{low_high[0]:.3g} – {low_high[1]:.3g}" if low_high else ""
        table.add_row(
            name, shown, f"not fitted: {fitted.kept[name]}" if name in fitted.kept else interval
        )
    gaps = fitted.gap_shares
    shares = " ".join(f"{g}:{s:.2f}" for g, s in gaps.items() if g < 5)
    beyond = sum(s for g, s in gaps.items() if g >= 5)
    table.add_row("pairs by gap (groups)", shares + (f" ≥5:{beyond:.2f}" if beyond else ""), "")
    console.print(table)
    console.print(f"wrote {escape(str(out))}")
    if produced is None:
        console.print("predictive check: give the campaign's lists (--lists) to run it")
        return
    with make_progress() as progress:
        task = progress.add_task(
            f"simulating the recorded design {runner.where}", total=2 * campaigns
        )
        check = predictive_check(
            fitted.replicates or model,
            answers,
            produced,
            aggregation,
            campaigns,
            seed,
            runner=runner,
            on_done=lambda done: progress.update(task, completed=done),
        )
    design = check.attrs["design"]
    report = Table(
        title=f"predictive check: {campaigns} simulated campaigns of the recorded design "
        f"({design.answers_per_pair} answers per pair, {aggregation.decider.title(aggregation)}, "
        f"pivot shown as B in "
        f"{design.pivot_b_share:.0%} of pairs) against the lists"
    )
    for column in ("statistic", "recorded", "simulated mean", "5% – 95%", "inside"):
        report.add_column(column, justify="left" if column == "statistic" else "right")
    for statistic, row in check.iterrows():
        fmt = "{:.3f}" if str(statistic).startswith(("share", "agreement")) else "{:.1f}"
        inside = row["p5"] <= row["recorded"] <= row["p95"]
        report.add_row(
            str(statistic),
            fmt.format(row["recorded"]),
            fmt.format(row["simulated"]),
            f"{fmt.format(row['p5'])} – {fmt.format(row['p95'])}",
            "yes" if inside else "no",
        )
    console.print(report)
