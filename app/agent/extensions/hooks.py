"""Hooks: the person's shell commands run at points of a session.

Configured in the same files as the permission rules (``config_layers``), as
``[[hooks.EVENT]]`` tables::

    [[hooks.PreToolUse]]
    matcher = "bash(git push:*)"      # a rule as in permissions; a list of them; none: every tool
    command = "./scripts/check-push"  # run by /bin/sh -c in the workspace
    timeout = 30                      # seconds, default 60
    on_error = "block"                # PreToolUse only: a broken guard denies (default "warn": allows)

Events: ``PreToolUse`` and ``PostToolUse`` (their matcher picks the tool calls: a hook runs when
its rule names the call as a deny rule would, so a ``bash`` pattern fires when any command of
the line matches, or when the line cannot be fully read), ``UserPromptSubmit``, ``Stop`` and
``SessionStart`` (no tool: a matcher there is ignored, with a note).

A run gets the event as JSON on stdin (``session_id``, ``hook_event_name``, ``cwd``, and
``tool_name`` + ``tool_input`` for tool events, ``tool_response`` for PostToolUse, ``prompt`` for
UserPromptSubmit), runs in its own process group, and is killed with that group at its timeout.
When its shell exits, whatever it left running in its group is stopped too. Exit 0 goes on
(stdout of UserPromptSubmit and SessionStart hooks is ``context`` for the model); exit 2 blocks,
its stderr being the reason; any other exit, a timeout or a failure to start is a failure: a
one-line warning naming the event, the command and the exit code (127: "not found") or the
timeout, in ``HookOutcome.warnings`` for the face to show each time. A ``PreToolUse`` hook whose
``on_error`` is ``"block"`` denies the call when it fails (a broken guard never lets a call
through). Hooks of one event run one after the other in the files' order (user, project,
local); the first that blocks ends the run. The project's hooks (and a local file's that git
tracks) run only once the person trusted exactly their tables (kind ``hooks``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Required, TypedDict

import tomlkit
from pydantic import BaseModel, ConfigDict, JsonValue

from app.agent.config.layers import ConfigLayer, PendingTrust, Scope, is_trusted, read_layers
from app.agent.config.project_trust import ProjectTrust
from app.agent.permissions.rules import Rule, RuleError, parse_rule, rule_touches
from memory.text.terminal import strip_terminal

__all__ = [
    "EVENTS",
    "TOOL_EVENTS",
    "HookConfig",
    "HookEvent",
    "HookFailureMode",
    "HookInput",
    "HookOutcome",
    "HookRun",
    "HookSpec",
    "load_hooks",
    "run_hooks",
]

HookEvent = Literal["PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart"]
EVENTS: tuple[HookEvent, ...] = ("PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop", "SessionStart")
TOOL_EVENTS: frozenset[str] = frozenset({"PreToolUse", "PostToolUse"})
# Events whose exit 2 can stop something; a SessionStart hook cannot refuse a session.
_BLOCKING_EVENTS: frozenset[str] = frozenset({"PreToolUse", "PostToolUse", "UserPromptSubmit", "Stop"})
DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 3600.0
OUTPUT_LIMIT = 64 * 1024  # bytes kept of each of stdout and stderr
# After the hook's shell exits and its group is stopped: how long the pipes may stay open (a
# process that left the group with setsid may hold them).
_DRAIN_SECONDS = 2.0
_KEYS = frozenset({"matcher", "command", "timeout", "on_error"})
# What a failed hook (not exit 2) does: "warn" lets the event go on; "block" (PreToolUse only)
# denies the call.
HookFailureMode = Literal["warn", "block"]
NOT_FOUND_EXIT = 127  # /bin/sh's exit when the command is not found


class HookSpec(BaseModel):
    model_config = ConfigDict(frozen=True)

    event: HookEvent
    command: str
    matcher: tuple[Rule, ...] = ()  # empty: every tool
    timeout: float = DEFAULT_TIMEOUT
    on_error: HookFailureMode = "warn"
    scope: Scope
    source: str  # the file as shown

    @property
    def label(self) -> str:
        """The command on one short line, for warnings and the tool block."""
        line = " ".join(self.command.split())
        return line if len(line) <= 60 else line[:59] + "…"

    def selects(
        self, tool_name: str | None, tool_input: dict[str, JsonValue] | None, workspace: Path
    ) -> bool:
        if self.event not in TOOL_EVENTS or not self.matcher:
            return True
        if tool_name is None:
            return False
        return any(rule_touches(r, tool_name, tool_input, workspace) for r in self.matcher)


class HookConfig(BaseModel):
    """The hooks in force, what was refused (``problems``), and the project's hooks that wait for
    trust (``waiting``; ``pending_trust`` to ask about them)."""

    model_config = ConfigDict(frozen=True)

    workspace: Path
    hooks: tuple[HookSpec, ...] = ()
    waiting: tuple[HookSpec, ...] = ()
    problems: tuple[str, ...] = ()
    pending_trust: PendingTrust | None = None

    def select(
        self,
        event: HookEvent,
        tool_name: str | None = None,
        tool_input: dict[str, JsonValue] | None = None,
    ) -> tuple[HookSpec, ...]:
        """The hooks that run for this event (and tool call), in order."""
        return tuple(
            h for h in self.hooks if h.event == event and h.selects(tool_name, tool_input, self.workspace)
        )


class HookInput(TypedDict, total=False):
    """The JSON a hook reads on stdin, with Claude Code's keys: the tool's for a tool event,
    ``tool_response`` for PostToolUse, ``prompt`` for UserPromptSubmit."""

    session_id: Required[str]
    hook_event_name: Required[HookEvent]
    cwd: Required[str]
    tool_name: str | None
    tool_input: dict[str, JsonValue]  # as the model sent it
    tool_response: object
    prompt: str


@dataclass(frozen=True)
class HookRun:
    hook: HookSpec
    exit_code: int | None  # None: it did not finish (timeout) or did not start
    stdout: str
    stderr: str
    duration: float  # seconds
    timed_out: bool = False
    truncated: bool = False  # stdout or stderr was longer than OUTPUT_LIMIT
    error: str | None = None  # why it did not start

    def failure(self, event: HookEvent) -> str | None:
        """Why this run failed, on one line (None: exit 0, or an exit 2 that blocks)."""
        if self.error is not None:
            return f"could not start: {self.error}"
        if self.timed_out:
            return f"timed out after {self.hook.timeout:g} s and was stopped"
        if self.exit_code == 0 or (self.exit_code == 2 and event in _BLOCKING_EVENTS):
            return None
        if self.exit_code == NOT_FOUND_EXIT:
            return "not found (exit 127)"
        why = _first_line(self.stderr)
        return f"exited with {self.exit_code}" + (f": {why}" if why else "")


@dataclass(frozen=True)
class HookOutcome:
    event: HookEvent
    blocked: bool = False
    reason: str = ""  # the blocking hook's stderr: for the model (PreToolUse) or the person
    context: str = ""  # stdout of exit-0 UserPromptSubmit / SessionStart hooks
    warnings: tuple[str, ...] = ()  # one line per hook that failed, in order
    duration: float = 0.0  # seconds, all runs together
    runs: tuple[HookRun, ...] = ()
    blocker: str = ""  # the blocking hook's label

    @property
    def failures(self) -> int:
        return len(self.warnings)

    @property
    def decision(self) -> Literal["continue", "block"]:
        return "block" if self.blocked else "continue"


# -- loading ----------------------------------------------------------------------------------


def _matcher(value: object, where: str) -> tuple[Rule, ...]:
    items: list[object]
    if value is None:
        return ()
    if isinstance(value, str):
        if value.strip() in ("", "*"):
            return ()
        items = [value]
    elif isinstance(value, list) and value:
        items = list(value)
    else:
        raise RuleError(f"{where}: matcher must be a rule or a list of rules")
    rules: list[Rule] = []
    for item in items:
        try:
            rules.append(parse_rule(item))
        except RuleError as e:
            raise RuleError(f"{where}: matcher {item!r} refused: {e}") from None
    return tuple(rules)


def _timeout(value: object, where: str) -> float:
    if value is None:
        return DEFAULT_TIMEOUT
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 < value <= MAX_TIMEOUT
    ):
        raise RuleError(f"{where}: timeout must be a number of seconds above 0 and at most {MAX_TIMEOUT:.0f}")
    return float(value)


def _on_error(value: object, event: str, where: str, problems: list[str]) -> HookFailureMode:
    """The hook's ``on_error``, each refusal said on one line. On a PreToolUse hook a value that
    is not one of the two is read as "block" (a guard with a typo fails closed); on another
    event, where a failure can only warn, any value but "warn" is ignored."""
    if value is None or value == "warn":
        return "warn"
    if event != "PreToolUse":
        problems.append(f"{where}: on_error {value!r} ignored (only a PreToolUse hook can deny; it warns)")
        return "warn"
    if value != "block":
        problems.append(f'{where}: on_error must be "warn" or "block", not {value!r}; read as "block"')
    return "block"


def _hooks_of(layer: ConfigLayer, problems: list[str]) -> list[HookSpec]:
    if layer.error and layer.error not in problems:
        problems.append(layer.error)
    table = layer.data.get("hooks")
    if table is None:
        return []
    if not isinstance(table, dict):
        problems.append(f"{layer.label}: hooks must be tables [[hooks.EVENT]]; ignored")
        return []
    out: list[HookSpec] = []
    for event, entries in table.items():
        if event not in EVENTS:
            problems.append(
                f"{layer.label}: unknown hook event {event!r} ignored (known: {', '.join(EVENTS)})"
            )
            continue
        if not isinstance(entries, list):
            problems.append(f"{layer.label}: hooks.{event} must be [[hooks.{event}]] tables; ignored")
            continue
        for n, entry in enumerate(entries, 1):
            where = f"{layer.label}: hook {n} of {event}"
            try:
                if not isinstance(entry, dict):
                    raise RuleError(f"{where}: not a table")
                unknown = sorted(set(entry) - _KEYS)
                if unknown:
                    raise RuleError(
                        f"{where}: unknown key(s) {', '.join(unknown)} (matcher, command, timeout, on_error)"
                    )
                command = entry.get("command")
                if not isinstance(command, str) or not command.strip() or "\x00" in command:
                    raise RuleError(f"{where}: command must be a non-empty string")
                matcher = _matcher(entry.get("matcher"), where)
                if matcher and event not in TOOL_EVENTS:
                    problems.append(f"{where}: matcher ignored ({event} has no tool)")
                    matcher = ()
                out.append(
                    HookSpec(
                        event=event,
                        command=command,
                        matcher=matcher,
                        timeout=_timeout(entry.get("timeout"), where),
                        on_error=_on_error(entry.get("on_error"), event, where, problems),
                        scope=layer.scope,
                        source=layer.label,
                    )
                )
            except RuleError as e:
                problems.append(f"{e}; hook ignored")
    return out


def shared_hooks_text(layers: Iterable[ConfigLayer]) -> str:
    """What the person is shown (and trusts) for the project's hooks: each shared file's
    ``hooks`` tables as TOML, under the file's name."""
    parts: list[str] = []
    for layer in layers:
        table = layer.data.get("hooks")
        if layer.shared and isinstance(table, dict) and table:
            parts.append(f"# {layer.label}\n" + tomlkit.dumps({"hooks": table}))
    return "\n".join(parts)


