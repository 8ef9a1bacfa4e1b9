"""Malformed inputs, one table: every case ends in a non-zero exit (or an HTTP 4xx), exactly one
``error:`` line naming the problem, no traceback, and the project's state and settings unchanged.

Add a row to :data:`CASES` for each new input a command reads. The kinds: ``candidates``,
``qrels``, ``runs``, ``levels``, ``results``, ``crowd-model``, ``mtc-model``, ``settings``,
``options``, ``state`` (command-line cases, run in this process) and ``http`` (requests to the
web app). A few command-line cases also run through ``python -m crowdprefs`` in a subprocess.
"""

from __future__ import annotations

import hashlib
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

from crowdprefs.campaign.settings import CONFIG_NAME, SCHEMA
from crowdprefs.demo import create_demo_project

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

    return [
        Case("runs", f"evaluate: {name}", evaluate, says),
        Case("runs", f"mtc estimate: {name}", estimate, says),
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

RESULTS_HEADER = (
    "HITId,WorkerId,AssignmentId,CreationTime,SubmitTime,Input.query,Input.docA,Input.docB,"
    "Answer.choice\n"
)


TIME = "Mon Nov 23 10:00:00 PST 2026"


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

WRONG_TYPE = {"int": "x", "float": True, "bool": "yes", "str": 5, "list[str]": "a"}
"""A value of the wrong type for each kind of key."""
SILENT = {"int": 2.5, "float": math.nan}
"""Values Python would have coerced quietly (2.5 → 2; NaN compares false with every bound)."""
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
    root = tmp_path_factory.mktemp("malformed")
    create_demo_project(root).close()
    truth = root / "truth.qrel"
    lines = [line.split() for line in truth.read_text().splitlines()]
    runs = root / "runs.txt"
    runs.write_text(
        "".join(
            f"{s} {q} {d}\n"
            for s in ("sysA", "sysB")
            for _, q, d, _ in lines[:: 1 if s == "sysA" else -1]
        )
    )
    levels = root / "levels.txt"
    levels.write_text("".join(f"{q} {d} {50 * (int(g) % 3)}\n" for _, q, d, g in lines[:6]))
    rows = []
    for i, (_, q, a, _) in enumerate(lines[:40]):
        b = lines[i + 1][2] if lines[i + 1][1] == q else lines[i - 1][2]
        rows += [
            f"H{i},W{w},A{i}-{w},{TIME},{TIME},{q},{a},{b},{'AB'[(i + w) % 2]}\n" for w in range(4)
        ]
    results = write(root / "results.csv", RESULTS_HEADER + "".join(rows))
    return Workspace(root, root / "project", root / "candidates.csv", truth, runs, levels, results)


def fingerprint(project: Path) -> dict[str, str | None]:
    """Hashes of the project's settings and state: the state's rows (every table but the
    sort cache, which only saves recomputation), or its bytes when SQLite cannot read it."""
    found = {}
    for name in ("state.sqlite", CONFIG_NAME):
        path = project / name
        found[name] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None
    state = project / "state.sqlite"
    if found["state.sqlite"] is not None:
        try:
            with closing(sqlite3.connect(f"{state.as_uri()}?mode=ro", uri=True)) as db:
                rows = [line for line in db.iterdump() if "sort_cache" not in line]
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
    path is its assignment, ``{csrf}`` in the form its token) or by a stranger."""

    name: str
    method: str
    path: str
    form: dict | None = None
    judge: bool = True
    content: bytes | None = None
    headers: dict | None = None


PLAYED = {
    **{f"plays_{clip}": "1" for clip in ("query", "a", "b")},
    **{f"listen_{clip}": "0.3" for clip in ("query", "a", "b")},
    "seconds_on_page": "4.2",
}
ANSWER = {**PLAYED, "choice": "A", "csrf": "{csrf}"}

HTTP = [
    Request("answer without csrf", "POST", "/hit/{a}", {**PLAYED, "choice": "A"}),
    Request("answer with a wrong csrf", "POST", "/hit/{a}", {**ANSWER, "csrf": "nope"}),
    Request("answer with an unknown choice", "POST", "/hit/{a}", {**ANSWER, "choice": "C"}),
    Request("answer without a choice", "POST", "/hit/{a}", {**PLAYED, "csrf": "{csrf}"}),
    Request("answer without listening", "POST", "/hit/{a}", {"choice": "A", "csrf": "{csrf}"}),
    Request("answer with negative plays", "POST", "/hit/{a}", {**ANSWER, "plays_a": "-1"}),
    Request("answer with text plays", "POST", "/hit/{a}", {**ANSWER, "plays_a": "many"}),
    Request("answer with nan listening", "POST", "/hit/{a}", {**ANSWER, "listen_a": "nan"}),
    Request("answer to an unknown assignment", "POST", "/hit/nope", ANSWER),
    Request("answer by a stranger", "POST", "/hit/{a}", ANSWER, judge=False),
    Request("answer with a huge comment", "POST", "/hit/{a}", {**ANSWER, "comment": "x" * 5000}),
    Request(
        "a body above the limit",
        "POST",
        "/hit/{a}",
        content=b"x" * (3 << 20),
        headers={"content-type": "application/x-www-form-urlencoded"},
    ),
    Request("a question page of someone else", "GET", "/hit/nope"),
    Request("a clip of an unknown role", "GET", "/clip/{a}/zzz"),
    Request("a clip of an unknown assignment", "GET", "/clip/nope/a"),
    Request("an unknown invitation", "GET", "/invite/not-a-token", judge=False),
    Request("an unknown study key", "GET", "/study/not-a-key?PROLIFIC_PID=x", judge=False),
    Request("a question for a stranger", "POST", "/next", judge=False),
    Request("the researcher page without a token", "GET", "/researcher", judge=False),
    Request("a wrong researcher token", "GET", "/researcher/wrong-token", judge=False),
    Request("an unknown page", "GET", "/etc/passwd"),
    Request(
        "a cross-site answer",
        "POST",
        "/hit/{a}",
        ANSWER,
        headers={"origin": "https://evil.example"},
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
        response = client.request(
            request_.method,
            path,
            data=form or None,
            content=request_.content,
            headers=request_.headers,
            follow_redirects=False,
        )
        after = fingerprint(web_project)
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
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
