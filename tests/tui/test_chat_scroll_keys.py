"""The chat scrolls from the keyboard while the prompt has the focus: PageUp/PageDown (Shift too)
a page, Ctrl+Home/Ctrl+End to the top and the bottom; the focus stays in the prompt, and Up/Down
still walk the prompt's history."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from textual.pilot import Pilot

from app.tui.app import PseudoClaudeApp
from tests.tui.conftest import chat_texts, send, wait_ready, wait_until

QUIET_S = 0.3  # the chat's layout unchanged this long: /help is laid out (its scrollbar re-wraps it)


async def _help_at_the_bottom(pilot: Pilot[Any], app: PseudoClaudeApp, timeout: float = 10.0) -> None:
    await send(pilot, "/help")
    await wait_until(pilot, lambda: any("/remember TEXT" in t for t in chat_texts(app)), what="/help")
    chat = app.chat
    await wait_until(
        pilot,
        lambda: chat.max_scroll_y > chat.size.height and chat.scroll_y == chat.max_scroll_y,
        what="/help taller than the chat, the chat at its bottom",
    )
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    last: tuple[float, ...] = ()
    since = loop.time()
    while loop.time() - since < QUIET_S:
        state = (chat.virtual_size.height, chat.max_scroll_y, chat.scroll_y)
        if state != last:
            last, since = state, loop.time()
        assert loop.time() < deadline, "the chat's layout never settled"
        await pilot.pause(0.02)
    assert chat.scroll_y == chat.max_scroll_y


@pytest.mark.parametrize(("up", "down"), [("pageup", "pagedown"), ("shift+pageup", "shift+pagedown")])
async def test_page_keys_in_the_prompt_scroll_the_chat_and_keep_the_focus(
    make_app, up: str, down: str
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ready(pilot)
        await _help_at_the_bottom(pilot, app)
        chat, prompt = app.chat, app.prompt
        bottom = chat.scroll_y
        await pilot.press(up)
        await wait_until(pilot, lambda: chat.scroll_y < bottom, what="the chat scrolled up a page")
        assert bottom - chat.scroll_y == chat.scrollable_content_region.height
        assert app.focused is prompt
        await pilot.press(up)
        await wait_until(
            pilot,
            lambda: chat.scroll_y < bottom - chat.scrollable_content_region.height,
            what="a second page up",
        )
        await pilot.press(down, down)
        await wait_until(pilot, lambda: chat.scroll_y == chat.max_scroll_y, what="back at the bottom")
        assert app.focused is prompt and prompt.text == ""


async def test_ctrl_home_and_ctrl_end_go_to_the_chats_top_and_bottom_and_history_still_works(
    make_app,
) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ready(pilot)
        await _help_at_the_bottom(pilot, app)
        chat, prompt = app.chat, app.prompt
        await pilot.press("ctrl+home")
        await wait_until(pilot, lambda: chat.scroll_y == 0, what="the chat's top")
        assert app.focused is prompt
        # Scrolled up, a new block does not pull the view down: the person is reading.
        chat.add_note("a note that arrives while reading")
        await pilot.pause()
        assert chat.scroll_y == 0
        await pilot.press("ctrl+end")
        await wait_until(pilot, lambda: chat.scroll_y == chat.max_scroll_y, what="the chat's bottom")
        # Following it again: the next block keeps the view at the bottom.
        chat.add_note("and one at the bottom")
        await wait_until(
            pilot,
            lambda: chat.max_scroll_y > 0 and chat.scroll_y == chat.max_scroll_y,
            what="still at the bottom after a new block",
        )
        await pilot.press("up")
        await wait_until(pilot, lambda: prompt.text == "/help", what="Up recalls the last prompt")
        assert app.focused is prompt


async def test_sending_from_a_chat_scrolled_up_brings_it_back_to_the_end_of_the_answer(make_app) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_ready(pilot)
        await _help_at_the_bottom(pilot, app)
        chat = app.chat
        await pilot.press("ctrl+home")
        await wait_until(pilot, lambda: chat.scroll_y == 0, what="the chat's top")
        await send(pilot, "/mcp")
        await wait_until(
            pilot, lambda: any("no MCP servers" in t for t in chat_texts(app)), what="/mcp's answer"
        )
        await wait_until(
            pilot,
            lambda: chat.scroll_y == chat.max_scroll_y > 0,
            what="the chat at its end, with /mcp's answer",
        )
