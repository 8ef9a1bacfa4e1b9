"""Prepare a set of clips for the HITs: decode or render, trim, excerpt, normalise, encode.

The preference-judgments paper §4.1 (MIDI incipits rendered to MP3, leading and trailing
silence trimmed so workers do not wait through rests) and the MTC paper
(audio similarity judged on 30 s excerpts). One source gives one output with the same base name
in the same sub-folder (``songs/tone.wav`` -> ``DST/songs/tone.mp3``).

The manifest ``DST/manifest.csv`` is also the cache: a source whose content hash and settings
match a successful row, and whose output still exists, is not processed again. Outputs and the
manifest are written under a temporary name and renamed, so none is ever half-written; the
manifest is also saved during the run, so a killed run resumes with what it finished. A file
that fails gets its reason in the ``error`` column; the others are still processed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from audio_prep.codec import FORMATS, Audio, decode, encode, probe_audio
from audio_prep.errors import AudioError, ClipError
from audio_prep.loudness import integrated_loudness, normalisation_gain, peak_dbfs
from audio_prep.midi import DEFAULT_RATE, MIDI_SUFFIXES, midi_seconds, render_midi, renderer
from audio_prep.trim import trim_silence

MANIFEST_NAME = "manifest.csv"
COLUMNS = [
    "source",
    "output",
    "sha256",
    "seconds_before",
    "seconds_after",
    "peak_dbfs",
    "loudness_lufs",
    "error",
    "settings",
    "cached",
]
AUDIO_SUFFIXES = frozenset(
    {".wav", ".wave", ".flac", ".mp3", ".ogg", ".oga", ".opus", ".m4a", ".aac", ".aif", ".aiff"}
)
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
#: Bump when the processing changes, so that cached outputs are made again.
PIPELINE_VERSION = 1
#: The manifest is rewritten at most this often during a run, so a killed run keeps its cache.
CHECKPOINT_SECONDS = 1.0
#: Fade-out applied where an excerpt cuts the music (avoids a click).
EXCERPT_FADE_SECONDS = 0.05


@dataclass(frozen=True)
class PrepareOptions:
    """How clips are prepared. ``max_seconds=None`` keeps whole clips; ``loudness=None`` keeps
    the level; ``sample_rate=None`` keeps the source's rate (MIDI renders at 44.1 kHz)."""

    format: str = "mp3"
    bitrate: str = "128k"
    trim_silence: bool = True
    threshold_db: float = -50.0
    keep_ms: float = 100.0
    max_seconds: float | None = 30.0
    loudness: float | None = -23.0
    peak_ceiling_db: float = -1.0
    sample_rate: int | None = None
    mono: bool = False
    soundfont: Path | None = None

    def validate(self) -> None:
        """:class:`AudioError` naming the first option out of range."""
        if self.format not in FORMATS:
            raise AudioError(f"format {self.format!r} is not one of {', '.join(FORMATS)}")
        if not self.threshold_db < 0:
            raise AudioError(f"threshold {self.threshold_db} dB must be below 0 (dB below peak)")
        if self.keep_ms < 0:
            raise AudioError(f"keep {self.keep_ms} ms must not be negative")
        if self.max_seconds is not None and not self.max_seconds > 0:
            raise AudioError(f"max seconds {self.max_seconds} must be positive")
        if self.loudness is not None and not -70 < self.loudness < 0:
            raise AudioError(f"loudness target {self.loudness} LUFS must lie in (-70, 0)")
        if self.peak_ceiling_db > 0:
            raise AudioError(f"peak ceiling {self.peak_ceiling_db} dBFS must not exceed 0")
        if self.sample_rate is not None and not 8000 <= self.sample_rate <= 192000:
            raise AudioError(f"sample rate {self.sample_rate} Hz must lie in 8000..192000")
        if self.soundfont is not None and not Path(self.soundfont).is_file():
            raise AudioError(f"{self.soundfont}: SoundFont not found")

    def fingerprint(self) -> str:
        """Short hash of everything that shapes an output (the cache key besides content)."""
        fields = dataclasses.asdict(self)
        if self.soundfont is not None:
            stat = Path(self.soundfont).stat()
            fields["soundfont"] = [str(self.soundfont), stat.st_size, stat.st_mtime_ns]
        fields["renderer"] = renderer(self.soundfont)
        fields["pipeline"] = PIPELINE_VERSION
        text = json.dumps(fields, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def sha256_file(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def load_source(path: Path, options: PrepareOptions) -> Audio:
    """Decode an audio file or render a MIDI file as ``options`` ask (rate, channels)."""
    if path.suffix.lower() in MIDI_SUFFIXES:
        return render_midi(path, options.sample_rate or DEFAULT_RATE, options.soundfont)
    return decode(path, options.sample_rate, options.mono)


def process(audio: Audio, options: PrepareOptions) -> tuple[Audio, float, float]:
    """Trim, excerpt and normalise: the processed audio, its sample peak (dBFS) and integrated
    loudness (LUFS). :class:`ClipError` for a clip that is silent throughout."""
    samples = audio.samples
    if options.trim_silence:
        samples = trim_silence(samples, audio.rate, options.threshold_db, options.keep_ms)
        if samples is None:
            raise ClipError("the clip is silent throughout")
    if options.max_seconds is not None and len(samples) > options.max_seconds * audio.rate:
        samples = samples[: round(options.max_seconds * audio.rate)].copy()
        fade = min(len(samples), round(EXCERPT_FADE_SECONDS * audio.rate))
        samples[len(samples) - fade :] *= np.linspace(1.0, 0.0, fade, dtype=np.float32)[:, None]
    loudness = integrated_loudness(samples, audio.rate)
    if loudness == float("-inf"):
        raise ClipError("the clip is silent throughout (no 400 ms block reaches -70 LUFS)")
    peak = peak_dbfs(samples)
    if options.loudness is not None:
        gain = normalisation_gain(loudness, peak, options.loudness, options.peak_ceiling_db)
        samples = (samples * np.float32(10.0 ** (gain / 20.0))).astype(np.float32)
        loudness, peak = loudness + gain, peak + gain
    return Audio(samples, audio.rate), peak, loudness


def prepare_file(source: Path, output: Path, options: PrepareOptions) -> dict[str, float]:
    """Prepare one clip into ``output`` (written under a temporary name, then renamed); the
    measured ``seconds_before``, ``seconds_after``, ``peak_dbfs`` and ``loudness_lufs``."""
    audio = load_source(source, options)
    processed, peak, loudness = process(audio, options)
    output.parent.mkdir(parents=True, exist_ok=True)
    temporary = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    try:
        encode(processed, temporary, options.format, options.bitrate)
        os.replace(temporary, output)
    finally:
        temporary.unlink(missing_ok=True)
    return {
        "seconds_before": audio.seconds,
        "seconds_after": processed.seconds,
        "peak_dbfs": peak,
        "loudness_lufs": loudness,
    }


def _run(row: dict, source: Path, output: Path, options: PrepareOptions) -> dict:
    """Worker: ``row`` completed with the measurements, or with the failure's reason."""
    try:
        row.update(prepare_file(source, output, options))
    except ClipError as error:
        row.update(output="", error=str(error))
    except Exception as error:  # one bad file must not stop the others; its reason is listed
        row.update(output="", error=f"{type(error).__name__}: {error}".splitlines()[0])
    return row


def clip_seconds(path: Path | str) -> float:
    """Duration in seconds of an audio file (decoded) or a MIDI file (its last event)."""
    path = Path(path)
    if path.suffix.lower() in MIDI_SUFFIXES:
        return midi_seconds(path)
    return decode(path).seconds


def probe(path: Path | str) -> float:
    """Duration in seconds of a clip that exists and can be prepared: a MIDI file that parses
    and has events (its last event's time) or a file whose audio ffmpeg decodes
    (:func:`probe_audio`: the duration its header states). :class:`ClipError` naming the reason
    for anything else: a missing or empty file, a folder, text, an image, random bytes."""
    path = Path(path)
    if not path.is_file():
        raise ClipError("no such file" if not path.exists() else "not a file")
    if path.stat().st_size == 0:
        raise ClipError("the file is empty")
    if path.suffix.lower() not in MIDI_SUFFIXES:
        return probe_audio(path)
    seconds = midi_seconds(path)
    if seconds <= 0:
        raise ClipError("the MIDI file has nothing to play")
    return seconds


def collect_sources(
    sources: Iterable[Path | str] | Path | str, dst: Path
) -> tuple[Path, list[Path]]:
    """The root the sources' sub-folders are mirrored from, and the source files.

    A folder gives every non-hidden file under it (outside ``dst``); a file gives itself; a
    list gives its files (missing ones are reported per file later), rooted at their common
    folder."""
    if isinstance(sources, str | Path):
        path = Path(sources).resolve()
        if path.is_file():
            return path.parent, [path]
        if not path.is_dir():
            raise AudioError(f"{sources}: no such file or folder")
        dst = dst.resolve()
        files = sorted(
            f
            for f in path.rglob("*")
            if f.is_file()
            and not any(part.startswith(".") for part in f.relative_to(path).parts)
            and not f.is_relative_to(dst)
        )
        if not files:
            raise AudioError(f"{sources}: the folder holds no files to prepare")
        return path, files
    files = list(dict.fromkeys(Path(f).resolve() for f in sources))  # once each, in order
    if not files:
        raise AudioError("no source files were given")
    return Path(os.path.commonpath([f.parent for f in files])), files


def _typed(table: pd.DataFrame) -> pd.DataFrame:
    """The manifest's columns in order with their types (text never NaN)."""
    table = table.reindex(columns=COLUMNS)
    text = ["source", "output", "sha256", "error", "settings"]
    numbers = ["seconds_before", "seconds_after", "peak_dbfs", "loudness_lufs"]
    table[text] = table[text].astype(object).fillna("").astype(str)
    table[numbers] = table[numbers].astype(float)
    table["cached"] = table["cached"].astype(bool)
    return table


def read_manifest(path: Path) -> pd.DataFrame:
    """The manifest CSV at ``path`` (an empty one when absent or unreadable: no cache)."""
    try:
        table = pd.read_csv(path, dtype={"sha256": str, "settings": str})
        return _typed(table) if set(COLUMNS) <= set(table.columns) else _typed(pd.DataFrame())
    except (OSError, ValueError, pd.errors.ParserError):
        return _typed(pd.DataFrame())


def _table(rows: list[dict]) -> pd.DataFrame:
    return _typed(pd.DataFrame(rows, columns=COLUMNS)).sort_values("source", ignore_index=True)


def write_manifest(table: pd.DataFrame, path: Path) -> None:
    """Write ``table`` to ``path`` atomically (temporary name, then rename)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        table.to_csv(temporary, index=False)
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def _plan(
    root: Path, files: list[Path], dst: Path, options: PrepareOptions, previous, absolute: bool
):
    """Rows already final (failures found without decoding, cache hits) and the jobs to run;
    sources are named by absolute path when ``absolute``, else relative to ``root``."""
    fingerprint = options.fingerprint()
    cache = {r["output"]: r for r in previous[previous["error"] == ""].to_dict("records")}
    done, jobs, owners = [], [], {}
    for file in files:
        rel = file.relative_to(root)
        row = dict.fromkeys(COLUMNS, np.nan) | {
            "source": str(file) if absolute else rel.as_posix(),
            "output": "",
            "sha256": "",
            "error": "",
            "settings": fingerprint,
            "cached": False,
        }
        out = rel.with_suffix("." + options.format).as_posix()
        suffix = file.suffix.lower()
        if suffix not in AUDIO_SUFFIXES | MIDI_SUFFIXES:
            done.append(row | {"error": f"unsupported file type {suffix or '(none)'!r}"})
            continue
        if dst / out == file:
            done.append(row | {"error": "its output would overwrite it: choose another DST"})
            continue
        if out in owners:
            done.append(row | {"error": f"its output {out} is already made from {owners[out]}"})
            continue
        owners[out] = row["source"]
        try:
            row["sha256"] = sha256_file(file)
        except OSError as error:
            done.append(row | {"error": error.strerror or str(error)})
            continue
        if row["sha256"] == EMPTY_SHA256:
            done.append(row | {"error": "the file is empty"})
            continue
        hit = cache.get(out, {})
        key = (hit.get("sha256"), hit.get("settings"))
        if key == (row["sha256"], fingerprint) and (dst / out).is_file():
            done.append(hit | {"source": row["source"], "cached": True})
            continue
        jobs.append((row | {"output": out}, file, dst / out))
    return done, jobs


def _no_progress(done: int, total: int) -> None:
    """The default progress callback: says nothing."""


def prepare_clips(
    sources: Iterable[Path | str] | Path | str,
    dst: Path | str,
    options: PrepareOptions | None = None,
    jobs: int = 1,
    *,
    progress: Callable[[int, int], None] | None = None,
) -> pd.DataFrame:
    """Prepare every source clip into ``dst`` and return the manifest (also written to
    ``dst/manifest.csv``): one row per source with ``source`` (relative to ``sources`` when it
    is a folder or a file; absolute for a list of files, whose outputs mirror their common
    folder),
    ``output`` (relative to ``dst``; empty on failure), ``sha256`` of the source,
    ``seconds_before``/``seconds_after``, ``peak_dbfs`` and ``loudness_lufs`` of the output,
    ``error`` (empty when it worked), ``settings`` (options fingerprint) and ``cached``.

    ``jobs`` > 1 processes clips in that many processes. ``progress(done, total)`` is called
    with the clips to process (those not failed already nor cached) once before the first (after
    the worker processes have started) and after each. Per-file failures do not raise; bad
    arguments raise :class:`AudioError`.
    """
    options = options or PrepareOptions()
    options.validate()
    if jobs < 1:
        raise AudioError(f"jobs {jobs} must be at least 1")
    dst = Path(dst).resolve()
    root, files = collect_sources(sources, dst)
    dst.mkdir(parents=True, exist_ok=True)
    manifest = dst / MANIFEST_NAME
    absolute = not isinstance(sources, str | Path)
    rows, todo = _plan(root, files, dst, options, read_manifest(manifest), absolute)
    report = progress or _no_progress
    pool = ProcessPoolExecutor(min(jobs, len(todo))) if jobs > 1 and len(todo) > 1 else None
    try:
        if pool is None:
            results = (_run(*job, options) for job in todo)
        else:  # workers start at the first submit, before any thread the callback may start
            futures = [pool.submit(_run, *job, options) for job in todo]
            results = (future.result() for future in as_completed(futures))
        saved = time.monotonic()
        report(0, len(todo))
        for done, row in enumerate(results, start=1):
            rows.append(row)
            report(done, len(todo))
            if time.monotonic() - saved > CHECKPOINT_SECONDS:  # a kill keeps the cache
                write_manifest(_table(rows), manifest)
                saved = time.monotonic()
    finally:
        if pool is not None:
            pool.shutdown(cancel_futures=True)
        table = _table(rows)
        write_manifest(table, manifest)
    return table
