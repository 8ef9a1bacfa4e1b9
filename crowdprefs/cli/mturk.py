"""Commands: ``preview`` and ``mturk publish | collect | review | reconcile | expire | balance |
upload``.

MTurk commands act on the sandbox unless ``--live`` is given (publishing live also asks to
confirm the cost) or ``--fake`` (the project's local fake).
"""

from __future__ import annotations

import functools
import html
import shlex
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated
from urllib.parse import parse_qsl

import typer
from rich.table import Table

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console, err_console
from crowdprefs.cli.next_step import hinting_next_step, next_step
from crowdprefs.cli.options import (
    MAX_ITERATIONS,
    OUTPUT,
    PartialPublish,
    ProjectDir,
    Yes,
    count,
)
from crowdprefs.errors import InputError, StateError
from crowdprefs.progress import note

if TYPE_CHECKING:
    from crowdprefs.campaign.project import Project
    from crowdprefs.crowds.mturk.crowd import MTurkCrowd
    from crowdprefs.quality.review import Reviewer

mturk_app = typer.Typer(
    help="Publish to Amazon Mechanical Turk (sandbox unless --live), collect, review, repair.",
    no_args_is_help=True,
)
app.add_typer(mturk_app, name="mturk")

Live = Annotated[
    bool, typer.Option("--live", help="Use live MTurk (real money) instead of the sandbox.")
]
Fake = Annotated[
    bool, typer.Option("--fake", help="Use the project's local MTurk fake (no network).")
]
Flags = Annotated[
    Path | None,
    typer.Option(
        "--flags", help="CSV worker_id,reason of workers to block (their answers are rejected)."
    ),
]


Audited = Annotated[
    bool,
    typer.Option("--audit", help="Also block the workers the audit flags."),
]


def _target(live: bool, fake: bool) -> str:
    """The options naming the MTurk target, as typed again in a hint."""
    return "--live" if live else "--fake" if fake else ""


def _crowd(project: Project, live: bool, fake: bool) -> MTurkCrowd:
    from crowdprefs.crowds.mturk.crowd import MTurkCrowd

    if live and fake:
        raise InputError("--live and --fake exclude each other")
    if fake:
        return MTurkCrowd.for_crowd("mturk-fake", project)
    return MTurkCrowd(project, target="live" if live else "sandbox")


def _reviewer(flags: Path | None, audited: bool) -> Reviewer:
    """The review pass: the review rules, the workers listed in ``flags``, and with
    ``audited`` every worker the audit's rules flag (judged by the project's rule)."""
    from crowdprefs.quality.review import Reviewer, read_flags

    return Reviewer(read_flags(flags) if flags else None, audit=audited)


