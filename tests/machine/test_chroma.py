"""The baseline chroma + DTW judge on real audio: WAV files decoded by ffmpeg and MIDI files
rendered, scored against their queries, through the library and the console script."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time
import wave
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from crowdprefs.campaign.project import read_candidates
from crowdprefs.errors import InputError
from crowdprefs.machine.chroma import KERNEL_LOCK, chroma_scores
from crowdprefs.machine.scores import check_prior
from examples.melodies import Melody, random_melody, vary

RATE = 22050


def write_wav(path: Path, melody: Melody) -> None:
    """``melody`` synthesised (a decaying sine per note) as a 16-bit mono WAV file."""
    samples = melody.to_midi().synthesize(fs=RATE)
    pcm = np.round(np.clip(samples / np.abs(samples).max(), -1, 1) * 32000).astype("<i2")
    path.parent.mkdir(parents=True, exist_ok=True)
    with wave.open(str(path), "wb") as handle:
        handle.setnchannels(1)
        handle.setsampwidth(2)
        handle.setframerate(RATE)
        handle.writeframes(pcm.tobytes())


@pytest.fixture(scope="module")
def collection(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``candidates.csv`` of two queries (WAV files): each with its melody transposed, slowed
    down, both, with three notes changed, and an unrelated melody; one clip shared by both."""
    root = tmp_path_factory.mktemp("chroma")
    rng = np.random.default_rng(3)
    rows = []
    for q in ("q1", "q2"):
        query = replace(random_melody(rng, 12), lead=0.5)
        slower = replace(query, seconds=tuple(s * 1.2 for s in query.seconds))
        variants = {
            "transposed": vary(query, rng, transposition=5).melody,
            "slower": slower,
            "slower-transposed": vary(slower, rng, transposition=-3).melody,
            "changed": vary(query, rng, changed=3).melody,
            "unrelated": random_melody(rng, 12, tonic=55),
        }
        write_wav(root / q / "query.wav", query)
        for name, melody in variants.items():
            write_wav(root / q / f"{name}.wav", melody)
            rows.append((q, f"{q}-{name}", f"{q}/{name}.wav", f"{q}/query.wav"))
    rows.append(("q2", "shared", "q1/transposed.wav", "q2/query.wav"))
    pd.DataFrame(rows, columns=["query", "document", "audio", "query_audio"]).to_csv(
        root / "candidates.csv", index=False
    )
    return root / "candidates.csv"


def test_variations_of_the_query_score_above_an_unrelated_melody(collection: Path) -> None:
    pytest.importorskip("librosa")
    candidates = read_candidates(collection)
    reports: list[tuple[int, int]] = []
    scores = chroma_scores(candidates, on_clip=lambda done, total: reports.append((done, total)))
    clips = pd.unique(candidates[["audio", "query_audio"]].to_numpy().ravel()).size
    assert reports == [(i, clips) for i in range(1, clips + 1)]  # each clip loaded once
    check_prior(scores, candidates, "chroma")  # every candidate exactly once, none other
    assert list(zip(scores["query"], scores["document"], strict=True)) == list(
        zip(candidates["query"], candidates["document"], strict=True)
    )
    assert np.isfinite(scores["score"]).all()
    for q in ("q1", "q2"):
        score = scores[scores["query"] == q].set_index("document")["score"]
        unrelated = score[f"{q}-unrelated"]
        for name in ("transposed", "slower", "slower-transposed", "changed"):
            assert score[f"{q}-{name}"] > unrelated, (q, name, score.to_dict())
        assert score[f"{q}-transposed"] > score[f"{q}-changed"]  # a key change costs nothing
        assert score[f"{q}-transposed"] > -0.05


def test_midi_files_score_as_their_rendered_audio(tmp_path: Path) -> None:
    pytest.importorskip("librosa")
    rng = np.random.default_rng(8)
    query = random_melody(rng, 10)
    melodies = {"query": query, "a": vary(query, rng, 2, changed=2).melody}
    melodies["b"] = random_melody(rng, 10)
    for name, melody in melodies.items():
        melody.write(tmp_path / f"{name}.mid")
        write_wav(tmp_path / f"{name}.wav", melody)
    frames = {
        suffix: pd.DataFrame(
            {
                "query": "q",
                "document": ["a", "b"],
                "audio": [str(tmp_path / f"{d}.{suffix}") for d in ("a", "b")],
                "query_audio": str(tmp_path / f"query.{suffix}"),
            }
        )
        for suffix in ("mid", "wav")
    }
    midi, audio = (chroma_scores(frames[s])["score"].to_numpy() for s in ("mid", "wav"))
    np.testing.assert_allclose(midi, audio, atol=0.02)
    assert midi[0] > midi[1]