def load_hooks(
    workspace: Path,
    home: Path | None = None,
    *,
    trust: ProjectTrust | None = None,
    layers: tuple[ConfigLayer, ...] | None = None,
) -> HookConfig:
    """The hooks of the three files. Blocking (small files): call it off an event loop."""
    workspace = Path(workspace)
    layers = layers if layers is not None else read_layers(workspace, home)
    problems: list[str] = []
    hooks: list[HookSpec] = []
    shared: list[HookSpec] = []
    for layer in layers:
        (shared if layer.shared else hooks).extend(_hooks_of(layer, problems))
    pending: PendingTrust | None = None
    waiting: tuple[HookSpec, ...] = ()
    shown = shared_hooks_text(layers)
    if shared:
        wanted = PendingTrust.of("hooks", shown)
        if is_trusted(workspace, home, wanted, trust):
            hooks.extend(shared)
            # The files' order: user, project, local.
            order = {"user": 0, "project": 1, "local": 2}
            hooks.sort(key=lambda h: order.get(h.scope, 3))
        else:
            pending, waiting = wanted, tuple(shared)
            problems.append(f"{len(shared)} hook(s) of the project wait for your trust")
    return HookConfig(
        workspace=workspace,
        hooks=tuple(hooks),
        waiting=waiting,
        problems=tuple(problems),
        pending_trust=pending,
    )


