"""What a stdio MCP server started is stopped with it (the client against the real test server in
tests/support/mcp_server.py): a grandchild that left the server's process group and session with
``setsid``, a daemon whose parent exited (no longer the server's descendant), also when the server
crashed first; and what could not be stopped is said by its PID while the server's pipes are
still closed on the loop (no "Event loop is closed" at exit)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from app.agent.extensions.mcp import McpManager
from tests.integration.agent.test_mcp_client import ROOT, alive, gone, stdio

pytestmark = pytest.mark.timeout(60)


async def _ready(m: McpManager) -> None:
    statuses = await m.wait_ready()
    assert [s.state for s in statuses] == ["ready"] * len(statuses), [s.reason for s in statuses]


@pytest.mark.parametrize("mode", ["setsid", "daemon"])
async def test_close_stops_what_left_the_process_group(tmp_path: Path, mode: str) -> None:
    child_file = tmp_path / "child.pid"
    m = McpManager(
        [stdio("s", mode, MCP_TEST_CHILD_PID=str(child_file))], workspace=tmp_path, start_timeout=30
    )
    await _ready(m)
    child = int(child_file.read_text())
    server = m.status()[0].pid
    assert alive(child) and server is not None
    assert os.getsid(child) != os.getsid(server)  # out of the server's session: its group signal misses it
    await m.close()
    try:
        assert await gone(child, within=5.0), f"the {mode} grandchild {child} outlived the client"
        assert await gone(server)
        assert m.left == []
    finally:
        if alive(child):
            os.kill(child, signal.SIGKILL)


async def test_a_crashed_servers_setsid_grandchild_is_stopped_when_the_server_fails(tmp_path: Path) -> None:
    child_file = tmp_path / "child.pid"
    m = McpManager(
        [stdio("s", "setsid", MCP_TEST_CHILD_PID=str(child_file))], workspace=tmp_path, start_timeout=30
    )
    try:
        await _ready(m)
        child = int(child_file.read_text())
        result = await m.call("mcp__s__crash", {})
        assert result.is_error and m.status()[0].state == "failed"
        # The server is gone; its grandchild held its stdout open, so the failure waited for nothing:
        # the transport ended and took the grandchild with it, before any close().
        assert await gone(child, within=5.0), f"the crashed server's grandchild {child} is still running"
    finally:
        await m.close()
        if alive(int(child_file.read_text())):
            os.kill(int(child_file.read_text()), signal.SIGKILL)


# A process that cannot be stopped (another user's, say), played by making the stop a no-op: the
# client says its PID, and the server's pipes, which it still holds open, are closed on the loop.
_UNSTOPPABLE = """
import asyncio, gc, sys
from pathlib import Path
import app.agent.extensions.mcp.stdio as stdio
from app.agent.extensions.mcp import McpManager, StdioServer

async def keep(found, grace):
    return sorted(found, key=lambda p: p.pid)

stdio.stop = keep

async def main():
    m = McpManager([StdioServer("s", sys.executable, (sys.argv[1], "setsid"),
                                (("MCP_TEST_CHILD_PID", sys.argv[2]),))], workspace=Path(sys.argv[3]))
    [status] = await m.wait_ready(30)
    assert status.state == "ready", status.reason
    await m.close()
    print("\\n".join(m.left))

asyncio.run(main())
gc.collect()
"""


def test_a_process_that_could_not_be_stopped_is_said_by_pid_and_the_loop_closes_clean(tmp_path: Path) -> None:
    child_file = tmp_path / "child.pid"
    server = str(ROOT / "tests" / "support" / "mcp_server.py")
    out = subprocess.run(
        [sys.executable, "-c", _UNSTOPPABLE, server, str(child_file), str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=45,
    )
    child = int(child_file.read_text())
    try:
        assert out.returncode == 0, out.stderr
        assert out.stdout.splitlines() == [f"MCP server s: process {child} (sleep) could not be stopped"]
        assert "Exception ignored" not in out.stderr and "Event loop is closed" not in out.stderr, out.stderr
    finally:
        if alive(child):
            os.kill(child, signal.SIGKILL)


async def test_restart_stops_the_old_process_and_what_it_started(tmp_path: Path) -> None:
    child_file = tmp_path / "child.pid"
    m = McpManager(
        [stdio("s", "setsid", MCP_TEST_CHILD_PID=str(child_file))], workspace=tmp_path, start_timeout=30
    )
    children: list[int] = []
    try:
        await _ready(m)
        first, first_child = m.status()[0].pid, int(child_file.read_text())
        children.append(first_child)
        status = await m.restart("s")
        assert status.state == "ready" and status.pid not in (None, first)
        assert await gone(first_child) and first is not None and await gone(first)
        assert (await m.call("mcp__s__echo", {"text": "back"})).content == "back"
        with pytest.raises(KeyError):
            await m.restart("nobody")
    finally:
        await m.close()
        for child in {*children, int(child_file.read_text())}:
            if alive(child):
                os.kill(child, signal.SIGKILL)
