"""The agent tools (the model's contract is in specs.py) and the permission gates.

``run_tool`` never raises for bad input or a failing tool: it returns a ``ToolResult`` with
``is_error=True`` and a one-line reason. Only cancellation (``asyncio.CancelledError``)
propagates. ``task`` (a sub-agent) is run by the runner, not here.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

from app.agent.tools.base import (
    MAX_REASON_CHARS,
    CardRead,
    MemoryReader,
    ResultView,
    ToolContext,
    ToolError,
    ToolResult,
    clean_text,
    opt_int,
    quote,
    req_str,
)
from app.agent.tools.files import (
    DEFAULT_READ_LINES,
    NOTE_RESERVE,
    check_write,
    edit_file,
    list_files,
    read_file,
    write_file,
)
from app.agent.tools.gate import AllowListGate, PermissionDecision, PermissionGate, parse_allow_tools
from app.agent.tools.search import grep
from app.agent.tools.search_memory import search_memory
from app.agent.tools.shell import run_bash
from app.agent.tools.specs import READ_ONLY_TOOLS, TOOL_SPECS, ToolKind, ToolSpec, api_tools, needs_permission
from memory.constants import INDEX_FILE
from memory.store.store import StoreError
from memory.text.lines import one_line

__all__ = [
    "READ_ONLY_TOOLS",
    "TOOL_SPECS",
    "AllowListGate",
    "CardRead",
    "PermissionDecision",
    "PermissionGate",
    "ResultView",
    "ToolContext",
    "ToolKind",
    "ToolResult",
    "ToolSpec",
    "api_tools",
    "needs_permission",
    "parse_allow_tools",
    "refusal",
    "run_tool",
]

log = logging.getLogger(__name__)

_LEVELS = ("project", "user")


async def _read_memory(ctx: ToolContext, inp: dict[str, Any]) -> ToolResult:
    level = req_str(inp, "level")
    filename = req_str(inp, "filename")
    offset = opt_int(inp, "offset", minimum=0)
    limit = opt_int(inp, "limit", minimum=1)
    if level not in _LEVELS:
        raise ToolError(f"level must be 'project' or 'user', not {quote(level)}")
    if ctx.memory is None:
        raise ToolError("memory is not available")
    memory = ctx.memory

    def run() -> ToolResult:
        # One worker thread for the read, the page and the count (SQLite: never on the loop).
        try:
            read = memory.read_memory_text(level, filename)
        except (StoreError, ValueError, OSError) as e:
            raise ToolError(str(e) or f"cannot read {quote(filename)} from the {level} store") from None
        text = read.text
        if not text.strip():
            content = (
                f"[the {level} store has no notes]"
                if filename == INDEX_FILE
                else "[this note has an empty body]"
            )
        else:
            content = page_lines(text, offset, limit, ctx.max_output_chars, filename)
        if filename == INDEX_FILE:
            return ToolResult(content=content)
        _count_read(memory, level, filename)  # only once the read gave the model something
        # Stale as the stores found it for this text, whichever page of it the model asked for.
        return ToolResult(content=content, card=CardRead(level=level, filename=filename, stale=read.stale))

    return await asyncio.to_thread(run)


def _count_read(memory: MemoryReader, level: str, filename: str) -> None:
    try:
        memory.record_read(level, filename)
    except (
        Exception
    ) as e:  # the stores' record_read never raises; whatever stands in for it must not fail a read
        log.warning("could not count a read of %s/%s: %s", level, filename, e)


async def _read_result(ctx: ToolContext, inp: dict[str, Any]) -> ToolResult:
    rid = req_str(inp, "id").strip()
    offset = opt_int(inp, "offset", minimum=0)
    limit = opt_int(inp, "limit", minimum=1)
    if ctx.results is None:
        raise ToolError("no stored tool results: this conversation has no session")
    try:
        text = await asyncio.to_thread(ctx.results.read, rid, offset, limit)
    except (ValueError, OSError) as e:
        raise ToolError(str(e) or f"cannot read stored result {quote(rid)}") from None
    return ToolResult(content=text if text else "[the stored result is empty]")


def page_lines(text: str, offset: int | None, limit: int | None, max_chars: int, what: str) -> str:
    """Lines ``offset``.. (1-based, at most ``limit``) of ``text`` within ``max_chars``; a cut
    output ends by naming the offset to read on from, so every line of any text is reachable."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    total = len(lines)
    first = max(offset or 1, 1)
    if first > total:
        raise ToolError(f"offset {first} is past the end: {quote(what)} has {total} lines")
    want = limit or DEFAULT_READ_LINES  # the same default as read_file's
    budget = max(max_chars - NOTE_RESERVE, 1)
    out: list[str] = []
    used = 0
    for line in lines[first - 1 : first - 1 + want]:
        if out and used + len(line) + 1 > budget:
            break
        if not out and len(line) > budget:
            # One line longer than the whole budget: shown cut, and reading goes on after it.
            line = line[:budget] + f" … [line cut at {budget} of {len(line)} characters]"
        out.append(line)
        used += len(line) + 1
    last = first + len(out) - 1
    if first == 1 and last == total and used <= budget:
        return text  # the whole text, exactly as stored
    if last >= total:
        return "\n".join(out)
    return "\n".join([*out, f"[showing lines {first}–{last} of {total}; use offset={last + 1} to read on]"])


