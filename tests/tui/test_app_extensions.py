"""What a workspace adds, in the app, against the fake Messages API and a real stdio MCP server
(tests/support/mcp_server.py): MCP tools ask and their results reach the model, "always allow"
saves a rule that decides the next call, a cloned project's servers and commands wait for trust
(and a changed ``.mcp.json`` asks again), custom commands expand, a PreToolUse hook denies."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from app.tui.permission import window as permission_window
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.support.processes import alive, gone
from tests.tui.conftest import MODEL, chat_texts, send, wait_ready, wait_until
from widgets.dialogs.extension_trust import ExtensionTrustModal
from widgets.dialogs.permission import PermissionModal

pytestmark = pytest.mark.timeout(120)

ROOT = Path(__file__).resolve().parents[2]
SERVER = str(ROOT / "tests" / "support" / "mcp_server.py")


def _user_config(home: Path, body: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(body)


def _ready(app: Any, name: str) -> bool:
    return app.state.built and any(
        s.name == name and s.state == "ready" for s in app.services.extensions.servers()
    )


def _tool_result(server: FakeAnthropic, n: int) -> dict[str, Any]:
    content = server.requests_for(MODEL)[n].body["messages"][-1]["content"]
    return next(b for b in content if b.get("type") == "tool_result")


async def test_an_mcp_tool_asks_first_and_its_result_reaches_the_next_request(
    make_app, server: FakeAnthropic, isolated_home: Path
) -> None:
    _user_config(
        isolated_home,
        f"[mcp_servers.demo]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}]\n",
    )
    server.script(
        MODEL, tool_use("mcp__demo__echo", {"text": "hello from mcp"}, id="toolu_m"), text("echoed")
    )
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: _ready(app, "demo"), timeout=30, what="the MCP server ready")
        await send(pilot, "echo it")
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal), what="the permission window")
        modal = app.screen
        assert "demo" in modal.request.summary and "echo" in modal.request.summary
        assert '"text": "hello from mcp"' in modal.request.preview
        await pilot.press("1")
        await wait_until(pilot, lambda: "echoed" in chat_texts(app))
        names = [t["name"] for t in server.requests_for(MODEL)[0].body["tools"]]
        assert "mcp__demo__echo" in names
        assert names.index("mcp__demo__echo") > names.index("bash")  # after the built-ins
        result = _tool_result(server, 1)
        assert not result.get("is_error") and "hello from mcp" in json.dumps(result["content"])
        await send(pilot, "/mcp")
        await wait_until(pilot, lambda: any("demo (user) — ready" in t for t in chat_texts(app)))
        assert any("mcp__demo__echo" in t for t in chat_texts(app))


async def test_always_allow_saves_the_confirmed_rule_and_the_next_identical_call_does_not_ask(
    make_app, server: FakeAnthropic, ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[str] = []
    real_ask = permission_window.ask

    async def counting(app: Any, request: Any) -> Any:
        asked.append(request.name)
        return await real_ask(app, request)

    monkeypatch.setattr(permission_window, "ask", counting)
    call = {"command": "echo hi there"}
    server.script(MODEL, tool_use("bash", call, id="toolu_1"), text("first"))
    server.script(MODEL, tool_use("bash", call, id="toolu_2"), text("second"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "say hi")
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal), what="the permission window")
        modal = app.screen
        assert modal.request.rule == "bash(echo hi there)"
        await pilot.press("4")
        await pilot.press("enter")
        await wait_until(pilot, lambda: "first" in chat_texts(app))
        saved = (ws / ".PseudoClaude" / "settings.local.toml").read_text()
        assert 'allow = ["bash(echo hi there)"]' in saved
        assert any("always allowed in this project: bash(echo hi there)" in t for t in chat_texts(app))
        assert any("/.PseudoClaude/settings.local.toml to .gitignore" in t for t in chat_texts(app))
        await send(pilot, "again")
        await wait_until(pilot, lambda: "second" in chat_texts(app))
        assert asked == ["bash"]  # the second call was allowed by the saved rule
        assert app.chat.tool("toolu_2").status == "done"
        await send(pilot, "/permissions")
        await wait_until(
            pilot,
            lambda: any(
                "allow bash(echo hi there) — .PseudoClaude/settings.local.toml" in t for t in chat_texts(app)
            ),
        )
        await send(pilot, "/permissions remove bash(echo hi there)")
        await wait_until(
            pilot, lambda: any(t.startswith("removed bash(echo hi there)") for t in chat_texts(app))
        )
        assert "echo hi there" not in (ws / ".PseudoClaude" / "settings.local.toml").read_text()


def _project_server(ws: Path, pid_file: Path, *extra: str) -> None:
    entry = {"command": sys.executable, "args": [SERVER, *extra], "env": {"MCP_TEST_PID_FILE": str(pid_file)}}
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": entry}}))


async def test_a_cloned_projects_server_starts_only_after_trust_and_a_changed_command_asks_again(
    make_app, server: FakeAnthropic, ws: Path, tmp_path: Path
) -> None:
    first_pid = tmp_path / "first.pid"
    _project_server(ws, first_pid)
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ready(pilot)
        await wait_until(
            pilot,
            lambda: isinstance(app.screen, ExtensionTrustModal) and app.screen.query_one("#listing"),
            what="the trust window",
        )
        listing = app.screen.query_one("#listing").render()
        assert SERVER in str(listing)  # the command line that would run
        await asyncio.sleep(0.5)  # the app runs meanwhile: a server that would start, would
        assert not first_pid.exists()
        assert [(s.name, s.state) for s in app.services.extensions.servers()] == [
            ("proj", "waiting for trust")
        ]
        await pilot.press("y")
        await wait_until(pilot, lambda: _ready(app, "proj"), timeout=30, what="the trusted server ready")
        pid = int(first_pid.read_text())
        assert alive(pid)
    assert gone(first_pid)  # the app's quit shut the server down: no process is left

    second_pid = tmp_path / "second.pid"
    _project_server(ws, second_pid, "normal")  # the command changed after trust
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: isinstance(app.screen, ExtensionTrustModal), what="asked again")
        await pilot.press("n")
        await wait_until(pilot, lambda: any("not trusted for now" in t for t in chat_texts(app)))
        await asyncio.sleep(0.5)  # the app runs meanwhile: a server that would start, would
        assert not second_pid.exists()


async def test_project_commands_wait_for_trust_then_complete_and_expand(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    (ws / ".PseudoClaude" / "commands").mkdir(parents=True)
    (ws / ".PseudoClaude" / "commands" / "review.md").write_text(
        "---\ndescription: Review a file carefully\nargument-hint: FILE\n---\nReview $1 for bugs.\n"
    )
    (ws / ".claude" / "commands").mkdir(parents=True)
    (ws / ".claude" / "commands" / "explain.md").write_text("Explain $ARGUMENTS simply.\n")
    (ws / ".PseudoClaude" / "commands" / "bad.md").write_text("---\ndescription: [unclosed\n---\nbody\n")
    server.script(MODEL, text("reviewed"))
    server.script(MODEL, text("explained"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: isinstance(app.screen, ExtensionTrustModal), what="the trust window")
        assert app.chat_screen.complete("/rev", 4) == []  # not before trust
        await pilot.press("y")
        await wait_until(
            pilot, lambda: [s.insert for s in app.chat_screen.complete("/rev", 4)] == ["/review "]
        )
        suggestion = app.chat_screen.complete("/rev", 4)[0]
        assert suggestion.detail == "Review a file carefully" and suggestion.label == "/review FILE"
        await send(pilot, "/review src/app.py")
        await wait_until(pilot, lambda: "reviewed" in chat_texts(app))
        sent = json.dumps(server.requests_for(MODEL)[0].body["messages"][-1]["content"])
        assert "Review src/app.py for bugs." in sent
        await send(pilot, "/explain the build")
        await wait_until(pilot, lambda: "explained" in chat_texts(app))
        assert "Explain the build simply." in json.dumps(server.requests_for(MODEL)[1].body["messages"][-1])
        await send(pilot, "/help")
        await wait_until(pilot, lambda: any("Review a file carefully" in t for t in chat_texts(app)))
        help_text = next(t for t in chat_texts(app) if "Review a file carefully" in t)
        assert "broken:" in help_text and "/permissions" in help_text and "/mcp" in help_text
        await send(pilot, "/frobnicate")
        await wait_until(pilot, lambda: any("unknown command /frobnicate" in t for t in chat_texts(app)))


async def test_a_pre_tool_use_hook_that_exits_2_denies_and_the_model_gets_its_stderr(
    make_app, server: FakeAnthropic, ws: Path, isolated_home: Path
) -> None:
    script = "import sys; sys.stderr.write('bash is off limits here'); sys.exit(2)"
    _user_config(
        isolated_home,
        f'[[hooks.PreToolUse]]\nmatcher = "bash"\n'
        f"command = {json.dumps(f'{sys.executable} -c {json.dumps(script)}')}\n",
    )
    server.script(MODEL, tool_use("bash", {"command": "touch pwned"}, id="toolu_h"), text("ok then"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "touch it")
        await wait_until(pilot, lambda: "ok then" in chat_texts(app))
        result = _tool_result(server, 1)
        assert result["is_error"] and "bash is off limits here" in json.dumps(result["content"])
        assert not (ws / "pwned").exists()
        block = app.chat.tool("toolu_h")
        assert block.status == "denied" and block.hook_s > 0 and "hooks " in block.header_text


def _entry(name: str, pid_file: Path, mode: str = "normal") -> str:
    return (
        f"[mcp_servers.{name}]\ncommand = {json.dumps(sys.executable)}\nargs = [{json.dumps(SERVER)}, "
        f"{json.dumps(mode)}]\nenv = {{ MCP_TEST_PID_FILE = {json.dumps(str(pid_file))} }}\n"
    )


async def test_a_hang_garbage_and_a_crash_mid_call_are_one_line_each_and_no_server_is_left(
    make_app, server: FakeAnthropic, isolated_home: Path, tmp_path: Path
) -> None:
    pids = {name: tmp_path / f"{name}.pid" for name in ("demo", "hangs", "noisy")}
    _user_config(
        isolated_home,
        "mcp_start_timeout = 8\n"
        + _entry("demo", pids["demo"])
        + _entry("hangs", pids["hangs"], "hang")
        + _entry("noisy", pids["noisy"], "garbage"),
    )
    server.script(MODEL, tool_use("mcp__demo__crash", {}, id="toolu_c"), text("still here"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)  # the first frame never waits for a server
        await wait_until(pilot, lambda: _ready(app, "demo"), timeout=30, what="the MCP server ready")

        def failed(name: str) -> list[str]:
            return [t for t in chat_texts(app) if t.startswith(f"MCP server {name} failed")]

        await wait_until(
            pilot, lambda: failed("hangs") and failed("noisy"), timeout=30, what="two failure lines"
        )
        assert all("\n" not in line for line in failed("hangs") + failed("noisy"))
        await send(pilot, "crash it")
        await wait_until(pilot, lambda: isinstance(app.screen, PermissionModal), what="the permission window")
        await pilot.press("1")
        await wait_until(pilot, lambda: "still here" in chat_texts(app))
        assert app.chat.tool("toolu_c").status == "error"
        content = _tool_result(server, 1)["content"]
        said = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
        assert said.strip() and "\n" not in said.strip()
        await wait_until(pilot, lambda: failed("demo"), what="the crashed server said once")
        assert len(failed("hangs")) == 1 and len(failed("noisy")) == 1 and len(failed("demo")) == 1
    for pid_file in pids.values():
        assert gone(pid_file)
