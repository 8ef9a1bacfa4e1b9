"""Audio commands: ``crowdprefs audio prepare SRC DST`` (thin: parse, call audio_prep, render)
and ``crowdprefs prepare PROJECT``.

audio_prep, pandas and the campaign are imported inside the commands: ``--help`` and every
other command start without them.
"""

from __future__ import annotations

import os
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table

from crowdprefs.cli.app import app
from crowdprefs.cli.console import console, err_console, escape
from crowdprefs.cli.options import count, finite, jobs_value, renamed
from crowdprefs.errors import InputError

if TYPE_CHECKING:
    import pandas as pd

    from audio_prep import PrepareOptions

audio_app = typer.Typer(
    help="Prepare clips for the HITs: render MIDI, trim silence, normalise loudness, encode.",
    no_args_is_help=True,
)
app.add_typer(audio_app, name="audio")


class AudioFormat(StrEnum):
    mp3 = "mp3"
    ogg = "ogg"
    m4a = "m4a"


AudioFormatOpt = Annotated[
    AudioFormat,
    typer.Option("--audio-format", help="Audio format the clips are encoded to (for browsers)."),
]
#: ``--format`` names the format of what a command prints or writes (table, csv, json...)
RENAMED = renamed({"--format": "--audio-format"})
BitrateOpt = Annotated[str, typer.Option(help="Encoder bitrate, e.g. 96k, 128k, 192k.")]
TrimOpt = Annotated[
    bool,
    typer.Option("--trim-silence/--no-trim-silence", help="Trim leading and trailing silence."),
]
ThresholdOpt = Annotated[
    float, typer.Option(help="Silence threshold in dB below the clip's own peak.", parser=finite)
]
KeepOpt = Annotated[
    float, typer.Option(help="Silence kept at each end after trimming (ms).", parser=finite)
]
MaxSecondsOpt = Annotated[
    float,
    typer.Option(
        help="Keep at most this many seconds (after trimming); 0: whole clips.", parser=finite
    ),
]
LoudnessOpt = Annotated[
    float, typer.Option(help="Target integrated loudness (LUFS, BS.1770).", parser=finite)
]
KeepLevelOpt = Annotated[bool, typer.Option(help="Do not normalise loudness.")]
CeilingOpt = Annotated[
    float,
    typer.Option(
        help="Normalisation never lifts the sample peak above this (dBFS).", parser=finite
    ),
]
RateOpt = Annotated[
    int | None,
    typer.Option(
        callback=count(8000, 192_000),
        help="Resample to this rate (Hz); default: keep the source's (MIDI: 44100).",
    ),
]
MonoOpt = Annotated[bool, typer.Option(help="Downmix to one channel.")]
SoundfontOpt = Annotated[
    Path | None,
    typer.Option(help="SoundFont (.sf2) for MIDI through FluidSynth (needs pyfluidsynth)."),
]
JobsOpt = Annotated[
    int, typer.Option("--jobs", "-j", callback=jobs_value, help="Parallel processes.")
]


def _options(**values) -> PrepareOptions:
    """The library's options from the command line's (validated; one line when out of range)."""
    from audio_prep import PrepareOptions, renderer
    from crowdprefs.campaign.clips import audio_errors

    options = PrepareOptions(
        format=values["audio_format"].value,
        bitrate=values["bitrate"],
        trim_silence=values["trim"],
        threshold_db=values["threshold_db"],
        keep_ms=values["keep_ms"],
        max_seconds=values["max_seconds"] or None,
        loudness=None if values["keep_level"] else values["loudness"],
        peak_ceiling_db=values["peak_ceiling"],
        sample_rate=values["sample_rate"],
        mono=values["mono"],
        soundfont=values["soundfont"],
    )
    with audio_errors():
        options.validate()
    if options.soundfont is not None and renderer(options.soundfont) != "fluidsynth":
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


