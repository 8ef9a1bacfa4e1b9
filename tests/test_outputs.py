"""Every file a command writes goes through one writer (:class:`crowdprefs.files.Output`).

Issue 28, class 1: an output path must never destroy the project or the command's own input.
Each option that writes a file is aimed, through the console script, at the project's
``crowdprefs.toml`` and ``state.sqlite``, at the command's input (itself, a hard link, a symbolic
link), at a FIFO, at a folder and into a missing folder: each is refused in one line, the target
unchanged. A symbolic link to an unrelated file is followed: its target rewritten, the link kept.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
from console_script import crowdprefs
from demo_inputs import demo_inputs

from crowdprefs.cli import app
from crowdprefs.demo import create_demo_project
from examples.melodies import make_example


@dataclass(frozen=True)
class Workspace:
    """Valid inputs: a project (nothing asked yet), its candidates and truth lists, two systems'
    runs, level judgments, metadata, an MTurk results CSV, a columns file, a scores file, and
    the candidates of a small melodies example (with MIDI audio)."""

    root: Path
    project: Path
    candidates: Path
    truth: Path
    runs: Path
    levels: Path
    metadata: Path
    results: Path
    columns: Path
    scores: Path
    melodies: Path


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Workspace:
    made = demo_inputs(tmp_path_factory.mktemp("outputs"), ("sysA", "sysB", "sysC"))
    root, truth, lines, runs = made.root, made.truth, made.lines, made.runs
    levels = root / "levels.txt"
    levels.write_text("".join(f"{q} {d} {(7 * i) % 101}\n" for i, (_, q, d, _) in enumerate(lines)))
    metadata = root / "metadata.txt"
    metadata.write_text(
        "".join(f"{d} artist{i % 4} genre{i % 2}\n" for i, (_, _, d, _) in enumerate(lines))
    )
    results = made.results
    columns = root / "columns.toml"
    columns.write_text('answer = "Answer.choice"\n')
    scores = root / "scores.csv"
    scores.write_text(
        "system,query,measure,score\n"
        + "".join(
            f"sys{s},q{q},AG@5,{((s + 1) * (q + 3) * 37 % 100) / 100}\n"
            for s in range(3)
            for q in range(12)
        )
    )
    make_example(root / "melodies", sizes=(2, 2))
    return Workspace(
        root, root / "project", root / "candidates.csv", truth, runs, levels, metadata, results,
        columns, scores, root / "melodies" / "candidates.csv",
    )  # fmt: skip


@dataclass(frozen=True)
class Writer:
    """An option that writes a file: ``args(ws, target)`` is a command line writing ``target``;
    ``reads(ws)`` is one of the command's inputs; ``suffix`` the extension its files take."""

    command: str
    option: str
    args: Callable[[Workspace, Path], list]
    reads: Callable[[Workspace], Path]
    suffix: str = ".txt"


def mtc(command: str, option: str, *extra: str) -> Callable[[Workspace, Path], list]:
    """``mtc COMMAND`` on the runs and metadata (and every judgment, but for ``next``)."""
    judged = [] if command == "next" else ["--judgments"]
    return lambda ws, t: [
        "mtc", command, "--runs", ws.runs, *judged, *(ws.levels for _ in judged),
        "--metadata", ws.metadata, *extra, option, t,
    ]  # fmt: skip


