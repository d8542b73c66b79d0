"""Extended thinking in the Runner, through the real SDK and the fake Messages API: the thinking
streams as ThinkingDelta events before the answer; a Run keeps the configuration it started with
(turning thinking off mid-Run counts from the next Run, as the API wants through a tool-use loop);
a sub-agent's and a compaction summary's requests never think; a response of thinking alone keeps
words beside it; a Stop hook that sends the model on sends its answer (and thinking) once."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from app.agent.config.settings import load_settings
from app.agent.conversation.blocks import TextBlock, ThinkingBlock
from app.agent.conversation.compaction import SUMMARY_SYSTEM
from app.agent.model.provider import TextDelta, ThinkingDelta
from app.agent.runtime import Runtime
from app.agent.turn.events import RunEvent, ToolCallStarted
from app.services.bundle import Services
from tests.support.clitools import MEMORY_MODEL, MODEL, system_text
from tests.support.fakeapi import (
    FakeAnthropic,
    message,
    text,
    text_block,
    thinking_block,
    tool_block,
    tool_use,
)

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("sdk_env")]

SIGNATURE = "EqQBCkYIBhgCIkB+/=" + "dGhvdWdodA" * 10 + "=="
BUDGET = {"type": "enabled", "budget_tokens": 8000}


@pytest.fixture
async def runtime(server: FakeAnthropic, ws: Path) -> AsyncIterator[Runtime]:
    rt = Runtime(load_settings({"memory_wait": 10, "memory_mode": "off", "thinking": True}), ws)
    await rt.open_session()
    yield rt
    await rt.close()


async def test_thinking_streams_first_and_turning_it_off_mid_run_counts_from_the_next_run(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    server.script(
        MODEL,
        message(
            thinking_block("Two steps: list, then answer.", SIGNATURE),
            tool_block("list_files", {}, id="toolu_ls"),
            stop_reason="tool_use",
        ),
        text("Only the README."),
        text("Hello again."),
    )
    services = Services.for_runtime(runtime)
    events: list[RunEvent] = []

    def seen(ev: RunEvent) -> None:
        events.append(ev)
        if isinstance(ev, ToolCallStarted):
            services.session.set_thinking(False)  # Tab on an empty prompt while the turn runs

    assert (await runtime.runner.run("what files?", seen)).status == "completed"
    thought = [e for e in events if isinstance(e, ThinkingDelta)]
    assert "".join(e.text for e in thought) == "Two steps: list, then answer."
    assert events.index(thought[0]) < next(i for i, e in enumerate(events) if isinstance(e, TextDelta))
    first, second = server.requests_for(MODEL)
    assert first.body["thinking"] == BUDGET and second.body["thinking"] == BUDGET  # one Run, one config
    assert (await runtime.runner.run("hi")).status == "completed"
    assert "thinking" not in server.requests_for(MODEL)[-1].body
    assert runtime.settings.thinking is False


async def test_a_subagents_and_a_summarys_requests_never_think(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    server.script(
        MODEL,
        tool_use("task", {"description": "find the build", "prompt": "Find the build command."}),
        text("It is make build."),  # the sub-agent's answer
        text("The build is `make build`."),
        text("Fine."),
    )
    assert (await runtime.runner.run("how do I build?")).status == "completed"
    assert (await runtime.runner.run("thanks")).status == "completed"
    main, sub, after, _ = server.requests_for(MODEL)
    assert main.body["thinking"] == BUDGET and after.body["thinking"] == BUDGET
    assert "thinking" not in sub.body and "Find the build command." in json.dumps(sub.body["messages"])

    server.script(MODEL, text("## Summary\nThe user asked how to build: `make build`."))
    await runtime.runner.compact()
    summary = server.requests_for(MODEL)[-1]
    assert system_text(summary) == SUMMARY_SYSTEM and "thinking" not in summary.body


async def test_a_response_of_thinking_alone_keeps_words_beside_it(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    server.script(MODEL, message(thinking_block("Nothing to add.", SIGNATURE)))
    assert (await runtime.runner.run("anything?")).status == "completed"
    content = runtime.runner.conversation[-1].content
    assert isinstance(content[0], ThinkingBlock) and content[0].signature == SIGNATURE
    assert content[1:] == [TextBlock(text="[no text]")]


async def test_a_stop_hook_that_sends_the_model_on_sends_its_answer_once(
    server: FakeAnthropic, ws: Path, isolated_home: Path
) -> None:
    isolated_home.mkdir(parents=True, exist_ok=True)
    stop = "test -e s1 && exit 0; touch s1; echo run the tests >&2; exit 2"
    (isolated_home / "config.toml").write_text(f"[[hooks.Stop]]\ncommand = {json.dumps(stop)}\n")
    rt = Runtime(load_settings({"memory_mode": "off", "thinking": True}), ws)
    await rt.open_session()
    try:
        server.script(
            MODEL,
            message(thinking_block("Done, I think.", SIGNATURE), text_block("All done.")),
            text("Tests run: all pass."),
        )
        assert (await rt.runner.run("finish up")).status == "completed"
    finally:
        await rt.close()
    sent = json.dumps(server.requests_for(MODEL)[1].body["messages"])
    assert sent.count(SIGNATURE) == 1 and sent.count("All done.") == 1, sent
    assert "[Stop hook] run the tests" in sent and os.path.exists(ws / "s1")
    assert server.requests_for(MEMORY_MODEL) == []
