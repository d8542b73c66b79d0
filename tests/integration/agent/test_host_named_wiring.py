"""The runtime gives every tool call (the agent's and a sub-agent's, in the app and in print mode)
``ctx.host_named``: whether an allow rule in force at that call names the host exactly. A rule
saved mid-session counts from the next call; the bare ``web_fetch`` rule never names a host.
Through the real SDK and the fake Messages API, with a probe tool that reports what it is told."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field

from app.agent.config.settings import load_settings
from app.agent.permissions.rules import parse_rule_list
from app.agent.runtime import Runtime
from app.agent.tools import Tool, ToolContext, ToolInput, ToolKind, ToolRegistry, ToolResult
from tests.support.clitools import MODEL, result_text, tool_results
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.unit.agent.test_web_permission_rules import web_tools

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("sdk_env")]


class _HostInput(ToolInput):
    host: str = Field(description="A host.")


class ProbeHost(Tool[_HostInput]):
    """Reads nothing, asks nothing: says whether its context says a rule names the host."""

    name = "probe_host"
    Input = _HostInput
    kind = ToolKind.READ
    description = "Say whether a rule names this host for web_fetch."

    async def run(self, args: _HostInput, ctx: ToolContext) -> ToolResult:
        if ctx.host_named is None:
            return ToolResult(content="no host_named")
        return ToolResult(content=f"named={ctx.host_named('web_fetch', args.host)}")


def _tools() -> ToolRegistry:
    tools = web_tools()
    tools.register(ProbeHost())
    return tools


Factory = Callable[..., Coroutine[Any, Any, Runtime]]


@pytest.fixture
async def make_runtime(ws: Path) -> AsyncIterator[Factory]:
    opened: list[Runtime] = []

    async def factory(**kw: Any) -> Runtime:
        rt = Runtime(load_settings({"memory_mode": "off"}), ws, tools=_tools(), **kw)
        await rt.open_session()
        opened.append(rt)
        return rt

    yield factory
    for rt in opened:
        await rt.close()


def _local(ws: Path, body: str) -> None:
    path = ws / ".PseudoClaude" / "settings.local.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)


async def _probe(server: FakeAnthropic, rt: Runtime, host: str) -> str:
    call = f"toolu_{len(server.requests_for(MODEL))}"
    server.script(MODEL, tool_use("probe_host", {"host": host}, id=call), text("ok"))
    stop = await rt.runner.run(f"probe {host}")
    assert stop.status == "completed", stop.message
    [result] = [r for r in tool_results(server.requests_for(MODEL)[-1]) if r["tool_use_id"] == call]
    return result_text(result)


async def test_a_rule_saved_mid_session_names_the_host_from_the_next_call(
    server: FakeAnthropic, make_runtime: Factory, ws: Path
) -> None:
    _local(ws, '[permissions]\nallow = ["web_fetch", "web_fetch(domain:*.internal.example)"]\n')
    rt = await make_runtime()
    assert rt.ext.rules.problems == ()
    assert await _probe(server, rt, "127.0.0.1") == "named=False"  # the bare rule names no host
    assert await _probe(server, rt, "db.internal.example") == "named=False"  # nor a wildcard
    _local(ws, '[permissions]\nallow = ["web_fetch(domain:127.0.0.1)"]\n')
    await asyncio.to_thread(rt.ext.load)  # as "always allow" does after saving a rule
    assert await _probe(server, rt, "127.0.0.1") == "named=True"
    assert await _probe(server, rt, "127.0.0.2") == "named=False"


async def test_a_sub_agents_calls_are_told_the_same(
    server: FakeAnthropic, make_runtime: Factory, ws: Path
) -> None:
    _local(ws, '[permissions]\nallow = ["web_fetch(domain:[::1])"]\n')
    rt = await make_runtime()
    server.script(
        MODEL,
        tool_use("task", {"description": "probe", "prompt": "probe ::1"}, id="toolu_task"),
        tool_use("probe_host", {"host": "::1"}, id="toolu_sub"),
        text("the sub-agent is done"),
        text("done"),
    )
    stop = await rt.runner.run("ask a sub-agent")
    assert stop.status == "completed", stop.message
    sub_answer = next(
        r for req in server.requests_for(MODEL) for r in tool_results(req) if r["tool_use_id"] == "toolu_sub"
    )
    assert result_text(sub_answer) == "named=True"


async def test_print_modes_allow_tools_rules_name_a_host(
    server: FakeAnthropic, make_runtime: Factory
) -> None:
    rt = await make_runtime()  # no window: print mode's runtime
    assert await _probe(server, rt, "127.0.0.1") == "named=False"
    rt.ext.allow(parse_rule_list("web_fetch(domain:127.0.0.1)", tools=rt.tools), "--allow-tools")
    assert await _probe(server, rt, "127.0.0.1") == "named=True"
