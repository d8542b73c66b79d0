"""web_search's side request in one runtime (the app's process): a refusing endpoint is asked once
however many turns search, a paused server-tool turn is sent back to go on, a search is bounded in
time, and its usage reaches the Run's events under the web model (the real SDK, the fake API)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from app.agent.config.settings import load_settings
from app.agent.model.provider import UsageEvent
from app.agent.runtime import Runtime
from app.agent.turn.events import RunEvent
from tests.support.clitools import MEMORY_MODEL, MODEL, result_text, tool_results
from tests.support.fakeapi import (
    FakeAnthropic,
    cited_text_block,
    message,
    reject_param,
    server_tool_block,
    text,
    tool_use,
    web_citation,
    web_search_reply,
    web_search_results_block,
)

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("sdk_env")]

URL = "https://docs.python.org/3/library/asyncio-task.html"
RESULTS = [(URL, "Coroutines and Tasks", "1 day ago")]

Factory = Callable[..., Coroutine[Any, Any, Runtime]]


@pytest.fixture
async def make_runtime(ws: Path, isolated_home: Path) -> AsyncIterator[Factory]:
    opened: list[Runtime] = []

    async def factory(**flags: Any) -> Runtime:
        isolated_home.mkdir(parents=True, exist_ok=True)
        (isolated_home / "config.toml").write_text('[permissions]\nallow = ["web_search"]\n')
        rt = Runtime(load_settings({"memory_mode": "off", **flags}), ws)
        await rt.open_session()
        opened.append(rt)
        return rt

    yield factory
    for rt in opened:
        await rt.close()


def _side_requests(server: FakeAnthropic) -> list[Any]:
    return [r for r in server.requests_for(MEMORY_MODEL) if "tools" in r.body]


def _last_result(server: FakeAnthropic) -> dict[str, Any]:
    return tool_results(server.requests_for(MODEL)[-1])[-1]


async def test_two_turns_against_a_refusing_endpoint_make_one_refused_request(
    server: FakeAnthropic, make_runtime: Factory
) -> None:
    server.script(
        MEMORY_MODEL,
        reject_param("tools", message="tools.0.type: Extra inputs are not permitted", sticky=True),
    )
    rt = await make_runtime()
    for query in ("first", "second"):
        server.script(MODEL, tool_use("web_search", {"query": query}), text("ok"))
        stop = await rt.runner.run(f"search {query}")
        assert stop.status == "completed", stop.message
        result = _last_result(server)
        assert result.get("is_error") and result_text(result).startswith("web search is unavailable at ")
    assert len(_side_requests(server)) == 1


async def test_a_paused_server_tool_turn_is_sent_back_and_goes_on(
    server: FakeAnthropic, make_runtime: Factory
) -> None:
    call = server_tool_block("web_search", {"query": "asyncio timeout"})
    paused = message(call, web_search_results_block(call.id, RESULTS), stop_reason="pause_turn")
    done = message(cited_text_block("Use asyncio.timeout().", web_citation(URL, "Coroutines and Tasks")))
    server.script(MEMORY_MODEL, paused, done)
    server.script(MODEL, tool_use("web_search", {"query": "asyncio timeout"}), text("ok"))
    rt = await make_runtime()
    assert (await rt.runner.run("search")).status == "completed"
    _, second = _side_requests(server)
    assert [m["role"] for m in second.body["messages"]] == ["user", "assistant"]
    sent_back = [b["type"] for b in second.body["messages"][1]["content"]]
    assert sent_back == ["server_tool_use", "web_search_tool_result"]
    assert second.body["messages"][1]["content"][0]["input"] == {"query": "asyncio timeout"}
    said = result_text(_last_result(server))
    assert "1. Coroutines and Tasks — " + URL in said and "Use asyncio.timeout(). [1]" in said


async def test_a_search_past_its_time_bound_is_stopped_in_one_line(
    server: FakeAnthropic, make_runtime: Factory
) -> None:
    held = server.gate("side request")
    server.script(MEMORY_MODEL, web_search_reply("q", RESULTS, "late").held(before=held))
    server.script(MODEL, tool_use("web_search", {"query": "q"}), text("ok"))
    rt = await make_runtime()
    rt.web_search.timeout = 0.5
    try:
        stop = await rt.runner.run("search")
    finally:
        held.release()
    assert stop.status == "completed", stop.message
    result = _last_result(server)
    assert (
        result.get("is_error") and result_text(result) == "web search took longer than 0.5 s and was stopped"
    )


async def test_the_side_requests_usage_is_an_event_of_the_run_under_the_web_model(
    server: FakeAnthropic, make_runtime: Factory
) -> None:
    server.script("claude-web-9", web_search_reply("q", RESULTS, "ok").with_usage(input_tokens=777))
    server.script(MODEL, tool_use("web_search", {"query": "q"}), text("ok"))
    rt = await make_runtime(web_model="claude-web-9")
    events: list[RunEvent] = []
    stop = await rt.runner.run("search", events.append)
    side = [e for e in events if isinstance(e, UsageEvent) and e.model]
    assert [(e.model, e.usage.input_tokens, e.usage.web_search_requests) for e in side] == [
        ("claude-web-9", 777, 1)
    ]
    assert [e.model for e in events if isinstance(e, UsageEvent)] == ["", "claude-web-9", ""]
    assert stop.usage.input_tokens == 10 + 777 + 10 and stop.usage.web_search_requests == 1
