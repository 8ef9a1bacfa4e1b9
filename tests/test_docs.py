"""docs/api.md: rendered from the docstrings, with a quick start that runs as written."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"


def build_api():
    spec = importlib.util.spec_from_file_location("build_api", DOCS / "build_api.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def quick_start() -> str:
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    section = text.split("## Python quick start", 1)[1]
    return re.search(r"```python\n(.*?)```", section, flags=re.DOTALL).group(1)


def test_the_quick_start_runs_as_written_and_finds_the_careless_worker(capsys):
    namespace: dict = {}
    exec(compile(quick_start(), "docs/api.md", "exec"), namespace)
    lists = namespace["lists"]
    groups = [set(g["document"]) for _, g in lists.groupby("group")]
    assert groups == [{"a", "b"}, {"c", "d"}]
    model = namespace["model"]
    assert model.lists_["document"].tolist()[:2] in (["a", "b"], ["b", "a"])
    assert model.reliabilities_.idxmin() == "w6"
    assert list(namespace["crowdkit"].columns) == ["worker", "left", "right", "label"]
    assert "w6" in capsys.readouterr().out
    assert isinstance(namespace["verdicts"], pd.DataFrame)


def test_the_api_page_says_what_the_docstrings_say():
    assert build_api().main(["--check"]) == 0, "run: python docs/build_api.py"


def test_the_api_page_documents_every_part_of_the_library():
    text = (DOCS / "api.md").read_text(encoding="utf-8")
    for section in ("campaign", "crowds", "quality", "evaluation", "io"):
        assert f"\n## {section}\n" in text
    for name in ("verdicts", "sort_lists", "TieBradleyTerry", "fit_bradley_terry", "to_choix"):
        assert f"`{name}`" in text
    assert " at 0x" not in text


def test_the_readme_shows_the_quick_start_that_runs():
    readme = (DOCS.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Python quick start", 1)[1]
    shown = re.search(r"```python\n(.*?)```", section, flags=re.DOTALL).group(1)
    assert shown.strip() == quick_start().strip()


# ------------------------------------------------------------------ the README's measured figures


def readme_numbers():
    spec = importlib.util.spec_from_file_location(
        "readme_numbers", DOCS.parent / "benchmarks" / "readme_numbers.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


#: a number with the unit of a measurement: time, memory, a share, a ratio, a rate
FIGURE = re.compile(r"\d(?:[\d,.]*\d)?\s?(?:×|s\b|ms\b|h\b|MB\b|MiB\b|GB\b|%|clips/s|answers/s)")


def declared_options(script: Path) -> set[str]:
    """The options a benchmark's argparse parser declares (read from its source)."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert any(getattr(c.func, "attr", None) == "ArgumentParser" for c in calls), script.name
    return {
        arg.value
        for call in calls
        if getattr(call.func, "attr", None) == "add_argument"
        for arg in call.args
        if isinstance(arg, ast.Constant) and str(arg.value).startswith("--")
    }


def test_every_file_of_the_project_the_docs_name_exists():
    root = DOCS.parent
    for page in [root / "README.md", *DOCS.glob("*.md")]:
        text = page.read_text(encoding="utf-8")
        named = set(re.findall(r"\b((?:tests|benchmarks|docs|examples)/[\w/]+\.(?:py|md))", text))
        assert named, page.name
        assert [n for n in sorted(named) if not (root / n).is_file()] == [], page.name


def test_every_measured_region_names_a_benchmark_and_options_it_takes():
    numbers = readme_numbers()
    found = numbers.regions(numbers.README.read_text(encoding="utf-8"))
    assert len({region.script for region in found}) >= 15
    for region in found:
        script = region.script
        assert script.parent.name == "benchmarks" and script.is_file(), region.command
        given = {w.split("=")[0] for w in shlex.split(region.command)[1:] if w.startswith("--")}
        declared = declared_options(script)
        assert given <= declared, (region.command, given - declared)
        assert region.template is not None, f"{region.command}: its figures have no template"
        assert "--json" in declared, f"{script.name}: no --json"


@pytest.mark.slow
def test_every_benchmark_the_readme_names_answers_help():
    numbers = readme_numbers()
    scripts = {r.script for r in numbers.regions(numbers.README.read_text(encoding="utf-8"))}
    env = {**os.environ, "PYTHONPATH": str(DOCS.parent)}
    for script in sorted(scripts):
        done = subprocess.run(
            [sys.executable, script, "--help"], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0 and "usage:" in done.stdout, (script.name, done.stderr)


def test_the_readme_quotes_the_figures_kept_for_each_benchmark():
    assert readme_numbers().main(["--check"]) == 0, "run: python benchmarks/readme_numbers.py"


def test_no_measured_figure_sits_outside_a_region():
    numbers = readme_numbers()
    text = numbers.README.read_text(encoding="utf-8")
    for region in reversed(numbers.regions(text)):  # blank the regions out
        start, end = region.span
        text = text[:start] + text[end:]
    text = numbers.REGION.sub("", text)
    core = text.split("## Benchmarks of the core", 1)[1].split("\n## ", 1)[0]
    loose = [p for p in core.split("\n\n") if FIGURE.search(p) and "malformed" not in p]
    paragraphs = [p for p in text.split("\n\n") if "benchmarks/" in p and FIGURE.search(p)]
    assert loose + paragraphs == [], "put measured figures in <!-- numbers: ... --> regions"


def test_a_region_is_rewritten_in_place_from_its_figures():
    numbers = readme_numbers()
    text = (
        "a\n<!-- numbers: benchmarks/sort_cost.py\nn=4 {share_4:.0%}\n-->\nold\n"
        "<!-- /numbers -->\nb\n"
    )
    (region,) = numbers.regions(text)
    assert region.name == "sort_cost" and region.text == "old\n"
    assert region.render({"share_4": 0.683}) == "n=4 68%\n"
    (plain,) = numbers.regions(
        "<!-- numbers: benchmarks/x.py --runs 3 -->\nold 1 s\n<!-- /numbers -->"
    )
    assert plain.template is None and plain.name == "x__runs_3"


def test_a_negative_figure_prints_with_the_typographic_minus():
    numbers = readme_numbers()
    (region,) = numbers.regions(
        "<!-- numbers: benchmarks/x.py\n{d:+.3f} ({low:.2f}…{high:+.2f}), {n:,d} {s}\n-->\n"
        "old\n<!-- /numbers -->"
    )
    figures = {"d": -0.0123, "low": -1.5, "high": 0.25, "n": -1200, "s": "a-b"}
    minus = "\N{MINUS SIGN}"
    assert region.render(figures) == f"{minus}0.012 ({minus}1.50…+0.25), {minus}1,200 a-b\n"
