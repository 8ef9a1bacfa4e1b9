"""MIDI rendering with pretty_midi (the preference-judgments paper §4.1: the MIDI incipits
were turned into MP3 because browsers play MP3).

With a SoundFont and the optional ``pyfluidsynth`` module the file is rendered by FluidSynth;
otherwise by pretty_midi's own synthesiser (a decaying sine per note; drum tracks are silent).
Leading and trailing rests are kept as silence: trimming them is the trimmer's job.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pretty_midi

from audio_prep.codec import Audio
from audio_prep.errors import ClipError

MIDI_SUFFIXES = frozenset({".mid", ".midi", ".kar"})
DEFAULT_RATE = 44100


def renderer(soundfont: Path | None) -> str:
    """``"fluidsynth"`` with a ``soundfont`` and pyfluidsynth installed, else ``"sine"``."""
    if soundfont is not None and importlib.util.find_spec("fluidsynth") is not None:
        return "fluidsynth"
    return "sine"


def load_midi(path: Path) -> pretty_midi.PrettyMIDI:
    """Parse ``path``; :class:`ClipError` when it is not a readable MIDI file."""
    try:
        return pretty_midi.PrettyMIDI(str(path))
    except Exception as error:  # mido and pretty_midi raise many types for bad files
        reason = " ".join(f"{type(error).__name__}: {error}".split())  # one line
        raise ClipError(f"not a readable MIDI file ({reason})") from None


def midi_seconds(path: Path) -> float:
    """Duration of a MIDI file: the time of its last event, rests included."""
    return load_midi(path).get_end_time()


def render_midi(path: Path, rate: int = DEFAULT_RATE, soundfont: Path | None = None) -> Audio:
    """Render ``path`` to mono audio at ``rate`` Hz; :class:`ClipError` for bad files or files
    without notes. The sine synthesiser's output is cut to the file's own length (it appends a
    second of zeros, but stops short of trailing rests); FluidSynth keeps its release tail."""
    midi = load_midi(path)
    engine = renderer(soundfont)
    notes = sum(len(i.notes) for i in midi.instruments if engine == "fluidsynth" or not i.is_drum)
    if notes == 0:
        raise ClipError("the MIDI file has no notes to render (drum tracks need --soundfont)")
    if engine == "fluidsynth":
        samples = midi.fluidsynth(fs=rate, synthesizer=str(soundfont))
    else:
        frames = round(midi.get_end_time() * rate)
        samples = midi.synthesize(fs=rate)[:frames]
        samples = np.pad(samples, (0, frames - len(samples)))  # trailing rests after the notes
    return Audio(np.asarray(samples, dtype=np.float32)[:, None], rate)
