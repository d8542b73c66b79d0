"""A project's MCP servers in the app (Pilot, the fake Messages API, the real test server of
tests/support/mcp_server.py), while a server of the person's own config runs: before trust
``/mcp`` lists the project's server as waiting for trust and nothing runs; ``y`` in the trust
window starts it at once (no restart of the app), its tools join the next request; a crash shows
as failed with why, and ``/mcp restart NAME`` brings it back. And a server's configured env
values are masked in the chat and ``/mcp``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.agent.test_mcp_client import alive
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.support.processes import gone
from tests.tui.conftest import MODEL, chat_texts, send, wait_ready, wait_until
from widgets.dialogs.extension_trust import ExtensionTrustModal

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
SERVER = str(ROOT / "tests" / "support" / "mcp_server.py")
SECRET = "ENVSECRET-777"


def _user_server(home: Path, pid_file: Path, extra: str = "") -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        f"[mcp_servers.mine]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n"
        f'env = {{ MCP_TEST_PID_FILE = {json.dumps(str(pid_file))}, MCP_TEST_NAME = "mine_" }}\n' + extra
    )


def _project_server(ws: Path, pid_file: Path) -> None:
    entry = {"command": sys.executable, "args": [SERVER], "env": {"MCP_TEST_PID_FILE": str(pid_file)}}
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": entry}}))


def _state(app: Any, name: str) -> str:
    if not app.state.built:
        return ""
    return next((s.state for s in app.services.extensions.servers() if s.name == name), "")


def _note_with(app: Any, *parts: str) -> str:
    return next((t for t in reversed(chat_texts(app)) if all(p in t for p in parts)), "")


async def test_a_project_server_waits_then_starts_on_trust_and_restarts_after_a_crash(
    make_app, server: FakeAnthropic, ws: Path, isolated_home: Path, tmp_path: Path
) -> None:
    mine_pid, proj_pid = tmp_path / "mine.pid", tmp_path / "proj.pid"
    _user_server(isolated_home, mine_pid, '[permissions]\nallow = ["mcp__proj__crash"]\n')
    _project_server(ws, proj_pid)

    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: isinstance(app.screen, ExtensionTrustModal), what="the trust window")
        await pilot.press("n")
        await wait_until(
            pilot, lambda: _state(app, "mine") == "ready", timeout=30, what="the user's server ready"
        )
        await send(pilot, "/mcp")
        await wait_until(pilot, lambda: _note_with(app, "proj (project) — waiting for trust"), what="/mcp")
        assert "mine (user) — ready" in _note_with(app, "proj (project)")
        await send(pilot, "/mcp restart proj")
        await wait_until(pilot, lambda: _note_with(app, "MCP server proj waits for your trust"))
        assert not proj_pid.exists()

    server.script(MODEL, text("hello"))
    server.script(MODEL, tool_use("mcp__proj__crash", {}, id="toolu_c"), text("it crashed"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: isinstance(app.screen, ExtensionTrustModal), what="the trust window")
        await wait_until(
            pilot, lambda: _state(app, "mine") == "ready", timeout=30, what="the user's server ready"
        )
        assert not proj_pid.exists()
        await pilot.press("y")
        await wait_until(
            pilot,
            lambda: _note_with(app, "MCP server proj ready: 9 tool(s)"),
            timeout=30,
            what="the trusted server said ready",
        )
        first = int(proj_pid.read_text())
        assert alive(first)
        await send(pilot, "/mcp")
        await wait_until(pilot, lambda: _note_with(app, "proj (project) — ready"), what="/mcp says ready")
        await send(pilot, "hi")
        await wait_until(pilot, lambda: "hello" in chat_texts(app))
        names = [t["name"] for t in server.requests_for(MODEL)[0].body["tools"]]
        assert "mcp__proj__echo" in names and "mcp__mine__mine_echo" in names

        await send(pilot, "crash it")
        await wait_until(pilot, lambda: "it crashed" in chat_texts(app))
        await wait_until(
            pilot,
            lambda: _note_with(app, "MCP server proj failed: the server exited (code 3): about to crash"),
            what="the crash said",
        )
        await send(pilot, "/mcp")
        await wait_until(
            pilot,
            lambda: _note_with(app, "proj (project) — failed: the server exited (code 3): about to crash"),
            what="/mcp says why",
        )
        assert "/mcp restart NAME" in _note_with(app, "proj (project) — failed")

        await send(pilot, "/mcp restart nobody")
        await wait_until(
            pilot, lambda: _note_with(app, "no MCP server named 'nobody' (there are: mine, proj)")
        )
        await send(pilot, "/mcp restart proj")
        await wait_until(pilot, lambda: _note_with(app, "MCP server proj restarted: ready"), timeout=30)
        second = int(proj_pid.read_text())
        assert second != first and alive(second)
        assert _state(app, "proj") == "ready"
        failed_lines = [t for t in chat_texts(app) if t.startswith("MCP server proj failed")]
        assert len(failed_lines) == 1  # the crash, said once; the restart said by its own line
    assert gone(proj_pid) and gone(mine_pid)


async def test_a_servers_env_values_are_masked_in_the_chat_and_in_mcp(
    make_app, server: FakeAnthropic, isolated_home: Path
) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text(
        f"[mcp_servers.leaky]\ncommand = {json.dumps(sys.executable)}\n"
        f'args = [{json.dumps(SERVER)}, "leak"]\n'
        f'env = {{ KEY = "{SECRET}", MCP_TEST_LEAK = "KEY" }}\n'
    )
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(
            pilot, lambda: _note_with(app, "MCP server leaky failed"), timeout=30, what="the failure"
        )
        await send(pilot, "/mcp")
        await wait_until(pilot, lambda: _note_with(app, "leaky (user) — failed"), what="/mcp")
        assert (
            _note_with(app, "MCP server leaky failed")
            == "MCP server leaky failed: the server exited (code 1): KEY=***"
        )
        assert "failed: the server exited (code 1): KEY=***" in _note_with(app, "leaky (user) — failed")
        assert not [t for t in chat_texts(app) if SECRET in t]
