"""One set of answer rules for every crowd: the field and listening checks of
:mod:`crowdprefs.campaign.answers`, as MTurk collect words them (a rejection) and as the web
server words them (a refused post the judge can send again)."""

from __future__ import annotations

import pandas as pd
import pytest

from crowdprefs.campaign.answers import (
    Problem,
    check_answer,
    check_fields,
    check_listening,
    clean_texts,
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
    {"choice": "A"},
    {**PLAYED, "choice": "A", "listen_query": "7.9"},
    {**PLAYED, "choice": "A", "listen_query": "8.1"},
]


def web_refusal(form: dict, slack: float) -> str | None:
    """What the web server answers ``form`` with (``None``: stored), with listening ``slack``."""
    try:
        answer = assign.validate_answer(form, WebSettings())
        problems = check_listening(answer.log, SECONDS, min_coverage=0.9, slack=slack)
        if problems:
            assign.check_listening(answer.log, SECONDS, 0.9)
            return "refused by the shared check only"
    except assign.WebError as error:
        return str(error)
    return None


@pytest.mark.parametrize("form", FORMS)
def test_the_web_server_refuses_exactly_what_mturk_collect_rejects(form):
    _, problems = check_answer(form, SECONDS)
    refusal = web_refusal(form, slack=1.0)
    assert (refusal is None) == (not problems), (refusal, problems)


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
