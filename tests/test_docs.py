"""The documentation: the site builds strictly, the API reference covers the library, the quick
start runs as written, the pictures come from the code, and every measured figure is kept."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import pkgutil
import re
import shlex
import subprocess
import sys
from html import unescape
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
#: citing a source by its seed file rather than by its title (the papers have short names)
SEED_CITATION = re.compile(r"[Ss]eed `+0\d|seed §|§[\d.]+ of the seed|the seed's|\bthe seed\b")


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def quick_start() -> str:
    text = (DOCS / "tasks" / "python.md").read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1]
    return re.search(r"```python\n(.*?)```", section, flags=re.DOTALL).group(1)


def test_the_quick_start_runs_as_written_and_finds_the_careless_worker(capsys):
    namespace: dict = {}
    exec(compile(quick_start(), "docs/tasks/python.md", "exec"), namespace)
    lists = namespace["lists"]
    groups = [set(g["document"]) for _, g in lists.groupby("group")]
    assert groups == [{"a", "b"}, {"c", "d"}]
    model = namespace["model"]
    assert model.lists_["document"].tolist()[:2] in (["a", "b"], ["b", "a"])
    assert model.reliabilities_.idxmin() == "w6"
    assert list(namespace["crowdkit"].columns) == ["worker", "left", "right", "label"]
    assert "w6" in capsys.readouterr().out
    assert isinstance(namespace["verdicts"], pd.DataFrame)


# ------------------------------------------------------------------------------------ the site


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site as `mkdocs build --strict` makes it (a broken link, a missing page or an
    unresolved API entry fails the build)."""
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def text_of(html: Path) -> str:
    return unescape(re.sub(r"<[^>]+>", "", html.read_text(encoding="utf-8")))


def built(page: Path) -> Path:
    """Where the site puts a page of docs/ (``a/b.md`` → ``a/b/index.html``)."""
    relative = page.relative_to(DOCS).with_suffix("")
    return (
        Path(*relative.parts[:-1]) / "index.html"
        if relative.name == "index"
        else relative / "index.html"
    )


def test_the_site_builds_every_page(site):
    assert [str(page) for page in PAGES[1:] if not (site / built(page)).is_file()] == []
    home = text_of(site / "index.html")
    assert "crowdprefs" in home and "Getting started" in home


def test_the_api_reference_says_what_the_docstrings_say(site):
    api = "\n".join(text_of(page) for page in sorted((site / "api").rglob("index.html")))
    for name in ("verdicts", "sort_lists", "TieBradleyTerry", "fit_bradley_terry", "to_choix"):
        assert name in api, name
    doc = importlib.import_module("crowdprefs.campaign.sorting").replay.__doc__
    assert " ".join(doc.split()[:9]) in " ".join(api.split())  # its first words, as written
    assert " at 0x" not in api and ":func:" not in api and ":class:" not in api


def public_modules() -> set[str]:
    """Every module of the library (the command line's modules aside: their --help documents
    them) and of audio_prep, private ones left out."""
    found = set()
    for package in ("crowdprefs", "audio_prep"):
        root = importlib.import_module(package)
        found.add(package)
        found |= {
            info.name
            for info in pkgutil.walk_packages(root.__path__, prefix=package + ".")
            if not any(part.startswith("_") for part in info.name.split("."))
        }
    return {name for name in found if not name.startswith("crowdprefs.cli")} - {"crowdprefs"}


def test_every_module_of_the_library_has_its_place_in_the_api_reference():
    entries = re.findall(
        r"^::: ([\w.]+)$",
        "\n".join(p.read_text(encoding="utf-8") for p in (DOCS / "api").glob("*.md")),
        flags=re.MULTILINE,
    )
    assert len(entries) == len(set(entries)), "a module documented twice"
    assert sorted(public_modules() - set(entries)) == [], "add the module to a page of docs/api/"
    assert sorted(set(entries) - public_modules()) == [], "a page of docs/api/ names no module"


# -------------------------------------------------------------------------------- the pictures


def test_the_quicksort_picture_is_the_papers_table_1_replayed_by_the_sort(tmp_path):
    figures = load(DOCS / "figures.py", "docs_figures")
    states = figures.table1_states()
    assert len(states) == 4  # four iterations, the last with every list closed
    assert [len(s.needed) for s in states] == [6, 4, 2, 0]
    assert [set(g) for g in states[-1].groups()] == [{"A", "B", "C"}, {"D", "E"}, {"F", "G"}]
    assert figures.main(["--out", str(tmp_path)]) == 0
    drawn = {p.name for p in tmp_path.iterdir()}
    assert drawn == {p.name for p in (DOCS / "img").iterdir()}, "commit docs/img/ as drawn"
    for name in drawn:
        assert (tmp_path / name).read_text(encoding="utf-8").lstrip().startswith("<?xml")
    shown = "\n".join(p.read_text(encoding="utf-8") for p in PAGES)
    assert all(f"img/{name})" in shown for name in drawn), "a picture no page shows"


# ----------------------------------------------------------------- files and sources the pages name


def test_every_file_of_the_project_the_pages_name_exists():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        named = set(re.findall(r"\b((?:tests|benchmarks|docs|examples)/[\w/]+\.(?:py|md))", text))
        assert [n for n in sorted(named) if not (ROOT / n).is_file()] == [], page.name


def test_the_readme_links_into_the_site_and_every_link_holds():
    readme = README.read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#]+)(?:#[^)]*)?\)", readme)
    assert {"docs/getting-started.md", "docs/benchmarks.md", "docs/api/index.md"} <= set(links)
    assert [link for link in links if not (ROOT / link).is_file()] == []
    assert len(readme.splitlines()) <= 200


