"""No module over 800 lines and no function over 100 (issue 41, item 4), read with :mod:`ast`.

A function's size runs from its ``def`` to its last line, decorators left out; a typer command's
parameter list is option declarations as data, so a command counts from its first body
statement. The allowlist names each file or function still over its limit with its size today:
it can only shrink, since a listed entry that grows fails, and one now within its limit fails
until it is taken off the list.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "crowdprefs"
MODULE_LINES = 800
FUNCTION_LINES = 100

ALLOWED_MODULES: dict[str, int] = {}
"""Modules allowed over the limit, each at its size when allowed (none today: keep it so)."""
ALLOWED_FUNCTIONS: dict[str, int] = {}
"""Functions allowed over the limit, as ``path:name`` (none today)."""


def is_command(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``node`` is decorated as a typer command or callback (``@app.command(...)``)."""
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Attribute) and target.attr in ("command", "callback"):
            return True
    return False


def function_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of ``node`` from its ``def`` (a command: its first body statement) to its end."""
    first = node.body[0].lineno if is_command(node) else node.lineno
    return node.end_lineno - first + 1


def functions(tree: ast.AST, prefix: str = "") -> Iterator[tuple[str, int]]:
    """``(qualified name, lines)`` of every function in ``tree``, nested ones and methods too."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield prefix + node.name, function_lines(node)
            yield from functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{prefix}{node.name}.")
        else:
            yield from functions(node, prefix)


def sizes() -> tuple[dict[str, int], dict[str, int]]:
    """``({module: lines}, {module:function: lines})`` of every module of the package."""
    modules, funcs = {}, {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(PACKAGE).as_posix()
        source = path.read_text(encoding="utf-8")
        modules[name] = len(source.splitlines())
        funcs |= {f"{name}:{qual}": n for qual, n in functions(ast.parse(source))}
    return modules, funcs


def over(found: dict[str, int], limit: int, allowed: dict[str, int]) -> list[str]:
    """Entries over ``limit`` that the allowlist does not cover, or that grew past it."""
    return [
        f"{name}: {n} lines (limit {limit}, allowed {allowed.get(name, limit)})"
        for name, n in sorted(found.items())
        if n > max(limit, allowed.get(name, limit))
    ]


def needless(found: dict[str, int], limit: int, allowed: dict[str, int]) -> list[str]:
    """Allowlisted entries gone or now within ``limit``: take them off the list."""
    return sorted(name for name in allowed if found.get(name, 0) <= limit)


def test_no_module_over_800_lines():
    modules, _ = sizes()
    assert over(modules, MODULE_LINES, ALLOWED_MODULES) == [], "split the module by meaning"


def test_no_function_over_100_lines():
    _, funcs = sizes()
    assert over(funcs, FUNCTION_LINES, ALLOWED_FUNCTIONS) == [], "split the function"


def test_the_allowlist_only_shrinks():
    modules, funcs = sizes()
    assert needless(modules, MODULE_LINES, ALLOWED_MODULES) == [], "take it off ALLOWED_MODULES"
    assert needless(funcs, FUNCTION_LINES, ALLOWED_FUNCTIONS) == [], "off ALLOWED_FUNCTIONS"
    assert all(n > MODULE_LINES for n in ALLOWED_MODULES.values())
    assert all(n > FUNCTION_LINES for n in ALLOWED_FUNCTIONS.values())


def test_the_measure_counts_a_command_from_its_body_and_a_function_from_its_def():
    source = (
        "@app.command()\ndef cmd(\n    a: int = 1,\n    b: int = 2,\n):\n    x = 1\n    return x\n"
        "def plain(\n    a: int,\n):\n    return a\n"
        "class C:\n    def method(self):\n        def inner():\n            pass\n"
    )
    assert dict(functions(ast.parse(source))) == {
        "cmd": 2,
        "plain": 4,
        "C.method": 3,
        "C.method.inner": 2,
    }
    assert over({"a.py": 801, "b.py": 900}, 800, {"b.py": 900}) == [
        "a.py: 801 lines (limit 800, allowed 800)"
    ]
    assert over({"b.py": 901}, 800, {"b.py": 900}) == ["b.py: 901 lines (limit 800, allowed 900)"]
    assert needless({"b.py": 800}, 800, {"b.py": 900, "c.py": 850}) == ["b.py", "c.py"]
