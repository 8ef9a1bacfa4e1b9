"""The demo: collections shaped like the preference-judgments paper's, synthetic systems to evaluate
against them, and :func:`run_demo`, every stage of the pipeline on them in one call
(``crowdprefs demo``).

Both collections have 11 queries with 4 to 23 candidates each, 118 in all (the Eval05 lists of
the preference-judgments paper §5), and a hidden truth of ordered groups:

* :func:`make_collection` draws the truth directly (no files): groups of one to five equally
  similar candidates. Tests and benchmarks use it.
* :func:`create_demo_project` with ``melodies=True`` (what ``crowdprefs demo`` runs) writes real
  MIDI melodies and their variations (:func:`examples.melodies.make_example`); the truth groups
  are the dense ranks of each variation's melodic edit distance to its query.

:func:`example_runs` makes the retrieval systems that the demo scores against the lists.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from crowdprefs.campaign.project import (
    DEFAULT_SEED,
    Project,
    Settings,
    init_project,
    read_candidates,
)
from crowdprefs.errors import InputError, StateError
from crowdprefs.io import csv_text, write_lists
from crowdprefs.quality.crowd_model import CrowdModel
from examples.melodies import QUERY_SIZES, make_example

if TYPE_CHECKING:
    from crowdprefs.quality.audit import Audit
    from crowdprefs.web.judges import JudgeReport


def make_collection(
    seed: int = 2010, sizes: tuple[int, ...] = QUERY_SIZES
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Candidates ``query, document`` and their hidden truth ``query, document, group``.

    Each query's candidates are cut into consecutive groups of 1 to 5 members (mostly 2–3), so
    group sizes resemble the crowdsourced lists of the preference-judgments paper.
    """
    rng = np.random.default_rng([seed, 0xDE30])
    rows = []
    for q, size in enumerate(sizes, start=1):
        query = f"q{q:02d}"
        group, left = 1, size
        documents = [f"{query}-v{i:02d}" for i in range(1, size + 1)]
        rng.shuffle(documents)
        position = 0
        while left:
            members = min(left, int(rng.choice([1, 2, 2, 3, 3, 4, 5])))
            rows.extend((query, documents[position + i], group) for i in range(members))
            position += members
            left -= members
            group += 1
    truth = pd.DataFrame(rows, columns=["query", "document", "group"])
    candidates = truth[["query", "document"]].sort_values(["query", "document"], ignore_index=True)
    return candidates, truth


def create_demo_project(
    root: Path,
    seed: int = 2010,
    answers_per_pair: int = 10,
    *,
    melodies: bool = False,
    crowd_model: CrowdModel | None = None,
) -> Project:
    """Write ``candidates.csv`` and ``truth.qrel`` in ``root`` and initialise ``root/project``.

    With ``melodies``, the candidates are MIDI files under ``root/midi`` (the CSV's ``audio`` and
    ``query_audio`` columns), ready for ``crowdprefs prepare``; otherwise they have no audio.
    The simulated crowd of the project reads its truth from ``truth.qrel``, and its parameters
    from ``crowd_model`` (the defaults when ``None``).
    """
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    if melodies:
        truth = make_example(root, seed)[["query", "document", "group"]]
    else:
        candidates, truth = make_collection(seed)
        (root / "candidates.csv").write_text(csv_text(candidates), encoding="utf-8")
    write_lists(truth, root / "truth.qrel", tag="truth")
    simulated = {"truth": "../truth.qrel", **(crowd_model.to_dict() if crowd_model else {})}
    settings = Settings(answers_per_pair=answers_per_pair, sections={"simulated": simulated})
    return init_project(root / "project", root / "candidates.csv", seed=seed, settings=settings)


#: Noise of each synthetic system's similarity estimate, in units of the gap between groups.
SYSTEM_NOISE = {"sys-A": 0.25, "sys-B": 0.5, "sys-C": 0.8, "sys-D": 1.2, "sys-E": 2.5}


