"""The MCP client against a real MCP server (tests/support/mcp_server.py, the SDK's server side):
start-up, calls, every way a server goes wrong as one line, stable tool order, and close()
leaving no process behind."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.agent.extensions.mcp import (
    HttpServer,
    McpError,
    McpManager,
    StdioServer,
    load_servers,
    trust_project_servers,
)

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[3]
SERVER = str(ROOT / "tests" / "support" / "mcp_server.py")


def stdio(name: str, mode: str = "normal", **env: str) -> StdioServer:
    return StdioServer(name, sys.executable, (SERVER, mode), tuple(env.items()))


def alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting for its parent counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


async def gone(pid: int, within: float = 5.0) -> bool:
    deadline = time.monotonic() + within
    while alive(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    return not alive(pid)


def one_line(text: str) -> bool:
    return "\n" not in text and text.strip() == text and len(text) < 600


@pytest.fixture
def sdk_loaded() -> None:
    """The SDK imported up front, so a test's timing measures the server, not the import."""
    import app.agent.extensions.mcp.connection  # noqa: F401


async def test_echo_round_trip_with_env_prompts_and_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCP_T_GREETING", raising=False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-for-servers")
    m = McpManager([stdio("t", GREETING="${MCP_T_GREETING:-hello}")], workspace=tmp_path, start_timeout=20)
    try:
        [status] = await m.wait_ready()
        assert status.state == "ready", status.reason
        assert status.tools == tuple(
            f"mcp__t__{n}"
            for n in ["big", "crash", "echo", "env", "fail", "header", "peek", "picture", "sleep"]
        )
        assert await m.call("mcp__t__echo", {"text": "hi there"}) == _result("hi there")
        assert await m.call("mcp__t__env", {"name": "GREETING"}) == _result("hello")
        assert await m.call("mcp__t__env", {"name": "ANTHROPIC_API_KEY"}) == _result("<unset>")
        failed = await m.call("mcp__t__fail", {})
        assert failed.is_error and "the thing failed" in failed.content
        picture = await m.call("mcp__t__picture", {})
        assert picture.content.splitlines() == ["a picture:", "[image image/png, 69 B: not shown]"]
        assert [p.command for p in m.prompts()] == ["mcp__t__greet"]
        assert await m.get_prompt("t", "greet", {"name": "Ada"}) == "Say hello to Ada."
        unknown = await m.call("mcp__t__nope", {})
        assert unknown.is_error and one_line(unknown.content)
        with pytest.raises(McpError):
            await m.get_prompt("nobody", "greet")
    finally:
        await m.close()


def _result(text: str) -> object:
    from app.agent.extensions.mcp import McpResult

    return McpResult(text)


async def test_a_server_that_hangs_at_start_fails_within_the_bound(tmp_path: Path, sdk_loaded: None) -> None:
    m = McpManager([stdio("h", "hang")], workspace=tmp_path, start_timeout=1.5)
    started = time.monotonic()
    [status] = await m.wait_ready()
    assert time.monotonic() - started < 4.0
    assert status.state == "failed" and status.reason == "did not start within 1.5 s"
    assert status.pid is not None
    await m.close()
    assert await gone(status.pid)


