"""The store's collection, batches and HITs on either engine: the CSV order kept, id lists
longer than a statement may bind, verdicts saved whole or not at all, HITs recorded once."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crowdprefs.campaign.budget import FeeModel
from crowdprefs.campaign.store import Store
from crowdprefs.errors import StateError

CANDIDATES = pd.DataFrame(
    {  # queries first seen in the order q-b, q-a: not their sorted order
        "query": ["q-b", "q-b", "q-a", "q-a", "q-b"],
        "document": ["d1", "d2", "d3", "d4", "d5"],
        "audio": ["b1.wav", None, "a3.wav", "a4.wav", "b5.wav"],
        "query_audio": [None, "qb.wav", "qa.wav", None, None],
    }
)

PAIRS = pd.DataFrame(
    {
        "query": ["q-b", "q-b", "q-a", "q-b"],
        "x": ["d1", "q-b", "d3", "d1"],  # the second: an attention check, x the query itself
        "y": ["d2", "d2", "d4", "d5"],
        "a_is_x": [1, 0, 1, 0],
        "position": [2, 0, 1, 3],
        "kind": ["sort", "check", "sort", "sort"],
        "expected": [None, 1, None, None],
        "answers_wanted": [3, 3, 3, 3],
    }
)


@pytest.fixture
def store(tmp_path, engine):
    """A state of :data:`CANDIDATES` with batch 1 of :data:`PAIRS` built, on each engine."""
    made = Store(tmp_path / "state.sqlite" if engine is None else engine, create=True)
    made.initialise(7, CANDIDATES)
    made.create_batch(1, PAIRS)
    yield made
    made.close()


def collect(store: Store) -> None:
    """Batch 1 published to ``sim`` and marked collected (the answers are not the point)."""
    store.add_hits("sim", store.pairs(1), 0.05, FeeModel())
    assert store.advance_batch(1, "published", crowd="sim")
    with store.transaction() as conn:
        from crowdprefs.campaign.store import tables

        conn.execute(tables.batches.update().values(status="collected"))


def test_the_collection_keeps_the_csv_order_and_its_clips(store):
    assert store.meta("seed") == "7" and store.meta("absent") is None
    assert store.query_names() == ["q-b", "q-a"]
    assert store.candidate_orders() == {"q-b": ["d1", "d2", "d5"], "q-a": ["d3", "d4"]}
    assert store.queries()["audio"].tolist() == ["qa.wav", "qb.wav"]  # by query
    stored = store.candidates()
    assert stored["document"].tolist() == CANDIDATES["document"].tolist()
    assert stored["position"].tolist() == [0, 1, 2, 3, 4] and stored["seconds"].isna().all()
    assert store.clip_paths() == ["a3.wav", "a4.wav", "b1.wav", "b5.wav", "qa.wav", "qb.wav"]
    store.set_clip("q-b", None, "qb.flac", 2.0)
    store.set_clip("q-b", "d1", "b1.flac", 3.0)
    store.set_clip("q-b", "d2", "b2.flac", 4.0)
    assert store.pair_audio("q-b", "d1", "d2") == ("qb.flac", "b1.flac", "b2.flac")
    assert store.pair_audio("q-b", "q-b", "nowhere") == ("qb.flac", "qb.flac", None)
    check, sort = (int(p) for p in store.pairs(1)["pair_id"].iloc[[0, 2]])  # positions 0, 2
    assert store.batch_size(1) == (4, 2)  # pairs, over queries
    assert store.batches()[["iteration", "status"]].values.tolist() == [[1, "built"]]
    asked = store.pairs(columns=["x", "y"])  # in asking order: by position
    assert asked.columns.tolist() == ["x", "y"] and asked["x"].tolist() == ["q-b", "d3", "d1", "d1"]
    assert store.pair(check)["x"] == "q-b" and store.pair(10**6) is None
    seconds = store.clip_seconds([sort, check, 10**6])
    assert seconds.index.tolist() == [sort, check]  # in the order asked; unknown pairs left out
    assert seconds.loc[check].tolist() == [2.0, 2.0, 4.0]  # a check's x is the query's clip
    assert seconds.loc[sort].tolist() == [2.0, 3.0, 4.0]


def test_id_lists_longer_than_a_statement_may_bind_are_answered_whole(store):
    ids = store.pairs(1)["pair_id"].tolist()
    asked = list(range(10**6, 10**6 + 40_000)) + ids[::-1]  # past SQLite's 32,766 parameters
    seconds = store.clip_seconds(asked)
    assert seconds.index.tolist() == ids[::-1] and seconds.isna().all(axis=None)
    queries = [f"nowhere-{i}" for i in range(40_000)]
    assert store.verdict_maps(queries) == {}


def test_verdicts_are_saved_whole_or_not_at_all(store):
    collect(store)
    pairs = store.pairs(1)
    verdicts = pd.DataFrame(
        {"pair_id": pairs["pair_id"], "verdict": [0, 1, -1, 1], "p_value": [np.nan, 0.01, 0.2, 0.3]}
    )
    with pytest.raises(StateError, match="batch 1 has pairs without a verdict"):
        store.save_verdicts(1, verdicts.iloc[1:])
    assert store.pairs(1)["verdict"].isna().all() and store.last_batch()["status"] == "collected"
    store.save_verdicts(1, verdicts)
    saved = store.pairs(1)
    assert saved["verdict"].tolist() == [0, 1, -1, 1]
    assert saved["p_value"].isna().tolist() == [True, False, False, False]
    assert store.last_batch()["status"] == "aggregated"
    maps = store.verdict_maps()
    assert maps == {"q-a": {("d3", "d4"): 1}, "q-b": {("d1", "d2"): -1, ("d1", "d5"): 1}}
    assert store.verdict_maps(["q-a"]) == {"q-a": {("d3", "d4"): 1}}
    progress = store.query_progress()
    assert {q: judged for q, (_, judged, _) in progress.items()} == {"q-a": 1, "q-b": 2}
    assert store.verdict_fingerprints() == {q: f for q, (_, _, f) in progress.items()}
    with pytest.raises(StateError, match="batch 3 cannot be built: batch 1 is aggregated"):
        store.create_batch(3, PAIRS)


def test_saved_p_values_keep_every_bit_and_nan_is_null(store):
    collect(store)
    pairs = store.pairs(1)
    p_values = [5e-324, 0.1 + 0.2, None, 1 - 2**-53]  # subnormal, inexact, NULL, just below 1
    verdict = np.array([-1, 0, 1, 0], np.int8)  # as the rules give them
    frame = {"pair_id": pairs["pair_id"], "verdict": verdict, "p_value": p_values}
    store.save_verdicts(1, pd.DataFrame(frame).astype({"p_value": float}))
    saved = store.pairs(1)
    assert saved["verdict"].tolist() == [-1, 0, 1, 0]
    assert [None if pd.isna(p) else p for p in saved["p_value"]] == p_values


def test_hits_are_recorded_once_and_resized_by_pair(store):
    pairs = store.pairs(1)
    assert store.unpublished_pairs(1, "sim")["pair_id"].tolist() == pairs["pair_id"].tolist()
    assert store.add_hits("sim", pairs.iloc[:2], 0.05, FeeModel()) == 2
    assert not store.advance_batch(1, "published", crowd="sim")  # two pairs not held yet
    assert store.add_hits("sim", pairs, 0.05, FeeModel()) == 2  # the held two left as they were
    assert store.advance_batch(1, "published", crowd="sim")
    assert store.last_batch()["crowd"] == "sim" and store.batch_crowd(1) == "sim"
    assert store.unpublished_pairs(1, "sim").empty
    assert store.published_pairs(1, "sim")["pair_id"].tolist() == pairs["pair_id"].tolist()
    hits = store.hits("sim")
    assert hits["pair_id"].tolist()[:2] == sorted(pairs["pair_id"].iloc[:2])  # first recorded
    first = int(pairs["pair_id"].iloc[0])
    store.resize_pairs("sim", wanted={first: 2}, sizes={first: 5})
    store.set_hit_status("sim", f"sim-{first}", "expired")
    held = store.batch_hits("sim", 1)
    assert held.loc[first, ["size", "wanted", "rejected"]].tolist() == [5, 2, 0]
    assert store.hits("sim").set_index("pair_id").loc[first, "status"] == "expired"
    prices = store.hit_prices()
    assert dict(zip(prices["size"], prices["hits"], strict=True)) == {3.0: 3.0, 5.0: 1.0}
    short = store.missing_answers(1)
    assert short["pair_id"].tolist() == sorted(pairs["pair_id"])
    assert short.set_index("pair_id")["wanted"].to_dict() == {
        p: 2 if p == first else 3 for p in pairs["pair_id"]
    }
    assert store.missing_answers(1, "sim")["have"].tolist() == [0, 0, 0, 0]


def test_the_sort_cache_keeps_the_latest_state(store):
    assert store.cache_states([("q-a", "0:0", "{}"), ("q-b", "0:0", "[]")])
    assert store.cache_states([("q-a", "1:3", '{"x": 1}')])
    assert store.cached_states() == {"q-a": ("1:3", '{"x": 1}'), "q-b": ("0:0", "[]")}


def test_a_new_sqlite_state_is_whole_in_its_file(tmp_path):
    made = Store(tmp_path / "state.sqlite", create=True)
    made.initialise(7, CANDIDATES)
    wal = tmp_path / "state.sqlite-wal"
    assert not wal.exists() or wal.stat().st_size == 0  # the write-ahead log folded in
    made.close()
