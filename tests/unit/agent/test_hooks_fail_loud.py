"""A failing hook is said each time and never fails open in silence: the line for each way a hook
fails, ``on_error`` (validated; "block" denies a PreToolUse call), the note sink of the
extensions, the count of failures a call's tool block shows and the time it reads."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from app.agent.extensions.extensions import Extensions
from app.agent.extensions.hooks import load_hooks, run_hooks
from widgets.chat.tool_block import ToolBlock


def _user(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


async def test_a_command_not_found_is_said_so_and_a_failure_carries_no_terminal_escapes(
    ws: Path, isolated_home: Path
) -> None:
    _user(
        isolated_home,
        '[[hooks.Stop]]\ncommand = "pc-no-such-command-4711"\n\n'
        "[[hooks.Stop]]\ncommand = \"printf '\\\\033]0;owned\\\\007\\\\033[2Jbad\\\\n' >&2; exit 5\"\n",
    )
    outcome = await run_hooks(load_hooks(ws, isolated_home), "Stop", session_id="s")
    assert outcome.failures == 2 and not outcome.blocked
    assert outcome.warnings[0] == "Stop hook `pc-no-such-command-4711` not found (exit 127)"
    assert outcome.warnings[1].endswith("exited with 5: bad") and "\x1b" not in outcome.warnings[1]


async def test_on_error_block_makes_a_broken_guard_deny_and_warn_lets_it_go_on(
    ws: Path, isolated_home: Path
) -> None:
    _user(
        isolated_home,
        '[[hooks.PreToolUse]]\ncommand = "exit 9"\non_error = "warn"\n\n'
        '[[hooks.PreToolUse]]\ncommand = "exit 7"\non_error = "block"\n\n'
        '[[hooks.PreToolUse]]\ncommand = "touch never"\n',
    )
    config = load_hooks(ws, isolated_home)
    assert config.problems == () and [h.on_error for h in config.hooks] == ["warn", "block", "warn"]
    outcome = await run_hooks(
        config, "PreToolUse", session_id="s", tool_name="bash", tool_input={"command": "ls"}
    )
    assert outcome.blocked and outcome.blocker == "exit 7" and outcome.failures == 2
    assert (
        outcome.reason
        == 'the PreToolUse hook `exit 7` failed: exited with 7; its on_error = "block" denies the call'
    )
    assert outcome.warnings == (
        'PreToolUse hook `exit 9` exited with 9; the call goes on (on_error = "warn")',
        'PreToolUse hook `exit 7` exited with 7; the call was denied (on_error = "block")',
    )
    assert not (ws / "never").exists()  # the first block ends the run
    # Exit 2 keeps its meaning: a block with its reason, not a failure.
    _user(isolated_home, '[[hooks.PreToolUse]]\ncommand = "echo no >&2; exit 2"\non_error = "block"\n')
    two = await run_hooks(
        load_hooks(ws, isolated_home),
        "PreToolUse",
        session_id="s",
        tool_name="bash",
        tool_input={"command": "ls"},
    )
    assert two.blocked and two.reason == "no" and two.failures == 0


@pytest.mark.parametrize(
    ("event", "value", "problem", "mode"),
    [
        ("PreToolUse", "deny", 'on_error must be "warn" or "block", not \'deny\'; read as "block"', "block"),
        ("PreToolUse", 1, 'on_error must be "warn" or "block", not 1; read as "block"', "block"),
        ("Stop", "block", "on_error 'block' ignored (only a PreToolUse hook can deny; it warns)", "warn"),
        (
            "SessionStart",
            "nope",
            "on_error 'nope' ignored (only a PreToolUse hook can deny; it warns)",
            "warn",
        ),
    ],
)
def test_a_bad_on_error_is_one_config_line_and_the_hook_is_kept(
    ws: Path, isolated_home: Path, event: str, value: object, problem: str, mode: str
) -> None:
    _user(isolated_home, f'[[hooks.{event}]]\ncommand = "true"\non_error = {value!r}\n'.replace("'", '"'))
    config = load_hooks(ws, isolated_home)
    assert [h.on_error for h in config.hooks] == [mode]
    assert config.problems == (f"{isolated_home / 'config.toml'}: hook 1 of {event}: {problem}",)


async def test_the_extensions_say_each_failure_each_time_and_a_stop_block(
    ws: Path, isolated_home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    _user(
        isolated_home,
        '[[hooks.UserPromptSubmit]]\ncommand = "exit 1"\n\n'
        '[[hooks.Stop]]\ncommand = "echo not yet >&2; exit 2"\n',
    )
    ext = Extensions(ws, isolated_home)
    ext.load()
    said: list[tuple[str, bool]] = []
    ext.on_hook_note = lambda line, failed: said.append((line, failed))
    for _ in range(2):
        await ext.hook("UserPromptSubmit", session_id="s", prompt="hi")
    await ext.hook("Stop", session_id="s")
    assert said == [("UserPromptSubmit hook `exit 1` exited with 1", True)] * 2 + [
        ("Stop hook `echo not yet >&2; exit 2` blocked (exit 2): not yet", False)
    ]
    # Without a face to say it, the log has it: never silent.
    ext.on_hook_note = None
    with caplog.at_level(logging.WARNING, logger="app.agent.extensions.extensions"):
        await ext.hook("UserPromptSubmit", session_id="s", prompt="hi")
    assert "UserPromptSubmit hook `exit 1` exited with 1" in caplog.text


def test_the_tool_block_reads_true_for_fast_and_failed_hooks() -> None:
    block = ToolBlock("c1", "bash")
    block.set_result("ok", is_error=False, denied=False, hook_s=0.012, hook_failed=1)
    assert "hooks 12ms (1 failed)" in block.header_text and "0.0s" not in block.header_text
    block.set_result("ok", is_error=False, denied=False, hook_s=1.26)
    assert block.header_text.endswith("hooks 1.3s")
