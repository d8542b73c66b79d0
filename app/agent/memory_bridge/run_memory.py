"""Memory as a Run meets it (the Runner's ``MemoryPort``): the index the model has, the
``<memory-update>`` and ``<memory-recall>`` blocks at the head of a Run's user message
(app/agent/memory_bridge/heads.py), the turn's receipt (receipts.py) and the completed turn's
submission to the memory manager (turn_memory.py).
"""

from __future__ import annotations

import logging
from pathlib import Path

from app.agent.conversation.blocks import Message
from app.agent.memory_bridge.heads import memory_heads, recalled_in
from app.agent.memory_bridge.ports import IndexSource, RecallSource, TurnSink
from app.agent.memory_bridge.receipts import Receipt
from app.agent.memory_bridge.turn_memory import turn_for_memory
from app.agent.tools import BUILTIN_TOOLS, CardRead, ToolRegistry

__all__ = ["RunMemory"]

log = logging.getLogger(__name__)


class RunMemory:
    """One conversation's memory. ``index``: where the merged index comes from (None: memory
    shows the model nothing); ``manager``: where completed turns go (None: memory is off);
    ``recall``: cards beyond the index a message is about. ``shown_index``: the index the model
    has; ``conversation``: a resumed one, whose recall blocks named cards already; ``tools``: what
    says which paths a tool call touched."""

    def __init__(
        self,
        index: IndexSource | None = None,
        manager: TurnSink | None = None,
        recall: RecallSource | None = None,
        *,
        shown_index: str | None = None,
        conversation: list[Message] | None = None,
        tools: ToolRegistry = BUILTIN_TOOLS,
    ) -> None:
        self.index, self.manager, self.recall, self.tools = index, manager, recall, tools
        # In full in the system prompt at session start, then as update diffs at the head of later
        # Runs (the cached prefix stays valid).
        self.shown_index = (
            shown_index if shown_index is not None else index.merged_index() if index is not None else ""
        )
        # level/filename -> sha of each card recalled in this conversation
        self.recalled = recalled_in(conversation or [])
        self.current = Receipt(self.shown_index)  # the turn's receipt
        self._before: tuple[str, dict[str, str]] | None = None

    async def heads(self, text: str) -> tuple[str, str]:
        if self.index is None and self.recall is None:
            self.current = Receipt(self.shown_index)
            return "", ""
        heads = await memory_heads(self.index, self.recall, self.shown_index, text, self.recalled)
        self.shown_index, self.current = heads.shown_index, Receipt(heads.shown_index)
        if self.recall is not None:
            self.current.recalled = heads.recalled
        return heads.update, heads.recall

    def mark(self) -> None:
        self._before = (self.shown_index, dict(self.recalled))

    def undo(self) -> None:
        if self._before is not None:
            self.shown_index, self.recalled = self._before[0], dict(self._before[1])

    def saw(self, card: CardRead) -> None:
        self.current.saw(card)

    def receipt(self) -> dict[str, list[str]]:
        return self.current.record()

    async def submit(self, messages: list[Message], session: str, workspace: Path) -> str | None:
        if self.manager is None:
            return None
        turn = turn_for_memory(messages, session, workspace=workspace, tools=self.tools)
        try:
            job = await self.manager.submit(turn)
        except OSError as e:
            # Memory never blocks an answer; the failure is logged for `memory doctor`.
            log.error("could not spool the memory job: %s", e)
            return None
        return job.id if job is not None else None
