"""In a real 80×24 terminal (the installed app in tmux, the fake Messages API): with the prompt
focused, PageUp brings the top of `/help`'s output into view, PageDown and Ctrl+End go back to the
bottom, and what is typed then still lands in the prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.fakeapi import FakeAnthropic
from tests.tui import test_smoke_tmux as smoke
from tests.tui.test_smoke_tmux import Tmux, quit_app, start_app, tmux, workspace

__all__ = ["tmux", "workspace"]  # the fixtures, used by name

pytestmark = pytest.mark.timeout(120)

HELP_TOP = "list the commands and keys"  # /help's first row: "/help  list the commands and keys"
HELP_BOTTOM = "m undo its memory batches"  # its last row
MAX_PAGES = 8  # /help is about three 80×24 pages


@pytest.fixture
def small_terminal(monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """The tmux session is 80×24 (the smoke tests' own size is read when it starts)."""
    monkeypatch.setattr(smoke, "WIDTH", 80)
    monkeypatch.setattr(smoke, "HEIGHT", 24)
    return 80, 24


def page_until(tmux: Tmux, key: str, seen: str) -> str:
    """Press ``key`` until ``seen`` is on the screen; each press must move the chat."""
    screen = tmux.screen()
    for _ in range(MAX_PAGES):
        if seen in screen:
            return screen
        before = screen
        tmux.send_key(key)
        screen = tmux.wait_for(lambda s, b=before: s != b, f"{key} to scroll the chat", timeout=10)
    assert seen in screen, screen
    return screen


def test_pageup_from_the_prompt_reaches_the_top_of_help_at_80x24(
    tmux: Tmux, workspace: Path, small_terminal: tuple[int, int]
) -> None:
    with FakeAnthropic() as server:
        start_app(tmux, server, workspace)
        tmux.send_text("/help")
        tmux.wait_for(lambda s: "/help" in s, "the typed /help")
        tmux.send_key("Enter")
        screen = tmux.wait_for(lambda s: HELP_BOTTOM in s, "the end of /help's output")
        assert HELP_TOP not in screen, screen  # out of reach until scrolled
        assert max(len(line) for line in screen.splitlines()) <= small_terminal[0]
        screen = page_until(tmux, "PPage", HELP_TOP)
        assert HELP_BOTTOM not in screen
        page_until(tmux, "NPage", HELP_BOTTOM)
        tmux.send_key("C-Home")
        tmux.wait_for(lambda s: HELP_TOP in s, "Ctrl+Home: the chat's top")
        tmux.send_key("C-End")
        tmux.wait_for(lambda s: HELP_BOTTOM in s, "Ctrl+End: the chat's bottom")
        # The prompt kept the focus all along: typing lands there.
        tmux.send_text("still typing here")
        tmux.wait_for(lambda s: "still typing here" in s, "the text in the prompt")
        quit_app(tmux)
