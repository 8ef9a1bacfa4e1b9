"""Options shared by the commands, and the library defaults their help shows.

Only typer and the standard library are imported here: the library's modules (pandas, scipy...)
load inside the commands that use them, so that ``crowdprefs --help`` starts at once. The
defaults below are the library's own, restated because importing them would load the library;
``tests/cli/test_options.py`` checks that each still equals the value it restates.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from crowdprefs.crowds.results import Columns

#: ``crowdprefs.campaign.project.DEFAULT_SEED``
DEFAULT_SEED = 2010
#: ``crowdprefs.crowds.CROWDS``
CROWDS = ("simulated", "web", "mturk-sandbox", "mturk-fake", "prolific")
#: ``crowdprefs.campaign.adaptive.StoppingRule``: ``alpha`` and ``futility``
SEQUENTIAL_ALPHA = 0.3
SEQUENTIAL_FUTILITY = 0.2
#: ``crowdprefs.crowds.results.Columns``
COLUMNS = {
    "query": "Input.query",
    "a": "Input.docA",
    "b": "Input.docB",
    "answer": "Answer.choice",
    "a_value": "A",
    "b_value": "B",
    "equal_value": "equal",
    "pivot": "Input.pivot",
}
#: ``crowdprefs.evaluation.power.PROCEDURES``: name → description
PROCEDURES = {
    "FT": "Friedman + Tukey HSD, α = 0.05",
    "W1": "1-tailed Wilcoxon signed-rank, α = 0.01",
    "W2": "2-tailed Wilcoxon signed-rank, α = 0.05",
    "T1": "1-tailed paired t-test, α = 0.01",
    "S1": "1-tailed sign test, α = 0.01",
}
#: ``crowdprefs.evaluation.gawm.MEANS``
MEANS = ("min", "harmonic", "geometric", "arithmetic", "max")
#: ``crowdprefs.evaluation.stats.PAIRWISE_TESTS``
PAIRWISE_TESTS = ("wilcoxon", "t", "sign", "mann-whitney")

# ---------------------------------------------------------------------------- shared options
# One spelling per meaning, for every command that takes it.

ProjectDir = Annotated[
    Path,
    typer.Argument(
        metavar="PROJECT", help="The project folder (holds crowdprefs.toml and state.sqlite)."
    ),
]
Candidates = Annotated[
    Path,
    typer.Option("--candidates", help="CSV with columns query,document[,audio][,query_audio]."),
]
Seed = Annotated[
    int, typer.Option("--seed", help="Seed of every random choice (same seed, same result).")
]
Crowd = Annotated[str, typer.Option("--crowd", help=f"Crowd backend: {', '.join(CROWDS)}.")]
CrowdModelFile = Annotated[
    Path | None,
    typer.Option(
        "--crowd-model",
        help="Simulated crowd model TOML (from 'crowdprefs crowd-model fit'); default: the "
        "built-in model.",
    ),
]
Jobs = Annotated[int, typer.Option("--jobs", "-j", min=1, help="Parallel audio jobs.")]
Json = Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")]
Wide = Annotated[
    bool, typer.Option("--wide", help="Show every column, however wide the table gets.")
]
#: The option naming the file (or folder) a command writes its result to.
OUTPUT = ("--output", "-o")
Yes = Annotated[bool, typer.Option("--yes", help="Do not ask to confirm.")]

# What a campaign buys and how it decides a pair (init, plan; audit and replay of recordings).
AnswersPerPair = Annotated[
    int,
    typer.Option(
        "--answers-per-pair",
        help="Answers bought for each pair (the most a pair gets when answers are adaptive).",
    ),
]
Reward = Annotated[float, typer.Option("--reward", help="Reward per answer in US$.")]
Rule = Annotated[
    str,
    typer.Option(
        "--rule",
        help="How a pair's answers give its verdict: mann-whitney (a test at level --alpha) or "
        "margin (one side needs --margin more votes).",
    ),
]
Alpha = Annotated[
    float,
    typer.Option(
        "--alpha", help="Significance level α: a difference counts when its p-value is below it."
    ),
]
Margin = Annotated[
    int, typer.Option("--margin", help="Net votes a side needs under the margin rule.")
]
PartialPublish = Annotated[
    bool,
    typer.Option(
        "--partial", help="Publish the part of the batch that fits the budget (the rest waits)."
    ),
]
PartialLists = Annotated[
    bool, typer.Option("--partial", help="Also list queries whose sort is still open.")
]

# Reading an answers file recorded elsewhere (audit, import-answers, replay, crowd-model fit).
ResultsFile = Annotated[
    Path,
    typer.Argument(
        metavar="RESULTS",
        help="Answers recorded as an MTurk batch-results CSV (other platforms' exports: set the "
        "column options).",
    ),
]
QueryColumn = Annotated[
    str, typer.Option("--query-column", help="Column of the query (the original melody).")
]
AColumn = Annotated[
    str, typer.Option("--a-column", help="Column of the document shown as variation A.")
]
BColumn = Annotated[
    str, typer.Option("--b-column", help="Column of the document shown as variation B.")
]
AnswerColumn = Annotated[
    str, typer.Option("--answer-column", help="Column of the worker's choice.")
]
AValue = Annotated[str, typer.Option("--a-value", help="Answer value meaning 'A is more similar'.")]
BValue = Annotated[str, typer.Option("--b-value", help="Answer value meaning 'B is more similar'.")]
EqualValue = Annotated[
    str, typer.Option("--equal-value", help="Answer value meaning 'equally similar'.")
]
PivotColumn = Annotated[
    str,
    typer.Option(
        "--pivot-column", help="Column naming the segment's pivot (optional in the file)."
    ),
]


def results_columns(
    query: str,
    a: str,
    b: str,
    answer: str,
    a_value: str,
    b_value: str,
    equal_value: str,
    pivot: str,
) -> Columns:
    """The library's reading of a results file from the column options."""
    from crowdprefs.crowds.results import Columns

    return Columns(
        query=query,
        a=a,
        b=b,
        answer=answer,
        a_value=a_value,
        b_value=b_value,
        equal_value=equal_value,
        pivot=pivot,
    )


BatchGap = Annotated[
    float,
    typer.Option(
        "--batch-gap",
        help="Seconds between HIT creation times that start a new iteration "
        "(0 for campaigns of the simulated crowd).",
    ),
]

# Scoring systems (evaluate, stats).
Runs = Annotated[
    Path,
    typer.Option(
        "--runs",
        help="Run file or folder of run files: TREC runs or 'system query document' lines.",
    ),
]
OneSided = Annotated[
    bool,
    typer.Option(
        "--one-sided", help="One-tailed tests, in the direction of the observed mean difference."
    ),
]
Correction = Annotated[
    str | None,
    typer.Option(
        "--correction",
        help="Multiple-comparison correction (statsmodels name: holm, fdr_bh...).",
    ),
]
PlotFile = Annotated[
    Path | None, typer.Option("--plot", help="Save a figure here (PNG, PDF or SVG).")
]
