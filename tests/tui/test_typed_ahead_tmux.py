"""Typed-ahead keys in a real terminal: the installed app in tmux, keys sent at a person's speed
and in bursts, the fake Messages API. A window that decides (permission, trust) comes up under
the typing and must take none of it as an answer; the typing lands in the prompt whole."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.support.clitools import MEMORY_MODEL, MODEL, cli_env
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.tui.test_smoke_tmux import Tmux, pseudoclaude_exe, quit_app, start_app, tmux, workspace

__all__ = ["tmux", "workspace"]  # the fixtures, used by name

pytestmark = pytest.mark.timeout(120)

KEY_GAP_S = 0.08  # a fast typist: about 12 keys a second
PAUSE_S = 0.8  # a person who stops, reads the window and then answers


def type_like_a_person(tmux: Tmux, chars: str) -> None:
    for ch in chars:
        tmux.send_text(ch)
        time.sleep(KEY_GAP_S)  # the pace of the keys is what is tested, not a synchronisation


def prompt_row(screen: str, typed: str) -> bool:
    return any(typed in line for line in screen.splitlines())


def test_a_permission_window_that_opens_under_the_typing_runs_nothing(tmux: Tmux, workspace: Path) -> None:
    marker = workspace / "pwned"
    with FakeAnthropic() as server:
        gate = server.gate("answer")
        # A slowly streamed answer that ends in a bash call: held after its first words until
        # the person is typing the next prompt.
        server.script(
            MODEL,
            tool_use(
                "bash",
                {"command": f"touch {marker}"},
                id="toolu_1",
                text_before="Let me tidy that up for you.",
            ).held(after=gate, at=3),
            text("Fine, I did not run it."),
        )
        server.script(MEMORY_MODEL, text("[]"))
        start_app(tmux, server, workspace)
        tmux.send_text("tidy up")
        tmux.wait_for(lambda s: "tidy up" in s, "the typed prompt")
        tmux.send_key("Enter")
        server.wait_for_requests(1, model=MODEL, timeout=15)
        assert gate.wait_reached(15)
        typed = "yay yay "
        type_like_a_person(tmux, typed)
        gate.release()  # the window opens while the person goes on typing
        more = "yay yay ay 2a1"
        for i, ch in enumerate(more):
            type_like_a_person(tmux, ch)
            if i == 2:
                tmux.wait_for(lambda s: "Allow bash?" in s, "the permission window", timeout=20)
        typed += more
        screen = tmux.wait_for(lambda s: "not answers" in s, "the window's line about typed-ahead keys")
        assert "Allow bash?" in screen, screen
        assert not marker.exists()
        time.sleep(PAUSE_S)
        tmux.send_text("n")  # read, then answered on purpose
        tmux.wait_for(lambda s: "Fine, I did not run it." in s, "the answer after the denial")
        screen = tmux.wait_for(lambda s: prompt_row(s, typed), "every typed key in the prompt")
        assert not marker.exists()
        assert len(server.requests_for(MODEL)) == 2
        quit_app(tmux)


def test_a_trust_window_that_opens_under_the_typing_trusts_nothing(tmux: Tmux, workspace: Path) -> None:
    folder = workspace / ".PseudoClaude" / "memory"
    folder.mkdir(parents=True)
    (folder / "project_knowledge_deploy.md").write_text(
        "---\ntitle: Deploy on Fridays\nsummary: ok\ntype: project_knowledge\n"
        "created: '2026-01-01T00:00:00Z'\n"
        "updated: '2026-01-01T00:00:00Z'\nsource: manual\n---\nBody.\n"
    )
    records = Path(os.environ["PSEUDOCLAUDE_HOME"]) / "trust"
    with FakeAnthropic() as server:
        env = {k: v for k, v in cli_env(server).items() if not k.startswith("TMUX")}
        tmux.start([str(pseudoclaude_exe()), "-C", str(workspace)], env, cwd=workspace)
        # The person starts typing as soon as the prompt is there (connecting… invites it).
        tmux.wait_for(lambda s: "memory " in (s.strip().splitlines() or [""])[-1], "the first frame")
        words = iter("yesterday you said yes, yes you did, you know why, yyy nnn yyy")
        typed = ""
        seen_at: int | None = None
        for ch in words:
            type_like_a_person(tmux, ch)
            typed += ch
            if seen_at is None and "Trust this project" in tmux.screen():
                seen_at = len(typed)
            if seen_at is not None and len(typed) >= seen_at + 12:
                break
        assert seen_at is not None, "the trust window never came up while the person typed"
        screen = tmux.screen()
        assert "Trust this project" in screen, screen  # neither a y nor an n answered it
        assert not list(records.glob("*.json")) if records.exists() else True
        time.sleep(PAUSE_S)
        tmux.send_text("n")
        tmux.wait_for(lambda s: "Trust this project" not in s, "the window answered on purpose")
        tmux.wait_for(lambda s: prompt_row(s, typed), "every typed key in the prompt")
        assert not records.exists() or not list(records.glob("*.json"))
        quit_app(tmux)


def test_a_burst_typed_on_the_panel_reaches_the_prompt_whole(tmux: Tmux, workspace: Path) -> None:
    with FakeAnthropic() as server:
        start_app(tmux, server, workspace)
        type_like_a_person(tmux, "x")  # Tab on an empty prompt turns thinking on: with a draft it moves on
        tmux.send_key("Tab")  # the memory panel has the focus
        tmux.send_text("hello world")  # one write: a burst
        tmux.wait_for(lambda s: prompt_row(s, "xhello world"), "the whole burst in the prompt", timeout=15)
        type_like_a_person(tmux, " again")
        tmux.wait_for(lambda s: prompt_row(s, "xhello world again"), "key by key too", timeout=15)
        quit_app(tmux)