WRITERS = [
    Writer("export", "-o", lambda ws, t: ["export", ws.project, "--partial", "-o", t],
           lambda ws: ws.project / "crowdprefs.toml"),
    Writer("invite", "-o", lambda ws, t: ["invite", ws.project, "-o", t],
           lambda ws: ws.project / "crowdprefs.toml", ".csv"),
    Writer("audit", "--html", lambda ws, t: ["audit", "--answers", ws.results, "--html", t],
           lambda ws: ws.results, ".html"),
    Writer("crowd-model fit", "-o",
           lambda ws, t: ["crowd-model", "fit", ws.results, "--columns", ws.columns,
                          "--bootstrap", "0", "-o", t],
           lambda ws: ws.columns, ".toml"),
    Writer("plan", "-o",
           lambda ws, t: ["plan", "--candidates", ws.candidates, "--campaigns", "2", "-o", t],
           lambda ws: ws.candidates, ".csv"),
    Writer("replay", "-o", lambda ws, t: ["replay", ws.results, "--partial", "-o", t],
           lambda ws: ws.results),
    Writer("mtc next", "-o", mtc("next", "-o", "--batch", "3"), lambda ws: ws.runs),
    Writer("mtc train", "-o", mtc("train", "-o"), lambda ws: ws.metadata, ".json"),
    Writer("mtc transfer", "-o", mtc("transfer", "-o", "--splits", "1", "--estimator", "uniform"),
           lambda ws: ws.levels, ".csv"),
    Writer("mtc simulate", "--plot", mtc("simulate", "--plot", "--max-judgments", "20"),
           lambda ws: ws.levels, ".png"),
    Writer("prior chroma", "-o", lambda ws, t: ["prior", "chroma", ws.melodies, "-o", t],
           lambda ws: ws.melodies, ".csv"),
    Writer("evaluate", "--plot",
           lambda ws, t: ["evaluate", "--truth", ws.truth, "--runs", ws.runs, "--plot", t],
           lambda ws: ws.truth, ".png"),
    *(
        Writer(f"stats {study}", option,
               lambda ws, t, study=study, option=option: [
                   "stats", study, "--scores", ws.scores, "--samples", "3", option, t],
               lambda ws: ws.scores, ".png" if option == "--plot" else ".csv")
        for study in ("power", "stability")
        for option in ("--plot", "-o")
    ),
]  # fmt: skip
WRITER_IDS = [f"{w.command} {w.option}" for w in WRITERS]

#: Each Path parameter of the CLI that is not a file written: what it is. A new Path parameter
#: must be added here (it is read) or to WRITERS or FOLDER_WRITERS (it is written: then tested).
READ_OR_NEW = {
    "directory": "the project folder (or a new project or demo folder: never an existing one)",
    **dict.fromkeys(
        ("candidates", "truth", "runs", "judgments", "metadata", "model", "results", "lists",
         "answers", "reference", "split_by", "columns_file", "crowd_model", "scores", "strata",
         "flags", "soundfont", "researcher_token_file", "a", "b", "src"),
        "an input (read)",
    ),
    "replay project": "a new project folder (never an existing one)",
    "init prior": "an input (read): the machine prior's scores",
    "prepare dst": "the clips folder (audio_prep's own manifest decides what it rewrites)",
    "audio prepare dst": "the clips folder (audio_prep's own manifest decides what it rewrites)",
}  # fmt: skip


@dataclass(frozen=True)
class FolderWriter:
    """An option naming a folder files are written into: ``args(ws, folder, tmp)``; ``over``:
    a file the command writes there (an input made with that name is refused)."""

    command: str
    option: str
    args: Callable[[Workspace, Path, Path], list]
    over: str


FOLDER_WRITERS = [
    FolderWriter("audit", "--csv-dir",
                 lambda ws, f, t: ["audit", "--answers", t / "flags.csv", "--csv-dir", f],
                 "flags.csv"),
    FolderWriter("mtc next", "--hits",
                 lambda ws, f, t: ["mtc", "next", "--runs", ws.runs, "--metadata",
                                   t / "level_0001.html", "--batch", "2", "-o", t / "next.txt",
                                   "--hits", f],
                 "level_0001.html"),
    FolderWriter("preview", "-o", lambda ws, f, t: ["preview", ws.project, "-o", f], ""),
]  # fmt: skip
FOLDER_IDS = [f"{w.command} {w.option}" for w in FOLDER_WRITERS]


