"""In the app, web_search's side request counts in the session's cost under the web model, its
search included, and ``/cost`` shows it (the real SDK against the fake Messages API)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.support.fakeapi import FakeAnthropic, text, tool_use, web_search_reply
from tests.tui.conftest import MEMORY_MODEL, MODEL, chat_texts, send, wait_ready, wait_until


async def test_the_side_request_is_in_the_cost_under_the_web_model(make_app, server: FakeAnthropic) -> None:
    home = Path(os.environ["PSEUDOCLAUDE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text('[permissions]\nallow = ["web_search"]\n')
    server.script(MODEL, tool_use("web_search", {"query": "textual 8"}), text("Found it."))
    reply = web_search_reply("textual 8", [("https://textual.textualize.io/", "Textual")], "It is out.")
    server.script(MEMORY_MODEL, reply.with_usage(input_tokens=4321, output_tokens=21))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(140, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "what is new in textual 8?")
        await wait_until(pilot, lambda: "Found it." in " ".join(chat_texts(app)), 20, "the answer")
        await wait_until(pilot, lambda: app.prompt.disabled_reason is None, 20, "the turn to end")
        cost = app.chat_screen.cost
        assert cost is not None
        side = cost.by_model[MEMORY_MODEL]
        assert (side.input_tokens, side.output_tokens, side.web_search_requests) == (4321, 21, 1)
        assert cost.by_model[MODEL].input_tokens == 20  # the main model's two requests, not the side's
        await send(pilot, "/cost")
        await wait_until(pilot, lambda: "1 web search" in " ".join(chat_texts(app)), 10, "the /cost note")
