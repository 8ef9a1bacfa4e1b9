"""Reading MTurk results CSVs (columns, values, encodings, empty answers) and importing them."""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crowdprefs.campaign import driver
from crowdprefs.campaign.aggregate import pair_verdicts
from crowdprefs.campaign.project import Project, Settings, init_project
from crowdprefs.cli import main
from crowdprefs.crowds.results import import_answers
from crowdprefs.crowds.simulated import SimulatedCrowd
from crowdprefs.demo import create_demo_project
from crowdprefs.errors import InputError
from crowdprefs.quality.flags import worker_profiles
from crowdprefs.quality.frames import infer_iterations, project_answers
from crowdprefs.results_file import Columns, parse_times, read_results, write_results

HEADER = (
    '"HITId","HITTypeId","Reward","CreationTime","MaxAssignments","AssignmentId","WorkerId",'
    '"AssignmentStatus","AcceptTime","SubmitTime","WorkTimeInSeconds","Input.query",'
    '"Input.docA","Input.docB","Answer.radio","Answer.background","Answer.comment"'
)


def mturk_file(path, rows: list[str], encoding: str = "utf-8") -> None:
    path.write_bytes(("\r\n".join([HEADER, *rows]) + "\r\n").encode(encoding))


def row(hit, assignment, worker, answer, background="", comment="", status="Approved"):
    return (
        f'"{hit}","T1","$0.02","Wed Apr 14 10:23:45 PDT 2010","10","{assignment}","{worker}",'
        f'"{status}","Wed Apr 14 11:00:00 PDT 2010","Wed Apr 14 11:00:21 PDT 2010","21",'
        f'"600.054","inc-1","inc-2","{answer}","{background}","{comment}"'
    )


RADIO = Columns(answer="Answer.radio", a_value="a", b_value="b", equal_value="s")


def test_mturk_file_with_custom_values_and_times(tmp_path):
    path = tmp_path / "Batch_1_batch_results.csv"
    mturk_file(
        path, [row("H1", "A1", "W1", "a"), row("H1", "A2", "W2", "s"), row("H1", "A3", "W3", "b")]
    )
    frame = read_results(path, RADIO)
    assert frame["choice"].tolist() == ["A", "equal", "B"]
    assert frame["score"].tolist() == [1, 0, -1]  # x = variation A when no pivot is recorded
    assert (frame["x"] == "inc-1").all() and (frame["y"] == "inc-2").all()
    assert frame["created_at"].iloc[0] == pd.Timestamp("2010-04-14 17:23:45", tz="UTC")
    assert frame["seconds"].tolist() == [21, 21, 21]
    assert frame["reward"].iloc[0] == 0.02 and frame["status"].iloc[0] == "approved"


def test_parse_times_accepts_mturk_and_iso_and_rejects_garbage():
    times = parse_times(
        pd.Series(["Sat Apr 17 01:02:03 PST 2010", "2010-04-17T09:02:03.500Z", ""]), "t"
    )
    assert times.iloc[0] == pd.Timestamp("2010-04-17 09:02:03", tz="UTC")
    assert times.iloc[1] == pd.Timestamp("2010-04-17 09:02:03.500", tz="UTC")
    assert pd.isna(times.iloc[2])
    with pytest.raises(InputError, match="unreadable time 'yesterday'"):
        parse_times(pd.Series(["yesterday"]), "t")
    with pytest.raises(InputError, match="unknown time zone 'XYZ'"):
        parse_times(pd.Series(["Sat Apr 17 01:02:03 XYZ 2010"]), "t")


@pytest.mark.parametrize(
    ("encoding", "expected"),
    [("utf-8-sig", "utf-8"), ("cp1252", "cp1252"), ("latin-1", "cp1252")],
)
def test_any_text_encoding(tmp_path, encoding, expected):
    path = tmp_path / "results.csv"
    comment = "Très bien – ‘nice’" if encoding != "latin-1" else "Très bien, señor"
    mturk_file(path, [row("H1", "A1", "W1", "a", "Piano, 5 años", comment)], encoding)
    frame = read_results(path, RADIO)
    assert frame.attrs["encoding"] == expected
    assert frame["comment"].iloc[0] == comment
    assert frame["background"].iloc[0] == "Piano, 5 años"


