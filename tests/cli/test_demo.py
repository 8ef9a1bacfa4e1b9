"""The demo as a library call: every stage runs, its files are written, a rerun resumes."""

from __future__ import annotations

import pytest

from crowdprefs.campaign.prior import CALIBRATION_KEY
from crowdprefs.campaign.project import Project
from crowdprefs.demo import DEMO_FILES, DemoOptions, run_demo
from crowdprefs.errors import InputError
from crowdprefs.io import read_lists
from crowdprefs.machine.overturn import SkipRule


def test_run_demo_runs_every_stage_and_reports_it(tmp_path):
    seen = []
    result = run_demo(
        tmp_path / "d", DemoOptions(audio=False), lambda what, done, total: seen.append(total)
    )
    assert not result.resumed
    assert (result.queries, result.candidates, result.per_query) == (11, 118, (4, 23))
    assert all(
        (tmp_path / "d" / name).exists() for key, name in DEMO_FILES.items() if key != "clips"
    )
    assert result.clips is None and not (tmp_path / "d" / "project" / "clips").exists()
    lists = read_lists(result.files["lists"])
    assert len(lists) == 118
    assert result.list_groups == int(lists.groupby("query")["group"].max().sum())
    table = result.iterations
    assert table["iteration"].tolist() == list(range(1, len(table) + 1))
    assert table["answers"].sum() == 10 * table["pairs"].sum()
    assert 0.5 < result.adr <= 1 and result.previews == table["pairs"].iloc[0]
    assert seen and set(seen) == {11, 129}  # queries closed; clips the chroma judge scored
    prior = result.prior
    assert prior is not None and prior.reason == "", prior
    # the prior's pivots split segments evenly; one campaign's pair count is noisy
    assert prior.correlation > 0.5 and prior.pairs[1] <= prior.pairs[0]
    assert prior.adr[0] == result.adr and 0.5 < prior.adr[1] <= 1
    with Project(result.files["prior_project"]) as primed:
        store = primed.store
        # the judge's verdicts showed it helps, so a later round asked its calibration first
        sort = store.pairs(columns=("iteration", "kind")).query("kind == 'sort'")
        calibrated = int(store.meta(CALIBRATION_KEY))
        assert calibrated > 1 and (sort["iteration"] == calibrated).sum() == SkipRule.min_verdicts
        machine = store.machine_verdicts() if store.machine_verdict_count() else None
        skipped = 0 if machine is None else int((machine["asked"] == 0).sum())
    assert prior.answers[1] == 10 * prior.pairs[1]  # the machine's pairs cost no answer
    assert prior.machine.startswith(
        f"machine prior: {skipped} pair(s) decided without humans at max_wrong "
        f"{SkipRule.max_wrong:g} (promised: at most that share of the campaign's"
    )
    assert result.flag_recall > 0.5
    scores = result.evaluation.set_index(["system", "measure"])
    assert scores.loc[("sys-A", "ADR@5"), "truth"] > scores.loc[("sys-E", "ADR@5"), "truth"]
    ranked = result.ranked
    assert ranked is not None and ranked.answers[1] < ranked.answers[0]
    assert set(ranked.order) == set(ranked.full_order) == set(scores.index.get_level_values(0))
    assert ranked.tau >= 0.6 and ranked.decided[1] == 10

    again = run_demo(tmp_path / "d", DemoOptions(audio=False))
    assert again.resumed and again.iterations.equals(table)


def test_run_demo_refuses_a_folder_holding_something_else(tmp_path):
    (tmp_path / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(InputError, match="holds no demo"):
        run_demo(tmp_path, DemoOptions(audio=False))
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_the_demo_options_name_no_command_line_flag():
    with pytest.raises(InputError) as error:
        DemoOptions(crowd="mturk-sandbox")
    assert "--" not in str(error.value) and "mturk-fake" in str(error.value)
