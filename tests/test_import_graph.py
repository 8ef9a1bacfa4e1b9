"""No import circles in the package, and a command line that imports only what it uses.

The module graph is read from the source with :mod:`ast`: an edge for every import a module runs
when it is imported (its top-level statements, also inside ``if``/``try``/``with`` and class
bodies) and for every import under ``if TYPE_CHECKING:`` (a circle of annotations is a circle of
design all the same); imports inside functions are left out. Any strongly connected component of
more than one module is a circle (Tarjan's algorithm).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from console_script import crowdprefs

ROOT = Path(__file__).resolve().parents[1]
ALLOWED: list[frozenset[str]] = []  # none: a new circle is refused, whatever its files


def module_names(package: Path) -> dict[str, Path]:
    """``{dotted name: file}`` of every module of ``package`` (a package is its __init__)."""
    names = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        names[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return names


def run_at_import(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements of ``body`` that run when the module is imported (and those under
    ``if TYPE_CHECKING:``): every block but a function's."""
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, []):
                    yield from run_at_import(child.body if field == "handlers" else [child])


def import_graph(package: Path) -> dict[str, set[str]]:
    """``{module: modules of the package it imports}``; ``from p import m`` of a submodule
    ``m`` points at ``p.m`` (and at ``p`` only for names that are not submodules)."""
    names = module_names(package)
    graph: dict[str, set[str]] = {}
    for name, path in names.items():
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in run_at_import(ast.parse(path.read_text(encoding="utf-8")).body):
            if isinstance(node, ast.Import):
                wanted = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join([*parts, *([node.module] if node.module else [])])
                subs = [f"{base}.{a.name}" for a in node.names if f"{base}.{a.name}" in names]
                wanted = subs + ([base] if len(subs) < len(node.names) else [])
            for target in wanted:
                while target and target not in names:  # an attribute of a module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    targets.add(target)
        graph[name] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, 1972)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_the_package_has_no_import_circle():
    graph = import_graph(ROOT / "crowdprefs")
    assert len(graph) > 120 and sum(map(len, graph.values())) > 400  # the whole package read
    found = [sorted(c) for c in circles(graph) if frozenset(c) not in ALLOWED]
    assert found == [], f"import circles: {found}"


def test_the_graph_finds_circles_through_annotations_relative_imports_and_packages(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "",
        "value.py": "import typing\nif typing.TYPE_CHECKING:\n    from pkg.holder import H\n",
        "holder.py": "from pkg import value\n",
        "plain.py": "import pkg.value\ndef later():\n    from pkg import lazy\n",
        "lazy.py": "from pkg.plain import later\n",
        "sub/__init__.py": "from .a import A\n",
        "sub/a.py": "try:\n    from ..sub import b\nexcept ImportError:\n    pass\nA = 1\n",
        "sub/b.py": "class B:\n    from pkg.sub.a import A\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text, encoding="utf-8")
    found = sorted(sorted(c) for c in circles(import_graph(pkg)))
    assert found == [["pkg.holder", "pkg.value"], ["pkg.sub.a", "pkg.sub.b"]]


def test_simulation_workers_and_value_modules_import_no_store():
    modules = (
        "crowdprefs.quality.planning",  # the campaign simulations' workers
        "crowdprefs.quality.crowd_model",
        "crowdprefs.quality.review",
        "crowdprefs.campaign.settings",
        "crowdprefs.campaign.budget",
        "crowdprefs.campaign.clips",
    )
    code = f"import sys\nfor m in {modules!r}: __import__(m)\nprint(sorted(sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    loaded = set(eval(done.stdout))  # noqa: S307 (our own child's printed list)
    assert set(modules) <= loaded
    assert not {"sqlalchemy", "crowdprefs.campaign.store", "crowdprefs.campaign.driver"} & loaded


def test_moved_functions_keep_their_old_names():
    from crowdprefs.campaign import budget, clips, driver, project_state, settings

    for module in (budget, clips, settings):
        for name in module.MOVED:
            with pytest.warns(DeprecationWarning, match=f"{name} moved to .*project_state"):
                assert getattr(module, name) is getattr(project_state, name)
    assert driver.committed_cost is project_state.committed_cost
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        budget.nothing  # noqa: B018


def imported(stderr: str) -> set[str]:
    """The modules a ``PYTHONPROFILEIMPORTTIME`` run imported, from its report on stderr."""
    return {
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line and "self [us]" not in line
    }


@pytest.mark.parametrize("args", [["--help"], ["status", "--help"], ["next", "--help"]])
def test_help_through_the_console_script_imports_no_sqlalchemy_numpy_or_pandas(args):
    done = crowdprefs(*args, env={"PYTHONPROFILEIMPORTTIME": "1"})
    assert done.returncode == 0, done.stderr
    assert "Usage" in done.stdout
    modules = imported(done.stderr)
    assert {"typer", "crowdprefs.cli", "crowdprefs.cli.core"} <= modules  # the report is read
    roots = {name.split(".")[0] for name in modules}
    assert not roots & {"sqlalchemy", "numpy", "pandas", "scipy"}, sorted(roots)
    assert "http.server" not in modules  # mturk preview --open's server, imported when used


def test_a_sqlite_state_loads_no_postgresql_dialect(tmp_path):
    """The pairs table's PostgreSQL fill factor is set by DDL once the table exists, so a
    SQLite project's commands never load SQLAlchemy's PostgreSQL dialect."""
    code = (
        "import sys\nfrom crowdprefs.campaign.store import Store\n"
        f"Store({str(tmp_path / 'state.sqlite')!r}, create=True).close()\n"
        "print([m for m in sys.modules if m.startswith('sqlalchemy.dialects.')])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120
    )
    assert done.returncode == 0, done.stderr
    dialects = eval(done.stdout)  # noqa: S307 (our own child's printed list)
    assert "sqlalchemy.dialects.sqlite" in dialects
    assert not [m for m in dialects if m.startswith("sqlalchemy.dialects.postgresql")]
