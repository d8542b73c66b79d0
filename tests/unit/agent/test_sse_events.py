"""The provider's own server-sent-event reader and event accumulator (app/agent/model/provider.py):
any line ending, events cut anywhere between chunks, hostile shapes treated as absent."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.agent.conversation.blocks import TextBlock, ToolUseBlock
from app.agent.model.provider import TextDelta, ToolUseArgs, ToolUseStart, _Accumulated, _sse_events

STREAM = (
    b": a comment\n"
    b'event: message_start\ndata: {"type": "message_start"}\n\n'
    b"event: ping\ndata: {}\n\n"
    b'event: content_block_delta\ndata: {"a":\ndata: 1}\n\n'
    b"event: no_data\n\n"
    b'data: {"plain": true}\n\n'
    b'event: message_stop\ndata: {"type": "message_stop"}'  # no blank line at the end
)
EXPECTED = [
    ("message_start", '{"type": "message_start"}'),
    ("ping", "{}"),
    ("content_block_delta", '{"a":\n1}'),
    ("message", '{"plain": true}'),
    ("message_stop", '{"type": "message_stop"}'),
]


async def _collect(chunks: list[bytes]) -> list[tuple[str, str]]:
    async def source() -> AsyncIterator[bytes]:
        for chunk in chunks:
            yield chunk

    return [event async for event in _sse_events(source())]


@pytest.mark.parametrize("ending", [b"\n", b"\r\n", b"\r"])
async def test_events_are_read_whatever_the_line_ending(ending: bytes) -> None:
    assert await _collect([STREAM.replace(b"\n", ending)]) == EXPECTED


@settings(deadline=None, max_examples=60)
@given(
    cuts=st.lists(st.integers(min_value=0, max_value=len(STREAM.replace(b"\n", b"\r\n"))), max_size=8),
    crlf=st.booleans(),
)
async def test_an_event_cut_anywhere_between_chunks_is_read_whole(cuts: list[int], crlf: bool) -> None:
    data = STREAM.replace(b"\n", b"\r\n") if crlf else STREAM
    points = sorted({c for c in cuts if c <= len(data)})
    chunks = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    assert await _collect(chunks) == EXPECTED


def test_fields_of_the_wrong_type_are_treated_as_absent() -> None:
    acc = _Accumulated()
    assert (
        acc.take(
            {"type": "message_start", "message": {"usage": {"input_tokens": "many", "output_tokens": -3}}}
        )
        == []
    )
    assert acc.started and acc.usage.input_tokens == 0 and acc.usage.output_tokens == 0
    assert acc.take({"type": "content_block_start", "index": "zero", "content_block": "text"}) == []
    assert (
        acc.take({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 42}})
        == []
    )
    assert acc.take({"type": "content_block_delta", "index": 0, "delta": [1, 2]}) == []
    assert (
        acc.take({"type": "message_delta", "delta": {"stop_reason": 7}, "usage": {"output_tokens": 5}}) == []
    )
    assert acc.stop_reason is None and acc.usage.output_tokens == 5


def test_a_text_and_a_tool_call_are_accumulated_into_blocks() -> None:
    acc = _Accumulated()
    acc.take({"type": "message_start", "message": {"usage": {"input_tokens": 3}}})
    acc.take({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
    assert acc.take(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}
    ) == [TextDelta("Hi")]
    assert acc.take(
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "t1", "name": "bash"},
        }
    ) == [ToolUseStart("t1", "bash")]
    assert acc.take(
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"cmd": "ls"}'},
        }
    ) == [ToolUseArgs("t1", '{"cmd": "ls"}')]
    [done] = acc.take({"type": "content_block_stop", "index": 1})
    assert done.input == {"cmd": "ls"}  # type: ignore[attr-defined]
    acc.take({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}})
    assert acc.stop_reason == "tool_use" and acc.usage.input_tokens == 3 and acc.usage.output_tokens == 9
    assert acc.blocks() == [TextBlock(text="Hi"), ToolUseBlock(id="t1", name="bash", input={"cmd": "ls"})]
