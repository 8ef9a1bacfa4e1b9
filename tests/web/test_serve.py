"""`crowdprefs serve` as a deployment runs it: through the installed console script, beside the
researcher's other commands, with several workers on PostgreSQL (refused on SQLite), behind a
trusted proxy, and with a health check that reports the database."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import httpx
import psycopg
import sqlalchemy
from console_script import crowdprefs
from starlette.testclient import TestClient
from test_web import RESEARCHER, make_web_project

from crowdprefs.campaign.project import Project
from crowdprefs.web import assign
from crowdprefs.web.app import create_app
from crowdprefs.web.judges import ServerProcess


def one_line_error(run: subprocess.CompletedProcess) -> str:
    assert run.returncode != 0
    assert "Traceback" not in run.stderr, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1, run.stderr
    return lines[0]


def web_project(tmp_path: Path, database: str | None = None, **web: object) -> Path:
    return make_web_project(tmp_path, database=database, web=web)


def test_several_workers_are_refused_on_sqlite_in_one_line(tmp_path):
    root = web_project(tmp_path)
    line = one_line_error(crowdprefs("serve", root, "--workers", "2", "--port", "1"))
    assert "need the state in PostgreSQL" in line and "crowdprefs migrate" in line


def test_a_second_server_of_a_sqlite_project_is_refused_and_the_first_serves_on(tmp_path):
    root = web_project(tmp_path)
    with ServerProcess(root, RESEARCHER) as first:
        line = one_line_error(
            crowdprefs(
                "serve", root, "--port", "1", env={"CROWDPREFS_RESEARCHER_TOKEN": RESEARCHER}
            )
        )
        assert "already served (pid " in line
        assert httpx.get(f"{first.url}/healthz").status_code == 200


def test_the_researchers_commands_run_beside_a_live_server(tmp_path, engine):
    """invite, invite --study, status and export while the site serves judges (the server's
    changes never hold the project lock)."""
    root = web_project(tmp_path, engine)
    with ServerProcess(root, RESEARCHER) as server:
        invited = crowdprefs("invite", root, "--judges", "2", "--base-url", server.url)
        assert invited.returncode == 0, invited.stderr
        study = crowdprefs("invite", root, "--study", "--base-url", server.url)
        assert study.returncode == 0, study.stderr
        assert crowdprefs("status", root).returncode == 0
        links = [w for w in invited.stdout.split() if w.startswith(f"{server.url}/invite/")]
        assert len(links) == 2
        with httpx.Client(base_url=server.url) as judge:
            assert judge.get(links[0][len(server.url) :], follow_redirects=True).status_code == 200
            assert judge.post("/next").status_code == 303


def test_healthz_reports_the_database_and_fails_while_it_cannot_be_reached(tmp_path, engine):
    root = web_project(tmp_path, engine)
    with TestClient(create_app(root, RESEARCHER)) as server:
        healthy = server.get("/healthz")
        assert healthy.status_code == 200
        dialect = "sqlite" if engine is None else "postgresql"
        assert healthy.text.startswith(f"ok: {dialect} database, schema ")
        if engine is not None:  # the database goes away under the running server
            url = sqlalchemy.engine.make_url(engine)
            admin = psycopg.connect(
                url.set(database="postgres").render_as_string(hide_password=False),
                autocommit=True,
            )
            with admin:
                admin.execute(f'DROP DATABASE "{url.database}" WITH (FORCE)')
            broken = server.get("/healthz")
            assert broken.status_code == 503 and "database unavailable" in broken.text


def test_the_client_address_comes_from_a_trusted_proxy_only(tmp_path):
    """Behind the proxy of ``[web] trusted_proxies`` the forwarded address is the client's:
    a guesser is throttled alone, the judges behind the same proxy are not."""
    root = web_project(tmp_path, trusted_proxies=["127.0.0.1"])
    with Project(root) as project:
        (token,) = [t for _, t in assign.invite(project, 1)]
    with ServerProcess(root, RESEARCHER) as server, httpx.Client(base_url=server.url) as proxy:
        guesser = {"X-Forwarded-For": "203.0.113.9"}
        for i in range(25):
            proxy.get(f"/invite/wrong-token-{i}", headers=guesser)
        assert proxy.get("/invite/wrong-token-again", headers=guesser).status_code == 429
        judge = {"X-Forwarded-For": "198.51.100.7"}
        assert proxy.get("/invite/wrong-token-of-a-judge", headers=judge).status_code == 403
        assert proxy.get(f"/invite/{token}", headers=judge).status_code in (200, 303)


def test_invitations_point_to_the_served_site_or_the_address_given_before(tmp_path, engine):
    """The class "links to a site nobody serves": 'invite' beside a running 'serve' writes
    links to the address it serves (not the default port 8000), an earlier --base-url is
    remembered, and [web] base_url comes first; each time the second line says which."""
    root = web_project(tmp_path, engine)
    with ServerProcess(root, RESEARCHER) as server:
        beside = crowdprefs("invite", root, "--judges", "1")
        assert beside.returncode == 0, beside.stderr
        (link,) = re.findall(rf"{re.escape(server.url)}/invite/[\w-]+", beside.stdout)
        assert f"{server.url}, where 'crowdprefs serve' serves the site" in beside.stderr
        with httpx.Client(base_url=server.url) as judge:
            opened = judge.get(link[len(server.url) :], follow_redirects=True)
            assert opened.status_code == 200 and opened.url.path == "/welcome"
        given = crowdprefs("invite", root, "--base-url", "https://judges.example.org/")
        assert "(--base-url), remembered for later invitations" in given.stderr
        later = crowdprefs("invite", root, "--study")
        assert later.returncode == 0, later.stderr
        assert "https://judges.example.org/invite/" in later.stdout
        assert "study link: https://judges.example.org/study/" in later.stdout
        assert "(the --base-url of an earlier invitation)" in later.stderr
    config = root / "crowdprefs.toml"
    text = config.read_text()
    assert text.count("[web]\n") == 1
    config.write_text(text.replace("[web]\n", '[web]\nbase_url = "https://lab.example.org"\n'))
    configured = crowdprefs("invite", root)
    assert "https://lab.example.org/invite/" in configured.stdout, configured.stderr
    assert "base_url of the [web] section" in configured.stderr
