"""A stuck session's way out and a tool input too large to keep: the message that ends a turn the
window cannot hold (app/agent/conversation/compaction.py) and the bound on a tool call's input
(app/agent/turn/tool_calls.py)."""

from __future__ import annotations

import json

from pydantic import JsonValue

from app.agent.config.settings import Settings
from app.agent.conversation import compaction as cmp
from app.agent.conversation.blocks import Block, JsonObject, Message, TextBlock, ToolResultBlock, ToolUseBlock
from app.agent.turn.tool_calls import KEPT_FIELDS, bound_inputs, input_limit
from tests.support.fakeapi import _validate_messages_body

REASON = cmp.does_not_fit(5_242_953, 200_000)


def _user(text: str) -> Message:
    return Message(role="user", content=[TextBlock(text=text)])


def _asst(*blocks: Block) -> Message:
    return Message(role="assistant", content=list(blocks))


def _call(tool_input: JsonObject, id: str = "toolu_1", name: str = "write_file") -> ToolUseBlock:
    return ToolUseBlock(id=id, name=name, input=tool_input)


def _valid(conversation: list[Message]) -> str | None:
    wire: list[JsonValue] = [m.model_dump(mode="json") for m in conversation]
    return _validate_messages_body({"model": "m", "max_tokens": 10, "messages": wire})


def test_a_conversation_that_stays_too_large_names_rewind_and_clear_in_both_faces() -> None:
    big_turn = [
        _user("write it"),
        _asst(_call({"path": "a", "content": "x"})),
        Message(role="user", content=[ToolResultBlock(tool_use_id="toolu_1", content="ok")]),
    ]
    said = cmp.too_large(REASON, big_turn, 0, 200_000)  # the turn has a response: it is kept
    assert said.startswith(
        "the conversation does not fit the model's context window (5,242,953 of 200,000 "
        "tokens) even after compacting; "
    )
    for way_out in ("/rewind", "/clear", "pseudoclaude rewind", "--continue"):
        assert way_out in said, said
    assert "\n" not in said
    # Between turns (/compact, --compact), and after an earlier part larger than the window: the same.
    assert cmp.too_large(REASON, big_turn, None, 200_000) == said
    earlier = [_user("x" * 1_000_000), _asst(TextBlock(text="ok"))]
    assert cmp.too_large(REASON, [*earlier, _user("hi")], 2, 200_000) == said


def test_a_prompt_too_large_on_its_own_is_said_to_be_left_out() -> None:
    conversation = [
        _user("hi"),
        _asst(TextBlock(text="hello")),
        _user("y" * 1_000_000),
    ]
    said = cmp.too_large(REASON, conversation, 2, 200_000)
    assert said.endswith("; the prompt was left out: send a shorter one")
    assert "/rewind" not in said


def test_a_huge_input_is_cut_to_a_valid_small_object_and_refused_with_the_limit_and_size() -> None:
    huge = _call({"path": "big.txt", "content": "x" * 3_000_000})
    small = _call({"path": "ok.txt", "content": "fine"}, id="toolu_2")
    text = TextBlock(text="writing both")
    blocks, refused = bound_inputs([text, huge, small], 256 * 1024)
    assert blocks[0] == text and blocks[2] == small  # what fits is untouched
    assert blocks[1] == _call({"path": "big.txt", "content": "[not kept: 3,000,002 bytes]"})
    assert list(refused) == ["toolu_1"]
    assert "3,000,031 bytes (2.9 MiB)" in refused["toolu_1"] and "256.0 KiB" in refused["toolu_1"]
    assert "tool_input_max_bytes" in refused["toolu_1"] and refused["toolu_1"].startswith(
        "write_file was not run"
    )
    # The API still takes the conversation: a tool_use with an object input, answered by its result.
    results: list[Block] = [ToolResultBlock(tool_use_id=b.id, content="r") for b in (huge, small)]
    conversation = [_user("go"), _asst(*blocks), Message(role="user", content=results)]
    assert _valid(conversation) is None


def test_many_fields_or_a_huge_key_stay_small() -> None:
    # (An input that is not an object never becomes a call: the provider reads it as {}.)
    many = _call({f"k{i}": "v" * 50 for i in range(10_000)})
    long_key = _call({"k" * 500_000: 1}, id="toolu_2")
    blocks, refused = bound_inputs([many, long_key], 4096)
    assert set(refused) == {"toolu_1", "toolu_2"}
    calls = [b for b in blocks if isinstance(b, ToolUseBlock)]
    assert len(calls) == 2
    for block in calls:
        assert len(json.dumps(block.input)) < 5_000
    assert len(calls[0].input) == KEPT_FIELDS + 1 and calls[0].input["[not kept]"] == "9,980 more field(s)"


def test_the_bound_is_the_setting_and_never_more_than_half_the_window() -> None:
    assert Settings().tool_input_max_bytes == 256 * 1024
    assert input_limit(256 * 1024, 200_000) == 256 * 1024
    assert input_limit(256 * 1024, 8_000) == 8_000 * cmp.CHARS_PER_TOKEN // 2
    _, refused = bound_inputs([_call({"content": "x" * 20_000})], input_limit(256 * 1024, 8_000))
    assert list(refused) == ["toolu_1"] and "15.6 KiB" in refused["toolu_1"]
