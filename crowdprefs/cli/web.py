"""Web-crowd commands: serve (the judges' site) and invite (personal and study links)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console, err_console, escape
from crowdprefs.cli.options import MAX_JUDGES, count
from crowdprefs.errors import InputError
from crowdprefs.progress import note

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project
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
    port: Annotated[
        int, typer.Option(callback=count(1, 65535), help="TCP port to listen on.")
    ] = 8000,
    workers: Annotated[
        int,
        typer.Option(
            callback=count(1, 64),
            help="Server processes sharing the campaign (more than 1 needs the state in "
            "PostgreSQL: init --database, or crowdprefs migrate).",
        ),
    ] = 1,
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
    server gives it the places of each new batch (token from PROLIFIC_TOKEN). The researcher's
    other commands (invite, prolific publish, status, …) run beside it. Several workers, or
    several hosts behind a proxy (\\[web] trusted_proxies), share a campaign kept in PostgreSQL.
    Logs go to standard output; Ctrl-C or SIGTERM lets answers in flight finish.
    """
    from crowdprefs.campaign.project import Project
    from crowdprefs.web.app import connect_prolific
    from crowdprefs.web.app import serve as serve_site
    from crowdprefs.web.security import is_loopback, researcher_token

    with Project(directory, lock=False) as project:
        silent = silent_clips(project)
    if silent is not None:
        raise InputError(f"cannot serve {directory}: {silent}")
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
        workers=workers,
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
    judges: Annotated[
        int,
        typer.Option(
            callback=count(0, MAX_JUDGES),
            help="How many personal invitation links to make (0: only --study's link).",
        ),
    ] = 1,
    base_url: Annotated[
        str | None,
        typer.Option(
            help="The site's public address, remembered for later invitations (default: "
            "base_url of the \\[web] section of crowdprefs.toml, else the last --base-url, else "
            "where 'crowdprefs serve' serves the site)."
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
    from crowdprefs.files import output as output_file
    from crowdprefs.web.assign import invitation_links
    from crowdprefs.web.security import write_secret

    out = output_file(output, {"PROJECT": directory})
    with Project(directory) as project:
        silent = silent_clips(project)
        made = invitation_links(project, judges, base_url, study)
    table = Table(title=f"{len(made.links)} invitation link(s)")
    table.add_column("judge")
    table.add_column("link", overflow="fold")
    for judge, url in made.links.itertuples(index=False):
        table.add_row(judge, url)
    console.print(table)
    if made.study_link is not None:
        console.print(f"study link: {escape(made.study_link)}", highlight=False, soft_wrap=True)
    if out is not None:
        from crowdprefs.io import csv_text

        write_secret(out, csv_text(made.links))
        console.print(f"wrote {escape(str(output))}", highlight=False)
    err_console.print(escape(address_source(directory, made.source, made.site)), highlight=False)
    if silent is not None:
        note(f"warning: {silent}; 'crowdprefs serve' refuses it")


def address_source(directory: Path, source: str, site: str) -> str:
    """Where the links' address ``site`` came from (``source``, one of
    :data:`~crowdprefs.web.assign.SITE_SOURCES`), and how to change it."""
    config = directory / "crowdprefs.toml"
    change = (
        f"for judges elsewhere set base_url in the [web] section of {config} (the site's "
        "public address) or give --base-url"
    )
    return {
        "given": f"the links point to {site} (--base-url), remembered for later invitations",
        "settings": f"the links point to {site} (base_url of the [web] section of {config})",
        "remembered": f"the links point to {site} (the --base-url of an earlier invitation)",
        "served": f"the links point to {site}, where 'crowdprefs serve' serves the site; {change}",
        "default": f"the links point to {site}, the default: 'crowdprefs serve' on this machine "
        f"only; {change}",
    }[source]


def silent_clips(project: Project) -> str | None:
    """What of the project has no audio (``None`` when every query and candidate has): its
    pages would show players with nothing to play, and no judge could answer."""
    queries, candidates = project.store.queries(), project.store.candidates()
    counts = [
        (kind, int(frame["audio"].fillna("").astype(str).str.strip().eq("").sum()))
        for kind, frame in (("queries", queries), ("candidates", candidates))
    ]
    missing = [f"{count} {kind}" for kind, count in counts if count]
    if not missing:
        return None
    return (
        f"{' and '.join(missing)} of {project.root} have no audio, so the judges' pages would "
        "have nothing to play; a project for judges is made from a candidates CSV with an "
        "audio column (query,document,audio[,query_audio])"
    )
