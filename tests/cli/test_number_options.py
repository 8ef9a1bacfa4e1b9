"""Every option that takes a number with a fraction takes only a finite one: ``nan``, ``inf`` and
``1e999`` pass every range check written as comparisons (``nan < 0`` is false), so one parser
(:func:`crowdprefs.cli.options.finite`) refuses them where the command line is read."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Annotated, get_args, get_origin, get_type_hints

import pytest
import typer
from console_script import crowdprefs
from typer.models import ArgumentInfo, OptionInfo

from crowdprefs.cli import app
from crowdprefs.cli.options import finite


def commands(
    group: typer.Typer, words: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], object]]:
    """``(command words, callback)`` of every command, subcommands included."""
    for command in group.registered_commands:
        name = command.name or command.callback.__name__.replace("_", "-")
        yield (*words, name), command.callback
    for sub in group.registered_groups:
        yield from commands(sub.typer_instance, (*words, sub.name))


def float_options() -> list[tuple[tuple[str, ...], str, OptionInfo]]:
    """``(command words, option spelling, its declaration)`` of every option whose values are
    floats (``float``, ``float | None``, ``list[float]``)."""
    found = []
    for words, callback in commands(app):
        for name, hint in get_type_hints(callback, include_extras=True).items():
            if get_origin(hint) is not Annotated or "float" not in repr(get_args(hint)[0]):
                continue
            info = next(m for m in get_args(hint)[1:] if isinstance(m, OptionInfo | ArgumentInfo))
            decls = (info.default, *(info.param_decls or ()))  # Annotated: the first is default
            declared = [d for d in decls if isinstance(d, str) and d.startswith("--")]
            spelling = declared[0].split("/")[0] if declared else "--" + name.replace("_", "-")
            found.append((words, spelling, info))
    return found


FLOAT_OPTIONS = float_options()


def test_every_float_option_is_read_by_the_finite_parser():
    assert len(FLOAT_OPTIONS) >= 50  # the walk finds the options (55 when this was written)
    unread = [(" ".join(w), s) for w, s, info in FLOAT_OPTIONS if info.parser is not finite]
    assert unread == []


@pytest.mark.parametrize(
    ("words", "spelling"),
    [(words, spelling) for words, spelling, _ in FLOAT_OPTIONS],
    ids=[f"{' '.join(words)} {spelling}" for words, spelling, _ in FLOAT_OPTIONS],
)
def test_a_value_that_is_not_a_finite_number_is_refused_in_one_line(words, spelling):
    done = crowdprefs(*words, spelling, "nan")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().splitlines() == [
        f"error: Invalid value for '{spelling}': nan is not a finite number"
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("inf", "inf is not a finite number"),
        ("-inf", "-inf is not a finite number"),
        ("1e999", "1e999 is not a finite number"),
        ("NaN", "NaN is not a finite number"),
        ("half", "'half' is not a number"),
    ],
)
def test_each_kind_of_non_number_is_named(value, message):
    done = crowdprefs("plan", "--epsilon", value)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"error: Invalid value for '--epsilon': {message}"]


def test_a_finite_number_still_reaches_the_command():
    done = crowdprefs("plan", "--epsilon", "1e-3")
    assert done.returncode == 2  # the command ran on to its own check: no candidates given
    assert done.stderr.strip().splitlines() == ["error: Missing option '--candidates'."]
