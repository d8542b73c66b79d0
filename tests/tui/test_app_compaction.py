"""Long sessions in the app: ``/compact [FOCUS]`` shows one block, the summary request
carries the focus, and the status line shows how full the model's window is."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest

from tests.support.clitools import extraction_prompt, system_text
from tests.support.fakeapi import FakeAnthropic, request_tokens, text
from tests.tui.conftest import MODEL, chat_texts, send, wait_ready, wait_until
from widgets.chat.error_block import ErrorBlock
from widgets.chat.note_block import NoteBlock

CONTEXT = re.compile(r"context (\d+)%")


def is_summary(body: Mapping[str, Any]) -> bool:
    return "tools" not in body


def screen_lines(app: Any) -> list[str]:
    return [strip.text for strip in app.screen._compositor.render_strips()]


def context_shown(app: Any) -> int | None:
    """The "context N%" of the status line (the screen's last rows), as drawn."""
    for line in reversed(screen_lines(app)[-3:]):
        m = CONTEXT.search(line)
        if m:
            return int(m.group(1))
    return None


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
async def test_compact_with_a_focus_shows_one_block_and_the_status_shows_the_context(
    make_app, server: FakeAnthropic, size: tuple[int, int]
) -> None:
    server.context_window = 20_000  # the fake reports each request's real size as its input tokens
    server.respond(MODEL, is_summary, text("SUMMARY: the parser's tables were discussed."))
    server.script(MODEL, text("answer one"), text("answer two"), text("answer three"))
    app = make_app(server, memory_mode="off", context_window=20_000)
    async with app.run_test(size=size) as pilot:
        await wait_ready(pilot)
        assert context_shown(app) is None  # nothing sent yet: nothing to say
        await send(pilot, "turn one: the parser keeps its state in one table")
        await wait_until(pilot, lambda: "answer one" in chat_texts(app), what="the first answer")
        await wait_until(pilot, lambda: context_shown(app) is not None, what="context N% in the status line")
        sent = server.requests_for(MODEL)[-1].body
        # The figure is the last request's size over the window (the fake reported it exactly).
        assert context_shown(app) == 100 * request_tokens(sent) // 20_000 > 0
        await send(pilot, "turn two: and the lexer hands it tokens")
        await wait_until(pilot, lambda: "answer two" in chat_texts(app), what="the second answer")

        await send(pilot, "/compact focus on the parser")
        await wait_until(pilot, lambda: any("into a summary" in t for t in chat_texts(app)), what="the block")
        await wait_until(pilot, lambda: app.prompt.disabled_reason is None, what="the prompt to be free")
        notes = [t for t in chat_texts(app) if "compact" in t]
        assert len(notes) == 1, notes
        assert re.fullmatch(r"compacted 2 messages into a summary \(context \d+% → \d+%\)", notes[0]), notes[
            0
        ]
        block = next(b for b in app.chat.blocks if "into a summary" in getattr(b, "text", ""))
        assert isinstance(block, NoteBlock)
        assert not any(isinstance(b, ErrorBlock) for b in app.chat.blocks)
        assert any("compacted 2 messages" in line for line in screen_lines(app)), "the block is on screen"
        [summary] = [r for r in server.requests_for(MODEL) if is_summary(r.body)]
        prompt = extraction_prompt(summary)
        assert "focus on the parser" in prompt and "turn one" in prompt
        assert context_shown(app) is not None

        await send(pilot, "turn three")
        await wait_until(pilot, lambda: "answer three" in chat_texts(app), what="the third answer")
        last = server.requests_for(MODEL)[-1]
        assert "SUMMARY: the parser's tables" in system_text(last)
        assert "turn one" not in str(last.body["messages"])
        assert all(r.outcome.startswith("reply") for r in server.requests)