@app.command()
def preview(
    directory: ProjectDir,
    output: Annotated[
        Path | None,
        typer.Option(*OUTPUT, help="Folder for the HTML files (default: PROJECT/preview)."),
    ] = None,
    iteration: Annotated[
        int | None,
        typer.Option(
            callback=count(1, MAX_ITERATIONS),
            help="Batch to render (default: the open or next batch).",
        ),
    ] = None,
    open_: Annotated[
        bool,
        typer.Option("--open", help="Serve the files on localhost and open them in a browser."),
    ] = False,
    port: Annotated[
        int, typer.Option(callback=count(0, 65535), help="Port for --open (0: any free port).")
    ] = 0,
) -> None:
    """Render a batch's HITs to local HTML files to try them in a browser before paying."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project
    from crowdprefs.files import OutputFolder
    from crowdprefs.hits.render import write_preview

    pages = OutputFolder(output or directory / "preview", inputs={"PROJECT": directory})
    with Project(directory) as project:
        if iteration is None:
            iteration = driver.next_batch(project)
            if iteration is None:
                last = project.store.last_batch()
                if last is None:
                    raise StateError("the project has no batch to preview")
                iteration = last["iteration"]
        files = write_preview(project, iteration, pages.path)
    console.print(f"wrote {len(files)} HITs of batch {iteration} and index.html to {pages}")
    if open_:
        _serve(pages.path, port)


def _preview_handler() -> type:
    """The preview server's request handler, which shows what a submitted HIT would send (the
    standard library's HTTP server is imported only by ``mturk preview --open``)."""
    from http.server import SimpleHTTPRequestHandler

    class PreviewHandler(SimpleHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
            length = int(self.headers.get("Content-Length", 0))
            fields = parse_qsl(self.rfile.read(length).decode("utf-8", "replace"))
            rows = "".join(
                f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in fields
            )
            body = (
                "<!DOCTYPE html><meta charset='utf-8'><title>Submitted</title>"
                f"<h1>The HIT would have sent:</h1><table>{rows}</table>"
                "<p><a href='index.html'>back to the batch</a></p>"
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    return PreviewHandler


def _serve(folder: Path, port: int) -> None:
    import webbrowser
    from http.server import ThreadingHTTPServer

    handler = functools.partial(_preview_handler(), directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    url = f"http://127.0.0.1:{server.server_address[1]}/index.html"
    console.print(f"serving {folder} at {url} (Ctrl-C to stop)")
    threading.Thread(target=webbrowser.open, args=(url,), daemon=True).start()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


@mturk_app.command("publish")
def publish(
    directory: ProjectDir,
    live: Live = False,
    fake: Fake = False,
    yes: Yes = False,
    partial: PartialPublish = False,
) -> None:
    """Publish the open batch (building it if needed): one HIT per pair."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project

    target = _target(live, fake)
    with Project(directory) as project:
        crowd = _crowd(project, live, fake)  # its settings are checked before a batch is built
        iteration = driver.next_batch(project, crowd, partial=partial)
        if iteration is None:
            hint = next_step(project, directory, crowd=target, mturk=True)
            console.print(f"nothing to publish: {hint}", highlight=False)
            return
        if live:
            quote = driver.publish_quote(project, crowd.name)
            budget = "no budget set" if quote.budget is None else f"budget ${quote.budget:.2f}"
            console.print(
                f"LIVE MTurk: {quote.hits} HITs, {quote.assignments} assignments, "
                f"${quote.cost:.2f} (committed so far ${quote.committed:.2f}; {budget})"
            )
            if not yes and not typer.confirm("Spend this money on live MTurk?", default=False):
                raise typer.Abort()
        hint = {"crowd": target, "crowd_name": crowd.name, "mturk": True}
        with hinting_next_step(project, directory, **hint):
            count = driver.publish(project, crowd, partial=partial)
        console.print(f"published {count} HITs of batch {iteration} to {crowd.name}")
        if project.store.last_batch()["status"] == "built":
            left = driver.publish_quote(project, crowd.name)
            again = f"crowdprefs mturk publish {shlex.quote(str(directory))} {target}".strip()
            note(
                f"{left.hits} HITs of batch {iteration} wait for budget (${left.cost:.2f} more): "
                "the batch is collected once all of it is published. Raise budget in the "
                f"[crowd] section of {directory / 'crowdprefs.toml'}, then run '{again}' again."
            )


@mturk_app.command("collect")
def collect(
    directory: ProjectDir,
    live: Live = False,
    fake: Fake = False,
    flags: Flags = None,
    audited: Audited = False,
) -> None:
    """Fetch the published batch's answers and review them."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project

    with Project(directory) as project:
        crowd = _crowd(project, live, fake)
        hint = {"crowd": _target(live, fake), "crowd_name": crowd.name, "mturk": True}
        with hinting_next_step(project, directory, **hint):
            new = driver.collect(project, crowd, _reviewer(flags, audited))
        batch = project.store.last_batch()
        console.print(
            f"collected {new} new answers; batch {batch['iteration']} is {batch['status']}"
        )


@mturk_app.command("review")
def review_(
    directory: ProjectDir,
    live: Live = False,
    fake: Fake = False,
    flags: Flags = None,
    audited: Audited = False,
) -> None:
    """Apply the review rules to the collected answers (e.g. after adding --flags)."""
    from crowdprefs.campaign.project import Project

    with Project(directory) as project:
        crowd = _crowd(project, live, fake)
        last = project.store.last_batch()
        if last is None:
            hint = next_step(project, directory, crowd=_target(live, fake), mturk=True)
            raise StateError(f"the project has no batch to review; {hint}")
        done = _reviewer(flags, audited)(project, crowd, last["iteration"])
        console.print(", ".join(f"{n} {what}" for what, n in done.items()))


@mturk_app.command("reconcile")
def reconcile(directory: ProjectDir, live: Live = False, fake: Fake = False) -> None:
    """Compare the state with what MTurk holds: adopt orphan HITs, fetch missing answers."""
    from crowdprefs.campaign.project import Project

    with Project(directory) as project:
        report = _crowd(project, live, fake).reconcile(project)
    table = Table(title="reconcile")
    table.add_column("what")
    table.add_column("count", justify="right")
    for what, number in report.items():
        table.add_row(what.replace("_", " "), str(number))
    console.print(table)


@mturk_app.command("expire")
def expire(
    directory: ProjectDir,
    live: Live = False,
    fake: Fake = False,
    yes: Yes = False,
) -> None:
    """End every open HIT of the project now (answers already given stay)."""
    if not yes and not typer.confirm("Expire every open HIT of this project?", default=False):
        raise typer.Abort()
    from crowdprefs.campaign.project import Project

    with Project(directory) as project:
        count = _crowd(project, live, fake).expire(project)
    console.print(f"expired {count} HITs")


@mturk_app.command("balance")
def balance(directory: ProjectDir, live: Live = False, fake: Fake = False) -> None:
    """Show the requester account's available balance."""
    from crowdprefs.campaign.project import Project

    with Project(directory) as project:
        crowd = _crowd(project, live, fake)
        console.print(f"{crowd.name}: ${crowd.balance():.2f} available")


@mturk_app.command("upload")
def upload(directory: ProjectDir) -> None:
    """Upload the project's clips to the S3 bucket of its hosting section (only what is missing)."""
    from crowdprefs.campaign.project import Project
    from crowdprefs.hits.hosting import clip_paths, host_for_project

    with Project(directory) as project:
        host = host_for_project(project)
        if host is None:
            raise InputError("no [hosting] section: set s3_bucket or base_url in crowdprefs.toml")
        paths = clip_paths(project)
        sent = host.prepare(paths)
    err_console.print(f"{sent} of {len(paths)} clips uploaded ({len(paths) - sent} were there)")
