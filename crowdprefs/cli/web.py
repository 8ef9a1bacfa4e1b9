"""Web-crowd commands: serve (the judges' site) and invite (personal and study links)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console, err_console, escape

if TYPE_CHECKING:
    from crowdprefs.crowds.prolific.client import ProlificClient

ProjectDir = Annotated[
    Path, typer.Argument(help="The project folder (holds crowdprefs.toml and state.sqlite).")
]


@app.command()
def serve(
    directory: ProjectDir,
    host: Annotated[
        str, typer.Option(help="Address to bind; anything but loopback exposes the site.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port to listen on.")] = 8000,
    access_log: Annotated[
        bool, typer.Option(help="Log every request (the paths hold invitation tokens).")
    ] = False,
    researcher_token_file: Annotated[
        Path | None,
        typer.Option(
            help="A file (readable by you only) whose first line is the researcher page's "
            "token; default: the environment variable CROWDPREFS_RESEARCHER_TOKEN, else a new "
            "random token."
        ),
    ] = None,
    fake: Annotated[
        bool,
        typer.Option(
            "--fake",
            help="Reach the project's local fake of Prolific (the study of 'crowdprefs prolific "
            "publish --fake') instead of Prolific: no network, no money, no token.",
        ),
    ] = False,
) -> None:
    """Serve the HITs to invited judges; answers are stored the moment they are posted.

    The researcher page's link (it holds its token) is printed when the site starts. A token of
    your own must be at least 32 random characters; it is never given on the command line,
    where other users of the machine could read it. While the project has a Prolific study, the
    server gives it the places of each new batch (token from PROLIFIC_TOKEN).
    """
    from crowdprefs.web.app import connect_prolific
    from crowdprefs.web.app import serve as serve_site
    from crowdprefs.web.security import is_loopback, researcher_token

    if not is_loopback(host):
        err_console.print(
            f"[yellow]warning:[/] binding to {escape(host)}: the site is reachable from other "
            "machines; put it behind HTTPS"
        )
    serve_site(
        directory,
        researcher_token(researcher_token_file),
        host=host,
        port=port,
        access_log=access_log,
        announce=lambda url: err_console.print(
            f"researcher page: {escape(url)}", highlight=False, soft_wrap=True
        ),
        prolific=_local_prolific(directory) if fake else connect_prolific,
    )


def _local_prolific(directory: Path) -> Callable[[], ProlificClient]:
    """Clients of the project's local fake of Prolific, started when first reached (in a daemon
    thread of this process), so a bad project is refused before the fake makes its file."""
    from crowdprefs.cli.prolific import FAKE_TOKEN
    from crowdprefs.crowds.prolific.client import ProlificClient
    from crowdprefs.crowds.prolific.fake import start_for_project

    @functools.cache
    def url() -> str:
        return start_for_project(directory, FAKE_TOKEN).url

    return lambda: ProlificClient(FAKE_TOKEN, url())


@app.command()
def invite(
    directory: ProjectDir,
    judges: Annotated[int, typer.Option(help="How many personal invitation links to make.")] = 1,
    base_url: Annotated[
        str | None,
        typer.Option(
            help="The site's public address (default: base_url of the \\[web] section of "
            "crowdprefs.toml)."
        ),
    ] = None,
    study: Annotated[
        bool,
        typer.Option(
            help="Also print a new study-platform link (replaces the previous one); "
            "participants arrive with their id and leave with a completion code."
        ),
    ] = False,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Also write judge_id,url to this CSV (readable by you only: it holds tokens).",
        ),
    ] = None,
) -> None:
    """Print personal invitation links (each token is shown only now; the state keeps a hash)."""
    from rich.table import Table

    from crowdprefs.campaign.project import Project
    from crowdprefs.web.assign import invitation_links
    from crowdprefs.web.security import write_secret

    with Project(directory) as project:
        made = invitation_links(project, judges, base_url, study)
    table = Table(title=f"{len(made.links)} invitation link(s)")
    table.add_column("judge")
    table.add_column("link", overflow="fold")
    for judge, url in made.links.itertuples(index=False):
        table.add_row(judge, url)
    console.print(table)
    if made.study_link is not None:
        console.print(f"study link: {escape(made.study_link)}", highlight=False, soft_wrap=True)
    if output is not None:
        write_secret(output, made.links.to_csv(index=False))
        console.print(f"wrote {escape(str(output))}", highlight=False)
