"""The built wheel carries every package and the HIT templates (package data); imports point
down the layers only."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_wheel_holds_packages_and_templates(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            str(ROOT),
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path),
            "-q",
        ],
        check=True,
        timeout=300,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("crowdprefs-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = {
        p.relative_to(ROOT).as_posix()
        for folder in ("crowdprefs", "audio_prep", "hit_templates")
        for p in (ROOT / folder).rglob("*")
        if p.suffix in {".py", ".html", ".css", ".js"} and "__pycache__" not in p.parts
    }
    assert sources and sources <= names, sorted(sources - names)
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    assert "crowdprefs = crowdprefs.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


LAYERS_ABOVE = {
    "crowds": ("web", "cli"),
    "campaign": ("crowds", "web", "hits", "quality", "evaluation", "cli", "demo"),
}
"""For each package, the packages above it that it must not import."""

STATE_FILES = (
    "crowds/web/store.py",
    "crowds/web/records.py",
    "crowds/web/sql.py",
    "crowds/web/tables.py",
    "crowds/web/schema.py",
    "crowds/prolific/store.py",
    "crowds/prolific/tables.py",
    "crowds/prolific/schema.py",
)
"""A crowd's state: it may import the store and other crowds' state, nothing else of crowds."""


def crowdprefs_imports(path: Path, root: Path = ROOT) -> list[tuple[int, str]]:
    """``(line, module)`` of every crowdprefs module ``path`` (under ``root``) imports, at any
    depth (inside functions and ``TYPE_CHECKING`` blocks too); relative imports resolved."""
    package = path.relative_to(root).with_suffix("").parts[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            module = ".".join([*base, *([node.module] if node.module else [])])
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
    return [(line, name) for line, name in found if name.split(".")[0] == "crowdprefs"]


def test_the_example_upward_imports_are_caught(tmp_path):
    module = tmp_path / "crowdprefs" / "campaign" / "probe.py"
    module.parent.mkdir(parents=True)
    module.write_text(
        "from . import answers\n"
        "def f():\n"
        "    from crowdprefs.web import assign\n"
        "    from ..crowds import web\n"
    )
    assert [name for _, name in crowdprefs_imports(module, tmp_path)] == [
        "crowdprefs.campaign.answers",
        "crowdprefs.web.assign",
        "crowdprefs.crowds.web",
    ]


@pytest.mark.parametrize("package", sorted(LAYERS_ABOVE))
def test_a_package_imports_nothing_from_the_layers_above_it(package):
    upward = [
        f"{path.relative_to(ROOT)}:{line} imports {name}"
        for path in sorted((ROOT / "crowdprefs" / package).rglob("*.py"))
        for line, name in crowdprefs_imports(path)
        if name.split(".")[1] in LAYERS_ABOVE[package]
    ]
    assert not upward, upward


def test_the_core_store_imports_no_crowd_package_and_takes_the_crowds_state_from_the_registry():
    """The store names no crowd: each crowd that keeps state names its part in its registry
    entry, and the store takes the roles and migrations from there."""
    store = ROOT / "crowdprefs" / "campaign" / "store"
    named = [
        f"{path.name}:{line} imports {name}"
        for path in sorted(store.glob("*.py"))
        for line, name in crowdprefs_imports(path)
        if name.startswith("crowdprefs.crowds")
    ]
    assert named == []
    assert "crowdprefs.crowds" not in (store / "store.py").read_text(encoding="utf-8")
    from crowdprefs import registry
    from crowdprefs.campaign.store.store import PARTS, Store
    from crowdprefs.crowds.prolific.store import ProlificStore
    from crowdprefs.crowds.web.store import WebStore

    assert registry.state_parts() == [
        "crowdprefs.crowds.web.store:STATE",
        "crowdprefs.crowds.prolific.store:STATE",
    ]
    assert [part.role for part in PARTS] == [WebStore, ProlificStore]
    assert Store.__mro__[-4:-2] == (WebStore, ProlificStore)  # the same bases as before


def test_a_crowds_state_imports_only_the_store_and_crowd_state():
    state = {f"crowdprefs.{f.removesuffix('.py').replace('/', '.')}" for f in STATE_FILES}
    beyond = [
        f"{path}:{line} imports {name}"
        for path in STATE_FILES
        for line, name in crowdprefs_imports(ROOT / "crowdprefs" / path)
        if name.split(".")[1] not in ("campaign", "errors", "clock")
        and not any(name == m or name.startswith(m + ".") for m in state)
        and name not in state  # ``from crowdprefs.crowds.web import sql`` (or ``tables``)
    ]
    campaign = [
        f"{path}:{line} imports {name}"
        for path in STATE_FILES
        for line, name in crowdprefs_imports(ROOT / "crowdprefs" / path)
        if name.split(".")[1] == "campaign" and not name.startswith("crowdprefs.campaign.store")
    ]
    assert not beyond and not campaign, beyond + campaign
