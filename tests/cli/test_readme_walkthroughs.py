"""The documentation's walkthroughs, run as written through the installed ``crowdprefs`` script.

The walkthroughs live in the pages that teach them (docs/getting-started.md: the demo and a
first campaign on the web crowd; docs/tasks/mturk.md; docs/tasks/recorded.md) and may live in
the README. A walkthrough is a fenced block right after an HTML comment
``<!-- walkthrough: NAME -->``. Its lines starting with ``$ `` are shell commands (a line
ending in ``\\`` goes on on the next); the lines after a command, up to the next one, are what
it prints (stdout and stderr as a terminal shows them, 80 columns wide, blank lines ignored).
``...`` on a line of its own stands for any lines left out. A command ending in ``&`` runs in
the background until the walkthrough ends; its output is not compared. The comment may add,
separated by ``;``:

- ``numbers vary: TEXT``: on the shown lines holding TEXT, numbers (timings) and the spaces
  around them may differ; the words must not.
- ``placeholder: WORD``: WORD in the commands is replaced by a value of this run (a free
  port); the page says what it stands for.

Each test runs its walkthrough in a fresh folder, so an edit of a page that breaks a command or
changes a shown output fails here. The MTurk and web walkthroughs start from the demo's
collection (``crowdprefs-demo/candidates.csv`` and its MIDI files), which the tests write with
the function the demo uses rather than running the whole demo again.
"""

from __future__ import annotations

import difflib
import importlib.util
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from console_script import script

ROOT = Path(__file__).resolve().parents[2]
#: the pages that may hold walkthroughs: the README and every page of the documentation
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: the console script pip installed beside this Python (it runs this checkout: PYTHONPATH)
SCRIPTS = Path(sys.executable).parent
MARKER = re.compile(
    r"^<!-- walkthrough: (?P<name>[\w-]+)(?P<options>[^>]*?) -->\n+```[\w]*\n(?P<body>.*?)^```",
    flags=re.MULTILINE | re.DOTALL,
)
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


@dataclass
class Step:
    command: str
    shown: list[str]


@dataclass
class Walkthrough:
    name: str
    steps: list[Step]
    numbers_vary: list[str] = field(default_factory=list)
    placeholders: list[str] = field(default_factory=list)


def walkthroughs(text: str | None = None) -> dict[str, Walkthrough]:
    """Every marked walkthrough of the pages (or of ``text``), by name (unique across pages)."""
    if text is None:
        text = "\n".join(page.read_text(encoding="utf-8") for page in PAGES)
    found = {}
    for match in MARKER.finditer(text):
        walk = Walkthrough(match["name"], parse_steps(match["body"]))
        for option in filter(None, (o.strip() for o in match["options"].split(";"))):
            key, _, value = option.partition(":")
            if key.strip() == "numbers vary":
                walk.numbers_vary.append(value.strip())
            elif key.strip() == "placeholder":
                walk.placeholders.append(value.strip())
            else:
                raise AssertionError(f"walkthrough {walk.name}: unknown option {option!r}")
        assert walk.name not in found, f"two walkthroughs named {walk.name}"
        found[walk.name] = walk
    return found


def parse_steps(body: str) -> list[Step]:
    steps: list[Step] = []
    lines = iter(body.splitlines())
    for line in lines:
        if line.startswith("$ "):
            command = line[2:]
            while command.endswith("\\"):
                command = command[:-1] + " " + next(lines).strip()
            steps.append(Step(command.strip(), []))
        else:
            assert steps, f"output before the first command: {line!r}"
            steps[-1].shown.append(line)
    return steps


def line_pattern(line: str, numbers_vary: list[str]) -> str:
    if not any(text in line for text in numbers_vary):
        return re.escape(line)
    words = [re.escape(" ".join(part.split())) for part in NUMBER.split(line)]
    return r" *[\d.,]+ *".join(words).replace(r"\ ", " +")


