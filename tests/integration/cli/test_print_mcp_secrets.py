"""Print mode never shows an MCP server's configured env values in clear on stderr (the real CLI,
the fake Messages API, the real test server of tests/support/mcp_server.py): not in the line of a
server that failed with its environment on its stderr, nor in an error a tool reported."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.support.clitools import MODEL, run_cli
from tests.support.fakeapi import FakeAnthropic, text, tool_use

ROOT = Path(__file__).resolve().parents[3]
SERVER = str(ROOT / "tests" / "support" / "mcp_server.py")
SECRET = "ENVSECRET-777"
FROM_ENV = "expanded-secret-31337"


def _entry(name: str, mode: str, env: dict[str, str]) -> str:
    pairs = ", ".join(f"{k} = {json.dumps(v)}" for k, v in env.items())
    return (
        f"[mcp_servers.{name}]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}, "
        f"{json.dumps(mode)}]\nenv = {{ {pairs} }}\n"
    )


def test_a_failing_servers_env_and_a_tools_error_are_masked_on_stderr(
    server: FakeAnthropic, ws: Path
) -> None:
    home = Path(os.environ["PSEUDOCLAUDE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(
        _entry("leaky", "leak", {"TOKEN": SECRET, "KEY": "${MCP_T_KEY}", "MCP_TEST_LEAK": "TOKEN,KEY"})
        + _entry("ok", "normal", {"TOKEN": SECRET})
        + '[permissions]\nallow = ["mcp__ok__fail"]\n'
    )
    server.script(MODEL, tool_use("mcp__ok__fail", {"variable": "TOKEN"}, id="toolu_1"), text("noted"))
    res = run_cli(server, ws, "-p", "go", "--memory", "off", MCP_T_KEY=FROM_ENV)
    assert res.code == 0, res.err
    assert SECRET not in res.err and FROM_ENV not in res.err, res.err
    assert "MCP server leaky failed: the server exited (code 1): KEY=***" in res.err
    assert "the thing failed: TOKEN=***" in res.err
    # What the model got of the error is masked as well.
    sent = json.dumps(server.requests_for(MODEL)[1].body["messages"][-1])
    assert SECRET not in sent and "TOKEN=***" in sent
