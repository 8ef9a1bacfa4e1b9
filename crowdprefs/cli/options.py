"""Options shared by the commands, and the library defaults their help shows.

Only typer and the standard library are imported here: the library's modules (pandas, scipy...)
load inside the commands that use them, so that ``crowdprefs --help`` starts at once. The
defaults below are the library's own, restated because importing them would load the library;
``tests/cli/test_options.py`` checks that each still equals the value it restates.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from crowdprefs.campaign import rules
from crowdprefs.crowds import CROWDS

if TYPE_CHECKING:
    from crowdprefs.results_file import Columns


def finite(text: str | float) -> float:
    """The parser of every float option: a finite number, or one line naming the value
    (``nan``, ``inf`` and ``1e999`` would slip through every range check after them)."""
    try:
        value = float(text)
    except ValueError:
        raise typer.BadParameter(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise typer.BadParameter(f"{text} is not a finite number")
    return value


def one_of(value: str, allowed: Sequence[str]) -> str:
    """An option's value checked against its allowed values (one line naming them)."""
    if value not in allowed:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(allowed)}")
    return value


#: ``crowdprefs.campaign.project.DEFAULT_SEED``
DEFAULT_SEED = 2010
#: ``crowdprefs.campaign.adaptive.StoppingRule``: ``alpha`` and ``futility``
SEQUENTIAL_ALPHA = 0.3
SEQUENTIAL_FUTILITY = 0.2
#: ``crowdprefs.machine.overturn.SkipRule``: ``max_wrong``, ``audit_share``, ``min_verdicts``
MAX_WRONG = 0.3
AUDIT_SHARE = 0.1
MIN_VERDICTS = 30
#: Ceilings of counts (each named in its option's message): ``crowdprefs.quality.planning.
#: MAX_CAMPAIGNS`` (simulated campaigns and bootstrap replicates), ``crowdprefs.quality.
#: stability.MAX_RESAMPLES`` (resampled crowds or query sets), ``crowdprefs.evaluation.measures.
#: MAX_CUTOFF`` (a measure's k), ``crowdprefs.web.assign.MAX_JUDGES`` (judges invited at once)
MAX_CAMPAIGNS = 10_000
MAX_RESAMPLES = 100_000
MAX_CUTOFF = 10_000
MAX_JUDGES = 10_000
#: The highest batch number ``preview --iteration`` takes
MAX_ITERATIONS = 1_000_000
#: ``crowdprefs.results_file.Columns`` (field → default) and ``COLUMN_OPTIONS`` (field →
#: option), with each option's help
COLUMNS = {
    "query": ("--query-column", "Input.query", "Column of the query (the original melody)."),
    "a": ("--a-column", "Input.docA", "Column of the document shown as variation A."),
    "b": ("--b-column", "Input.docB", "Column of the document shown as variation B."),
    "answer": ("--answer-column", "Answer.choice", "Column of the worker's choice."),
    "a_value": ("--a-value", "A", "Answer value meaning 'A is more similar'."),
    "b_value": ("--b-value", "B", "Answer value meaning 'B is more similar'."),
    "equal_value": ("--equal-value", "equal", "Answer value meaning 'equally similar'."),
    "pivot": ("--pivot-column", "Input.pivot", "Column naming the segment's pivot (optional)."),
    "check": (
        "--check-column",
        "Input.check",
        "Column of an attention check's expected answer (optional).",
    ),
    "hit": ("--hit-column", "HITId", "Column of the HIT (the question) id."),
    "worker": ("--worker-column", "WorkerId", "Column of the worker id."),
    "assignment": (
        "--assignment-column",
        "AssignmentId",
        "Column of the answer's own id (optional: without it an answer is its (HIT, worker)).",
    ),
    "status": (
        "--status-column",
        "AssignmentStatus",
        "Column of Approved/Rejected/Submitted (optional).",
    ),
    "created": ("--created-column", "CreationTime", "Column of the HIT's creation time."),
    "accepted": ("--accept-column", "AcceptTime", "Column of the time the worker took the HIT."),
    "submitted": ("--submit-column", "SubmitTime", "Column of the time the answer was sent."),
    "seconds": ("--seconds-column", "WorkTimeInSeconds", "Column of the work time in seconds."),
    "reward": ("--reward-column", "Reward", "Column of the reward paid (optional: --reward)."),
    "max_assignments": (
        "--max-assignments-column",
        "MaxAssignments",
        "Column of the answers bought per HIT (optional; sets MTurk's fee rate).",
    ),
    "background": (
        "--background-column",
        "Answer.background",
        "Column of the worker's musical background answer (optional).",
    ),
    "background_yes": ("--background-yes", "yes", "Background value meaning yes."),
    "background_no": ("--background-no", "no", "Background value meaning no."),
    "comment": ("--comment-column", "Answer.comment", "Column of the worker's comment."),
    "listen_seconds": (
        "--listen-seconds-column",
        "Input.listen_seconds",
        "Column of the HIT's total clip duration in seconds (optional).",
    ),
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


def renamed(new_names: dict[str, str]) -> type:
    """A command class (typer's ``cls=``) whose error for an option spelt the old way names its
    new spelling: ``{"--rule": "--combine"}``. Only the message: the old name is not accepted."""
    from typer.core import TyperCommand

    class Renamed(TyperCommand):
        def parse_args(self, ctx, args: list[str]) -> list[str]:
            try:
                return super().parse_args(ctx, args)
            except typer.TyperException as error:  # click's NoSuchOption, as typer ships it
                old = getattr(error, "option_name", None)
                if old not in new_names:
                    raise
                message = f"no option {old}: it is now {new_names[old]}"
                raise type(error)(old, message, ctx=ctx) from None

    return Renamed


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


def count(low: int, high: int) -> Callable[[int | None], int | None]:
    """The callback of a count option: a whole number from ``low`` to ``high`` (``None``, an
    option not given, passes). Every count has a ceiling, named in the message: a count is
    work, memory or processes, and a huge one would hold the machine (or the project lock)
    until it gives out."""

    def check(value: int | None) -> int | None:
        if value is not None and not low <= value <= high:
            raise typer.BadParameter(f"must be a whole number in [{low}, {high}], got {value}")
        return value

    return check


def setting(section: str, key: str) -> Callable[[int | None], int | None]:
    """The callback of an option that sets ``[section] key``: the settings schema's range
    (one line, before the library's own check or numpy's error)."""

    def check(value: int | None) -> int | None:
        from crowdprefs.campaign.settings import SCHEMA

        if value is not None and not SCHEMA[section][key].accepts(value):
            expected = SCHEMA[section][key].expected()
            raise typer.BadParameter(f"must be {expected} ([{section}] {key}), got {value}")
        return value

    return check


def jobs_value(value: int | None) -> int | None:
    """``--jobs`` checked against :func:`crowdprefs.parallel.max_jobs` (``None``: the
    default, ``CROWDPREFS_JOBS`` or every core)."""
    from crowdprefs.parallel import jobs_range, max_jobs

    if value is not None and not 1 <= value <= max_jobs():
        raise typer.BadParameter(f"must be {jobs_range()}, got {value}")
    return value


seed_value = setting("project", "seed")
Seed = Annotated[
    int,
    typer.Option(
        "--seed",
        callback=seed_value,
        help="Seed of every random choice (same seed, same result).",
    ),
]


def crowd_name(value: str) -> str:
    """The ``--crowd`` value checked (live MTurk is reached only by its own command)."""
    if value == "mturk":
        raise typer.BadParameter(
            "live MTurk spends real money: it is reached only with 'crowdprefs mturk publish "
            "--live'"
        )
    return one_of(value, CROWDS)


Crowd = Annotated[
    str,
    typer.Option("--crowd", callback=crowd_name, help=f"Crowd backend: {', '.join(CROWDS)}."),
]


def campaign_crowd_name(value: str | None) -> str | None:
    """``--crowd`` checked when given (:func:`crowd_name`); ``None``: the campaign's own crowd."""
    return None if value is None else crowd_name(value)


CampaignCrowd = Annotated[
    str | None,
    typer.Option(
        "--crowd",
        callback=campaign_crowd_name,
        show_default=False,
        help=f"Crowd backend: {', '.join(CROWDS)}; default: the crowd the campaign's batches "
        "go to (simulated for a new campaign).",
    ),
]
SimulatedOnReal = Annotated[
    bool,
    typer.Option(
        "--simulated-on-real",
        help="Let the simulated crowd answer a project holding other crowds' answers (its "
        "invented answers then mix into them).",
    ),
]
CrowdModelFile = Annotated[
    Path | None,
    typer.Option(
        "--crowd-model",
        help="Simulated crowd model TOML (from 'crowdprefs crowd-model fit'); default: the "
        "built-in model.",
    ),
]
Jobs = Annotated[
    int, typer.Option("--jobs", "-j", callback=jobs_value, help="Parallel audio jobs.")
]
StudyJobs = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        callback=jobs_value,
        help="Processes the study's independent tasks run on (default: CROWDPREFS_JOBS, else "
        "every core; 1: in this process). The results do not depend on it.",
    ),
]


