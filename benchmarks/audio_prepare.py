"""Clips per second of ``audio_prep.prepare_clips`` at 1 and 2 jobs, and for a cached rerun.

The corpus is made here: the demo's MIDI melodies (the preference-judgments paper's incipits:
rendered, trimmed, normalised, encoded to MP3) and 30-second stereo WAV excerpts with leading and
trailing silence (the MTC paper's audio clips). The baseline is the same corpus at one job, in the
same run.

    python benchmarks/audio_prepare.py [--melodies 3] [--wavs 6] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path

import numpy as np
import scipy.io.wavfile

from audio_prep import PrepareOptions, prepare_clips
from examples.melodies import make_example

RATE = 44100


def make_corpus(root: Path, queries: int, wavs: int) -> tuple[Path, int]:
    """Write the melodies and the WAV excerpts under ``root``; their folder and number."""
    table = make_example(root, seed=7, sizes=(10,) * queries)
    (root / "midi" / "wav").mkdir()
    rng = np.random.default_rng(7)
    for i in range(wavs):
        body = rng.normal(0, 0.1, (28 * RATE, 2)) * np.hanning(28 * RATE)[:, None] ** 0.1
        silence = np.zeros((RATE, 2))
        clip = np.concatenate([silence, body, silence]).astype(np.float32)
        scipy.io.wavfile.write(root / "midi" / "wav" / f"excerpt{i:02d}.wav", RATE, clip)
    return root / "midi", len(table) + table["query"].nunique() + wavs


def cpu_seconds() -> float:
    """CPU time of this process and of every finished descendant (workers, ffmpeg)."""
    return sum(
        usage.ru_utime + usage.ru_stime
        for usage in map(resource.getrusage, (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    )


def timed(src: Path, dst: Path, jobs: int) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and cache hits of one run."""
    start, cpu = time.perf_counter(), cpu_seconds()
    table = prepare_clips(src, dst, PrepareOptions(), jobs=jobs)
    seconds, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    if (table["error"] != "").any():
        raise SystemExit(f"unexpected failures:\n{table[table['error'] != '']}")
    return seconds, cpu, int(table["cached"].sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--melodies", type=int, default=3, help="queries of 10 variations each")
    parser.add_argument("--wavs", type=int, default=6, help="30 s stereo WAV excerpts")
    parser.add_argument("--jobs", type=int, default=2, help="jobs to compare with one")
    parser.add_argument(
        "--json", action="store_true", help="End with one line of JSON: the figures measured."
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        src, clips = make_corpus(root / "example", args.melodies, args.wavs)
        print(f"corpus: {clips} clips ({clips - args.wavs} MIDI melodies, {args.wavs} WAV x 30 s)")
        one, one_cpu, _ = timed(src, root / "one", 1)
        many, many_cpu, _ = timed(src, root / "many", args.jobs)
        cached, _, hits = timed(src, root / "many", args.jobs)
        assert hits == clips
    rss = max(
        resource.getrusage(w).ru_maxrss for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
    )
    speedup = f"= {one / many:.2f}x 1 job"
    print(
        f"1 job        : {clips / one:7.2f} clips/s ({one:.1f} s; {one_cpu / clips:.2f} CPU s/clip)"
    )
    print(
        f"{args.jobs} jobs       : {clips / many:7.2f} clips/s ({many:.1f} s; "
        f"{many_cpu / clips:.2f} CPU s/clip)  {speedup}"
    )
    print(f"cached rerun : {clips / cached:7.2f} clips/s ({cached:.2f} s)  = {one / cached:.0f}x")
    print(f"load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"peak RSS (largest process): {rss / 1024:.0f} MiB")
    if args.json:
        figures = {
            "clips": clips,
            "one_rate": clips / one,
            "many_rate": clips / many,
            "speedup": one / many,
            "cached_rate": clips / cached,
            "cached_ratio": one / cached,
            "cpu_per_clip": many_cpu / clips,
            "peak_mib": rss / 1024,
            "load_average": os.getloadavg()[0],
        }
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
