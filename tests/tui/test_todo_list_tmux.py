"""The to-do list in a real terminal: the installed app in tmux, the fake Messages API scripting a
``todo_write``. The list is on the screen with its marks (✓ done, ▸ the active item by its active
form, ☐ pending), in colour and as NO_COLOR's monochrome alike, and it is back after the app is
quit and started again with ``--continue``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.clitools import MODEL
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.tui.test_smoke_tmux import COLOURS, Tmux, ask, colour_env, quit_app, start_app, tmux, workspace

__all__ = ["tmux", "workspace"]  # the fixtures, used by name

pytestmark = pytest.mark.timeout(120)

TODOS = [
    {"content": "Read the parser", "status": "completed", "active_form": "Reading the parser"},
    {"content": "Run the tests", "status": "in_progress", "active_form": "Running the tests"},
    {"content": "Fix the failing test", "status": "pending", "active_form": "Fixing the failing test"},
]
LINES = ("✓ Read the parser", "▸ Running the tests", "☐ Fix the failing test")


def the_list(screen: str) -> bool:
    return all(line in screen for line in LINES) and "To-do 1/3 done" in screen


@COLOURS
def test_the_list_shows_with_its_marks_and_is_back_after_continue(
    tmux: Tmux, workspace: Path, no_color: bool
) -> None:
    with FakeAnthropic() as server:
        server.script(MODEL, tool_use("todo_write", {"todos": TODOS}, id="toolu_t"), text("Working on it."))
        env = colour_env(server, no_color)
        start_app(tmux, server, workspace, "--memory", "off", env=env)
        ask(tmux, server, "fix the parser")
        screen = tmux.wait_for(lambda s: "Working on it." in s and the_list(s), "the list on screen")
        rows = screen.splitlines()
        # Between the chat and the prompt: the list's last line comes after the answer's.
        assert rows.index(next(r for r in rows if "☐ Fix the failing test" in r)) > rows.index(
            next(r for r in rows if "Working on it." in r)
        )
        quit_app(tmux)
        tmux.anew()
        start_app(tmux, server, workspace, "--memory", "off", "--continue", env=env)
        tmux.wait_for(the_list, "the list after --continue")
        quit_app(tmux)
        assert not server.errors, server.errors[0]