def scheduler_value(value: str | None) -> str | None:
    """``--scheduler`` read as Dask reads an address, before the command does anything
    (reaching it is tried when the tasks start: :func:`crowdprefs.parallel._connect`)."""
    if value is None:
        return None
    from crowdprefs.errors import InputError
    from crowdprefs.parallel import scheduler_address

    try:
        return scheduler_address(value)
    except InputError as error:
        raise typer.BadParameter(str(error)) from None


Scheduler = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        callback=scheduler_value,
        help="Run the tasks on the Dask cluster whose scheduler is at this address (e.g. "
        "tcp://10.0.0.5:8786; default: CROWDPREFS_SCHEDULER); needs crowdprefs\\[cluster].",
    ),
]
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
        callback=setting("crowd", "answers_per_pair"),
        help="Answers bought for each pair (the most a pair gets when answers are adaptive).",
    ),
]
Reward = Annotated[float, typer.Option("--reward", help="Reward per answer in US$.", parser=finite)]
Rule = Annotated[
    str,
    typer.Option(
        "--rule",
        callback=lambda value: one_of(value, rules.NAMES),
        help="How answers give a pair's verdict: mann-whitney (a test of the pair's answers at "
        "level --alpha), margin (one side needs --margin more votes) or bradley-terry (a "
        "tie-aware model with one reliability per worker, fitted on every answer so far; a "
        "test of the two candidates' scores at level --alpha).",
    ),
]
Ties = Annotated[
    str,
    typer.Option(
        "--ties",
        callback=lambda value: one_of(value, ("davidson", "rao-kupper")),
        help="How the bradley-terry rule models 'equally similar' answers: davidson or rao-kupper.",
    ),
]
Alpha = Annotated[
    float,
    typer.Option(
        "--alpha",
        help="Significance level α: a difference counts when its p-value is below it.",
        parser=finite,
    ),
]
Margin = Annotated[
    int,
    typer.Option(
        "--margin",
        callback=setting("aggregation", "margin"),
        help="Net votes a side needs under the margin rule.",
    ),
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
        "column options or --columns).",
    ),
]
#: ``crowdprefs.exchange.FILE_FORMATS``, after the results file
ANSWER_FORMATS = ("results", "long", "crowdkit")
AnswersFormat = Annotated[
    str,
    typer.Option(
        "--format",
        callback=lambda value: one_of(value, ANSWER_FORMATS),
        help="How the answers file is laid out: results (an MTurk batch-results CSV, or another "
        "platform's export read with the column options), long (one answer per row: "
        "worker,query,left,right,label[,seconds], label being left, right, equal or the "
        "preferred item; no HIT ids or times needed) or crowdkit (crowd-kit's "
        "worker,left,right,label, label the preferred item; one query, named by --query).",
    ),
]
FileQuery = Annotated[
    str | None,
    typer.Option(
        "--query",
        help="The query of every answer of a crowdkit file or of a long file without a query "
        "column (such a file is refused without it; import-answers defaults to the project's "
        "only query).",
        show_default=False,
    ),
]
# What answers cost when the file does not say (every command that prints cost).
RewardPaid = Annotated[
    float | None,
    typer.Option(
        "--reward",
        help="Reward paid per answer in US$, when the file has no reward column "
        "(unknown cost otherwise).",
        parser=finite,
    ),
]
FeeRate = Annotated[
    float | None,
    typer.Option(
        "--fee-rate",
        help="Platform fee as a share of the reward, e.g. 0.1 (default: MTurk's 20%, 40% for "
        "HITs of 10 or more answers).",
        parser=finite,
    ),
]
FeeMinimum = Annotated[
    float | None,
    typer.Option(
        "--fee-minimum", help="Least fee per answer in US$ (default: MTurk's 0.01).", parser=finite
    ),
]


