"""The deployment files hold what the program accepts: no Docker engine runs here, so the
Dockerfile's and compose file's commands are checked against the console script itself, and
the compose file against the rules of a deployment (no password written down, the database's
password handed to the server through the environment only)."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest
from mturk_campaign import make_project

from crowdprefs.campaign.store.location import Location

ROOT = Path(__file__).resolve().parents[1]


def dockerfile_command() -> list[str]:
    """The image's ENTRYPOINT followed by its CMD (both in JSON form)."""
    text = (ROOT / "Dockerfile").read_text()
    entry = json.loads(re.search(r"^ENTRYPOINT (\[.*\])$", text, re.M).group(1))
    command = json.loads(re.search(r"^CMD (\[.*\])$", text, re.M).group(1))
    return entry + command


def compose() -> dict:
    yaml = pytest.importorskip("yaml")
    return yaml.safe_load((ROOT / "compose.yaml").read_text())


def options_of(cli, *command: str) -> set[str]:
    code, out, _ = cli(*command, "--help", columns=250)
    assert code == 0
    return set(re.findall(r"(--[a-z][a-z-]*)", out))


def test_the_images_command_is_a_valid_serve_with_workers(cli):
    command = dockerfile_command()
    assert command[:2] == ["crowdprefs", "serve"]
    given = {word for word in command if word.startswith("--")}
    assert given <= options_of(cli, "serve"), given - options_of(cli, "serve")
    assert "--workers" in given and command[command.index("--host") + 1] == "0.0.0.0"


def test_the_health_check_asks_the_route_that_reports_the_database():
    text = (ROOT / "Dockerfile").read_text()
    assert "/healthz" in re.search(r"^HEALTHCHECK .*(?:\n .*)*", text, re.M).group(0)


def test_the_compose_walkthrough_uses_the_commands_as_they_are(cli, tmp_path):
    """The comment's `init … --database …` line is a valid init whose address holds no
    password; the server gets the password through the environment."""
    text = (ROOT / "compose.yaml").read_text()
    steps = " ".join(line.lstrip("# ").rstrip("\\ ") for line in text.splitlines()[:8])
    init = shlex.split(re.search(r"site (init .*?--database \S+)", steps).group(1))
    address = init[init.index("--database") + 1]
    assert Location.of(address).url is not None  # refused if it held a password
    # Run as written, with this machine's folders, the database host of the compose network
    # cannot be reached: the arguments parse and the one line names the database.
    make_project(tmp_path / "seed").close()
    here = {
        "/campaigns/study": str(tmp_path / "study"),
        "/campaigns/candidates.csv": str(tmp_path / "seed" / "candidates.csv"),
        address: "postgresql://crowdprefs@127.0.0.1:1/crowdprefs",
    }
    code, _, err = cli(*[here.get(word, word) for word in init])
    assert code == 1 and "cannot use the project state postgresql://" in err, err
    services = compose()["services"]
    assert "PGPASSWORD" in services["site"]["environment"]
    assert services["db"]["environment"]["POSTGRES_PASSWORD"].startswith("${PGPASSWORD")
    assert not re.search(r"postgres(ql)?://[^@\s]*:[^@\s]*@", text)  # no user:password@
    assert services["site"]["stop_grace_period"]  # lets answers in flight finish
