"""Keys typed before the first frame gave the prompt the focus reach the chat screen itself: the
words are the prompt's, and so is the Enter typed with them (it sends them, once)."""

from __future__ import annotations

from pathlib import Path

from textual import events

from tests.support.fakeapi import FakeAnthropic, text
from tests.tui.conftest import MODEL, chat_texts, wait_ready, wait_until


async def test_an_enter_typed_blind_before_the_prompt_had_the_focus_sends_the_words(
    make_app, server: FakeAnthropic, ws: Path
) -> None:
    server.script(MODEL, text("The answer."))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_ready(pilot)
        screen = app.chat_screen
        # As before the first frame: nothing has the focus yet and keys count as typed ahead.
        screen.prompt.typeahead_enter_until = float("inf")
        app.set_focus(None)
        await pilot.pause()
        for key, char in [("h", "h"), ("i", "i"), ("enter", None)]:
            app.post_message(events.Key(key, char))  # as the driver posts them
        await wait_until(pilot, lambda: "The answer." in chat_texts(app), what="the words sent")
        [request] = server.requests_for(MODEL)
        assert request.body["messages"][0]["content"] == [{"type": "text", "text": "hi"}]
        assert screen.prompt.text == ""
