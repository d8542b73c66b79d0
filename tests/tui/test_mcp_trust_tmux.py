"""In a real terminal (the installed app in tmux, the fake Messages API, the real test server of
tests/support/mcp_server.py), with a server of the person's own config running: a cloned
project's ``.mcp.json`` server is listed by ``/mcp`` as waiting for trust and does not run; ``y``
in the trust window starts it in that same session (its PID file appears, ``/mcp`` says ready,
its tool is in the next request); a crash is shown as failed with why, and ``/mcp restart proj``
brings it back."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from tests.integration.agent.test_mcp_client import alive
from tests.support.clitools import MODEL, cli_env
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.support.processes import gone
from tests.tui.test_smoke_tmux import Tmux, open_tmux, quit_app, start_app, tmux, workspace
from widgets.dialogs.decision import QUIET_S, SETTLE_S

__all__ = ["tmux", "workspace"]  # the fixtures, used by name

pytestmark = pytest.mark.timeout(180)

ROOT = Path(__file__).resolve().parents[2]
SERVER = str(ROOT / "tests" / "support" / "mcp_server.py")
TRUST_TITLE = "Trust what this project brings?"


def _configure(home: Path, ws: Path, mine_pid: Path, proj_pid: Path) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f"[mcp_servers.mine]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n"
        f'env = {{ MCP_TEST_PID_FILE = {json.dumps(str(mine_pid))}, MCP_TEST_NAME = "mine_" }}\n'
        '[permissions]\nallow = ["mcp__proj__crash"]\n'
    )
    entry = {"command": sys.executable, "args": [SERVER], "env": {"MCP_TEST_PID_FILE": str(proj_pid)}}
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": entry}}))


def _type(tmux: Tmux, line: str) -> None:
    tmux.send_text(line)
    tmux.wait_for(lambda s: line in s, f"{line!r} typed")
    tmux.send_key("Enter")


def _answer_trust(tmux: Tmux, key: str) -> None:
    tmux.wait_for(lambda s: TRUST_TITLE in s, "the trust window", timeout=30)
    time.sleep(SETTLE_S + QUIET_S)  # read, then answered on purpose
    tmux.send_text(key)
    tmux.wait_for(lambda s: TRUST_TITLE not in s, "the trust window answered")


def _wait_file(path: Path, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_trust_starts_the_project_server_at_once_and_restart_brings_it_back_after_a_crash(
    tmux: Tmux, workspace: Path, tmp_path: Path, isolated_home: Path
) -> None:
    mine_pid, proj_pid = tmp_path / "mine.pid", tmp_path / "proj.pid"
    _configure(isolated_home, workspace, mine_pid, proj_pid)
    with FakeAnthropic() as server:
        env = {k: v for k, v in cli_env(server).items() if not k.startswith("TMUX")}
        start_app(tmux, server, workspace, "--memory", "off", env=env)
        _answer_trust(tmux, "n")
        _wait_file(mine_pid)
        _type(tmux, "/mcp")
        tmux.wait_for(lambda s: "proj (project) — waiting for trust" in s, "/mcp")
        assert not proj_pid.exists()
        quit_app(tmux)
        assert not proj_pid.exists() and gone(mine_pid)

        server.script(MODEL, text("hello there"))
        server.script(MODEL, tool_use("mcp__proj__crash", {}, id="toolu_c"), text("it crashed"))
        (tmp_path / "again").mkdir()
        again = open_tmux(tmp_path / "again")
        try:
            start_app(again, server, workspace, "--memory", "off", env=env)
            _answer_trust(again, "y")
            _wait_file(proj_pid)  # no restart of the app: the trust started it
            first = int(proj_pid.read_text())
            assert alive(first)
            again.wait_for(
                lambda s: "MCP server proj ready: 9 tool(s)" in s, "the server said ready", timeout=30
            )
            _type(again, "/mcp")
            again.wait_for(lambda s: "proj (project) — ready" in s, "/mcp says ready")
            _type(again, "say hi")
            again.wait_for(lambda s: "hello there" in s, "the answer")
            names = [t["name"] for t in server.requests_for(MODEL)[0].body["tools"]]
            assert "mcp__proj__echo" in names and "mcp__mine__mine_echo" in names

            _type(again, "crash it")
            again.wait_for(lambda s: "it crashed" in s, "the answer after the crash")
            again.wait_for(
                lambda s: "MCP server proj failed" in s and "about to crash" in s, "the crash said"
            )
            _type(again, "/mcp")
            again.wait_for(
                lambda s: (
                    "proj (project) — failed: the server" in s
                    and "exited (code 3)" in s.split("proj (project) — failed")[-1]
                ),
                "/mcp says why",
            )
            _type(again, "/mcp restart proj")
            screen = again.wait_for(
                lambda s: "MCP server proj restarted: ready" in s, "the restart", timeout=30
            )
            assert "Traceback" not in screen
            second = int(proj_pid.read_text())
            assert second != first and alive(second)
            quit_app(again)
        finally:
            again.kill()
        assert gone(proj_pid) and gone(mine_pid)
        assert not server.errors, server.errors[0]
