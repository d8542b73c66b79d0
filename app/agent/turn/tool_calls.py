"""A tool call of a Run: the gate, the hooks around it, and where it runs (a built-in tool, an MCP
server's tool, or a sub-agent for ``task``).

Kept apart from the Runner's loop: the Runner decides when calls run and what the model gets
back; this decides whether one may run and runs it. Hooks (``PreToolUse``/``PostToolUse``) run off
the event loop in their own processes; their time is part of the call's.
"""

from __future__ import annotations

import itertools
import json
from typing import TYPE_CHECKING, Any, Protocol

from app.agent.conversation.compaction import CHARS_PER_TOKEN
from app.agent.tools import READ_ONLY_TOOLS, TOOL_SPECS, ToolResult, run_tool
from app.agent.turn.events import MemorySubmitted, RunStop, ToolCallApproved
from app.agent.turn.system_prompt import subagent_system
from memory.text.lines import format_bytes

if TYPE_CHECKING:
    from app.agent.conversation.compaction import ResultStore
    from app.agent.extensions.extensions import Extensions
    from app.agent.memory_bridge.receipts import Receipt
    from app.agent.tools import ToolContext
    from app.agent.turn.events import OnEvent, RunEvent

__all__ = [
    "Calling",
    "asks",
    "bound_inputs",
    "input_limit",
    "result_block",
    "run_call",
    "run_task",
    "subagent_kwargs",
]

# What a refused input keeps: its fields that are this short (as JSON) as written, at most this
# many; a longer one becomes a note of its size. The tool_use block stays valid (its input an
# object) and small whatever the model sent.
KEPT_FIELD_CHARS = 200
KEPT_FIELDS = 20
KEPT_KEY_CHARS = 100


class SubRun(Protocol):
    receipt: Receipt

    async def run(self, user_text: str, on_event: OnEvent | None = None) -> RunStop: ...


class Calling(Protocol):
    """What a call needs of the Run making it (the Runner): never the Runner itself, which
    imports this module."""

    ext: Extensions | None
    tool_names: list[str]
    gate: Any
    depth: int
    tool_ctx: ToolContext
    provider: Any
    model: str
    max_iterations: int
    max_tokens: int
    offload_bytes: int
    tool_input_bytes: int
    results: ResultStore | None
    receipt: Receipt

    @property
    def session_id(self) -> str: ...

    def subagent(self) -> SubRun: ...


def _needs_gate(runner: Calling, name: str) -> bool:
    if runner.ext is not None and runner.ext.is_tool(name):
        return True  # every MCP tool asks like bash, unless a rule allows it
    return name in runner.tool_names and TOOL_SPECS[name].kind in ("write", "execute")


def asks(runner: Calling, name: str, tool_input: Any) -> bool:
    """Whether the gate will ask the person about this call (a gate that can ask says so through
    ``will_ask``); a call refused before the gate is never waiting."""
    if not isinstance(tool_input, dict) or not _needs_gate(runner, name):
        return False
    will_ask = getattr(runner.gate, "will_ask", None)
    if not callable(will_ask):
        return False
    try:
        return bool(will_ask(name, tool_input))
    except TypeError:  # a gate that asks by the tool's name alone
        return bool(will_ask(name))


async def run_call(
    runner: Calling,
    name: str,
    tool_input: Any,
    call_id: str,
    emit: OnEvent,
    waiting: bool = False,
    refused: str | None = None,
) -> tuple[ToolResult, bool]:
    """The call's result, and whether it was denied (by a rule, a hook or the person)."""
    ext = runner.ext
    mcp = ext is not None and ext.is_tool(name)
    if name not in runner.tool_names and not mcp:
        return ToolResult(content=f"unknown or unavailable tool {name!r}", is_error=True), False
    if not isinstance(tool_input, dict):
        return ToolResult(content="tool input must be a JSON object", is_error=True), False
    if refused is not None:
        return ToolResult(content=refused, is_error=True), False
    took, failed = 0.0, 0  # the call's hooks: seconds, and how many failed (its block shows both)
    if ext is not None and ext.hooks.hooks:
        pre = await ext.hook(
            "PreToolUse", session_id=runner.session_id, tool_name=name, tool_input=tool_input
        )
        took, failed = pre.duration, pre.failures
        if pre.blocked:
            reason = pre.reason or "blocked by a PreToolUse hook"
            return ToolResult(
                content=f"{name} was blocked by a hook: {reason}",
                is_error=True,
                hook_s=took,
                hook_failed=failed,
            ), True
    if _needs_gate(runner, name):
        decision = await runner.gate.decide(name, tool_input, call_id=call_id, depth=runner.depth)
        if not decision.allowed:
            return ToolResult(
                content=decision.reason or f"{name} was denied by the user",
                is_error=True,
                hook_s=took,
                hook_failed=failed,
            ), True
        if waiting:
            emit(ToolCallApproved(call_id, name, runner.depth))
    if name == "task":
        result = await run_task(runner, tool_input, emit)
    elif mcp and ext is not None:
        result = await ext.call(name, tool_input)
    else:
        result = await run_tool(name, tool_input, runner.tool_ctx)
    if ext is not None and ext.hooks.hooks:
        post = await ext.hook(
            "PostToolUse",
            session_id=runner.session_id,
            tool_name=name,
            tool_input=tool_input,
            tool_response={"content": result.content, "is_error": result.is_error},
        )
        took, failed = took + post.duration, failed + post.failures
        if post.blocked and post.reason:
            result = result.model_copy(
                update={"content": f"{result.content}\n\n[PostToolUse hook] {post.reason}"}
            )
    return (result.model_copy(update={"hook_s": took, "hook_failed": failed}) if took else result), False


