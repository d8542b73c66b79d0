"""Extended thinking in print mode, end to end (the real CLI, the real SDK, the fake Messages API):
``--thinking`` and the ``thinking`` setting put ``thinking`` with its budget in every request of
the turn, and nothing when off; a budget not below ``max_tokens`` is a one-line usage error; a
thinking block (its signature) and a redacted one go back first in the tool-use loop's assistant
message exactly as they came, and again from the session file after ``--continue``; print mode
never prints thinking; the memory model's request carries neither ``thinking`` nor its text; a
model that refuses a budget gets adaptive thinking."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.support.clitools import MEMORY_MODEL, MODEL, run_cli
from tests.support.fakeapi import (
    FakeAnthropic,
    message,
    raw_block,
    reject_param,
    text,
    text_block,
    thinking_block,
    tool_block,
)

pytestmark = pytest.mark.timeout(120)

# An opaque signature as the API sends one (base64, padding and every character that matters).
SIGNATURE = "EqQBCkYIBhgCIkB+/=" + "c2lnbmVkIHRoaW5raW5n" * 12 + "=="
THOUGHT = "The user wants the files listed; list_files first, then answer in one line."
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rL"}
BUDGET = {"type": "enabled", "budget_tokens": 8000}


def _config(text: str) -> None:
    home = Path(os.environ["PSEUDOCLAUDE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


def _assistant(body: dict[str, Any], nth: int = 0) -> list[dict[str, Any]]:
    """The content of the ``nth`` assistant message of a request, as sent."""
    return list([m for m in body["messages"] if m["role"] == "assistant"][nth]["content"])


def _thinking_then_call(first: dict[str, Any] | None = None) -> Any:
    head = raw_block(first) if first is not None else thinking_block(THOUGHT, SIGNATURE)
    return message(
        head, text_block("Looking."), tool_block("list_files", {}, id="toolu_ls"), stop_reason="tool_use"
    )


def test_thinking_flag_puts_the_budget_in_every_request_of_the_turn_and_off_there_is_none(
    server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, _thinking_then_call(), text("Only the README."))
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "-p", "what files are there?", "--thinking")
    assert res.code == 0, res.err
    first, second = server.requests_for(MODEL)
    for request in (first, second):
        assert request.body["thinking"] == BUDGET and request.body["max_tokens"] == 16000
    # The memory model never thinks, and never reads the main model's thinking.
    [extraction] = server.requests_for(MEMORY_MODEL)
    assert "thinking" not in extraction.body
    assert THOUGHT not in json.dumps(extraction.body) and SIGNATURE not in json.dumps(extraction.body)

    server.script(MODEL, text("Still only the README."))
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "-p", "and now?")
    assert res.code == 0, res.err
    assert "thinking" not in server.requests_for(MODEL)[-1].body


def test_the_setting_turns_thinking_on_with_its_budget(server: FakeAnthropic, ws: Path) -> None:
    _config("thinking = true\nthinking_budget = 2048\n")
    server.script(MODEL, text("Hello."))
    res = run_cli(server, ws, "-p", "hi", "--memory", "off")
    assert res.code == 0, res.err
    [request] = server.requests_for(MODEL)
    assert request.body["thinking"] == {"type": "enabled", "budget_tokens": 2048}


def test_a_budget_not_below_max_tokens_is_a_one_line_usage_error(server: FakeAnthropic, ws: Path) -> None:
    _config("max_tokens = 4096\nthinking_budget = 4096\n")
    res = run_cli(server, ws, "-p", "hi", "--thinking")
    assert res.code == 2 and res.out == ""
    [line] = res.err.splitlines()
    assert "thinking_budget" in line and "must be below max_tokens (4096)" in line, line
    assert server.requests_for(MODEL) == []


def test_a_thinking_block_goes_back_first_in_the_loop_and_again_after_continue_and_is_never_printed(
    server: FakeAnthropic, ws: Path
) -> None:
    expected = {"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE}
    server.script(MODEL, _thinking_then_call(), text("Only the README."))
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "-p", "what files are there?", "--thinking")
    assert res.code == 0, res.err
    body = server.requests_for(MODEL)[1].body
    sent = _assistant(body)
    assert body["thinking"] == BUDGET and [b["type"] for b in sent] == ["thinking", "text", "tool_use"]
    assert sent[0] == expected  # the text and the signature exactly as they came
    assert "Only the README." in res.out
    assert "list_files" not in res.out and "files listed" not in res.out + res.err

    # From the session file: the next turn sends the same block, the same way.
    server.script(MODEL, text("Yes, only that."))
    server.script(MEMORY_MODEL, text("[]"))
    res = run_cli(server, ws, "--continue", "-p", "sure?", "--thinking")
    assert res.code == 0, res.err
    assert _assistant(server.requests_for(MODEL)[-1].body)[0] == expected
    assert THOUGHT not in json.dumps(server.requests_for(MEMORY_MODEL)[-1].body)


def test_redacted_thinking_is_kept_and_sent_back(server: FakeAnthropic, ws: Path) -> None:
    server.script(MODEL, _thinking_then_call(REDACTED), text("Only the README."))
    res = run_cli(server, ws, "-p", "what files are there?", "--thinking", "--memory", "off")
    assert res.code == 0, res.err
    body = server.requests_for(MODEL)[1].body
    assert body["thinking"] == BUDGET and _assistant(body)[0] == REDACTED
    server.script(MODEL, text("Yes."))
    res = run_cli(server, ws, "--continue", "-p", "sure?", "--thinking", "--memory", "off")
    assert res.code == 0, res.err
    assert _assistant(server.requests_for(MODEL)[-1].body)[0] == REDACTED
    assert REDACTED["data"] not in res.out + res.err


def test_a_model_that_refuses_a_budget_gets_adaptive_thinking(server: FakeAnthropic, ws: Path) -> None:
    refusal = (
        '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and '
        '"output_config.effort" to control thinking behavior.'
    )
    server.script(
        MODEL,
        reject_param("thinking.budget_tokens", message=refusal),
        _thinking_then_call(),
        text("Only the README."),
    )
    res = run_cli(server, ws, "-p", "what files are there?", "--thinking", "--memory", "off")
    assert res.code == 0, res.err
    refused, *answered = server.requests_for(MODEL)
    assert refused.body["thinking"] == BUDGET and refused.outcome.startswith("http_error 400")
    # The same turn goes on with adaptive thinking, shown summarized, in every later request.
    assert [r.body["thinking"] for r in answered] == [{"type": "adaptive", "display": "summarized"}] * 2
    assert "Only the README." in res.out and "not supported" not in res.err
