"""The Runner in-process, through the real SDK against the fake Messages API."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.memory_model import _NO_STRUCTURED, AnthropicCompletion
from app.runner import MemorySubmitted, RunStop, ToolCallStarted
from app.runtime import Runtime
from app.session import SessionStore
from app.settings import load_settings
from app.tools import AllowListGate
from memory.completion import CompletionRequest
from memory.prompt import OPERATIONS_SCHEMA
from tests.fakeapi import FakeAnthropic, reject_param, text, tool_use
from tests.integration.clitools import MEMORY_MODEL, MODEL, create_op, ops_answer, tool_results

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def sdk_env(server: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK in this process talks to the fake server; retries back off in milliseconds."""
    for k, v in server.env().items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("PSEUDOCLAUDE_RETRY_DELAY", "0.01")


@pytest.fixture
async def runtime(server: FakeAnthropic, ws: Path) -> AsyncIterator[Runtime]:
    rt = Runtime(load_settings({"memory_wait": 10}), ws, gate=AllowListGate({"bash"}))
    rt.open_session()
    await rt.start()
    yield rt
    await rt.close()


async def test_job_exists_on_disk_when_stop_event_arrives(server: FakeAnthropic, runtime: Runtime) -> None:
    server.script(MODEL, text("hello"))
    server.script(MEMORY_MODEL, text("[]"))
    seen: list[str] = []

    def on_event(ev: object) -> None:
        if isinstance(ev, MemorySubmitted):
            seen.append("submitted")
        if isinstance(ev, RunStop):
            assert ev.job_id is not None
            assert runtime.manager.spool.exists(ev.job_id) or runtime.manager.spool.successors().get(ev.job_id) \
                or (not runtime.manager.spool.ids() and seen), "job not on disk at stop"
            seen.append("stop")

    stop = await runtime.runner.run("hi", on_event)
    assert seen == ["submitted", "stop"] and stop.status == "completed"


async def test_second_run_gets_memory_update_for_note_that_landed(server: FakeAnthropic, runtime: Runtime) -> None:
    server.script(MODEL, text("first answer"), text("second answer"))
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Lint rule", "Use ruff.", summary="ruff, not flake8"))))
    first = await runtime.runner.run("we lint with ruff")
    assert await runtime.manager.wait_for(first.job_id, 10)
    await runtime.runner.run("next question")
    req1, req2 = server.requests_for(MODEL)
    assert req1.body["system"] == req2.body["system"], "the cached prefix must not change within a session"
    last_user = req2.body["messages"][-1]["content"]
    assert last_user[0]["text"].startswith("<memory-update>")
    assert "(project_knowledge_lint-rule.md)" in last_user[0]["text"]
    assert last_user[1] == {"type": "text", "text": "next question"}
    # The extraction of run 2 does not see the update block (it restates the index).
    second_job = runtime.manager.spool.ids()
    assert second_job, "the second turn was spooled"
    turn_text = json.dumps(json.loads(runtime.manager.spool.path(second_job[-1]).read_text())["turns"])
    assert "memory-update" not in turn_text and "next question" in turn_text


async def test_usage_with_cache_is_reported_per_turn(server: FakeAnthropic, runtime: Runtime) -> None:
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 700,
             "cache_creation_input_tokens": 30}
    server.script(MODEL, text("a", usage=usage))
    server.script(MEMORY_MODEL, text("[]"))
    stop = await runtime.runner.run("hi")
    assert (stop.usage.cache_read_input_tokens, stop.usage.cache_creation_input_tokens) == (700, 30)


async def test_cancelled_turn_leaves_no_dangling_tool_call(server: FakeAnthropic, runtime: Runtime, ws: Path) -> None:
    server.script(MODEL, tool_use("bash", {"command": "sleep 30"}), text("after cancel"))
    server.script(MEMORY_MODEL, text("[]"))
    started = asyncio.Event()

    def on_event(ev: object) -> None:
        if isinstance(ev, ToolCallStarted):
            started.set()

    task = asyncio.create_task(runtime.runner.run("run something slow", on_event))
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    conv = runtime.runner.conversation
    assert [m["role"] for m in conv] == ["user", "assistant", "user", "assistant"]
    [result] = conv[2]["content"]
    assert result["type"] == "tool_result" and result["is_error"] and result["content"] == "[interrupted]"
    # Nothing from a cancelled turn is extracted.
    assert server.requests_for(MEMORY_MODEL) == [] and runtime.manager.spool.ids() == []
    # The next request is valid (the fake validates tool_use/tool_result pairing) ...
    stop = await runtime.runner.run("continue")
    assert stop.status == "completed", stop.message
    # ... and a resumed session restores the same valid conversation.
    runtime.session.close()
    restored = SessionStore().open(runtime.session.id)
    assert restored.messages == runtime.runner.conversation


