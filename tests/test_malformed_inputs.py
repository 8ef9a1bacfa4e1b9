"""Malformed inputs, one table: every case ends in a non-zero exit (or an HTTP 4xx), exactly one
``error:`` line naming the problem, no traceback, and the project's state and settings unchanged.

Add a row to :data:`CASES` for each new input a command reads. The kinds: ``candidates``,
``qrels``, ``runs``, ``levels``, ``results``, ``crowd-model``, ``mtc-model``, ``settings``,
``options``, ``state`` (command-line cases, run in this process) and ``http`` (requests to the
web app). A few command-line cases also run through ``python -m crowdprefs`` in a subprocess.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import warnings
from collections import Counter
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import tomli_w
from console_script import script
from demo_inputs import RESULTS_HEADER, TIME, demo_inputs

from crowdprefs.campaign.settings import CONFIG_NAME, SCHEMA

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Workspace:
    """Valid inputs every case starts from: a demo project (11 queries, nothing asked), its
    candidates, truth lists, two systems' runs, level judgments, an MTurk results CSV."""

    root: Path
    project: Path
    candidates: Path
    truth: Path
    runs: Path
    levels: Path
    results: Path


@dataclass(frozen=True)
class Case:
    """One malformed input: ``args(ws, tmp)`` writes what it needs under ``tmp`` and returns
    the command line; ``says`` must appear (case-insensitively) in the error line. ``fresh``
    runs the case on a copy of the project that ``args`` may damage first."""

    kind: str
    name: str
    args: Callable[[Workspace, Path], list]
    says: str
    fresh: bool = False


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def plan_args(*extra) -> Callable[[Workspace, Path], list]:
    """``plan`` on the workspace's candidates; ``extra`` may hold functions of the case's folder."""
    return lambda ws, t: [
        "plan",
        "--candidates",
        ws.candidates,
        *(e(t) if callable(e) else e for e in extra),
    ]


# --- files -------------------------------------------------------------------------------------


def init_with(text: str | bytes, says: str, name: str, *extra) -> Case:
    return Case(
        "candidates",
        name,
        lambda ws, tmp: ["init", tmp / "new", "--candidates", write(tmp / "c.csv", text), *extra],
        says,
    )


CANDIDATES = [
    Case(
        "candidates",
        "missing file",
        lambda ws, t: ["init", t / "n", "--candidates", t / "no.csv"],
        "not found",
    ),
    init_with("", "not a valid csv", "empty file"),
    init_with("query,document\n", "only a header", "header only"),
    init_with("query,doc\nq,a\nq,b\n", "missing column", "no document column"),
    init_with("document\na\nb\n", "missing column", "no query column"),
    init_with("query,document\nq,a\nq,\n", ":3: empty", "empty document"),
    init_with("query,document\nq,a\n,b\n", ":3: empty", "empty query"),
    init_with("query,document\nq,a\nq,a\nq,b\n", "duplicate row", "duplicate row"),
    init_with("query,document\nq,a\nq,b\nr,c\n", "at least 2", "one candidate"),
    init_with("query,document\nq,a b\nq,c\n", ":2:", "space in a document"),
    init_with("query,document\nq 1,a\nq 1,b\n", ":2:", "space in a query"),
    init_with('query,document\nq,"a\tb"\nq,c\n', "spaces", "tab in a document"),
    init_with('query,document\nq,"a\nq,b\n', "", "unclosed quote"),
    init_with("query,document,audio\nq,a,nope.wav\nq,b,nope.wav\n", "nope.wav", "missing clip"),
    init_with(
        "query,document,audio\nq,a,c.csv\nq,b,c.csv\n", "is not a clip", "a clip that is not audio"
    ),
    init_with(
        "query,document,query_audio\nq,a,gone.mp3\nq,b,gone.mp3\n", "gone.mp3", "missing query clip"
    ),
    Case(
        "candidates", "a folder", lambda ws, t: ["init", t / "n", "--candidates", t], "is a folder"
    ),
    Case(
        "candidates",
        "existing project",
        lambda ws, t: ["init", ws.project, "--candidates", ws.candidates],
        "already holds",
    ),
    Case(
        "candidates",
        "non-empty folder",
        lambda ws, t: ["init", write(t / "d" / "x", "x").parent, "--candidates", ws.candidates],
        "not an empty folder",
    ),
]


def qrels_case(text: str | bytes, says: str, name: str) -> list[Case]:
    def evaluate(ws, t):
        return ["evaluate", "--truth", write(t / "t.qrel", text), "--runs", ws.runs]

    def compare(ws, t):
        return ["compare-lists", write(t / "t.qrel", text), ws.truth]

    return [
        Case("qrels", f"evaluate: {name}", evaluate, says),
        Case("qrels", f"compare-lists: {name}", compare, says),
    ]


QRELS = [
    *qrels_case("", "", "empty"),
    *qrels_case("truth q1 a\n", "", "three fields"),
    *qrels_case("truth q1 a x\ntruth q1 b 1\n", "", "a group that is no number"),
    *qrels_case("truth q1 a 1\ntruth q1 a 2\n", "repeated", "a document listed twice"),
    *qrels_case(b"\xff\xfe\x00\x01", "", "binary"),
    *qrels_case("truth q1 a 1 extra more\n", "", "six fields"),
    Case("qrels", "plan: missing", plan_args("--truth", lambda t: t / "no.qrel"), "no such file"),
    Case(
        "qrels",
        "evaluate: missing truth",
        lambda ws, t: ["evaluate", "--truth", t / "no", "--runs", ws.runs],
        "",
    ),
]


def runs_case(text: str | bytes, says: str, name: str) -> list[Case]:
    def evaluate(ws, t):
        return ["evaluate", "--truth", ws.truth, "--runs", write(t / "r.txt", text)]

    def estimate(ws, t):
        return ["mtc", "estimate", "--runs", write(t / "r.txt", text), "--judgments", ws.levels]

    def init(ws, t):
        return [
            "init",
            t / "new",
            "--candidates",
            ws.candidates,
            "--runs",
            write(t / "r.txt", text),
        ]

    return [
        Case("runs", f"evaluate: {name}", evaluate, says),
        Case("runs", f"mtc estimate: {name}", estimate, says),
        Case("runs", f"init --runs: {name}", init, says),
        Case(
            "runs",
            f"plan --runs: {name}",
            plan_args("--runs", lambda t: write(t / "r.txt", text)),
            says,
        ),
    ]


RUNS = [
    *runs_case("", "", "empty"),
    *runs_case("sys q1\n", "", "two fields"),
    *runs_case("sys q1 a\nsys q1 a\n", "repeated", "a document ranked twice"),
    *runs_case(b"\x00\x01\x02\xff", "", "binary"),
    *runs_case("q1 Q0 a 1 2.0\n", "", "five fields"),
    *runs_case("nobody knows these queries\n", "", "unknown queries"),
    Case(
        "runs",
        "evaluate: missing",
        lambda ws, t: ["evaluate", "--truth", ws.truth, "--runs", t / "none"],
        "",
    ),
    Case(
        "runs",
        "evaluate: empty folder",
        lambda ws, t: ["evaluate", "--truth", ws.truth, "--runs", (t / "e").mkdir() or t / "e"],
        "",
    ),
]