def test_latin1_bytes_undefined_in_cp1252_fall_back_to_latin1(tmp_path):
    path = tmp_path / "results.csv"
    mturk_file(path, [row("H1", "A1", "W1", "a", comment="x\x81y")], "latin-1")
    frame = read_results(path, RADIO)
    assert frame.attrs["encoding"] == "latin-1" and frame["comment"].iloc[0] == "x\x81y"


def test_empty_answers_are_kept_and_reported(tmp_path):
    path = tmp_path / "results.csv"
    mturk_file(
        path, [row("H1", "A1", "W1", "a"), row("H1", "A2", "W2", ""), row("H1", "A3", "W2", "b")]
    )
    frame = read_results(path, RADIO)
    assert len(frame) == 3 and frame.attrs["empty_rows"] == [2]
    assert frame["choice"].iloc[1] == "" and np.isnan(frame["score"].iloc[1])
    frame = infer_iterations(frame)
    assert worker_profiles(frame).loc["W2", "empty"] == 1
    assert pair_verdicts(frame)[["more", "less"]].iloc[0].tolist() == [1, 1]


def test_comments_with_newlines_and_quotes(tmp_path):
    path = tmp_path / "results.csv"
    mturk_file(path, [row("H1", "A1", "W1", "a", comment='line one\nsaid ""hi""')])
    assert read_results(path, RADIO)["comment"].iloc[0] == 'line one\nsaid "hi"'


@pytest.mark.parametrize(
    ("rows", "columns", "message"),
    [
        (
            [row("H1", "A1", "W1", "maybe")],
            RADIO,
            r"row 1: unknown answer 'maybe' in Answer\.radio",
        ),
        ([row("H1", "A1", "W1", "a")], Columns(), r"missing column\(s\) Answer\.choice"),
        (
            [row("H1", "A1", "W1", "a"), row("H1", "A1", "W2", "b")],
            RADIO,
            r"rows 1 and 2: the same answer twice \(AssignmentId 'A1'\)",
        ),
        ([], RADIO, "no answers"),
    ],
)
def test_bad_files_raise_one_line(tmp_path, rows, columns, message):
    path = tmp_path / "results.csv"
    mturk_file(path, rows)
    with pytest.raises(InputError, match=message) as error:
        read_results(path, columns)
    assert "\n" not in str(error.value)


def test_answer_values_must_differ():
    with pytest.raises(InputError, match="three distinct"):
        Columns(a_value="x", b_value="x")


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="results file not found"):
        read_results(tmp_path / "nope.csv")


# ------------------------------------------------------------------ import into a project


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """A finished simulated campaign, its lists, and its answers as one results CSV per batch."""
    root = tmp_path_factory.mktemp("recorded")
    project = create_demo_project(root / "demo", seed=77)
    driver.run(project, SimulatedCrowd.for_project(project))
    lists = driver.lists(project)
    answers = project_answers(project)
    files = []
    for iteration, batch in answers.groupby("iteration"):
        path = root / f"batch{iteration}.csv"
        write_results(batch, path)
        files.append(path)
    candidates = project.store.candidates()[["query", "document"]]
    project.close()
    return root, candidates, lists, files


def test_import_batches_into_a_fresh_project_gives_the_same_lists(recorded, tmp_path):
    root, candidates, lists, files = recorded
    frame = candidates.assign(audio="", query_audio="")
    with init_project(tmp_path / "p", frame, seed=77, settings=Settings()) as project:
        for path in files:
            driver.next_batch(project)
            summary = import_answers(project, read_results(path))
            assert summary["batch_collected"] == summary["iterations"][0]
            again = import_answers(project, read_results(path))  # idempotent
            assert again["new"] == 0 and again["already_stored"] == summary["new"]
            driver.aggregate(project)
        assert driver.next_batch(project) is None
        pd.testing.assert_frame_equal(driver.lists(project), lists)


def test_import_rejects_rows_of_another_campaign(recorded, tmp_path):
    root, candidates, lists, files = recorded
    with init_project(
        tmp_path / "p", candidates.assign(audio="", query_audio=""), seed=78
    ) as project:
        driver.next_batch(project)
        with pytest.raises(InputError, match="row 1: HIT .* matches no pair of the project"):
            import_answers(project, read_results(files[-1]))


