"""The baseline chroma + DTW judge against the demo's hidden truth, and its CPU cost per clip.

Writes the demo's melodies (:func:`examples.melodies.make_example`: 11 queries, 118 MIDI
variations whose truth is the dense rank of their melodic edit distance to the query) into a
temporary folder, scores every candidate with :func:`crowdprefs.machine.chroma.chroma_scores`,
and prints, per seed, the Spearman correlation of the scores with the truth (minus the group:
higher = more similar) per query and their mean, and the CPU seconds per clip (this process and
its ffmpeg children; the first call, which loads librosa and compiles, is timed apart). With
``--mp3`` the clips are first rendered and encoded as the HITs' MP3s (:mod:`audio_prep`), so
that decoding goes through ffmpeg as for recorded audio.

Run: ``python benchmarks/chroma_judge.py [--seeds 2010 7 11] [--mp3]``
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import spearmanr

from crowdprefs.campaign.project import read_candidates
from crowdprefs.machine.chroma import chroma_scores
from examples.melodies import make_example


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished children."""
    usages = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return sum(usage.ru_utime + usage.ru_stime for usage in usages)


def as_mp3(root: Path, candidates: pd.DataFrame) -> pd.DataFrame:
    """The candidates with every MIDI clip replaced by an MP3 prepared as for the HITs."""
    from audio_prep import PrepareOptions, prepare_file

    options = PrepareOptions()
    mp3 = {}
    for clip in pd.unique(candidates[["audio", "query_audio"]].to_numpy().ravel()):
        target = root / "mp3" / Path(clip).relative_to(root / "midi").with_suffix(".mp3")
        prepare_file(Path(clip), target, options)
        mp3[clip] = str(target)
    return candidates.assign(
        audio=candidates["audio"].map(mp3), query_audio=candidates["query_audio"].map(mp3)
    )


def run(seed: int, mp3: bool) -> tuple[pd.Series, float, int]:
    """Spearman per query, CPU seconds per clip, and the number of clips, for one seed."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        truth = make_example(root, seed)
        candidates = read_candidates(root / "candidates.csv")
        if mp3:
            candidates = as_mp3(root, candidates)
        clips = pd.unique(candidates[["audio", "query_audio"]].to_numpy().ravel()).size
        started = cpu_seconds()
        scores = chroma_scores(candidates)
        per_clip = (cpu_seconds() - started) / clips
    table = scores.merge(truth, on=["query", "document"], validate="one_to_one")
    rho = table.groupby("query").apply(
        lambda g: spearmanr(g["score"], -g["group"]).statistic, include_groups=False
    )
    return rho, per_clip, clips


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[2010, 7, 11])
    parser.add_argument("--mp3", action="store_true", help="Score prepared MP3 clips, not MIDI.")
    parser.add_argument("--json", action="store_true", help="end with the figures as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:  # warm-up: librosa import, JIT, CQT filters
        root = Path(folder)
        make_example(root, 1, sizes=(2,))
        started = cpu_seconds()
        chroma_scores(read_candidates(root / "candidates.csv"))
        first = cpu_seconds() - started
        print(f"first call (3 clips, librosa loaded and compiled): {first:.2f} CPU s")
    means, worst, costs = [], [], []
    for seed in args.seeds:
        rho, per_clip, clips = run(seed, args.mp3)
        means.append(rho.mean())
        worst.append(rho.min())
        costs.append(per_clip)
        listed = " ".join(f"{q}:{r:+.2f}" for q, r in rho.items())
        print(
            f"seed {seed}: mean Spearman {rho.mean():+.3f} over {len(rho)} queries; "
            f"{per_clip * 1000:.0f} CPU ms per clip ({clips} clips)"
        )
        print(f"  per query: {listed}")
    spread = np.std(means, ddof=1) if len(means) > 1 else 0.0
    print(f"mean over seeds: {np.mean(means):+.3f} (sd {spread:.3f})")
    if args.json:
        figures = {
            "spearman": float(np.mean(means)),
            "spearman_sd": float(spread),
            "worst_query": float(np.min(worst)),
            "seeds": len(means),
            "cpu_ms_per_clip": 1000 * float(np.mean(costs)),
            "first_call_s": first,
        }
        print(json.dumps(figures))


if __name__ == "__main__":
    main()
