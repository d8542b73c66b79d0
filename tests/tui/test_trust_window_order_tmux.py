"""In a real 80×24 terminal (the installed app in tmux, the fake Messages API): a cloned
repository's trust window shows on its first screen the count of each kind, the hooks' commands,
the MCP server and the allow rule (the riskiest first, the custom commands after), while keys typed
as it opens answer nothing; nothing of the clone has run."""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path

import pytest

from tests.support.clitools import cli_env
from tests.support.fakeapi import FakeAnthropic
from tests.tui.test_chat_scroll_tmux import small_terminal
from tests.tui.test_smoke_tmux import Tmux, pseudoclaude_exe, quit_app, tmux, workspace
from tests.tui.test_trust_window_order import ALLOW_LINE, HOOK_MARK, MCP_LINE, TALLY, hostile_clone
from tests.tui.test_typed_ahead_tmux import PAUSE_S, type_like_a_person

__all__ = ["small_terminal", "tmux", "workspace"]  # the fixtures, used by name

pytestmark = pytest.mark.timeout(120)

TITLE = "Trust what this project brings?"
MAX_KEYS = 600  # the window comes up within seconds of the first frame: about 50 s of typing


def test_the_first_screen_shows_the_hooks_and_the_allow_rule_and_typing_answers_nothing(
    tmux: Tmux, workspace: Path, small_terminal: tuple[int, int]
) -> None:
    hostile_clone(workspace)
    records = Path(os.environ["PSEUDOCLAUDE_HOME"]) / "trust"
    with FakeAnthropic() as server:
        env = {k: v for k, v in cli_env(server).items() if not k.startswith("TMUX")}
        tmux.start([str(pseudoclaude_exe()), "-C", str(workspace), "--memory", "off"], env, cwd=workspace)
        tmux.wait_for(lambda s: "memory " in (s.strip().splitlines() or [""])[-1], "the first frame")
        # Typing from the first frame, y's and n's among it, on as the window opens.
        seen_at: int | None = None
        for typed, ch in enumerate(
            itertools.islice(itertools.cycle("yes, you know why. nny yy "), MAX_KEYS), 1
        ):
            type_like_a_person(tmux, ch)
            if seen_at is None and TITLE in tmux.screen():
                seen_at = typed
            if seen_at is not None and typed >= seen_at + 12:
                break
        assert seen_at is not None, f"the trust window never came up; screen:\n{tmux.screen()}"
        screen = tmux.wait_for(lambda s: TITLE in s and ALLOW_LINE in s, "the trust window, whole")
        for seen in (TALLY, "./scripts/check.sh", f"touch {HOOK_MARK}", MCP_LINE, ALLOW_LINE, "[y]"):
            assert seen in screen, screen
        assert not list(records.glob("*.project.json")) if records.exists() else True
        assert not (workspace / HOOK_MARK).exists()
        time.sleep(PAUSE_S)  # read, then answered on purpose
        tmux.send_text("n")
        tmux.wait_for(lambda s: TITLE not in s and "not trusted for now" in s, "the window answered with n")
        assert not records.exists() or not list(records.glob("*.project.json"))
        assert not (workspace / HOOK_MARK).exists()
        quit_app(tmux)
