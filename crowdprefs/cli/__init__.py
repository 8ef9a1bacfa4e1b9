"""Command-line interface: thin wrappers that parse options, call the library, render with rich.

Each module imported below registers its commands on :data:`crowdprefs.cli.app.app`.
"""

from __future__ import annotations

import sys

import typer

from crowdprefs.cli.app import app
from crowdprefs.cli.console import err_console, escape, tidy_help
from crowdprefs.errors import CrowdprefsError, os_cause, readable

# Command modules, imported in the order their commands appear in --help.
# isort: off
from crowdprefs.cli import core  # noqa: F401,E402  init, status, next, publish, collect, aggregate, run, export
from crowdprefs.cli import demo  # noqa: F401,E402  demo
from crowdprefs.cli import audio  # noqa: F401,E402  audio prepare, prepare
from crowdprefs.cli import mturk  # noqa: F401,E402  preview, mturk ...
from crowdprefs.cli import prolific  # noqa: F401,E402  prolific publish, status, review, bonus
from crowdprefs.cli import web  # noqa: F401,E402  serve, invite
from crowdprefs.cli import audit  # noqa: F401,E402  audit, import-answers, replay
from crowdprefs.cli import plan  # noqa: F401,E402  plan, crowd-model fit
from crowdprefs.cli import prior  # noqa: F401,E402  prior chroma
from crowdprefs.cli import evaluate  # noqa: F401,E402  evaluate, compare-lists
from crowdprefs.cli import stats  # noqa: F401,E402  stats test, power, stability, gawm
from crowdprefs.cli import mtc  # noqa: F401,E402  mtc next, estimate, simulate
# isort: on


#: The exit code of a command stopped by Ctrl-C (128 + SIGINT).
INTERRUPTED = 130


def _fail(message: str, code: int) -> None:
    """Print the one ``error:`` line (:func:`~crowdprefs.errors.readable`) and exit."""
    err_console.print(
        f"[bold red]error:[/] {escape(readable(message))}", highlight=False, soft_wrap=True
    )
    sys.exit(code)


def _interrupted() -> None:
    _fail("interrupted: the state on disk is consistent; rerun the command to resume", INTERRUPTED)


def main() -> None:
    """Console-script entry point: one clear line and a non-zero exit for every user error."""
    if "--help" in sys.argv or len(sys.argv) <= 2:  # help may be shown: typer's help machinery
        tidy_help()  # is loaded only then (commands start faster without it)
    try:
        code = app(prog_name="crowdprefs", standalone_mode=False)
    except CrowdprefsError as error:
        _fail(str(error), error.exit_code)
    except typer.Exit as error:
        sys.exit(error.exit_code)
    except typer.Abort:
        _fail("aborted", 1)
    except typer.TyperException as error:  # bad option, missing argument, ... (typer's click)
        message, code = error.format_message(), getattr(error, "exit_code", 2)
        if not message:  # a group called without its command: its help is already shown
            sys.exit(code)
        _fail(message, code)
    except KeyboardInterrupt:
        _interrupted()
    except OSError as error:  # unreadable or unwritable files, full disks, ...
        where = "" if error.filename is None else f"{error.filename}: "
        _fail(where + os_cause(error), 2)
    if code == INTERRUPTED:  # typer returns it for Ctrl-C (its KeyboardInterrupt)
        _interrupted()
    sys.exit(code if isinstance(code, int) else 0)