def levels_case(text: str | bytes, says: str, name: str) -> list[Case]:
    def estimate(ws, t):
        return ["mtc", "estimate", "--runs", ws.runs, "--judgments", write(t / "j.txt", text)]

    def next_(ws, t):
        return [
            "mtc",
            "next",
            "--runs",
            ws.runs,
            "--judgments",
            write(t / "j.txt", text),
            "-o",
            t / "next.txt",
        ]

    return [
        Case("levels", f"mtc estimate: {name}", estimate, says),
        Case("levels", f"mtc next: {name}", next_, says),
    ]


LEVELS = [
    *levels_case("q1 a\n", "", "two fields"),
    *levels_case("q1 a high\n", "", "a gain that is no number"),
    *levels_case("q1 a 500\n", "", "a gain above the scale"),
    *levels_case("q1 a -3\n", "", "a negative gain"),
    *levels_case("q1 a nan\n", "", "a gain that is nan"),
    *levels_case("q1 a 10\nq1 a 20\n", "", "a pair judged twice"),
    *levels_case(b"\xff\xfe\x00", "", "binary"),
    Case(
        "levels",
        "missing",
        lambda ws, t: ["mtc", "estimate", "--runs", ws.runs, "--judgments", t / "none"],
        "",
    ),
]


def results_case(text: str | bytes, says: str, name: str) -> list[Case]:
    def imported(ws, t):
        return ["import-answers", ws.project, write(t / "r.csv", text)]

    def replay(ws, t):
        return ["replay", write(t / "r.csv", text)]

    def audit(ws, t):
        return ["audit", "--answers", write(t / "r.csv", text)]

    def fit(ws, t):
        return ["crowd-model", "fit", write(t / "r.csv", text), "-o", t / "m.toml"]

    return [
        Case("results", f"import-answers: {name}", imported, says),
        Case("results", f"replay: {name}", replay, says),
        Case("results", f"audit: {name}", audit, says),
        Case("results", f"crowd-model fit: {name}", fit, says),
    ]


RESULTS = [
    *results_case("", "", "empty"),
    *results_case(RESULTS_HEADER, "", "header only"),
    *results_case("HITId,WorkerId\nH1,W1\n", "", "missing columns"),
    *results_case(
        RESULTS_HEADER + f"H1,W1,A1,{TIME},{TIME},q1,a,b,maybe\n", "", "an unknown answer"
    ),
    *results_case(RESULTS_HEADER + "H1,W1,A1,yesterday,now,q1,a,b,A\n", "", "unreadable times"),
    *results_case(b"\xff\xfe\x00\x00binary", "", "binary"),
    Case(
        "results",
        "import-answers: missing",
        lambda ws, t: ["import-answers", ws.project, t / "none.csv"],
        "not found",
    ),
    Case("results", "replay: missing", lambda ws, t: ["replay", t / "none.csv"], "not found"),
]


def crowd_model_case(text: str, says: str, name: str) -> Case:
    return Case(
        "crowd-model",
        name,
        plan_args("--crowd-model", lambda t: write(t / "m.toml", text), "--campaigns", 1),
        says,
    )


CROWD_MODEL = [
    Case(
        "crowd-model", "missing", plan_args("--crowd-model", lambda t: t / "no.toml"), "not found"
    ),
    crowd_model_case("[simulated\n", "invalid toml", "invalid TOML"),
    crowd_model_case("[simulated]\nworkrs = 3\n", "workrs", "unknown key"),
    crowd_model_case('[simulated]\nworkers = "many"\n', "workers", "text for a number"),
    crowd_model_case("[simulated]\nworkers = 0\n", "", "no workers"),
    crowd_model_case("[simulated]\nworkers = 2.5\n", "workers", "a fraction of a worker"),
    crowd_model_case("[simulated]\nnoise = nan\n", "noise", "nan noise"),
    crowd_model_case("[simulated]\nnoise = -1.0\n", "noise", "negative noise"),
    crowd_model_case("[simulated]\ncareless_share = 2.0\n", "", "a share above 1"),
    crowd_model_case("[simulated]\nactivity = true\n", "activity", "true for a number"),
]


def gain_model_json() -> dict:
    """A valid MTC gain model file's content (two levels), built from the model's fields."""
    from crowdprefs.evaluation.mtc.trained import TRAINED_FEATURES, GainModel

    m = len(TRAINED_FEATURES)
    model = GainModel(
        scale="fine",
        center=np.zeros(m),
        spread=np.ones(m),
        params=np.zeros(m + 2),
        values=np.array([0.0, 50.0, 100.0]),
        value_spreads=np.array([1.0, 1.0, 1.0]),
        low=np.full(m, -5.0),
        high=np.full(m, 5.0),
        sigma=0.1,
        tau=0.1,
        omega=0.1,
        eta=0.1,
        variance_scale=1.0,
        held_out_rmse=1.0,
        judgments=30,
    )
    return json.loads(model.to_json())


def mtc_model_case(change: Callable[[dict], object], says: str, name: str) -> Case:
    def args(ws, t):
        data = gain_model_json()
        text = change(data)
        text = text if isinstance(text, str) else json.dumps(data)
        path = write(t / "model.json", text)
        return [
            "mtc",
            "estimate",
            "--runs",
            ws.runs,
            "--judgments",
            ws.levels,
            "--model",
            path,
            "--estimator",
            "trained",
        ]

    return Case("mtc-model", name, args, says)


MTC_MODEL = [
    mtc_model_case(lambda d: "", "not a crowdprefs mtc gain model", "empty"),
    mtc_model_case(lambda d: "{not json", "not a crowdprefs", "not JSON"),
    mtc_model_case(lambda d: d.update(format="other"), "format", "another format"),
    mtc_model_case(lambda d: d.update(version=99), "version", "another version"),
    mtc_model_case(lambda d: d.update(values=[100.0, 50.0, 0.0]), "increase", "levels reversed"),
    mtc_model_case(lambda d: d.update(values=[0.0, 0.0, 100.0]), "increase", "levels repeated"),
    mtc_model_case(lambda d: d.update(value_spreads=[1.0, -1.0, 1.0]), "spread", "neg. spread"),
    mtc_model_case(lambda d: d.update(sigma=-1.0), "negative", "a negative sigma"),
    mtc_model_case(lambda d: d.update(beta=d["beta"][:-1]), "beta", "a feature missing"),
    mtc_model_case(lambda d: d.pop("theta"), "theta", "no thresholds"),
    mtc_model_case(lambda d: d.update(theta=["a", "b"]), "", "text thresholds"),
    mtc_model_case(lambda d: d.update(variance_scale=0.0), "variance", "zero variance scale"),
    mtc_model_case(lambda d: d.update(scale="huge"), "scale", "an unknown scale"),
    mtc_model_case(lambda d: d.update(low=d["high"], high=d["low"]), "upside down", "range"),
]


# --- settings ----------------------------------------------------------------------------------