# -- running ----------------------------------------------------------------------------------


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _read_bounded(stream: asyncio.StreamReader | None) -> tuple[bytes, bool]:
    if stream is None:
        return b"", False
    buf = bytearray()
    truncated = False
    while True:
        chunk = await stream.read(65536)
        if not chunk:
            return bytes(buf), truncated
        room = OUTPUT_LIMIT - len(buf)
        if room > 0:
            buf += chunk[:room]
        if len(chunk) > max(room, 0):
            truncated = True  # the rest is read and dropped, so the hook never blocks on a full pipe


async def _feed(proc: asyncio.subprocess.Process, data: bytes) -> None:
    if proc.stdin is None:
        return
    try:
        proc.stdin.write(data)
        await proc.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # a hook need not read its input
    finally:
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.close()


async def _exited(proc: asyncio.subprocess.Process, timeout: float) -> bool:
    """Whether the hook's shell exits within ``timeout``. Polled: ``Process.wait()`` also waits
    for its pipes, which a background child it left may hold open for ever."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while proc.returncode is None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        await asyncio.sleep(min(delay, remaining))
        delay = min(delay * 2, 0.05)
    return True


async def _run_one(hook: HookSpec, payload: bytes, workspace: Path) -> HookRun:
    started = time.monotonic()
    env = dict(os.environ)
    env["PSEUDOCLAUDE_PROJECT_DIR"] = str(workspace)
    env["CLAUDE_PROJECT_DIR"] = str(workspace)  # hook scripts written for Claude Code read this
    try:
        proc = await asyncio.create_subprocess_exec(
            "/bin/sh",
            "-c",
            hook.command,
            cwd=str(workspace),
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as e:
        return HookRun(hook, None, "", "", time.monotonic() - started, error=e.strerror or str(e))
    feed = asyncio.create_task(_feed(proc, payload))
    out = asyncio.create_task(_read_bounded(proc.stdout))
    err = asyncio.create_task(_read_bounded(proc.stderr))
    try:
        timed_out = not await _exited(proc, hook.timeout)
        _kill_group(proc.pid)
        done, _ = await asyncio.wait({out, err, feed}, timeout=_DRAIN_SECONDS)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), _DRAIN_SECONDS)  # reaps it
    finally:
        # Cancelled (the turn was stopped) or done: nothing of the hook outlives this call.
        _kill_group(proc.pid)
        for task in (feed, out, err):
            if not task.done():
                task.cancel()
    stdout, t1 = out.result() if out in done and not out.cancelled() else (b"", False)
    stderr, t2 = err.result() if err in done and not err.cancelled() else (b"", False)
    return HookRun(
        hook,
        None if timed_out else proc.returncode,
        stdout.decode("utf-8", "replace"),
        stderr.decode("utf-8", "replace"),
        time.monotonic() - started,
        timed_out=timed_out,
        truncated=t1 or t2,
    )


def _first_line(text: str) -> str:
    """The first non-blank line of a hook's output, as it can be shown (no terminal escapes)."""
    for line in strip_terminal(text).splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