def example_runs(
    truth: pd.DataFrame, seed: int = 2010, depth: int = 5, noise: dict[str, float] | None = None
) -> pd.DataFrame:
    """Runs ``system, query, document, rank`` of synthetic systems of decreasing quality.

    Each system ranks a query's candidates by ``−group + noise·z`` (z standard normal, drawn per
    system and candidate) and returns its top ``depth``; the less noise, the better the system,
    so the expected ranking of the systems is known.
    """
    noise = noise or SYSTEM_NOISE
    rng = np.random.default_rng([seed, 0x5E5])
    parts = []
    for system, sigma in noise.items():
        estimate = -truth["group"].to_numpy() + sigma * rng.standard_normal(len(truth))
        ranked = truth.assign(system=system, estimate=estimate).sort_values(
            ["query", "estimate"], ascending=[True, False], kind="stable"
        )
        ranked["rank"] = ranked.groupby("query").cumcount() + 1
        parts.append(ranked[ranked["rank"] <= depth])
    return pd.concat(parts, ignore_index=True)[["system", "query", "document", "rank"]]


# --------------------------------------------------------------------------- the whole demo

#: The crowds the demo can run: the simulated workers directly, behind the local MTurk fake, or
#: as simulated judges posting over HTTP to a local ``crowdprefs serve``.
DEMO_CROWDS = ("simulated", "mturk-fake", "web")
#: Bootstrap crowds the demo's audit rebuilds the lists from (how stable they are).
DEMO_RESAMPLES = 200
#: The measures the demo scores the synthetic systems with.
DEMO_MEASURES = ("ADR@5", "nDCG@5", "AG@5")
#: What the demo writes in its folder.
DEMO_FILES = {
    "candidates": "candidates.csv",
    "truth": "truth.qrel",
    "midi": "midi",
    "project": "project",
    "clips": "project/clips",
    "lists": "lists.qrel",
    "preview": "preview",
    "audit": "audit.html",
    "runs": "runs.txt",
    "evaluation": "evaluation.csv",
    "prior": "chroma.csv",
    "prior_project": "project-prior",
    "ranked_project": "project-ranked",
}

#: ``progress(what, done, total)``: called as a long stage advances.
Progress = Callable[[str, int, int], None]
#: ``stage(name, produced)``: called as each stage of :func:`run_demo` ends, with the
#: :class:`DemoResult` fields it produced (see :data:`STAGES`), so a caller can show each stage
#: as it happens.
Stage = Callable[[str, dict[str, Any]], None]
STAGES = {
    "collection": ("queries", "candidates", "per_query", "truth_groups"),
    "clips": ("clips",),
    "campaign": ("iterations", "web", "list_groups", "adr", "contradictions", "prior"),
    "previews": ("previews",),
    "audit": ("audit", "flag_precision", "flag_recall"),
    "evaluation": ("evaluation", "ranked"),
}
"""The stages of :func:`run_demo` in order, each with the :class:`DemoResult` fields it makes."""


@dataclass(frozen=True)
class DemoOptions:
    """How to run the demo: the seed of the melodies, crowd and sort; the crowd (one of
    :data:`DEMO_CROWDS`); whether to prepare audio clips (the slow stage) and with how many
    parallel jobs; a simulated crowd model file; and, for the web crowd, how many judges and
    how long they may take."""

    seed: int = DEFAULT_SEED
    crowd: str = "simulated"
    audio: bool = True
    crowd_model: Path | None = None
    jobs: int = 2
    judges: int = 40
    max_seconds: float = 900.0

    def __post_init__(self) -> None:
        if self.crowd not in DEMO_CROWDS:
            raise InputError(
                f"the demo runs with the {', '.join(DEMO_CROWDS)} crowd, not {self.crowd!r}"
            )
        if self.jobs < 1:
            raise InputError(f"the demo needs at least one audio job, got {self.jobs}")


@dataclass(frozen=True)
class Clips:
    """The prepared audio clips: how many, and their durations in seconds."""

    count: int
    shortest: float
    longest: float
    mean: float


