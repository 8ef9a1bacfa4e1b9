"""A project's clips: probed at init (missing or non-audio files refused), then prepared
(`crowdprefs prepare PROJECT`), stored, and prepared again."""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.io.wavfile

from audio_prep import PrepareOptions, decode
from crowdprefs.campaign.clips import listening_seconds
from crowdprefs.campaign.project import Project, init_project
from crowdprefs.campaign.project_state import prepare_project
from crowdprefs.cli import main
from crowdprefs.errors import InputError
from examples.melodies import make_example


@pytest.fixture()
def project(tmp_path) -> Project:
    """Two queries of the example melodies; one candidate's audio is a URL, one has gone
    since init (which refuses missing clips)."""
    table = make_example(tmp_path / "example", seed=3, sizes=(3, 4))
    csv = pd.read_csv(tmp_path / "example" / "candidates.csv")
    gone = tmp_path / "example" / "midi" / "q01" / "gone.mid"
    shutil.copyfile(tmp_path / "example" / csv.loc[2, "audio"], gone)
    csv.loc[1, "audio"] = "https://example.org/clip.mp3"
    csv.loc[2, "audio"] = "midi/q01/gone.mid"
    csv.to_csv(tmp_path / "example" / "candidates.csv", index=False)
    assert len(table) == 7
    with init_project(tmp_path / "project", tmp_path / "example" / "candidates.csv") as created:
        gone.unlink()
        yield created


def write_tone(path: Path, seconds: float = 0.5, rate: int = 8000) -> Path:
    """A real WAV: a 440 Hz tone."""
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(round(seconds * rate)) / rate
    scipy.io.wavfile.write(path, rate, (0.3 * np.sin(2 * np.pi * 440 * t) * 32767).astype("<i2"))
    return path


@pytest.fixture()
def data(tmp_path) -> Path:
    """A candidates folder with a real WAV and a copied system file named like a clip, and a
    real WAV and a text file outside it."""
    write_tone(tmp_path / "data" / "clips" / "tone.wav")
    (tmp_path / "data" / "clips" / "passwd.mp3").write_text("root:x:0:0:root:/root:/bin/sh\n" * 9)
    write_tone(tmp_path / "elsewhere" / "outside.wav")
    (tmp_path / "elsewhere" / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\n" * 9)
    return tmp_path / "data"


def write_candidates(folder: Path, third: str) -> Path:
    """Two queries of two candidates: a real clip, a URL, ``third`` as the audio of q2's first
    candidate (line 4), no audio for the last."""
    rows = ["q1,a,clips/tone.wav", "q1,b,https://example.org/b.mp3", f"q2,c,{third}", "q2,d,"]
    path = folder / "c.csv"
    path.write_text("query,document,audio\n" + "\n".join(rows) + "\n")
    return path


def test_init_accepts_audio_urls_and_audio_outside_the_csv_folder(data):
    with init_project(data.parent / "p", write_candidates(data, "../elsewhere/outside.wav")) as p:
        audio = p.store.candidates().set_index("document")["audio"]
    assert audio["a"] == str(data / "clips" / "tone.wav")
    assert audio["b"] == "https://example.org/b.mp3"  # URLs are not fetched
    assert audio["c"] == str(data.parent / "elsewhere" / "outside.wav")


@pytest.mark.parametrize(
    ("third", "reason"),
    [
        ("clips/passwd.mp3", "ffmpeg cannot read it as audio (Invalid data found"),
        ("../elsewhere/passwd", "ffmpeg cannot read it as audio"),
        ("clips/gone.wav", "no such file"),
        ("clips", "not a file"),
    ],
)
def test_init_refuses_a_missing_or_non_audio_clip_naming_its_row(data, third, reason):
    csv = write_candidates(data, third)
    with pytest.raises(InputError) as error:
        init_project(data.parent / "p", csv)
    where = f"{csv}:4: query 'q2', document 'c': audio '{(data / third).resolve()}'"
    assert str(error.value).startswith(f"{where} is not a clip: {reason}")
    assert "\n" not in str(error.value)
    assert sorted(p.name for p in data.parent.iterdir()) == ["data", "elsewhere"]


def test_init_names_every_refused_file_once_and_query_clips_too(data):
    frame = pd.DataFrame(
        {
            "query": ["q1", "q1", "q2", "q2"],
            "document": ["a", "b", "c", "d"],
            "audio": [str(data / "clips" / "tone.wav")] * 3 + [str(data / "clips" / "x.wav")],
            "query_audio": [str(data / "clips" / "tone.wav")] * 2 + [str(data / "clips")] * 2,
        }
    )
    with pytest.raises(InputError) as error:
        init_project(data.parent / "p", frame)
    assert str(error.value) == (
        f"row 3: query 'q2', document 'c': query audio '{data / 'clips'}' is not a clip: "
        "not a file (and 1 more file)"
    )


def test_the_init_command_refuses_a_copied_system_file_in_one_line(data):
    write_candidates(data, "clips/passwd.mp3")
    run = subprocess.run(
        [sys.executable, "-c", "from crowdprefs.cli import main; main()"]
        + ["init", "p", "--candidates", "c.csv"],
        cwd=data,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [line for line in run.stderr.splitlines() if line.strip()]
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert len(lines) == 1 and "c.csv:4: query 'q2', document 'c': audio" in lines[0]
    assert "passwd.mp3' is not a clip: ffmpeg cannot read it as audio" in lines[0]
    assert not (data / "p").exists()


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