WRONG_TYPE = {"int": "x", "float": True, "bool": "yes", "str": 5, "path": 5, "list[str]": "a"}
"""A value of the wrong type for each kind of key."""
SILENT = {"int": 2.5, "float": math.nan, "path": ""}
"""Values Python would have taken quietly (2.5 → 2; NaN compares false with every bound; an
empty file name is the settings' own folder)."""
TEXTS = ("title", "question", "reward_text")
"""The [hit] texts tried (the other texts of the page are keys of the same kind)."""


def setting_cases() -> list[Case]:
    """For every key of every section (a few of the [hit] texts): a wrong type, a value Python
    would coerce, and a value out of range or not among the choices."""
    cases: list[Case] = []
    for section, keys in SCHEMA.items():
        for key, spec in keys.items():
            if section == "hit" and spec.kind == "str" and key not in TEXTS:
                continue
            values = [WRONG_TYPE[spec.kind]]
            if section == "simulated":  # its ranges are the crowd-model file's cases
                cases.append(set_case(section, key, values[0], key))
                continue
            if spec.kind in SILENT and section not in ("hit", "simulated"):
                values.append(SILENT[spec.kind])
            if spec.low is not None:
                values.append(spec.low - 1)
            if spec.high is not None and section not in ("hit", "simulated"):
                values.append(math.inf if spec.kind == "float" else int(spec.high) + 1)
            if spec.choices or spec.prefixes:
                values.append("bogus")
            cases += [set_case(section, key, value, key) for value in values]
    return cases


def set_case(section: str | None, key: str, value, says: str, command: str = "status") -> Case:
    def args(ws, t):
        path = ws.project / CONFIG_NAME
        import tomllib

        data = tomllib.loads(path.read_text())
        if section is None:
            data[key] = value
        else:
            data.setdefault(section, {})[key] = value
        path.write_text(tomli_w.dumps(data))
        return [command, ws.project]

    shown = "top-level" if section is None else f"[{section}]"
    return Case("settings", f"{command}: {shown} {key} = {value!r}", args, says, fresh=True)


def raw_settings(text: str, says: str, name: str, command: str = "status") -> Case:
    def args(ws, t):
        with (ws.project / CONFIG_NAME).open("a", encoding="utf-8") as handle:
            handle.write(text)
        return [command, ws.project]

    return Case("settings", f"{command}: {name}", args, says, fresh=True)


SETTINGS = [
    *setting_cases(),
    set_case("crowd", "budjet", 1.0, "did you mean 'budget'"),
    set_case("crowd", "reward", math.nan, "reward", command="publish"),
    set_case("crowd", "budget", math.nan, "budget", command="run"),
    set_case("crowd", "answers_per_pair", 2.5, "answers_per_pair", command="next"),
    set_case("review", "bot_min_answers", "x", "bot_min_answers", command="publish"),
    set_case("web", "base_url", 5, "base_url", command="invite"),
    set_case(None, "crowd", 5, "[crowd]"),
    set_case(None, "budjet", 5, "did you mean [crowd] budget"),
    set_case("adaptiv", "maximum", 5, "did you mean 'adaptive'"),
    set_case("adaptive", "maximum", "x", "maximum", command="next"),
    raw_settings("[crowd\n", "invalid toml", "invalid TOML"),
    raw_settings("\n[crowd]\nreward = 0.5\n", "invalid toml", "a section twice"),
    raw_settings("\n[mystery]\nx = 1\n", "unknown section [mystery]", "an unknown section"),
    set_case(None, "lonely", 1, "unknown top-level setting lonely"),
    set_case("project", "seed", 1, "differs from the seed"),
]


# --- options -----------------------------------------------------------------------------------


def init_args(*extra) -> Callable[[Workspace, Path], list]:
    return lambda ws, t: ["init", t / "n", "--candidates", ws.candidates, *extra]


def truth_args(*extra) -> Callable[[Workspace, Path], list]:
    """``evaluate`` with the workspace's project as the ground truth."""
    return lambda ws, t: ["evaluate", "--truth", ws.project, "--runs", ws.runs, *extra]


def option(name: str, args: Callable[[Workspace, Path], list], says: str = "") -> Case:
    return Case("options", name, args, says)