def input_limit(max_bytes: int, context_window: int) -> int:
    """The largest input a tool call may have, in bytes of JSON: ``tool_input_max_bytes``, and
    never more than half the model's window (at the estimate's characters a token)."""
    return min(max_bytes, context_window * CHARS_PER_TOKEN // 2)


def _json_bytes(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace"))


def _kept_input(tool_input: Any) -> dict[str, Any]:
    """A refused input as the conversation keeps it: the short fields as written, a note of its
    size for each long one (an input that is not an object becomes an empty one)."""
    if not isinstance(tool_input, dict):
        return {}
    kept: dict[str, Any] = {}
    for key, value in itertools.islice(tool_input.items(), KEPT_FIELDS):
        size = _json_bytes(value)
        kept[str(key)[:KEPT_KEY_CHARS]] = value if size <= KEPT_FIELD_CHARS else f"[not kept: {size:,} bytes]"
    if len(tool_input) > KEPT_FIELDS:
        kept["[not kept]"] = f"{len(tool_input) - KEPT_FIELDS:,} more field(s)"
    return kept


def bound_inputs(blocks: list[dict[str, Any]], limit: int) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """A response's blocks with each tool call whose input passes ``limit`` bytes (as JSON) cut to
    ``_kept_input``, and for each such call (by id) the error result the model gets instead of
    running it: an input cannot be moved to disk like a result, and one that stayed would make
    every later request too large for the window."""
    out: list[dict[str, Any]] = []
    refused: dict[str, str] = {}
    for block in blocks:
        size = _json_bytes(block.get("input")) if block.get("type") == "tool_use" else 0
        if size <= limit:
            out.append(block)
            continue
        name = str(block.get("name", ""))[:KEPT_KEY_CHARS]
        refused[str(block.get("id", ""))] = (
            f"{name} was not run: its input is {size:,} bytes ({format_bytes(size)}), over the "
            f"{format_bytes(limit)} limit for one tool call's input (tool_input_max_bytes); the long fields "
            "were not kept. Do the work in smaller calls (a large file in parts)."
        )
        out.append({**block, "input": _kept_input(block.get("input"))})
    return out, refused


def subagent_kwargs(runner: Calling) -> dict[str, Any]:
    """A sub-agent's Runner arguments: the main model with read-only tools (MCP ones only where
    their server marks them read-only) and a fresh conversation; its runs never update memory."""
    return {
        "provider": runner.provider,
        "model": runner.model,
        "tool_ctx": runner.tool_ctx,
        "gate": runner.gate,
        "system": subagent_system(runner.tool_ctx.workspace),
        "max_iterations": runner.max_iterations,
        "max_tokens": runner.max_tokens,
        "is_subagent": True,
        "tools": sorted(READ_ONLY_TOOLS),
        "depth": runner.depth + 1,
        "shown_index": "",
        "offload_bytes": runner.offload_bytes,
        "results": runner.results,
        "ext": runner.ext,
    }


async def run_task(runner: Calling, tool_input: dict[str, Any], emit: OnEvent) -> ToolResult:
    """``task``: a sub-agent (``subagent_kwargs``) answers the prompt; its stop is the result."""
    prompt = tool_input.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return ToolResult(content="task needs a non-empty 'prompt'", is_error=True)
    sub = runner.subagent()
    sub.receipt = runner.receipt  # its reads are the turn's

    def forward(ev: RunEvent) -> None:
        # Everything the sub-agent does is shown, marked with its depth; its stop is its result.
        if not isinstance(ev, RunStop | MemorySubmitted):
            emit(ev)

    stop = await sub.run(prompt, forward)
    if stop.status != "completed":
        return ToolResult(
            content=f"the sub-agent did not finish: {stop.message or stop.status}", is_error=True
        )
    return ToolResult(content=stop.text or "(the sub-agent gave no text)")


def result_block(call_id: str, result: ToolResult) -> dict[str, Any]:
    """The ``tool_result`` block that answers call ``call_id`` in the conversation."""
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": result.content}
    if result.is_error:
        block["is_error"] = True
    return block