def commands(group=None, prefix=()):
    group = group or typer.main.get_command(app)
    for name, command in getattr(group, "commands", {}).items():
        if getattr(command, "commands", None):
            yield from commands(command, (*prefix, name))
        else:
            yield " ".join((*prefix, name)), command


def test_every_path_option_of_every_command_is_a_tested_writer_or_an_input():
    """A new option that writes a file fails here until it is in WRITERS (and so tested)."""
    import typing

    tested = {(w.command, w.option) for w in (*WRITERS, *FOLDER_WRITERS)}
    unknown = []
    for name, command in commands():
        hints = typing.get_type_hints(command.callback)
        for param in command.params:
            if "Path" not in str(hints.get(param.name)):
                continue
            if any((name, opt) in tested for opt in param.opts):
                continue
            if param.name not in READ_OR_NEW and f"{name} {param.name}" not in READ_OR_NEW:
                unknown.append(f"{name} {'/'.join(param.opts)}")
    assert not unknown, f"Path options neither tested as outputs nor known as inputs: {unknown}"


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry under ``folder``: a file's bytes, else what it is."""
    found = {}
    for path in sorted(folder.rglob("*")):
        mode = path.lstat().st_mode
        key = str(path.relative_to(folder))
        if stat.S_ISLNK(mode):
            found[key] = f"link to {os.readlink(path)}"
        elif stat.S_ISREG(mode):
            found[key] = hashlib.sha256(path.read_bytes()).hexdigest()
        else:
            found[key] = stat.filemode(mode)
    return found


def refused(code, out: str, err: str) -> str:
    assert code not in (0, None), f"accepted: {out}{err}"
    assert "Traceback" not in out + err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def _hard_link(ws: Workspace, writer: Writer, tmp: Path) -> Path:
    link = tmp / f"hard{writer.suffix}"
    os.link(writer.reads(ws), link)
    return link


def _symbolic_link(ws: Workspace, writer: Writer, tmp: Path) -> Path:
    link = tmp / f"soft{writer.suffix}"
    link.symlink_to(writer.reads(ws))
    return link


def _fifo(ws: Workspace, writer: Writer, tmp: Path) -> Path:
    os.mkfifo(tmp / f"fifo{writer.suffix}")
    return tmp / f"fifo{writer.suffix}"


def _folder(ws: Workspace, writer: Writer, tmp: Path) -> Path:
    (tmp / f"folder{writer.suffix}").mkdir()
    return tmp / f"folder{writer.suffix}"


def _settings_file(ws: Workspace, writer: Writer, tmp: Path) -> Path:
    """A file another project's settings name as its machine prior (issue 42, class 3)."""
    other = tmp / "other"
    other.mkdir()
    (other / "crowdprefs.toml").write_text(
        f'[prior]\nscores = "machine{writer.suffix}"\n[simulated]\ntruth = "../truth.qrel"\n'
    )
    (other / f"machine{writer.suffix}").write_text("query,document,score\n")
    return other / f"machine{writer.suffix}"


#: target → (how to make it, what the one line must say)
TARGETS: dict[str, tuple[Callable[[Workspace, Writer, Path], Path], str]] = {
    "crowdprefs.toml": (lambda ws, w, t: ws.project / "crowdprefs.toml", "file of the project"),
    "state.sqlite": (lambda ws, w, t: ws.project / "state.sqlite", "file of the project"),
    "its input": (lambda ws, w, t: w.reads(ws), ""),
    "a hard link to its input": (_hard_link, ""),
    "a symbolic link to its input": (_symbolic_link, ""),
    "the prior's scores a project's settings name": (_settings_file, "[prior] scores"),
    "a FIFO": (_fifo, "special file"),
    "a folder": (_folder, "is a folder"),
    "a missing folder": (lambda ws, w, t: t / "missing" / f"out{w.suffix}", "does not exist"),
}


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("writer", WRITERS, ids=WRITER_IDS)
def test_an_output_over_what_must_stay_is_refused_and_nothing_changes(
    writer, target, ws, tmp_path, cli
):
    make, says = TARGETS[target]
    path = make(ws, writer, tmp_path)
    before, around = snapshot(ws.root), snapshot(tmp_path)
    code, out, err = cli(*writer.args(ws, path))
    line = refused(code, out, err)
    assert str(path) in line, line  # the path the user gave, never a temporary file's name
    assert says in line, line
    if "input" in target:  # the project's own files, for the commands that read a project
        assert "input" in line or "file of the project" in line, line
    assert snapshot(ws.root) == before
    assert snapshot(tmp_path) == around


