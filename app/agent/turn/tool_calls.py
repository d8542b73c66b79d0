"""A tool call of a Run: looked up in the Run's tool registry, its input validated by the tool's
model, refused before anyone is asked when it cannot run, then the hooks around it, the gate, and
the tool itself (``task``'s sub-agent is the Run's, given to the call through its context).

Kept apart from the Runner's loop: the Runner decides when calls run and what the model gets
back; this decides whether one may run and runs it. Hooks (``PreToolUse``/``PostToolUse``) run off
the event loop in their own processes; their time is part of the call's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from app.agent.conversation.blocks import (
    Block,
    ImageBlock,
    JsonObject,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from app.agent.conversation.compaction import CHARS_PER_TOKEN
from app.agent.tools.base import MAX_REASON_CHARS, ToolError, ToolInput, ToolResult
from app.agent.tools.registry import call_tool
from app.agent.tools.tool import AnyTool
from app.agent.turn.events import MemorySubmitted, RunStop, ToolCallApproved
from memory.text.lines import format_bytes, one_line

if TYPE_CHECKING:
    from app.agent.conversation.compaction import ResultStore
    from app.agent.extensions.extensions import Extensions
    from app.agent.permissions.gate import Gate
    from app.agent.tools.base import ToolContext
    from app.agent.tools.registry import ToolRegistry
    from app.agent.turn.events import OnEvent, RunEvent

__all__ = [
    "Calling",
    "Prepared",
    "bound_inputs",
    "input_limit",
    "prepare",
    "result_block",
    "run_call",
]

log = logging.getLogger(__name__)

# What a refused input keeps: its fields that are this short (as JSON) as written, at most this
# many; a longer one becomes a note of its size. The tool_use block stays valid (its input an
# object) and small whatever the model sent.
KEPT_FIELD_CHARS = 200
KEPT_FIELDS = 20
KEPT_KEY_CHARS = 100


class SubRun(Protocol):
    async def run(self, prompt: str, on_event: OnEvent | None = None) -> RunStop: ...


class Calling(Protocol):
    """What a call needs of the Run making it (the Runner): never the Runner itself, which
    imports this module."""

    ext: Extensions | None
    tools: ToolRegistry
    gate: Gate
    depth: int
    tool_ctx: ToolContext
    provider: Any
    model: str
    max_iterations: int
    max_tokens: int
    offload_bytes: int
    tool_input_bytes: int
    results: ResultStore | None

    @property
    def session_id(self) -> str: ...

    def subagent(self) -> SubRun: ...


@dataclass(frozen=True)
class Prepared:
    """A call before it runs: its tool and validated input, or why it is refused before anyone
    is asked (``refused``; ``denied``: by the permission mode, not for what it would do), and
    whether the gate will ask the person (``waiting``)."""

    tool: AnyTool | None
    args: ToolInput | None
    refused: str | None = None
    waiting: bool = False
    denied: bool = False


async def prepare(runner: Calling, name: str, tool_input: object, oversized: str | None = None) -> Prepared:
    """Look the call up and validate its input; refuse it before the gate when it cannot run
    (no such tool, an input over the bound or not valid, a write the tool would refuse whatever
    the person answers), so no one is ever asked about a call that will not run."""
    tool = runner.tools.get(name)
    if tool is None:
        return Prepared(None, None, runner.tools.missing(name))
    if oversized is not None:
        return Prepared(tool, None, oversized)
    if not isinstance(tool_input, dict):
        return Prepared(tool, None, "tool input must be a JSON object")
    try:
        args = tool.parse(tool_input)
    except ToolError as e:
        return Prepared(tool, None, one_line(e, MAX_REASON_CHARS) or f"{name}: the input is not valid")
    planning = runner.gate.plan_refusal(tool)
    if planning is not None:  # plan mode says why before any check of what the call would do
        return Prepared(tool, None, planning, denied=True)
    try:
        # The check may stat the disk (where a path really is): in a worker thread.
        await asyncio.to_thread(tool.precheck, args, runner.tool_ctx)
    except ToolError as e:
        return Prepared(tool, None, one_line(e, MAX_REASON_CHARS) or f"{name} was refused")
    except Exception as e:  # the tool itself reports whatever else goes wrong, when it runs
        log.debug("pre-check of %s failed: %s", name, e)
    return Prepared(tool, args, waiting=runner.gate.will_ask(tool, args))


async def run_call(
    runner: Calling, call: Prepared, tool_input: object, call_id: str, emit: OnEvent
) -> tuple[ToolResult, bool]:
    """The call's result, and whether it was denied (by a rule, a hook or the person)."""
    tool, args = call.tool, call.args
    if tool is None or args is None:
        return ToolResult(content=call.refused or "the call was refused", is_error=True), call.denied
    ext = runner.ext
    took, failed = 0.0, 0  # the call's hooks: seconds, and how many failed (its block shows both)
    if ext is not None and ext.hooks.hooks:
        pre = await ext.hook(
            "PreToolUse", session_id=runner.session_id, tool_name=tool.name, tool_input=tool_input
        )
        took, failed = pre.duration, pre.failures
        if pre.blocked:
            reason = pre.reason or "blocked by a PreToolUse hook"
            denied = ToolResult(content=f"{tool.name} was blocked by a hook: {reason}", is_error=True)
            return denied.model_copy(update={"hook_s": took, "hook_failed": failed}), True
    decision = await runner.gate.decide(tool, args, ctx=runner.tool_ctx, call_id=call_id, depth=runner.depth)
    if not decision.allowed:
        reason = decision.reason or f"{tool.name} was denied by the user"
        denied = ToolResult(content=reason, is_error=True, hook_s=took, hook_failed=failed)
        return denied, True
    if call.waiting:
        emit(ToolCallApproved(call_id, tool.name, runner.depth))
    ctx = dataclasses.replace(runner.tool_ctx, subagent=lambda prompt: run_task(runner, prompt, emit))
    result = await call_tool(tool, args, ctx)
    if ext is not None and ext.hooks.hooks:
        post = await ext.hook(
            "PostToolUse",
            session_id=runner.session_id,
            tool_name=tool.name,
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


def _kept_input(tool_input: JsonObject) -> JsonObject:
    """A refused input as the conversation keeps it: the short fields as written, a note of its
    size for each long one."""
    kept: JsonObject = {}
    for key, value in itertools.islice(tool_input.items(), KEPT_FIELDS):
        size = _json_bytes(value)
        kept[str(key)[:KEPT_KEY_CHARS]] = value if size <= KEPT_FIELD_CHARS else f"[not kept: {size:,} bytes]"
    if len(tool_input) > KEPT_FIELDS:
        kept["[not kept]"] = f"{len(tool_input) - KEPT_FIELDS:,} more field(s)"
    return kept


def bound_inputs(blocks: list[Block], limit: int) -> tuple[list[Block], dict[str, str]]:
    """A response's blocks with each tool call whose input passes ``limit`` bytes (as JSON) cut to
    ``_kept_input``, and for each such call (by id) the error result the model gets instead of
    running it: an input cannot be moved to disk like a result, and one that stayed would make
    every later request too large for the window."""
    out: list[Block] = []
    refused: dict[str, str] = {}
    for block in blocks:
        size = _json_bytes(block.input) if isinstance(block, ToolUseBlock) else 0
        if not isinstance(block, ToolUseBlock) or size <= limit:
            out.append(block)
            continue
        name = block.name[:KEPT_KEY_CHARS]
        refused[block.id] = (
            f"{name} was not run: its input is {size:,} bytes ({format_bytes(size)}), over the "
            f"{format_bytes(limit)} limit for one tool call's input (tool_input_max_bytes); the long fields "
            "were not kept. Do the work in smaller calls (a large file in parts)."
        )
        out.append(block.model_copy(update={"input": _kept_input(block.input)}))
    return out, refused


async def run_task(runner: Calling, prompt: str, emit: OnEvent) -> ToolResult:
    """``task``'s sub-agent (the Runner's ``subagent``) answers the prompt; its stop is the result.
    Its reads count in the turn's receipt."""
    sub = runner.subagent()

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


def result_block(call_id: str, result: ToolResult) -> ToolResultBlock:
    """The ``tool_result`` block that answers call ``call_id`` in the conversation: its text, or
    its text then its images as content blocks."""
    is_error = True if result.is_error else None
    if not result.images:
        return ToolResultBlock(tool_use_id=call_id, content=result.content, is_error=is_error)
    content: list[TextBlock | ImageBlock] = [TextBlock(text=result.content), *result.images]
    return ToolResultBlock(tool_use_id=call_id, content=list(content), is_error=is_error)
