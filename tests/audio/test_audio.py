"""audio_prep units: BS.1770 loudness, silence trimming, codecs, MIDI rendering (seed 002 §4.1)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
from pathlib import Path

import numpy as np
import pretty_midi
import pytest
import scipy.io.wavfile
from hypothesis import given, settings
from hypothesis import strategies as st

from audio_prep import (
    FORMATS,
    Audio,
    ClipError,
    PrepareOptions,
    audible_bounds,
    clip_seconds,
    decode,
    encode,
    integrated_loudness,
    k_weighting,
    prepare_file,
    process,
    render_midi,
    renderer,
    trim_silence,
)
from audio_prep.codec import FFMPEG

RATE = 44100


def tone(seconds: float, rate: int = RATE, freq: float = 440.0, amp: float = 0.5) -> np.ndarray:
    t = np.arange(round(seconds * rate)) / rate
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def silence(seconds: float, rate: int = RATE) -> np.ndarray:
    return np.zeros(round(seconds * rate), dtype=np.float32)


def stereo(x: np.ndarray) -> np.ndarray:
    return np.stack([x, x], axis=1)


def ffmpeg_loudness(samples: np.ndarray, rate: int, tmp_path: Path) -> float:
    """Integrated loudness measured by ffmpeg's own EBU R128 scanner (the reference)."""
    wav = tmp_path / "measure.wav"
    scipy.io.wavfile.write(wav, rate, samples.astype(np.float32))
    result = subprocess.run(
        [FFMPEG, "-nostats", "-hide_banner", "-i", str(wav), "-af", "ebur128", "-f", "null", "-"],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(re.findall(r"I:\s+(-?[\d.]+) LUFS", result.stderr)[-1])


def write_midi(path: Path, pitches: list[int], start: float, note: float = 0.25, end=None):
    midi = pretty_midi.PrettyMIDI()
    piano = pretty_midi.Instrument(program=0)
    for i, pitch in enumerate(pitches):
        piano.notes.append(pretty_midi.Note(100, pitch, start + i * note, start + (i + 1) * note))
    midi.instruments.append(piano)
    if end is not None:  # a trailing rest: a meta event after the last note
        midi.text_events.append(pretty_midi.Text("end", end))
    midi.write(str(path))


# --- loudness ---------------------------------------------------------------------------------


def test_k_weighting_reproduces_the_bs1770_coefficients_at_48k():
    # ITU-R BS.1770-4, Tables 1 and 2 (the only rate the standard tabulates).
    expected = [
        [1.53512485958697, -2.69169618940638, 1.19839281085285, 1, -1.69065929318241, 0.73248077421585],  # noqa: E501
        [1.0, -2.0, 1.0, 1.0, -1.99004745483398, 0.99007225036621],
    ]  # fmt: skip
    np.testing.assert_allclose(k_weighting(48000), expected, atol=1e-12)


@pytest.mark.parametrize("rate", [44100, 48000])
@pytest.mark.parametrize("level", [-23.0, -33.0])
def test_ebu_tech_3341_sine_cases(rate, level):
    # EBU Tech 3341 cases 1 and 2: stereo 1 kHz sine at -23 / -33 dBFS reads -23 / -33 LUFS.
    x = tone(20.0, rate, 1000.0, 10 ** (level / 20))
    assert integrated_loudness(stereo(x), rate) == pytest.approx(level, abs=0.1)


def test_gating_matches_ffmpeg_ebur128(tmp_path):
    # Loud noise, a much quieter stretch (below the relative gate) and silence (below the
    # absolute gate): both gates matter, and ffmpeg's scanner is the reference.
    rng = np.random.default_rng(7)
    loud = rng.normal(0, 0.1, (3 * RATE, 2))
    quiet = rng.normal(0, 0.002, (4 * RATE, 2))
    x = np.concatenate([loud, quiet, np.zeros((2 * RATE, 2)), 0.3 * loud]).astype(np.float32)
    assert integrated_loudness(x, RATE) == pytest.approx(
        ffmpeg_loudness(x, RATE, tmp_path), abs=0.15
    )
    # the relative gate drops the quiet stretch: it reads as the loud parts alone
    loud_only = np.concatenate([loud, 0.3 * loud])
    assert integrated_loudness(x, RATE) == pytest.approx(
        integrated_loudness(loud_only, RATE), abs=0.2
    )


def test_mono_and_three_channel_signals_match_ffmpeg(tmp_path):
    rng = np.random.default_rng(3)
    x = (rng.normal(0, 0.05, (2 * 48000, 3)) * [1.0, 0.5, 0.2]).astype(np.float32)
    for signal in (x[:, :1], x):
        ours = integrated_loudness(signal, 48000)
        assert ours == pytest.approx(ffmpeg_loudness(signal, 48000, tmp_path), abs=0.15)


@settings(max_examples=25, deadline=None)
@given(gain_db=st.floats(-30, 10), seed=st.integers(0, 2**16))
def test_loudness_shifts_exactly_with_gain(gain_db, seed):
    x = np.random.default_rng(seed).normal(0, 0.05, (RATE, 2))
    shifted = integrated_loudness(x * 10 ** (gain_db / 20), RATE)
    assert shifted == pytest.approx(integrated_loudness(x, RATE) + gain_db, abs=1e-6)


def test_silence_has_no_loudness_and_short_clips_have_one():
    assert integrated_loudness(np.zeros((RATE, 1)), RATE) == float("-inf")
    short = tone(0.2, freq=1000.0, amp=10 ** (-23 / 20))
    assert integrated_loudness(stereo(short), RATE) == pytest.approx(-23.0, abs=0.3)


# --- trimming ---------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    lead=st.floats(0.0, 3.0),
    body=st.floats(0.05, 3.0),
    trail=st.floats(0.0, 3.0),
    freq=st.floats(80.0, 4000.0),
    amp=st.floats(0.001, 1.0),
    keep_ms=st.sampled_from([0.0, 50.0, 100.0]),
)
def test_trimmed_duration_is_within_10_ms_of_the_truth(lead, body, trail, freq, amp, keep_ms):
    x = np.concatenate([silence(lead), tone(body, freq=freq, amp=amp), silence(trail)])
    trimmed = trim_silence(stereo(x), RATE, -50.0, keep_ms)
    keep = keep_ms / 1000
    truth = min(lead, keep) + body + min(trail, keep)
    assert abs(len(trimmed) / RATE - truth) <= 0.010