@dataclass(frozen=True)
class PriorRun:
    """The campaign again with the baseline machine judge (chroma + DTW) as its prior, beside
    the campaign without one: the judge's Spearman correlation with the hidden truth (mean over
    queries), pairs asked of humans, answers and ADR of the lists against the truth (each
    ``(without, with)``), and the machine's part of the lists in one line; or, when the judge
    cannot run (librosa missing, no clips), ``reason`` says why."""

    correlation: float = float("nan")
    pairs: tuple[int, int] = (0, 0)
    answers: tuple[int, int] = (0, 0)
    adr: tuple[float, float] = (float("nan"), float("nan"))
    machine: str = ""
    reason: str = ""


@dataclass(frozen=True)
class RankedRun:
    """The campaign again, knowing the synthetic systems (``init --runs``): answers of the full
    campaign and of this one, the systems in the order its unfinished lists rank them by ADR@5
    and in the order the full campaign's lists do, their Kendall τ, and the pairs of systems
    decided at 0.95 of all pairs."""

    answers: tuple[int, int]
    order: tuple[str, ...]
    full_order: tuple[str, ...]
    tau: float
    decided: tuple[int, int]


@dataclass
class DemoResult:
    """What every stage of :func:`run_demo` produced (``files`` name what it wrote)."""

    folder: Path
    files: dict[str, Path]
    crowd: str
    resumed: bool
    queries: int
    candidates: int
    per_query: tuple[int, int]
    """Fewest and most candidates of a query."""
    truth_groups: int
    clips: Clips | None
    iterations: pd.DataFrame
    """Per iteration: ``iteration, pairs, answers, workers, agreement, median_seconds, cost``."""
    list_groups: int
    adr: float
    """Mean ADR of the crowd's lists scored against the truth (over within-group shuffles)."""
    contradictions: int
    previews: int
    audit: Audit
    flag_precision: float
    flag_recall: float
    evaluation: pd.DataFrame
    """Per system and measure: the mean score against the crowd's lists and against the truth."""
    web: JudgeReport | None = None
    prior: PriorRun | None = None
    """The campaign with the chroma judge as a prior (simulated crowd only)."""
    ranked: RankedRun | None = None
    """The campaign that knows the systems (simulated crowd only)."""
    seconds: float = 0.0


def _demo_project(folder: Path, path: Path, options: DemoOptions, resumed: bool) -> Project:
    """The demo's project at ``path``: resumed, or created with its melodies in ``folder``
    (refused when the folder holds anything but a demo)."""
    if resumed:
        return Project(path)
    if folder.exists() and any(folder.iterdir()):
        raise InputError(f"{folder} exists and holds no demo; choose another folder")
    from crowdprefs.quality.crowd_model import load_crowd_model

    model = load_crowd_model(options.crowd_model) if options.crowd_model else None
    return create_demo_project(folder, seed=options.seed, melodies=True, crowd_model=model)


def _score_systems(runs: pd.DataFrame, lists: pd.DataFrame, truth: pd.DataFrame, path: Path):
    """``(the systems scored against the crowd's lists, their means against the lists and the
    truth side by side)``; the per-query scores against the lists written to ``path``."""
    from crowdprefs.evaluation.evaluate import evaluate

    by_crowd = evaluate(runs, lists, list(DEMO_MEASURES), test=None)
    by_truth = evaluate(runs, truth, list(DEMO_MEASURES), test=None)
    path.write_text(csv_text(by_crowd.scores), encoding="utf-8")
    evaluation = by_crowd.summary[["system", "measure", "mean"]].merge(
        by_truth.summary[["system", "measure", "mean"]],
        on=["system", "measure"],
        suffixes=("_crowd", "_truth"),
    )
    return by_crowd, evaluation


