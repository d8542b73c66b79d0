"""What a Runner is built from, in a few groups: the model it asks, the tools it offers and runs,
memory (through its port), the session log that owns its conversation, and its context window.

The Runtime builds them for the top-level agent; a sub-agent's are its parent's with the
read-only tools, no session and a depth one deeper (``RunnerDeps.for_subagent``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from app.agent.conversation.blocks import Message, TextBlock
from app.agent.memory_bridge.ports import ConversationLog, MemoryPort
from app.agent.model.provider import Provider
from app.agent.permissions.gate import Gate
from app.agent.tools import BUILTIN_TOOLS, ToolContext, ToolRegistry
from app.agent.turn.compactor import ContextSettings
from app.agent.turn.system_prompt import subagent_system

if TYPE_CHECKING:
    from app.agent.extensions.extensions import Extensions

__all__ = ["ContextSettings", "ModelSettings", "RunnerDeps", "ToolSettings"]


@dataclass
class ModelSettings:
    """The main model: who streams it, its name, a response's token bound, how many requests a
    Run may make, and its extended thinking (tokens of budget, below ``max_tokens``; 0: off)."""

    provider: Provider
    model: str
    max_tokens: int = 16000
    max_iterations: int = 50
    thinking_budget: int = 0


@dataclass
class ToolSettings:
    """The tools a Run offers and runs (``registry``: the built-ins, then the ready MCP
    servers'), what they may use (``ctx``), who decides whether a call runs (``gate``), the hooks
    around a call (``ext``), and the largest input a call may have (bytes of JSON)."""

    ctx: ToolContext
    gate: Gate
    registry: ToolRegistry = BUILTIN_TOOLS
    ext: Extensions | None = None
    input_bytes: int = 256 * 1024


@dataclass
class RunnerDeps:
    """A Runner's parts. ``session``: the log that owns the conversation (None: a conversation of
    its own, from ``conversation``); ``system``: the system prompt (None: built from the workspace
    and the index memory shows); ``depth``: 0 for the top-level agent, n for a sub-agent n levels
    down (a sub-agent never reaches memory, never compacts)."""

    model: ModelSettings
    tools: ToolSettings
    memory: MemoryPort
    session: ConversationLog | None = None
    context: ContextSettings = field(default_factory=ContextSettings)
    system: list[TextBlock] | None = None
    conversation: list[Message] = field(default_factory=list)
    depth: int = 0

    def for_subagent(self, model: str) -> RunnerDeps:
        """A sub-agent's parts (``task``): the main model (``model``, as it is now) with the
        read-only tools (MCP ones only where their server marks them read-only) and a fresh
        conversation; its reads count in the turn's receipt (the same memory port). It does not
        think: its answer is a tool's result, and its requests stay as quick as a search."""
        return RunnerDeps(
            model=dataclasses.replace(self.model, model=model, thinking_budget=0),
            tools=dataclasses.replace(self.tools, registry=self.tools.registry.read_only()),
            memory=self.memory,
            context=ContextSettings(offload_bytes=self.context.offload_bytes, results=self.context.results),
            system=subagent_system(self.tools.ctx.workspace),
            depth=self.depth + 1,
        )
