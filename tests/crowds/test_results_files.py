"""Real campaigns' files, read as they come: a 2010 MTurk file, a current MTurk export and
another platform's export through --columns, each through every command that reads one."""

from __future__ import annotations

import json
import tomllib

import numpy as np
import pandas as pd
import pytest

from crowdprefs.io import read_lists

T0 = pd.Timestamp("2010-04-14 18:29:32", tz="UTC")

MORE, SAME, LESS = "x" * 5, "e" * 5, "y" * 5
#: Seed 002's Table 1 as batches of (member, pivot, answers over x/e/y: member preferred,
#: equal, pivot preferred): four iterations, groups (A, B, C), (D, E), (F, G).
TABLE_1 = [
    [("C", "F", MORE), ("D", "F", MORE), ("E", "F", MORE), ("A", "F", MORE), ("G", "F", SAME)]
    + [("B", "F", MORE)],
    [("C", "B", SAME), ("D", "B", LESS), ("E", "B", LESS), ("A", "B", SAME)],
    [("C", "A", SAME), ("D", "E", SAME)],
]
GROUPS = [{"A", "B", "C"}, {"D", "E"}, {"F", "G"}]


def answers_of(batches, workers: int = 5, query: str = "q1") -> list[dict]:
    """One dict per answer: HIT number, iteration, worker, documents shown, side chosen and
    times (batches four hours apart, HITs a second apart, each answer 20-odd seconds)."""
    rows, hit = [], 0
    for iteration, batch in enumerate(batches):
        for x, pivot, votes in batch:
            hit += 1
            created = T0 + pd.Timedelta(hours=4 * iteration, seconds=hit)
            a_is_x = hit % 2 == 1
            for k, vote in enumerate(votes[:workers]):
                seconds = 20 + k + hit % 3
                side = {"x": "A" if a_is_x else "B", "y": "B" if a_is_x else "A", "e": "S"}[vote]
                accepted = created + pd.Timedelta(minutes=3 + k)
                rows.append(
                    {
                        "hit": hit,
                        "created": created,
                        "worker": f"A{k:02d}WORKER",
                        "accepted": accepted,
                        "submitted": accepted + pd.Timedelta(seconds=seconds),
                        "seconds": seconds,
                        "query": query,
                        "a": x if a_is_x else pivot,
                        "b": pivot if a_is_x else x,
                        "side": side,
                        "background": "yes" if k % 2 else "no",
                        "comment": "très bien, señor" if k == 0 else "",
                    }
                )
    return rows


def mturk_time(t: pd.Timestamp) -> str:
    return t.strftime("%a %b %d %H:%M:%S GMT %Y")


def write_2010(path, rows: list[dict], drop: tuple[str, ...] = ()) -> None:
    """A 2010 batch-results file exactly as MTurk wrote it then: Latin-1, no AssignmentId, no
    Reward, no AssignmentStatus, small-integer HIT ids, answers a/b/s, background yes/no."""
    table = pd.DataFrame(
        {
            "HITId": [str(r["hit"]) for r in rows],
            "CreationTime": [mturk_time(r["created"]) for r in rows],
            "Expiration": [mturk_time(r["created"] + pd.Timedelta(days=3)) for r in rows],
            "NumberOfSimilarHITs": "",
            "WorkerId": [r["worker"] for r in rows],
            "AcceptTime": [mturk_time(r["accepted"]) for r in rows],
            "SubmitTime": [mturk_time(r["submitted"]) for r in rows],
            "AutoApprovalTime": [mturk_time(r["submitted"] + pd.Timedelta(days=7)) for r in rows],
            "ApprovalTime": "",
            "WorkTimeInSeconds": [str(r["seconds"]) for r in rows],
            "Input.query": [r["query"] for r in rows],
            "Input.docA": [r["a"] for r in rows],
            "Input.docB": [r["b"] for r in rows],
            "Input.time": "4",
            "Answer.comment": [r["comment"] for r in rows],
            "Answer.bground": [r["background"] for r in rows],
            "Answer.radio": [r["side"].lower() for r in rows],
        }
    ).drop(columns=list(drop))
    path.write_bytes(table.to_csv(index=False).encode("latin-1"))


RADIO_2010 = (
    "--answer-column", "Answer.radio", "--a-value", "a", "--b-value", "b", "--equal-value", "s",
    "--background-column", "Answer.bground",
)  # fmt: skip
FEES_2010 = ("--reward", "0.02", "--fee-rate", "0.1", "--fee-minimum", "0.005")


