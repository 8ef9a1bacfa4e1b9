"""The typer application every command module registers itself on."""

from typing import Annotated

import typer

app = typer.Typer(
    name="crowdprefs",
    help=(
        "Build partially ordered ground truths for music similarity from crowd preference "
        "judgments, score retrieval systems against them, and audit the workers."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def _show_version(shown: bool) -> None:
    if shown:
        from crowdprefs import __version__

        typer.echo(f"crowdprefs {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_show_version, is_eager=True, help="Show the version and exit."
        ),
    ] = False,
) -> None:
    """Options that come before the command."""
