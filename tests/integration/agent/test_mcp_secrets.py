"""A server's configured env values never come back in clear in what the client says of it (the
real test server of tests/support/mcp_server.py): the reason it failed (its stderr's last words),
an error a tool reports, a call's failure."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.agent.extensions.mcp import McpManager
from tests.integration.agent.test_mcp_client import stdio

pytestmark = pytest.mark.timeout(60)

SECRET = "ENVSECRET-777"
FROM_ENV = "expanded-secret-31337"


async def test_a_server_that_prints_its_env_as_it_dies_is_failed_with_the_values_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_T_KEY", FROM_ENV)
    m = McpManager(
        [stdio("s", "leak", TOKEN=SECRET, KEY="${MCP_T_KEY}", MCP_TEST_LEAK="KEY,TOKEN")],
        workspace=tmp_path,
        start_timeout=20,
    )
    try:
        [status] = await m.wait_ready()
        assert status.state == "failed"
        assert status.reason == "the server exited (code 1): TOKEN=***"
        said = (await m.call("mcp__s__echo", {"text": "x"})).content
        assert SECRET not in said and FROM_ENV not in said
    finally:
        await m.close()


async def test_an_error_a_tool_reports_is_masked_and_a_plain_result_is_whole(tmp_path: Path) -> None:
    m = McpManager([stdio("s", TOKEN=SECRET)], workspace=tmp_path, start_timeout=20)
    try:
        [status] = await m.wait_ready()
        assert status.state == "ready", status.reason
        failed = await m.call("mcp__s__fail", {"variable": "TOKEN"})
        assert failed.is_error and failed.content.endswith("the thing failed: TOKEN=***")
        # The answer of a tool, asked for, is the tool's: whole.
        assert (await m.call("mcp__s__env", {"name": "TOKEN"})).content == SECRET
    finally:
        await m.close()