def write_current(path, rows: list[dict]) -> None:
    """A current MTurk batch-results export: every column MTurk writes today, UTF-8."""
    n = len(rows)
    pst = [r["created"].tz_convert("America/Los_Angeles") for r in rows]
    table = pd.DataFrame(
        {
            "HITId": [f"3HYV4299H0WQ{r['hit']:06d}" for r in rows],
            "HITTypeId": "3AQGTXNY2DVQ",
            "Title": "Which melody is more similar?",
            "Reward": "$0.05",
            "CreationTime": [t.strftime("%a %b %d %H:%M:%S PDT %Y") for t in pst],
            "MaxAssignments": "5",
            "AssignmentId": [f"3ASSIGN{i:06d}" for i in range(n)],
            "WorkerId": [r["worker"] for r in rows],
            "AssignmentStatus": "Approved",
            "AcceptTime": [r["accepted"].isoformat() for r in rows],
            "SubmitTime": [r["submitted"].isoformat() for r in rows],
            "WorkTimeInSeconds": [str(r["seconds"]) for r in rows],
            "LifetimeApprovalRate": "100% (12/12)",
            "Input.query": [r["query"] for r in rows],
            "Input.docA": [r["a"] for r in rows],
            "Input.docB": [r["b"] for r in rows],
            "Answer.choice": [{"A": "A", "B": "B", "S": "equal"}[r["side"]] for r in rows],
            "Answer.background": [r["background"] for r in rows],
            "Answer.comment": [r["comment"] for r in rows],
            "Approve": "",
            "Reject": "",
        }
    )
    path.write_text(table.to_csv(index=False), encoding="utf-8")


def write_other(path, rows: list[dict]) -> None:
    """Another platform's export (a spreadsheet of an in-house tool): its own names, ISO
    times, answers first/second/same, training Y/N, Windows-1252."""
    table = pd.DataFrame(
        {
            "task": [f"t{r['hit']}" for r in rows],
            "published": [r["created"].isoformat() for r in rows],
            "participant": [r["worker"].lower() for r in rows],
            "started": [r["accepted"].isoformat() for r in rows],
            "finished": [r["submitted"].isoformat() for r in rows],
            "duration_s": [str(r["seconds"]) for r in rows],
            "original": [r["query"] for r in rows],
            "first": [r["a"] for r in rows],
            "second": [r["b"] for r in rows],
            "preference": [{"A": "first", "B": "second", "S": "same"}[r["side"]] for r in rows],
            "training": [{"yes": "Y", "no": "N"}[r["background"]] for r in rows],
            "feedback": [r["comment"].replace("señor", "‘señor’") for r in rows],
        }
    )
    path.write_bytes(table.to_csv(index=False).encode("cp1252"))


OTHER_COLUMNS = """\
# how the in-house tool names things, stored once
hit = "task"
created = "published"
worker = "participant"
accepted = "started"
submitted = "finished"
seconds = "duration_s"
query = "original"
a = "first"
b = "second"
answer = "preference"
a_value = "first"
b_value = "second"
equal_value = "same"
background = "training"
background_yes = "Y"
background_no = "N"
comment = "feedback"
"""


@pytest.fixture(params=["2010", "current", "other"])
def recorded(request, tmp_path):
    """``(results file, the options to read it)`` in each of the three shapes."""
    rows = answers_of(TABLE_1)
    path = tmp_path / f"{request.param}.csv"
    if request.param == "2010":
        write_2010(path, rows)
        return path, [*RADIO_2010, *FEES_2010]
    if request.param == "current":
        write_current(path, rows)
        return path, []
    write_other(path, rows)
    (tmp_path / "columns.toml").write_text(OTHER_COLUMNS, encoding="utf-8")
    return path, ["--columns", tmp_path / "columns.toml", "--reward", "0.1"]


def one_error(err: str) -> str:
    """The one error line of a refused command (a note on the file's encoding may precede it)."""
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in err, err
    return errors[0]


def groups(lists: pd.DataFrame) -> list[set]:
    return [set(g["document"]) for _, g in lists.sort_values("group").groupby("group")]


# ------------------------------------------------------------------ every reading command


