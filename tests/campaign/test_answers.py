"""One set of answer rules for every crowd: the field and listening checks of
:mod:`crowdprefs.campaign.answers`, as MTurk collect words them (a rejection) and as the web
server words them (a refused post the judge can send again)."""

from __future__ import annotations

import pandas as pd
import pytest

from crowdprefs.campaign.answers import (
    SLACK_SECONDS,
    Problem,
    check_answer,
    check_fields,
    check_listening,
    clean_texts,
    max_plays,
    reasons,
)
from crowdprefs.web import assign
from crowdprefs.web.assign import WebSettings

PLAYED = {
    **{f"plays_{r}": "1" for r in ("query", "a", "b")},
    **{f"listen_{r}": "9.5" for r in ("query", "a", "b")},
    "seconds_on_page": "40",
}
SECONDS = {"query": 10.0, "a": 10.0, "b": 10.0}

FORMS = [
    {**PLAYED, "choice": "A"},
    {**PLAYED, "choice": "equal", "comment": "fine", "background": "yes"},
    {**PLAYED, "choice": "C"},
    {**PLAYED},
    {**PLAYED, "choice": "B", "comment": "x" * 2001},
    {**PLAYED, "choice": "B", "background": "x" * 1001},
    {**PLAYED, "choice": "B", "comment": "\r\n".join(["x" * 99] * 20)},
    {**PLAYED, "choice": "A", "listen_a": "nan"},
    {**PLAYED, "choice": "A", "plays_b": "-1"},
    {**PLAYED, "choice": "A", "plays_b": "0"},
    {**PLAYED, "choice": "A", "plays_b": "1.5"},
    {"choice": "A"},
    {**PLAYED, "choice": "A", "listen_query": "7.9"},
    {**PLAYED, "choice": "A", "listen_query": "8.1"},
    {**PLAYED, "choice": "A", "listen_query": "8.9"},
]


def web_refusal(form: dict) -> str | None:
    """What the web server answers ``form`` with (``None``: stored), by its own checks and its
    own listening slack."""
    try:
        answer = assign.validate_answer(form, WebSettings())
        assign.check_listening(answer.log, SECONDS, 0.9)
    except assign.WebError as error:
        return str(error)
    return None


@pytest.mark.parametrize("form", FORMS)
def test_the_web_server_refuses_what_mturk_collect_rejects_and_more_only_by_the_slack(form):
    """Every form MTurk collect rejects, the server refuses; a form it refuses that MTurk
    accepts has a clip heard short of the mark by more than the server's slack but less than
    MTurk's: the one rule that differs."""
    _, problems = check_answer(form, SECONDS)
    refusal = web_refusal(form)
    if problems:
        assert refusal is not None, problems
    elif refusal is not None:
        assert "but was heard for" in refusal, refusal
        short = 0.9 * 10.0 - min(float(form[f"listen_{r}"]) for r in SECONDS)
        assert assign.LISTEN_SLACK < short <= SLACK_SECONDS, refusal


def test_the_forms_cover_each_outcome():
    outcomes = {(bool(check_answer(f, SECONDS)[1]), web_refusal(f) is None) for f in FORMS}
    assert outcomes == {(True, False), (False, True), (False, False)}


def test_only_the_listening_slack_differs_and_the_web_allows_less():
    form = {**PLAYED, "choice": "A", "listen_b": "8.5"}  # 0.9 × 10 s less 0.5 s
    assert check_answer(form, SECONDS)[1] == [], "a stored answer: 1 s of slack"
    with pytest.raises(assign.NotListened, match="variation B lasts 10.0 s but was heard for 8.5"):
        assign.check_listening(assign.validate_answer(form, WebSettings()).log, SECONDS, 0.9)


def test_the_checks_name_every_problem_once_and_in_order():
    answer, problems = check_fields({"choice": "Z", "plays_a": "many", "comment": "x" * 2001})
    assert problems == [
        Problem("choice", "choice", "Z"),
        Problem("text", "comment", limit=2000),
        Problem("number", "plays_a", "many"),
    ]
    assert answer["plays_a"] is None and answer["plays_query"] == 0.0
    unheard = check_listening(answer, SECONDS, min_coverage=0.9)
    assert unheard == [  # a's plays are not judged again; its listening still is
        Problem("unplayed", "query"),
        Problem("short", "a", heard=0.0, seconds=10.0),
        Problem("unplayed", "b"),
    ]


def test_texts_are_cleaned_alike_one_by_one_and_for_a_whole_file():
    texts = pd.DataFrame(
        {"comment": ["  a\r\nb  ", "", None, "x" * 2001], "background": ["yes", " ", "no", None]}
    )
    cleaned = clean_texts(texts)
    assert cleaned["comment"].tolist() == ["a\nb", None, None, "x" * 2000]
    assert cleaned["background"].tolist() == ["yes", None, "no", None]
    assert cleaned["comment_too_long"].tolist() == [False, False, False, True]
    for row, comment in zip(texts.to_dict("records"), cleaned["comment"], strict=True):
        assert check_fields({**PLAYED, "choice": "A", **row})[0]["comment"] == comment


def test_the_web_server_keeps_the_hit_pages_text_limits_unless_max_text_is_lower():
    assert assign.text_limits(WebSettings()) == {"background": 1000, "comment": 2000}
    assert assign.text_limits(WebSettings(max_text=500)) == {"background": 500, "comment": 500}
    with pytest.raises(assign.WebError, match="the comment is longer than 500 characters"):
        assign.validate_answer(
            {**PLAYED, "choice": "A", "comment": "x" * 501}, WebSettings(max_text=500)
        )


def test_a_log_may_claim_no_more_than_the_seconds_since_the_hand_out_allow():
    """1e300 s of listening or 1e30 plays sent 0.1 s after the hand-out name themselves; what
    hearing each clip once takes is claimed only after that long (a second of slack)."""
    answer, _ = check_fields({**PLAYED, "choice": "A", "listen_a": "1e300", "plays_b": "1e30"})
    claims = check_listening(answer, SECONDS, min_coverage=0.9, elapsed=0.1)
    assert [(p.kind, p.name) for p in claims] == [
        ("claimed", "seconds_on_page"),
        ("claimed", "listen_query"),
        ("claimed", "listen_a"),
        ("claimed", "listen_b"),
        ("claimed", "plays_b"),
    ]
    assert "listen_a 1e+300 is more than 0.1 s allow" in reasons(claims)
    honest, _ = check_fields(PLAYED)
    assert check_listening(honest, SECONDS, min_coverage=0.9, elapsed=39.0) == []
    assert check_listening(honest, SECONDS, min_coverage=0.9, elapsed=38.9)[0].kind == "claimed"
    with pytest.raises(assign.WebError, match=r"listen_a = 1e\+300 but the question was handed"):
        assign.check_listening({**answer, "seconds_on_page": 0.0}, SECONDS, 0.9, elapsed=9.5)


def test_plays_are_bounded_by_the_fastest_playback_and_must_be_whole():
    assert max_plays(10.0, 10.0) == 17  # one, then one per 10/16 s
    assert max_plays(1.0, None) == 11  # unknown duration: at least 0.1 s a play
    answer, problems = check_fields({**PLAYED, "plays_a": "2.5"})
    assert problems[-1] == Problem("number", "plays_a", "2.5") and answer["plays_a"] is None
