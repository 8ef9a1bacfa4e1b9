"""The typer application every command module registers itself on."""

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
