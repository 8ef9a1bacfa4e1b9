"""Synthetic melodies for the demo: query melodies and their variations, written as MIDI.

Seed ``002_b9503f18ee81843c.txt`` describes the variations a melodic-similarity collection holds
(§2.2, §3.1): the same melody in another key, with notes changed or missing, with leading or
trailing rests. Here they are made on purpose, so the demo prepares real audio (rendered,
trimmed and encoded by :mod:`audio_prep`) and the simulated crowd has a hidden truth:

* **distance**: the melodic edit distance to the query, the Levenshtein distance between the
  two pitch sequences minimised over transpositions, so that a change of key or rests cost
  nothing (a listener cannot tell them apart once rests are trimmed, §2.2 and §4.1) while each
  changed or dropped note costs one edit;
* **group**: the dense rank of the distance (group 1 = most similar), the partially ordered list
  the crowd should recover.

Notes are dropped from the inside of a melody only: a melody cut at either end is "part of" the
other, which the preference-judgments paper (§4.1) counts as equally similar.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import pretty_midi

#: Candidates per query: 118 in all, from 4 to 23, like the preference-judgments paper's Eval05.
QUERY_SIZES = (4, 6, 7, 8, 9, 10, 11, 12, 14, 14, 23)
MAJOR_SCALE = np.array([0, 2, 4, 5, 7, 9, 11])
NOTE_SECONDS = (0.25, 0.25, 0.5, 0.5, 0.75)


@dataclass(frozen=True)
class Melody:
    """A monophonic melody: MIDI pitches, each note's length in seconds, and rests (seconds)
    before the first and after the last note."""

    pitches: tuple[int, ...]
    seconds: tuple[float, ...]
    lead: float = 0.0
    trail: float = 0.0

    def to_midi(self, program: int = 0, velocity: int = 90) -> pretty_midi.PrettyMIDI:
        """One instrument, notes back to back; a trailing rest is kept by a text event."""
        midi = pretty_midi.PrettyMIDI()
        instrument = pretty_midi.Instrument(program=program)
        ends = self.lead + np.cumsum(self.seconds)
        for pitch, start, end in zip(self.pitches, ends - self.seconds, ends, strict=True):
            instrument.notes.append(pretty_midi.Note(velocity, int(pitch), start, end))
        midi.instruments.append(instrument)
        if self.trail > 0:
            midi.text_events.append(pretty_midi.Text("end", float(ends[-1] + self.trail)))
        return midi

    def write(self, path: Path) -> None:
        """Write the melody as a standard MIDI file."""
        path.parent.mkdir(parents=True, exist_ok=True)
        self.to_midi().write(str(path))


@dataclass(frozen=True)
class Variation:
    """A variation of a query melody, what was done to it, and its distance to the query."""

    melody: Melody
    transposition: int
    changed: int
    dropped: int
    distance: int


def edit_distance(a: Sequence[int], b: Sequence[int]) -> int:
    """Levenshtein distance (unit insertions, deletions, substitutions) between two sequences.

    Row by row, each row vectorised: ``D[i, j] = min(D[i-1, j] + 1, D[i-1, j-1] + [a_i != b_j],
    D[i, j-1] + 1)``; the running insertions are ``min_k≤j (T[k] - k) + j``.
    """
    b = np.asarray(b)
    index = np.arange(len(b) + 1)
    row = index.copy()
    for i, x in enumerate(a, start=1):
        step = np.empty_like(row)
        step[0] = i
        step[1:] = np.minimum(row[1:] + 1, row[:-1] + (b != x))
        row = np.minimum.accumulate(step - index) + index
    return int(row[-1])


def melodic_distance(query: Sequence[int], other: Sequence[int]) -> int:
    """Edit distance between pitch sequences, minimised over transpositions of ``other``.

    Only shifts that align at least one pair of notes can beat the untransposed distance, so
    those (and 0) are the candidates."""
    q, o = np.asarray(query), np.asarray(other)
    shifts = np.union1d(np.subtract.outer(o, q).ravel(), [0])
    return min(edit_distance(q, o - shift) for shift in shifts)


def random_melody(rng: np.random.Generator, notes: int = 12, tonic: int = 60) -> Melody:
    """A random walk on the major scale (steps of at most a third) with mixed note lengths."""
    steps = rng.choice([-2, -1, -1, 0, 1, 1, 2], size=notes - 1)
    degrees = np.clip(np.concatenate([[0], np.cumsum(steps)]), -5, 12)
    pitches = tonic + 12 * (degrees // 7) + MAJOR_SCALE[degrees % 7]
    return Melody(tuple(int(p) for p in pitches), tuple(rng.choice(NOTE_SECONDS, size=notes)))


def vary(
    query: Melody,
    rng: np.random.Generator,
    transposition: int = 0,
    changed: int = 0,
    dropped: int = 0,
    lead: float = 0.0,
    trail: float = 0.0,
) -> Variation:
    """``query`` transposed, with ``changed`` notes moved by 1–5 semitones and ``dropped``
    inner notes removed (distinct positions), and with the given rests."""
    n = len(query.pitches)
    if changed + dropped > n - 2:
        raise ValueError(f"{changed} changed + {dropped} dropped notes need more than {n} notes")
    inner = rng.permutation(np.arange(1, n - 1))
    gone = set(inner[:dropped].tolist())
    moved = rng.choice(np.delete(np.arange(n), inner[:dropped]), size=changed, replace=False)
    pitches = np.asarray(query.pitches) + transposition
    pitches[moved] += rng.choice([-5, -4, -3, -2, -1, 1, 2, 3, 4, 5], size=changed)
    keep = [i for i in range(n) if i not in gone]
    melody = Melody(
        tuple(int(p) for p in pitches[keep]),
        tuple(query.seconds[i] for i in keep),
        lead,
        trail,
    )
    distance = melodic_distance(query.pitches, melody.pitches)
    return Variation(melody, transposition, changed, dropped, distance)


def random_variation(query: Melody, rng: np.random.Generator, max_edits: int = 6) -> Variation:
    """A variation with random key, 0..``max_edits`` edits (changes and drops) and rests."""
    edits = int(rng.integers(0, min(max_edits, len(query.pitches) - 2) + 1))
    dropped = int(rng.integers(0, edits + 1))
    rests = [0.0, 0.0, 0.5, 1.0, 2.0]
    return vary(
        query,
        rng,
        transposition=int(rng.integers(-7, 8)),
        changed=edits - dropped,
        dropped=dropped,
        lead=float(rng.choice(rests)),
        trail=float(rng.choice(rests)),
    )


def make_example(
    root: Path, seed: int = 2010, sizes: Sequence[int] = QUERY_SIZES, notes: int = 12
) -> pd.DataFrame:
    """Write ``root/candidates.csv`` and the MIDI files it names (``root/midi/QUERY/...``).

    Returns the candidates with their hidden truth: ``query, document, audio, query_audio``
    (paths relative to ``root``), ``distance`` (edits to the query) and ``group`` (dense rank
    of the distance within the query, 1 = most similar). Queries start with a rest, as many
    incipits of the preference-judgments paper (§4.1) did.
    """
    root = Path(root)
    rng = np.random.default_rng([seed, 0x3E10])
    rows = []
    for q, size in enumerate(sizes, start=1):
        query = f"q{q:02d}"
        melody = replace(random_melody(rng, notes), lead=float(rng.choice([0.0, 0.5, 1.5])))
        query_audio = f"midi/{query}/{query}.mid"
        melody.write(root / query_audio)
        for v in range(1, size + 1):
            document = f"{query}-v{v:02d}"
            variation = random_variation(melody, rng)
            audio = f"midi/{query}/{document}.mid"
            variation.melody.write(root / audio)
            rows.append((query, document, audio, query_audio, variation.distance))
    table = pd.DataFrame(rows, columns=["query", "document", "audio", "query_audio", "distance"])
    table["group"] = table.groupby("query")["distance"].rank(method="dense").astype(int)
    partial = root / ".candidates.csv.tmp"
    table[["query", "document", "audio", "query_audio"]].to_csv(partial, index=False)
    os.replace(partial, root / "candidates.csv")
    return table
