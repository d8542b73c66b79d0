"""The model's thinking in the app (Pilot, the real SDK, the fake Messages API): Tab on an empty
prompt turns thinking on for the next request and the status line says so (Tab with text still
moves to the memory panel); a streamed thinking block shows "Thinking…" while it streams, then
collapses to "Thought for N s"; Ctrl+O expands it (its text dimmed) and collapses it, Enter on the
focused block too; a redacted block is one line; the answer holds none of it; a resumed session
shows its past thinking collapsed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app.agent.conversation.blocks import Message
from app.agent.conversation.session_store import SessionStore
from app.tui.app import PseudoClaudeApp
from tests.support.fakeapi import FakeAnthropic, message, raw_block, text_block, thinking_block
from tests.tui.conftest import MODEL, chat_texts, send, wait_ready, wait_until
from widgets.chat.answer_block import AnswerBlock
from widgets.chat.thinking_block import ThinkingBlock

pytestmark = pytest.mark.timeout(60)

SIGNATURE = "EqQBCkYIBhgCIkB+/=" + "dGhpbmtpbmc" * 8 + "=="
THOUGHT = "Check the README first, then answer."
THOUGHT_FOR = re.compile(r"^▸ Thought for \d+ s · Ctrl\+O shows it$")


def _status(app: PseudoClaudeApp) -> str:
    return app.chat_screen.status_line.line(200).plain


def _thinking(app: PseudoClaudeApp) -> list[ThinkingBlock]:
    return [b for b in app.chat.blocks if isinstance(b, ThinkingBlock)]


async def test_tab_turns_thinking_on_and_the_streamed_thinking_collapses_and_expands(
    make_app, server: FakeAnthropic
) -> None:
    held = server.gate("mid-thinking")
    reply = message(
        thinking_block(THOUGHT, SIGNATURE),
        raw_block({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3p"}),
        text_block("The build is make build."),
    )
    server.script(MODEL, reply.held(after=held, at=5))  # after two words of the thinking
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        assert "✻ thinking" not in _status(app)
        await pilot.press("tab")  # on the empty prompt
        await wait_until(pilot, lambda: "✻ thinking" in _status(app), what="thinking in the status line")
        assert app.focused is app.prompt and app.prompt.text == ""

        await send(pilot, "how do I build?")
        await wait_until(pilot, lambda: bool(_thinking(app)), what="the thinking block")
        [block] = _thinking(app)
        assert block.shown_text.startswith("▸ Thinking…") and not block.expanded
        held.release()
        await wait_until(pilot, lambda: app.prompt.disabled_reason is None, what="the turn's end")
        assert server.requests_for(MODEL)[0].body["thinking"] == {"type": "enabled", "budget_tokens": 8000}
        block, redacted = _thinking(app)
        assert THOUGHT_FOR.match(block.shown_text), block.shown_text
        assert block.text == THOUGHT and THOUGHT not in block.shown_text
        assert redacted.shown_text == "▸ Thinking (redacted)"
        [answer] = [b for b in app.chat.blocks if isinstance(b, AnswerBlock)]
        assert "README" not in answer.text and "EmwK" not in " ".join(chat_texts(app))
        assert app.chat.blocks.index(block) < app.chat.blocks.index(answer)

        await pilot.press("ctrl+o")
        await wait_until(pilot, lambda: block.expanded and redacted.expanded, what="Ctrl+O expanding")
        assert block.shown_text.startswith("▾ Thought for ") and block.shown_text.endswith("\n" + THOUGHT)
        drawn = block._content()
        dim = [s for s in drawn.spans if str(s.style) == "dim"]
        assert [drawn.plain[s.start : s.end] for s in dim] == ["\n" + THOUGHT]
        await pilot.press("ctrl+o")
        await wait_until(pilot, lambda: not block.expanded, what="Ctrl+O collapsing")
        block.focus()
        await pilot.press("enter")
        await wait_until(pilot, lambda: block.expanded and not redacted.expanded, what="Enter expanding it")

        # With text in the prompt, Tab goes on to the memory panel and thinking stays on.
        app.prompt.focus()
        app.prompt.text = "draft"
        await pilot.press("tab")
        await wait_until(pilot, lambda: app.focused is not app.prompt, what="the focus to move on")
        assert app.panel in app.focused.ancestors_with_self and "✻ thinking" in _status(app)
        app.prompt.focus()
        app.prompt.text = ""
        await pilot.press("tab")
        await wait_until(pilot, lambda: "✻ thinking" not in _status(app), what="thinking off again")
        assert app.bridge.runtime is not None and app.bridge.runtime.runner.thinking_budget == 0


async def test_the_flag_starts_with_thinking_on_and_a_resumed_session_shows_its_thinking_collapsed(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    with SessionStore().create(ws) as s:
        s.begin_turn("how do I build?")
        s.append(Message.model_validate({"role": "user", "content": [{"type": "text", "text": "how?"}]}))
        thinking = {"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE}
        answer = {"type": "text", "text": "make build"}
        s.append(Message.model_validate({"role": "assistant", "content": [thinking, answer]}))
        s.end_turn("completed")
    app = make_app(server, memory_mode="off", continue_latest=True, thinking=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: bool(_thinking(app)), what="the resumed thinking")
        assert "✻ thinking" in _status(app)
        [block] = _thinking(app)
        assert block.shown_text == "▸ Thought · Ctrl+O shows it" and block.text == THOUGHT
        await pilot.press("ctrl+o")
        await wait_until(pilot, lambda: block.expanded, what="Ctrl+O expanding it")
        assert block.shown_text == "▾ Thought\n" + THOUGHT