def run_demo(
    folder: Path,
    options: DemoOptions = DemoOptions(),
    progress: Progress | None = None,
    stage: Stage | None = None,
) -> DemoResult:
    """Every stage of the pipeline on synthetic melodies, in ``folder`` (created, or resumed
    when it holds a demo): MIDI melodies and their variations (the hidden truth is their edit
    distance to the query), audio clips prepared for the HITs, every iteration of the campaign,
    HIT previews of the first batch, the worker audit, and synthetic systems scored against the
    crowd's lists and the truth. Writes the files of :data:`DEMO_FILES`. ``progress`` follows
    the campaign; ``stage`` hears of each stage of :data:`STAGES` as it ends.
    """
    from crowdprefs.campaign import driver
    from crowdprefs.evaluation.evaluate import compare_lists
    from crowdprefs.hits.render import write_preview
    from crowdprefs.io import read_lists, write_runs
    from crowdprefs.quality import audit as auditing
    from crowdprefs.quality.flags import flag_quality
    from crowdprefs.quality.report import render

    started = time.perf_counter()
    folder = Path(folder)
    files = {name: folder / path for name, path in DEMO_FILES.items()}
    resumed = files["project"].exists()
    made: dict[str, Any] = {}

    def ended(name: str, **produced: Any) -> None:
        made.update(produced)
        if stage is not None:
            stage(name, produced)

    project = _demo_project(folder, files["project"], options, resumed)
    truth = read_lists(files["truth"])
    with project:
        frame = project.store.candidates()
        sizes = frame.groupby("query").size()
        ended(
            "collection",
            queries=len(sizes),
            candidates=len(frame),
            per_query=(int(sizes.min()), int(sizes.max())),
            truth_groups=int(truth.groupby("query")["group"].max().sum()),
        )
        ended("clips", clips=_prepare_clips(project, options.jobs) if options.audio else None)
        web = _run_campaign(project, options, progress)
        lists = driver.lists(project)
        write_lists(lists, files["lists"])
        quality = compare_lists(
            truth, lists, permutations=100, seed=options.seed, names=("truth", "crowd")
        )
        adr = float(quality.loc[quality["truth"] == "truth", "mean"].iloc[0])
        prior = None
        if options.crowd == "simulated":
            prior = _prior_campaign(files, project, options, truth, adr, progress)
        ended(
            "campaign",
            iterations=_iteration_table(project),
            web=web,
            list_groups=int(lists.groupby("query")["group"].max().sum()),
            adr=adr,
            contradictions=len(driver.query_contradictions(project)),
            prior=prior,
        )
        ended("previews", previews=len(write_preview(project, 1, files["preview"])))
        audited = auditing.audit_project(
            project, reference=truth, resamples=DEMO_RESAMPLES, seed=options.seed
        )
        files["audit"].write_text(render(audited, str(files["project"])), encoding="utf-8")
        flags = flag_quality(audited.flags, _planted_kinds(project, options.crowd))
        ended(
            "audit", audit=audited, flag_precision=flags["precision"], flag_recall=flags["recall"]
        )
    runs = example_runs(truth, seed=options.seed)
    write_runs(runs, files["runs"])
    by_crowd, evaluation = _score_systems(runs, lists, truth, files["evaluation"])
    ranked = None
    if options.crowd == "simulated":
        full_order = by_crowd.summary[by_crowd.summary["measure"] == "ADR@5"].sort_values(
            "mean", ascending=False, kind="stable"
        )["system"]
        ranked = _ranked_campaign(files, options, tuple(full_order), progress)
    ended(
        "evaluation",
        evaluation=evaluation.rename(columns={"mean_crowd": "crowd", "mean_truth": "truth"}),
        ranked=ranked,
    )
    return DemoResult(
        folder=folder,
        files=files,
        crowd=options.crowd,
        resumed=resumed,
        **made,
        seconds=time.perf_counter() - started,
    )


