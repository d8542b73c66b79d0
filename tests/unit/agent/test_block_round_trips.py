"""Typed content blocks round trip: any block the API sends (of a known type or not) reads as a
typed block and writes back as the same JSON; through the session file; and through the provider's
accumulation of a streamed response."""

from __future__ import annotations

import base64
import hashlib
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from app.agent.conversation.blocks import (
    DocumentBlock,
    ImageBlock,
    Message,
    Prompt,
    RedactedThinkingBlock,
    ServerToolUseBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    UnknownBlock,
    WebSearchToolResultBlock,
    parse_message,
)
from app.agent.conversation.session_store import SessionStore
from app.agent.model.provider import _Accumulated

_words = st.text(min_size=1, max_size=20).filter(str.strip)
_names = st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True)
_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
_objects = st.dictionaries(st.text(max_size=8), _json, max_size=4)
_ids = st.from_regex(r"toolu_[A-Za-z0-9]{4,12}", fullmatch=True)
_b64 = st.binary(min_size=1, max_size=24).map(lambda b: base64.b64encode(b).decode())

TEXT = st.builds(
    lambda t, c: {"type": "text", "text": t, **c}, _words, st.sampled_from([{}, {"citations": None}])
)
IMAGE = st.builds(
    lambda m, d: {"type": "image", "source": {"type": "base64", "media_type": m, "data": d}},
    st.sampled_from(["image/png", "image/jpeg", "image/gif", "image/webp"]),
    _b64,
)
DOCUMENT = st.builds(
    lambda d, t: {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": d}, **t},
    _words,
    st.sampled_from([{}, {"title": "notes.txt"}]),
)
THINKING = st.builds(
    lambda t, s: {"type": "thinking", "thinking": t, "signature": s}, st.text(max_size=30), _b64
)
REDACTED = st.builds(lambda d: {"type": "redacted_thinking", "data": d}, _b64)
SERVER_USE = st.builds(
    lambda i, q: {"type": "server_tool_use", "id": i, "name": "web_search", "input": {"query": q}},
    _ids,
    _words,
)
SEARCH_RESULT = st.builds(
    lambda i, c: {"type": "web_search_tool_result", "tool_use_id": i, "content": c},
    _ids,
    st.lists(_objects, max_size=2),
)
# A block of a type no version knows: any JSON beside its type.
UNKNOWN = st.builds(lambda t, rest: {**rest, "type": f"future_{t}"}, _names, _objects)
TOOL_USE = st.builds(
    lambda i, n, inp: {"type": "tool_use", "id": i, "name": n, "input": inp}, _ids, _names, _objects
)
TOOL_RESULT = st.builds(
    lambda i, c, e: {"type": "tool_result", "tool_use_id": i, "content": c, **e},
    _ids,
    st.one_of(st.text(max_size=30), st.lists(st.one_of(TEXT, IMAGE), min_size=1, max_size=2)),
    st.sampled_from([{}, {"is_error": True}]),
)
ASSISTANT = st.one_of(TEXT, THINKING, REDACTED, SERVER_USE, SEARCH_RESULT, UNKNOWN, TOOL_USE)
USER = st.one_of(TEXT, IMAGE, DOCUMENT, UNKNOWN, TOOL_RESULT)

KINDS: dict[str, type] = {
    "text": TextBlock,
    "image": ImageBlock,
    "document": DocumentBlock,
    "thinking": ThinkingBlock,
    "redacted_thinking": RedactedThinkingBlock,
    "server_tool_use": ServerToolUseBlock,
    "web_search_tool_result": WebSearchToolResultBlock,
    "tool_use": ToolUseBlock,
    "tool_result": ToolResultBlock,
}


@settings(deadline=None, max_examples=150)
@given(st.lists(ASSISTANT, min_size=1, max_size=6), st.lists(USER, min_size=1, max_size=6))
def test_any_block_reads_typed_and_writes_back_as_the_same_json(
    assistant: list[dict[str, Any]], user: list[dict[str, Any]]
) -> None:
    for role, raw in (("assistant", assistant), ("user", user)):
        message, notes = parse_message({"role": role, "content": raw})
        assert message is not None and notes == []
        for block, sent in zip(message.content, raw, strict=True):
            assert type(block) is KINDS.get(sent["type"], UnknownBlock)
        assert message.model_dump(mode="json") == {"role": role, "content": raw}


@settings(deadline=None, max_examples=40)
@given(
    st.lists(st.one_of(TEXT, IMAGE, DOCUMENT, UNKNOWN), min_size=1, max_size=4),
    st.lists(ASSISTANT.filter(lambda b: b["type"] != "tool_use"), min_size=1, max_size=4),
)
def test_any_message_goes_through_the_session_file_unchanged(
    user: list[dict[str, Any]], answer: list[dict[str, Any]]
) -> None:
    messages = [
        parse_message({"role": "user", "content": user})[0],
        parse_message({"role": "assistant", "content": answer})[0],
    ]
    with tempfile.TemporaryDirectory() as tmp:
        store = SessionStore(Path(tmp) / "home")
        with store.create(Path(tmp)) as s:
            s.begin_turn("a turn")
            for m in messages:
                assert m is not None
                s.append(m)
            s.end_turn("completed")
            written = [json.loads(line)["message"] for line in s.path.read_bytes().splitlines()[2:4]]
        with store.open(s.id) as again:
            assert again.messages == messages and again.warnings == []
    # An image is kept beside the file, once, by its hash: the line holds a reference to it.
    assert written == [
        {"role": "user", "content": [_kept(b) for b in user]},
        {"role": "assistant", "content": answer},
    ]


def _kept(block: dict[str, Any]) -> dict[str, Any]:
    """A block as the session file holds it: an image as the reference to its file."""
    if block["type"] != "image":
        return block
    sha = hashlib.sha256(base64.b64decode(block["source"]["data"])).hexdigest()
    source = {"type": "session_image", "sha256": sha, "media_type": block["source"]["media_type"]}
    return {"type": "image", "source": source, "name": "image", "width": 0, "height": 0}


def _stream(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events that stream ``blocks`` as the API sends them: text, thinking and input in deltas
    (the signature in one), any other block whole in its start event."""
    events: list[dict[str, Any]] = [{"type": "message_start", "message": {"usage": {"input_tokens": 1}}}]
    for i, b in enumerate(blocks):
        start, deltas = dict(b), []
        if b["type"] == "text":
            start["text"] = ""
            deltas = [
                {"type": "text_delta", "text": b["text"][:3]},
                {"type": "text_delta", "text": b["text"][3:]},
            ]
        elif b["type"] == "thinking":
            start["thinking"], start["signature"] = "", ""
            deltas = [
                {"type": "thinking_delta", "thinking": b["thinking"]},
                {"type": "signature_delta", "signature": b["signature"]},
            ]
        elif b["type"] in ("tool_use", "server_tool_use"):
            start["input"] = {}
            raw = json.dumps(b["input"])
            deltas = [
                {"type": "input_json_delta", "partial_json": raw[:5]},
                {"type": "input_json_delta", "partial_json": raw[5:]},
            ]
        events.append({"type": "content_block_start", "index": i, "content_block": start})
        events += [{"type": "content_block_delta", "index": i, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": i})
    events.append(
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 2}}
    )
    return events


@settings(deadline=None, max_examples=150)
@given(st.lists(ASSISTANT, min_size=1, max_size=6))
def test_a_streamed_response_keeps_every_block_as_sent(blocks: list[dict[str, Any]]) -> None:
    acc = _Accumulated()
    for ev in _stream(blocks):
        acc.take(ev)
    assert [b.model_dump(mode="json") for b in acc.blocks()] == blocks and acc.notes == []


def test_a_prompt_is_its_blocks_and_a_str_is_its_words() -> None:
    assert Prompt.of("hello") == Prompt(blocks=[TextBlock(text="hello")])
    prompt = Prompt.of("hello")
    assert Prompt.of(prompt) is prompt and prompt.text == "hello" and not prompt.empty
    assert Prompt.of("  ").empty and Prompt().empty
    assert Message(role="user", content="hi") == Message(role="user", content=[TextBlock(text="hi")])
    assert Message(role="user", content="  ").content == []
