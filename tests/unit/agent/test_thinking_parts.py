"""Extended thinking, part by part: the stream's thinking becomes ThinkingDelta events (one at a
block's start, then per chunk; a redacted block is one event) while the block is kept whole with
its signature; the request's ``thinking`` field (off, a budget, adaptive); which errors are a
model refusing a budget; the settings (``thinking``, ``thinking_budget``, below ``max_tokens``
when on) and ``--thinking``; compaction drops earlier turns' thinking only, never summarises it,
and counts it in the estimate."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from app.agent.config.settings import SettingsError, load_settings
from app.agent.conversation import compaction as cmp
from app.agent.conversation.blocks import (
    Message,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from app.agent.memory_bridge.turn_memory import turn_for_memory
from app.agent.model.provider import (
    ModelRequest,
    ProviderEvent,
    TextDelta,
    ThinkingDelta,
    _Accumulated,
)
from app.agent.model.thinking import refuses_budgeted_thinking, thinking_param
from app.agent.turn.compactor import Compactor, ContextSettings
from app.agent.turn.events import Compacted, RunEvent
from app.agent.turn.turn_log import TurnLog
from app.cli.main import _settings_flags, build_parser

SIGNATURE = "EqQBCkYIBhgCIkB+/=" + "c2ln" * 30 + "=="


def _start(index: int, block: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_start", "index": index, "content_block": block}


def _delta(index: int, delta: dict[str, Any]) -> dict[str, Any]:
    return {"type": "content_block_delta", "index": index, "delta": delta}


def test_thinking_streams_as_events_and_is_kept_whole_with_its_signature() -> None:
    acc = _Accumulated()
    acc.take({"type": "message_start", "message": {"usage": {"input_tokens": 3}}})
    thinking = {"type": "thinking", "thinking": "", "signature": ""}
    assert acc.take(_start(0, thinking)) == [ThinkingDelta("")]  # shown from its start
    assert acc.take(_delta(0, {"type": "thinking_delta", "thinking": "First, "})) == [
        ThinkingDelta("First, ")
    ]
    assert acc.take(_delta(0, {"type": "thinking_delta", "thinking": "the files."})) == [
        ThinkingDelta("the files.")
    ]
    assert acc.take(_delta(0, {"type": "signature_delta", "signature": SIGNATURE})) == []
    assert acc.take({"type": "content_block_stop", "index": 0}) == []
    redacted = {"type": "redacted_thinking", "data": "EmwKAhgB"}
    assert acc.take(_start(1, redacted)) == [ThinkingDelta("", redacted=True)]
    acc.take(_start(2, {"type": "text", "text": ""}))
    assert acc.take(_delta(2, {"type": "text_delta", "text": "Done."})) == [TextDelta("Done.")]
    acc.take({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 9}})
    blocks = acc.blocks()
    assert blocks[0] == ThinkingBlock(thinking="First, the files.", signature=SIGNATURE)
    assert blocks[1] == RedactedThinkingBlock(data="EmwKAhgB") and blocks[2] == TextBlock(text="Done.")


def test_the_requests_thinking_field_is_absent_off_a_budget_on_and_adaptive_after_a_refusal() -> None:
    assert thinking_param(0, adaptive=False) is None and thinking_param(0, adaptive=True) is None
    assert thinking_param(8000, adaptive=False) == {"type": "enabled", "budget_tokens": 8000}
    assert thinking_param(8000, adaptive=True) == {"type": "adaptive", "display": "summarized"}


class _ApiError(Exception):
    def __init__(self, status: int, body: object) -> None:
        super().__init__("refused")
        self.status_code, self.body = status, body


def _error(message: str, param: str | None = None, status: int = 400) -> _ApiError:
    error: dict[str, Any] = {"type": "invalid_request_error", "message": message}
    if param is not None:
        error["param"] = param
    return _ApiError(status, {"type": "error", "error": error})


@pytest.mark.parametrize(
    ("err", "refused"),
    [
        (
            _error('"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive"'),
            True,
        ),
        (_error("Extra inputs are not permitted", param="thinking"), True),
        (_error("thinking.budget_tokens: Input should be less than max_tokens"), True),
        (_error("Unsupported", param="thinking.type"), True),
        # A conversation the API refuses names thinking too: no budget would fix it.
        (
            _error("messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, found `tool_use`"),
            False,
        ),
        (_error('"thinking.type.enabled" is not supported', status=404), False),
        (_error('"thinking.type.enabled" is not supported', status=500), False),
        (
            _ApiError(
                400, {"type": "error", "error": {"type": "overloaded_error", "message": "thinking.type"}}
            ),
            False,
        ),
        (ValueError("thinking.type.enabled"), False),
    ],
)
def test_only_a_refused_budget_is_read_as_one(err: BaseException, refused: bool) -> None:
    assert refuses_budgeted_thinking(err) is refused


def test_thinking_is_off_by_default_with_a_budget_of_8000(isolated_home: Path) -> None:
    s = load_settings()
    assert s.thinking is False and s.thinking_budget == 8000
    # Off, a small max_tokens is no problem of the budget's.
    assert load_settings({"max_tokens": 1000}).max_tokens == 1000


def test_the_budget_is_at_least_1024_and_below_max_tokens_when_thinking_is_on(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PSEUDOCLAUDE_THINKING_BUDGET", "1000")
    with pytest.raises(SettingsError, match="PSEUDOCLAUDE_THINKING_BUDGET: input should be greater"):
        load_settings()
    monkeypatch.setenv("PSEUDOCLAUDE_THINKING_BUDGET", "16000")
    assert load_settings().thinking_budget == 16000  # off: nothing to refuse
    with pytest.raises(SettingsError) as refused:
        load_settings({"thinking": True})
    assert str(refused.value) == (
        "invalid environment variable PSEUDOCLAUDE_THINKING_BUDGET: must be below max_tokens (16000): "
        "lower it or raise max_tokens (got '16000')"
    )
    settings = load_settings()
    with pytest.raises(ValueError, match=r"^thinking stays off: thinking_budget must be below max_tokens"):
        settings.turn_thinking(True)  # the app's Tab, said in one line
    assert settings.thinking is False
    monkeypatch.delenv("PSEUDOCLAUDE_THINKING_BUDGET")
    isolated_home.mkdir(parents=True, exist_ok=True)
    (isolated_home / "config.toml").write_text("thinking = true\nthinking_budget = true\n")
    with pytest.raises(SettingsError, match=r"thinking_budget.*expected a number, not a boolean"):
        load_settings()


def test_the_thinking_flag_is_a_setting_of_both_faces() -> None:
    parser = build_parser(memory_commands=False, rewind_commands=False)
    assert _settings_flags(parser.parse_args(["-p", "hi", "--thinking"]))["thinking"] is True
    assert _settings_flags(parser.parse_args([]))["thinking"] is None  # the settings files decide


def _turn(words: str, thought: str, call: str | None = None) -> list[Message]:
    """A turn: the person's words, a response with thinking (and a call, answered), an answer."""
    think = ThinkingBlock(thinking=thought, signature=SIGNATURE)
    if call is None:
        return [
            Message(role="user", content=[TextBlock(text=words)]),
            Message(role="assistant", content=[think, TextBlock(text=f"answer to {words}")]),
        ]
    return [
        Message(role="user", content=[TextBlock(text=words)]),
        Message(role="assistant", content=[think, ToolUseBlock(id=call, name="list_files", input={})]),
        Message(role="user", content=[ToolResultBlock(tool_use_id=call, content="README.md")]),
        Message(role="assistant", content=[RedactedThinkingBlock(data="EmwK"), TextBlock(text="done")]),
    ]