async def test_a_server_that_cannot_start_is_failed_with_why(
    tmp_path: Path, sdk_loaded: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MCP_T_MISSING", raising=False)
    m = McpManager(
        [stdio("a", TOKEN="${MCP_T_MISSING}"), StdioServer("b", str(tmp_path / "no-such-server"))],
        workspace=tmp_path,
        start_timeout=5,
    )
    try:
        a, b = await m.wait_ready()
        assert (a.state, a.reason, a.pid) == ("failed", "${MCP_T_MISSING} is not set", None)
        assert (b.state, b.reason) == (
            "failed",
            f"cannot run {str(tmp_path / 'no-such-server')!r}: no such file",
        )
        assert m.tools() == [] and m.prompts() == []
    finally:
        await m.close()


async def test_a_call_past_its_timeout_is_a_one_line_error_and_the_server_stays(tmp_path: Path) -> None:
    m = McpManager([stdio("t")], workspace=tmp_path, start_timeout=20, call_timeout=0.5)
    try:
        await m.wait_ready()
        started = time.monotonic()
        slow = await m.call("mcp__t__sleep", {"seconds": 30})
        assert time.monotonic() - started < 3.0
        assert slow.is_error and slow.content == "mcp__t__sleep failed: no answer within 0.5 s"
        assert m.status()[0].state == "ready"
        assert (await m.call("mcp__t__echo", {"text": "still here"})).content == "still here"
        # Calls do not wait on each other, and a caller that gives up (Esc) cancels its call.
        waiting = asyncio.create_task(m.call("mcp__t__sleep", {"seconds": 30}, timeout=30))
        assert (await m.call("mcp__t__echo", {"text": "beside"})).content == "beside"
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        assert (await m.call("mcp__t__echo", {"text": "after"})).content == "after"
        assert m.status()[0].state == "ready"
    finally:
        await m.close()


async def test_a_server_that_exits_mid_call_is_a_one_line_error_and_failed(tmp_path: Path) -> None:
    m = McpManager([stdio("t")], workspace=tmp_path, start_timeout=20)
    try:
        [before] = await m.wait_ready()
        result = await m.call("mcp__t__crash", {})
        assert result.is_error and one_line(result.content)
        assert result.content == (
            "mcp__t__crash failed: the MCP server 't' failed: the server exited (code 3): about to crash"
        )
        [after] = m.status()
        assert after.state == "failed" and after.reason == "the server exited (code 3): about to crash"
        assert m.tools() == []
        again = await m.call("mcp__t__echo", {"text": "x"})
        assert again.is_error and "failed" in again.content
    finally:
        await m.close()
    assert before.pid is not None and await gone(before.pid)


async def test_garbage_on_stdout_fails_that_server_only(tmp_path: Path) -> None:
    m = McpManager([stdio("g", "garbage"), stdio("t")], workspace=tmp_path, start_timeout=20)
    try:
        garbage, good = await m.wait_ready()
        assert garbage.state == "failed" and one_line(garbage.reason)
        assert garbage.reason.startswith(
            "the server wrote something that is not MCP to stdout: 'Starting the"
        )
        assert good.state == "ready"
        assert [t.server for t in m.tools()] == ["t"] * len(good.tools)
    finally:
        await m.close()
    assert garbage.pid is not None and await gone(garbage.pid)


async def test_a_five_megabyte_result_comes_back_whole(tmp_path: Path) -> None:
    m = McpManager([stdio("t")], workspace=tmp_path, start_timeout=20)
    try:
        await m.wait_ready()
        result = await m.call("mcp__t__big", {"megabytes": 5})
        assert not result.is_error
        assert result.content == "x" * (5 * 1024 * 1024)
    finally:
        await m.close()


async def _order(tmp_path: Path, slow: str) -> tuple[list[str], list[dict[str, object]]]:
    """Two servers, ``slow`` ready a second after the other: the tool list once the fast one
    is ready, and the API tools once both are."""
    servers = [
        stdio(name, "slow" if name == slow else "normal", MCP_TEST_DELAY="1.5", MCP_TEST_NAME=f"{name}_")
        for name in ("beta", "alpha")
    ]
    m = McpManager(servers, workspace=tmp_path, start_timeout=20)
    try:
        m.start()
        while not m.tools():
            await asyncio.sleep(0.02)
        first = [t.server for t in m.tools()]
        await m.wait_ready()
        return first, m.api_tools()
    finally:
        await m.close()


async def test_tool_order_is_stable_whichever_server_answers_first(tmp_path: Path) -> None:
    first_a, tools_a = await _order(tmp_path, slow="alpha")
    first_b, tools_b = await _order(tmp_path, slow="beta")
    assert set(first_a) == {"beta"} and set(first_b) == {"alpha"}
    assert tools_a == tools_b
    names = [t["name"] for t in tools_a]
    assert names == sorted(names) and names[0] == "mcp__alpha__alpha_big" and len(names) == 18


async def test_the_read_only_view_has_only_tools_marked_read_only(tmp_path: Path) -> None:
    m = McpManager([stdio("t")], workspace=tmp_path, start_timeout=20)
    try:
        await m.wait_ready()
        assert [t.name for t in m.tools(read_only=True)] == ["mcp__t__peek"]
        assert [t["name"] for t in m.api_tools(read_only=True)] == ["mcp__t__peek"]
        assert len(m.tools()) == 9
    finally:
        await m.close()


async def test_close_leaves_no_process_behind(tmp_path: Path) -> None:
    child_pid_file = tmp_path / "child.pid"
    starting_pid_file = tmp_path / "starting.pid"
    m = McpManager(
        [
            stdio("kids", "child", MCP_TEST_CHILD_PID=str(child_pid_file)),
            stdio("plain"),
            stdio("still", "slow", MCP_TEST_DELAY="60", MCP_TEST_PID_FILE=str(starting_pid_file)),
        ],
        workspace=tmp_path,
        start_timeout=30,
    )
    m.start()
    while [s.state for s in m.status()][:2] != ["ready", "ready"]:
        await asyncio.sleep(0.05)
    while not starting_pid_file.exists():
        await asyncio.sleep(0.05)
    status = m.status()
    assert status[2].state == "starting"
    pids = [s.pid for s in status]
    assert all(p is not None and alive(p) for p in pids)
    child = int(child_pid_file.read_text())
    assert alive(child)
    started = time.monotonic()
    await m.close()
    assert time.monotonic() - started < 6.0
    assert [s.state for s in m.status()] == ["stopped", "stopped", "stopped"]
    for pid in [*pids, child]:
        assert pid is not None and await gone(pid, within=2.0), f"process {pid} is still running"


def _write_project(ws: Path, pid_file: Path) -> None:
    entry = {"command": sys.executable, "args": [SERVER], "env": {"MCP_TEST_PID_FILE": str(pid_file)}}
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"proj": entry}}))


