"""Content blocks end to end, through the real SDK and the fake Messages API: what the model sends
that the app does not draw (thinking with its signature, redacted thinking, a server tool's
blocks, a block of a type no version knows) is kept in the conversation and in the session file
and goes back to the model exactly as it came; a prompt's image reaches the wire as the API's
image block."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from app.agent.config.settings import load_settings
from app.agent.conversation.blocks import (
    Base64Source,
    DocumentBlock,
    ImageBlock,
    PlainTextSource,
    Prompt,
    RedactedThinkingBlock,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    UnknownBlock,
    WebSearchToolResultBlock,
)
from app.agent.runtime import Runtime
from app.agent.turn.events import RunEvent
from app.services.bundle import Services
from tests.support.clitools import MEMORY_MODEL, MODEL
from tests.support.fakeapi import (
    FakeAnthropic,
    message,
    raw_block,
    text,
    text_block,
    thinking_block,
    tool_block,
)

pytestmark = [pytest.mark.timeout(60), pytest.mark.usefixtures("sdk_env")]

# An opaque signature as the API sends one: base64 with padding and every character that matters.
SIGNATURE = "EqQBCkYIBhgCIkB+/=" + "Zm9vYmFyL2Jhei8rPT0" * 20 + "=="
REDACTED = {
    "type": "redacted_thinking",
    "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
}
SEARCH_USE = {
    "type": "server_tool_use",
    "id": "srvtoolu_01",
    "name": "web_search",
    "input": {"query": "textual screen dismiss"},
}
SEARCH_RESULT = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_01",
    "content": [
        {
            "type": "web_search_result",
            "url": "https://textual.textualize.io/guide/screens/",
            "title": "Screens",
            "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1Mi1mZjM5",
            "page_age": None,
        }
    ],
}
# A block of a type no version of the app knows, with a null and a nested object in it.
FUTURE = {"type": "future_block", "payload": {"kept": [1, None, {"deep": "é\u2028"}]}, "flag": False}


@pytest.fixture
async def runtime(server: FakeAnthropic, ws: Path) -> AsyncIterator[Runtime]:
    rt = Runtime(load_settings({"memory_wait": 10}), ws)
    await rt.open_session()
    yield rt
    await rt.close()


def _assistant_blocks(server: FakeAnthropic, request: int) -> list[Any]:
    """The content of the first assistant message of the ``request``-th request, as sent."""
    body = server.requests_for(MODEL)[request].body
    [assistant] = [m for m in body["messages"] if m["role"] == "assistant"][:1]
    return list(assistant["content"])


def _exact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


async def test_thinking_its_signature_and_unknown_blocks_go_back_unchanged(
    server: FakeAnthropic, runtime: Runtime, ws: Path
) -> None:
    server.script(
        MODEL,
        message(
            thinking_block("The user wants the files listed. I will call list_files.", SIGNATURE),
            raw_block(REDACTED),
            raw_block(FUTURE),
            text_block("Looking."),
            tool_block("list_files", {}, id="toolu_list"),
            stop_reason="tool_use",
        ),
        text("Only the README."),
    )
    server.script(MEMORY_MODEL, text("[]"))
    stop = await runtime.runner.run("what files are there?")
    assert stop.status == "completed", stop.message

    sent = _assistant_blocks(server, 1)
    assert [b["type"] for b in sent] == ["thinking", "redacted_thinking", "future_block", "text", "tool_use"]
    assert sent[0] == {
        "type": "thinking",
        "thinking": "The user wants the files listed. I will call list_files.",
        "signature": SIGNATURE,
    }
    assert _exact(sent[1]) == _exact(REDACTED) and _exact(sent[2]) == _exact(FUTURE)
    # The conversation holds them typed; the session file keeps them for a resumed session.
    kept = runtime.runner.conversation[1].content
    assert isinstance(kept[0], ThinkingBlock) and kept[0].signature == SIGNATURE
    assert isinstance(kept[1], RedactedThinkingBlock) and isinstance(kept[2], UnknownBlock)
    session_id = runtime.session.id if runtime.session is not None else ""

    await runtime.open_session(resume=session_id)
    server.script(MODEL, text("Still only the README."))
    server.script(MEMORY_MODEL, text("[]"))
    stop = await runtime.runner.run("and now?")
    assert stop.status == "completed", stop.message
    assert _exact(_assistant_blocks(server, 2)) == _exact(sent)


async def test_a_server_tools_blocks_are_kept_and_sent_back(server: FakeAnthropic, runtime: Runtime) -> None:
    server.script(
        MODEL,
        message(
            raw_block(SEARCH_USE), raw_block(SEARCH_RESULT), text_block("Screens are pushed and dismissed.")
        ),
        text("You are welcome."),
    )
    server.script(MEMORY_MODEL, text("[]"), text("[]"))
    assert (await runtime.runner.run("how do screens work?")).status == "completed"
    use, result = runtime.runner.conversation[1].content[:2]
    assert isinstance(use, ServerToolUseBlock) and isinstance(result, WebSearchToolResultBlock)
    assert (await runtime.runner.run("thanks")).status == "completed"
    sent = _assistant_blocks(server, 1)
    assert _exact(sent[:2]) == _exact([SEARCH_USE, SEARCH_RESULT])


async def test_an_image_in_a_prompt_reaches_the_wire_as_the_apis_image_block(
    server: FakeAnthropic, runtime: Runtime
) -> None:
    png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
    prompt = Prompt(
        blocks=[
            TextBlock(text="what is in this picture?"),
            ImageBlock(source=Base64Source(media_type="image/png", data=png)),
            DocumentBlock(source=PlainTextSource(data="notes: the dot is red"), title="notes.txt"),
        ]
    )
    server.script(MODEL, text("A single red dot."))
    server.script(MEMORY_MODEL, text("[]"))
    events: list[RunEvent] = []
    stop = await Services.for_runtime(runtime).turn.run(prompt, events.append, answer_done=False)
    assert stop.status == "completed", stop.message
    [request] = server.requests_for(MODEL)
    sent = request.body["messages"][-1]["content"]
    assert sent[-3:] == [
        {"type": "text", "text": "what is in this picture?"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "notes: the dot is red"},
            "title": "notes.txt",
        },
    ]
    # The turn's title and what memory learns from are the words.
    assert runtime.session is not None and runtime.session.title == "what is in this picture?"