@pytest.mark.parametrize("writer", WRITERS, ids=WRITER_IDS)
def test_a_symbolic_link_to_another_file_is_followed(writer, ws, tmp_path, cli):
    other = tmp_path / f"other{writer.suffix}"
    other.write_text("old\n")
    link = tmp_path / f"link{writer.suffix}"
    link.symlink_to(other)
    code, out, err = cli(*writer.args(ws, link))
    assert code in (0, None), err
    assert link.is_symlink() and link.resolve() == other.resolve()
    assert other.read_bytes() != b"old\n" and other.stat().st_size > 0
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary


PLOTS = [w for w in WRITERS if w.option == "--plot"]


@pytest.mark.parametrize("writer", PLOTS, ids=[f"{w.command} {w.option}" for w in PLOTS])
def test_a_plot_of_an_unknown_kind_is_refused_before_any_work(writer, ws, tmp_path, cli):
    target = tmp_path / "figure.jpg"
    code, out, err = cli(*writer.args(ws, target))
    line = refused(code, out, err)
    assert "'.jpg'" in line and "PNG, PDF, SVG" in line, line
    assert not target.exists() and not list(tmp_path.iterdir())


def test_a_new_output_keeps_the_umask_and_a_replaced_one_its_mode(ws, tmp_path, cli):
    kept = tmp_path / "kept.csv"
    kept.write_text("old\n")
    kept.chmod(0o640)
    args = ["plan", "--candidates", ws.candidates, "--campaigns", "2", "-o"]
    assert cli(*args, kept)[0] in (0, None)
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640 and kept.read_text() != "old\n"


FOLDER_TARGETS = {
    "the project folder": (lambda ws, t: ws.project, "is a project folder"),
    "the project's clips": (lambda ws, t: ws.project / "clips", "keeps the project"),
    "a file": (lambda ws, t: ws.results, "is a file, not a folder"),
}


@pytest.mark.parametrize("target", FOLDER_TARGETS)
@pytest.mark.parametrize("writer", FOLDER_WRITERS, ids=FOLDER_IDS)
def test_a_folder_output_over_what_must_stay_is_refused(writer, target, ws, tmp_path, cli):
    make, says = FOLDER_TARGETS[target]
    (tmp_path / "flags.csv").write_bytes(ws.results.read_bytes())
    (tmp_path / "level_0001.html").write_bytes(ws.metadata.read_bytes())
    before, around = snapshot(ws.root), snapshot(tmp_path)
    line = refused(*cli(*writer.args(ws, make(ws, tmp_path), tmp_path)))
    assert says in line, line
    assert snapshot(ws.root) == before and snapshot(tmp_path) == around


@pytest.mark.parametrize(
    "writer",
    [w for w in FOLDER_WRITERS if w.over],
    ids=[i for i in FOLDER_IDS if "preview" not in i],
)
def test_a_file_written_into_a_folder_never_replaces_an_input(writer, ws, tmp_path, cli):
    (tmp_path / "flags.csv").write_bytes(ws.results.read_bytes())
    (tmp_path / "level_0001.html").write_bytes(ws.metadata.read_bytes())
    around = snapshot(tmp_path)
    code, out, err = cli(*writer.args(ws, tmp_path, tmp_path))  # checked once the names are known
    assert code not in (0, None) and "Traceback" not in err, err
    line = err.strip().splitlines()[-1]
    assert f"{tmp_path / writer.over}: it is the command's input" in line, line
    assert snapshot(tmp_path) == around