OPTIONS = [
    option("init --seed -1", init_args("--seed", -1), "seed"),
    option("init --seed x", init_args("--seed", "x"), "seed"),
    option("init --answers-per-pair 0", init_args("--answers-per-pair", 0), "answers_per_pair"),
    option("init --reward -1", init_args("--reward", -1), "reward"),
    option("init --reward nan", init_args("--reward", "nan"), "reward"),
    option("init --budget nan", init_args("--budget", "nan"), "budget"),
    option("init --budget inf", init_args("--budget", "inf"), "budget"),
    option("init --budget -5", init_args("--budget", -5), "budget"),
    option("init --alpha 2", init_args("--alpha", 2), "alpha"),
    option("init --margin 0", init_args("--margin", 0), "margin"),
    option("init --rule bogus", init_args("--rule", "bogus"), "bogus"),
    option("init --ties bogus", init_args("--ties", "bogus"), "bogus"),
    option("init without candidates", lambda ws, t: ["init", t / "n"], "missing"),
    option("status: not a project", lambda ws, t: ["status", t], "not a crowdprefs project"),
    option("next: not a project", lambda ws, t: ["next", t / "none"], "not a crowdprefs project"),
    option("run --crowd bogus", lambda ws, t: ["run", ws.project, "--crowd", "bogus"], "bogus"),
    option("publish --crowd bogus", lambda ws, t: ["publish", ws.project, "--crowd", "x"], "'x'"),
    option("publish before next", lambda ws, t: ["publish", ws.project], "no batch"),
    option("collect before publish", lambda ws, t: ["collect", ws.project], "no batch"),
    option("aggregate before collect", lambda ws, t: ["aggregate", ws.project], "no batch"),
    option("export --format xml", lambda ws, t: ["export", ws.project, "--format", "xml"], "xml"),
    option(
        "export: nothing closed",
        lambda ws, t: ["export", ws.project, "-o", t / "x"],
        "no list is closed",
    ),
    option(
        "preview --iteration 99",
        lambda ws, t: ["preview", ws.project, "--iteration", 99, "-o", t / "p"],
        "99",
    ),
    option("invite --judges -1", lambda ws, t: ["invite", ws.project, "--judges", -1], "judges"),
    option(
        "invite --base-url ftp",
        lambda ws, t: ["invite", ws.project, "--base-url", "ftp://x"],
        "http",
    ),
    option(
        "evaluate --truth-resamples -1",
        truth_args("--truth-resamples", -1),
        "truth-resamples",
    ),
    option(
        "evaluate --truth-resamples with a lists file",
        lambda ws, t: ["evaluate", "--truth", ws.truth, "--runs", ws.runs, "--truth-resamples", 5],
        "give a project folder",
    ),
    option(
        "evaluate --truth PROJECT: nothing closed",
        truth_args("--truth-resamples", 5),
        "no closed list",
    ),
    option(
        "evaluate --truth-resamples --jobs 0",
        truth_args("--truth-resamples", 5, "--jobs", 0),
        "jobs",
    ),
    option(
        "audit --resamples -1",
        lambda ws, t: ["audit", "--answers", ws.results, "--resamples", -1],
        "resamples",
    ),
    option(
        "audit --resamples x",
        lambda ws, t: ["audit", "--answers", ws.results, "--resamples", "x"],
        "resamples",
    ),
    option(
        "audit --seed -1",
        lambda ws, t: ["audit", "--answers", ws.results, "--seed", -1],
        "seed",
    ),
    option(
        "evaluate --k 0",
        lambda ws, t: ["evaluate", "--truth", ws.truth, "--runs", ws.runs, "--k", 0],
        "",
    ),
    option(
        "evaluate --measure XYZ",
        lambda ws, t: ["evaluate", "--truth", ws.truth, "--runs", ws.runs, "-m", "XYZ@5"],
        "xyz",
    ),
    option(
        "evaluate --alpha 2",
        lambda ws, t: ["evaluate", "--truth", ws.truth, "--runs", ws.runs, "--alpha", 2],
        "alpha",
    ),
    option(
        "evaluate --correction bogus",
        lambda ws, t: ["evaluate", "--truth", ws.truth, "--runs", ws.runs, "--correction", "bogus"],
        "bogus",
    ),
    option(
        "evaluate --format xml",
        lambda ws, t: ["evaluate", "--truth", ws.truth, "--runs", ws.runs, "--format", "xml"],
        "xml",
    ),
    option(
        "compare-lists --permutations 0",
        lambda ws, t: ["compare-lists", ws.truth, ws.truth, "--permutations", 0],
        "",
    ),
    option(
        "plan --campaigns 0",
        lambda ws, t: ["plan", "--candidates", ws.candidates, "--campaigns", 0],
        "campaign",
    ),
    option("plan --answers-per-pair 0", plan_args("--answers-per-pair", 0), ""),
    option("plan --reward -1", plan_args("--reward", -1), "reward"),
    option("plan --adaptive bogus", plan_args("--adaptive", "bogus"), "bogus"),
    option("plan --maximum 100", plan_args("--adaptive", "curtail", "--maximum", 100), "40"),
    option(
        "stats test: missing scores",
        lambda ws, t: ["stats", "test", "--scores", t / "none.csv"],
        "",
    ),
    option(
        "stats test --test bogus",
        lambda ws, t: ["stats", "test", "--scores", t / "s.csv", "--test", "bogus"],
        "bogus",
    ),
    option(
        "mtc next --batch 0",
        lambda ws, t: ["mtc", "next", "--runs", ws.runs, "--batch", 0, "-o", t / "n.txt"],
        "batch",
    ),
    option(
        "mtc next --scale bogus",
        lambda ws, t: ["mtc", "next", "--runs", ws.runs, "--scale", "bogus", "-o", t / "n.txt"],
        "bogus",
    ),
    option(
        "mtc next --target 2",
        lambda ws, t: ["mtc", "next", "--runs", ws.runs, "--target", 2, "-o", t / "n.txt"],
        "target",
    ),
    option(
        "mtc estimate --level 2",
        lambda ws, t: ["mtc", "estimate", "--runs", ws.runs, "--level", 2],
        "level",
    ),
    option(
        "audit --rule bogus",
        lambda ws, t: ["audit", "--answers", ws.results, "--rule", "bogus"],
        "bogus",
    ),
    option("audit: neither project nor answers", lambda ws, t: ["audit"], ""),
    option(
        "crowd-model fit --bootstrap -1",
        lambda ws, t: ["crowd-model", "fit", ws.results, "--bootstrap", -1, "-o", t / "m"],
        "bootstrap",
    ),
    option(
        "replay --pivot-side c", lambda ws, t: ["replay", ws.results, "--pivot-side", "c"], "pivot"
    ),
    option("an unknown command", lambda ws, t: ["frobnicate"], "frobnicate"),
    option("an unknown option", lambda ws, t: ["status", ws.project, "--colour"], "--colour"),
    option(
        "audio prepare: missing source",
        lambda ws, t: ["audio", "prepare", t / "none", t / "out"],
        "",
    ),
]


# --- state damage ------------------------------------------------------------------------------


def damaged(name: str, damage: Callable[[Path], None], says: str, command: str = "status") -> Case:
    def args(ws, t):
        damage(ws.project)
        return [command, ws.project]

    return Case("state", name, args, says, fresh=True)


def truncate(path: Path, size: int) -> None:
    with path.open("r+b") as handle:
        handle.truncate(size)