def test_cli_import_answers(recorded, tmp_path, capsys, monkeypatch):
    root, candidates, lists, files = recorded
    with init_project(tmp_path / "p", candidates.assign(audio="", query_audio=""), seed=77) as p:
        driver.next_batch(p)
    monkeypatch.setattr(
        sys, "argv", ["crowdprefs", "import-answers", str(tmp_path / "p"), str(files[0])]
    )
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert "new answers stored" in out and "batch 1 is complete and collected" in out
    with Project(tmp_path / "p") as project:
        assert project.store.last_batch()["status"] == "collected"


TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\r"), max_size=20
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["A", "B", "equal", ""]),
            st.booleans(),
            st.floats(0, 600, allow_nan=False).map(lambda s: round(s, 1)),
            TEXT,
            TEXT,
        ),
        min_size=1,
        max_size=15,
    )
)
def test_write_then_read_gives_the_same_answers(tmp_path, rows):
    t0 = pd.Timestamp("2010-04-14 10:00:00.123", tz="UTC")
    choice = [r[0] for r in rows]
    a_is_x = [int(r[1]) for r in rows]
    side = pd.Series(choice).map({"A": 1, "B": -1, "equal": 0, "": np.nan})
    frame = pd.DataFrame(
        {
            "iteration": pd.array([1] * len(rows), dtype="Int64"),
            "pair_id": np.arange(len(rows)),
            "hit_id": [f"H{i}" for i in range(len(rows))],
            "created_at": t0,
            "max_assignments": 10.0,
            "reward": 0.02,
            "query": "q,1",
            "x": [f'x "{i}"' for i in range(len(rows))],
            "y": "pivot\u00e9",
            "a_is_x": a_is_x,
            "kind": "sort",
            "expected": np.nan,
            "pivot_known": True,
            "worker_id": [f"W{i % 3}" for i in range(len(rows))],
            "assignment_id": [f"as{i}" for i in range(len(rows))],
            "status": "approved",
            "choice": choice,
            "score": side * np.where(np.array(a_is_x) == 1, 1, -1),
            "seconds": [r[2] for r in rows],
            "listen_seconds": np.nan,
            "accepted_at": t0 + pd.Timedelta(minutes=5),
            "submitted_at": t0 + pd.Timedelta(minutes=6, milliseconds=7),
            "background": [r[3].strip() for r in rows],
            "comment": [r[4].strip() for r in rows],
        }
    )
    path = tmp_path / "round.csv"
    write_results(frame, path)
    back = infer_iterations(read_results(path))
    assert back.attrs["empty_rows"] == [i + 1 for i, c in enumerate(choice) if c == ""]
    for column in ("x", "y", "a_is_x", "choice", "worker_id", "background", "comment", "status"):
        assert back[column].tolist() == frame[column].tolist(), column
    np.testing.assert_array_equal(back["score"].to_numpy(float), frame["score"].to_numpy(float))
    np.testing.assert_array_equal(back["seconds"].to_numpy(), frame["seconds"].to_numpy())
    for column in ("created_at", "accepted_at", "submitted_at"):
        assert (back[column] == frame[column]).all(), column


def test_cli_reports_empty_answers_on_stderr(tmp_path, capsys, monkeypatch):
    path = tmp_path / "results.csv"
    mturk_file(
        path, [row("H1", "A1", "W1", "a"), row("H1", "A2", "W2", ""), row("H1", "A3", "W3", "b")]
    )
    argv = [
        "crowdprefs",
        "audit",
        "--answers",
        str(path),
        "--answer-column",
        "Answer.radio",
        "--a-value",
        "a",
        "--b-value",
        "b",
        "--equal-value",
        "s",
        "--json",
    ]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 0
    out = capsys.readouterr()
    assert "1 row(s) have an empty answer" in out.err and "(rows 2)" in out.err
    assert '"empty_answers": 1' in out.out


# ------------------------------------------------------------------ import refuses, all or nothing


