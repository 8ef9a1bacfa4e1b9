"""examples.melodies: melodic edit distances (the simulated crowd's hidden truth) and MIDI."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from audio_prep import audible_bounds, clip_seconds, render_midi
from examples.melodies import (
    QUERY_SIZES,
    Melody,
    edit_distance,
    make_example,
    melodic_distance,
    random_melody,
    vary,
)

pitches = st.lists(st.integers(40, 90), max_size=14)


def naive_levenshtein(a, b) -> int:
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(
                d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])
            )
    return d[-1][-1]


@settings(max_examples=200, deadline=None)
@given(a=pitches, b=pitches)
def test_edit_distance_equals_the_textbook_recurrence(a, b):
    assert edit_distance(a, b) == naive_levenshtein(a, b) == edit_distance(b, a)


@settings(max_examples=60, deadline=None)
@given(a=pitches, b=pitches, shift=st.integers(-12, 12))
def test_melodic_distance_ignores_the_key(a, b, shift):
    distance = melodic_distance(a, b)
    assert distance == melodic_distance(a, [p + shift for p in b])
    assert distance == min(naive_levenshtein(a, [p - t for p in b]) for t in range(-50, 51))
    assert melodic_distance(a, [p + shift for p in a]) == 0


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), changed=st.integers(0, 4), dropped=st.integers(0, 4))
def test_a_variation_is_at_most_its_edits_away(seed, changed, dropped):
    rng = np.random.default_rng(seed)
    query = random_melody(rng, notes=12)
    variation = vary(query, rng, int(rng.integers(-7, 8)), changed, dropped, lead=1.0, trail=0.5)
    assert len(variation.melody.pitches) == 12 - dropped
    assert variation.distance <= changed + dropped
    assert variation.distance >= dropped  # lengths differ by the dropped notes
    if changed + dropped == 1:
        assert variation.distance == 1


def test_key_and_rests_cost_nothing():
    rng = np.random.default_rng(5)
    query = random_melody(rng)
    variation = vary(query, rng, transposition=5, lead=2.0, trail=1.0)
    assert variation.distance == 0
    assert variation.melody.pitches == tuple(p + 5 for p in query.pitches)


def test_too_many_edits_are_refused():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="need more than 5 notes"):
        vary(random_melody(rng, notes=5), rng, changed=2, dropped=2)


def test_rests_survive_the_midi_file_and_are_trimmed(tmp_path):
    melody = Melody((60, 62, 64, 65), (0.5, 0.25, 0.25, 1.0), lead=1.5, trail=2.0)
    path = tmp_path / "m.mid"
    melody.write(path)
    assert clip_seconds(path) == pytest.approx(1.5 + 2.0 + 2.0)
    audio = render_midi(path)
    start, end = audible_bounds(audio.samples, audio.rate)
    assert start / audio.rate == pytest.approx(1.5, abs=0.010)
    assert end / audio.rate == pytest.approx(3.5, abs=0.010)


def test_the_example_collection_is_shaped_like_seed_002(tmp_path):
    table = make_example(tmp_path, seed=1)
    assert len(table) == sum(QUERY_SIZES) == 118
    assert table.groupby("query").size().tolist() == list(QUERY_SIZES)
    csv = pd.read_csv(tmp_path / "candidates.csv")
    assert list(csv.columns) == ["query", "document", "audio", "query_audio"]
    assert all((tmp_path / p).is_file() for p in set(csv["audio"]) | set(csv["query_audio"]))
    # group = dense rank of the distance within each query
    for _, frame in table.groupby("query"):
        order = np.unique(frame["distance"])
        assert (frame["group"] == np.searchsorted(order, frame["distance"]) + 1).all()
    assert table["distance"].min() == 0 and table["distance"].max() <= 6
    again = make_example(tmp_path / "again", seed=1, sizes=QUERY_SIZES[:2])  # seeded
    pd.testing.assert_frame_equal(table.iloc[: len(again)], again)
