"""A stuck session's way out and a tool input too large to keep: the message that ends a turn the
window cannot hold (app/agent/conversation/compaction.py) and the bound on a tool call's input
(app/agent/turn/tool_calls.py)."""

from __future__ import annotations

import json
from typing import Any

from app.agent.config.settings import Settings
from app.agent.conversation import compaction as cmp
from app.agent.turn.tool_calls import KEPT_FIELDS, bound_inputs, input_limit
from tests.support.fakeapi import _validate_messages_body

REASON = cmp.does_not_fit(5_242_953, 200_000)


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def _call(tool_input: Any, id: str = "toolu_1", name: str = "write_file") -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": tool_input}


def test_a_conversation_that_stays_too_large_names_rewind_and_clear_in_both_faces() -> None:
    big_turn = [
        _user("write it"),
        {"role": "assistant", "content": [_call({"path": "a", "content": "x"})]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}]},
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
    earlier = [_user("x" * 1_000_000), {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]
    assert cmp.too_large(REASON, [*earlier, _user("hi")], 2, 200_000) == said


def test_a_prompt_too_large_on_its_own_is_said_to_be_left_out() -> None:
    conversation = [
        _user("hi"),
        {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
        _user("y" * 1_000_000),
    ]
    said = cmp.too_large(REASON, conversation, 2, 200_000)
    assert said.endswith("; the prompt was left out: send a shorter one")
    assert "/rewind" not in said


def test_a_huge_input_is_cut_to_a_valid_small_object_and_refused_with_the_limit_and_size() -> None:
    huge = _call({"path": "big.txt", "content": "x" * 3_000_000})
    small = _call({"path": "ok.txt", "content": "fine"}, id="toolu_2")
    text = {"type": "text", "text": "writing both"}
    blocks, refused = bound_inputs([text, huge, small], 256 * 1024)
    assert blocks[0] == text and blocks[2] == small  # what fits is untouched
    assert blocks[1]["id"] == "toolu_1" and blocks[1]["name"] == "write_file"
    assert blocks[1]["input"] == {"path": "big.txt", "content": "[not kept: 3,000,002 bytes]"}
    assert list(refused) == ["toolu_1"]
    assert "3,000,031 bytes (2.9 MiB)" in refused["toolu_1"] and "256.0 KiB" in refused["toolu_1"]
    assert "tool_input_max_bytes" in refused["toolu_1"] and refused["toolu_1"].startswith(
        "write_file was not run"
    )
    # The API still takes the conversation: a tool_use with an object input, answered by its result.
    conversation = [
        _user("go"),
        {"role": "assistant", "content": blocks},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": b["id"], "content": "r"} for b in blocks[1:]],
        },
    ]
    assert _validate_messages_body({"model": "m", "max_tokens": 10, "messages": conversation}) is None


def test_many_fields_a_huge_key_or_an_input_that_is_not_an_object_stay_small() -> None:
    many = _call({f"k{i}": "v" * 50 for i in range(10_000)})
    long_key = _call({"k" * 500_000: 1}, id="toolu_2")
    not_object = _call(["x" * 500_000], id="toolu_3")
    blocks, refused = bound_inputs([many, long_key, not_object], 4096)
    assert set(refused) == {"toolu_1", "toolu_2", "toolu_3"}
    for block in blocks:
        assert isinstance(block["input"], dict) and len(json.dumps(block["input"])) < 5_000
    assert (
        len(blocks[0]["input"]) == KEPT_FIELDS + 1
        and blocks[0]["input"]["[not kept]"] == "9,980 more field(s)"
    )
    assert blocks[2]["input"] == {}


def test_the_bound_is_the_setting_and_never_more_than_half_the_window() -> None:
    assert Settings().tool_input_max_bytes == 256 * 1024
    assert input_limit(256 * 1024, 200_000) == 256 * 1024
    assert input_limit(256 * 1024, 8_000) == 8_000 * cmp.CHARS_PER_TOKEN // 2
    _, refused = bound_inputs([_call({"content": "x" * 20_000})], input_limit(256 * 1024, 8_000))
    assert list(refused) == ["toolu_1"] and "15.6 KiB" in refused["toolu_1"]
