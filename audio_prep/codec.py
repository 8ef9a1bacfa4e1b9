"""Decoding and encoding through the ffmpeg binary shipped by the ``imageio-ffmpeg`` wheel.

No system ffmpeg and no download: :data:`FFMPEG` is the wheel's binary, and it is handed to pydub
(``AudioSegment.converter``), which encodes the browser formats. Decoding calls the same binary
directly, because pydub's ``from_file`` needs ``ffprobe``, which the wheel does not ship.

Audio travels between the stages as :class:`Audio`: float32 samples of shape
``(frames, channels)`` in [-1, 1] and a sample rate.
"""

from __future__ import annotations

import re
import struct
import subprocess
import warnings
from dataclasses import dataclass
from pathlib import Path

import imageio_ffmpeg
import numpy as np

from audio_prep.errors import ClipError

with warnings.catch_warnings():  # pydub warns that no ffmpeg is on PATH, and about audioop
    warnings.simplefilter("ignore", RuntimeWarning)
    warnings.simplefilter("ignore", DeprecationWarning)
    from pydub import AudioSegment
    from pydub.exceptions import CouldntEncodeError

FFMPEG: str = imageio_ffmpeg.get_ffmpeg_exe()
AudioSegment.converter = FFMPEG

#: Output formats for browsers: name -> (ffmpeg muxer, ffmpeg encoder).
FORMATS: dict[str, tuple[str, str]] = {
    "mp3": ("mp3", "libmp3lame"),
    "ogg": ("ogg", "libvorbis"),
    "m4a": ("ipod", "aac"),
}
#: Highest output sample rate (MP3 and Vorbis stop there; browsers need no more).
MAX_RATE = 48000


@dataclass(frozen=True)
class Audio:
    """Float32 samples, shape ``(frames, channels)``, and their sample rate in Hz."""

    samples: np.ndarray
    rate: int

    @property
    def seconds(self) -> float:
        """Duration: frames / rate."""
        return self.samples.shape[0] / self.rate


def _ffmpeg_reason(stderr: bytes, path: Path) -> str:
    """The last line ffmpeg printed, without the file name it starts with."""
    lines = [line.strip() for line in stderr.decode(errors="replace").splitlines() if line.strip()]
    reason = lines[-1] if lines else "ffmpeg failed without a message"
    return reason.removeprefix(f"{path}: ")


def _parse_wav(data: bytes) -> tuple[np.ndarray, int]:
    """Samples and rate of ffmpeg's float32 WAV stream (its data size is unset on a pipe)."""
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        raise ClipError("the decoder produced no audio")
    pos, channels, rate = 12, 0, 0
    while pos + 8 <= len(data):
        chunk, size = data[pos : pos + 4], int.from_bytes(data[pos + 4 : pos + 8], "little")
        body = pos + 8
        if chunk == b"fmt ":
            channels, rate = struct.unpack_from("<HI", data, body + 2)
        elif chunk == b"data" and channels:
            frames = (len(data) - body) // (4 * channels)
            samples = np.frombuffer(data, dtype="<f4", count=frames * channels, offset=body)
            return samples.reshape(frames, channels), rate
        pos = body + size + (size & 1)
    raise ClipError("the decoder produced no audio")


def decode(path: Path, sample_rate: int | None = None, mono: bool = False) -> Audio:
    """Decode the first audio stream of any file ffmpeg reads (WAV, FLAC, MP3, OGG, M4A, ...).

    ``sample_rate`` resamples and ``mono`` downmixes (both by ffmpeg). Raises :class:`ClipError`
    with ffmpeg's reason for empty, corrupt or audio-less files.
    """
    command = [FFMPEG, "-nostdin", "-hide_banner", "-v", "error", "-i", str(path)]
    command += ["-map", "0:a:0", "-vn", "-acodec", "pcm_f32le", "-f", "wav"]
    if sample_rate:
        command += ["-ar", str(sample_rate)]
    if mono:
        command += ["-ac", "1"]
    result = subprocess.run([*command, "-"], capture_output=True, check=False)
    if result.returncode != 0:
        raise ClipError(_ffmpeg_reason(result.stderr, path))
    samples, rate = _parse_wav(result.stdout)
    if samples.shape[0] == 0:
        raise ClipError("the file holds no audio samples")
    return Audio(samples, rate)


def _probe_reason(stderr: str) -> str:
    """Why ffmpeg could not find and decode an audio stream, from what it printed."""
    if "matches no streams" in stderr:
        return "ffmpeg finds no audio stream in it"
    opening = re.search(r"Error opening input: (.+)", stderr)
    if opening:
        return f"ffmpeg cannot read it as audio ({opening.group(1).strip()})"
    decoding = re.search(r"decoder: (.+)", stderr)
    detail = f" ({decoding.group(1).strip()})" if decoding else ""
    return f"ffmpeg cannot decode its audio{detail}"


def probe_audio(path: Path) -> float:
    """Duration in seconds of a file whose first audio stream ffmpeg opens and starts to decode.

    The first audio frame is decoded, not only the header read: ffmpeg opens some files that
    are not audio (random bytes named ``.mp3``) as an audio stream without frames. The duration
    is the one ffmpeg reads from the header, or, when the header states none, the decoded
    length. :class:`ClipError` with ffmpeg's reason otherwise.
    """
    source = f"file:{Path(path).resolve()}"  # never read as another ffmpeg protocol
    command = [FFMPEG, "-nostdin", "-hide_banner", "-i", source, "-map", "0:a:0"]
    result = subprocess.run(
        [*command, "-frames:a", "1", "-f", "null", "-"], capture_output=True, check=False
    )
    stderr = result.stderr.decode(errors="replace")
    if result.returncode != 0:
        raise ClipError(_probe_reason(stderr))
    stated = re.search(r"Duration: (\d+):(\d\d):(\d\d(?:\.\d+)?)", stderr)
    if stated is None:
        return decode(path).seconds
    hours, minutes, seconds = stated.groups()
    return 3600 * int(hours) + 60 * int(minutes) + float(seconds)


def encode(audio: Audio, path: Path, fmt: str = "mp3", bitrate: str = "128k") -> None:
    """Encode ``audio`` (clipped to [-1, 1], 16-bit, at most 48 kHz) to ``path`` in a browser
    format via pydub.

    The caller writes to a temporary name and renames it; pydub's own temporary WAV is removed.
    """
    muxer, codec = FORMATS[fmt]
    pcm = np.round(np.clip(audio.samples, -1.0, 1.0) * 32767.0).astype("<i2")
    segment = AudioSegment(
        data=pcm.tobytes(), sample_width=2, frame_rate=audio.rate, channels=pcm.shape[1]
    )
    rate = ["-ar", str(MAX_RATE)] if audio.rate > MAX_RATE else []
    try:
        handle = segment.export(
            str(path), format=muxer, codec=codec, bitrate=bitrate, parameters=rate
        )
    except CouldntEncodeError as error:
        lines = [line.strip() for line in str(error).splitlines()[1:] if line.strip()]
        reason = next((line for line in lines if "Error" in line), lines[-1] if lines else "")
        reason = re.sub(r"^(\[[^\]]*\]\s*)+", "", reason)  # ffmpeg's [component @ 0x..] tags
        raise ClipError(f"encoding to {fmt} with bitrate {bitrate} failed: {reason}") from None
    handle.close()
