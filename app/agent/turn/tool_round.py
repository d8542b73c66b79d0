"""A response's tool calls, run one after another: each is prepared (refused before anyone is
asked when it cannot run), gated and run by app/agent/turn/tool_calls.py; a large result goes to
disk (the lossless stage of compaction), and the results answer the calls in one user message. A
cancel keeps the results of the calls that completed; the conversation rules answer the rest.
"""

from __future__ import annotations

import asyncio

from app.agent.conversation.blocks import Block, Message, ToolUseBlock
from app.agent.memory_bridge.ports import MemoryPort
from app.agent.model.provider import Usage, UsageEvent
from app.agent.turn import tool_calls
from app.agent.turn.compactor import Compactor
from app.agent.turn.events import OnEvent, TodosChanged, ToolCallFinished, ToolCallStarted
from app.agent.turn.turn_log import TurnLog

__all__ = ["ToolRound"]


class ToolRound:
    """The tool calls of ``calling`` (the Runner), answered in its ``log``; ``memory`` hears of
    the cards ``read_memory`` read."""

    def __init__(
        self, calling: tool_calls.Calling, log: TurnLog, compactor: Compactor, memory: MemoryPort
    ) -> None:
        self.calling, self.log, self.compactor, self.memory = calling, log, compactor, memory
        self._ending: str | None = None  # the answer of a call of this round that ends the Run

    async def run(
        self, calls: list[ToolUseBlock], emit: OnEvent, oversized: dict[str, str], usage: Usage | None = None
    ) -> str | None:
        """``usage``: the Run's, which a tool's own model request (``web_search``'s) adds to.
        Returns the answer of a call that ends the Run (``ToolResult.ends_run``); None: go on."""
        results: list[Block] = []
        self._ending = None
        try:
            for call in calls:
                results.append(await self._one(call, emit, oversized.get(call.id), usage))
        except asyncio.CancelledError:
            # Completed calls keep their results; the session rules answer the rest.
            if results:
                await asyncio.shield(self.log.append(Message(role="user", content=results)))
            raise
        await self.log.append(Message(role="user", content=results))
        return self._ending

    async def _one(
        self, call: ToolUseBlock, emit: OnEvent, oversized: str | None, usage: Usage | None
    ) -> Block:
        runner, depth = self.calling, self.calling.depth
        name, tool_input, call_id = call.name, call.input, call.id
        # Refused before the gate (no one is asked): an oversized or bad input, a write the
        # tool would refuse.
        prepared = await tool_calls.prepare(runner, name, tool_input, oversized)
        emit(ToolCallStarted(call_id, name, tool_input, depth, prepared.waiting))
        # Its text comes scrubbed of lone surrogates from the tool layer (``call_tool``).
        result, denied = await tool_calls.run_call(runner, prepared, tool_input, call_id, emit)
        if result.card is not None:
            self.memory.saw(result.card)
        if result.ends_run is not None:
            self._ending = result.ends_run
        if result.usage is not None:
            # A model request the tool made: in the turn's usage, and in the cost under its model.
            spent = Usage(**result.usage.model_dump(exclude={"model"}))
            if usage is not None:
                usage.add(spent)
            emit(UsageEvent(spent, depth, model=result.usage.model))
        # What read_result gives back is already on disk and bounded in characters (not in
        # bytes: 24,000 CJK characters pass 32 KiB): storing it again would answer the model
        # with another stub instead of the part it asked for.
        tool = prepared.tool
        kept = await self.compactor.offload_new(result) if tool is None or tool.offloads else result
        # The person sees what the model sees: a stored result's head, tail and reference.
        emit(ToolCallFinished(call_id, name, kept, denied, depth, kept.view))
        if kept.todos is not None:  # todo_write: the list the person sees follows it
            emit(TodosChanged(kept.todos, depth))
        return tool_calls.result_block(call_id, kept)
