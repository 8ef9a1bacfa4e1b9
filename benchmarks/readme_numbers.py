"""Regenerate every measured figure the README and the documentation quote from the benchmark
that measures it.

In README.md and the pages of ``docs/`` (mostly docs/benchmarks.md) each quoted measurement sits in
a region that names the script and its arguments, and gives its text as a template whose
``str.format`` fields are the figures the script prints, as one line of JSON, with ``--json``::

    <!-- numbers: benchmarks/sort_cost.py
    pairs asked / all pairs: n=4 {share_4:.0%}, 8 {share_8:.0%}
    -->
    pairs asked / all pairs: n=4 77%, 8 54%
    <!-- /numbers -->

The text between the comment and ``<!-- /numbers -->`` is the template filled with the figures
of the last run (and ``load_average``, the machine's load when the run started, unless the
script measures its own), which are kept in ``benchmarks/results/`` with the command, the date, the
machine's load and the run's duration. A region without a template (the comment ends on its
first line) names the script that measured its figures, which this command does not rewrite
yet. A script quoted by several regions, on one page or several, runs once.

    python benchmarks/readme_numbers.py --write              # run every script, rewrite the pages
    python benchmarks/readme_numbers.py --write --only sort_cost
    python benchmarks/readme_numbers.py --write --stored     # refill from the kept figures
    python benchmarks/readme_numbers.py --check              # exit 1 when a page differs
    python benchmarks/readme_numbers.py --list

Timings depend on the machine and its load: run on a quiet machine, with ``nice -n 10`` when
others share it, and prefer the ratios the scripts print.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import string
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
RESULTS = ROOT / "benchmarks" / "results"
REGION = re.compile(
    r"<!-- numbers: (?P<command>[^\n]*?)(?: -->\n|\n(?P<template>.*?)\n-->\n)"
    r"(?P<text>.*?)<!-- /numbers -->",
    flags=re.DOTALL,
)


class Figures(string.Formatter):
    """``str.format`` that prints a negative figure with the typographic minus (−)."""

    def format_field(self, value: object, format_spec: str) -> str:
        text = super().format_field(value, format_spec)
        if isinstance(value, int | float) and text.lstrip().startswith("-"):
            return text.replace("-", "\N{MINUS SIGN}", 1)
        return text


FIGURES = Figures()


@dataclass(frozen=True)
class Region:
    """One measured region of a page."""

    command: str  # "benchmarks/sort_cost.py --queries 20"
    template: str | None
    text: str
    span: tuple[int, int]  # of the text

    @property
    def script(self) -> Path:
        return ROOT / shlex.split(self.command)[0]

    @property
    def name(self) -> str:
        """The script's stem, with its arguments when it has any: the results file's name."""
        words = shlex.split(self.command)
        slug = re.sub(r"[^\w.]+", "_", " ".join(words[1:])).strip("_")
        return Path(words[0]).stem + (f"__{slug}" if slug else "")

    def render(self, figures: dict) -> str:
        """The template filled with ``figures``, its paragraphs refilled to 100 columns."""
        return (
            "\n\n".join(map(refill, FIGURES.format(self.template, **figures).split("\n\n"))) + "\n"
        )


def refill(paragraph: str, width: int = 100) -> str:
    """A paragraph or bullet refilled to ``width``; tables and other blocks are left alone."""
    if paragraph.startswith(("|", "```", "<")):
        return paragraph
    bullet = "  " if paragraph.startswith("- ") else ""
    return textwrap.fill(
        " ".join(paragraph.split()), width, subsequent_indent=bullet, break_on_hyphens=False
    )


def regions(text: str) -> list[Region]:
    return [
        Region(m["command"].strip(), m["template"], m["text"], m.span("text"))
        for m in REGION.finditer(text)
    ]


def run(region: Region) -> dict:
    """Run the region's script with ``--json``; its figures, with when and how they were taken."""
    words = shlex.split(region.command)
    started, load = time.perf_counter(), os.getloadavg()[0]
    print(f"running {region.command} ...", file=sys.stderr, flush=True)
    done = subprocess.run(
        [sys.executable, *words, "--json"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    )
    seconds = time.perf_counter() - started
    return {
        "command": region.command,
        "measured": datetime.now(UTC).isoformat(timespec="seconds"),
        "load_average": load,
        "seconds": round(seconds, 1),
        "figures": json.loads(done.stdout.strip().splitlines()[-1]),
    }


def figures_of(result: dict) -> dict:
    """A run's figures, with the load average when the run started unless it measured its own."""
    return {"load_average": result["load_average"], **result["figures"]}


def pages() -> list[Path]:
    """The pages that may quote figures: the README, then every Markdown page of docs/."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def stored(region: Region) -> dict | None:
    path = RESULTS / f"{region.name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def chosen_regions(only: list[str] | None) -> list[tuple[Path, Region]]:
    """Every region of every page, or those whose script's stem is in ``only``."""
    return [
        (page, region)
        for page in pages()
        for region in regions(page.read_text(encoding="utf-8"))
        if not only or region.script.stem in only
    ]


def rewrite(page: Path, results: dict[str, dict]) -> bool:
    """Refill the page's regions from ``results`` (by region name); whether the page changed."""
    text = old = page.read_text(encoding="utf-8")  # read again: it may have been edited meanwhile
    for region in reversed(regions(text)):  # from the end, so the spans stay valid
        result = results.get(region.name)
        if region.template is not None and result is not None:
            start, end = region.span
            text = text[:start] + region.render(figures_of(result)) + text[end:]
    if text != old:
        page.write_text(text, encoding="utf-8")
    return text != old


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="Rewrite the pages' figures.")
    action.add_argument(
        "--check", action="store_true", help="Exit 1 when a page differs from the figures."
    )
    action.add_argument("--list", action="store_true", help="List the regions and their state.")
    parser.add_argument("--only", action="append", help="Only this script (stem; repeatable).")
    parser.add_argument(
        "--stored",
        action="store_true",
        help="With --write: refill from the kept figures instead of running the scripts.",
    )
    parser.add_argument(
        "--run",
        action="store_true",
        help="With --check: measure again rather than use the kept figures (timings differ).",
    )
    args = parser.parse_args(argv)
    chosen = chosen_regions(args.only)
    if args.only and not chosen:
        parser.error(f"no region runs {', '.join(args.only)}")
    if args.list:
        for page, region in chosen:
            kept = stored(region)
            state = (
                "not regenerated yet (no template)"
                if region.template is None
                else "no figures kept"
                if kept is None
                else f"measured {kept['measured']} in {kept['seconds']} s, "
                f"load average {kept['load_average']:.1f}"
            )
            print(f"{page.relative_to(ROOT)}: {region.command}: {state}")
        return 0
    measure = (args.write and not args.stored) or (args.check and args.run)
    results: dict[str, dict] = {}
    differ = []
    for page, region in chosen:
        if region.template is None:
            continue
        if region.name not in results:
            results[region.name] = run(region) if measure else stored(region)
        result = results[region.name]
        where = f"{page.relative_to(ROOT)}: {region.command}"
        if result is None:
            differ.append(f"{where}: no figures kept (run with --write)")
        elif region.render(figures_of(result)) != region.text:
            differ.append(f"{where}: the page's text differs from its figures")
    if args.check:
        print("\n".join(differ) or "the pages quote the figures kept", file=sys.stderr)
        return 1 if differ else 0
    RESULTS.mkdir(exist_ok=True)
    for name, result in results.items():
        if measure and result is not None:
            (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    changed = [page.relative_to(ROOT) for page in pages() if rewrite(page, results)]
    print(
        f"refilled {len(results)} benchmark(s)' figures; rewrote "
        + (", ".join(map(str, changed)) or "no page"),
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
