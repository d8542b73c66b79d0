"""The agent tools of DESIGN.md §9 and the permission gates.

``run_tool`` never raises for bad input or a failing tool: it returns a ``ToolResult`` with
``is_error=True`` and a one-line reason. Only cancellation (``asyncio.CancelledError``)
propagates. ``task`` (a sub-agent) is run by the runner, not here.
"""

from __future__ import annotations

import asyncio
from typing import Any

from memory.store import StoreError

from .base import ToolContext, ToolError, ToolResult, one_line, quote, req_str
from .files import edit_file, grep, list_files, read_file, write_file
from .gate import AllowListGate, PermissionDecision, PermissionGate, parse_allow_tools
from .shell import run_bash
from .specs import READ_ONLY_TOOLS, TOOL_SPECS, ToolKind, ToolSpec, api_tools, needs_permission

__all__ = [
    "READ_ONLY_TOOLS",
    "TOOL_SPECS",
    "AllowListGate",
    "PermissionDecision",
    "PermissionGate",
    "ToolContext",
    "ToolKind",
    "ToolResult",
    "ToolSpec",
    "api_tools",
    "needs_permission",
    "parse_allow_tools",
    "run_tool",
]

_LEVELS = ("project", "user")


async def _read_memory(ctx: ToolContext, inp: dict[str, Any]) -> ToolResult:
    level = req_str(inp, "level")
    filename = req_str(inp, "filename")
    if level not in _LEVELS:
        raise ToolError(f"level must be 'project' or 'user', not {quote(level)}")
    if ctx.memory is None:
        raise ToolError("memory is not available")
    try:
        text = await asyncio.to_thread(ctx.memory.read_memory, level, filename)
    except (StoreError, ValueError, OSError) as e:
        raise ToolError(str(e) or f"cannot read {quote(filename)} from the {level} store") from None
    if filename == "MEMORY.md" and not text.strip():
        return ToolResult(content=f"[the {level} store has no notes]")
    if not text.strip():
        return ToolResult(content="[this note has an empty body]")
    limit = max(ctx.max_output_chars, 1)
    if len(text) > limit:
        text = text[:limit] + f"\n[output truncated: showing {limit} of {len(text)} characters]"
    return ToolResult(content=text)


_SYNC = {
    "read_file": read_file,
    "list_files": list_files,
    "grep": grep,
    "write_file": write_file,
    "edit_file": edit_file,
}


async def run_tool(name: str, tool_input: object, ctx: ToolContext) -> ToolResult:
    """Run one tool call; bad input and failures come back as ``is_error`` results."""
    if name == "task":
        return ToolResult(content="task is run by the runner as a sub-agent, not by run_tool", is_error=True)
    if name not in TOOL_SPECS:
        return ToolResult(
            content=f"unknown tool {quote(str(name))}; available tools: {', '.join(TOOL_SPECS)}", is_error=True
        )
    if not isinstance(tool_input, dict):
        return ToolResult(content=f"{name}: the input must be a JSON object", is_error=True)
    try:
        if name == "bash":
            return await run_bash(ctx, tool_input)
        if name == "read_memory":
            return await _read_memory(ctx, tool_input)
        # File tools do blocking I/O (a big tree, a 10 MB file): keep it off the event loop.
        return await asyncio.to_thread(_SYNC[name], ctx, tool_input)
    except ToolError as e:
        return ToolResult(content=one_line(e) or f"{name} failed", is_error=True)
    except Exception as e:  # the contract: a failing tool is a result, never an exception
        return ToolResult(content=one_line(f"{name} failed: {type(e).__name__}: {e}"), is_error=True)