async def test_an_untrusted_project_server_is_not_started_and_a_trusted_one_is(
    tmp_path: Path, isolated_home: Path
) -> None:
    pid_file = tmp_path / "proj.pid"
    _write_project(tmp_path, pid_file)
    loaded = load_servers(tmp_path, isolated_home)
    assert loaded.waiting == ("proj",)
    untrusted = McpManager(loaded.servers, workspace=tmp_path)
    assert await untrusted.wait_ready() == []
    await asyncio.sleep(0.5)
    assert not pid_file.exists()

    trust_project_servers(tmp_path, loaded.project, isolated_home)
    trusted = McpManager(load_servers(tmp_path, isolated_home).servers, workspace=tmp_path, start_timeout=20)
    try:
        [status] = await trusted.wait_ready()
        assert (status.name, status.source, status.state) == ("proj", "project", "ready")
        assert pid_file.read_text() == str(status.pid)
    finally:
        await trusted.close()


def test_the_sdk_is_not_imported_without_a_server(tmp_path: Path) -> None:
    code = (
        "import asyncio, sys\n"
        "from pathlib import Path\n"
        "from app.agent.extensions.mcp import McpManager, load_servers\n"
        f"loaded = load_servers(Path({str(tmp_path)!r}))\n"
        f"m = McpManager(loaded.servers, workspace=Path({str(tmp_path)!r}))\n"
        "async def main():\n"
        "    m.start(); await m.wait_ready(); print(m.api_tools()); await m.close()\n"
        "asyncio.run(main())\n"
        "print(sorted(n for n in sys.modules\n"
        "    if n == 'mcp' or n.startswith(('mcp.', 'app.agent.extensions.mcp.connection'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["[]", "[]"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def http_server(request: pytest.FixtureRequest) -> Iterator[int]:
    port = _free_port()
    env = {**os.environ, "MCP_TEST_PORT": str(port)}
    proc = subprocess.Popen(
        [sys.executable, SERVER, request.param],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.05)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.parametrize(
    ("http_server", "kind", "path"),
    [("http", "http", "/mcp"), ("sse", "sse", "/sse")],
    indirect=["http_server"],
)
async def test_http_transports_send_the_expanded_headers(
    http_server: int, kind: str, path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MCP_T_SECRET", "Bearer s3cret")
    server = HttpServer(
        "web",
        f"http://127.0.0.1:{http_server}{path}",
        (("X-Test", "${MCP_T_SECRET}"),),
        "http" if kind == "http" else "sse",
    )
    m = McpManager([server], workspace=tmp_path, start_timeout=20)
    try:
        [status] = await m.wait_ready()
        assert status.state == "ready", status.reason
        assert "s3cret" not in status.describe
        assert (await m.call("mcp__web__header", {"name": "X-Test"})).content == "Bearer s3cret"
        assert (await m.call("mcp__web__echo", {"text": "over http"})).content == "over http"
    finally:
        await m.close()
