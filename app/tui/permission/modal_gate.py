"""The full-screen app's permission gate: a writing or executing tool call asks in a modal.

``ModalGate.decide`` builds a preview of what the call would do (off the event loop: it reads the
file an ``edit_file`` changes), hands a ``PermissionRequest`` to ``ask`` (the App pushes the
``PermissionModal`` and awaits its answer) and maps the answer: ``once`` allows this call,
``session`` allows this tool until the session changes, ``always`` allows it and the App saves the
rule the person confirmed (see ``permission_window``; the window also names the parts of a command
no proposed rule covers, see ``rule_suggestions``), ``deny`` returns a denied result and the
turn goes on. An MCP tool (``mcp__…``) asks like ``bash``: a server's tool may do anything. A denial's note (the person's reason) is cleaned again here — one line, bounded,
no control characters — and reaches the model in that result's text.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal

from app.agent.permissions.suggestions import suggest
from app.agent.tools.base import ToolError
from app.agent.tools.gate import PermissionDecision
from app.agent.tools.paths import resolve
from app.agent.tools.specs import needs_permission
from memory.text.terminal import line_count, split_lines, strip_terminal
from widgets.dialogs.permission import PermissionRequest, clean_note

PREVIEW_LINES = 40
PREVIEW_READ_MAX = 1_000_000  # a larger file is not diffed: the preview says so
MCP_PREVIEW_CHARS = 4_000  # an MCP call's arguments as JSON, cut beyond this
MCP_PREFIX = "mcp__"

PreviewKind = Literal["diff", "text", "command"]
# PermissionRequest -> a PermissionAnswer, or just "once" | "session" | "deny"
Ask = Callable[[Any], Awaitable[Any]]


def _cut(lines: list[str], limit: int = PREVIEW_LINES) -> str:
    if len(lines) <= limit:
        return "\n".join(lines)
    return "\n".join([*lines[:limit], f"… {len(lines) - limit} more line(s)"])


def _read_text(workspace: Path, raw: str) -> str | None:
    """The file's text if it is a regular file inside the workspace and small enough."""
    try:
        r = resolve(workspace, raw)
    except ToolError:
        return None
    try:
        st = os.stat(r.real)
    except OSError:
        return None
    if not os.path.isfile(r.real) or st.st_size > PREVIEW_READ_MAX:
        return None
    try:
        with open(r.real, "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def build_preview(workspace: Path, name: str, tool_input: dict[str, Any]) -> tuple[str, str, PreviewKind]:
    """(summary, preview, kind) for a call: blocking (reads a file), so run it in a thread."""
    path = str(tool_input.get("path", ""))
    if name == "bash":
        command = str(tool_input.get("command", ""))
        return "run a shell command in the workspace", strip_terminal(command), "command"
    if name == "write_file":
        content = str(tool_input.get("content", ""))
        before = _read_text(workspace, path)
        what = "overwrite" if before is not None else "create"
        lines = split_lines(content)
        count = line_count(content)  # the tool block's count too
        summary = f"{what} {path} ({count} line(s), {len(content.encode('utf-8', 'replace'))} bytes)"
        return strip_terminal(summary, keep_newlines=False), strip_terminal(_cut(lines)), "text"
    if name == "edit_file":
        old, new = str(tool_input.get("old_string", "")), str(tool_input.get("new_string", ""))
        before = _read_text(workspace, path)
        summary = strip_terminal(f"edit {path}", keep_newlines=False)
        if before is None or old not in before:
            # The tool itself will refuse or report; show what was asked.
            diff = [f"- {line}" for line in split_lines(old)] + [f"+ {line}" for line in split_lines(new)]
            return summary, strip_terminal(_cut(diff)), "diff"
        after = before.replace(old, new) if tool_input.get("replace_all") else before.replace(old, new, 1)
        diff = list(
            difflib.unified_diff(
                before.splitlines(), after.splitlines(), f"a/{path}", f"b/{path}", lineterm=""
            )
        )
        return summary, strip_terminal(_cut(diff, PREVIEW_LINES * 2)), "diff"
    if name.startswith(MCP_PREFIX):
        return _mcp_preview(name, tool_input)
    args = ", ".join(f"{k}={v!r}" for k, v in tool_input.items())
    return strip_terminal(f"{name}({args})"[:200], keep_newlines=False), "", "text"


def _mcp_preview(name: str, tool_input: dict[str, Any]) -> tuple[str, str, PreviewKind]:
    """An MCP call: its server and tool, and its arguments as JSON (bounded)."""
    server, _, tool = name[len(MCP_PREFIX) :].partition("__")
    summary = strip_terminal(f"MCP server {server}: call the tool {tool or '?'}", keep_newlines=False)
    try:
        text = json.dumps(tool_input, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        text = repr(tool_input)
    if len(text) > MCP_PREVIEW_CHARS:
        text = text[:MCP_PREVIEW_CHARS] + f"\n… {len(text) - MCP_PREVIEW_CHARS} more character(s)"
    return summary, strip_terminal(_cut(split_lines(text))), "text"


def asks_person(name: str) -> bool:
    """The calls the window asks about: writing and executing tools, and every MCP tool."""
    return needs_permission(name) or name.startswith(MCP_PREFIX)


class ModalGate:
    """PermissionGate for the App. ``ask`` shows the modal and returns its answer."""

    def __init__(self, workspace: Path, ask: Ask) -> None:
        self.workspace = workspace
        self.ask = ask
        self.session_allowed: set[str] = set()

    def reset(self) -> None:
        """A new session: "allow for the session" answers are forgotten."""
        self.session_allowed.clear()

    def will_ask(self, name: str) -> bool:
        """Whether ``decide`` would ask about a call of ``name`` now."""
        return asks_person(name) and name not in self.session_allowed

    async def decide(
        self, name: str, tool_input: dict[str, Any], *, call_id: str = "", depth: int = 0
    ) -> PermissionDecision:
        if not asks_person(name) or name in self.session_allowed:
            return PermissionDecision(True)
        summary, preview, kind = await asyncio.to_thread(build_preview, self.workspace, name, tool_input)
        proposed = await asyncio.to_thread(suggest, name, tool_input, self.workspace)
        request = PermissionRequest(
            call_id=call_id,
            name=name,
            summary=summary,
            preview=preview,
            preview_kind=kind,
            rule=", ".join(proposed.rules),
            still_asks="; ".join(proposed.still_asks),
        )
        answer = await self.ask(request)
        choice = getattr(answer, "choice", answer)
        if choice == "always":  # the App saved the rule (or said why not): this call runs
            return PermissionDecision(True)
        if choice == "session":
            self.session_allowed.add(name)
            return PermissionDecision(True)
        if choice == "once":
            return PermissionDecision(True)
        note = clean_note(str(getattr(answer, "note", "") or ""))
        if note:
            return PermissionDecision(False, f"{name} was denied by the user, who said: {note}")
        return PermissionDecision(False, f"{name} was denied by the user")