def _ranked_campaign(
    files: dict[str, Path],
    options: DemoOptions,
    full_order: tuple[str, ...],
    progress: Progress | None,
) -> RankedRun:
    """The demo's campaign again, in its own project made with ``init --runs`` (the synthetic
    systems, ADR@5), the same seed and simulated crowd: it asks only what can change how two
    systems compare and stops when their ranking is sure; resumed when that project exists."""
    from scipy import stats

    from crowdprefs.campaign.ranking import project_standing

    with Project(files["project"]) as project:
        settings, full_answers = project.settings, project.store.answer_total()
    if not files["ranked_project"].exists():
        init_project(
            files["ranked_project"], files["candidates"], seed=options.seed, settings=settings,
            runs=files["runs"],
        ).close()  # fmt: skip
    with Project(files["ranked_project"]) as ranked:
        _simulated_run(ranked, "knowing the systems", progress)
        standing = project_standing(ranked, samples=1000)
        answers = ranked.store.answer_total()
    order = tuple(standing.systems_frame(0.95)["system"])
    position = {system: i for i, system in enumerate(order)}
    tau = stats.kendalltau([position[s] for s in full_order], range(len(full_order))).statistic
    decided = standing.pairs.decided
    return RankedRun(
        answers=(full_answers, answers),
        order=order,
        full_order=full_order,
        tau=float(tau),
        decided=(int(decided.sum()), len(decided)),
    )


def _prior_campaign(
    files: dict[str, Path],
    project: Project,
    options: DemoOptions,
    truth: pd.DataFrame,
    adr: float,
    progress: Progress | None,
) -> PriorRun:
    """The demo's campaign again, in its own project, with the chroma judge's scores as a
    machine prior (its pivots, and ``[prior] skip`` with the default audit), the same seed and
    simulated crowd; resumed when that project exists."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.prior import audit_line, machine_audit
    from crowdprefs.evaluation.evaluate import compare_lists
    from crowdprefs.machine.scores import read_prior, write_prior
    from crowdprefs.machine.simulated import spearman_by_query

    candidates = read_candidates(files["candidates"])
    if not files["prior_project"].exists():
        try:
            from crowdprefs.machine.chroma import chroma_scores

            scores = chroma_scores(
                candidates,
                on_clip=None if progress is None else lambda d, t: progress("chroma judge", d, t),
            )
        except InputError as error:  # librosa missing: the demo goes on without this part
            return PriorRun(reason=str(error))
        write_prior(scores, files["prior"])
        sections = {**project.settings.sections, "prior": {"skip": True}}
        settings = replace(project.settings, sections=sections)
        init_project(
            files["prior_project"], candidates, seed=options.seed, settings=settings,
            prior=files["prior"],
        ).close()  # fmt: skip
    scores = read_prior(files["prior"], candidates).merge(truth, on=["query", "document"])
    codes, _ = pd.factorize(scores["query"])
    correlation = float(
        np.nanmean(
            spearman_by_query(codes, scores["score"].to_numpy(), -scores["group"].to_numpy())
        )
    )
    with Project(files["prior_project"]) as primed:
        _simulated_run(primed, "with the prior", progress)
        lists = driver.lists(primed)
        quality = compare_lists(
            truth, lists, permutations=100, seed=options.seed, names=("truth", "crowd")
        )
        machine = machine_audit(primed)
        counts = [driver.status(p)["totals"] for p in (project, primed)]
    return PriorRun(
        correlation=correlation,
        pairs=(counts[0]["pairs_judged"], counts[1]["pairs_judged"]),
        answers=(counts[0]["answers"], counts[1]["answers"]),
        adr=(adr, float(quality.loc[quality["truth"] == "truth", "mean"].iloc[0])),
        machine="" if machine is None else audit_line(machine),
    )


def _prepare_clips(project: Project, jobs: int) -> Clips:
    from crowdprefs.campaign.project_state import prepare_project

    clips = prepare_project(project, jobs=jobs)
    failed = clips[clips["error"] != ""]
    if len(failed):
        raise InputError(f"{len(failed)} clip(s) failed: {failed['error'].iloc[0]}")
    seconds = project.store.candidates()["seconds"]
    return Clips(len(clips), float(seconds.min()), float(seconds.max()), float(seconds.mean()))


def _simulated_run(project: Project, label: str, progress: Progress | None) -> None:
    """Every iteration of ``project`` with the simulated crowd (resuming wherever it stands),
    its progress told as ``label, iteration N``."""
    from crowdprefs.campaign import driver
    from crowdprefs.crowds import get_crowd

    total = project.store.candidates()["query"].nunique()

    def report(step: driver.IterationSummary) -> None:
        if progress is not None:
            progress(f"{label}, iteration {step.iteration}", total - step.open_queries, total)

    driver.run(project, get_crowd("simulated", project), on_iteration=report)


def _run_campaign(
    project: Project, options: DemoOptions, progress: Progress | None
) -> JudgeReport | None:
    """Every iteration of the campaign with the demo's crowd (resuming wherever it stands)."""
    from crowdprefs.campaign import driver

    total = project.store.candidates()["query"].nunique()

    def report(closed: int, iteration: int, what: str) -> None:
        if progress is not None:
            progress(f"iteration {iteration}: {what}", closed, total)

    if options.crowd != "web":
        from crowdprefs.crowds import get_crowd
        from crowdprefs.quality.review import Reviewer

        driver.run(
            project,
            get_crowd(options.crowd, project),
            review=Reviewer(),
            on_iteration=lambda s: report(total - s.open_queries, s.iteration, f"{s.pairs} pairs"),
        )
        return None
    from crowdprefs.web.judges import run_web_campaign

    def watch() -> bool:
        totals = driver.status(project)["totals"]
        report(totals["closed"], totals["iteration"], f"{totals['answers']} answers")
        return False

    web = run_web_campaign(
        project.root, judges=options.judges, watch=watch, max_seconds=options.max_seconds
    )
    totals = driver.status(project)["totals"]
    if totals["closed"] < totals["queries"]:
        raise StateError(
            f"the web campaign stopped after {options.max_seconds:g} s with "
            f"{totals['queries'] - totals['closed']} list(s) open; rerun to resume"
        )
    return web


