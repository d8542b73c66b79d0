"""A hook that fails is said on stderr each time, in print mode end to end (the real CLI, the
fake Messages API): every event, each way a hook fails (an exit code, a command not found, a
timeout); a ``PreToolUse`` guard with ``on_error = "block"`` denies the call when it breaks; a
``PostToolUse`` or ``Stop`` block is said too; a bad ``on_error`` is a one-line config problem."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.clitools import MODEL, result_text, run_cli, tool_results
from tests.support.fakeapi import FakeAnthropic, text, tool_use

pytestmark = pytest.mark.timeout(120)

EXIT_7 = "touch exit-ran; echo broken guard >&2; echo more >&2; exit 7"
MISSING = "pc-no-such-command-4711 --flag"
SLOW = "sleep 30"


def _config(body: str) -> None:
    home = Path(os.environ["PSEUDOCLAUDE_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(body)


def _hook(event: str, command: str, **keys: object) -> str:
    extra = "".join(f"{k} = {json.dumps(v)}\n" for k, v in keys.items())
    return f"[[hooks.{event}]]\ncommand = {json.dumps(command)}\n{extra}\n"


def _broken_hooks(event: str) -> str:
    """The three ways a hook fails, one after the other for ``event``."""
    return _hook(event, EXIT_7) + _hook(event, MISSING) + _hook(event, SLOW, timeout=1)


def _count(err: str, line: str) -> int:
    return sum(1 for got in err.splitlines() if got == f"pseudoclaude: {line}")


@pytest.mark.parametrize(
    ("event", "times"),
    [
        ("PreToolUse", 2),
        ("PostToolUse", 2),
        ("UserPromptSubmit", 1),
        ("Stop", 1),
        ("SessionStart", 1),
    ],
)
def test_each_failure_of_each_events_hook_is_one_line_on_stderr_each_time(
    server: FakeAnthropic, ws: Path, event: str, times: int
) -> None:
    _config('[permissions]\nallow = ["bash"]\n\n' + _broken_hooks(event))
    server.script(
        MODEL,
        tool_use("bash", {"command": "touch tool-1"}, id="toolu_1"),
        tool_use("bash", {"command": "touch tool-2"}, id="toolu_2"),
        text("all done"),
    )
    res = run_cli(server, ws, "-p", "go")
    assert res.code == 0, res.err
    assert res.out.strip().endswith("all done")
    assert (ws / "exit-ran").exists()  # the hooks ran
    # A broken PreToolUse guard warns and lets the call go on (on_error defaults to "warn").
    assert (ws / "tool-1").exists() and (ws / "tool-2").exists()
    tail = '; the call goes on (on_error = "warn")' if event == "PreToolUse" else ""
    expected = [
        f"{event} hook `{EXIT_7}` exited with 7: broken guard{tail}",
        f"{event} hook `{MISSING}` not found (exit 127){tail}",
        f"{event} hook `{SLOW}` timed out after 1 s and was stopped{tail}",
    ]
    for line in expected:
        assert _count(res.err, line) == times, (line, res.err)


def test_a_broken_pre_tool_use_guard_with_on_error_block_denies_the_call_and_the_model_is_told(
    server: FakeAnthropic, ws: Path
) -> None:
    _config(
        '[permissions]\nallow = ["bash"]\n\n'
        + _hook("PreToolUse", EXIT_7, matcher="bash(touch a)", on_error="block")
        + _hook("PreToolUse", MISSING, matcher="bash(touch b)", on_error="block")
        + _hook("PreToolUse", SLOW, matcher="bash(touch c)", on_error="block", timeout=1)
    )
    server.script(
        MODEL, *(tool_use("bash", {"command": f"touch {n}"}, id=f"toolu_{n}") for n in "abc"), text("stopped")
    )
    res = run_cli(server, ws, "-p", "touch them")
    assert res.code == 0, res.err
    assert not any((ws / n).exists() for n in "abc")
    requests = server.requests_for(MODEL)
    why = ["exited with 7: broken guard", "not found (exit 127)", "timed out after 1 s and was stopped"]
    for n, (command, failure) in enumerate(zip((EXIT_7, MISSING, SLOW), why, strict=True), 1):
        result = tool_results(requests[n])[-1]  # the request after the call carries its denial
        assert result.get("is_error")
        assert result_text(result) == (
            f"bash was blocked by a hook: the PreToolUse hook `{command}` failed: "
            f'{failure}; its on_error = "block" denies the call'
        )
        line = f'PreToolUse hook `{command}` {failure}; the call was denied (on_error = "block")'
        assert _count(res.err, line) == 1, (line, res.err)


def test_a_bad_on_error_is_one_config_line_and_the_guard_fails_closed(
    server: FakeAnthropic, ws: Path
) -> None:
    _config(
        '[permissions]\nallow = ["bash"]\n\n'
        + _hook("PreToolUse", EXIT_7, on_error="deny")
        + _hook("Stop", "true", on_error="block")
    )
    server.script(MODEL, tool_use("bash", {"command": "touch pwned"}, id="toolu_1"), text("ok"))
    res = run_cli(server, ws, "-p", "go")
    assert res.code == 0, res.err
    problems = [line for line in res.err.splitlines() if "on_error" in line and "hook 1 of" in line]
    assert len(problems) == 2, res.err
    assert (
        'hook 1 of PreToolUse: on_error must be "warn" or "block", not \'deny\'; read as "block"'
        in problems[0]
    )
    assert (
        "hook 1 of Stop: on_error 'block' ignored (only a PreToolUse hook can deny; it warns)" in problems[1]
    )
    assert not (ws / "pwned").exists()


def test_a_post_tool_use_and_a_stop_block_are_said_on_stderr(server: FakeAnthropic, ws: Path) -> None:
    # The Stop hook blocks once (the model goes on), then lets the turn end.
    stop = "test -e s1 && exit 0; touch s1; echo run tests >&2; exit 2"
    _config(
        '[permissions]\nallow = ["bash"]\n\n'
        + _hook("PostToolUse", "echo lint failed >&2; exit 2")
        + _hook("Stop", stop)
    )
    server.script(
        MODEL, tool_use("bash", {"command": "echo hi"}, id="toolu_1"), text("first"), text("second")
    )
    res = run_cli(server, ws, "-p", "go")
    assert res.code == 0, res.err
    assert (
        _count(res.err, "PostToolUse hook `echo lint failed >&2; exit 2` blocked (exit 2): lint failed") == 1
    )
    assert _count(res.err, f"Stop hook `{stop}` blocked (exit 2): run tests") == 1, res.err
    # The model got both reasons.
    last = json.dumps(server.requests_for(MODEL)[-1].body["messages"])
    assert "[PostToolUse hook] lint failed" in last and "[Stop hook] run tests" in last