def agree(shown: list[str], printed: str, numbers_vary: list[str]) -> bool:
    """Whether ``printed`` is what the page ``shown``: line for line, ``...`` any lines."""
    want = [line.rstrip() for line in shown if line.strip()]
    got = [line.rstrip() for line in printed.splitlines() if line.strip()]
    pattern = "".join(
        r"(?:[^\n]*\n)*?" if line == "..." else line_pattern(line, numbers_vary) + r"\n"
        for line in want
    )
    return re.fullmatch(pattern, "".join(f"{line}\n" for line in got)) is not None


class Session:
    """A shell-like session in ``folder``: ``crowdprefs`` is the installed console script
    running this checkout, on an 80-column terminal."""

    def __init__(self, folder: Path, values: dict[str, str] | None = None):
        self.folder, self.values = folder, values or {}
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("CROWDPREFS_")},
            "PYTHONPATH": str(ROOT),
            "PYTHONUNBUFFERED": "1",  # stdout and stderr in the order they were written
            "COLUMNS": "80",
            "CROWDPREFS_PROGRESS_SECONDS": "0",  # a slow machine's progress lines are not shown
            "PATH": f"{SCRIPTS}{os.pathsep}{os.environ.get('PATH', '')}",
        }
        self.background: list[subprocess.Popen] = []

    def command(self, text: str) -> str:
        for word, value in self.values.items():
            text = text.replace(word, value)
        return text

    def run(self, walk: Walkthrough, steps: list[Step] | None = None) -> None:
        """Run the steps, checking each command's output against the page's."""
        for step in walk.steps if steps is None else steps:
            command = self.command(step.command)
            if command.endswith("&"):
                self.background.append(
                    subprocess.Popen(
                        ["bash", "-c", "exec " + command[:-1]],
                        cwd=self.folder,
                        env=self.env,
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL,
                    )
                )
                continue
            done = subprocess.run(
                ["bash", "-c", command],
                cwd=self.folder,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=300,
            )
            printed = done.stdout
            assert done.returncode == 0, f"{walk.name}: `{command}` failed:\n{printed}"
            if not agree(step.shown, printed, walk.numbers_vary):
                diff = difflib.unified_diff(
                    [line.rstrip() for line in step.shown if line.strip()],
                    [line.rstrip() for line in printed.splitlines() if line.strip()],
                    "shown",
                    "printed",
                    lineterm="",
                )
                raise AssertionError(
                    f"walkthrough {walk.name}: `{step.command}` prints what its page does not "
                    "show:\n" + "\n".join(diff)
                )

    def stop(self) -> None:
        for process in self.background:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def session(folder: Path, values: dict[str, str] | None = None):
    shell = Session(folder, values)
    try:
        yield shell
    finally:
        shell.stop()


@pytest.fixture(scope="module")
def walks() -> dict[str, Walkthrough]:
    script()  # fails, not skips, without this environment's console script
    return walkthroughs()


def demo_collection(folder: Path) -> None:
    """``crowdprefs-demo/candidates.csv`` and its MIDI files, as the demo writes them."""
    from examples.melodies import make_example

    make_example(folder / "crowdprefs-demo", seed=2010)