def scribble(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[100:4096] = b"\x5a" * (4096 - 100)
    path.write_bytes(bytes(data))


STATE = [
    damaged("no crowdprefs.toml", lambda p: (p / CONFIG_NAME).unlink(), "not a crowdprefs"),
    damaged("no state.sqlite", lambda p: (p / "state.sqlite").unlink(), "state.sqlite"),
    damaged(
        "state.sqlite truncated to 0", lambda p: truncate(p / "state.sqlite", 0), "state.sqlite"
    ),
    damaged(
        "state.sqlite truncated to 1 KB",
        lambda p: truncate(p / "state.sqlite", 1024),
        "state.sqlite",
    ),
    damaged("state.sqlite scribbled", lambda p: scribble(p / "state.sqlite"), "state.sqlite"),
    damaged("state.sqlite is text", lambda p: write(p / "state.sqlite", "hello"), "state.sqlite"),
    damaged(
        "state.sqlite is a folder",
        lambda p: ((p / "state.sqlite").unlink(), (p / "state.sqlite").mkdir()),
        "state.sqlite",
    ),
    damaged(
        "state.sqlite truncated, next",
        lambda p: truncate(p / "state.sqlite", 1024),
        "state.sqlite",
        command="next",
    ),
    damaged(
        "crowdprefs.toml is binary", lambda p: write(p / CONFIG_NAME, b"\xff\xfe\x00"), CONFIG_NAME
    ),
    damaged(
        "crowdprefs.toml is a folder",
        lambda p: ((p / CONFIG_NAME).unlink(), (p / CONFIG_NAME).mkdir()),
        CONFIG_NAME,
    ),
]

CLI_CASES = [
    *CANDIDATES,
    *QRELS,
    *RUNS,
    *LEVELS,
    *RESULTS,
    *CROWD_MODEL,
    *MTC_MODEL,
    *SETTINGS,
    *OPTIONS,
    *STATE,
]


# --- fixtures and checks -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Workspace:
    made = demo_inputs(tmp_path_factory.mktemp("malformed"), ("sysA", "sysB"))
    root, truth, lines, runs = made.root, made.truth, made.lines, made.runs
    levels = root / "levels.txt"
    levels.write_text("".join(f"{q} {d} {50 * (int(g) % 3)}\n" for _, q, d, g in lines[:6]))
    results = made.results
    return Workspace(root, root / "project", root / "candidates.csv", truth, runs, levels, results)


def fingerprint(project: Path) -> dict[str, str | None]:
    """Hashes of the project's settings and state: the state's rows (every table but the
    sort cache, which only saves recomputation, and the web server's count of wrong tokens,
    which a refused request is meant to grow), or its bytes when SQLite cannot read it."""
    found = {}
    for name in ("state.sqlite", CONFIG_NAME):
        path = project / name
        found[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    state = project / "state.sqlite"
    if found["state.sqlite"] is not None:
        try:
            with closing(sqlite3.connect(f"{state.as_uri()}?mode=ro", uri=True)) as db:
                rows = [
                    line
                    for line in db.iterdump()
                    if "sort_cache" not in line and "web_throttle" not in line
                ]
            found["state.sqlite"] = hashlib.sha256("\n".join(rows).encode()).hexdigest()
        except sqlite3.DatabaseError:
            pass
    return found


def check_refusal(code, out: str, err: str, says: str) -> str:
    assert code not in (0, None), f"accepted: {out}{err}"
    assert "Traceback" not in out + err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert says.lower() in lines[0].lower(), lines[0]
    return lines[0]


def prepared(case: Case, workspace: Workspace, tmp_path: Path) -> tuple[Workspace, list[str]]:
    ws = workspace
    if case.fresh:
        copy = tmp_path / "copy"
        shutil.copytree(workspace.root, copy, ignore=shutil.ignore_patterns("state.lock"))
        ws = Workspace(
            *(
                copy / Path(p).relative_to(workspace.root) if p != workspace.root else copy
                for p in vars(workspace).values()
            )
        )
        before = fingerprint(ws.project)
        args = [str(a) for a in case.args(ws, tmp_path)]
    else:
        before = fingerprint(ws.project)
        args = [str(a) for a in case.args(ws, tmp_path)]
    return ws, args, before


@pytest.mark.parametrize("case", CLI_CASES, ids=[f"{c.kind}: {c.name}" for c in CLI_CASES])
def test_a_malformed_input_is_refused_in_one_line(case, workspace, tmp_path, cli):
    ws, args, before = prepared(case, workspace, tmp_path)
    if case.fresh:
        before = fingerprint(ws.project)  # after the damage: the command must change nothing
    code, out, err = cli(*args)
    check_refusal(code, out, err, case.says)
    assert fingerprint(ws.project) == before


SUBPROCESS = [
    "candidates: header only",
    "settings: status: [crowd] budjet = 1.0",
    "state: state.sqlite scribbled",
    "options: init --seed -1",
    "mtc-model: levels reversed",
    "options: an unknown option",
]


@pytest.mark.parametrize("name", SUBPROCESS)
def test_a_malformed_input_is_refused_by_the_installed_program(name, workspace, tmp_path):
    (case,) = [c for c in CLI_CASES if f"{c.kind}: {c.name}" == name]
    ws, args, _ = prepared(case, workspace, tmp_path)
    before = fingerprint(ws.project)
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "crowdprefs", *args], capture_output=True, text=True, env=env
    )
    check_refusal(done.returncode, done.stdout, done.stderr, case.says)
    assert fingerprint(ws.project) == before


