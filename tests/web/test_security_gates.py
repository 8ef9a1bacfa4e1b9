"""The security gates of the judges' server, each at its boundary: the two gates before a
Prolific event touches the state (:func:`crowdprefs.web.prolific_events.verify`): the signature,
over bodies in any JSON layout (Prolific's own example signs ``json.dumps`` of the parsed body; a
client may send another layout), and the request's age, in both directions (a replay from the
past, a timestamp from the future); and the researcher token's strength."""

from __future__ import annotations

import json

import pytest

from crowdprefs.crowds.prolific.fake import sign
from crowdprefs.errors import InputError
from crowdprefs.web.prolific_events import MAX_AGE, Refused, verify
from crowdprefs.web.security import MIN_RESEARCHER_TOKEN, MIN_TOKEN_KINDS, check_researcher_token

SECRET = "workspace-secret"
NOW = 2_000_000_000.0
PAYLOAD = {"event_type": "study.status.change", "resource_id": "a" * 24, "status": "PAUSED"}
LAYOUTS = {
    "compact": json.dumps(PAYLOAD, separators=(",", ":")),
    "indented": json.dumps(PAYLOAD, indent=2),
    "json.dumps": json.dumps(PAYLOAD),
}
"""One event in three layouts: only the last is already in ``json.dumps`` form."""


def headers(signature: str | None, sent: float = NOW) -> dict[str, str]:
    stamp = {"x-prolific-request-timestamp": str(int(sent))}
    return stamp if signature is None else {**stamp, "x-prolific-request-signature": signature}


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(
    "given",
    [None, "", "bm90IGEgc2lnbmF0dXJl", "other-secret", "tampered"],
    ids=["unsigned", "empty", "garbage", "another secret", "another body"],
)
def test_an_event_not_signed_by_the_workspace_is_refused_in_every_layout(layout, given):
    body = LAYOUTS[layout]
    if given == "other-secret":
        given = sign("not-the-secret", str(int(NOW)), body)
    elif given == "tampered":
        given = sign(SECRET, str(int(NOW)), body.replace("PAUSED", "ACTIVE"))
    with pytest.raises(Refused) as refused:
        verify(headers(given), body.encode(), SECRET, NOW)
    assert refused.value.status == 401


@pytest.mark.parametrize("layout", LAYOUTS)
def test_an_event_signed_as_sent_or_as_prolific_s_example_signs_it_passes(layout):
    body = LAYOUTS[layout].encode()
    raw = sign(SECRET, str(int(NOW)), LAYOUTS[layout])
    example = sign(SECRET, str(int(NOW)), json.dumps(json.loads(body)))
    assert verify(headers(raw), body, SECRET, NOW) == NOW
    assert verify(headers(example), body, SECRET, NOW) == NOW


@pytest.mark.parametrize(
    "offset, passes",
    [(-MAX_AGE - 60, False), (-MAX_AGE + 1, True), (0, True), (MAX_AGE - 1, True),
     (MAX_AGE + 60, False), (10 * 86_400, False)],
    ids=["past, too old", "past, in time", "now", "future, in time", "future, too far",
         "future, ten days"],
)  # fmt: skip
def test_an_event_signed_too_long_before_or_after_now_is_refused(offset, passes):
    sent = NOW + offset
    body = LAYOUTS["json.dumps"]
    given = headers(sign(SECRET, str(int(sent)), body), sent)
    if passes:
        assert verify(given, body.encode(), SECRET, NOW) == int(sent)
        return
    with pytest.raises(Refused) as refused:
        verify(given, body.encode(), SECRET, NOW)
    assert refused.value.status == 400 and "stale" in str(refused.value)


KINDS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"


@pytest.mark.parametrize(
    "length, kinds, strong",
    [(MIN_RESEARCHER_TOKEN - 1, MIN_RESEARCHER_TOKEN - 1, False),
     (MIN_RESEARCHER_TOKEN, MIN_RESEARCHER_TOKEN, True),
     (MIN_RESEARCHER_TOKEN, MIN_TOKEN_KINDS - 1, False),
     (MIN_RESEARCHER_TOKEN, MIN_TOKEN_KINDS, True)],
    ids=["one character short", "long enough", "one kind short", "enough kinds"],
)  # fmt: skip
def test_a_researcher_token_is_strong_from_its_minimum_length_and_kinds(length, kinds, strong):
    token = (KINDS[:kinds] * length)[:length]
    assert len(token) == length and len(set(token)) == kinds
    if strong:
        assert check_researcher_token(token) == token
        return
    with pytest.raises(InputError, match="too weak"):
        check_researcher_token(token)
