"""docs/api.md: rendered from the docstrings, with a quick start that runs as written."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pandas as pd

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
