"""Fixtures of the crowd tests."""

from __future__ import annotations

import pytest

from crowdprefs.crowds.prolific.fake import FakeProlific

TOKEN = "test-token-0123456789abcdef"
"""The API token the Prolific fake accepts (a test value, not a secret)."""


@pytest.fixture
def fake() -> FakeProlific:
    """A running local fake of Prolific's API."""
    fake = FakeProlific(token=TOKEN)
    fake.start()
    yield fake
    fake.close()
