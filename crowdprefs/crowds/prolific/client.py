"""A small client of Prolific's REST API (https://docs.prolific.com/api-reference), with httpx.

Only the calls crowdprefs needs: create a draft study, publish it (a transition) or make a test
study of it for the workspace's test participants, get it, update it (more places), list its
submissions, approve (in bulk) or reject submissions, set up then pay bonuses, and subscribe
the server to Prolific's events (webhooks: subscribe, then confirm with the ``X-Hook-Secret``
the subscription answered). The token comes from the environment variable ``PROLIFIC_TOKEN``
only (an API token made on Prolific's site); it goes in the ``Authorization: Token …`` header
and never into a message, a log line or a file. It is sent over HTTPS only, or to the loopback fake.

Throttling (429) and server faults (5xx) are retried with backoff; any other refusal ends in one
:class:`~crowdprefs.errors.CrowdError` line with Prolific's own title and detail.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx

from crowdprefs.errors import CrowdError, InputError

API_URL = "https://api.prolific.com"
TOKEN_ENV = "PROLIFIC_TOKEN"
"""The environment variable that holds the Prolific API token."""
HOOK_SECRET_ENV = "PROLIFIC_HOOK_SECRET"
"""The environment variable that holds the workspace's secret, which signs Prolific's events."""
WORKSPACE_ENV = "PROLIFIC_WORKSPACE_ID"
"""The environment variable naming the workspace to subscribe to events in (needed only when
the token reaches several)."""
RETRIES = 4
PAGE_SIZE = 200


def token_from_environment() -> str:
    """The API token from :data:`TOKEN_ENV`; :class:`InputError` when it is not set."""
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise InputError(
            f"set the environment variable {TOKEN_ENV} to a Prolific API token "
            "(made under API tokens in your Prolific workspace settings)"
        )
    return token


def _loopback(url: str) -> bool:
    return urlsplit(url).hostname in ("127.0.0.1", "::1", "localhost")


def _problem(response: httpx.Response) -> str:
    """Prolific's error body (``{"error": {"title", "detail", …}}``) as one line."""
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}"
    error = body.get("error", body) if isinstance(body, dict) else {}
    title = str(error.get("title") or f"HTTP {response.status_code}")
    detail = error.get("detail", "")
    if not isinstance(detail, str):
        detail = json.dumps(detail, ensure_ascii=False, sort_keys=True)
    return f"{title}: {detail}".strip(": ").replace("\n", " ")[:600]


