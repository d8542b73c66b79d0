"""Print mode leaves no MCP process behind and exits clean (the real CLI, the fake Messages API,
the real test server of tests/support/mcp_server.py): a grandchild that left the server's process
group with ``setsid`` and a double-forked daemon are gone once ``-p`` exits, and stderr holds no
"Exception ignored … Event loop is closed" from a pipe closed after the loop."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from tests.integration.agent.test_mcp_client import alive
from tests.support.clitools import MODEL, run_cli
from tests.support.fakeapi import FakeAnthropic, text

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[3]
SERVER = str(ROOT / "tests" / "support" / "mcp_server.py")


def _entry(name: str, mode: str, child_file: Path) -> str:
    return (
        f"[mcp_servers.{name}]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}, "
        f"{json.dumps(mode)}]\nenv = {{ MCP_TEST_CHILD_PID = {json.dumps(str(child_file))} }}\n"
    )


def _gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def test_print_mode_stops_what_left_the_group_and_exits_without_a_loop_error(
    server: FakeAnthropic, ws: Path, tmp_path: Path
) -> None:
    files = {mode: tmp_path / f"{mode}.pid" for mode in ("setsid", "daemon")}
    home = Path(os.environ["PSEUDOCLAUDE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text("".join(_entry(f"s_{mode}", mode, f) for mode, f in files.items()))
    server.script(MODEL, text("done"))
    res = run_cli(server, ws, "-p", "hello", "--memory", "off")
    children = {mode: int(f.read_text()) for mode, f in files.items()}
    try:
        assert res.code == 0, res.err
        assert res.out.strip() == "done"
        for mode, pid in children.items():
            assert _gone(pid), f"the {mode} grandchild {pid} outlived `pseudoclaude -p`"
        assert "Exception ignored" not in res.err and "Event loop is closed" not in res.err, res.err
        assert "could not be stopped" not in res.err
        # Both servers were up: their tools were offered.
        names = [t["name"] for t in server.requests_for(MODEL)[0].body["tools"]]
        assert "mcp__s_setsid__echo" in names and "mcp__s_daemon__echo" in names
    finally:
        for pid in children.values():
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
