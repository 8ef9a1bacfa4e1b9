"""Leading and trailing silence, relative to the clip's own peak.

The preference-judgments paper §4.1: many incipits started with rests, which made workers
lose time, so leading and trailing silence was trimmed (durations fell from 1–57 s to 1–26 s,
6 s to 4 s on average); a melody with rests counts as equally similar as the one without.

Silence is where the signal stays more than ``threshold_db`` below the clip's sample peak, so a
quiet recording is trimmed like a loud one. Detection works on 10 ms blocks (the RMS of a block,
over all channels, against the threshold: isolated clicks in a silent stretch do not count) and
is then refined to the sample: the audible part starts at the first sample, inside the first
audible block, whose magnitude reaches the threshold, and ends after the last such sample inside
the last audible block.
"""

from __future__ import annotations

import numpy as np

BLOCK_MS = 10.0


def audible_bounds(
    samples: np.ndarray, rate: int, threshold_db: float = -50.0
) -> tuple[int, int] | None:
    """``(start, end)`` frame indices (end exclusive) of the audible part of ``samples``
    (shape (frames, channels)); ``None`` when the clip is silent throughout."""
    peak = float(np.abs(samples).max(initial=0.0))
    if peak == 0.0:
        return None
    threshold = peak * 10.0 ** (threshold_db / 20.0)
    width = max(1, round(rate * BLOCK_MS / 1000.0))
    power = np.square(samples).mean(axis=1)
    blocks = np.pad(power, (0, -len(power) % width)).reshape(-1, width).mean(axis=1, dtype=float)
    audible = np.flatnonzero(blocks >= threshold**2)
    if audible.size == 0:
        return None

    def above(block: int) -> np.ndarray:  # which frames of a block reach the threshold
        return np.abs(samples[block * width : (block + 1) * width]).max(axis=1) >= threshold

    head, tail = above(audible[0]), above(audible[-1])
    start = audible[0] * width + int(np.argmax(head))
    end = audible[-1] * width + len(tail) - int(np.argmax(tail[::-1]))
    return int(start), int(end)


def trim_silence(
    samples: np.ndarray, rate: int, threshold_db: float = -50.0, keep_ms: float = 100.0
) -> np.ndarray | None:
    """``samples`` without leading and trailing silence, keeping ``keep_ms`` of it at each end
    (so attacks and releases are not cut); ``None`` when silent throughout."""
    bounds = audible_bounds(samples, rate, threshold_db)
    if bounds is None:
        return None
    keep = round(rate * keep_ms / 1000.0)
    return samples[max(0, bounds[0] - keep) : min(len(samples), bounds[1] + keep)]
