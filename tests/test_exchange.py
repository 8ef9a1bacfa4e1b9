"""Exchange formats: crowd-kit's pairwise frame, choix's comparisons, preference qrels."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from crowdprefs import exchange, io
from crowdprefs.errors import InputError

ANSWERS = pd.DataFrame(
    [
        ("w1", "q1", "a", "b", "left"),
        ("w2", "q1", "b", "a", "left"),
        ("w1", "q1", "a", "c", "equal"),
        ("w3", "q1", "c", "b", "right"),
        ("w1", "q2", "x", "y", "right"),
    ],
    columns=exchange.PREFERENCE_COLUMNS,
)
DECIDED = ANSWERS[ANSWERS["label"] != "equal"]


def test_crowdkit_frames_name_the_preferred_item_and_drop_or_split_ties():
    frame = exchange.to_crowdkit(ANSWERS, query="q1")
    assert list(frame.columns) == ["worker", "left", "right", "label"]
    assert frame.values.tolist() == [
        ["w1", "a", "b", "a"],
        ["w2", "b", "a", "b"],
        ["w3", "c", "b", "b"],
    ]
    split = exchange.to_crowdkit(ANSWERS, query="q1", ties="split")
    assert split.values.tolist()[2:4] == [["w1", "a", "c", "a"], ["w1", "a", "c", "c"]]
    assert len(split) == 5


def test_crowdkit_frames_round_trip():
    one = DECIDED[DECIDED["query"] == "q1"].reset_index(drop=True)
    back = exchange.from_crowdkit(exchange.to_crowdkit(one), query="q1")
    pd.testing.assert_frame_equal(back, exchange.preference_frame(one))
    with pytest.raises(InputError, match="row 0: crowd-kit label 'equal' is neither"):
        exchange.from_crowdkit(
            pd.DataFrame([("w", "a", "b", "equal")], columns=["worker", "left", "right", "label"])
        )


def test_choix_comparisons_are_winner_loser_indices_into_the_sorted_items():
    items, comparisons = exchange.to_choix(ANSWERS, query="q1")
    assert items == ["a", "b", "c"]
    assert comparisons == [(0, 1), (1, 0), (1, 2)]
    _, split = exchange.to_choix(ANSWERS, query="q1", ties="split")
    assert split == [(0, 1), (1, 0), (0, 2), (2, 0), (1, 2)]


def test_choix_comparisons_round_trip():
    items, comparisons = exchange.to_choix(DECIDED, query="q1")
    back = exchange.from_choix(items, comparisons, query="q1")
    assert back["label"].eq("left").all() and back["worker"].eq("choix").all()
    assert exchange.to_choix(back) == (items, comparisons)
    winners = [items[w] for w, _ in comparisons]
    assert back["left"].tolist() == winners
    with pytest.raises(InputError, match="comparison 1: item index 3 is outside 0..2"):
        exchange.from_choix(items, [(0, 1), (3, 0)])
    with pytest.raises(InputError, match=r"comparison 0: item index '0' is not an integer"):
        exchange.from_choix(items, [("0", 1)])
    with pytest.raises(
        InputError, match=r"comparison 0: \(0, 1, 2\) is not a \(winner, loser\) pair"
    ):
        exchange.from_choix(items, [(0, 1, 2)])
    with pytest.raises(InputError, match="left and right are the same item 'a'"):
        exchange.from_choix(items, [(0, 0)])


def test_one_query_at_a_time_and_a_known_convention_for_ties():
    with pytest.raises(InputError, match=r"hold 2 queries \('q1', 'q2'\).*query="):
        exchange.to_crowdkit(ANSWERS)
    with pytest.raises(InputError, match="no query 'q9'"):
        exchange.to_choix(ANSWERS, query="q9")
    with pytest.raises(InputError, match="ties must be 'drop' or 'split'"):
        exchange.to_choix(ANSWERS, query="q1", ties="half")


LISTS = pd.DataFrame(
    [
        ("q1", "a", 1),
        ("q1", "b", 1),
        ("q1", "c", 2),
        ("q1", "d", 3),
        ("q1", "e", 3),
        ("q2", "x", 1),
        ("q2", "y", 2),
    ],
    columns=["query", "document", "group"],
)


def test_preference_qrels_round_trip_and_grade_the_first_group_highest(tmp_path):
    path = tmp_path / "lists.qrels"
    io.write_preference_qrels(LISTS, path)
    assert path.read_text().splitlines()[:3] == ["q1\t0\ta\t3", "q1\t0\tb\t3", "q1\t0\tc\t2"]
    back = io.read_preference_qrels(path)
    pd.testing.assert_frame_equal(back, LISTS)
    path.write_text(path.read_text() + "q2 0 z 0\n")
    assert "z" not in set(io.read_preference_qrels(path)["document"])


def test_ir_measures_compat_scores_the_groups_as_a_partial_order(tmp_path):
    ir_measures = pytest.importorskip("ir_measures")
    path = tmp_path / "lists.qrels"
    io.write_preference_qrels(LISTS, path)
    compat = ir_measures.Compat(p=0.8)

    def score(order: list[str], path=path) -> float:
        """Compat of a run ranking ``order`` for q1 (the only query the run answers)."""
        run = [
            ir_measures.ScoredDoc("q1", doc, float(len(order) - rank))
            for rank, doc in enumerate(order)
        ]
        qrels = ir_measures.read_trec_qrels(str(path))
        (metric,) = [m for m in ir_measures.iter_calc([compat], qrels, run) if m.query_id == "q1"]
        return metric.value

    # any order within a group is ideal; crossing groups costs
    assert score(["a", "b", "c", "d", "e"]) == pytest.approx(1.0)
    assert score(["b", "a", "c", "e", "d"]) == pytest.approx(1.0)
    assert score(["c", "a", "b", "d", "e"]) < 1.0
    assert score(["a", "b", "d", "c", "e"]) < 1.0
    # the file read back and written again is scored the same
    again = tmp_path / "again.qrels"
    io.write_preference_qrels(io.read_preference_qrels(path), again)
    for order in (["c", "a", "e"], ["d", "b", "a", "c"]):
        assert score(order, again) == score(order, path)


def test_answer_files_read_back_what_the_writers_write(tmp_path):
    answers = ANSWERS.assign(seconds=[3.5, None, 2.0, 7.25, 1.0])
    path = tmp_path / "long.csv"
    path.write_text(exchange.long_csv(answers), encoding="utf-8")
    back = exchange.read_preferences(path)
    assert back[exchange.PREFERENCE_COLUMNS].values.tolist() == ANSWERS.values.tolist()
    assert back["seconds"].isna().tolist() == [False, True, False, False, False]
    crowdkit = tmp_path / "ck.csv"
    crowdkit.write_text(exchange.crowdkit_csv(ANSWERS, query="q1"), encoding="utf-8")
    read = exchange.read_preferences(crowdkit, "crowdkit", query="q1")
    assert (
        read.values.tolist()
        == exchange.preference_frame(DECIDED[DECIDED["query"] == "q1"]).values.tolist()
    )
    data = json.loads(exchange.choix_json(ANSWERS, query="q1", ties="split"))
    assert data == {
        "query": "q1",
        "items": ["a", "b", "c"],
        "comparisons": [[0, 1], [1, 0], [0, 2], [2, 0], [1, 2]],
    }


def test_answer_files_name_the_file_and_row_of_a_bad_answer(tmp_path):
    path = tmp_path / "lab.csv"
    path.write_text("worker,query,left,right,label\nw,q,a,b,left\nw,q,a,b,maybe\n")
    with pytest.raises(InputError, match=r"lab.csv: answers row 2: label 'maybe' is neither"):
        exchange.read_preferences(path)
    path.write_text("worker,left,right,label\nw,a,b,equal\n")
    with pytest.raises(InputError, match=r"lab.csv: answers row 1: crowd-kit label 'equal'"):
        exchange.read_preferences(path, "crowdkit", query="q")
    with pytest.raises(InputError, match="unknown answers format 'xml': use long or crowdkit"):
        exchange.read_preferences(path, "xml")


def test_answer_ids_follow_the_content_and_number_repeats():
    twice = pd.concat([ANSWERS, ANSWERS.iloc[[0]]], ignore_index=True)
    ids = exchange.answer_ids(exchange.preference_frame(twice))
    assert ids.iloc[0].endswith("-1") and ids.iloc[5].endswith("-2")
    assert ids.iloc[0][:-2] == ids.iloc[5][:-2] and ids.nunique() == 6
    again = exchange.answer_ids(exchange.preference_frame(ANSWERS.iloc[::-1]))
    assert sorted(again) == sorted(ids.iloc[:5])


def test_a_long_file_is_checked_once_per_distinct_name_yet_names_the_first_bad_row(tmp_path):
    """Names and labels are checked per distinct value: labels of any case and spacing still
    read, each answer keeps its own id, and a hidden character in a name repeated down the file
    is reported at its first row."""
    rows = ["worker,query,left,right,label"] + [
        f"w{i % 3},q,a{i // 3},b,{label}"
        for i, label in enumerate([" LEFT", "Equal ", "right"] * 4)
    ]
    path = tmp_path / "answers.csv"
    path.write_text("\n".join(rows) + "\n", "utf-8")
    read = exchange.read_preferences(path)
    assert read["label"].tolist() == ["left", "equal", "right"] * 4
    ids = exchange.answer_ids(read)
    assert (
        ids.str.endswith("-1").all()
        and ids.nunique() == 12
        and ids.tolist() == exchange.answer_ids(read).tolist()
    )
    rows[4], rows[7] = "w\u200b1,q,a1,b,left", "w\u200b1,q,a2,b,left"  # answers 4 and 7
    path.write_text("\n".join(rows) + "\n", "utf-8")
    with pytest.raises(InputError, match=r"row 4: worker 'w\\u200b1' holds .*U\+200B"):
        exchange.read_preferences(path)
