"""`crowdprefs prepare PROJECT`: a project's clips prepared, stored, and prepared again."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from audio_prep import PrepareOptions, decode
from crowdprefs.campaign.clips import listening_seconds, prepare_project
from crowdprefs.campaign.project import Project, init_project
from crowdprefs.cli import main
from examples.melodies import make_example


@pytest.fixture()
def project(tmp_path) -> Project:
    """Two queries of the example melodies; one candidate's audio is a URL, one is missing."""
    table = make_example(tmp_path / "example", seed=3, sizes=(3, 4))
    csv = pd.read_csv(tmp_path / "example" / "candidates.csv")
    csv.loc[1, "audio"] = "https://example.org/clip.mp3"
    csv.loc[2, "audio"] = "midi/q01/gone.mid"
    csv.to_csv(tmp_path / "example" / "candidates.csv", index=False)
    assert len(table) == 7
    with init_project(tmp_path / "project", tmp_path / "example" / "candidates.csv") as created:
        yield created


def test_clips_are_prepared_once_and_their_durations_stored(project):
    clips = prepare_project(project, PrepareOptions(keep_ms=0.0), progress=False).set_index(
        ["query", "document"]
    )
    assert "No such file" in clips.loc[("q01", "q01-v03"), "error"]
    url = clips.loc[("q01", "q01-v02")]
    assert url["source"] is None and url["audio"] == "https://example.org/clip.mp3"
    candidates = project.store.candidates().set_index("document")
    queries = project.store.queries().set_index("query")
    stored = pd.concat([candidates[["audio", "seconds"]], queries[["audio", "seconds"]]])
    prepared = stored.drop(["q01-v02", "q01-v03"])
    assert len(prepared) == 7 and prepared["seconds"].notna().all()
    for audio, seconds in prepared.itertuples(index=False):
        path = Path(audio)
        assert path.parent.parent == project.root.resolve() / "clips" and path.suffix == ".mp3"
        assert decode(path).seconds == pytest.approx(seconds, abs=0.010)
    assert stored.loc["q01-v02", "audio"] == "https://example.org/clip.mp3"
    assert np.isnan(stored.loc["q01-v03", "seconds"])


def test_a_rerun_maps_prepared_clips_back_to_their_sources(project):
    prepare_project(project, progress=False)
    first = project.store.candidates()
    manifest_path = project.root / "clips" / "manifest.csv"
    again = prepare_project(project, progress=False)  # the store now names the prepared clips
    assert again["source"].dropna().str.endswith(".mid").all()
    assert pd.read_csv(manifest_path)["cached"].sum() == 7  # 2 queries + 5 local candidates
    pd.testing.assert_frame_equal(project.store.candidates(), first)
    trimmed_less = prepare_project(project, PrepareOptions(keep_ms=300.0), progress=False)
    longer = trimmed_less.dropna(subset=["source"]).query("error == ''")
    assert (longer["seconds"].to_numpy() > 0).all()
    assert project.store.candidates()["seconds"].sum() > first["seconds"].sum()


def test_listening_time_is_the_query_plus_two_candidates_over_all_pairs():
    rng = np.random.default_rng(0)
    sizes = {"a": 2, "b": 5, "c": 9}
    candidates = pd.DataFrame(
        [(q, rng.uniform(1, 26)) for q, n in sizes.items() for _ in range(n)],
        columns=["query", "seconds"],
    )
    queries = pd.DataFrame({"query": ["a", "b", "c"], "seconds": [4.0, 6.0, 5.0]})
    table = listening_seconds(queries, candidates).set_index("query")
    for query, frame in candidates.groupby("query"):
        q = queries.set_index("query").loc[query, "seconds"]
        sums = [q + x + y for x, y in itertools.combinations(frame["seconds"], 2)]
        row = table.loc[query]
        assert row["pairs"] == len(sums)
        assert row["shortest"] == pytest.approx(min(sums))
        assert row["mean"] == pytest.approx(np.mean(sums))
        assert row["longest"] == pytest.approx(max(sums))
    candidates.loc[3, "seconds"] = np.nan  # one unknown duration: that query's times unknown
    table = listening_seconds(queries, candidates).set_index("query")
    assert table.loc["b", ["shortest", "mean", "longest"]].isna().all()
    assert table.loc["c"].notna().all()


def test_the_project_command_reports_and_fails_for_the_missing_clip(project, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["crowdprefs", "prepare", str(project.root), "-j", "1"])
    monkeypatch.setenv("COLUMNS", "400")  # no line breaks inside the messages
    with pytest.raises(SystemExit) as exit_:
        main()
    out, err = capsys.readouterr()
    assert exit_.value.code == 2
    assert "7 of 9 clips prepared" in out and "1 without a local file" in out
    assert "minimum listening time per HIT" in out
    assert "gone.mid" in err and "error: 1 of 9 clips could not be prepared" in err
