"""Readers and writers of runs, level judgments and ordered lists."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdprefs import io
from crowdprefs.errors import InputError


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_trec_run_ranks_by_score_then_given_rank(tmp_path):
    path = write(
        tmp_path,
        "run.txt",
        "q1 Q0 d1 1 0.5 sysA\nq1 Q0 d2 3 0.9 sysA\n\nq1 Q0 d3 2 0.5 sysA\nq2\tQ0\td1\t1\t1\tsysB\n",
    )
    runs = io.read_runs(path)
    assert list(runs.columns) == io.RUN_COLUMNS
    assert runs.to_dict("records") == [
        {"system": "sysA", "query": "q1", "document": "d1", "rank": 2},
        {"system": "sysA", "query": "q1", "document": "d2", "rank": 1},
        {"system": "sysA", "query": "q1", "document": "d3", "rank": 3},
        {"system": "sysB", "query": "q2", "document": "d1", "rank": 1},
    ]
    assert runs["rank"].dtype == "int64"


def test_three_column_run_rank_is_row_order_and_keeps_strings(tmp_path):
    path = write(tmp_path, "run.txt", "s q1 007\ns q2 x\ns q1 nan\nt q1 007\n")
    runs = io.read_runs(path)
    assert runs["document"].tolist() == ["007", "x", "nan", "007"]
    assert runs["rank"].tolist() == [1, 1, 2, 1]


def test_run_folder_reads_one_system_per_file_and_rejects_a_system_twice(tmp_path):
    folder = tmp_path / "runs"
    folder.mkdir()
    write(folder, "a.txt", "q1 Q0 d1 1 2 A\nq1 Q0 d2 2 1 A\n")
    write(folder, "b.txt", "q1 Q0 d2 1 2 B\n")
    write(folder, ".hidden", "garbage\n")
    runs = io.read_runs(folder)
    assert sorted(runs["system"].unique()) == ["A", "B"]
    write(folder, "c.txt", "q9 Q0 d2 1 2 B\n")
    with pytest.raises(InputError, match=r"c\.txt: system 'B' already read from .*b\.txt"):
        io.read_runs(folder)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("s q1 d1\ns q1 d2\ns q1 d1\n", r"line 3: document repeated .*'d1'"),
        ("s q1 d1\n\ns q1\n", r"line 3 has 2 fields, expected 3"),
        ("s q1 d1 x y z w\n", r"line 1 has 7 fields, expected 3 or 6"),
        ("q Q0 d 1 high s\n", r"line 1: score 'high' is not a number"),
        ("q Q0 d 1.5 1 s\n", r"line 1: rank '1.5' is not an integer"),
        ("s q1 d1\ns q1 d2 x\n", r"bad.txt: line 2 has 4 fields, expected 3$"),
    ],
)
def test_bad_runs_give_one_line_naming_file_and_line(tmp_path, text, message):
    path = write(tmp_path, "bad.txt", text)
    with pytest.raises(InputError, match=message) as error:
        io.read_runs(path)
    assert "\n" not in str(error.value)
    assert "bad.txt" in str(error.value)


def test_missing_file_and_empty_folder(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        io.read_runs(tmp_path / "absent.txt")
    with pytest.raises(InputError, match="no run file"):
        io.read_runs(tmp_path)


def test_levels_both_formats(tmp_path):
    plain = io.read_levels(write(tmp_path, "a.txt", "q1\td1\t35\nq1\td2\t0\n"))
    trec = io.read_levels(write(tmp_path, "b.txt", "q1 0 d1 35\nq1 0 d2 0\n"))
    pd.testing.assert_frame_equal(plain, trec)
    assert plain["gain"].tolist() == [35.0, 0.0]
    with pytest.raises(InputError, match=r"line 2: judgment repeated"):
        io.read_levels(write(tmp_path, "c.txt", "q1 d1 1\nq1 d1 2\n"))
    with pytest.raises(InputError, match=r"line 1: gain 'high' is not a number"):
        io.read_levels(write(tmp_path, "d.txt", "q1 d1 high\n"))


def test_lists_read_validate_and_write_sorted_atomically(tmp_path):
    lists = io.read_lists(write(tmp_path, "l.txt", "t q2 e 1\nt q1 c 2\nt q1 b 1\nt q1 a 2\n"))
    assert lists["group"].dtype == "int64"
    out = tmp_path / "out.txt"
    io.write_lists(lists, out, tag="x")
    assert out.read_text() == "x\tq1\tb\t1\nx\tq1\tc\t2\nx\tq1\ta\t2\nx\tq2\te\t1\n"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
    with pytest.raises(InputError, match=r"line 2: group 0 is below 1"):
        io.read_lists(write(tmp_path, "bad.txt", "t q a 1\nt q b 0\n"))


def test_conversions_between_lists_and_levels():
    lists = pd.DataFrame(
        {"query": ["q", "q", "q", "r"], "document": ["a", "b", "c", "a"], "group": [1, 2, 3, 1]}
    )
    levels = io.lists_to_levels(lists)
    assert levels["gain"].tolist() == [3.0, 2.0, 1.0, 1.0]
    assert io.lists_to_levels(lists, gains=[10, 5])["gain"].tolist() == [10.0, 5.0, 0.0, 10.0]
    pd.testing.assert_frame_equal(io.levels_to_lists(levels), lists)


names = st.text(alphabet="abcdefgh0123456789", min_size=1, max_size=4)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(st.tuples(names, names, st.integers(1, 6)), min_size=1, max_size=30),
)
def test_lists_round_trip(tmp_path_factory, rows):
    lists = pd.DataFrame(rows, columns=io.LIST_COLUMNS).drop_duplicates(["query", "document"])
    path = tmp_path_factory.mktemp("lists") / "lists.txt"
    io.write_lists(lists, path)
    back = io.read_lists(path)
    expected = lists.sort_values(["query", "group"], kind="stable").reset_index(drop=True)
    pd.testing.assert_frame_equal(back, expected.astype({"query": str, "document": str}))


@settings(max_examples=40, deadline=None)
@given(rows=st.lists(st.tuples(names, names, names), min_size=1, max_size=30))
def test_runs_round_trip(tmp_path_factory, rows):
    runs = pd.DataFrame(rows, columns=["system", "query", "document"]).drop_duplicates()
    runs["rank"] = runs.groupby(["system", "query"]).cumcount() + 1
    path = tmp_path_factory.mktemp("runs") / "run.txt"
    io.write_runs(runs, path)
    back = io.read_runs(path).sort_values(["system", "query", "rank"]).reset_index(drop=True)
    expected = runs.sort_values(["system", "query", "rank"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(back, expected.astype({"system": str, "query": str}))


def test_read_truth_detects_lists_and_levels(tmp_path):
    lists = io.read_truth(write(tmp_path, "l.txt", "crowd q1 a 1\ncrowd q1 b 2\n"))
    assert list(lists.columns) == io.LIST_COLUMNS
    qrels = io.read_truth(write(tmp_path, "q.txt", "q1 0 a 2\nq1 0 b 0\n"))
    assert list(qrels.columns) == io.LEVEL_COLUMNS
    plain = io.read_truth(write(tmp_path, "p.txt", "q1 a 35\n"))
    assert plain["gain"].tolist() == [35.0]
    forced = io.read_truth(write(tmp_path, "f.txt", "q1 0 a 2\nq1 0 b 1\n"), kind="lists")
    assert forced["query"].tolist() == ["0", "0"]
    with pytest.raises(InputError, match="unknown ground-truth kind"):
        io.read_truth(tmp_path / "q.txt", kind="weird")


def _prior_of(path):
    from crowdprefs.campaign.project import read_candidates
    from crowdprefs.machine.scores import read_prior

    candidates = path.with_name("candidates.csv")
    candidates.write_text("query,document\nq1,a\nq1,b\n", encoding="utf-8")
    return read_prior(path, read_candidates(candidates))


def _readers():
    from crowdprefs.campaign.project import read_candidates
    from crowdprefs.evaluation.stats import read_scores
    from crowdprefs.exchange import read_preferences
    from crowdprefs.quality.audit import read_worker_attribute
    from crowdprefs.quality.review import read_flags
    from crowdprefs.results_file import read_table

    return {
        "candidates": (read_candidates, "query,document\nq1,a,EXTRA\nq1,b\n"),
        "prior": (_prior_of, "query,document,score\nq1,a,1,EXTRA\nq1,b,2\n"),
        "results": (read_table, "HITId,WorkerId\nh1,w1,EXTRA\nh2,w2\n"),
        "answers": (read_preferences, "worker,query,left,right,label\nw,q,a,b,a,EXTRA\n"),
        "flags": (read_flags, "worker_id,reason\nw1,bot,EXTRA\nw2,bot\n"),
        "attribute": (read_worker_attribute, "worker_id,group\nw1,x,EXTRA\nw2,y\n"),
        "scores": (read_scores, "system,query,measure,score\nA,q,ADR,1,EXTRA\n"),
    }


@pytest.mark.parametrize("reader", ["candidates", "prior", "results", "answers", "flags",
                                    "attribute", "scores"])  # fmt: skip
def test_every_csv_reader_refuses_a_first_row_longer_than_its_header(tmp_path, reader):
    """pandas reads a first data row with a field more than the header as a row index and
    shifts every column; every CSV reader refuses it instead, naming the file and line 2 (a
    blank line before it moves the line named)."""
    read, text = _readers()[reader]
    path = tmp_path / f"{reader}.csv"
    for shown, line in ((text, 2), (text.replace("\n", "\n\n", 1), 3)):
        path.write_text(shown, encoding="utf-8")
        with pytest.raises(InputError) as refused:
            read(path)
        assert str(refused.value) == f"{path}:{line}: more fields than the header names"
