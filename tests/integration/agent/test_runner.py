"""The Runner in-process, through the real SDK against the fake Messages API."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from pydantic import BaseModel

from app.agent.config.settings import load_settings
from app.agent.conversation.blocks import Message, TextBlock, ToolResultBlock, ToolUseBlock
from app.agent.conversation.session_store import SessionStore
from app.agent.memory_bridge.completion import AnthropicCompletion
from app.agent.model.provider import TextDelta, ToolUseArgs, ToolUseStart, UsageEvent
from app.agent.permissions.gate import RunAllowances
from app.agent.permissions.question import Answer, Question
from app.agent.runtime import Runtime
from app.agent.tools import ToolResult
from app.agent.turn import tool_calls as tool_calls_module
from app.agent.turn.events import MemorySubmitted, RequestStarted, RunStop, ToolCallStarted
from memory.events import JobHeld
from memory.extract.completion import CompletionRequest
from memory.extract.prompt import OPERATIONS_SCHEMA
from memory.store.fs import FS
from memory.store.stores import MemoryStores
from tests.support.clitools import MEMORY_MODEL, MODEL, create_op, ops_answer, tool_results
from tests.support.fakeapi import FakeAnthropic, http_error, reject_param, text, tool_use
from tests.support.memtools import create


def wire(values: Sequence[BaseModel]) -> str:
    """Messages or system blocks as the JSON the API gets."""
    return json.dumps([v.model_dump(mode="json") for v in values])


pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("sdk_env")]


@pytest.fixture
async def runtime(server: FakeAnthropic, ws: Path) -> AsyncIterator[Runtime]:
    rt = Runtime(load_settings({"memory_wait": 10}), ws, allowances=RunAllowances(allowed={"bash"}))
    await rt.open_session()
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
            assert (
                runtime.manager.spool.exists(ev.job_id)
                or runtime.manager.spool.successors().get(ev.job_id)
                or (not runtime.manager.spool.ids() and seen)
            ), "job not on disk at stop"
            seen.append("stop")

    stop = await runtime.runner.run("hi", on_event)
    assert seen == ["submitted", "stop"] and stop.status == "completed"


async def test_second_run_gets_memory_update_for_note_that_landed(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    server.script(MODEL, text("first answer"), text("second answer"))
    server.script(
        MEMORY_MODEL, text(ops_answer(create_op("Lint rule", "Use ruff.", summary="ruff, not flake8")))
    )
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
    usage = {
        "input_tokens": 10,
        "output_tokens": 5,
        "cache_read_input_tokens": 700,
        "cache_creation_input_tokens": 30,
    }
    server.script(MODEL, text("a", usage=usage))
    server.script(MEMORY_MODEL, text("[]"))
    stop = await runtime.runner.run("hi")
    assert (stop.usage.cache_read_input_tokens, stop.usage.cache_creation_input_tokens) == (700, 30)


async def test_cancelled_turn_leaves_no_dangling_tool_call(
    server: FakeAnthropic, runtime: Runtime, ws: Path
) -> None:
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
    assert [m.role for m in conv] == ["user", "assistant", "user"]
    result, note = conv[2].content
    assert isinstance(result, ToolResultBlock) and result.is_error and result.content == "[interrupted]"
    # The app says it interrupted the turn, in a user-role note: never as the model's words.
    assert isinstance(note, TextBlock) and note.text.startswith("[PseudoClaude: this turn was interrupted")
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
    assert "partial" not in wire(runtime.runner.conversation)
    [msg] = runtime.runner.conversation
    assert msg.role == "user" and msg.content[0] == TextBlock(text="hi")
    note = msg.content[1]
    assert isinstance(note, TextBlock) and note.text.startswith("[PseudoClaude: this turn was interrupted")


async def test_tool_results_never_reach_extraction(server: FakeAnthropic, runtime: Runtime, ws: Path) -> None:
    (ws / "data.txt").write_text("TOOL-OUTPUT-MARKER")
    server.script(MODEL, tool_use("read_file", {"path": "data.txt"}), text("It says hello."))
    server.script(MEMORY_MODEL, text("[]"))
    stop = await runtime.runner.run("what is in data.txt?")
    assert await runtime.manager.wait_for(stop.job_id, 10)
    assert "TOOL-OUTPUT-MARKER" in json.dumps(tool_results(server.requests_for(MODEL)[-1]))
    assert "TOOL-OUTPUT-MARKER" not in json.dumps(server.requests_for(MEMORY_MODEL)[0].body)


async def test_structured_output_fallback_is_remembered(server: FakeAnthropic) -> None:
    server.script(MEMORY_MODEL, reject_param("output_config", sticky=True), text("[]"), text("[]"))
    completion = AnthropicCompletion(MEMORY_MODEL)
    request = CompletionRequest(purpose="extract", system="s", prompt="p", json_schema=OPERATIONS_SCHEMA)
    assert await completion(request) == "[]"
    assert await completion(request) == "[]"
    reqs = server.requests_for(MEMORY_MODEL)
    assert ["output_config" in r.body for r in reqs] == [True, False, False]


async def test_structured_output_used_where_supported(server: FakeAnthropic) -> None:
    server.script(MEMORY_MODEL, text("[]"))
    completion = AnthropicCompletion(MEMORY_MODEL)
    await completion(
        CompletionRequest(purpose="extract", system="s", prompt="p", json_schema=OPERATIONS_SCHEMA)
    )
    [req] = server.requests_for(MEMORY_MODEL)
    assert req.body["output_config"]["format"]["type"] == "json_schema"
    assert req.header("x-stainless-retry-count") in (None, "0")


async def test_resumed_crashed_session_stays_valid_and_old_turns_are_not_extracted(
    server: FakeAnthropic, ws: Path
) -> None:
    store = SessionStore()
    crashed = store.create(ws, model=MODEL)
    crashed.begin_turn("old question")
    crashed.append(Message(role="user", content=[TextBlock(text="old question")]))
    crashed.append(
        Message(role="assistant", content=[ToolUseBlock(id="toolu_1", name="list_files", input={})])
    )
    crashed.append(
        Message(role="user", content=[ToolResultBlock(tool_use_id="toolu_1", content="README.md")])
    )
    crashed.close()  # the process died here: no answer, no end of turn
    server.script(MODEL, text("new answer"))
    server.script(MEMORY_MODEL, text("[]"))
    rt = Runtime(load_settings({}), ws)
    await rt.open_session(resume=crashed.id)
    try:
        stop = await rt.runner.run("new question")
        assert stop.status == "completed", stop.message
        assert await rt.manager.wait_for(stop.job_id, 10)
    finally:
        await rt.close()
    messages = server.requests_for(MODEL)[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    # The crashed turn is closed by the app's note and the new question joins it; no error is
    # ever presented as the model's answer.
    texts = [b["text"] for b in messages[-1]["content"] if b["type"] == "text"]
    assert texts[0].startswith("[PseudoClaude: this turn was interrupted") and texts[-1] == "new question"
    prompt = json.dumps(server.requests_for(MEMORY_MODEL)[0].body["messages"])
    assert "new question" in prompt and "new answer" in prompt and "old question" not in prompt


# -- defects --------------------------------------------------------------------------------


async def test_tool_calls_with_end_turn_stop_reason_run_and_the_turn_goes_on(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    # Some compatible servers say end_turn on a response that calls tools.
    server.script(
        MODEL,
        tool_use("read_file", {"path": "README.md"}, stop_reason="end_turn"),
        text("It is built with make build."),
    )
    server.script(MEMORY_MODEL, text("[]"))
    stop = await runtime.runner.run("how is it built?")
    assert stop.status == "completed" and stop.text == "It is built with make build."
    _first, second = server.requests_for(MODEL)
    assert "make build" in json.dumps(tool_results(second))
    # Only the response without tool calls completed the turn: one job, for the whole turn.
    assert await runtime.manager.wait_for(stop.job_id, 10)
    [extraction] = server.requests_for(MEMORY_MODEL)
    assert "It is built with make build." in json.dumps(extraction.body)


async def test_tool_calls_cut_by_max_tokens_are_still_dropped(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    server.script(
        MODEL, tool_use("read_file", {"path": "README.md"}, text_before="Let me", stop_reason="max_tokens")
    )
    stop = await runtime.runner.run("read it")
    assert stop.status == "stopped" and stop.stop_reason == "max_tokens"
    assert len(server.requests_for(MODEL)) == 1
    assert "tool_use" not in wire(runtime.runner.conversation)
    assert stop.job_id is None and server.requests_for(MEMORY_MODEL) == []


async def test_failed_turn_is_never_sent_back_as_the_models_words(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    server.script(MODEL, http_error(400, message="prompt is too long"))
    stop = await runtime.runner.run("a request the API refuses")
    assert stop.status == "error"
    server.script(MODEL, tool_use("list_files", {}), http_error(400, message="bad tool result"))
    stop = await runtime.runner.run("list the files")
    assert stop.status == "error"
    server.script(MODEL, text("fine now"))
    server.script(MEMORY_MODEL, text("[]"))
    stop = await runtime.runner.run("try again")
    assert stop.status == "completed", stop.message
    sent = server.requests_for(MODEL)[-1].body["messages"]
    dumped = json.dumps(sent)
    assert "[error" not in dumped and "prompt is too long" not in dumped
    # The turn that failed before any response is left out; the one with a completed tool call
    # keeps it, closed by the app's (user-role) note, and the new question joins that message.
    assert "a request the API refuses" not in dumped
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert all(b["type"] != "text" for m in sent if m["role"] == "assistant" for b in m["content"])
    texts = [b["text"] for b in sent[-1]["content"] if b["type"] == "text"]
    assert texts[0].startswith("[PseudoClaude: this turn was interrupted") and texts[-1] == "try again"
    # The session log keeps the failed turn.
    assert "a request the API refuses" in runtime.session.path.read_text()


async def test_undecodable_text_from_any_tool_or_the_user_cannot_break_the_session(
    server: FakeAnthropic, runtime: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_call_tool = tool_calls_module.call_tool

    async def surrogate_tool(tool: object, args: object, ctx: object) -> ToolResult:
        result = await real_call_tool(tool, args, ctx)  # type: ignore[arg-type]
        return ToolResult(content=result.content + "\nbad\udcffname.txt")

    monkeypatch.setattr(tool_calls_module, "call_tool", surrogate_tool)
    # The SDK refuses lone surrogates in tool input JSON, but not in text (stdlib json).
    server.script(
        MODEL,
        tool_use("list_files", {}, text_before="Listing \udcff."),
        text("One odd \udcff name."),
        text("ok"),
    )
    server.script(MEMORY_MODEL, text("[]"), text("[]"))
    stop = await runtime.runner.run("list files \udcff please")
    assert stop.status == "completed", stop.message
    second = server.requests_for(MODEL)[1].body["messages"]
    assert "bad\ufffdname.txt" in json.dumps(tool_results(server.requests_for(MODEL)[1]), ensure_ascii=False)
    assert "Listing \ufffd." in json.dumps(second, ensure_ascii=False)
    assert "list files \ufffd please" in json.dumps(second, ensure_ascii=False)
    sid = runtime.session.id
    await runtime.close()
    rt = Runtime(load_settings({}), runtime.workspace)
    await rt.open_session(resume=sid)
    try:
        stop = await rt.runner.run("and now?")
        assert stop.status == "completed", stop.message
    finally:
        await rt.close()


async def test_recovery_runs_before_the_system_prompt_reads_the_index(
    server: FakeAnthropic, ws: Path
) -> None:
    jdir = str(MemoryStores(ws).paths.journal_dir)

    def crash_after_commit(op: str, path: str) -> None:
        if op == "fsync_dir" and path == jdir:
            raise OSError(5, "simulated crash right after the commit point")

    with pytest.raises(OSError, match="simulated crash"):
        MemoryStores(ws, fs=FS(crash_after_commit)).apply(
            [(0, create("project", "Crash survivor", "b"))], source="manual"
        )
    rt = Runtime(load_settings({}), ws)
    await rt.open_session()
    try:
        assert "Crash survivor" in wire(rt.runner.system)
    finally:
        await rt.close()


async def test_resume_of_another_workspaces_session_is_refused_naming_it(
    server: FakeAnthropic, ws: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    with SessionStore().create(other) as theirs:
        pass
    rt = Runtime(load_settings({}), ws)
    try:
        with pytest.raises(ValueError, match=f"belongs to workspace {other}"):
            await rt.open_session(resume=theirs.id)
        with pytest.raises(ValueError, match="needs a session id"):
            await rt.open_session(resume="")
        assert rt.session is None
    finally:
        await rt.close()


# -- the API the app needs -----------------------------------------------------------------------


class RecordingAsk:
    """The person: allows every call it is asked about, and records which."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, int]] = []

    async def __call__(self, question: Question) -> Answer:
        self.calls.append((question.tool, question.call_id, question.depth))
        return Answer(choice="once")


