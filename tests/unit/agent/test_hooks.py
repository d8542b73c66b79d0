"""Hooks: loading and matchers, running with the event on stdin, exit 0 / 2 / other, the
timeout that stops the whole process group, and the project's hooks waiting for trust."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import pytest

from app.agent.config.project_trust import ProjectTrust
from app.agent.extensions.hooks import HookConfig, load_hooks, run_hooks


def _user(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(text)


def _project(ws: Path, text: str) -> None:
    (ws / ".PseudoClaude").mkdir(parents=True, exist_ok=True)
    (ws / ".PseudoClaude" / "settings.toml").write_text(text)


def _hooks(ws: Path, home: Path, text: str) -> HookConfig:
    _user(home, text)
    config = load_hooks(ws, home)
    assert config.problems == (), config.problems
    return config


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent to reap it has stopped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


async def test_the_event_arrives_as_json_on_stdin_in_the_workspace(ws: Path, isolated_home: Path) -> None:
    config = _hooks(
        ws,
        isolated_home,
        '[[hooks.PreToolUse]]\ncommand = "cat > event.json; pwd > cwd.txt"\n'
        '[[hooks.PostToolUse]]\ncommand = "cat > post.json"\n'
        '[[hooks.UserPromptSubmit]]\ncommand = "cat > prompt.json"\n',
    )
    outcome = await run_hooks(
        config, "PreToolUse", session_id="s1", tool_name="bash", tool_input={"command": "ls é"}
    )
    assert outcome.decision == "continue" and outcome.warnings == ()
    assert json.loads((ws / "event.json").read_text()) == {
        "session_id": "s1",
        "hook_event_name": "PreToolUse",
        "cwd": str(ws),
        "tool_name": "bash",
        "tool_input": {"command": "ls é"},
    }
    assert (ws / "cwd.txt").read_text().strip() == os.path.realpath(ws)
    await run_hooks(
        config,
        "PostToolUse",
        session_id="s1",
        tool_name="bash",
        tool_input={"command": "ls"},
        tool_response="a\nb\n",
    )
    post = json.loads((ws / "post.json").read_text())
    assert post["tool_response"] == "a\nb\n" and post["hook_event_name"] == "PostToolUse"
    await run_hooks(config, "UserPromptSubmit", session_id="s1", prompt="hello")
    prompt = json.loads((ws / "prompt.json").read_text())
    assert prompt["prompt"] == "hello" and "tool_name" not in prompt


async def test_exit_two_blocks_with_stderr_as_the_reason(ws: Path, isolated_home: Path) -> None:
    config = _hooks(
        ws,
        isolated_home,
        '[[hooks.PreToolUse]]\nmatcher = "bash(git push:*)"\n'
        "command = \"echo checking; echo 'pushing to main is not allowed' >&2; exit 2\"\n"
        '[[hooks.PreToolUse]]\ncommand = "touch second-ran"\n',
    )
    outcome = await run_hooks(
        config, "PreToolUse", session_id="s", tool_name="bash", tool_input={"command": "git push origin main"}
    )
    assert outcome.blocked and outcome.decision == "block"
    assert outcome.reason == "pushing to main is not allowed"
    assert outcome.runs[0].exit_code == 2 and outcome.runs[0].stdout == "checking\n"
    assert not (ws / "second-ran").exists()  # the first block ends the run
    assert outcome.duration > 0


async def test_a_user_prompt_hook_refuses_the_prompt(ws: Path, isolated_home: Path) -> None:
    config = _hooks(
        ws,
        isolated_home,
        "[[hooks.UserPromptSubmit]]\n"
        "command = \"grep -q secret && { echo 'the prompt names a secret' >&2; exit 2; }; exit 0\"\n",
    )
    refused = await run_hooks(config, "UserPromptSubmit", session_id="s", prompt="print the secret")
    assert refused.blocked and refused.reason == "the prompt names a secret"
    fine = await run_hooks(config, "UserPromptSubmit", session_id="s", prompt="hello")
    assert not fine.blocked


async def test_other_exit_codes_are_one_line_warnings(ws: Path, isolated_home: Path) -> None:
    config = _hooks(
        ws,
        isolated_home,
        '[[hooks.Stop]]\ncommand = "echo first problem >&2; echo more >&2; exit 3"\n'
        '[[hooks.Stop]]\ncommand = "touch ran"\n'
        "[[hooks.SessionStart]]\ncommand = \"echo 'branch: main'; exit 2\"\n",
    )
    outcome = await run_hooks(config, "Stop", session_id="s")
    assert not outcome.blocked
    assert outcome.warnings == (
        "Stop hook `echo first problem >&2; echo more >&2; exit 3` exited with 3: first problem",
    )
    assert (ws / "ran").exists()  # a warning does not stop the next hook
    # SessionStart cannot be refused: its exit 2 is a warning.
    start = await run_hooks(config, "SessionStart", session_id="s")
    assert not start.blocked and "exited with 2" in start.warnings[0]


async def test_exit_zero_stdout_is_context_for_prompt_and_session_start(
    ws: Path, isolated_home: Path
) -> None:
    config = _hooks(ws, isolated_home, "[[hooks.SessionStart]]\ncommand = \"echo 'on branch main'\"\n")
    outcome = await run_hooks(config, "SessionStart", session_id="s")
    assert outcome.context == "on branch main" and outcome.warnings == ()


async def test_the_timeout_kills_the_whole_group(ws: Path, isolated_home: Path) -> None:
    config = _hooks(
        ws,
        isolated_home,
        "[[hooks.PreToolUse]]\ntimeout = 0.5\n"
        'command = "echo $$ > pids; sleep 30 & echo $! >> pids; sleep 31; echo done"\n',
    )
    started = time.monotonic()
    outcome = await run_hooks(
        config, "PreToolUse", session_id="s", tool_name="bash", tool_input={"command": "x"}
    )
    assert time.monotonic() - started < 10
    assert not outcome.blocked
    assert outcome.runs[0].timed_out and outcome.runs[0].exit_code is None
    # The command is named on one short line.
    assert outcome.warnings == (
        "PreToolUse hook `echo $$ > pids; sleep 30 & echo $! >> pids; sleep 31; echo …` "
        'timed out after 0.5 s and was stopped; the call goes on (on_error = "warn")',
    )
    pids = [int(p) for p in (ws / "pids").read_text().split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 5
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not any(_alive(p) for p in pids)


async def test_what_a_finished_hook_left_running_is_stopped(ws: Path, isolated_home: Path) -> None:
    config = _hooks(ws, isolated_home, '[[hooks.Stop]]\ncommand = "sleep 30 & echo $! > pid; echo ok"\n')
    started = time.monotonic()
    outcome = await run_hooks(config, "Stop", session_id="s")
    assert time.monotonic() - started < 10  # not held by the background child's open stdout
    assert outcome.runs[0].exit_code == 0 and outcome.runs[0].stdout == "ok\n"
    pid = int((ws / "pid").read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not _alive(pid)


async def test_output_is_kept_bounded(ws: Path, isolated_home: Path) -> None:
    config = _hooks(
        ws, isolated_home, "[[hooks.Stop]]\ncommand = \"head -c 300000 /dev/zero | tr '\\\\0' x\"\n"
    )
    outcome = await run_hooks(config, "Stop", session_id="s")
    run = outcome.runs[0]
    assert run.exit_code == 0 and run.truncated and len(run.stdout) == 64 * 1024


async def test_cancelling_the_run_stops_the_hook(ws: Path, isolated_home: Path) -> None:
    config = _hooks(ws, isolated_home, '[[hooks.Stop]]\ncommand = "echo $$ > pid; sleep 30"\n')
    task = asyncio.create_task(run_hooks(config, "Stop", session_id="s"))
    deadline = time.monotonic() + 5
    while not (ws / "pid").exists() or not (ws / "pid").read_text().strip():
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pid = int((ws / "pid").read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not _alive(pid)


def test_matchers_select_the_tool_calls(ws: Path, isolated_home: Path) -> None:
    config = _hooks(
        ws,
        isolated_home,
        '[[hooks.PreToolUse]]\nmatcher = "bash(git push:*)"\ncommand = "a"\n'
        '[[hooks.PreToolUse]]\nmatcher = ["edit_file(src/**)", "write_file"]\ncommand = "b"\n'
        '[[hooks.PreToolUse]]\nmatcher = "mcp__demo"\ncommand = "c"\n'
        '[[hooks.PreToolUse]]\ncommand = "d"\n'
        '[[hooks.PostToolUse]]\nmatcher = "*"\ncommand = "e"\n',
    )

    def picked(name: str, tool_input: dict[str, object]) -> list[str]:
        return [h.command for h in config.select("PreToolUse", name, tool_input)]

    assert picked("bash", {"command": "git push origin"}) == ["a", "d"]
    assert picked("bash", {"command": "make && git push"}) == ["a", "d"]  # any command of the line
    assert picked("bash", {"command": "git pull"}) == ["d"]
    assert picked("bash", {"command": "echo $(git push)"}) == ["a", "d"]  # cannot see inside: runs
    assert picked("edit_file", {"path": "src/a.py"}) == ["b", "d"]
    assert picked("edit_file", {"path": "README.md"}) == ["d"]
    assert picked("write_file", {"path": "x"}) == ["b", "d"]
    assert picked("mcp__demo__echo", {}) == ["c", "d"]
    assert [h.command for h in config.select("PostToolUse", "read_file", {})] == ["e"]


def test_bad_hook_tables_are_refused_with_one_line(ws: Path, isolated_home: Path) -> None:
    _user(
        isolated_home,
        '[[hooks.PreToolUse]]\nmatchr = "bash"\ncommand = "a"\n'
        '[[hooks.PreToolUse]]\nmatcher = "nope(x)"\ncommand = "b"\n'
        '[[hooks.PreToolUse]]\ncommand = ""\n'
        '[[hooks.PreToolUse]]\ncommand = "c"\ntimeout = -1\n'
        '[[hooks.Stop]]\nmatcher = "bash"\ncommand = "d"\n'
        '[[hooks.OnLaunch]]\ncommand = "e"\n',
    )
    config = load_hooks(ws, isolated_home)
    assert [h.command for h in config.hooks] == ["d"]  # a matcher on Stop is ignored with a note
    assert len(config.problems) == 6
    assert all("\n" not in p and str(isolated_home / "config.toml") in p for p in config.problems)
    joined = " | ".join(config.problems)
    for expected in (
        "matchr",
        "'nope(x)'",
        "non-empty",
        "timeout",
        "matcher ignored (Stop has no tool)",
        "OnLaunch",
    ):
        assert expected in joined


async def test_untrusted_project_hooks_do_not_run(ws: Path, isolated_home: Path) -> None:
    _project(ws, '[[hooks.UserPromptSubmit]]\ncommand = "touch project-ran"\n')
    _user(isolated_home, '[[hooks.UserPromptSubmit]]\ncommand = "touch user-ran"\n')
    config = load_hooks(ws, isolated_home)
    assert [h.command for h in config.waiting] == ["touch project-ran"]
    assert config.pending_trust is not None and config.pending_trust.kind == "hooks"
    assert 'command = "touch project-ran"' in config.pending_trust.shown
    await run_hooks(config, "UserPromptSubmit", session_id="s", prompt="x")
    assert (ws / "user-ran").exists() and not (ws / "project-ran").exists()

    ProjectTrust(ws, isolated_home).trust("hooks", config.pending_trust.digest)
    trusted = load_hooks(ws, isolated_home)
    assert trusted.pending_trust is None
    assert [h.command for h in trusted.hooks] == ["touch user-ran", "touch project-ran"]
    await run_hooks(trusted, "UserPromptSubmit", session_id="s", prompt="x")
    assert (ws / "project-ran").exists()

    _project(ws, '[[hooks.UserPromptSubmit]]\ncommand = "touch project-ran; curl evil"\n')
    assert load_hooks(ws, isolated_home).pending_trust is not None  # a changed hook asks again