class ProlificClient:
    """Calls to Prolific (or its local fake at a loopback ``base_url``)."""

    def __init__(
        self,
        token: str,
        base_url: str = API_URL,
        *,
        timeout: float = 30.0,
        backoff: float = 1.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if not base_url.startswith("https://") and not _loopback(base_url):
            raise InputError(f"the Prolific API is reached over HTTPS only, not {base_url}")
        self.base_url = base_url.rstrip("/")
        self.backoff = backoff
        self._http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Token {token}", "User-Agent": "crowdprefs"},
            timeout=timeout,
            transport=transport,
            follow_redirects=False,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ProlificClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def request(self, method: str, path: str, body: dict | None = None, **params: Any) -> Any:
        """One call; retried on 429 and 5xx; the JSON answer (``None`` when empty)."""
        return self._json(method, path, self.send(method, path, body, **params))

    @staticmethod
    def _json(method: str, path: str, response: httpx.Response) -> Any:
        try:
            return response.json() if response.content else None
        except ValueError:
            raise CrowdError(f"Prolific {method} {path}: the answer is not JSON") from None

    def send(
        self, method: str, path: str, body: dict | None = None, **params: Any
    ) -> httpx.Response:
        """One call, retried on 429 and 5xx; the answer (its headers too), refused in one
        :class:`CrowdError` line when Prolific refuses."""
        for attempt in range(RETRIES + 1):
            try:
                response = self._http.request(method, path, json=body, params=params or None)
            except httpx.HTTPError as error:
                if attempt == RETRIES:
                    raise CrowdError(
                        f"Prolific {method} {path}: {type(error).__name__}: {error}"
                    ) from None
                time.sleep(self.backoff * 2**attempt)
                continue
            busy = response.status_code == 429 or response.status_code >= 500
            if busy and attempt < RETRIES:
                wait = response.headers.get("Retry-After", "")
                time.sleep(float(wait) if wait.isdigit() else self.backoff * 2**attempt)
                continue
            if response.status_code >= 400:
                raise CrowdError(f"Prolific {method} {path}: {_problem(response)}")
            return response
        raise AssertionError("unreachable")

    # --- studies --------------------------------------------------------------------------------

    def create_study(self, study: dict) -> dict:
        """Create a draft (unpublished) study."""
        return self.request("POST", "/api/v1/studies/", study)

    def study(self, study_id: str) -> dict:
        return self.request("GET", f"/api/v1/studies/{study_id}/")

    def update_study(self, study_id: str, changes: dict) -> dict:
        return self.request("PATCH", f"/api/v1/studies/{study_id}/", changes)

    def publish_study(self, study_id: str) -> dict:
        """The ``PUBLISH`` transition of a draft study (spends: places × reward and fees)."""
        return self.request(
            "POST", f"/api/v1/studies/{study_id}/transition/", {"action": "PUBLISH"}
        )

    def test_study(self, study_id: str) -> dict:
        """Make a test study of a draft and publish it to the workspace's test participants
        (``{"study_id", "study_url"}``; nothing is spent); refused where the workspace does not
        have the feature, or has no test participant."""
        return self.request("POST", f"/api/v1/studies/{study_id}/test-study", {})

    def add_test_participant(self, email: str) -> str:
        """A test participant of the researcher, with an email not known to Prolific; their
        id."""
        made = self.request("POST", "/api/v1/researchers/participants/", {"email": email})
        return str(made["participant_id"])

    # --- events (webhooks) -----------------------------------------------------------------------

    def workspaces(self) -> list[dict]:
        """The workspaces the token reaches (``id``, ``title``)."""
        return list(self.request("GET", "/api/v1/workspaces/").get("results", []))

    def subscriptions(self, workspace_id: str) -> list[dict]:
        """The workspace's event subscriptions (``id``, ``event_type``, ``target_url``,
        ``is_enabled``)."""
        found = self.request("GET", "/api/v1/hooks/subscriptions/", workspace_id=workspace_id)
        return list(found.get("results", []))

    def subscribe(self, workspace_id: str, event_type: str, target_url: str) -> dict:
        """Subscribe ``target_url`` to ``event_type``, then confirm it with the secret the
        subscription answered in its ``X-Hook-Secret`` header; the confirmed subscription."""
        body = {"workspace_id": workspace_id, "event_type": event_type, "target_url": target_url}
        path = "/api/v1/hooks/subscriptions/"
        response = self.send("POST", path, body)
        made = self._json("POST", path, response) or {}
        mine = [
            s
            for s in made.get("results", [made])
            if s.get("event_type") == event_type
            and s.get("target_url") == target_url
            and not s.get("is_enabled")
        ]
        secret = response.headers.get("X-Hook-Secret", "")
        if not mine or not secret:
            raise CrowdError(f"Prolific POST {path}: no subscription to confirm in the answer")
        return self.request("POST", f"{path}{mine[-1]['id']}/", {"secret": secret})

    # --- submissions ----------------------------------------------------------------------------

    def submissions(self, study_id: str) -> Iterator[dict]:
        """Every submission of the study (paged)."""
        page = self.request(
            "GET", "/api/v1/submissions/", study=study_id, page=1, page_size=PAGE_SIZE
        )
        while True:
            yield from page.get("results", [])
            following = (page.get("_links") or {}).get("next", {}).get("href")
            if not following:
                return
            split = urlsplit(following)
            if split.netloc and f"{split.scheme}://{split.netloc}" != self.base_url:
                raise CrowdError(f"Prolific pointed the next page elsewhere: {split.netloc}")
            page = self.request("GET", f"{split.path}?{split.query}")

    def approve(self, submission_ids: list[str]) -> None:
        """Approve submissions (and pay their rewards) in one bulk call."""
        self.request(
            "POST", "/api/v1/submissions/bulk-approve/", {"submission_ids": submission_ids}
        )

    def reject(self, submission_id: str, message: str, category: str) -> None:
        """Reject one submission: ``message`` (at least 100 characters) goes to the participant."""
        self.request(
            "POST",
            f"/api/v1/submissions/{submission_id}/transition/",
            {"action": "REJECT", "message": message, "rejection_category": category},
        )

    # --- bonuses --------------------------------------------------------------------------------

    def set_up_bonuses(self, study_id: str, lines: list[tuple[str, int]]) -> dict:
        """Set up bonuses (not paid yet): ``(participant_id, amount in minor units)``."""
        csv = "\n".join(f"{p},{a // 100}.{a % 100:02d}" for p, a in lines)
        return self.request(
            "POST",
            "/api/v1/submissions/bonus-payments/",
            {"study_id": study_id, "csv_bonuses": csv},
        )

    def pay_bonuses(self, bonus_id: str) -> None:
        self.request("POST", f"/api/v1/bulk-bonus-payments/{bonus_id}/pay/", {})
