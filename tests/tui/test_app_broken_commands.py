"""A broken custom command in the app: not said at every start, listed once in /help with why,
and typing it says why instead of "unknown command"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fakeapi import FakeAnthropic
from tests.tui.conftest import chat_texts, send, wait_ready, wait_until

pytestmark = pytest.mark.timeout(120)

BAD_YAML = "the front matter is not YAML"


async def test_help_lists_a_broken_command_once_and_typing_it_says_why(
    make_app, server: FakeAnthropic, isolated_home: Path
) -> None:
    folder = isolated_home / "commands"
    folder.mkdir(parents=True)
    (folder / "broken.md").write_text("---\ndescription: [unclosed\n---\nNever sent.\n")
    (folder / "review.md").write_text("---\ndescription: Review a file for bugs\n---\nReview $1.\n")
    # A rule that cannot be read is said with the other start notes: once it shows, they were said.
    (isolated_home / "config.toml").write_text('[permissions]\nallow = ["bash(git status"]\n')
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await wait_until(
            pilot, lambda: any("bash(git status" in t for t in chat_texts(app)), what="the start notes"
        )
        assert not any(BAD_YAML in t or "broken.md" in t for t in chat_texts(app))
        await send(pilot, "/help")
        await wait_until(
            pilot, lambda: any("Review a file for bugs" in t for t in chat_texts(app)), what="/help"
        )
        mentions = [line for t in chat_texts(app) for line in t.splitlines() if BAD_YAML in line]
        assert len(mentions) == 1 and mentions[0].split()[0] == "/broken", mentions
        await send(pilot, "/broken now")
        await wait_until(
            pilot,
            lambda: any("/broken is a broken custom command" in t for t in chat_texts(app)),
            what="why /broken does not run",
        )
        [said] = [t for t in chat_texts(app) if "/broken is a broken custom command" in t]
        assert BAD_YAML in said and "broken.md" in said and "unknown command" not in said
        assert server.requests == []