def _warning(event: HookEvent, hook: HookSpec, failure: str) -> str:
    """The line the person is shown for a failed hook (a PreToolUse one says what became of the call)."""
    line = f"{event} hook `{hook.label}` {failure}"
    if event != "PreToolUse":
        return line
    return line + (
        '; the call was denied (on_error = "block")'
        if hook.on_error == "block"
        else '; the call goes on (on_error = "warn")'
    )


def _hook_input(
    config: HookConfig,
    event: HookEvent,
    session_id: str,
    tool_name: str | None,
    tool_input: dict[str, JsonValue] | None,
    tool_response: object,
    prompt: str | None,
) -> bytes:
    """The event as the JSON line a hook reads on stdin."""
    payload: HookInput = {"session_id": session_id, "hook_event_name": event, "cwd": str(config.workspace)}
    if event in TOOL_EVENTS:
        payload["tool_name"] = tool_name
        payload["tool_input"] = tool_input or {}
    if event == "PostToolUse":
        payload["tool_response"] = tool_response
    if event == "UserPromptSubmit":
        payload["prompt"] = prompt if prompt is not None else ""
    return (json.dumps(payload, ensure_ascii=False, default=str) + "\n").encode("utf-8", "surrogatepass")


def _block_reason(event: HookEvent, hook: HookSpec, run: HookRun, failure: str | None) -> str:
    """Why this run ends the event's hooks with a block; "" when it does not: a failed
    PreToolUse hook whose ``on_error`` is "block", or an exit 2 of an event that can block."""
    if failure is not None:
        if event == "PreToolUse" and hook.on_error == "block":
            return (
                f"the PreToolUse hook `{hook.label}` failed: {failure}; "
                'its on_error = "block" denies the call'
            )
        return ""
    if run.exit_code == 0:
        return ""
    return run.stderr.strip() or f"blocked by the hook `{hook.label}` (exit 2, no reason given)"


