"""The proof of listening on the server side: the intervals a page heard are merged (a part
replayed counts once), a clip counts as heard only when they cover ``min_coverage`` of it, the web
server and a crowd storing answers judge a log by that one rule, the log is stored with the
answer, and the audit reads it per worker (the ``not-listening`` flag)."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from crowdprefs.campaign.answers import (
    Problem,
    check_answer,
    check_fields,
    check_listening,
    clip_coverage,
    covered_seconds,
    listening_record,
    merge_spans,
    parse_spans,
    reasons,
)
from crowdprefs.quality.flags import FlagRules, listening_columns, with_listening
from crowdprefs.web import assign
from crowdprefs.web.assign import WebSettings

SECONDS = {"query": 10.0, "a": 10.0, "b": 10.0}
HEARD = {
    "choice": "A",
    **{f"plays_{r}": "1" for r in SECONDS},
    **{f"listen_{r}": "10" for r in SECONDS},
    **{f"cover_{r}": "1" for r in SECONDS},
    **{f"seeks_{r}": "0" for r in SECONDS},
    **{f"muted_{r}": "0" for r in SECONDS},
    **{f"spans_{r}": "0-10" for r in SECONDS},
    "seconds_on_page": "35",
}
"""The answer of a page whose three 10 s clips were each heard through once."""


def test_overlapping_replays_are_counted_once():
    assert merge_spans([(5, 8), (0, 6), (2, 3), (9, 10), (8, 8)]) == [(0, 8), (9, 10)]
    assert merge_spans([(0, 4), (4, 6)]) == [(0, 6)]
    # the first four seconds heard three times cover four seconds, not twelve
    assert covered_seconds([(0, 4), (0, 4), (1, 4)]) == 4.0
    assert covered_seconds([(0, 4), (3, 12)], seconds=10.0) == 10.0  # not past the end
    assert parse_spans("6-10 0-4.25 3-5") == [(0.0, 5.0), (6.0, 10.0)]
    assert parse_spans("") == []
    for bad in ("0-", "4-2", "-1-3", "a-b", "0-inf", "1", " ".join(["0-1"] * 201)):
        assert parse_spans(bad) is None, bad


def test_coverage_comes_from_the_intervals_where_the_duration_is_known():
    answer, problems = check_fields({**HEARD, "spans_a": "0-4 0-4 2-4", "cover_a": "1"})
    assert problems == []
    assert clip_coverage(answer, "a", 10.0) == pytest.approx(0.4)  # the claimed 1 is not taken
    assert clip_coverage(answer, "a", None) == 1.0  # unknown duration: the page's own share
    old, _ = check_fields({k: v for k, v in HEARD.items() if k.startswith(("plays", "listen"))})
    assert clip_coverage(old, "a", 10.0) is None  # an older page's log: not judged


def test_a_log_heard_through_passes_and_one_that_skipped_is_refused():
    heard, _ = check_fields(HEARD)
    assert check_listening(heard, SECONDS, min_coverage=0.9) == []
    # seeked to the end: listening time forged, the intervals show the skip
    seeked, _ = check_fields({**HEARD, "spans_b": "0-0.5 9.95-10", "seeks_b": "1"})
    (problem,) = check_listening(seeked, SECONDS, min_coverage=0.9)
    assert (problem.kind, problem.name) == ("uncovered", "b")
    assert problem.heard == pytest.approx(0.055)
    assert reasons([problem]) == [
        "clips not heard through (share heard at normal speed and volume: b 6%)"
    ]
    # muted: the page credits no interval and no listening time
    muted, _ = check_fields({**HEARD, "listen_a": "0", "spans_a": "", "cover_a": "0"})
    assert check_listening(muted, SECONDS, min_coverage=0.9) == [
        Problem("short", "a", heard=0.0, seconds=10.0)
    ]
    # the slack: 8.95 s of 10 s is 0.9 less 0.05 s, within the page's 0.1 s
    close, _ = check_fields({**HEARD, "spans_query": "0-8.95"})
    assert check_listening(close, SECONDS, min_coverage=0.9, slack=0.1) == []
    assert check_listening(close, SECONDS, min_coverage=0.9, slack=0.0)[0].kind == "uncovered"


def test_damaged_proof_fields_are_named():
    _, problems = check_fields({**HEARD, "cover_a": "1.5", "seeks_b": "0.5", "spans_q": "x"})
    assert [p.name for p in problems] == ["cover_a", "seeks_b"]
    _, problems = check_fields({**HEARD, "spans_query": "3-1"})
    assert problems == [Problem("number", "spans_query", "3-1")]
    answer, _ = check_fields({**HEARD, "muted_a": "900"})
    claims = check_listening(answer, SECONDS, min_coverage=0.9, elapsed=40.0)
    assert [(p.kind, p.name) for p in claims] == [("claimed", "muted_a")]


def test_the_web_server_refuses_the_skip_in_one_line_and_stores_the_judged_log():
    form = {**HEARD, "choice": "A", "spans_b": "0-1 9-10"}
    answer = assign.validate_answer(form, WebSettings())
    with pytest.raises(assign.NotListened) as refused:
        assign.check_listening(answer.log, SECONDS, 0.9)
    assert str(refused.value) == (
        "only 20% of variation B was heard (parts skipped, or played muted or faster, do not "
        "count): listen to every clip to its end at normal speed"
    )
    good = assign.validate_answer({**HEARD, "choice": "A", "cover_a": "0.5"}, WebSettings())
    assign.check_listening(good.log, SECONDS, 0.9)
    fields = json.loads(good.raw({"clicked": "A"}, SECONDS))["fields"]
    assert fields["cover_a"] == 1.0, "the coverage judged from the intervals, not the one sent"
    assert fields["spans_query"] == "0-10" and fields["seeks_b"] == 0.0
    old = {k: v for k, v in HEARD.items() if k.startswith(("plays", "listen", "seconds"))}
    legacy = json.loads(assign.validate_answer({**old, "choice": "B"}, WebSettings()).raw({}))
    assert set(legacy["fields"]) == set(old), "an older page's log is stored as it was"


def test_mturk_collect_stores_the_proof_and_rejects_a_skip():
    answer, problems = check_answer({**HEARD, "choice": "B"}, SECONDS)
    assert problems == [] and answer["cover_query"] == 1.0 and answer["spans_a"] == "0-10"
    _, problems = check_answer({**HEARD, "choice": "B", "spans_a": "0-2"}, SECONDS)
    assert problems == ["clips not heard through (share heard at normal speed and volume: a 20%)"]


def test_listening_records_from_stored_answers_and_from_a_results_file():
    assert listening_record({"plays_query": 1.0, "plays_a": 1.0, "plays_b": 1.0}) == (
        pytest.approx(math.nan, nan_ok=True),
        True,
    )
    coverage, heard = listening_record({**HEARD, "cover_b": "0.3"})
    assert coverage == pytest.approx((1 + 1 + 0.3) / 3) and heard is False
    assert listening_record({})[1] is None
    raws = pd.Series(
        [json.dumps({"fields": HEARD}), json.dumps({"fields": {**HEARD, "cover_a": 0.1}}), None]
    )
    columns = listening_columns(pd.DataFrame({"raw": raws}))
    assert columns["listened"].tolist() == [True, False, pd.NA]
    results = pd.DataFrame([{f"Answer.{k}": v for k, v in HEARD.items()}, {"Answer.cover_a": ""}])
    assert listening_columns(results)["listened"].tolist() == [True, pd.NA]


def test_the_audit_flags_workers_who_answer_without_listening():
    from crowdprefs.quality.flags import flag_workers, worker_profiles

    rows = []
    for worker, covers in (("good", [1.0] * 6), ("deaf", [0.2, 0.1, 1.0, 0.3, 0.0, 1.0])):
        for i, cover in enumerate(covers):
            rows.append(
                {
                    "iteration": 1,
                    "pair_id": i,
                    "hit_id": f"h{i}",
                    "created_at": pd.Timestamp("2026-01-01", tz="UTC"),
                    "max_assignments": 2,
                    "reward": 0.1,
                    "query": "q",
                    "x": f"d{i}",
                    "y": "p",
                    "a_is_x": 1,
                    "kind": "sort",
                    "expected": float("nan"),
                    "pivot_known": True,
                    "worker_id": worker,
                    "assignment_id": f"{worker}-{i}",
                    "status": "submitted",
                    "choice": "A",
                    "score": 1.0,
                    "seconds": 30.0 + i,
                    "listen_seconds": 30.0,
                    "accepted_at": pd.NaT,
                    "submitted_at": pd.NaT,
                    "background": "",
                    "comment": "",
                    "raw": json.dumps({"fields": {**HEARD, "cover_b": cover}}),
                }
            )
    records = pd.DataFrame(rows)
    answers = with_listening(records.drop(columns="raw"), records)
    profiles = worker_profiles(answers)
    assert profiles.loc["deaf", "unheard"] == 4 and profiles.loc["deaf", "logged_answers"] == 6
    assert profiles.loc["deaf", "unheard_share"] == pytest.approx(4 / 6)
    assert profiles.loc["good", "listen_coverage"] == 1.0
    flags = flag_workers(answers, pd.DataFrame(columns=["verdict"]), select=("not-listening",))
    assert flags["worker_id"].tolist() == ["deaf"]
    assert flags["evidence"].iloc[0].startswith("4 of 6 answers given without hearing every")
    lenient = FlagRules(unheard_share=0.7)
    none = flag_workers(
        answers, pd.DataFrame(columns=["verdict"]), lenient, select=("not-listening",)
    )
    assert none.empty
    # a frame without play logs (an older results file) flags nobody
    assert worker_profiles(records.drop(columns="raw"))["unheard_share"].isna().all()