# --- HTTP --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    """A request to the web app by an invited judge who has a question open (``{a}`` in the
    path is its assignment, ``{csrf}`` in the form or body its token) or by a stranger, and the
    status and words of the refusal it must get."""

    name: str
    method: str
    path: str
    form: dict | None = None
    judge: bool = True
    content: bytes | None = None
    headers: dict | None = None
    status: int = 400
    says: str = ""


PLAYED = {
    **{f"plays_{clip}": "1" for clip in ("query", "a", "b")},
    **{f"listen_{clip}": "0.3" for clip in ("query", "a", "b")},
    "seconds_on_page": "0.9",
}
ANSWER = {**PLAYED, "choice": "A", "csrf": "{csrf}"}
FORM = {"content-type": "application/x-www-form-urlencoded"}
TOKEN = "security token is missing or wrong"
NOT_YOURS = "this question is not yours"
INVITE_FIRST = "open your personal invitation link first"
DAMAGED = "play log is damaged"


def answer(name: str, says: str, status: int = 400, **fields: str) -> Request:
    """An answer whose form is :data:`ANSWER` with ``fields`` changed."""
    return Request(name, "POST", "/hit/{a}", {**ANSWER, **fields}, status=status, says=says)


HTTP = [
    Request(
        "answer without csrf", "POST", "/hit/{a}", {**PLAYED, "choice": "A"}, status=403, says=TOKEN
    ),
    answer("answer with a wrong csrf", TOKEN, 403, csrf="nope"),
    answer("answer with an unknown choice", "choose one of the three answers", choice="C"),
    Request(
        "answer without a choice",
        "POST",
        "/hit/{a}",
        {**PLAYED, "csrf": "{csrf}"},
        says="choose one of the three answers",
    ),
    Request(
        "answer without listening",
        "POST",
        "/hit/{a}",
        {"choice": "A", "csrf": "{csrf}"},
        status=422,
        says="was not played to its end",
    ),
    answer("answer with negative plays", f"{DAMAGED} (plays_a = '-1')", plays_a="-1"),
    answer("answer with text plays", f"{DAMAGED} (plays_a = 'many')", plays_a="many"),
    answer("answer with half a play", f"{DAMAGED} (plays_a = '1.5')", plays_a="1.5"),
    answer("answer with nan listening", f"{DAMAGED} (listen_a = 'nan')", listen_a="nan"),
    answer(
        "answer claiming 1e300 s of listening",
        "listen_a = 1e+300 but the question was handed out",
        listen_a="1e300",
    ),
    answer("answer claiming 1e30 plays", "plays_b = 1e+30 but the question", plays_b="1e30"),
    answer(
        "answer claiming an hour on the page", "seconds_on_page = 3600 but", seconds_on_page="3600"
    ),
    answer(
        "answer heard at four times the speed",
        "variation A lasts 0.2 s but was heard for 0.1 s",
        422,
        listen_a="0.06",
    ),
    Request(
        "answer with two choices",
        "POST",
        "/hit/{a}",
        headers=FORM,
        content=b"csrf={csrf}&choice=A&choice=B&"
        + "&".join(f"{k}={v}" for k, v in PLAYED.items()).encode(),
        says="sends the field 'choice' twice",
    ),
    Request(
        "answer to an unknown assignment", "POST", "/hit/nope", ANSWER, status=403, says=NOT_YOURS
    ),
    Request(
        "answer by a stranger",
        "POST",
        "/hit/{a}",
        ANSWER,
        judge=False,
        status=403,
        says=INVITE_FIRST,
    ),
    answer(
        "answer with a huge comment",
        "the comment is longer than 2000 characters",
        comment="x" * 5000,
    ),
    Request(
        "a body above the limit",
        "POST",
        "/hit/{a}",
        content=b"x" * (3 << 20),
        headers=FORM,
        status=413,
        says="too large",
    ),
    Request("a question page of someone else", "GET", "/hit/nope", status=403, says=NOT_YOURS),
    Request("a clip of an unknown role", "GET", "/clip/{a}/zzz", status=404, says="No such clip"),
    Request("a clip of an unknown assignment", "GET", "/clip/nope/a", status=403, says=NOT_YOURS),
    Request(
        "an unknown invitation",
        "GET",
        "/invite/not-a-token",
        judge=False,
        status=403,
        says="This invitation link is not valid",
    ),
    Request(
        "an unknown study key",
        "GET",
        "/study/not-a-key?PROLIFIC_PID=x",
        judge=False,
        status=403,
        says="this study link is not valid",
    ),
    Request(
        "a question for a stranger", "POST", "/next", judge=False, status=403, says=INVITE_FIRST
    ),
    Request(
        "the researcher page without a token",
        "GET",
        "/researcher",
        judge=False,
        status=403,
        says="Open the researcher link",
    ),
    Request(
        "a wrong researcher token",
        "GET",
        "/researcher/wrong-token",
        judge=False,
        status=403,
        says="This researcher link is not valid",
    ),
    Request("an unknown page", "GET", "/etc/passwd", status=404, says="Not Found"),
    Request(
        "a cross-site answer",
        "POST",
        "/hit/{a}",
        ANSWER,
        headers={"origin": "https://evil.example"},
        status=403,
        says="cross-site form posts are refused",
    ),
]


@pytest.fixture(scope="module")
def web_project(tmp_path_factory):
    sys.path.insert(0, str(REPO / "tests" / "web"))
    from test_web import make_web_project

    return make_web_project(tmp_path_factory.mktemp("web"), queries=6, size=6)


@pytest.mark.parametrize("request_", HTTP, ids=[r.name for r in HTTP])
def test_a_malformed_request_gets_a_4xx_and_changes_nothing(request_, web_project):
    from test_web import RESEARCHER, invite, judge_client, open_question

    from crowdprefs.web.app import create_app

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    (token,) = invite(web_project, 1)
    with TestClient(create_app(web_project, RESEARCHER)) as server:
        client = judge_client(server.app, token)
        assignment, csrf, _ = open_question(client)
        before = fingerprint(web_project)
        if not request_.judge:
            client = TestClient(server.app)
        path = request_.path.format(a=assignment)
        form = {k: v.format(csrf=csrf) for k, v in (request_.form or {}).items()}
        content = request_.content and request_.content.replace(b"{csrf}", csrf.encode())
        response = client.request(
            request_.method,
            path,
            data=form or None,
            content=content,
            headers=request_.headers,
            follow_redirects=False,
        )
        after = fingerprint(web_project)
    assert response.status_code == request_.status, (response.status_code, response.text[:300])
    assert request_.says in html.unescape(response.text), response.text[-600:]
    assert "Traceback" not in response.text
    assert after == before


def test_the_table_covers_every_kind_with_150_cases_or_more():
    kinds = Counter(c.kind for c in CLI_CASES) + Counter({"http": len(HTTP)})
    assert sum(kinds.values()) >= 150, kinds
    assert set(kinds) >= {
        "candidates",
        "qrels",
        "runs",
        "levels",
        "results",
        "crowd-model",
        "mtc-model",
        "settings",
        "options",
        "state",
        "http",
    }


# --- issue 28, class 5: a message names the value and the field, never an internal ---------------

COLUMNS_NOT_A_TABLE = Case(
    "results",
    'a columns file whose columns is text (columns = "x")',
    lambda ws, t: ["replay", ws.results, "--columns", write(t / "columns.toml", 'columns = "x"\n')],
    "columns must be a table",
)
MESSAGES = [
    mtc_model_case(lambda d: d.update(sigma=math.nan), "sigma holds a number that is not finite",
                   "a NaN sigma is named"),
    mtc_model_case(lambda d: d.update(high=[math.inf] * len(d["high"])),
                   "high holds a number that is not finite", "an infinite range is named"),
    mtc_model_case(lambda d: d.update(spread=[0.0] * len(d["spread"])),
                   "spread holds a value of 0 or less", "a zero spread is named"),
    mtc_model_case(lambda d: d.update(theta=["a", "b"]), "theta must be a list of numbers",
                   "text thresholds are named"),
    mtc_model_case(lambda d: d.update(tau=[1.0]), "tau must be a number", "a list for a number"),
    mtc_model_case(lambda d: d.pop("judgments"), "no 'judgments' field", "a field missing"),
    mtc_model_case(lambda d: "[1, 2]", "not a JSON object", "a JSON list"),
    COLUMNS_NOT_A_TABLE,
]  # fmt: skip


#: Python's own words, which a message must never show.
INTERNALS = (
    "not supported between", "could not convert", "object has no attribute", "unhashable",
    "invalid literal", "Errno", "/.", "np.float", "np.int", "np.str_",
)  # fmt: skip


@pytest.mark.parametrize("case", MESSAGES, ids=[f"{c.kind}: {c.name}" for c in MESSAGES])
def test_a_message_names_the_field_and_no_internal(case, workspace, tmp_path, cli):
    ws, args, before = prepared(case, workspace, tmp_path)
    code, out, err = cli(*args)
    line = check_refusal(code, out, err, case.says)
    assert not any(internal in line for internal in INTERNALS), line
    assert fingerprint(ws.project) == before


# --- issue 28, classes 2 and 3: files, settings and evaluation ----------------------------------
# Each class is fixed once in its shared mechanism (the one date parser and numeric columns of
# results_file, the one name check of crowdprefs.io, the settings schema's bounds shared with
# crowd-model files, the measures' parser, the shared --seed), and tested here over its cases.

FULL_HEADER = (
    "HITId,WorkerId,AssignmentId,CreationTime,SubmitTime,WorkTimeInSeconds,Reward,"
    "MaxAssignments,Input.query,Input.docA,Input.docB,Answer.choice\n"
)


def full_row(**change: str) -> str:
    """One valid row of :data:`FULL_HEADER` with ``change`` applied (keys: its columns)."""
    row = {
        "HITId": "H1",
        "WorkerId": "W1",
        "AssignmentId": "A1",
        "CreationTime": TIME,
        "SubmitTime": TIME,
        "WorkTimeInSeconds": "20",
        "Reward": "$0.02",
        "MaxAssignments": "4",
        "Input.query": "q01",
        "Input.docA": "q01-v01",
        "Input.docB": "q01-v02",
        "Answer.choice": "A",
    }
    row.update(change)
    return ",".join(row.values()) + "\n"


def rows(*changes: dict) -> str:
    return FULL_HEADER + "".join(full_row(**c) for c in changes)


DATES = [
    ("Fri Apr 31 10:00:00 PST 2026", "no 31 April"),
    ("Mon Nov 23 25:00:00 PST 2026", "hour 25"),
    ("2026-02-30T10:00:00Z", "ISO 30 February"),
    ("9999-01-01T00:00:00Z", "year 9999"),
]
TRACEBACKS = [  # class 2
    *(
        case
        for when, name in DATES
        for case in results_case(rows({"CreationTime": when}), "unreadable time", name)
    ),
    *results_case(rows({"SubmitTime": "Mon Nov 23 10:61:00 PST 2026"}), "SubmitTime", "minute 61"),
    *(
        Case(
            "results",
            f"--columns holding {name}",
            lambda ws, t, text=text: ["replay", ws.results, "--columns", write(t / "c.toml", text)],
            says,
        )
        for text, says, name in [
            ("answer = 5\n", "answer must be a column name", "a number"),
            ('answer = ["a", "b"]\n', "got ['a', 'b']", "a list"),
            ("[columns]\nanswer = 1.5\n", "answer must be a column name", "a number in [columns]"),
            ("[columns.answer]\nx = 1\n", "answer must be a column name", "a table for a name"),
            ('[columns]\nanswer = "x"\n[other]\n', "outside [columns]", "a table beside it"),
        ]
    ),
    *(  # every numeric key of the simulated crowd, too large; a few negative or not finite
        crowd_model_case(f"[simulated]\n{key} = {value}\n", key, f"{key} = {value}")
        for key, value in [
            *(
                (key, 10**30 if spec.kind == "int" else "1e300")
                for key, spec in SCHEMA["simulated"].items()
                if spec.kind in ("int", "float") and key != "seed"
            ),
            ("completion_hours", "-1.0"),
            ("median_seconds", "-inf"),
            ("round_hours", "inf"),
            ("answers_per_hour", "nan"),
        ]
    ),
    *(
        option(
            f"evaluate -m {measure}",
            lambda ws, t, m=measure: ["evaluate", "--truth", ws.truth, "--runs", ws.runs, "-m", m],
            says,
        )
        for measure, says in [
            ("nDCG(b=nan)@5", "b='nan' is not a finite number"),
            ("nDCG(b=inf)@5", "b='inf' is not a finite number"),
            ("nDCG(b=1e300)@5", "b=1e+300 must be in (1, 1e+06]"),
            ("P(rel=nan)@5", "rel='nan'"),
            ("AG@99999999999", "at most 10000"),
        ]
    ),
    option(
        "evaluate --k 99999999999",
        lambda ws, t: ["evaluate", "--truth", ws.truth, "--runs", ws.runs, "--k", 99999999999],
        "--k': must be a whole number in [1, 10000]",
    ),
    option(
        "compare-lists --seed -1",
        lambda ws, t: ["compare-lists", ws.truth, ws.truth, "--seed", -1],
        "--seed",
    ),
    option(
        "compare-lists --permutations 10**6",
        lambda ws, t: ["compare-lists", ws.truth, ws.truth, "--permutations", 10**6],
        "permutations must be at least 1 and at most 169491 for lists of 118 documents",
    ),
    option("plan --seed -1", plan_args("--seed", -1), "--seed"),
    option("plan --seed 2**64", plan_args("--seed", 2**64), "9223372036854775807"),
    option("plan --campaigns 10**11", plan_args("--campaigns", 10**11), "[1, 10000]"),
    option(
        "crowd-model fit --bootstrap 10**9",
        lambda ws, t: ["crowd-model", "fit", ws.results, "--bootstrap", 10**9, "-o", t / "m"],
        "--bootstrap': must be a whole number in [0, 10000]",
    ),
    set_case("simulated", "bots", 10**30, "bots must be a whole number in [0, 100000]", "run"),
    set_case("simulated", "median_seconds", 1e300, "median_seconds must be a number in [0, "),
    set_case("simulated", "completion_hours", -1.0, "completion_hours", "next"),
    set_case("aggregation", "margin", 10**30, "margin must be a whole number in [1, 1000]"),
    damaged("the stored seed is missing", lambda p: stored_seed(p, None), "seed fixed at init"),
    damaged("the stored seed is text", lambda p: stored_seed(p, "abc"), "'abc'"),
]


def stored_seed(project: Path, value: str | None) -> None:
    """Damage the state's seed: remove it (``None``) or replace it by ``value``."""
    with closing(sqlite3.connect(project / "state.sqlite")) as db:
        if value is None:
            db.execute("DELETE FROM meta WHERE key = 'seed'")
        else:
            db.execute("UPDATE meta SET value = ? WHERE key = 'seed'", (value,))
        db.commit()