def _thinking_of(messages: list[Message]) -> list[str]:
    return [
        b.thinking if isinstance(b, ThinkingBlock) else "redacted"
        for m in messages
        for b in m.content
        if isinstance(b, ThinkingBlock | RedactedThinkingBlock)
    ]


def test_compaction_drops_earlier_turns_thinking_and_keeps_the_current_loops() -> None:
    conv = [*_turn("one", "old", call="t1"), *_turn("two", "older answer"), *_turn("three", "now", call="t3")]
    only = Message(role="assistant", content=[ThinkingBlock(thinking="alone", signature=SIGNATURE)])
    conv.insert(2, Message(role="user", content=[TextBlock(text="go on")]))
    conv.insert(3, only)  # nothing else in it: it keeps its thinking
    before = cmp.messages_chars(conv)
    saved = cmp.drop_old_thinking(conv, keep_from=len(conv) - 4)  # the turn "three" runs
    assert _thinking_of(conv) == ["alone", "now", "redacted"]
    assert saved > 0 and cmp.messages_chars(conv) < before  # the estimate counted it
    assert conv[1].content[-1] == ToolUseBlock(id="t1", name="list_files", input={})
    # Between turns, the last turn's thinking stays too; again, nothing more goes.
    assert cmp.drop_old_thinking(conv, keep_from=None) == 0 and _thinking_of(conv)[-2:] == ["now", "redacted"]