_SYNC = {
    "read_file": read_file,
    "list_files": list_files,
    "write_file": write_file,
    "edit_file": edit_file,
}


async def _grep(ctx: ToolContext, inp: dict[str, Any]) -> ToolResult:
    """grep in a worker thread; a cancelled call tells the thread to stop (it checks between lines)."""
    cancel = threading.Event()
    try:
        return await asyncio.to_thread(grep, ctx, inp, cancel)
    except asyncio.CancelledError:
        cancel.set()
        raise


async def refusal(name: str, tool_input: object, ctx: ToolContext) -> str | None:
    """The one-line reason a writing call will be refused whatever the person answers, or None.

    The runner asks this before the permission gate: a write into ``.git/``, a memory store or
    outside the workspace (through a symlink too) is refused without asking anyone. Path checks
    stat the disk, so they run in a worker thread."""
    if name not in ("write_file", "edit_file") or not isinstance(tool_input, dict):
        return None
    try:
        await asyncio.to_thread(check_write, ctx, name, tool_input)
    except ToolError as e:
        return one_line(e, MAX_REASON_CHARS) or f"{name} was refused"
    except Exception as e:  # the tool itself reports whatever else goes wrong, when it runs
        log.debug("pre-check of %s failed: %s", name, e)
    return None


async def run_tool(name: str, tool_input: object, ctx: ToolContext) -> ToolResult:
    """Run one tool call; bad input and failures come back as ``is_error`` results."""
    result = await _run_tool(name, tool_input, ctx)
    # Last line of defence: a lone surrogate (an undecodable file name, a model's "\\ud800")
    # cannot be encoded for the API or the session log, so it never leaves a tool.
    content = clean_text(result.content)
    return result if content == result.content else result.model_copy(update={"content": content})


async def _run_tool(name: str, tool_input: object, ctx: ToolContext) -> ToolResult:
    if name == "task":
        return ToolResult(content="task is run by the runner as a sub-agent, not by run_tool", is_error=True)
    if name not in TOOL_SPECS:
        return ToolResult(
            content=f"unknown tool {quote(str(name))}; available tools: {', '.join(TOOL_SPECS)}",
            is_error=True,
        )
    if not isinstance(tool_input, dict):
        return ToolResult(content=f"{name}: the input must be a JSON object", is_error=True)
    try:
        if name == "bash":
            if ctx.checkpoints is not None:  # what bash changes is not checkpointed: the turn says it ran
                await asyncio.to_thread(ctx.checkpoints.ran_bash)
            return await run_bash(ctx, tool_input)
        if name == "read_memory":
            return await _read_memory(ctx, tool_input)
        if name == "read_result":
            return await _read_result(ctx, tool_input)
        if name == "search_memory":
            return await search_memory(ctx, tool_input)
        if name == "grep":
            return await _grep(ctx, tool_input)
        # File tools do blocking I/O (a big tree, a 10 MB file): keep it off the event loop.
        return await asyncio.to_thread(_SYNC[name], ctx, tool_input)
    except ToolError as e:
        return ToolResult(content=one_line(e, MAX_REASON_CHARS) or f"{name} failed", is_error=True)
    except Exception as e:  # the contract: a failing tool is a result, never an exception
        return ToolResult(
            content=one_line(f"{name} failed: {type(e).__name__}: {e}", MAX_REASON_CHARS), is_error=True
        )
