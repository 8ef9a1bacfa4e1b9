"""The command line starts without the library's heavy dependencies: each command module imports
the library inside its functions, so ``--help`` loads typer and rich only."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("scipy", "pandas", "numpy", "boto3", "starlette", "matplotlib", "statsmodels", "jinja2")

HELP_EVERYWHERE = """
import json, sys
import typer.main
from crowdprefs.cli import main
from crowdprefs.cli.app import app

def paths(group, prefix=()):
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            yield from paths(command, (*prefix, name))
        yield (*prefix, name)

shown = [()] + list(paths(typer.main.get_command(app)))
codes = []
for path in shown:
    sys.argv = ["crowdprefs", *path, "--help"]
    try:
        main()
    except SystemExit as stop:
        codes.append(stop.code)
print(json.dumps({"codes": codes, "commands": len(shown), "modules": sorted(sys.modules)}))
"""


def loaded_after(code: str) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "80"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_importing_the_cli_loads_no_heavy_library():
    report = loaded_after(
        "import json, sys; import crowdprefs.cli; "
        "print(json.dumps({'modules': sorted(sys.modules)}))"
    )
    roots = {name.split(".")[0] for name in report["modules"]}
    assert not roots & set(HEAVY), sorted(roots & set(HEAVY))


def test_every_commands_help_loads_no_heavy_library():
    report = loaded_after(HELP_EVERYWHERE)
    assert report["commands"] > 30
    assert set(report["codes"]) == {0}
    roots = {name.split(".")[0] for name in report["modules"]}
    assert not roots & set(HEAVY), sorted(roots & set(HEAVY))
    library = {m for m in report["modules"] if m.startswith("crowdprefs.")}
    assert {m for m in library if not m.startswith("crowdprefs.cli")} <= {
        "crowdprefs.errors",
        "crowdprefs.progress",
        "crowdprefs.campaign",
        "crowdprefs.campaign.rules",  # the registry of rule names --rule offers (no numpy)
        "crowdprefs.crowds",  # the registry of crowd names --crowd offers (no numpy)
        "crowdprefs.registry",  # where those names are listed, as strings
    }


RUN_COMMANDS = """
import json, sys
from crowdprefs.cli import main

codes = []
for command in {commands!r}:
    sys.argv = ["crowdprefs", *command]
    try:
        main()
    except SystemExit as stop:
        codes.append(stop.code)
    else:
        codes.append(0)
# pandas is loaded lazily: a proxy may sit in sys.modules, its submodules only once it runs
print(json.dumps({{"codes": codes, "modules": sorted(sys.modules)}}))
"""


def ran(modules: list[str], *roots: str) -> list[str]:
    """The modules of ``roots`` that ran: a lazy stand-in for a package may sit in
    ``sys.modules`` (``numpy``, ``pandas``), its submodules only once it is used."""
    return [m for m in modules if m.startswith(tuple(f"{root}." for root in roots))]


def test_status_and_next_on_a_project_load_only_what_they_use(tmp_path):
    """``status`` (no ``[systems]``, no machine verdicts) loads neither pandas nor scipy nor
    SQLAlchemy's ORM; ``next`` on the open batch loads no numpy either (``status`` prices the
    open batch and the published HITs with the budget's numpy arithmetic). A ``status`` or
    ``next`` of a project unchanged since the last one opens no store at all."""
    from crowdprefs.campaign import driver
    from crowdprefs.campaign.project import Project
    from crowdprefs.crowds import get_crowd
    from crowdprefs.demo import create_demo_project

    with create_demo_project(tmp_path) as project:
        driver.run(project, get_crowd("simulated", project), max_iterations=1)
        where = project.root
    aggregated = loaded_after(RUN_COMMANDS.format(commands=[["status", str(where)]]))
    with Project(where) as project:
        assert driver.next_batch(project) == 2
    statuses = loaded_after(
        RUN_COMMANDS.format(commands=[["status", str(where)], ["status", "--json", str(where)]])
    )
    batch_open = loaded_after(RUN_COMMANDS.format(commands=[["next", str(where)]]))
    for report in (aggregated, statuses, batch_open):
        assert set(report["codes"]) == {0}
        assert not ran(report["modules"], "pandas", "scipy", "sqlalchemy.orm")
        assert "sqlalchemy.sql" in report["modules"]  # the store was read
    # the project is as the last status and next saw it: their kept reports are shown, the
    # store stays shut
    for command in ("status", "next"):
        again = loaded_after(RUN_COMMANDS.format(commands=[[command, str(where)]]))
        assert again["codes"] == [0]
        assert not ran(again["modules"], "sqlalchemy", "numpy", "crowdprefs.campaign.store")
    assert not ran(batch_open["modules"], "numpy")
    assert "crowdprefs.campaign.driver" in batch_open["modules"]  # the command did run