@audio_app.command("prepare", cls=RENAMED)
def prepare(
    src: Annotated[Path, typer.Argument(help="A folder of clips (recursive) or one file.")],
    dst: Annotated[Path, typer.Argument(help="Output folder; sub-folders of SRC are mirrored.")],
    audio_format: AudioFormatOpt = AudioFormat.mp3,
    bitrate: BitrateOpt = "128k",
    trim: TrimOpt = True,
    threshold_db: ThresholdOpt = -50.0,
    keep_ms: KeepOpt = 100.0,
    max_seconds: MaxSecondsOpt = 30.0,
    loudness: LoudnessOpt = -23.0,
    keep_level: KeepLevelOpt = False,
    peak_ceiling: CeilingOpt = -1.0,
    sample_rate: RateOpt = None,
    mono: MonoOpt = False,
    soundfont: SoundfontOpt = None,
    jobs: JobsOpt = os.cpu_count() or 1,
) -> None:
    """Prepare every clip of SRC into DST and write DST/manifest.csv.

    Audio (WAV, FLAC, MP3, OGG, ...) is decoded and MIDI rendered; then silence is trimmed,
    the clip cut to an excerpt, normalised to one loudness and encoded. A rerun only processes
    files whose content or settings changed. Files that fail are listed with the reason and
    the command exits non-zero after processing all the others.
    """
    options = _options(**locals())
    from audio_prep import prepare_clips
    from crowdprefs.campaign.clips import audio_errors, progress_callback

    with audio_errors(), progress_callback("preparing clips") as progress:
        table = prepare_clips(src, dst, options, jobs, progress=progress)
    report(table, dst)


@app.command("prepare", cls=RENAMED)
def prepare_project(
    directory: Annotated[
        Path, typer.Argument(help="The project folder (holds crowdprefs.toml and state.sqlite).")
    ],
    dst: Annotated[
        Path | None, typer.Option(help="Where the clips go; default: PROJECT/clips.")
    ] = None,
    audio_format: AudioFormatOpt = AudioFormat.mp3,
    bitrate: BitrateOpt = "128k",
    trim: TrimOpt = True,
    threshold_db: ThresholdOpt = -50.0,
    keep_ms: KeepOpt = 100.0,
    max_seconds: MaxSecondsOpt = 30.0,
    loudness: LoudnessOpt = -23.0,
    keep_level: KeepLevelOpt = False,
    peak_ceiling: CeilingOpt = -1.0,
    sample_rate: RateOpt = None,
    mono: MonoOpt = False,
    soundfont: SoundfontOpt = None,
    jobs: JobsOpt = os.cpu_count() or 1,
) -> None:
    """Prepare a project's query and candidate clips as 'audio prepare' does, and store them.

    Stores each clip's path and duration and prints the HITs' minimum listening times. A rerun
    prepares again only what changed (sources are remembered in the clips' manifest); audio
    given as URLs is left alone.
    """
    options = _options(**locals())
    from crowdprefs.campaign.clips import CLIPS_FOLDER, listening_seconds
    from crowdprefs.campaign.project import Project
    from crowdprefs.campaign.project_state import prepare_project

    with Project(directory) as project:
        clips = prepare_project(project, options, jobs, dst=dst)
        listening = listening_seconds(project.store.queries(), project.store.candidates())
    local = clips["source"].notna()
    failed = clips[clips["error"] != ""]
    console.print(
        f"{int(local.sum()) - len(failed)} of {len(clips)} clips prepared into "
        f"{escape(str(dst or Path(directory) / CLIPS_FOLDER))}"
        + (f"; {int((~local).sum())} without a local file left alone" if (~local).any() else "")
    )
    known = listening.dropna(subset=["mean"])
    if len(known):
        mean = (known["mean"] * known["pairs"]).sum() / known["pairs"].sum()
        console.print(
            f"minimum listening time per HIT (query + 2 candidates, once each): mean "
            f"{mean:.1f} s, from {known['shortest'].min():.1f} to {known['longest'].max():.1f} s"
        )
    if len(failed):
        listing = Table("query", "document", "source", "reason", title="Clips not prepared")
        for row in failed.itertuples():
            listing.add_row(
                escape(row.query), escape(row.document or "(query)"), escape(row.source),
                escape(row.error),
            )  # fmt: skip
        err_console.print(listing)
        raise InputError(f"{len(failed)} of {len(clips)} clips could not be prepared")
