"""The baseline machine judge: chroma features aligned by dynamic time warping.

A well-known similarity from music information retrieval, given so that a campaign can try a
machine prior without a model of its own; it is a baseline, never a ground truth. Each clip
becomes a chromagram, the energy of each of the 12 pitch classes per frame (Müller,
*Fundamentals of Music Processing*, ch. 3), which keeps the melody and harmony and drops
timbre and octave. Two chromagrams are aligned by dynamic time warping (DTW, ch. 3 and 7), which
absorbs changes of tempo; the frames are compared by the cosine distance, and the cost of the
best alignment is divided by the length of its path. The candidate's chromagram is also rotated
by each of the 12 semitone shifts and the cheapest alignment kept, so a melody in another key
costs what it costs in the query's (the transposition-invariant chroma alignment of cover-song
identification, Ellis & Poliner 2007). The score is minus that cost: higher = more similar.

Clips are decoded by the ``imageio-ffmpeg`` binary (no system package) or, for MIDI files,
rendered by :mod:`audio_prep`; librosa (``pip install 'crowdprefs[judge]'``) computes the
chromagrams and the alignments.
"""

from __future__ import annotations

import fcntl
import functools
import math
import os
import subprocess
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from crowdprefs.errors import InputError

if TYPE_CHECKING:
    from types import ModuleType

#: Sample rate every clip is decoded or rendered at (Hz).
SAMPLE_RATE = 22050
#: Samples between chroma frames (about 93 ms at :data:`SAMPLE_RATE`: a 30 s clip has 323).
HOP_LENGTH = 2048
#: Threshold of the silence trimmed at both ends of a clip, relative to its peak (dB).
SILENCE_DB = -50.0

#: The longest start of a clip the judge scores (ten minutes): the dynamic time warping's cost
#: matrix grows with the square of the clip's frames.
MAX_SECONDS = 600
#: Seconds a URL's server may stay silent before its clip counts as unreadable.
URL_TIMEOUT = 30
#: The lock every crowdprefs process of this user holds while it loads or builds librosa's
#: compiled kernels (:func:`_librosa`).
KERNEL_LOCK = Path(tempfile.gettempdir()) / f"crowdprefs-numba-{os.getuid()}.lock"
#: What the judge says when librosa is missing.
INSTALL = "the chroma judge needs librosa: pip install 'crowdprefs[judge]'"
#: ``on_clip(done, total)``: called as each distinct clip has its chromagram.
OnClip = Callable[[int, int], None]


def _librosa() -> ModuleType:
    """librosa with its compiled kernels ready, or one line saying how to install it."""
    try:
        import librosa
    except ImportError:
        raise InputError(INSTALL) from None
    _load_kernels(librosa)
    return librosa


