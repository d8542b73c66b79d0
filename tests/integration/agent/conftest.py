"""Fixtures of the agent's integration tests."""

from __future__ import annotations

import pytest

from tests.support.fakeapi import FakeAnthropic


@pytest.fixture
def sdk_env(server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK in this process talks to the fake server; retries back off in milliseconds."""
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("PSEUDOCLAUDE_RETRY_DELAY", "0.01")
