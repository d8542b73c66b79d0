"""In a real terminal: a cloned project store trusted with `y` in the trust window is recalled and
searched in that same session (the installed app in tmux, the fake Messages API, the real SDK).
Before, the store's search cache was never built after the trust, so no turn of that session
recalled from it and the first search_memory built it itself."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.support.clitools import MODEL, cli_env
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.tui.test_smoke_tmux import Tmux, pseudoclaude_exe, quit_app, tmux, workspace
from tests.tui.test_trust_recall import LAB, seed_clone
from widgets.dialogs.decision import QUIET_S, SETTLE_S

__all__ = ["tmux", "workspace"]  # the fixtures, used by name

pytestmark = pytest.mark.timeout(180)


def test_a_store_trusted_in_the_window_is_recalled_and_searched_in_the_same_session(
    tmux: Tmux, workspace: Path
) -> None:
    seed_clone(workspace, 320)
    with FakeAnthropic() as server:
        server.script(
            MODEL,
            text("Calibrate it weekly."),
            tool_use("search_memory", {"query": "frobnicator"}),
            text("Found it in memory."),
        )
        env = {k: v for k, v in cli_env(server).items() if not k.startswith("TMUX")}
        tmux.start([str(pseudoclaude_exe()), "-C", str(workspace), "--memory", "off"], env, cwd=workspace)
        tmux.wait_for(lambda s: "321 cards" in s, "the trust window's cards", timeout=60)
        time.sleep(SETTLE_S + QUIET_S)  # read, then answered on purpose
        tmux.send_text("y")
        tmux.wait_for(lambda s: "project memory trusted" in s, "the trust noted in the chat", timeout=60)
        tmux.wait_for(lambda s: "connecting" not in s, "the model connected", timeout=60)
        time.sleep(3)  # a person's next question comes a few seconds later
        tmux.send_text("How do I calibrate the frobnicator?")
        tmux.send_key("Enter")
        tmux.wait_for(lambda s: "Calibrate it weekly." in s, "the answer", timeout=30)
        first = server.requests_for(MODEL)[0].body["messages"][-1]["content"]
        recall = "".join(b.get("text", "") for b in first if b.get("text", "").startswith("<memory-recall>"))
        assert f"({LAB})" in recall, json.dumps(first)[:2000]
        tmux.send_text("Look it up in memory.")
        tmux.send_key("Enter")
        tmux.wait_for(lambda s: "Found it in memory." in s, "the second answer", timeout=30)
        result = json.dumps(server.requests_for(MODEL)[2].body["messages"][-1])
        assert "Lab bench" in result, result[:2000]
        quit_app(tmux)