@pytest.mark.parametrize("target", ["a file in it", "a hard link", "a symbolic link"])
def test_an_output_over_a_file_of_a_plain_input_folder_is_refused(target, ws, tmp_path):
    """An input folder that is not a project (``--runs`` as a folder of run files) protects
    every file it holds, whatever its name, through the console script."""
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "system.png").write_bytes(ws.runs.read_bytes())  # a run file, whatever its name
    path = {"a file in it": runs / "system.png", "a hard link": tmp_path / "hard.png",
            "a symbolic link": tmp_path / "soft.png"}[target]  # fmt: skip
    if target == "a hard link":
        os.link(runs / "system.png", path)
    elif target == "a symbolic link":
        path.symlink_to(runs / "system.png")
    around = snapshot(tmp_path)
    done = crowdprefs("evaluate", "--truth", ws.truth, "--runs", runs, "--plot", path)
    line = refused(done.returncode, done.stdout, done.stderr)
    assert f"cannot write {path}: it is system.png, read from the command's input --runs" in line
    assert snapshot(tmp_path) == around


def test_a_failed_write_names_the_path_given_and_leaves_no_temporary(tmp_path):
    from crowdprefs.errors import InputError
    from crowdprefs.files import Output, atomic_path

    target = tmp_path / "out.csv"
    target.write_text("old\n")
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    with pytest.raises(InputError) as refused_write, atomic_path(Output(link)) as temporary:
        raise OSError(28, "No space left on device", str(temporary))
    assert str(refused_write.value) == (
        f"cannot write {link}: no space left on device; free some space and retry"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.csv", "out.csv"]
    assert target.read_text() == "old\n" and link.is_symlink()


PROJECT_WRITERS = [w for w in WRITERS if w.command in ("export", "invite")]


@pytest.mark.parametrize("writer", PROJECT_WRITERS, ids=[w.command for w in PROJECT_WRITERS])
def test_an_output_over_a_file_the_project_s_settings_name_outside_it_is_refused(
    writer, ws, tmp_path
):
    """Issue 42, class 3: the simulated truth of the demo project lies beside it
    (``[simulated] truth = "../truth.qrel"``); a command reading the project never replaces it,
    through the console script."""
    before = snapshot(ws.root)
    done = crowdprefs(*writer.args(ws, ws.truth))
    line = refused(done.returncode, done.stdout, done.stderr)
    assert f"{ws.truth}: it is the file [simulated] truth of the project" in line, line
    assert snapshot(ws.root) == before


def test_the_writer_knows_every_setting_that_names_a_file():
    """A new setting naming a file (``Key(names_file=True)``) is protected by the writer."""
    from crowdprefs.campaign.settings import SCHEMA
    from crowdprefs.files import SETTINGS_FILES

    named = {(s, k) for s, keys in SCHEMA.items() for k, key in keys.items() if key.names_file}
    assert named == set(SETTINGS_FILES)


def test_the_writer_knows_the_project_s_own_names():
    from crowdprefs.campaign.project import STATE_NAME
    from crowdprefs.campaign.settings import CONFIG_NAME
    from crowdprefs.files import PROJECT_FILES, PROJECT_MARKER

    assert PROJECT_MARKER == CONFIG_NAME
    assert STATE_NAME.startswith(PROJECT_FILES) and CONFIG_NAME.startswith(PROJECT_FILES)


# --- issue 28, class 4 and issue 42, class 8: a refused command changes nothing ------------------


def project_snapshot(root: Path) -> tuple[dict, str]:
    """Every file under ``root`` (bytes), and a digest of the SQL dump of its project's state
    (read without changing it)."""
    import sqlite3
    from contextlib import closing

    uri = f"{(root / 'project' / 'state.sqlite').as_uri()}?mode=ro"
    with closing(sqlite3.connect(uri, uri=True)) as db:
        dump = hashlib.sha256("\n".join(db.iterdump()).encode()).hexdigest()
    return snapshot(root), dump


def with_settings(project: Path, **sections: dict) -> None:
    import tomllib

    import tomli_w

    config = project / "crowdprefs.toml"
    data = tomllib.loads(config.read_text())
    for name, values in sections.items():
        data[name] = {**data.get(name, {}), **values}
    config.write_text(tomli_w.dumps(data))


OTHER_TRUTH = {"simulated": {"truth": "../other.qrel"}}
#: name → (settings to set, the command line given the project folder, what the line says)
REFUSED = {
    "run, budget zero": ({"crowd": {"budget": 0.0}}, lambda p: ["run", p], "budget"),
    "run, one simulated worker": (
        {"simulated": {"workers": 1}}, lambda p: ["run", p], "distinct answers"),
    "run, a truth for other queries": (OTHER_TRUTH, lambda p: ["run", p], "no group for query"),
    "run, a bogus MTurk locale": (
        {"mturk": {"locales": ["usa"]}}, lambda p: ["run", p, "--crowd", "mturk-fake"], "locales"),
    "run on the MTurk fake, budget zero": (
        {"crowd": {"budget": 0.0}}, lambda p: ["run", p, "--crowd", "mturk-fake"], "budget"),
    "mturk publish, a bogus MTurk locale": (
        {"mturk": {"locales": ["usa"]}}, lambda p: ["mturk", "publish", p, "--fake"], "locales"),
    "mturk publish, budget zero": (
        {"crowd": {"budget": 0.0}}, lambda p: ["mturk", "publish", p, "--fake"], "budget"),
    "mturk publish, a truth for other queries": (
        OTHER_TRUTH, lambda p: ["mturk", "publish", p, "--fake"], "no group for query"),
    "prolific publish, no questions per judge": (
        {}, lambda p: ["prolific", "publish", p, "--fake"], ""),
    "next, an adaptive rule with bradley-terry": (
        {"adaptive": {"method": "curtail"}, "aggregation": {"rule": "bradley-terry"}},
        lambda p: ["next", p], "bradley-terry"),
    "invite -o into a missing folder": (
        {}, lambda p: ["invite", p, "-o", p.parent / "missing" / "links.csv"], "does not exist"),
}  # fmt: skip


@pytest.fixture(scope="module")
def fresh(tmp_path_factory) -> Path:
    """A demo project nothing was asked of (copied by each test), and a truth of other queries."""
    root = tmp_path_factory.mktemp("refused")
    create_demo_project(root).close()
    (root / "other.qrel").write_text("truth elsewhere d1 1\ntruth elsewhere d2 2\n")
    return root


@pytest.fixture(scope="module")
def started(fresh, tmp_path_factory) -> Path:
    """The demo project once its first batch is aggregated (copied by each test)."""
    import shutil

    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project
    from crowdprefs.crowds import get_crowd

    root = tmp_path_factory.mktemp("started") / "copy"
    shutil.copytree(fresh, root)
    with Project(root / "project") as project:
        driver.run_iteration(project, get_crowd("simulated", project))
    return root


@pytest.mark.parametrize("stage", ["fresh", "started"])
@pytest.mark.parametrize("name", REFUSED)
def test_a_refused_command_changes_nothing(name, stage, request, tmp_path):
    """Through the console script: the project's files, its state's SQL dump and the folder
    around it are as they were (no batch built first, no judge made, no fake's store left)."""
    import shutil

    root = tmp_path / "copy"
    shutil.copytree(request.getfixturevalue(stage), root)
    project = root / "project"
    settings, command, says = REFUSED[name]
    with_settings(project, **settings)
    before = project_snapshot(root)
    done = crowdprefs(*command(project))
    line = refused(done.returncode, done.stdout, done.stderr)
    assert says in line, line
    assert project_snapshot(root) == before