def _iteration_table(project: Project) -> pd.DataFrame:
    """Per iteration of the campaign: pairs, answers, workers, mean inter-agreement of the pairs,
    median work time and cost (rewards and fees of the answers wanted)."""
    from crowdprefs.campaign.aggregate import count_answers, inter_agreement
    from crowdprefs.campaign.budget import batch_cost

    settings = project.settings
    answers = project.store.answers()
    pairs = project.store.pairs().set_index("pair_id")
    counts = count_answers(answers).reindex(pairs.index, fill_value=0)
    pairs["agreement"] = inter_agreement(counts["more"], counts["equal"], counts["less"])
    by_pairs = pairs.groupby("iteration").agg(
        pairs=("agreement", "size"), agreement=("agreement", "mean")
    )
    by_pairs["cost"] = [
        batch_cost(settings.reward, wanted.to_numpy(), settings.fees)
        for _, wanted in pairs.groupby("iteration")["answers_wanted"]
    ]
    by_answers = answers.groupby("iteration").agg(
        answers=("worker_id", "size"),
        workers=("worker_id", "nunique"),
        median_seconds=("seconds", "median"),
    )
    table = by_pairs.join(by_answers, how="inner").rename_axis("iteration").reset_index()
    return table[
        ["iteration", "pairs", "answers", "workers", "agreement", "median_seconds", "cost"]
    ]


def _planted_kinds(project: Project, crowd: str) -> pd.Series:
    """The kind (honest, careless, bot) of each worker the simulated crowd planted; on the web
    crowd, of each simulated judge, by the worker whose answers it gives
    (:func:`~crowdprefs.web.judges.judge_worker`)."""
    from crowdprefs.crowds import get_crowd

    pool = get_crowd("simulated", project).pool
    if crowd != "web":
        return pd.Series(pool.kind, index=pool.ids)
    from crowdprefs.web.judges import judge_worker

    judges = project.store.web_judge_table()["judge_id"]
    workers = [judge_worker(judge, len(pool.ids)) for judge in judges]
    return pd.Series(pool.kind[workers], index=judges.to_numpy())