async def run_hooks(
    config: HookConfig,
    event: HookEvent,
    *,
    session_id: str,
    tool_name: str | None = None,
    tool_input: dict[str, JsonValue] | None = None,
    tool_response: object = None,
    prompt: str | None = None,
) -> HookOutcome:
    """Run the hooks selected for this event, one after the other; the first exit 2 blocks (for
    events that can block) and ends the run, as does a failed PreToolUse hook whose ``on_error``
    is "block". Never raises for a hook's failure: each is a line of ``warnings``."""
    hooks = config.select(event, tool_name, tool_input)
    if not hooks:
        return HookOutcome(event=event)
    data = _hook_input(config, event, session_id, tool_name, tool_input, tool_response, prompt)
    runs: list[HookRun] = []
    warnings: list[str] = []
    context: list[str] = []
    started = time.monotonic()
    for hook in hooks:
        run = await _run_one(hook, data, config.workspace)
        runs.append(run)
        failure = run.failure(event)
        if failure is not None:
            warnings.append(_warning(event, hook, failure))
        elif run.exit_code == 0 and event in ("UserPromptSubmit", "SessionStart") and run.stdout.strip():
            context.append(run.stdout.strip())
        reason = _block_reason(event, hook, run, failure)
        if reason:
            return HookOutcome(
                event=event,
                blocked=True,
                reason=reason,
                context="\n".join(context),
                warnings=tuple(warnings),
                duration=time.monotonic() - started,
                runs=tuple(runs),
                blocker=hook.label,
            )
    return HookOutcome(
        event=event,
        context="\n".join(context),
        warnings=tuple(warnings),
        duration=time.monotonic() - started,
        runs=tuple(runs),
    )