async def test_cancel_mid_stream_discards_partial_answer(server: FakeAnthropic, runtime: Runtime) -> None:
    gate = server.gate()
    server.script(MODEL, text("partial answer", chunks=["partial", " answer"], hold_after=gate))
    task = asyncio.create_task(runtime.runner.run("hi"))
    assert await gate.wait_reached_async(10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    gate.release()
    assert "partial" not in json.dumps(runtime.runner.conversation)
    assert runtime.runner.conversation[-1] == {"role": "assistant", "content": [{"type": "text",
                                                                                 "text": "[interrupted]"}]}


async def test_tool_results_never_reach_extraction(server: FakeAnthropic, runtime: Runtime, ws: Path) -> None:
    (ws / "data.txt").write_text("TOOL-OUTPUT-MARKER")
    server.script(MODEL, tool_use("read_file", {"path": "data.txt"}), text("It says hello."))
    server.script(MEMORY_MODEL, text("[]"))
    stop = await runtime.runner.run("what is in data.txt?")
    assert await runtime.manager.wait_for(stop.job_id, 10)
    assert "TOOL-OUTPUT-MARKER" in json.dumps(tool_results(server.requests_for(MODEL)[-1]))
    assert "TOOL-OUTPUT-MARKER" not in json.dumps(server.requests_for(MEMORY_MODEL)[0].body)


async def test_structured_output_fallback_is_remembered(server: FakeAnthropic) -> None:
    _NO_STRUCTURED.clear()
    server.script(MEMORY_MODEL, reject_param("output_config", sticky=True), text("[]"), text("[]"))
    completion = AnthropicCompletion(MEMORY_MODEL)
    request = CompletionRequest(purpose="extract", system="s", prompt="p", json_schema=OPERATIONS_SCHEMA)
    assert await completion(request) == "[]"
    assert await completion(request) == "[]"
    reqs = server.requests_for(MEMORY_MODEL)
    assert ["output_config" in r.body for r in reqs] == [True, False, False]


async def test_structured_output_used_where_supported(server: FakeAnthropic) -> None:
    _NO_STRUCTURED.clear()
    server.script(MEMORY_MODEL, text("[]"))
    completion = AnthropicCompletion(MEMORY_MODEL)
    await completion(CompletionRequest(purpose="extract", system="s", prompt="p", json_schema=OPERATIONS_SCHEMA))
    [req] = server.requests_for(MEMORY_MODEL)
    assert req.body["output_config"]["format"]["type"] == "json_schema"
    assert req.header("x-stainless-retry-count") in (None, "0")


async def test_resumed_crashed_session_stays_valid_and_old_turns_are_not_extracted(
    server: FakeAnthropic, ws: Path
) -> None:
    store = SessionStore()
    crashed = store.create(ws, model=MODEL)
    crashed.begin_turn("old question")
    crashed.append({"role": "user", "content": [{"type": "text", "text": "old question"}]})
    crashed.append({"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "list_files", "input": {}}]})
    crashed.append({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "README.md"}]})
    crashed.close()  # the process died here: no answer, no end of turn
    server.script(MODEL, text("new answer"))
    server.script(MEMORY_MODEL, text("[]"))
    rt = Runtime(load_settings({}), ws, gate=AllowListGate(()))
    rt.open_session(resume=crashed.id)
    await rt.start()
    try:
        stop = await rt.runner.run("new question")
        assert stop.status == "completed", stop.message
        assert await rt.manager.wait_for(stop.job_id, 10)
    finally:
        await rt.close()
    roles = [m["role"] for m in server.requests_for(MODEL)[0].body["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    prompt = json.dumps(server.requests_for(MEMORY_MODEL)[0].body["messages"])
    assert "new question" in prompt and "new answer" in prompt and "old question" not in prompt
