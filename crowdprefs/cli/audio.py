"""Audio commands: ``crowdprefs audio prepare SRC DST`` (thin: parse, call audio_prep, render)."""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.markup import escape
from rich.table import Table

from ..console import console, err_console
from ..errors import InputError
from .app import app

if TYPE_CHECKING:
    import pandas as pd

    from audio_prep import PrepareOptions

audio_app = typer.Typer(
    help="Prepare clips for the HITs: render MIDI, trim silence, normalise loudness, encode.",
    no_args_is_help=True,
)
app.add_typer(audio_app, name="audio")


class Format(StrEnum):
    mp3 = "mp3"
    ogg = "ogg"
    m4a = "m4a"


def _options(
    fmt: Format,
    bitrate: str,
    trim: bool,
    threshold_db: float,
    keep_ms: float,
    max_seconds: float,
    loudness: float,
    keep_level: bool,
    peak_ceiling: float,
    sample_rate: int | None,
    mono: bool,
    soundfont: Path | None,
) -> PrepareOptions:
    from audio_prep import PrepareOptions, renderer  # imported late: keeps `--help` quick

    options = PrepareOptions(
        format=fmt.value,
        bitrate=bitrate,
        trim_silence=trim,
        threshold_db=threshold_db,
        keep_ms=keep_ms,
        max_seconds=max_seconds or None,
        loudness=None if keep_level else loudness,
        peak_ceiling_db=peak_ceiling,
        sample_rate=sample_rate,
        mono=mono,
        soundfont=soundfont,
    )
    options.validate()
    if soundfont is not None and renderer(soundfont) != "fluidsynth":
        err_console.print(
            "[yellow]warning:[/] pyfluidsynth is not installed: MIDI is rendered with the sine "
            "synthesiser, not the SoundFont ('pip install pyfluidsynth' to use it)"
        )
    return options


def report(table: pd.DataFrame, dst: Path) -> None:
    """Print the run's summary and the failed files with their reasons; raise if any failed."""
    failed = table[table["error"] != ""]
    done = table[table["error"] == ""]
    console.print(f"{len(done)} of {len(table)} clips ready in {escape(str(dst))}", end="")
    if len(done):
        before, after = done["seconds_before"].mean(), done["seconds_after"].mean()
        console.print(
            f" ({int(done['cached'].sum())} unchanged since the last run); "
            f"mean duration {before:.1f} s -> {after:.1f} s",
            end="",
        )
    console.print()
    if len(failed):
        listing = Table("source", "reason", title="Files that could not be prepared")
        for row in failed.itertuples():
            listing.add_row(escape(row.source), escape(row.error))
        err_console.print(listing)
        raise InputError(
            f"{len(failed)} of {len(table)} files could not be prepared "
            f"(reasons above and in {dst / 'manifest.csv'})"
        )


@audio_app.command("prepare")
def prepare(
    src: Path = typer.Argument(..., help="A folder of clips (searched recursively) or one file."),
    dst: Path = typer.Argument(..., help="Output folder; sub-folders of SRC are mirrored."),
    fmt: Format = typer.Option(Format.mp3, "--format", help="Output format for browsers."),
    bitrate: str = typer.Option("128k", help="Encoder bitrate, e.g. 96k, 128k, 192k."),
    trim: bool = typer.Option(
        True, "--trim-silence/--no-trim-silence", help="Trim leading and trailing silence."
    ),
    threshold_db: float = typer.Option(
        -50.0, help="Silence threshold in dB below the clip's own peak."
    ),
    keep_ms: float = typer.Option(100.0, help="Silence kept at each end after trimming (ms)."),
    max_seconds: float = typer.Option(
        30.0, help="Keep at most this many seconds (after trimming); 0 keeps whole clips."
    ),
    loudness: float = typer.Option(-23.0, help="Target integrated loudness (LUFS, BS.1770)."),
    keep_level: bool = typer.Option(False, help="Do not normalise loudness."),
    peak_ceiling: float = typer.Option(
        -1.0, help="Normalisation never lifts the sample peak above this (dBFS)."
    ),
    sample_rate: int | None = typer.Option(
        None, help="Resample to this rate (Hz); default: keep the source's (MIDI: 44100)."
    ),
    mono: bool = typer.Option(False, help="Downmix to one channel."),
    soundfont: Path | None = typer.Option(
        None, help="SoundFont (.sf2) for MIDI through FluidSynth (needs pyfluidsynth)."
    ),
    jobs: int = typer.Option(os.cpu_count() or 1, "--jobs", "-j", help="Parallel processes."),
) -> None:
    """Prepare every clip of SRC into DST and write DST/manifest.csv.

    Audio (WAV, FLAC, MP3, OGG, ...) is decoded and MIDI rendered; then silence is trimmed,
    the clip cut to an excerpt, normalised to one loudness and encoded. A rerun only processes
    files whose content or settings changed. Files that fail are listed with the reason and
    the command exits non-zero after processing all the others.
    """
    options = _options(
        fmt,
        bitrate,
        trim,
        threshold_db,
        keep_ms,
        max_seconds,
        loudness,
        keep_level,
        peak_ceiling,
        sample_rate,
        mono,
        soundfont,
    )
    from audio_prep import prepare_clips

    report(prepare_clips(src, dst, options, jobs), dst)
