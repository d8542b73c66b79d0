"""Shift+Tab in a real terminal: the installed app in tmux against the fake Messages API. The key
tmux sends for Shift+Tab (``BTab``, the terminal's back-tab sequence) cycles the permission mode,
the status line names it, the prompt keeps the focus (typing goes on there), and in plan mode a
scripted edit_file is refused with no window and the file stays as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.clitools import MEMORY_MODEL, MODEL
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.tui.test_smoke_tmux import Tmux, quit_app, start_app, tmux, workspace

__all__ = ["tmux", "workspace"]  # the fixtures, used by name

pytestmark = pytest.mark.timeout(120)


def _status_row(screen: str) -> str:
    return (screen.strip().splitlines() or [""])[-1]


def test_shift_tab_reaches_plan_mode_and_an_edit_there_is_refused_without_a_window(
    tmux: Tmux, workspace: Path
) -> None:
    notes = workspace / "notes.txt"
    notes.write_text("alpha\n")
    with FakeAnthropic() as server:
        server.script(
            MODEL,
            tool_use(
                "edit_file", {"path": "notes.txt", "old_string": "alpha", "new_string": "beta"}, id="toolu_e"
            ),
            text("I will only plan for now."),
        )
        server.script(MEMORY_MODEL, text("[]"))
        first = start_app(tmux, server, workspace)
        assert "accept edits" not in _status_row(first) and "plan mode" not in _status_row(first)
        tmux.send_key("BTab")
        tmux.wait_for(lambda s: "⏵⏵ accept edits" in _status_row(s), "accept edits on the status line")
        tmux.send_key("BTab")
        tmux.wait_for(lambda s: "⏸ plan mode" in _status_row(s), "plan mode on the status line")
        tmux.send_text("edit the notes")  # the prompt kept the focus
        tmux.wait_for(lambda s: "edit the notes" in s, "the typed prompt")
        tmux.send_key("Enter")
        screen = tmux.wait_for(lambda s: "I will only plan for now." in s, "the answer after the refusal")
        assert "Allow edit_file?" not in screen and "⏸ plan mode" in _status_row(screen)
        assert notes.read_text() == "alpha\n"
        result = server.requests_for(MODEL)[1].body["messages"][-1]["content"][0]
        assert result["is_error"] and result["content"].startswith("plan mode: edit_file changes things")
        tmux.send_key("BTab")  # plan → default
        tmux.wait_for(lambda s: "plan mode" not in _status_row(s), "back to default")
        quit_app(tmux)
