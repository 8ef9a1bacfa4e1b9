"""Integrated loudness after ITU-R BS.1770-4 (K-weighting and two-stage gating), in LUFS.

The preference-judgments paper §4.1: workers compare three clips per HIT, so the clips must
play at comparable volume; they are normalised to one integrated loudness (EBU R128: -23 LUFS).

Measurement, for channels *i* with weights *G_i* (1 for L, R, C; 1.41 for the surround pair of
5.1; 0 for LFE):

1. K-weighting: a high-shelf (+4 dB above ~1.7 kHz) then a high-pass (~38 Hz), both biquads.
2. Gating blocks of 400 ms every 100 ms; per block *j* the mean square *z_ij* of each channel
   and its loudness ``l_j = -0.691 + 10 log10(sum_i G_i z_ij)``.
3. Absolute gate: blocks with ``l_j > -70`` LUFS. Relative gate: blocks whose ``l_j`` also
   exceeds the loudness of the absolute-gated blocks minus 10 LU.
4. ``L = -0.691 + 10 log10(sum_i G_i mean_j z_ij)`` over the blocks that pass both gates.

A clip shorter than one block is measured as one block over the whole clip (BS.1770 leaves it
undefined); a clip with no block above the absolute gate has loudness ``-inf``.
"""

from __future__ import annotations

import numpy as np

ABSOLUTE_GATE_LUFS = -70.0
RELATIVE_GATE_LU = -10.0
BLOCK_SECONDS = 0.4
STEP_SECONDS = 0.1

# Analogue prototypes of the two K-weighting stages: the BS.1770 coefficients are given for
# 48 kHz only; these parameters reproduce them exactly and give the filters at any rate.
_SHELF_HZ, _SHELF_Q, _SHELF_GAIN_DB = 1681.974450955533, 0.7071752369554196, 3.999843853973347
_SHELF_VB_EXPONENT = 0.4996667741545416
_HIGHPASS_HZ, _HIGHPASS_Q = 38.13547087602444, 0.5003270373238773


def k_weighting(rate: int) -> np.ndarray:
    """Second-order sections (scipy ``sos``, shape (2, 6)) of the K-weighting filter at ``rate``."""
    k = np.tan(np.pi * _SHELF_HZ / rate)
    vh = 10.0 ** (_SHELF_GAIN_DB / 20.0)
    vb = vh**_SHELF_VB_EXPONENT
    a0 = 1.0 + k / _SHELF_Q + k * k
    shelf = [
        (vh + vb * k / _SHELF_Q + k * k) / a0,
        2.0 * (k * k - vh) / a0,
        (vh - vb * k / _SHELF_Q + k * k) / a0,
        1.0,
        2.0 * (k * k - 1.0) / a0,
        (1.0 - k / _SHELF_Q + k * k) / a0,
    ]
    k = np.tan(np.pi * _HIGHPASS_HZ / rate)
    a0 = 1.0 + k / _HIGHPASS_Q + k * k
    highpass = [1.0, -2.0, 1.0, 1.0, 2.0 * (k * k - 1.0) / a0, (1.0 - k / _HIGHPASS_Q + k * k) / a0]
    return np.array([shelf, highpass])


def channel_weights(channels: int) -> np.ndarray:
    """BS.1770 weights G_i: 1.0 each, except 5.1 in WAV order (L R C LFE Ls Rs)."""
    if channels == 6:
        return np.array([1.0, 1.0, 1.0, 0.0, 1.41, 1.41])
    return np.ones(channels)


def _loudness(weighted_power: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return -0.691 + 10.0 * np.log10(weighted_power)


def integrated_loudness(samples: np.ndarray, rate: int) -> float:
    """Integrated loudness in LUFS of ``samples`` (shape (frames, channels), full scale 1.0)."""
    from scipy.signal import sosfilt  # imported here: scipy.signal takes most of a second

    x = np.asarray(samples, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    filtered = sosfilt(k_weighting(rate), x, axis=0)
    block = round(BLOCK_SECONDS * rate)
    step = round(STEP_SECONDS * rate)
    cumulative = np.vstack([np.zeros((1, x.shape[1])), np.cumsum(filtered**2, axis=0)])
    if x.shape[0] < block:
        starts, block = np.array([0]), x.shape[0]
    else:
        starts = np.arange(0, x.shape[0] - block + 1, step)
    z = (cumulative[starts + block] - cumulative[starts]) / block  # (blocks, channels)
    power = z @ channel_weights(x.shape[1])
    levels = _loudness(power)
    gated = levels > ABSOLUTE_GATE_LUFS
    if not gated.any():
        return float("-inf")
    relative_gate = _loudness(power[gated].mean()) + RELATIVE_GATE_LU
    gated &= levels > relative_gate
    return float(_loudness(power[gated].mean()))


def peak_dbfs(samples: np.ndarray) -> float:
    """Sample peak in dBFS (``-inf`` for digital silence)."""
    with np.errstate(divide="ignore"):
        return float(20.0 * np.log10(np.abs(samples).max(initial=0.0)))


def normalisation_gain(loudness: float, peak: float, target: float, ceiling: float) -> float:
    """Gain in dB that brings ``loudness`` to ``target`` LUFS, capped so that the sample peak
    (``peak`` dBFS before the gain) stays at or below ``ceiling`` dBFS."""
    return min(target - loudness, ceiling - peak)
