"""Render docs/api.md from the public docstrings of the library.

    python docs/build_api.py          # rewrite docs/api.md
    python docs/build_api.py --check  # exit 1 when docs/api.md is not what the code says

The page opens with the Python quick start kept in ``docs/quick_start.py`` (tests run it), then
has one section per part of the library — campaign, crowds, quality, evaluation, and the core
formats (io, exchange, errors) — and in each, one entry per module: its docstring, then every
public function and class defined there (in source order) with its signature and docstring.
Public means: not starting with an underscore and, where a module has ``__all__``, listed in it.
Only the standard library is used (no documentation generator to install).
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import pkgutil
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
TARGET = DOCS / "api.md"
QUICK_START = DOCS / "quick_start.py"

SECTIONS = [
    ("campaign", "crowdprefs.campaign", []),
    ("crowds", "crowdprefs.crowds", []),
    ("quality", "crowdprefs.quality", []),
    ("evaluation", "crowdprefs.evaluation", []),
    ("io", None, ["crowdprefs.io", "crowdprefs.exchange", "crowdprefs.errors"]),
]

_ROLE = re.compile(r":(?:func|class|meth|mod|data|attr|obj|exc):`~?([^`]+)`")
_LITERAL = re.compile(r"``([^`]+)``")
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def markdown(doc: str | None) -> str:
    """A docstring as Markdown: reST roles and double back-quotes become code spans; indented
    blocks after a blank line (equations, examples) stay code blocks."""
    if not doc:
        return ""
    text = inspect.cleandoc(doc)
    text = _ROLE.sub(lambda m: f"`{m.group(1)}`", text)
    text = re.sub(r"::$", ":", text, flags=re.MULTILINE)  # reST's literal-block marker
    return _LITERAL.sub(lambda m: f"`{m.group(1)}`", text)


def default_text(value: object) -> str:
    """A default value as code; an instance equal to its class's default shows as ``Name()``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        try:
            if type(value)() == value:
                return f"{type(value).__name__}()"
        except TypeError:
            pass
    return _ADDRESS.sub("", repr(value))


def signature(name: str, obj: object) -> str:
    """``name(param: annotation = default, ...) -> return`` with annotations as written."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return name
    parts, star_done = [], False
    for param in sig.parameters.values():
        if param.name == "self":
            continue
        if param.kind is param.KEYWORD_ONLY and not star_done:
            parts.append("*")
            star_done = True
        prefix = {param.VAR_POSITIONAL: "*", param.VAR_KEYWORD: "**"}.get(param.kind, "")
        star_done |= param.kind is param.VAR_POSITIONAL
        text = prefix + param.name
        if param.annotation is not param.empty:
            annotation = param.annotation
            text += ": " + (annotation if isinstance(annotation, str) else repr(annotation))
        if param.default is not param.empty:
            equals = " = " if param.annotation is not param.empty else "="
            text += equals + default_text(param.default)
        parts.append(text)
        if param.kind is param.POSITIONAL_ONLY:
            parts.append("/")
    result = f"{name}({', '.join(parts)})"
    if sig.return_annotation is not sig.empty and not inspect.isclass(obj):
        annotation = sig.return_annotation
        result += " -> " + (annotation if isinstance(annotation, str) else repr(annotation))
    return result


def source_line(obj: object) -> int:
    try:
        return inspect.getsourcelines(obj)[1]
    except (OSError, TypeError):
        return 0


def public_members(module) -> list[tuple[str, object]]:
    """Functions and classes defined in ``module`` and public, in source order."""
    names = getattr(module, "__all__", None)
    members = []
    for name, obj in vars(module).items():
        if name.startswith("_") or (names is not None and name not in names):
            continue
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        if getattr(obj, "__module__", None) != module.__name__:
            continue
        members.append((name, obj))
    return sorted(members, key=lambda member: source_line(member[1]))


def class_members(cls: type) -> list[tuple[str, object, str]]:
    """``(name, function, kind)`` of a class's own public methods and properties."""
    found = []
    for name, attribute in vars(cls).items():
        if name.startswith("_"):
            continue
        if isinstance(attribute, property):
            found.append((name, attribute.fget, "property"))
        elif isinstance(attribute, classmethod | staticmethod):
            found.append((name, attribute.__func__, type(attribute).__name__))
        elif inspect.isfunction(attribute):
            found.append((name, attribute, "method"))
    return sorted(found, key=lambda member: source_line(member[1]))


def render_module(module) -> list[str]:
    lines = [f"### `{module.__name__}`", "", markdown(module.__doc__), ""]
    for name, obj in public_members(module):
        if inspect.isclass(obj):
            lines += [f"#### class `{name}`", "", "```python"]
            lines += [f"class {signature(name, obj)}", "```", "", markdown(obj.__doc__), ""]
            for member, function, kind in class_members(obj):
                label = "" if kind == "method" else f" ({kind})"
                shown = name + "." + (member if kind == "property" else signature(member, function))
                lines += [f"- `{shown}`{label}", ""]
                doc = markdown(function.__doc__)
                if doc:
                    lines += ["  " + line if line else "" for line in doc.splitlines()]
                    lines.append("")
        else:
            lines += [f"#### `{name}`", "", "```python", signature(name, obj), "```", ""]
            lines += [markdown(obj.__doc__), ""]
    return lines


def section_modules(package: str | None, modules: list[str]) -> list:
    if package is None:
        return [importlib.import_module(name) for name in modules]
    root = importlib.import_module(package)
    found = [
        importlib.import_module(info.name)
        for info in pkgutil.walk_packages(root.__path__, prefix=package + ".")
        if not any(part.startswith("_") for part in info.name.split("."))
    ]
    return sorted(found, key=lambda module: module.__name__)


def render() -> str:
    """The whole page."""
    quick_start = QUICK_START.read_text(encoding="utf-8").strip()
    lines = [
        "# crowdprefs: the Python API",
        "",
        "Generated from the docstrings by `python docs/build_api.py` (do not edit by hand).",
        "Every command of the CLI is a call to one of these functions; the library needs no",
        "project for answers you already have (`crowdprefs.quality.preferences`).",
        "",
        "The docstrings cite their sources by short names: *the preference-judgments paper*",
        "(*Crowdsourcing Preference Judgments for Evaluation of Music Similarity Tasks*), *the MTC",
        "paper* (*Minimal test collections for low-cost evaluation of Audio Music Similarity and",
        "Retrieval systems*), *the power-and-stability paper* (*Audio Music Similarity and",
        "Retrieval: Evaluation Power and Stability*), *the FMP evaluation notebook* (the FMP",
        "notebook *Evaluation Measures*) and *the calibration-model paper* (*A model for",
        "investigating and calibrating IR systems evaluation*).",
        "",
        "## Python quick start",
        "",
        "```python",
        quick_start,
        "```",
        "",
        "## Contents",
        "",
    ]
    bodies = []
    for title, package, modules in SECTIONS:
        found = section_modules(package, modules)
        lines.append(f"- **{title}**: " + ", ".join(f"`{m.__name__}`" for m in found))
        intro = markdown(importlib.import_module(package).__doc__) if package else ""
        body = [f"## {title}", ""] + ([intro, ""] if intro else [])
        for module in found:
            body += render_module(module)
        bodies.append(body)
    lines.append("")
    for body in bodies:
        lines += body
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    return text.rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when docs/api.md is stale")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    text = render()
    if args.check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print(f"{TARGET} is out of date: run python docs/build_api.py", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET.relative_to(ROOT)} ({len(text.splitlines())} lines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