def fee_model(rate: float | None, minimum: float | None):
    """The :class:`crowdprefs.campaign.budget.FeeModel` of the fee options (a rate given
    applies to HITs of any size, as MTurk's fee did before 2015)."""
    from crowdprefs.campaign.budget import FeeModel

    default = FeeModel()
    return FeeModel(
        rate=default.rate if rate is None else rate,
        rate_10_or_more=default.rate_10_or_more if rate is None else rate,
        minimum=default.minimum if minimum is None else minimum,
    )


ColumnsFile = Annotated[
    Path | None,
    typer.Option(
        "--columns",
        help='TOML file mapping the column options once (e.g. answer = "Answer.radio"); '
        "options given on the command line win over it.",
    ),
]


def column_options(command: Callable) -> Callable:
    """Give a command every results-file column option and ``--columns FILE``.

    The command declares a parameter ``columns`` (a :class:`crowdprefs.results_file.Columns`);
    it receives the file's mapping over the library's defaults, with the options given on the
    command line over both. One definition, so every reading command spells them alike. A
    command that also needs the file's path (an input its outputs must not overwrite) declares
    ``columns_file: ColumnsFile = None`` too.
    """
    # the command's own annotations, evaluated where it was written ("Columns" may be a
    # type-checking-only name there: it is the parameter replaced here)
    signature = inspect.signature(
        command, eval_str=True, globals=command.__globals__, locals={"Columns": object}
    )
    kept = [p for p in signature.parameters.values() if p.name != "columns"]
    added = [
        inspect.Parameter(
            f"column_{field}",
            inspect.Parameter.KEYWORD_ONLY,
            default=None,
            annotation=Annotated[
                str | None,
                typer.Option(
                    option,
                    help=f"{text} Default: {default}.",
                    show_default=False,
                    rich_help_panel="Columns of the results file",
                ),
            ],
        )
        for field, (option, default, text) in COLUMNS.items()
    ]
    keeps_file = "columns_file" in signature.parameters
    if not keeps_file:
        added.append(
            inspect.Parameter(
                "columns_file", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ColumnsFile
            )
        )
    positional = [p for p in kept if p.kind is not inspect.Parameter.KEYWORD_ONLY]
    keyword = [p for p in kept if p.kind is inspect.Parameter.KEYWORD_ONLY]

    @functools.wraps(command)
    def wrapper(*args, **kwargs):
        given = {field: kwargs.pop(f"column_{field}") for field in COLUMNS}
        path = kwargs["columns_file"] if keeps_file else kwargs.pop("columns_file")
        kwargs["columns"] = results_columns(path, given)
        return command(*args, **kwargs)

    parameters = [*positional, *keyword, *added]
    wrapper.__signature__ = signature.replace(parameters=parameters)
    wrapper.__annotations__ = {p.name: p.annotation for p in parameters}
    return wrapper


def results_columns(path: Path | None, given: dict[str, str | None]) -> Columns:
    """The library's reading of a results file: defaults, then the TOML file ``path``, then
    the options ``given`` (``None`` = not given)."""
    from crowdprefs.results_file import Columns, read_columns

    base = read_columns(path) if path is not None else Columns()
    return base.given(**given)


BatchGap = Annotated[
    float,
    typer.Option(
        "--batch-gap",
        help="Seconds between HIT creation times that start a new iteration "
        "(0 for campaigns of the simulated crowd).",
        parser=finite,
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
