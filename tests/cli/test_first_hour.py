"""A newcomer's first hour: each command says what to do next, help explains the thing without
citing papers' sections, and the tables fit an 80-column terminal (``--json`` keeps it all)."""

from __future__ import annotations

import inspect
import json
import re
import tomllib
from dataclasses import replace
from pathlib import Path

import pytest
import typer.main
from rich.text import Text

import crowdprefs
from crowdprefs.campaign import driver
from crowdprefs.campaign.project import Project
from crowdprefs.cli.app import app
from crowdprefs.crowds import get_crowd
from crowdprefs.demo import create_demo_project, example_runs
from crowdprefs.io import read_lists, write_runs

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    """A demo project (11 queries, simulated crowd) with nothing asked yet, as the relative
    path ``project`` (paths short enough for 80 columns)."""
    create_demo_project(tmp_path).close()
    monkeypatch.chdir(tmp_path)
    return Path("project")


def one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    return lines[0]


def fits(out: str, width: int = 80) -> None:
    """Every line fits the terminal and no cell was cut short with an ellipsis."""
    assert max(map(len, out.splitlines())) <= width
    assert "…" not in out


def commands() -> dict[str, object]:
    """Every command (and group) of the application by its full name."""
    found = {}

    def walk(group, prefix: str) -> None:
        for name, command in group.commands.items():
            found[prefix + name] = command
            if hasattr(command, "commands"):
                walk(command, f"{prefix}{name} ")

    walk(typer.main.get_command(app), "")
    return found


def test_version_is_the_packages(cli):
    code, out, _ = cli("--version")
    version = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert code == 0 and out.strip() == f"crowdprefs {crowdprefs.__version__}"
    assert crowdprefs.__version__ == version["version"]


def test_steps_out_of_order_name_the_command_to_run_next(cli, project):
    code, _, err = cli("publish", project)
    assert code == 1 and one_error_line(err).endswith(f"next: crowdprefs next {project}")
    code, _, err = cli("collect", project)
    assert code == 1 and one_error_line(err).endswith(f"next: crowdprefs next {project}")
    assert cli("next", project)[0] == 0
    code, _, err = cli("collect", project, "--crowd", "mturk-fake")
    assert code == 1
    assert one_error_line(err).endswith(f"next: crowdprefs publish {project} --crowd mturk-fake")
    code, _, err = cli("aggregate", project)
    assert code == 1 and one_error_line(err).endswith(f"next: crowdprefs publish {project}")
    assert cli("publish", project)[0] == 0
    code, _, err = cli("aggregate", project)
    assert one_error_line(err).endswith(f"next: crowdprefs collect {project} --crowd simulated")
    assert cli("collect", project)[0] == 0
    code, _, err = cli("publish", project)
    assert code == 1 and one_error_line(err).endswith(f"next: crowdprefs aggregate {project}")
    code, out, _ = cli("status", project)
    assert code == 0 and f"next: crowdprefs aggregate {project}" in out


def test_export_says_which_lists_are_left_out_and_how_to_finish(cli, project):
    output = Path("lists.qrel")
    code, _, err = cli("export", project, "-o", output)
    assert code == 1 and "no list is closed yet" in one_error_line(err)
    assert "--partial" in err and f"next: crowdprefs next {project}" in err
    assert not output.exists()
    with Project(project) as opened:
        crowd = get_crowd("simulated", opened)
        while driver.status(opened)["totals"]["closed"] == 0:
            driver.run(opened, crowd, max_iterations=1)
        totals = driver.status(opened)["totals"]
    code, out, err = cli("export", project, "-o", output)
    still_open = totals["queries"] - totals["closed"]
    assert code == 0 and f"{still_open} of {totals['queries']} lists are still open" in err
    assert f"next: crowdprefs next {project}" in err
    assert read_lists(output)["query"].nunique() == totals["closed"]
    code, out, err = cli("export", project, "-o", output, "--partial")
    assert code == 0 and err == "" and read_lists(output)["query"].nunique() == 11


def test_a_partial_publish_tells_how_to_continue(cli, project):
    with Project(project) as opened:
        opened.save_settings(replace(opened.settings, budget=10.0))
    assert cli("next", project)[0] == 0
    code, _, err = cli("publish", project)
    assert code == 1 and "'crowdprefs publish" in err and "--partial'" in one_error_line(err)
    code, out, err = cli("publish", project, "--partial", columns=300)
    assert code == 0 and "published 33 pairs" in out
    assert "74 pairs of batch 1 wait for budget" in err
    assert f"Raise budget in the [crowd] section of {project / 'crowdprefs.toml'}" in err
    assert f"then run 'crowdprefs publish {project}' again" in err
    for command in ("collect", "aggregate"):
        code, _, err = cli(command, project)
        line = one_error_line(err)
        assert code == 1 and "batch 1 is partly published: 74 pairs wait for budget" in line
        assert f"raise budget in the [crowd] section of {project}" in line
        assert line.endswith(f"then: crowdprefs publish {project}")
    code, out, _ = cli("status", project)
    assert "raise budget in the [crowd] section" in out
    with Project(project) as opened:
        opened.save_settings(replace(opened.settings, budget=40.0))
    code, out, err = cli("publish", project)
    assert code == 0 and "published 74 pairs" in out
    assert cli("collect", project)[0] == 0 and cli("aggregate", project)[0] == 0


def test_status_gives_a_summary_and_lists_queries_on_request(cli, project):
    with Project(project) as opened:
        driver.run(opened, get_crowd("simulated", opened), max_iterations=2)
        queries = driver.status(opened)["queries"]
    code, out, _ = cli("status", project, columns=80)
    assert code == 0 and "11 queries" in out and "--queries" in out
    assert not any(q["query"] in out for q in queries)
    fits(out)
    code, out, _ = cli("status", project, "--queries", columns=80)
    assert code == 0 and all(q["query"] in out for q in queries)
    assert out.index("11 queries") < out.index(queries[0]["query"])
    fits(out)
    code, out, _ = cli("status", project, "--json")
    assert json.loads(out)["queries"] == queries