def test_a_clip_that_is_not_audio_is_named_in_one_line(tmp_path: Path) -> None:
    pytest.importorskip("librosa")
    rng = np.random.default_rng(1)
    for name in ("query", "a"):
        write_wav(tmp_path / f"{name}.wav", random_melody(rng, 8))
    (tmp_path / "b.mp3").write_bytes(rng.bytes(4000))
    frame = pd.DataFrame(
        {
            "query": "q",
            "document": ["a", "b"],
            "audio": [str(tmp_path / "a.wav"), str(tmp_path / "b.mp3")],
            "query_audio": str(tmp_path / "query.wav"),
        }
    )
    with pytest.raises(InputError, match=r"cannot decode .*b\.mp3: ") as caught:
        chroma_scores(frame)
    assert "\n" not in str(caught.value)
    missing = frame.assign(audio=[str(tmp_path / "a.wav"), str(tmp_path / "gone.wav")])
    with pytest.raises(InputError, match=r"cannot decode .*gone\.wav: no such file"):
        chroma_scores(missing)


def test_without_librosa_the_judge_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "librosa", None)  # import librosa raises ImportError
    frame = pd.DataFrame({"query": "q", "document": ["a"], "audio": "a.wav", "query_audio": "q"})
    with pytest.raises(InputError, match=r"^the chroma judge needs librosa: pip install "):
        chroma_scores(frame)


def test_the_command_writes_the_scores_and_refuses_bad_inputs_in_one_line(
    collection: Path, tmp_path: Path
) -> None:
    pytest.importorskip("librosa")
    from console_script import crowdprefs

    output = tmp_path / "scores.csv"
    done = crowdprefs("prior", "chroma", collection, "--output", output, "--seconds", "20")
    assert done.returncode == 0, done.stderr
    assert "11 candidates of 2 queries scored in " in done.stdout
    scores = pd.read_csv(output)
    assert list(scores.columns) == ["query", "document", "score"]
    check_prior(scores, read_candidates(collection), str(output))

    before = collection.read_bytes()
    itself = crowdprefs("prior", "chroma", collection, "-o", collection)
    assert itself.returncode != 0
    assert itself.stderr.strip().splitlines() == [
        f"error: cannot write {collection}: it is the command's input CANDIDATES {collection}; "
        "choose another path"
    ]
    assert collection.read_bytes() == before

    silent = tmp_path / "silent.csv"
    silent.write_text("query,document\nq1,a\nq1,b\n")
    refused = crowdprefs("prior", "chroma", silent, "-o", tmp_path / "none.csv")
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "error: the chroma judge needs audio: query 'q1', document 'a' has no clip (audio)"
    ]
    assert "Traceback" not in refused.stderr + itself.stderr
    assert not (tmp_path / "none.csv").exists()


@pytest.mark.slow
def test_the_compiled_kernels_are_built_by_one_process_at_a_time(
    collection: Path, tmp_path: Path
) -> None:
    """numba stores each compiled kernel as two files, and processes that build one at once can
    leave a mixed pair that crashes every later run: while another process holds the kernel
    lock, the command writes no kernel and scores nothing; once it is free the command builds
    them into an empty cache and writes the scores."""
    pytest.importorskip("librosa")
    from console_script import script

    cache, output = tmp_path / "numba-cache", tmp_path / "scores.csv"
    cache.mkdir()
    command = [script(), "prior", "chroma", str(collection), "-o", str(output), "--seconds", "5"]
    fd = os.open(KERNEL_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        process = subprocess.Popen(
            command,
            env={**os.environ, "NUMBA_CACHE_DIR": str(cache)},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(150):  # 15 s: an unlocked build writes its first kernel within them
            time.sleep(0.1)
            assert process.poll() is None, process.communicate()
            assert not any(cache.rglob("*.nbc")), "a kernel was written under another's lock"
    finally:
        os.close(fd)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    assert "scored in" in out
    assert any(cache.rglob("*.nbc"))
    check_prior(pd.read_csv(output), read_candidates(collection), str(output))