HIDDEN_NAMES = {"right-to-left override": "\u202e", "zero-width space": "\u200b", "escape": "\x1b"}
SILENT_CASES = [  # class 3
    *(
        case
        for name, char in HIDDEN_NAMES.items()
        for case in [
            init_with(f"query,document\nq,a{char}\nq,b\n", f"U+{ord(char):04X}", f"{name}: doc"),
            *runs_case(f"sysA{char} q01 q01-v01\n", f"U+{ord(char):04X}", f"{name}: system"),
            *results_case(rows({"WorkerId": f"W{char}1"}), f"U+{ord(char):04X}", f"{name}: worker"),
        ]
    ),
    *qrels_case("t q01\u2066 q01-v01 1\n", "U+2066", "an isolate in a query"),
    *levels_case("q01 q01-v01\u200d 50\n", "U+200D", "a zero-width joiner in a document"),
    *(
        init_with(f'query,document,audio\nq,a,"{url}"\nq,b,b.wav\n', url, f"audio {url}")
        for url in ("file:///etc/passwd", "javascript:alert(1)", "data:audio/wav;base64,AAAA")
    ),
    *(
        case
        for change, says, name in [
            ({"WorkTimeInSeconds": "inf"}, "WorkTimeInSeconds 'inf' is not a number", "inf time"),
            ({"WorkTimeInSeconds": "1e300"}, "too large", "a huge time"),
            ({"Reward": "$-0.02"}, "negative Reward", "a negative reward"),
            ({"Reward": "$inf"}, "Reward '$inf' is not an amount", "an infinite reward"),
            ({"MaxAssignments": "-1"}, "MaxAssignments '-1'", "negative MaxAssignments"),
            ({"MaxAssignments": "2.5"}, "not a whole number", "half an assignment"),
            ({"Input.docA": "q01-v02"}, "variations A and B are both 'q01-v02'", "A = B"),
        ]
        for case in results_case(rows(change), says, name)
    ),
    *results_case(
        rows({}, {"AssignmentId": "A2"}), "answered HITId 'H1' twice", "a worker answering twice"
    ),
    *results_case(
        rows({}, {"WorkerId": "W2", "AssignmentId": "A2", "Input.docB": "q01-v03"}),
        "names two pairs",
        "a HIT naming two pairs",
    ),
    *(
        Case(
            "results",
            f"a long answers file with {name}",
            lambda ws, t, text=text: [
                "audit",
                "--answers",
                write(t / "long.csv", "worker,query,left,right,label,seconds\n" + text),
                "--format",
                "long",
            ],
            says,
        )
        for text, says, name in [
            ("w\u202e1,q,a,b,left,3\n", "U+202E", "an override in a worker"),
            ("w1,q,a\u200b,b,left,3\n", "U+200B", "a zero-width space in an item"),
            ("w1,q,a,b,left,inf\n", "holds inf", "infinite seconds"),
        ]
    ),
    crowd_model_case("[simulatd]\nworkers = 3\n", "did you mean [simulated]", "a misspelt table"),
    crowd_model_case("workers = 3\n", "top-level key 'workers'", "a key outside the table"),
    crowd_model_case("[fit]\npairs = 3\n", "no [simulated] table", "no [simulated] table"),
    crowd_model_case("[simulated]\nbotz = 3\n", "did you mean 'bots'", "an unknown key"),
    option("invite --judges 0", lambda ws, t: ["invite", ws.project, "--judges", 0], "at least 1"),
]
ISSUE_28 = TRACEBACKS + SILENT_CASES


