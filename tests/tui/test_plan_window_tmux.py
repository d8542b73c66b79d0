"""Plan mode's way out in a real terminal (80×24): the installed app in tmux, the fake Messages API.
Shift+Tab (tmux's BTab) twice reaches plan mode, and the status line says so; the model's
exit_plan_mode shows the plan, rendered, in a window that a ``y`` typed right before it opens does
not answer (it goes back to the prompt); ``1``, pressed on purpose, approves with accept-edits, the
status line says so, and the model's next edit_file runs without a permission window."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.support.clitools import MODEL
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.tui import test_smoke_tmux
from tests.tui.test_smoke_tmux import Tmux, quit_app, start_app, tmux, workspace
from widgets.dialogs.decision import QUIET_S

__all__ = ["tmux", "workspace"]  # the fixtures, used by name

pytestmark = pytest.mark.timeout(120)

KEY_GAP_S = 0.05  # a fast typist
PAUSE_S = QUIET_S + 0.3  # a person who reads the window before a key: what "on purpose" means to it
PLAN = "## Retitle the README\n\n1. Change **demo** to `showcase` in README.md\n2. Nothing else\n"


@pytest.fixture(autouse=True)
def small_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(test_smoke_tmux, "WIDTH", 80)
    monkeypatch.setattr(test_smoke_tmux, "HEIGHT", 24)


def _status(screen: str) -> str:
    return (screen.strip().splitlines() or [""])[-1]


def test_plan_mode_a_typed_ahead_y_and_an_approval_that_accepts_edits(tmux: Tmux, workspace: Path) -> None:
    with FakeAnthropic() as server:
        gate = server.gate("plan")
        server.script(
            MODEL,
            # Held before its events until the person is typing: the window opens under a "y".
            tool_use("exit_plan_mode", {"plan": PLAN}, id="toolu_p", hold_before=gate),
            tool_use("edit_file", {"path": "README.md", "old_string": "demo", "new_string": "showcase"}),
            text("Retitled."),
        )
        start_app(tmux, server, workspace, "--memory", "off")
        tmux.send_key("BTab")
        tmux.wait_for(lambda s: "accept edits" in _status(s), "accept-edits in the status line")
        tmux.send_key("BTab")
        tmux.wait_for(lambda s: "plan mode" in _status(s), "plan mode in the status line")
        tmux.send_text("retitle it")
        tmux.wait_for(lambda s: "retitle it" in s, "the typed prompt")
        tmux.send_key("Enter")
        assert gate.wait_reached(15)
        # The person types "y"s for the next prompt while the window comes up, and one more once
        # it is there: none of them is an answer, all of them land in the prompt.
        gate.release()
        typed = ""
        for _ in range(40):
            tmux.send_text("y")
            typed += "y"
            time.sleep(KEY_GAP_S)  # the pace of the keys is what is tested, not a synchronisation
            if "Plan ready" in tmux.screen():
                break
        tmux.send_text("y")
        typed += "y"
        tmux.wait_for(lambda s: "Retitle the README" in s and "[1/a]" in s, "the plan window and its keys")
        time.sleep(PAUSE_S)
        screen = tmux.wait_for(lambda s: re.search(rf"│ {typed}\s+│", s) is not None, "every y in the prompt")
        assert "Plan ready" in screen, screen  # no y answered it
        # Rendered: the heading's marks and the stars are gone; every key is on the screen.
        assert "##" not in screen and "**demo**" not in screen and "Change demo to showcase" in screen, screen
        assert all(key in screen for key in ("[1/a]", "[2/y]", "[3/n/Esc]")), screen
        assert (workspace / "README.md").read_text() == "# demo\n"
        tmux.send_text("1")  # read, then answered on purpose
        tmux.wait_for(lambda s: "Retitled." in s, "the answer after the edit")
        screen = tmux.wait_for(lambda s: "accept edits" in _status(s), "accept-edits in the status line")
        assert "Allow edit_file?" not in screen, screen
        assert (workspace / "README.md").read_text() == "# showcase\n"
        assert len(server.requests_for(MODEL)) == 3
        quit_app(tmux)