def test_bounds_are_sample_exact_for_a_tone_burst():
    x = np.concatenate([silence(1.3), tone(2.0, freq=441.0), silence(0.7)])
    start, end = audible_bounds(x[:, None], RATE, -50.0)
    onset, offset = round(1.3 * RATE), round(3.3 * RATE)
    assert onset <= start <= onset + 2  # sin(0) = 0: the first audible sample may be the next
    assert offset - 2 <= end <= offset


def test_threshold_is_relative_to_the_clip_peak():
    x = np.concatenate([silence(0.5), tone(1.0), silence(0.5)])
    rng = np.random.default_rng(1)
    noisy = x + rng.normal(0, 0.5 * 10 ** (-70 / 20), len(x)).astype(np.float32)  # -70 dB floor
    for scale in (1.0, 1e-3):  # a quiet recording is trimmed like a loud one
        trimmed = trim_silence((scale * noisy)[:, None], RATE, -50.0, 0.0)
        assert len(trimmed) / RATE == pytest.approx(1.0, abs=0.010)
    # a floor above the threshold is not silence: nothing is trimmed
    assert len(trim_silence(noisy[:, None], RATE, -80.0, 0.0)) == len(noisy)


def test_isolated_clicks_in_silence_are_not_audible():
    x = np.concatenate([silence(1.0), tone(1.0), silence(1.0)])
    x[RATE // 2] = 0.5 * 10 ** (-40 / 20)  # a single sample 40 dB below the peak
    start, end = audible_bounds(x[:, None], RATE, -50.0)
    assert start >= RATE and end <= 2 * RATE


def test_silent_clips_have_no_bounds():
    assert audible_bounds(np.zeros((RATE, 2), np.float32), RATE) is None
    assert trim_silence(np.zeros((RATE, 2), np.float32), RATE) is None


# --- codecs -----------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("rate", [22050, 44100, 48000])
def test_encoded_files_decode_back_with_the_expected_duration(tmp_path, fmt, rate):
    clip = Audio(stereo(tone(1.37, rate)), rate)
    path = tmp_path / f"clip.{fmt}"
    encode(clip, path, fmt)
    back = decode(path)
    assert back.rate == rate and back.samples.shape[1] == 2
    assert abs(back.seconds - clip.seconds) <= 0.010
    assert clip_seconds(path) == pytest.approx(back.seconds)


def test_decode_resamples_and_downmixes(tmp_path):
    path = tmp_path / "x.wav"
    scipy.io.wavfile.write(path, 48000, stereo(tone(1.0, 48000)))
    audio = decode(path, sample_rate=22050, mono=True)
    assert audio.rate == 22050 and audio.samples.shape == (22050, 1)


def test_decode_reads_integer_and_float_wav_alike(tmp_path):
    x = tone(0.5)
    scipy.io.wavfile.write(tmp_path / "f.wav", RATE, x)
    scipy.io.wavfile.write(tmp_path / "i.wav", RATE, np.round(x * 32767).astype(np.int16))
    a, b = decode(tmp_path / "f.wav"), decode(tmp_path / "i.wav")
    np.testing.assert_allclose(a.samples, b.samples, atol=1 / 32767)


@pytest.mark.parametrize("content", [b"", b"not audio at all" * 50, b"RIFF\x00\x00"])
def test_decode_gives_a_reason_for_bad_files(tmp_path, content):
    path = tmp_path / "bad.wav"
    path.write_bytes(content)
    with pytest.raises(ClipError) as error:
        decode(path)
    assert str(error.value) and "\n" not in str(error.value)


# --- MIDI -------------------------------------------------------------------------------------


def test_midi_with_leading_and_trailing_rests_is_trimmed(tmp_path):
    path = tmp_path / "rests.mid"
    write_midi(path, [60, 64, 67, 72, 67, 64], start=2.0, note=0.25, end=5.5)
    assert clip_seconds(path) == pytest.approx(5.5)
    audio = render_midi(path)
    assert audio.seconds == pytest.approx(5.5, abs=1e-3)
    start, end = audible_bounds(audio.samples, audio.rate)
    assert start / audio.rate == pytest.approx(2.0, abs=0.010)
    assert end / audio.rate == pytest.approx(3.5, abs=0.010)
    options = PrepareOptions(keep_ms=100.0)
    trimmed, peak, loudness = process(audio, options)
    assert trimmed.seconds == pytest.approx(1.5 + 0.2, abs=0.010)
    assert loudness == pytest.approx(-23.0) and peak <= -1.0


def test_midi_without_notes_or_with_drums_only_is_refused(tmp_path):
    empty, drums = tmp_path / "empty.mid", tmp_path / "drums.mid"
    pretty_midi.PrettyMIDI().write(str(empty))
    midi = pretty_midi.PrettyMIDI()
    kit = pretty_midi.Instrument(program=0, is_drum=True)
    kit.notes.append(pretty_midi.Note(100, 36, 0.0, 0.5))
    midi.instruments.append(kit)
    midi.write(str(drums))
    for path in (empty, drums):
        with pytest.raises(ClipError, match="no notes"):
            render_midi(path)


def test_a_file_that_is_not_midi_is_refused(tmp_path):
    path = tmp_path / "fake.mid"
    path.write_bytes(b"MThd but not really")
    with pytest.raises(ClipError, match="not a readable MIDI file"):
        render_midi(path)


# --- processing -------------------------------------------------------------------------------


def test_peak_ceiling_caps_the_normalisation_gain():
    x = np.zeros(2 * RATE, np.float32)
    x[:: RATE // 4] = 0.9  # sparse clicks: very low loudness, high peak
    audio = Audio(x[:, None], RATE)
    _, peak, loudness = process(audio, PrepareOptions(trim_silence=False))
    assert peak == pytest.approx(-1.0) and loudness < -23.0


def test_excerpt_cuts_to_max_seconds_with_a_fade():
    audio = Audio(stereo(tone(5.0)), RATE)
    cut, _, _ = process(audio, PrepareOptions(max_seconds=2.0))
    assert cut.seconds == pytest.approx(2.0)
    assert np.abs(cut.samples[-10:]).max() < 1e-2
    whole, _, _ = process(audio, PrepareOptions(max_seconds=None))
    assert whole.seconds == pytest.approx(5.0)


def test_keep_level_leaves_the_samples_alone():
    audio = Audio(stereo(tone(1.0, amp=0.1)), RATE)
    same, peak, _ = process(audio, PrepareOptions(loudness=None, trim_silence=False))
    np.testing.assert_array_equal(same.samples, audio.samples)
    assert peak == pytest.approx(20 * np.log10(0.1), abs=1e-3)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_high_rate_sources_are_encoded_at_48k(tmp_path, fmt):
    clip = Audio(stereo(tone(0.5, 96000)), 96000)
    encode(clip, tmp_path / f"hi.{fmt}", fmt)
    back = decode(tmp_path / f"hi.{fmt}")
    assert back.rate == 48000 and back.seconds == pytest.approx(0.5, abs=0.010)


def test_an_impossible_encoding_is_a_reason_and_leaves_no_file(tmp_path):
    source = tmp_path / "x.wav"
    scipy.io.wavfile.write(source, RATE, stereo(tone(1.0)))
    output = tmp_path / "out" / "x.ogg"
    with pytest.raises(ClipError, match="encoding to ogg with bitrate 1k failed: Error while"):
        prepare_file(source, output, PrepareOptions(format="ogg", bitrate="1k"))
    assert list(output.parent.iterdir()) == []


def test_a_soundfont_without_pyfluidsynth_falls_back_to_the_sine_synthesiser(tmp_path):
    soundfont = tmp_path / "font.sf2"
    soundfont.write_bytes(b"RIFF")
    expected = "fluidsynth" if importlib.util.find_spec("fluidsynth") else "sine"
    assert renderer(soundfont) == expected and renderer(None) == "sine"
    assert PrepareOptions(soundfont=soundfont).fingerprint() != PrepareOptions().fingerprint()


def test_fluidsynth_renders_with_pretty_midis_soundfont(tmp_path):
    pytest.importorskip("fluidsynth")
    soundfont = Path(pretty_midi.__file__).parent / "TimGM6mb.sf2"
    path = tmp_path / "rests.mid"
    write_midi(path, [60, 64, 67], start=1.0, note=0.5)
    audio = render_midi(path, soundfont=soundfont)
    start, _ = audible_bounds(audio.samples, audio.rate)
    assert start / audio.rate == pytest.approx(1.0, abs=0.05)