def test_status_folds_long_query_names_instead_of_cutting_them(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    names = [f"190.011.{i:03d}-a-long-recording-name" for i in range(3)]
    rows = "".join(f"{q},{q}-{d}\n" for q in names for d in "abc")
    Path("c.csv").write_text("query,document\n" + rows, encoding="utf-8")
    assert cli("init", "p", "--candidates", "c.csv")[0] == 0
    code, out, _ = cli("status", "p", "--queries", columns=80)
    assert code == 0
    fits(out)
    assert all(name[:11] in out for name in names)


@pytest.fixture
def finished(tmp_path, monkeypatch) -> Path:
    """A demo project whose campaign has run to the end (the current folder)."""
    with create_demo_project(tmp_path) as opened:
        driver.run(opened, get_crowd("simulated", opened))
    monkeypatch.chdir(tmp_path)
    return Path()


def test_audit_fits_80_columns_and_shows_every_column_when_wide(cli, finished):
    project, truth = finished / "project", finished / "truth.qrel"
    code, out, err = cli("audit", project, "--reference", truth, columns=80)
    assert code == 0, err
    fits(out)
    assert "agreement" in out and "§" not in out and "Table" not in out
    assert "Krippendorff" not in out and "--wide" in out
    code, out, _ = cli("audit", project, "--wide", columns=200)
    assert code == 0 and "Krippendorff α" in out and "Fleiss κ" in out
    code, out, _ = cli("audit", project, "--json", columns=80)
    assert set(json.loads(out)["iterations"][0]) >= {"alpha", "kappa", "completion_seconds"}


def test_evaluate_fits_80_columns_with_intervals_on_request(cli, finished):
    truth = finished / "truth.qrel"
    write_runs(example_runs(read_lists(truth)), finished / "runs.txt")
    args = ("evaluate", "--truth", truth, "--runs", finished / "runs.txt")
    code, out, err = cli(*args, columns=80)
    assert code == 0, err
    fits(out)
    assert re.search(r"\d\.\d{3}±\d\.\d{3}", out) and "(--wide: intervals)" in out
    code, out, _ = cli(*args, "--wide", "--test", "none", columns=200)
    assert code == 0 and re.search(r"\d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", out)


def test_the_html_report_and_the_api_docs_cite_papers_by_name(cli, finished):
    report = finished / "audit.html"
    code, _, err = cli("audit", finished / "project", "--reference", finished / "truth.qrel",
                       "--html", report)  # fmt: skip
    assert code == 0, err
    api = Path(__file__).parents[2] / "docs" / "api" / "index.md"
    for text in (report.read_text(encoding="utf-8"), api.read_text(encoding="utf-8")):
        assert re.search(r"[Ss]eeds? \d|[Ss]eed `+0\d|seed §|the seed's", text) is None
    assert "the preference-judgments paper" in api.read_text(encoding="utf-8")


def test_help_describes_instead_of_citing_sections(cli):
    for name in commands():
        code, out, _ = cli(*name.split(), "--help", columns=200)
        assert code == 0, name
        citation = re.search(r"seed \d|seed `|§|Tables? \d|eqs?\. \d", out)
        assert citation is None, (name, citation)


def test_help_texts_lose_no_bracketed_words_to_markup():
    for name, command in commands().items():
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        for text in texts:
            shown = Text.from_markup(text).plain
            assert shown == text.replace("\\[", "["), (name, text)


def test_invite_help_shows_the_web_section(cli):
    code, out, _ = cli("invite", "--help", columns=200)
    assert code == 0 and "base_url of the [web] section" in out


def test_each_command_summary_is_one_sentence_in_the_command_list():
    for name, command in commands().items():
        first = inspect.cleandoc(command.help or "").split("\n\n")[0]
        assert "\n" not in first, name


def test_a_group_without_its_command_shows_help_and_no_empty_error(cli):
    code, out, err = cli("mturk")
    assert code == 2 and "publish" in out and "error" not in err


def test_names_with_terminal_escape_sequences_are_refused_in_one_line(cli, tmp_path):
    (tmp_path / "c.csv").write_text(
        "query,document\nq\x1b[2J,a\x1b]0;owned\x07\nq\x1b[2J,b\n", encoding="utf-8"
    )
    code, _, err = cli("init", tmp_path / "p", "--candidates", tmp_path / "c.csv")
    line = one_error_line(err)
    assert code == 2 and "U+001B" in line and "\x1b" not in err
    assert not (tmp_path / "p").exists()


def test_the_escape_helper_shows_control_characters_and_escapes_markup():
    from crowdprefs.cli.console import escape

    assert escape("a\x1b[31m[b]red\x07\r\x9b") == "a\\x1b[31m\\[b]red\\x07\\r\\x9b"
    assert escape("tab\tand\nnewline é") == "tab\tand\nnewline é"


@pytest.mark.parametrize(
    ("crowd", "hint"),
    [
        ("mturk-fake", "next: crowdprefs mturk collect {project} --fake"),
        ("web", "next: the judges answer; `crowdprefs serve {project}` moves the campaign on"),
    ],
)
def test_status_names_how_the_crowd_a_batch_went_to_is_collected(cli, project, crowd, hint):
    assert cli("next", project)[0] == 0
    assert cli("publish", project, "--crowd", crowd)[0] == 0
    code, out, _ = cli("status", project)
    assert code == 0 and hint.format(project=project) in out.replace("\n", " ")
