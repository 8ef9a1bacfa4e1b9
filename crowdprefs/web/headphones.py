"""The headphone screen a judge passes before their first question: the Huggins-pitch test of
Milne, Bianco, Poole, Zhao, Oxenham, Billig and Chait (2021), "An online headphone screening
test based on dichotic pitch", *Behavior Research Methods* 53, 1551–1562.

Each trial plays three one-second white noises. In one of them (the target) the right ear gets
the left ear's noise with its phase inverted over a narrow band (600 Hz ± 6 %); the other two
are the same noise in both ears. Through headphones the target is heard with a faint tone inside
it (the Huggins pitch); over loudspeakers the two ears' signals mix in the air and no tone is
heard, so a judge without headphones is right by chance only (1 in 3 per trial). Unlike the
antiphase loudness test, loudspeakers do not make it easier.

Everything here is pure: the sounds of a screen follow from its secret seed (stored by the
server, never shown), so they need not be stored and are the same each time a page loads.
"""

from __future__ import annotations

import io
import wave
from collections.abc import Sequence

import numpy as np

RATE = 22_050
"""Samples per second of the screen's sounds (the tone is at 600 Hz)."""
SECONDS = 1.0
SOUNDS = 3
"""Noises per trial, one of which carries the tone."""
CENTRE = 600.0
"""Centre of the phase-inverted band, in Hz (Milne et al. 2021)."""
BAND = 0.06
"""Half-width of the band, as a share of the centre frequency (± 6 %)."""
RAMP = 0.02
"""Seconds of the raised-cosine fade at each end (no clicks)."""
LEVEL = 0.1
"""RMS of each channel (−20 dB full scale: no clipping)."""


def targets(seed: int, trials: int) -> np.ndarray:
    """Which sound (0, 1 or 2) of each trial carries the tone."""
    return np.random.default_rng([seed, 0]).integers(0, SOUNDS, trials)


def huggins(rng: np.random.Generator, target: bool, rate: int = RATE) -> np.ndarray:
    """One stereo noise, ``(samples, 2)`` in [−1, 1]: the same white noise in both ears, with
    the right ear's phase inverted over ``CENTRE`` ± ``BAND`` when ``target``."""
    n = int(round(SECONDS * rate))
    left = rng.standard_normal(n)
    right = left
    if target:
        spectrum = np.fft.rfft(left)
        freqs = np.fft.rfftfreq(n, 1 / rate)
        spectrum[np.abs(freqs - CENTRE) <= BAND * CENTRE] *= -1
        right = np.fft.irfft(spectrum, n)
    stereo = np.column_stack([left, right])
    stereo *= LEVEL / np.sqrt(np.mean(left**2))
    edge = int(RAMP * rate)
    fade = 0.5 - 0.5 * np.cos(np.pi * np.arange(edge) / edge)
    stereo[:edge] *= fade[:, None]
    stereo[n - edge :] *= fade[::-1, None]
    return np.clip(stereo, -1, 1)


def sound(seed: int, trials: int, trial: int, index: int) -> np.ndarray:
    """Sound ``index`` (0–2) of ``trial`` (0-based) of the screen with this seed."""
    if not (0 <= trial < trials and 0 <= index < SOUNDS):
        raise IndexError(f"no sound {index} in trial {trial}")
    rng = np.random.default_rng([seed, 1, trial, index])
    return huggins(rng, target=bool(targets(seed, trials)[trial] == index))


def wav(stereo: np.ndarray, rate: int = RATE) -> bytes:
    """16-bit PCM WAV of a ``(samples, 2)`` signal in [−1, 1]."""
    data = np.round(np.clip(stereo, -1, 1) * 32767).astype("<i2")
    out = io.BytesIO()
    with wave.open(out, "wb") as handle:
        handle.setnchannels(2)
        handle.setsampwidth(2)
        handle.setframerate(rate)
        handle.writeframes(data.tobytes())
    return out.getvalue()


def correct(answers: Sequence[int], seed: int, trials: int) -> int:
    """How many of the answers (the sound chosen per trial, 0-based) found the tone."""
    if len(answers) != trials:
        raise ValueError(f"{len(answers)} answers for {trials} trials")
    return int(np.sum(np.asarray(answers) == targets(seed, trials)))


def tone_sound(stereo: np.ndarray) -> bool:
    """Whether a stereo sound differs between the ears (what a listener with headphones hears
    as the tone; the simulated judges use it)."""
    return bool(np.max(np.abs(stereo[:, 0] - stereo[:, 1])) > 1e-3)