@functools.cache
def _load_kernels(librosa: ModuleType) -> None:
    """Load, or the first time build, every compiled kernel the judge uses, once per process
    and under :data:`KERNEL_LOCK`. librosa's kernels are compiled by numba, which keeps them on
    disk as two files each; two processes building one at once can leave a mixed pair that
    crashes every later run (numba issue 10128)."""
    fd = os.open(KERNEL_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # blocks while another process builds the kernels
        tone = np.sin(np.arange(SAMPLE_RATE, dtype=np.float32) * np.float32(0.1))
        features = _chromagram(librosa, tone)
        _alignment_cost(librosa, features, features)  # the same types as every real call
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _decode(source: str, seconds: float) -> np.ndarray:
    """The first ``seconds`` of an audio file or URL, mono float32 at :data:`SAMPLE_RATE`,
    decoded by ffmpeg (:class:`~audio_prep.errors.ClipError` with its reason)."""
    from audio_prep.codec import FFMPEG
    from audio_prep.errors import ClipError

    command = [FFMPEG, "-nostdin", "-hide_banner", "-v", "error", "-t", f"{seconds:.3f}"]
    if "://" in source:
        command += ["-rw_timeout", str(URL_TIMEOUT * 1_000_000)]  # microseconds
    else:
        if not Path(source).is_file():
            raise ClipError("no such file" if not Path(source).exists() else "not a file")
        source = f"file:{Path(source).resolve()}"  # never read as another ffmpeg protocol
    command += ["-i", source, "-map", "0:a:0", "-vn", "-ac", "1", "-ar", str(SAMPLE_RATE)]
    result = subprocess.run([*command, "-f", "f32le", "-"], capture_output=True, check=False)
    if result.returncode != 0:
        lines = result.stderr.decode(errors="replace").strip().splitlines()
        raise ClipError(lines[-1].strip() if lines else "ffmpeg failed without a message")
    return np.frombuffer(result.stdout, dtype="<f4")


def load_clip(source: str, seconds: float = 30.0) -> np.ndarray:
    """The audible part of the first ``seconds`` of a clip (audio file, URL or MIDI file), mono
    float32 at :data:`SAMPLE_RATE`, leading and trailing silence trimmed as the HITs' clips are.
    One line naming the file when it cannot be read, decoded or is silent throughout."""
    from audio_prep.errors import ClipError
    from audio_prep.midi import MIDI_SUFFIXES, render_midi
    from audio_prep.trim import trim_silence

    try:
        if "://" not in source and Path(source).suffix.lower() in MIDI_SUFFIXES:
            samples = render_midi(Path(source), SAMPLE_RATE).samples[:, 0]
        else:
            samples = _decode(source, seconds)
    except ClipError as error:
        raise InputError(f"the chroma judge cannot decode {source}: {error}") from None
    audible = trim_silence(samples[: round(seconds * SAMPLE_RATE), None], SAMPLE_RATE, SILENCE_DB)
    if audible is None:
        raise InputError(f"the chroma judge cannot score {source}: it is silent throughout")
    return np.ascontiguousarray(audible[:, 0], dtype=np.float32)


def chromagram(samples: np.ndarray) -> np.ndarray:
    """Chroma frames ``(12, frames)`` of mono samples at :data:`SAMPLE_RATE`, each scaled to
    unit length (a silent frame stays zero: its cosine distance to any frame is 1)."""
    return _chromagram(_librosa(), samples)


def _chromagram(librosa: ModuleType, samples: np.ndarray) -> np.ndarray:
    with warnings.catch_warnings():  # short clips: "n_fft too large" in the lowest octaves
        warnings.simplefilter("ignore", UserWarning)
        chroma = librosa.feature.chroma_cqt(y=samples, sr=SAMPLE_RATE, hop_length=HOP_LENGTH)
    norms = np.linalg.norm(chroma, axis=0, keepdims=True)
    return (chroma / np.where(norms > 1e-9, norms, 1.0)).astype(np.float64)


def alignment_cost(query: np.ndarray, candidate: np.ndarray) -> float:
    """The path-length-normalised DTW cost between two unit chromagrams, with cosine distances,
    minimised over the 12 rotations of the candidate's pitch classes (0: identical)."""
    return _alignment_cost(_librosa(), query, candidate)


def _alignment_cost(librosa: ModuleType, query: np.ndarray, candidate: np.ndarray) -> float:
    best = np.inf
    for shift in range(12):  # one cost matrix at a time: long clips make large ones
        cost = np.maximum(1.0 - query.T @ np.roll(candidate, shift, axis=0), 0.0)  # cosine
        total, path = librosa.sequence.dtw(C=cost, backtrack=True)
        best = min(best, float(total[-1, -1]) / len(path))
    return best


def _missing_audio(candidates: pd.DataFrame) -> None:
    """One line naming the first candidate whose clip or query clip is not given."""
    for column, what in (("audio", "clip (audio)"), ("query_audio", "query clip (query_audio)")):
        values = candidates[column] if column in candidates else pd.Series(None, candidates.index)
        empty = values.isna() | (values.astype(str).str.strip() == "")
        if empty.any():
            row = candidates[empty.to_numpy()].iloc[0]
            raise InputError(
                f"the chroma judge needs audio: query {row['query']!r}, document "
                f"{row['document']!r} has no {what}"
            )


def chroma_scores(
    candidates: pd.DataFrame, *, seconds: float = 30.0, on_clip: OnClip | None = None
) -> pd.DataFrame:
    """``query, document, score`` for every row of ``candidates`` (as
    :func:`~crowdprefs.campaign.project.read_candidates` returns them: absolute paths or URLs in
    ``audio`` and ``query_audio``), in their order: minus the chroma DTW cost of the candidate's
    clip against its query's (:func:`alignment_cost`), higher = more similar. Each distinct clip
    is loaded once (its first ``seconds``) and dropped once its last pair is scored;
    ``on_clip(done, total)`` follows the clips. One line (:class:`InputError`) when librosa is
    missing, a clip is not given, or a clip cannot be decoded."""
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_SECONDS):
        raise InputError(
            f"the chroma judge needs a number of seconds in (0, {MAX_SECONDS}] (the alignment's "
            f"cost grows with its square), got {seconds:g}"
        )
    _librosa()
    _missing_audio(candidates)
    pairs = list(zip(candidates["query_audio"], candidates["audio"], strict=True))
    uses = Counter(clip for pair in pairs for clip in pair)
    total, done, features, scores = len(uses), 0, {}, np.empty(len(pairs))
    for row, (query, document) in enumerate(pairs):
        for clip in (query, document):
            if clip not in features:
                features[clip] = chromagram(load_clip(clip, seconds))
                done += 1
                if on_clip is not None:
                    on_clip(done, total)
        scores[row] = -alignment_cost(features[query], features[document])
        for clip in (query, document):
            uses[clip] -= 1
            if uses[clip] == 0:
                del features[clip]
    return pd.DataFrame(
        {
            "query": candidates["query"].to_numpy(),
            "document": candidates["document"].to_numpy(),
            "score": scores,
        }
    )