async def test_events_tool_use_start_and_argument_deltas_request_started_and_usage_per_request(
    server: FakeAnthropic, ws: Path
) -> None:
    gate = RecordingAsk()
    rt = Runtime(load_settings({"memory_mode": "off"}), ws, ask=gate)
    await rt.open_session()
    command = "echo " + "x" * 120
    server.script(
        MODEL,
        tool_use(
            "bash", {"command": command}, id="toolu_long", json_chunk_size=16, usage={"input_tokens": 7}
        ),
        text("done", usage={"input_tokens": 9, "output_tokens": 2}),
    )
    events: list[object] = []
    try:
        stop = await rt.runner.run("run it", events.append)
    finally:
        await rt.close()
    assert stop.status == "completed"
    starts = [e for e in events if isinstance(e, ToolUseStart)]
    assert starts == [ToolUseStart("toolu_long", "bash", 0)]
    args = [e for e in events if isinstance(e, ToolUseArgs)]
    assert len(args) > 3 and {e.id for e in args} == {"toolu_long"}
    assert json.loads("".join(e.partial_json for e in args)) == {"command": command}
    # The deltas arrive before the call runs, so a long write does not look frozen.
    assert events.index(args[-1]) < next(i for i, e in enumerate(events) if isinstance(e, ToolCallStarted))
    assert [e.iteration for e in events if isinstance(e, RequestStarted)] == [1, 2]
    assert [e.usage.input_tokens for e in events if isinstance(e, UsageEvent)] == [7, 9]
    assert stop.usage.input_tokens == 16
    assert gate.calls == [("bash", "toolu_long", 0)]


