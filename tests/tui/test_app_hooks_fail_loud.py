"""A hook that fails is said in the app's chat each time (the App against the fake Messages API,
real hooks run by /bin/sh): every event, each way a hook fails (an exit code, a command not found,
a timeout), again for the new session of a ``/clear``; the tool block counts its hooks' failures;
a ``PreToolUse`` guard with ``on_error = "block"`` denies the call when it breaks; a ``Stop``
block is said."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.clitools import result_text
from tests.support.fakeapi import FakeAnthropic, text, tool_use
from tests.tui.conftest import MODEL, chat_texts, send, wait_ready, wait_until
from widgets.chat.error_block import ErrorBlock
from widgets.chat.note_block import NoteBlock

pytestmark = pytest.mark.timeout(120)

EVENTS = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart")
EXIT_7 = "echo broken guard >&2; exit 7"
MISSING = "pc-no-such-command-4711 --flag"
SLOW = "sleep 30"


def _user_config(home: Path, body: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(body)


def _hook(event: str, command: str, **keys: object) -> str:
    extra = "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items())
    return f"[[hooks.{event}]]\ncommand = {json.dumps(command)}\n{extra}\n"


def _expected(event: str) -> list[str]:
    tail = '; the call goes on (on_error = "warn")' if event == "PreToolUse" else ""
    return [
        f"{event} hook `{EXIT_7}` exited with 7: broken guard{tail}",
        f"{event} hook `{MISSING}` not found (exit 127){tail}",
        f"{event} hook `{SLOW}` timed out after 1 s and was stopped{tail}",
    ]


def _errors(app: Any) -> list[str]:
    return [b.text for b in app.chat.blocks if isinstance(b, ErrorBlock)]


async def test_each_failure_of_every_events_hook_is_said_in_the_chat_each_time(
    make_app, server: FakeAnthropic, ws: Path, isolated_home: Path
) -> None:
    hooks = "".join(_hook(e, EXIT_7) + _hook(e, MISSING) + _hook(e, SLOW, timeout=1) for e in EVENTS)
    _user_config(isolated_home, '[permissions]\nallow = ["bash"]\n\n' + hooks)
    server.script(MODEL, tool_use("bash", {"command": "touch tool-ran"}, id="toolu_1"), text("all done"))
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        start = _expected("SessionStart")
        await wait_until(
            pilot, lambda: all(line in _errors(app) for line in start), what="SessionStart's lines"
        )
        await send(pilot, "go")
        turn = [line for e in EVENTS[:4] for line in _expected(e)]
        await wait_until(
            pilot,
            lambda: "all done" in chat_texts(app) and all(line in _errors(app) for line in turn),
            what="the turn's hooks' lines",
        )
        assert sorted(_errors(app)) == sorted(start + turn)  # each once
        assert (ws / "tool-ran").exists()  # "warn": the broken guards let the call go on
        block = app.chat.tool("toolu_1")
        assert block.hook_failed == 6 and "(6 failed)" in block.header_text
        assert block.hook_s >= 2 and "hooks 0.0s" not in block.header_text
        # A new session runs its SessionStart hooks again: said again, after the chat is cleared.
        await send(pilot, "/clear")
        await wait_until(
            pilot,
            lambda: (
                any(isinstance(b, NoteBlock) and "new session" in b.text for b in app.chat.blocks)
                and sorted(_errors(app)) == sorted(start)
            ),
            what="SessionStart's lines after /clear",
        )


async def test_a_broken_guard_with_on_error_block_denies_and_a_stop_block_is_said(
    make_app, server: FakeAnthropic, ws: Path, isolated_home: Path
) -> None:
    stop = "test -e s1 && exit 0; touch s1; echo run tests >&2; exit 2"
    _user_config(
        isolated_home,
        '[permissions]\nallow = ["bash"]\n\n'
        + _hook("PreToolUse", MISSING, matcher="bash", on_error="block")
        + _hook("Stop", stop),
    )
    server.script(
        MODEL, tool_use("bash", {"command": "touch pwned"}, id="toolu_g"), text("first"), text("second")
    )
    app = make_app(server, memory_mode="off")
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_ready(pilot)
        await send(pilot, "touch it")
        await wait_until(
            pilot,
            lambda: any("second" in t for t in chat_texts(app)) and not app.chat_screen.turn_running(),
            what="the turn to end",
        )
        assert not (ws / "pwned").exists()
        denial = (
            f"bash was blocked by a hook: the PreToolUse hook `{MISSING}` failed: not found (exit 127); "
            'its on_error = "block" denies the call'
        )
        content = server.requests_for(MODEL)[1].body["messages"][-1]["content"]
        result = next(b for b in content if b.get("type") == "tool_result")
        assert result["is_error"] and result_text(result) == denial
        block = app.chat.tool("toolu_g")
        assert block.status == "denied" and block.hook_failed == 1 and "(1 failed)" in block.header_text
        assert _errors(app) == [
            f'PreToolUse hook `{MISSING}` not found (exit 127); the call was denied (on_error = "block")'
        ]
        notes = [b.text for b in app.chat.blocks if isinstance(b, NoteBlock)]
        assert f"Stop hook `{stop}` blocked (exit 2): run tests" in notes
