"""The CLI's consoles: tables and results on stdout, errors beside the progress on stderr;
``escape`` makes untrusted text (names, worker text) safe to print; :func:`tidy_help` makes
typer's help read well on narrow terminals."""

from __future__ import annotations

import itertools
import json
import re
import sys

from rich.console import Console

from crowdprefs.progress import escape
from crowdprefs.progress import stderr as err_console

console = Console()

__all__ = ["console", "err_console", "escape", "print_json", "tidy_help"]


def print_json(data) -> None:
    """Print ``data`` as indented JSON on stdout with the standard library (rich's highlighting
    JSON printer takes most of the time of a large report); NaN and infinities become null.
    Written in blocks of tokens: ``json.dump`` writes every token on its own (seconds for a
    report of a million answers), ``json.dumps`` holds them all at once."""
    encoder = json.JSONEncoder(indent=2, ensure_ascii=False, allow_nan=False)
    tokens = encoder.iterencode(_finite(data))
    while block := list(itertools.islice(tokens, 65536)):
        sys.stdout.write("".join(block))
    sys.stdout.write("\n")


def _finite(value):
    """``value`` with non-finite floats replaced by None, for strict JSON."""
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


#: A line break inside a help paragraph, except before a bullet ("- ") or an indented line.
_SOFT_BREAK = re.compile(r"\n(?!- |\s)")


def tidy_help() -> None:
    """Make typer's help read well at 80 columns: a flag shows no type (typer prints ``<bool>``
    beside every one), help text folds a long word (an environment variable, a CSV header)
    onto the next line instead of cutting it with an ellipsis, and a paragraph's line breaks
    are spaces (bullets, lines starting "- ", keep theirs), as in a command's first paragraph.
    """
    from rich.text import Text
    from typer import core, rich_utils

    option_type = core.TyperOption.display_type_rich
    make_text = rich_utils._make_rich_text

    def display_type_rich(self, ctx):
        return None if self.is_flag else option_type(self, ctx)

    def make_rich_text(*, text: str, style: str = "", markup_mode):
        made = make_text(text=text, style=style, markup_mode=markup_mode)
        if isinstance(made, Text):
            made.overflow = "fold"
        return made

    def fix_linebreaks(paragraphs: list[str], markup_mode) -> str:
        return "\n\n".join(_SOFT_BREAK.sub(" ", paragraph) for paragraph in paragraphs)

    core.TyperOption.display_type_rich = display_type_rich
    rich_utils._make_rich_text = make_rich_text
    rich_utils._fix_linebreaks = fix_linebreaks