def test_an_interrupted_loops_thinking_stays_while_the_next_turn_answers_its_calls() -> None:
    think = ThinkingBlock(thinking="mid-loop", signature=SIGNATURE)
    conv = [
        *_turn("one", "first"),
        Message(role="user", content=[TextBlock(text="two")]),
        Message(role="assistant", content=[think, ToolUseBlock(id="t2", name="list_files", input={})]),
        # The cancelled call's result, merged with the next turn's words: no clean turn start.
        Message(
            role="user",
            content=[ToolResultBlock(tool_use_id="t2", content="[interrupted]"), TextBlock(text="three")],
        ),
    ]
    cmp.drop_old_thinking(conv, keep_from=4)
    assert _thinking_of(conv) == ["mid-loop"]


def test_the_current_turns_thinking_stays_past_words_said_within_it() -> None:
    conv = [
        *_turn("one", "first"),
        *_turn("two", "this turn's"),
        # A Stop hook sent the model on: words in a user message, inside the turn begun at 2.
        Message(role="user", content=[TextBlock(text="[Stop hook] run the tests")]),
        Message(role="assistant", content=[TextBlock(text="running them")]),
    ]
    cmp.drop_old_thinking(conv, keep_from=2)
    assert _thinking_of(conv) == ["this turn's"]


async def test_a_compaction_drops_earlier_turns_thinking_before_it_summarises_anything() -> None:
    log = TurnLog(None, [*_turn("one", "old", call="t1"), *_turn("two", "recent")])
    system = [TextBlock(text="the system prompt")]
    compactor = Compactor(log, ContextSettings(window=200_000), system, lambda: [], lambda: None)
    events: list[RunEvent] = []
    assert await compactor.fit(_NoModel(), ("claude-x", 1000), events.append, force=True)
    assert _thinking_of(log.conversation) == ["recent"]
    [done] = [e for e in events if isinstance(e, Compacted)]
    assert done.summarised == 0 and done.requests == 0 and done.after < done.before


class _NoModel:
    def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        raise AssertionError("nothing to summarise: no model request")


def test_a_summary_transcript_never_holds_thinking() -> None:
    conv = _turn("one", "a secret draft of the plan", call="t1")
    [chunk] = cmp.transcript_chunks(conv, 10_000)
    assert "secret draft" not in chunk and "EmwK" not in chunk and SIGNATURE not in chunk
    assert "USER: one" in chunk and "TOOL CALL list_files" in chunk and "ASSISTANT: done" in chunk


def test_memory_learns_from_the_words_never_from_the_thinking() -> None:
    turn = turn_for_memory(_turn("we build with make", "a private draft: maybe cmake?", call="t1"))
    said = [(m.role, m.text) for m in turn.messages]
    assert said == [
        ("user", "we build with make"),
        ("assistant", "done"),
    ]
    assert "private draft" not in turn.model_dump_json() and "EmwK" not in turn.model_dump_json()
