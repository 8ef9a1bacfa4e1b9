"""prepare_clips and `crowdprefs audio prepare`: mixed folders, bad files, cache, atomicity."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import numpy as np
import pandas as pd
import pretty_midi
import pytest
import scipy.io.wavfile

from audio_prep import (
    MANIFEST_NAME,
    AudioError,
    ClipError,
    PrepareOptions,
    clip_seconds,
    decode,
    integrated_loudness,
    prepare_clips,
    probe,
    read_manifest,
)
from audio_prep.codec import FFMPEG
from crowdprefs.cli import main
from examples.melodies import make_example

RATE = 44100
GOOD = ["mel.mid", "sub/deep/tone.flac", "song.mp3", "sub/tone.ogg", "tone.wav"]
BAD = {
    "bad.mp3": "Invalid data",
    "empty.wav": "empty",
    "nonotes.mid": "no notes",
    "notes.txt": "unsupported file type '.txt'",
    "silent.wav": "silent throughout",
}


def burst(lead: float, body: float, trail: float, freq: float = 440.0) -> np.ndarray:
    t = np.arange(round(body * RATE)) / RATE
    x = np.concatenate(
        [
            np.zeros(round(lead * RATE)),
            0.4 * np.sin(2 * np.pi * freq * t),
            np.zeros(round(trail * RATE)),
        ]
    )
    return np.stack([x, x], axis=1).astype(np.float32)


def write_melody(path, start: float) -> None:
    midi = pretty_midi.PrettyMIDI()
    piano = pretty_midi.Instrument(program=0)
    for i, pitch in enumerate([60, 62, 64, 65, 67]):
        piano.notes.append(pretty_midi.Note(90, pitch, start + 0.2 * i, start + 0.2 * (i + 1)))
    midi.instruments.append(piano)
    midi.write(str(path))


@pytest.fixture()
def sources(tmp_path):
    """A folder with every supported kind of input (1.3 s of leading silence, 1.0 s of tone,
    0.7 s of trailing silence), and every kind of bad input."""
    src = tmp_path / "src"
    (src / "sub" / "deep").mkdir(parents=True)
    scipy.io.wavfile.write(src / "tone.wav", RATE, burst(1.3, 1.0, 0.7))
    for name in ["sub/deep/tone.flac", "sub/tone.ogg", "song.mp3"]:
        subprocess.run(
            [FFMPEG, "-v", "error", "-i", str(src / "tone.wav"), str(src / name)], check=True
        )
    write_melody(src / "mel.mid", start=1.5)
    (src / "empty.wav").write_bytes(b"")
    (src / "bad.mp3").write_bytes(b"\xff\xfb garbage " * 40)
    pretty_midi.PrettyMIDI().write(str(src / "nonotes.mid"))
    (src / "notes.txt").write_text("not audio")
    scipy.io.wavfile.write(src / "silent.wav", RATE, np.zeros((RATE, 2), np.int16))
    (src / ".hidden.wav").write_bytes(b"ignored")
    return src


def test_every_good_file_is_prepared_and_every_bad_one_listed(sources, tmp_path):
    dst = tmp_path / "dst"
    table = prepare_clips(sources, dst, PrepareOptions(keep_ms=100.0))
    assert list(table["source"]) == sorted(GOOD + list(BAD))
    failed = table.set_index("source").loc[list(BAD)]
    for name, reason in BAD.items():
        assert reason in failed.loc[name, "error"], name
        assert failed.loc[name, "output"] == ""
    ok = table[table["error"] == ""].set_index("source")
    assert sorted(ok.index) == sorted(GOOD)
    # base names kept, sub-folders mirrored, the manifest written beside the outputs
    assert ok.loc["sub/deep/tone.flac", "output"] == "sub/deep/tone.mp3"
    pd.testing.assert_frame_equal(read_manifest(dst / MANIFEST_NAME), table)
    for name in ["tone.wav", "sub/deep/tone.flac", "sub/tone.ogg", "song.mp3"]:
        row = ok.loc[name]
        assert row["seconds_before"] == pytest.approx(3.0, abs=0.03)
        assert row["seconds_after"] == pytest.approx(1.2, abs=0.010)  # 1.0 s + 2 x 100 ms
        assert row["loudness_lufs"] == pytest.approx(-23.0) and row["peak_dbfs"] <= -1.0
        assert len(row["sha256"]) == 64
    mel = ok.loc["mel.mid"]  # 1.5 s of leading rest, five 0.2 s notes, nothing after
    assert mel["seconds_before"] == pytest.approx(2.5)
    assert mel["seconds_after"] == pytest.approx(1.1, abs=0.010)
    for output, seconds in zip(ok["output"], ok["seconds_after"], strict=True):
        decoded = decode(dst / output)
        assert decoded.seconds == pytest.approx(seconds, abs=0.010)
        assert integrated_loudness(decoded.samples, decoded.rate) == pytest.approx(-23.0, abs=0.6)
    leftovers = [p for p in dst.rglob("*") if p.name.startswith(".") or p.suffix == ".tmp"]
    assert leftovers == []


def test_a_rerun_only_processes_what_changed(sources, tmp_path):
    dst = tmp_path / "dst"
    first = prepare_clips(sources, dst).set_index("source")
    stamps = {p: p.stat().st_mtime_ns for p in dst.rglob("*.mp3")}
    again = prepare_clips(sources, dst).set_index("source")
    ok = again["error"] == ""
    assert again.loc[ok, "cached"].all() and not again.loc[~ok, "cached"].any()
    assert {p: p.stat().st_mtime_ns for p in dst.rglob("*.mp3")} == stamps
    # new content in one file, one output deleted: exactly those two are made again
    scipy.io.wavfile.write(sources / "tone.wav", RATE, burst(0.5, 2.0, 0.5))
    (dst / "sub" / "tone.mp3").unlink()
    third = prepare_clips(sources, dst).set_index("source")
    remade = third.index[(third["error"] == "") & ~third["cached"]]
    assert sorted(remade) == ["sub/tone.ogg", "tone.wav"]
    assert third.loc["tone.wav", "seconds_after"] == pytest.approx(2.2, abs=0.010)
    assert third.loc["tone.wav", "sha256"] != first.loc["tone.wav", "sha256"]
    # other settings: everything is made again
    fourth = prepare_clips(sources, dst, PrepareOptions(keep_ms=0.0))
    assert not fourth["cached"].any()


def test_progress_is_reported_to_the_callback_before_and_after_each_clip(sources, tmp_path):
    calls: list[tuple[int, int]] = []
    prepare_clips(sources, tmp_path / "dst", jobs=2, progress=lambda *c: calls.append(c))
    todo = len(GOOD) + 3  # bad.mp3, nonotes.mid and silent.wav fail while processed
    assert calls == [(done, todo) for done in range(todo + 1)]
    calls.clear()
    prepare_clips(sources, tmp_path / "dst", progress=lambda *c: calls.append(c))
    assert calls == [(0, 3), (1, 3), (2, 3), (3, 3)]  # only those three are tried again


def test_audio_prep_stands_alone():
    code = "import sys, audio_prep; print([m for m in sys.modules if m.startswith('crowdprefs')])"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]"


def test_the_cli_starts_without_loading_audio_prep():
    heavy = ("audio_prep", "pydub", "imageio_ffmpeg", "pretty_midi", "crowdprefs.campaign.clips")
    code = (
        "import atexit, sys; from crowdprefs.cli import main\n"
        f"atexit.register(lambda: print([m for m in sys.modules if m.startswith({heavy})]))\n"
        "sys.argv = ['crowdprefs', 'audio', 'prepare', '--help']; main()"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0 and "Prepare every clip of SRC into DST" in run.stdout
    assert run.stdout.strip().splitlines()[-1] == "[]"


def test_probe_gives_the_duration_of_audio_and_midi(sources):
    for name in GOOD:  # 3 s of audio; the melody's five notes end at 2.5 s
        assert probe(sources / name) == pytest.approx(2.5 if name == "mel.mid" else 3.0), name
    assert probe(sources / "silent.wav") == pytest.approx(1.0)  # silent, but audio


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("passwd.mp3", "ffmpeg cannot read it as audio (Invalid data found"),
        ("notes.txt", "ffmpeg cannot read it as audio"),
        ("bad.mp3", "ffmpeg cannot read it as audio"),
        ("noise.mp3", "ffmpeg cannot decode its audio"),  # opened as MP3, no frame decodes
        ("picture.png", "ffmpeg finds no audio stream in it"),
        ("empty.wav", "the file is empty"),
        ("nonotes.mid", "the MIDI file has nothing to play"),
        ("text.mid", "not a readable MIDI file"),
        ("gone.wav", "no such file"),
        ("sub", "not a file"),
    ],
)
def test_probe_refuses_what_is_not_a_clip_with_the_reason(sources, name, reason):
    (sources / "passwd.mp3").write_text("root:x:0:0:root:/root:/bin/bash\n" * 20)
    (sources / "noise.mp3").write_bytes(np.random.default_rng(1).bytes(100_000))
    (sources / "text.mid").write_text("MThd but not MIDI")
    subprocess.run(
        [FFMPEG, "-v", "error", "-f", "lavfi", "-i", "testsrc=d=1", "-frames:v", "1"]
        + [str(sources / "picture.png")],
        check=True,
    )
    with pytest.raises(ClipError) as error:
        probe(sources / name)
    assert str(error.value).startswith(reason) and "\n" not in str(error.value)


def test_two_jobs_give_the_same_manifest_as_one(sources, tmp_path):
    one = prepare_clips(sources, tmp_path / "one", jobs=1)
    two = prepare_clips(sources, tmp_path / "two", jobs=2)
    pd.testing.assert_frame_equal(one, two)


def test_a_list_of_files_keeps_their_layout_and_reports_missing_ones(sources, tmp_path):
    files = [sources / "tone.wav", sources / "sub" / "tone.ogg", sources / "gone.wav"]
    table = prepare_clips(files, tmp_path / "dst", PrepareOptions(format="ogg"))
    rows = table.set_index("source")  # absolute names; outputs mirror the common folder
    assert rows.loc[str(sources / "sub" / "tone.ogg"), "output"] == "sub/tone.ogg"
    assert rows.loc[str(sources / "tone.wav"), "output"] == "tone.ogg"
    assert "No such file" in rows.loc[str(sources / "gone.wav"), "error"]


def test_two_sources_with_one_output_name_are_not_both_written(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    scipy.io.wavfile.write(src / "a.wav", RATE, burst(0.1, 0.5, 0.1))
    subprocess.run(
        [FFMPEG, "-v", "error", "-i", str(src / "a.wav"), str(src / "a.flac")], check=True
    )
    rows = prepare_clips(src, tmp_path / "dst").set_index("source")
    assert rows.loc["a.flac", "output"] == "a.mp3"
    assert "a.mp3 is already made from a.flac" in rows.loc["a.wav", "error"]


def test_sources_inside_the_destination_are_not_inputs(sources):
    table = prepare_clips(sources, sources / "prepared")
    again = prepare_clips(sources, sources / "prepared")
    assert len(table) == len(again) and not again["source"].str.startswith("prepared").any()


@pytest.mark.parametrize(
    "options",
    [
        PrepareOptions(format="wma"),
        PrepareOptions(threshold_db=3.0),
        PrepareOptions(max_seconds=0.0),
        PrepareOptions(loudness=5.0),
        PrepareOptions(sample_rate=100),
        PrepareOptions(soundfont="missing.sf2"),
    ],
)
def test_bad_options_are_one_clear_error(sources, tmp_path, options):
    with pytest.raises(AudioError):
        prepare_clips(sources, tmp_path / "dst", options)


def test_missing_or_empty_sources_are_one_clear_error(tmp_path):
    with pytest.raises(AudioError, match="no such file or folder"):
        prepare_clips(tmp_path / "nowhere", tmp_path / "dst")
    (tmp_path / "empty").mkdir()
    with pytest.raises(AudioError, match="holds no files"):
        prepare_clips(tmp_path / "empty", tmp_path / "dst")


def test_excerpts_resampling_and_mono(tmp_path):
    src = tmp_path / "long.wav"
    scipy.io.wavfile.write(src, 48000, np.tile(burst(0.0, 3.0, 0.0)[: 3 * RATE], (2, 1)))
    options = PrepareOptions(max_seconds=2.5, sample_rate=22050, mono=True, format="m4a")
    row = prepare_clips(src, tmp_path / "dst", options).iloc[0]
    out = decode(tmp_path / "dst" / row["output"])
    assert out.rate == 22050 and out.samples.shape[1] == 1
    assert out.seconds == pytest.approx(2.5, abs=0.010) == clip_seconds(tmp_path / "dst/long.m4a")


def run_cli(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """Run the console-script entry point in-process: exit code, stdout, stderr."""
    monkeypatch.setattr(sys, "argv", ["crowdprefs", *args])
    with pytest.raises(SystemExit) as exit_:
        main()
    out, err = capsys.readouterr()
    return exit_.value.code, out, err


def test_the_command_lists_failures_and_exits_non_zero(sources, tmp_path, monkeypatch, capsys):
    dst = str(tmp_path / "dst")
    code, out, err = run_cli(monkeypatch, capsys, "audio", "prepare", str(sources), dst, "-j", "1")
    assert code == 2
    assert "5 of 10 clips ready" in out
    for name in BAD:
        assert name in err
    assert "Traceback" not in err
    assert "error: 5 of 10 files could not be" in err
    for name in BAD:
        (sources / name).unlink()
    code, out, err = run_cli(monkeypatch, capsys, "audio", "prepare", str(sources), dst)
    assert code == 0, err
    assert "5 of 5 clips ready" in out and "5 unchanged" in out


def test_the_command_refuses_bad_options_in_one_line(sources, tmp_path, monkeypatch, capsys):
    args = ["audio", "prepare", str(sources), str(tmp_path / "dst"), "--threshold-db", "6"]
    code, _, err = run_cli(monkeypatch, capsys, *args)
    assert code == 2 and err.strip().startswith("error: threshold 6.0 dB must be below 0")


def test_a_killed_run_leaves_only_whole_outputs_and_resumes(tmp_path):
    make_example(tmp_path / "example", seed=5, sizes=(6, 6))
    src, dst = tmp_path / "example" / "midi", tmp_path / "dst"
    code = (  # a checkpoint after every clip, so the kill lands mid-run on any machine
        "import audio_prep as a; a.prepare.CHECKPOINT_SECONDS = 0.0; "
        f"a.prepare_clips({str(src)!r}, {str(dst)!r})"
    )
    run = subprocess.Popen([sys.executable, "-c", code])
    deadline = time.monotonic() + 120
    while run.poll() is None and time.monotonic() < deadline:
        if (dst / MANIFEST_NAME).exists():  # saved during the run, with the first outputs
            break
        time.sleep(0.02)
    run.send_signal(signal.SIGKILL)
    run.wait()
    saved = read_manifest(dst / MANIFEST_NAME)
    assert 0 < len(saved) < 14
    for output in dst.rglob("*.mp3"):  # every visible output is whole
        assert decode(output).seconds > 1.0
    table = prepare_clips(src, dst)
    assert (table["error"] == "").all() and len(table) == 14
    assert table["cached"].sum() >= len(saved)  # what was finished is not made again
    assert sorted(str(p.relative_to(dst)) for p in dst.rglob("*.mp3")) == sorted(table["output"])
