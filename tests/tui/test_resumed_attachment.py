"""A resumed prompt that attached a file reads as the one entry the person sent: its words and
its attachment are blocks of one message, drawn together as they were live."""

from __future__ import annotations

from pathlib import Path

from tests.support.fakeapi import FakeAnthropic, text
from tests.tui.conftest import MODEL, chat_texts, send, wait_ready, wait_until
from widgets.chat.user_block import UserBlock


async def test_a_resumed_prompt_with_an_attached_file_is_one_user_entry(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    (ws / "notes.txt").write_text("the secret word is pineapple\n")
    server.script(MODEL, text("It says pineapple."))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: "notes.txt" in app.chat_screen.files, what="the file list")
        await send(pilot, "what does @notes.txt say?")
        await wait_until(pilot, lambda: "It says pineapple." in chat_texts(app), what="the answer")
        live = [b.text for b in app.chat.query(UserBlock)]
    assert len(live) == 1
    again = make_app(server, memory_mode="off", continue_latest=True)
    async with again.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(pilot, lambda: "It says pineapple." in chat_texts(again), what="the history")
        [block] = list(again.chat.query(UserBlock))
        assert block.text.startswith("what does @notes.txt say?")
        assert "pineapple" in block.text