def test_audit_reads_each_shape_and_says_how(cli, recorded):
    path, options = recorded
    code, out, err = cli("audit", "--answers", path, *options, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["facts"]["answers"] == 60 and data["facts"]["empty_answers"] == 0
    assert [row["pairs"] for row in data["iterations"]] == [6, 4, 2, 12]
    identity = {
        "2010": "(HITId, WorkerId)",
        "current": "AssignmentId",
        "other": "(task, participant)",
    }
    assert data["facts"]["identity"] == identity[path.stem]
    assert f"each identified by {identity[path.stem]}" in err
    assert ("it is not UTF-8" in err) == (path.stem != "current")
    # the background answers come from the named column, mapped: never "unknown" here
    classes = {w["worker_id"].upper(): w["background_class"] for w in data["workers"]}
    assert classes == {f"A{k:02d}WORKER": "some" if k % 2 else "none" for k in range(5)}


def test_replay_rebuilds_table_1_from_each_shape(cli, recorded, tmp_path):
    path, options = recorded
    output = tmp_path / "lists.txt"
    code, out, err = cli("replay", path, *options, "-o", output)
    assert code == 0, err
    assert "1/1 lists closed" in out
    assert groups(read_lists(output)) == GROUPS


def test_crowd_model_fit_reads_each_shape(cli, recorded, tmp_path):
    path, options = recorded
    options = [o for o in options if o not in FEES_2010]  # the fit prints no cost
    output = tmp_path / "model.toml"
    code, out, err = cli("crowd-model", "fit", path, *options, "--bootstrap", "2", "-o", output)
    assert code == 0, err
    # the count from the file written, not the table's title (it wraps with the path's length)
    fit = tomllib.loads(output.read_text(encoding="utf-8"))["fit"]
    assert (fit["answers"], fit["pairs"]) == (60, 12)


def test_options_on_the_command_line_win_over_the_columns_file(cli, tmp_path):
    path = tmp_path / "other.csv"
    write_other(path, answers_of(TABLE_1))
    (tmp_path / "columns.toml").write_text(OTHER_COLUMNS, encoding="utf-8")
    code, _, err = cli("replay", path, "--columns", tmp_path / "columns.toml", "--a-column", "nope")
    assert code != 0
    assert "nope (--a-column)" in one_error(err)


def test_an_unknown_key_in_the_columns_file_is_refused(cli, tmp_path):
    path = tmp_path / "other.csv"
    write_other(path, answers_of(TABLE_1))
    (tmp_path / "columns.toml").write_text('answr = "preference"\n', encoding="utf-8")
    code, _, err = cli("audit", "--answers", path, "--columns", tmp_path / "columns.toml")
    assert code != 0 and "unknown key(s) answr" in one_error(err)


# ------------------------------------------------------------------ identity, dates, errors


def test_a_repeated_hit_and_worker_is_refused_with_both_rows(cli, tmp_path):
    rows = answers_of(TABLE_1)
    rows.insert(7, dict(rows[2], comment="again"))  # row 8 repeats row 3's (HIT, worker)
    path = tmp_path / "2010.csv"
    write_2010(path, rows)
    code, _, err = cli("replay", path, *RADIO_2010)
    assert code != 0
    line = one_error(err)
    assert "rows 3 and 8: the same answer twice ((HITId, WorkerId) '1', 'A02WORKER')" in line


def test_2010_dates_are_read_in_utc(tmp_path):
    from crowdprefs.results_file import Columns, read_results

    path = tmp_path / "2010.csv"
    write_2010(path, answers_of(TABLE_1))
    frame = read_results(path, Columns(answer="Answer.radio", a_value="a", b_value="b",
                                       equal_value="s"))  # fmt: skip
    assert frame["created_at"].iloc[0] == T0 + pd.Timedelta(seconds=1)
    assert frame["assignment_id"].iloc[0] == "1/A00WORKER"
    assert frame["comment"].iloc[0] == "très bien, señor"


def test_a_missing_column_names_its_option(cli, tmp_path):
    path = tmp_path / "2010.csv"
    write_2010(path, answers_of(TABLE_1))
    code, _, err = cli("audit", "--answers", path)  # the 2010 answers are in Answer.radio
    assert code != 0
    assert "missing column(s) Answer.choice (--answer-column)" in one_error(err)


def test_audit_without_submit_times_says_the_times_are_unknown(cli, tmp_path):
    path = tmp_path / "2010.csv"
    write_2010(path, answers_of(TABLE_1), drop=("SubmitTime",))
    code, out, err = cli("audit", "--answers", path, *RADIO_2010)
    assert code == 0, err
    assert "crowd time unknown" in out and "cost: unknown" in out
    assert "nan" not in out and "$0.00" not in out


# ------------------------------------------------------------------ cost


def test_2810_answers_at_2010_prices_cost_exactly_70_25(cli, tmp_path):
    # seed 002's campaign: pairs per iteration, ten answers each, $0.02 + 10 % (at least $0.005)
    pairs = [107, 83, 51, 19, 10, 5, 4, 2]
    rng = np.random.default_rng(7)
    batches = [
        [(f"d{i}-{p}", f"pivot{i}", "".join(rng.choice(list("xey"), 10))) for p in range(n)]
        for i, n in enumerate(pairs)
    ]
    path = tmp_path / "2010.csv"
    write_2010(path, answers_of(batches, workers=10))
    code, out, err = cli("audit", "--answers", path, *RADIO_2010, *FEES_2010, "--json")
    assert code == 0, err
    costs = [row["cost"] for row in json.loads(out)["iterations"]]
    assert costs == [26.75, 20.75, 12.75, 4.75, 2.5, 1.25, 1.0, 0.5, 70.25]
    code, out, _ = cli("audit", "--answers", path, *RADIO_2010, *FEES_2010)
    assert "cost: $70.25 in total" in out


def test_without_a_reward_the_cost_is_unknown_never_zero(cli, tmp_path):
    path = tmp_path / "2010.csv"
    write_2010(path, answers_of(TABLE_1))
    code, out, _ = cli("audit", "--answers", path, *RADIO_2010, "--wide")
    assert code == 0
    assert "cost: unknown (the file has no reward: give --reward)" in out
    costs = out.split("cost $")[1].split("flagged workers")[0]  # the iterations table
    assert "unknown" in costs and "0.00" not in costs and "nan" not in out


# ------------------------------------------------------------------ times


def test_times_name_the_crowds_time_and_the_time_since_creation(cli, tmp_path):
    path = tmp_path / "2010.csv"
    rows = answers_of(TABLE_1)
    write_2010(path, rows)
    code, out, _ = cli("audit", "--answers", path, *RADIO_2010, "--json")
    first = json.loads(out)["iterations"][0]
    batch = [r for r in rows if r["created"] < T0 + pd.Timedelta(hours=1)]
    crowd = max(r["submitted"] for r in batch) - min(r["accepted"] for r in batch)
    waited = max(r["submitted"] for r in batch) - min(r["created"] for r in batch)
    assert first["crowd_seconds"] == crowd.total_seconds()
    assert first["completion_seconds"] == waited.total_seconds()
    code, out, _ = cli("audit", "--answers", path, *RADIO_2010, "--wide", columns=250)
    assert "crowd time" in out and "since created" in out


# ------------------------------------------------------------------ every reader's encodings


def test_every_reader_falls_back_from_utf8_and_says_so(tmp_path, capsys):
    from crowdprefs.campaign.project import read_candidates
    from crowdprefs.io import read_levels, read_lists, read_runs

    files = {
        "candidates.csv": "query,document\nBéla,Ré\nBéla,Mí\n",
        "lists.txt": "expert Béla Ré 1\nexpert Béla Mí 2\n",
        "levels.txt": "Béla\tRé\t2\n",
        "run.txt": "Béla Q0 Ré 1 0.9 système\n",
    }
    for name, text in files.items():
        (tmp_path / name).write_bytes(text.encode("latin-1"))
    assert read_candidates(tmp_path / "candidates.csv")["document"].tolist() == ["Ré", "Mí"]
    assert read_lists(tmp_path / "lists.txt")["query"].tolist() == ["Béla", "Béla"]
    assert read_levels(tmp_path / "levels.txt")["document"].tolist() == ["Ré"]
    assert read_runs(tmp_path / "run.txt")["system"].tolist() == ["système"]
    err = capsys.readouterr().err
    for name in files:
        assert f"{name} as cp1252 (it is not UTF-8)" in err.replace("\n", "")


def test_audit_split_by_reads_a_latin1_file(cli, tmp_path):
    path = tmp_path / "2010.csv"
    write_2010(path, answers_of(TABLE_1))
    training = tmp_path / "training.csv"
    rows = "".join(f"A{k:02d}WORKER,{'música' if k % 2 else 'ninguna'}\n" for k in range(5))
    training.write_bytes(("worker,training\n" + rows).encode("latin-1"))
    reference = tmp_path / "reference.txt"
    reference.write_text(
        "".join(f"e q1 {d} {g}\n" for d, g in zip("ABCDEFG", "1112233", strict=True))
    )
    code, out, err = cli(
        "audit", "--answers", path, *RADIO_2010, "--reference", reference,
        "--split-by", training, "--json",
    )  # fmt: skip
    assert code == 0, err
    assert {"answers: música", "answers: ninguna"} <= set(json.loads(out)["reference"])