def results_2010(path: Path) -> None:
    """The small 2010 MTurk results file the real-file session reads (Latin-1, no
    AssignmentId or Reward, answers a/b/s): the preference-judgments paper's Table 1."""
    source = ROOT / "tests" / "crowds" / "test_results_files.py"
    spec = importlib.util.spec_from_file_location("results_files_2010", source)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.write_2010(path, module.answers_of(module.TABLE_1))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(url: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


# ------------------------------------------------------------------------------ the harness


def where(name: str) -> list[str]:
    """The pages holding the walkthrough ``name``, relative to the repository."""
    return [
        str(page.relative_to(ROOT))
        for page in PAGES
        if name in walkthroughs(page.read_text(encoding="utf-8"))
    ]


def test_every_walkthrough_is_tested_here(walks):
    assert set(walks) == {"demo", "real-files", "mturk-fake", "web", "web-answered", "cluster"}
    assert where("cluster") == ["README.md"]
    assert where("demo") == where("web") == where("web-answered") == ["docs/getting-started.md"]
    assert where("mturk-fake") == ["docs/tasks/mturk.md"]
    assert where("real-files") == ["docs/tasks/recorded.md"]
    for walk in walks.values():
        assert walk.steps and all(s.command for s in walk.steps), walk.name
        for word in walk.placeholders:
            assert any(word in step.command for step in walk.steps), (walk.name, word)


def test_a_changed_output_line_or_a_broken_command_fails(tmp_path):
    text = "<!-- walkthrough: t; numbers vary: took -->\n```\n$ echo one; echo two \\\n  three\n"
    walk = walkthroughs(text + "one\ntwo three\n```\n")["t"]
    with session(tmp_path) as shell:
        shell.run(walk)
        wrong = walkthroughs(text + "one\ntwo four\n```\n")["t"]
        with pytest.raises(AssertionError, match="-two four"):
            shell.run(wrong)
        broken = walkthroughs("<!-- walkthrough: b -->\n```\n$ crowdprefs stauts\n```\n")["b"]
        with pytest.raises(AssertionError, match="failed"):
            shell.run(broken)
    assert agree(["...", "b", "..."], "a\nb\n\nc\n", [])
    assert not agree(["b"], "a\nb\n", [])
    assert agree(["took 1.5 s   │"], "took 12.25 s │\n", ["took"])
    assert not agree(["took 1.5 s"], "took 1.5 min\n", ["took"])


# ------------------------------------------------------------------------- the walkthroughs


def test_the_demo_walkthrough(walks, tmp_path):
    with session(tmp_path) as shell:
        shell.run(walks["demo"])


def test_the_real_file_session(walks, tmp_path):
    results_2010(tmp_path / "Batch_2010_results.csv")
    walk = walks["real-files"]
    cat = walk.steps[0]
    assert cat.command.startswith("cat columns.toml")  # the file is what the page shows
    (tmp_path / "columns.toml").write_text("\n".join(cat.shown) + "\n", encoding="utf-8")
    with session(tmp_path) as shell:
        shell.run(walk)
    assert (tmp_path / "crowd-lists.txt").read_text().count("\n") == 7


def test_the_mturk_fake_walkthrough(walks, tmp_path):
    demo_collection(tmp_path)
    with session(tmp_path) as shell:
        shell.run(walks["mturk-fake"])


@pytest.mark.slow
def test_the_cluster_walkthrough(walks, tmp_path):
    """A Dask scheduler and two worker processes started as the README says, and ``plan`` on
    them: the table the README shows (the same as on one core)."""
    pytest.importorskip("distributed")
    demo_collection(tmp_path)
    walk = walks["cluster"]
    with session(tmp_path, dict.fromkeys(walk.placeholders, str(free_port()))) as shell:
        shell.run(walk)


def play_every_clip(page) -> None:
    """Play the three clips at once, each to its end (the page counts real listening time)."""
    page.evaluate(
        """() => Promise.all(['query', 'a', 'b'].map(clip => new Promise((resolve, reject) => {
            const audio = document.getElementById('clip-' + clip);
            audio.addEventListener('ended', resolve, {once: true});
            audio.play().catch(reject);
        })))"""
    )


@pytest.mark.slow
@pytest.mark.browser
def test_the_web_walkthrough_with_a_judge_in_chromium(walks, tmp_path, browser):
    expect = pytest.importorskip("playwright.sync_api").expect
    demo_collection(tmp_path)
    walk = walks["web"]
    port = str(free_port())
    with session(tmp_path, dict.fromkeys(walk.placeholders, port)) as shell:
        shell.run(walk)
        wait_for(f"http://127.0.0.1:{port}/healthz")
        links = (tmp_path / "links.csv").read_text(encoding="utf-8").splitlines()
        link = links[1].split(",")[1]
        assert link.startswith(f"http://127.0.0.1:{port}/invite/")
        judge = browser.new_context().new_page()
        judge.goto(link)
        judge.click("#start")
        judge.wait_for_url("**/hit/*")
        question = judge.url
        judge.click("h1")  # a user gesture, so the page may start playback
        play_every_clip(judge)
        submit = judge.locator("#crowdprefs-submit")
        expect(submit).to_be_enabled()
        judge.check("input[name=choice][value=A]")
        submit.click()
        judge.wait_for_url(lambda url: url != question)
        shell.run(walks["web-answered"])