@pytest.mark.parametrize("case", ISSUE_28, ids=[f"{c.kind}: {c.name}" for c in ISSUE_28])
def test_issue_28_inputs_are_refused_in_one_line(case, workspace, tmp_path, cli):
    ws, args, before = prepared(case, workspace, tmp_path)
    if case.fresh:
        before = fingerprint(ws.project)
    code, out, err = cli(*args)
    check_refusal(code, out, err, case.says)
    assert fingerprint(ws.project) == before


@pytest.mark.parametrize("name", ["results: replay: no 31 April", f"crowd-model: bots = {10**30}"])
def test_issue_28_cases_through_the_installed_program(name, workspace, tmp_path):
    (case,) = [c for c in ISSUE_28 if f"{c.kind}: {c.name}" == name]
    ws, args, before = prepared(case, workspace, tmp_path)
    done = subprocess.run([script(), *args], capture_output=True, text=True, check=False)
    check_refusal(done.returncode, done.stdout, done.stderr, case.says)


def test_every_numeric_setting_has_finite_bounds():
    unbounded = [
        f"[{section}] {key}"
        for section, keys in SCHEMA.items()
        for key, spec in keys.items()
        if spec.kind in ("int", "float") and (spec.low is None or spec.high is None)
    ]
    assert not unbounded


def one_line(code, err: str, says: str) -> None:
    """A refusal: non-zero exit, one ``error:`` line holding ``says``, no traceback."""
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert code not in (0, None) and "Traceback" not in err, err
    assert len(errors) == 1 and says in errors[0], err


def set_crowd(project: Path, **crowd) -> None:
    """Replace ``crowdprefs.toml``'s [crowd] table (the seed kept)."""
    import tomllib

    data = tomllib.loads((project / CONFIG_NAME).read_text())
    data["crowd"] = crowd
    (project / CONFIG_NAME).write_text(tomli_w.dumps(data))


def test_a_missing_or_lowered_budget_never_means_no_budget(workspace, tmp_path, cli):
    project = tmp_path / "p"
    assert cli("init", project, "--candidates", workspace.candidates, "--budget", 50)[0] == 0
    (project / CONFIG_NAME).write_text("")  # the settings file emptied before any spend
    before = fingerprint(project)
    code, out, err = cli("run", project)
    one_line(code, err, "has no [crowd] budget, but this project had a budget of $50.00")
    assert fingerprint(project) == before
    set_crowd(project, budget=50.0)
    for step in ("next", "publish", "collect", "aggregate", "next"):
        assert cli(step, project)[0] == 0
    set_crowd(project, budget=5.0)  # below what batch 1 committed
    code, out, err = cli("publish", project)
    one_line(code, err, "the budget of $5.00 is below the $")
    set_crowd(project)  # the budget removed after spending
    code, out, err = cli("publish", project)
    one_line(code, err, "had a budget of $50.00")
    code, out, _ = cli("status", project)  # status says so too, not "no budget set" alone
    assert code == 0 and "the project had $50.00, so nothing more is spent" in out


def test_settings_changed_after_next_are_noted(workspace, tmp_path, cli):
    project = tmp_path / "p"
    assert cli("init", project, "--candidates", workspace.candidates)[0] == 0
    assert cli("next", project)[0] == 0
    set_crowd(project, answers_per_pair=10, reward=0.03)
    code, out, err = cli("publish", project)
    assert code == 0, err
    assert "changed since 'next' built batch 1: [crowd] reward 0.02 → 0.03" in err


def test_answers_of_one_crowd_are_not_imported_as_another(workspace, tmp_path, cli):
    from crowdprefs.campaign.project import Project
    from crowdprefs.results_file import write_results

    project = tmp_path / "p"
    assert cli("init", project, "--candidates", workspace.candidates)[0] == 0
    for step in ("next", "publish", "collect"):
        assert cli(step, project)[0] == 0
    with Project(project) as opened:
        answers = opened.store.audit_answers().head(5)
    answers = answers.assign(
        pivot_known=True, assignment_id="copy-" + answers["assignment_id"].astype(str)
    )
    write_results(answers, tmp_path / "copy.csv")
    before = fingerprint(project)
    code, out, err = cli("import-answers", project, tmp_path / "copy.csv")
    one_line(code, err, "batch 1 was published to the simulated crowd, not 'mturk'")
    assert fingerprint(project) == before


def test_a_fit_says_what_the_file_could_not_inform(workspace, tmp_path, cli):
    import tomllib

    output = tmp_path / "model.toml"
    code, out, err = cli("crowd-model", "fit", workspace.results, "--bootstrap", 2, "-o", output)
    assert code == 0, err
    assert "not fitted: no work times in the file" in out  # the file has no WorkTimeInSeconds
    fit = tomllib.loads(output.read_text())["fit"]
    assert {"median_seconds", "completion_hours", "round_hours"} <= set(fit["not_fitted"])
    assert "median_seconds" not in fit["intervals"]


def test_replay_project_is_checked_before_anything_is_printed_or_written(tmp_path, cli):
    many = "".join(
        full_row(WorkerId=f"W{i}", AssignmentId=f"A{i}", MaxAssignments="1001") for i in range(1001)
    )
    results = write(tmp_path / "r.csv", FULL_HEADER + many)
    lists, project = tmp_path / "lists.txt", tmp_path / "p"
    code, out, err = cli("replay", results, "-o", lists, "--project", project)
    one_line(code, err, "HIT 'H1' has 1001 answers")
    assert out == "" and not lists.exists() and not project.exists()


def test_a_recorded_project_commits_what_its_replay_prices(workspace, tmp_path, cli):
    text = workspace.results.read_text().splitlines()
    text[5] = text[5].rsplit(",", 1)[0] + ","  # one paid assignment without an answer
    results = write(tmp_path / "r.csv", "\n".join(text) + "\n")
    project = tmp_path / "p"
    code, out, err = cli("replay", results, "--reward", 0.02, "--project", project)
    assert code == 0, err
    priced = next(line for line in out.splitlines() if line.startswith("cost: $"))
    code, out, err = cli("status", project)
    committed = next(line for line in out.splitlines() if "committed" in line)
    assert priced.split()[1] == committed.split()[1] == "$4.80"


def test_an_attention_check_may_show_the_query_as_a_variation(tmp_path):
    from crowdprefs.results_file import read_results

    header = FULL_HEADER.replace("Answer.choice", "Input.check,Answer.choice")
    check = full_row(**{"Input.docA": "q01"}).replace(",A\n", ",B,A\n")  # Input.check = B
    frame = read_results(write(tmp_path / "r.csv", header + check))
    assert frame["kind"].tolist() == ["check"]