def test_the_readme_gives_the_commands_ci_runs():
    readme = README.read_text(encoding="utf-8")
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "./setup.sh" in ci and re.search(r"^pytest$", ci, flags=re.MULTILINE)
    for command in ("./setup.sh", "crowdprefs demo", "pytest ", 'pytest -m "not slow"'):
        assert f"\n{command}" in readme, command
    assert "pip install -e '.[docs]'" in readme and "mkdocs serve" in readme


def test_the_pages_cite_the_papers_by_name_not_by_seed_file():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        assert SEED_CITATION.search(text) is None, (page.name, SEED_CITATION.search(text))


# --------------------------------------------------------------------- the measured figures


def numbers():
    return load(ROOT / "benchmarks" / "readme_numbers.py", "readme_numbers")


#: a number with the unit of a measurement: time, memory, a share, a ratio, a rate
FIGURE = re.compile(r"\d(?:[\d,.]*\d)?\s?(?:×|s\b|ms\b|h\b|MB\b|MiB\b|GB\b|%|clips/s|answers/s)")
#: long result tables quoted from the scripts' own Markdown output, not regenerated yet
TABLES = {DOCS / "mtc.md", DOCS / "statistics.md"}


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


def all_regions():
    module = numbers()
    return [region for _, region in module.chosen_regions(None)]


def test_every_measured_region_names_a_benchmark_and_options_it_takes():
    found = all_regions()
    assert len({region.script for region in found}) >= 15
    for region in found:
        script = region.script
        assert script.parent.name == "benchmarks" and script.is_file(), region.command
        given = {w.split("=")[0] for w in shlex.split(region.command)[1:] if w.startswith("--")}
        declared = declared_options(script)
        assert given <= declared, (region.command, given - declared)
        assert region.template is not None, f"{region.command}: its figures have no template"
        assert "--json" in declared, f"{script.name}: no --json"


def test_the_benchmarks_page_holds_every_benchmark_the_readme_quotes():
    module = numbers()
    on_page = {r.command for r in module.regions((DOCS / "benchmarks.md").read_text("utf-8"))}
    in_readme = {r.command for r in module.regions(README.read_text(encoding="utf-8"))}
    assert 2 <= len(in_readme) <= 3 and in_readme <= on_page
    assert {r.command for r in all_regions()} == on_page


@pytest.mark.slow
def test_every_benchmark_the_pages_name_answers_help():
    scripts = {region.script for region in all_regions()}
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for script in sorted(scripts):
        done = subprocess.run(
            [sys.executable, script, "--help"], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0 and "usage:" in done.stdout, (script.name, done.stderr)


def test_the_pages_quote_the_figures_kept_for_each_benchmark():
    assert numbers().main(["--check"]) == 0, "run: python benchmarks/readme_numbers.py --write"


def test_no_measured_figure_sits_outside_a_region():
    module = numbers()
    for page in PAGES:
        if page in TABLES:
            continue
        text = page.read_text(encoding="utf-8")
        for region in reversed(module.regions(text)):  # blank the regions out
            start, end = region.span
            text = text[:start] + text[end:]
        text = module.REGION.sub("", text)
        paragraphs = text.split("\n\n")
        if page.name == "benchmarks.md":
            loose = [p for p in paragraphs if FIGURE.search(p) and "malformed" not in p.lower()]
        else:
            loose = [p for p in paragraphs if "benchmarks/" in p and FIGURE.search(p)]
        assert loose == [], f"{page.name}: put measured figures in <!-- numbers: ... --> regions"


def test_a_region_is_rewritten_in_place_from_its_figures(tmp_path, monkeypatch):
    module = numbers()
    text = (
        "a\n<!-- numbers: benchmarks/sort_cost.py\nn=4 {share_4:.0%}\n-->\nold\n"
        "<!-- /numbers -->\nb\n"
    )
    (region,) = module.regions(text)
    assert region.name == "sort_cost" and region.text == "old\n"
    assert region.render({"share_4": 0.683}) == "n=4 68%\n"
    (plain,) = module.regions(
        "<!-- numbers: benchmarks/x.py --runs 3 -->\nold 1 s\n<!-- /numbers -->"
    )
    assert plain.template is None and plain.name == "x__runs_3"
    page = tmp_path / "page.md"
    page.write_text(text + text.replace("n=4", "four:"), encoding="utf-8")
    kept = {"sort_cost": {"load_average": 1.0, "figures": {"share_4": 0.5}}}
    assert module.rewrite(page, kept) and not module.rewrite(page, kept)
    assert page.read_text(encoding="utf-8").count("n=4 50%\n<!-- /numbers -->") == 1
    assert "four: 50%\n<!-- /numbers -->" in page.read_text(encoding="utf-8")


def test_a_negative_figure_prints_with_the_typographic_minus():
    (region,) = numbers().regions(
        "<!-- numbers: benchmarks/x.py\n{d:+.3f} ({low:.2f}…{high:+.2f}), {n:,d} {s}\n-->\n"
        "old\n<!-- /numbers -->"
    )
    figures = {"d": -0.0123, "low": -1.5, "high": 0.25, "n": -1200, "s": "a-b"}
    minus = "\N{MINUS SIGN}"
    assert region.render(figures) == f"{minus}0.012 ({minus}1.50…+0.25), {minus}1,200 a-b\n"
