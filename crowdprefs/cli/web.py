"""Web-crowd commands: serve (the judges' site) and invite (personal and study links)."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console, err_console
from crowdprefs.cli.options import ProjectDir
from crowdprefs.errors import InputError, StateError

if TYPE_CHECKING:
    import pandas as pd

    from crowdprefs.campaign.project import Project
    from crowdprefs.web.judges import JudgeReport


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@app.command()
def serve(
    directory: ProjectDir,
    host: Annotated[
        str, typer.Option(help="Address to bind; anything but loopback exposes the site.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port to listen on.")] = 8000,
    researcher_token: Annotated[
        str | None,
        typer.Option(
            envvar="CROWDPREFS_RESEARCHER_TOKEN",
            help="Token of the researcher page (default: a new random one, printed).",
        ),
    ] = None,
    access_log: Annotated[
        bool, typer.Option(help="Log every request (the paths hold invitation tokens).")
    ] = False,
) -> None:
    """Serve the HITs to invited judges; answers are stored the moment they are posted."""
    import uvicorn

    from crowdprefs.campaign.project import Project
    from crowdprefs.web import assign
    from crowdprefs.web.app import create_app
    from crowdprefs.web.security import new_token

    with Project(directory) as project:
        settings = assign.WebSettings.from_project(project)
        configured = "base_url" in project.section("web")
    if not 0 < port < 65536:
        raise InputError(f"--port must be between 1 and 65535, got {port}")
    if not _loopback(host):
        err_console.print(
            f"[yellow]warning:[/] binding to {escape(host)}: the site is reachable from other "
            "machines; put it behind HTTPS"
        )
    token = researcher_token or new_token()
    shown = f"[{host}]" if ":" in host else host
    base = settings.base_url.rstrip("/") if configured else f"http://{shown}:{port}"
    err_console.print(
        f"researcher page: {escape(base)}/researcher/{token}",
        highlight=False,
        soft_wrap=True,
    )
    uvicorn.run(
        create_app(directory, token),
        host=host,
        port=port,
        access_log=access_log,
        log_level="info",
        proxy_headers=False,
    )


def _write_csv(frame: pd.DataFrame, path: Path) -> None:
    from crowdprefs.files import write_atomic

    write_atomic(path, frame.to_csv(index=False))


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
        Path | None, typer.Option("--output", "-o", help="Also write judge_id,url to this CSV.")
    ] = None,
) -> None:
    """Print personal invitation links (each token is shown only now; the state keeps a hash)."""
    import pandas as pd

    from crowdprefs.campaign.project import Project
    from crowdprefs.web import assign

    with Project(directory) as project:
        settings = assign.WebSettings.from_project(project)
        base = (base_url or settings.base_url).rstrip("/")
        if not base.startswith(("http://", "https://")):
            raise InputError(f"--base-url must start with http:// or https://: {base}")
        created = assign.invite(project, judges) if judges else []
        key = assign.new_study_key(project) if study else None
    frame = pd.DataFrame(
        [(judge, f"{base}/invite/{token}") for judge, token in created],
        columns=["judge_id", "url"],
    )
    table = Table(title=f"{len(frame)} invitation link(s)")
    table.add_column("judge")
    table.add_column("link", overflow="fold")
    for judge, url in frame.itertuples(index=False):
        table.add_row(judge, url)
    console.print(table)
    if key is not None:
        param = settings.participant_param
        console.print(
            f"study link: {base}/study/{key}?{param}={{{{%{param}%}}}}",
            highlight=False,
            soft_wrap=True,
        )
    if output is not None:
        _write_csv(frame, output)
        console.print(f"wrote {output}")


def run_web_demo(project: Project, judges: int = 40, max_seconds: float = 900.0) -> JudgeReport:
    """The demo's campaign through the web crowd: ``judges`` simulated judges post their answers
    over HTTP to a local server (127.0.0.1), which aggregates each batch and publishes the next.
    Raises :class:`StateError` when ``max_seconds`` pass first (rerunning resumes).
    """
    import numpy as np

    from crowdprefs.campaign import driver
    from crowdprefs.campaign.aggregate import count_answers, inter_agreement
    from crowdprefs.progress import make_progress
    from crowdprefs.web.judges import run_web_campaign

    total = project.store.candidates()["query"].nunique()
    with make_progress(transient=True) as progress:
        task = progress.add_task(f"{judges} judges answering over HTTP", total=total)

        def watch() -> bool:
            totals = driver.status(project)["totals"]
            progress.update(
                task,
                completed=totals["closed"],
                description=f"iteration {totals['iteration']}: {totals['answers']} answers",
            )
            return False

        report = run_web_campaign(project.root, judges=judges, watch=watch, max_seconds=max_seconds)
    table = Table(title="demo campaign (web crowd, simulated judges over HTTP)")
    for name in ("iter.", "pairs", "answers", "agree.", "judges"):
        table.add_column(name, justify="right")
    answers = project.store.answers()
    for iteration, frame in answers.groupby("iteration"):
        counts = count_answers(frame)
        agreement = inter_agreement(counts["more"], counts["equal"], counts["less"])
        table.add_row(
            str(iteration),
            str(frame["pair_id"].nunique()),
            str(len(frame)),
            f"{np.nanmean(agreement):.3f}",
            str(frame["worker_id"].nunique()),
        )
    console.print(table)
    console.print(
        f"{report.answers} answers posted, {len(report.refused)} refused; "
        f"submit latency p95 {1000 * report.p95():.0f} ms"
    )
    totals = driver.status(project)["totals"]
    if totals["closed"] < totals["queries"]:
        raise StateError(
            f"the web campaign stopped after {max_seconds:g} s with "
            f"{totals['queries'] - totals['closed']} list(s) open; rerun to resume"
        )
    return report
