"""What the commands used to compute themselves, now library calls: the live MTurk quote, the
workers to block from a flags file or the audit, an audit's split-by file and CSV tables."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from mturk_campaign import make_project
from typer.testing import CliRunner

from crowdprefs.campaign import driver
from crowdprefs.campaign.budget import batch_cost
from crowdprefs.cli.app import app
from crowdprefs.crowds import get_crowd
from crowdprefs.demo import create_demo_project
from crowdprefs.quality.review import read_flags


def test_the_live_quote_is_the_cost_of_what_is_not_yet_published_there(tmp_path):
    with make_project(tmp_path / "l", answers=3) as project:
        driver.next_batch(project)
        pairs = project.store.pairs(1)
        settings = project.settings
        expected = batch_cost(settings.reward, pairs["answers_wanted"].to_numpy(), settings.fees)
        quote = driver.publish_quote(project, "mturk")
        assert (quote.hits, quote.assignments) == (len(pairs), 3 * len(pairs))
        assert quote.cost == pytest.approx(expected) and quote.committed == 0
        driver.publish(project, get_crowd("simulated", project))
        assert driver.publish_quote(project, "simulated").hits == 0
    root = str(tmp_path / "l" / "project")
    result = CliRunner().invoke(app, ["mturk", "publish", root, "--live"], input="n\n")
    assert result.exit_code != 0
    shown = " ".join(result.output.split())
    assert f"LIVE MTurk: {len(pairs)} HITs, {3 * len(pairs)} assignments" in shown
    assert f"${expected:.2f} (committed so far ${expected:.2f}; no budget set)" in shown


@pytest.fixture
def answered(tmp_path) -> Path:
    """A finished demo campaign's project folder."""
    with create_demo_project(tmp_path) as project:
        driver.run(project, get_crowd("simulated", project))
    return tmp_path / "project"


def test_flags_files_and_the_audit_give_the_workers_to_block(cli, answered, tmp_path):
    code, _, err = cli("mturk", "review", answered, "--fake", "--flags", tmp_path / "none.csv")
    assert code == 2 and err.strip() == f"error: flags file not found: {tmp_path / 'none.csv'}"
    (tmp_path / "bad.csv").write_text("worker,why\nW1,slow\n", encoding="utf-8")
    code, _, err = cli("mturk", "review", answered, "--fake", "--flags", tmp_path / "bad.csv")
    assert code == 2 and "needs columns worker_id,reason" in err and err.count("\n") == 1
    (tmp_path / "empty.csv").write_text("worker_id,reason\nW1,slow\n ,x\n", encoding="utf-8")
    code, _, err = cli("mturk", "review", answered, "--fake", "--flags", tmp_path / "empty.csv")
    assert code == 2 and err.strip().endswith("empty.csv:3: empty worker_id")

    code, _, err = cli("audit", answered, "--csv-dir", tmp_path / "tables", "--json")
    assert code == 0, err
    written = pd.read_csv(tmp_path / "tables" / "review_flags.csv")
    listed = read_flags(tmp_path / "tables" / "review_flags.csv")
    assert list(listed.columns) == ["worker_id", "reason"]
    assert list(listed["worker_id"]) == list(written["worker_id"]) and len(written)


def test_the_split_by_file_is_checked_in_one_line(cli, answered, tmp_path):
    code, _, err = cli("audit", answered, "--split-by", tmp_path / "none.csv")
    assert code == 2 and "none.csv: no such file" in err and err.count("\n") == 1
    (tmp_path / "one.csv").write_text("worker_id\nW1\n", encoding="utf-8")
    code, _, err = cli("audit", answered, "--split-by", tmp_path / "one.csv")
    assert code == 2 and "need two columns, worker_id and an attribute" in err
    (tmp_path / "split.csv").write_text("worker_id,training\nW0100001,yes\n", encoding="utf-8")
    code, out, err = cli(
        "audit", answered, "--split-by", tmp_path / "split.csv", "--reference",
        answered.parent / "truth.qrel", "--json",
    )  # fmt: skip
    assert code == 0, err
    assert any("yes" in name for name in json.loads(out)["reference"])