async def test_sub_agent_text_and_tool_events_carry_their_depth(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    server.script(
        MODEL,
        tool_use("task", {"description": "look", "prompt": "find the build command"}),
        tool_use("grep", {"pattern": "build"}),
        text("The sub-agent's report: make build."),
        text("Use make build."),
    )
    server.script(MEMORY_MODEL, text("[]"))
    events: list[object] = []
    stop = await runtime.runner.run("how to build?", events.append)
    assert stop.status == "completed" and stop.text == "Use make build."
    sub_text = "".join(e.text for e in events if isinstance(e, TextDelta) and e.depth == 1)
    assert sub_text == "The sub-agent's report: make build."
    assert "".join(e.text for e in events if isinstance(e, TextDelta) and e.depth == 0) == "Use make build."
    assert [(e.name, e.depth) for e in events if isinstance(e, ToolCallStarted)] == [("task", 0), ("grep", 1)]
    assert {e.depth for e in events if isinstance(e, RequestStarted)} == {0, 1}
    assert sum(isinstance(e, RunStop) for e in events) == 1, (
        "the sub-agent's stop is its result, not an event"
    )


async def test_run_refuses_to_start_while_a_run_is_in_progress(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    gate = server.gate()
    server.script(MODEL, text("slow answer", hold_before=gate))
    server.script(MEMORY_MODEL, text("[]"))
    first = asyncio.create_task(runtime.runner.run("first"))
    assert await gate.wait_reached_async(10)
    with pytest.raises(RuntimeError, match="already running"):
        await runtime.runner.run("second")
    gate.release()
    assert (await first).status == "completed"
    assert [m.role for m in runtime.runner.conversation] == ["user", "assistant"]


async def test_open_session_closes_the_previous_one_and_new_session_has_the_full_index(
    server: FakeAnthropic, runtime: Runtime, ws: Path
) -> None:
    first = runtime.session
    manager = runtime.manager
    MemoryStores(ws).apply([(0, create("project", "Landed later", "b"))], source="manual")
    await runtime.new_session()
    assert first is not None and first.closed and runtime.session is not first
    assert runtime.manager is manager
    assert "Landed later" in wire(runtime.runner.system)
    server.script(MODEL, text("hi"))
    server.script(MEMORY_MODEL, text("[]"))
    await runtime.runner.run("hello")
    [req] = server.requests_for(MODEL)
    assert "<memory-update>" not in json.dumps(req.body["messages"]), "the new prompt has it all already"
    assert [m["role"] for m in req.body["messages"]] == ["user"]


async def test_memory_mode_switches_at_run_time_without_a_restart(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    await runtime.set_memory_mode("off")
    server.script(MODEL, text("one"), text("two"))
    stop = await runtime.runner.run("not remembered")
    assert stop.status == "completed" and stop.job_id is None
    await runtime.set_memory_mode("review")
    server.script(MEMORY_MODEL, text(ops_answer(create_op("Held note", "Body."))))
    held: list[object] = []
    runtime.manager.subscribe(lambda ev: held.append(ev) if isinstance(ev, JobHeld) else None)
    stop = await runtime.runner.run("remember this, pending review")
    assert stop.job_id is not None and await runtime.manager.wait_for(stop.job_id, 10)
    assert held and len(server.requests_for(MEMORY_MODEL)) == 1
    with pytest.raises(ValueError, match="memory mode"):
        await runtime.set_memory_mode("sometimes")


async def test_a_dropped_failed_turn_does_not_lose_its_memory_update(
    server: FakeAnthropic, runtime: Runtime, ws: Path
) -> None:
    MemoryStores(ws).apply([(0, create("project", "Landed meanwhile", "b"))], source="manual")
    server.script(MODEL, http_error(400, message="refused"), text("ok"))
    server.script(MEMORY_MODEL, text("[]"))
    assert (await runtime.runner.run("first try")).status == "error"
    assert (await runtime.runner.run("second try")).status == "completed"
    [sent] = server.requests_for(MODEL)[-1].body["messages"]
    assert sent["content"][0]["text"].startswith("<memory-update>")
    assert "Landed meanwhile" in sent["content"][0]["text"] and sent["content"][-1]["text"] == "second try"


async def test_switching_to_the_current_session_works_and_a_failed_switch_keeps_it(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    server.script(MODEL, text("one"), text("two"))
    server.script(MEMORY_MODEL, text("[]"), text("[]"))
    await runtime.runner.run("first")
    sid = runtime.session.id
    note = await runtime.open_session(continue_latest=True)  # the latest is the open one
    assert runtime.session.id == sid and note and "continuing" in note
    with pytest.raises(ValueError, match="no session matches"):
        await runtime.open_session(resume="nosuchsession")
    assert runtime.session is not None and runtime.session.id == sid and not runtime.session.closed
    stop = await runtime.runner.run("second")
    assert stop.status == "completed"
    assert [m["role"] for m in server.requests_for(MODEL)[-1].body["messages"]] == [
        "user",
        "assistant",
        "user",
    ]


async def test_close_closes_the_memory_models_own_client_but_not_a_shared_one(
    server: FakeAnthropic, ws: Path
) -> None:
    """Left open, the SDK closes a client's connections when it is collected, after the event
    loop has ended, and a traceback ("Event loop is closed") lands on the person's terminal."""
    from app.agent.memory_bridge.completion import AnthropicCompletion
    from app.agent.model.provider import AnthropicProvider

    server.script(MODEL, text("hello"))
    server.script(MEMORY_MODEL, text("[]"))
    rt = Runtime(load_settings({}), ws)
    await rt.open_session()
    stop = await rt.runner.run("hi")
    assert await rt.manager.wait_for(stop.job_id, 10)
    completion = rt.manager.completion
    assert isinstance(completion, AnthropicCompletion) and completion._client is not None
    client = completion._client
    await rt.close()
    assert completion._client is None and client.is_closed()

    provider = AnthropicProvider()
    shared = AnthropicCompletion(MEMORY_MODEL, share=lambda: provider.client)
    main_client = provider.client
    _ = shared.client
    await shared.aclose()
    assert not main_client.is_closed()  # the main model's to close
    await provider.aclose()
    assert main_client.is_closed()