@pytest.fixture
def published(recorded, tmp_path):
    """A fresh project whose first batch was published on MTurk as HITs ``H<pair_id>``, and the
    first batch's answers as a results file naming those HITs."""
    root, candidates, lists, files = recorded
    project = init_project(tmp_path / "p", candidates.assign(audio="", query_audio=""), seed=77)
    driver.next_batch(project)
    pairs = project.store.pairs(1)
    project.store.add_hits(
        "mturk",
        pairs.assign(hit_id="H" + pairs["pair_id"].astype(str)),
        0.02,
        project.settings.fees,
    )
    frame = read_results(files[0])
    key = pairs.assign(low=pairs[["x", "y"]].min(axis=1), high=pairs[["x", "y"]].max(axis=1))
    hit = key.set_index(["query", "low", "high"])["pair_id"]
    index = pd.MultiIndex.from_arrays(
        [frame["query"], frame[["x", "y"]].min(axis=1), frame[["x", "y"]].max(axis=1)]
    )
    frame["hit_id"] = "H" + pd.Series(index.map(hit), index=frame.index).astype(str)
    path = tmp_path / "batch1.csv"
    write_results(frame, path)
    yield project, path
    project.close()


def stored(project) -> int:
    return project.store.answer_total()


def test_a_row_whose_hit_names_another_pair_is_refused_and_nothing_is_stored(published):
    project, path = published
    frame = read_results(path)
    wrong = frame.loc[4, "hit_id"]
    other = frame.index[frame["hit_id"] != wrong][0]
    # row 5 keeps its HIT but names another pair's documents
    frame.loc[4, ["query", "x", "y", "a_is_x"]] = frame.loc[other, ["query", "x", "y", "a_is_x"]]
    write_results(frame, path)
    # the reader refuses it first when the HIT's other rows are in the file (issue 28)
    said = rf"(row 5: HIT {wrong} asks .* but the row names|rows \d+ and 5: HITId '{wrong}' names)"
    with pytest.raises(InputError, match=said):
        import_answers(project, read_results(path))
    assert stored(project) == 0


def test_the_matching_file_imports_and_an_extra_answer_is_refused(published):
    project, path = published
    summary = import_answers(project, read_results(path))
    assert summary["new"] == stored(project) > 0
    frame = read_results(path)
    extra = frame.iloc[[0]].assign(assignment_id="one-more", worker_id="late")
    write_results(pd.concat([frame, extra], ignore_index=True), path)
    before = stored(project)
    with pytest.raises(InputError, match=rf"row {len(frame) + 1}: pair .* wants \d+ answers"):
        import_answers(project, read_results(path))
    assert stored(project) == before
    write_results(frame, path)
    assert import_answers(project, read_results(path))["new"] == 0  # idempotent


def test_importing_into_an_aggregated_batch_is_refused(published):
    project, path = published
    import_answers(project, read_results(path))
    driver.aggregate(project)
    frame = read_results(path)
    late = frame.iloc[[0]].assign(assignment_id="late-1", worker_id="late")
    write_results(late, path)
    with pytest.raises(InputError, match="row 1: batch 1 is already aggregated"):
        import_answers(project, read_results(path))


def test_negative_work_time_is_refused_with_its_row(tmp_path):
    path = tmp_path / "results.csv"
    rows = [row("H1", "A1", "W1", "a"), row("H1", "A2", "W2", "b").replace('"21"', '"-3"')]
    mturk_file(path, rows)
    with pytest.raises(InputError, match="row 2: negative WorkTimeInSeconds"):
        read_results(path, RADIO)


def test_free_texts_longer_than_the_hit_page_allows_are_cut_as_mturk_collect_cuts_them(
    published, capsys
):
    project, path = published
    frame = read_results(path)
    frame.loc[2, "comment"] = "  " + "\r\n".join(["x" * 99] * 30)  # 2,999 characters on a page
    frame.loc[3, "comment"] = "\r\n".join(["y" * 99] * 20)  # 2,000: fits
    write_results(frame, path)
    import_answers(project, read_results(path))
    comments = project.store.answers().set_index("assignment_id")["comment"]
    assert comments[frame.loc[2, "assignment_id"]] == "\n".join(["x" * 99] * 30)[:2000]
    assert comments[frame.loc[3, "assignment_id"]] == "\n".join(["y" * 99] * 20)
    assert "1 answers' free texts were longer than the HIT page allows" in capsys.readouterr().err
