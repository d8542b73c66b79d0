"""What the MCP client tells the rest of the program, free of the SDK's types (so reading it
costs no import of the SDK)."""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Literal

from app.agent.tools.schema import JsonObject
from app.agent.tools.tool import ToolParam

__all__ = [
    "McpError",
    "McpPrompt",
    "McpTool",
    "PromptArgument",
    "ServerPrompt",
    "ServerStatus",
    "ServerTool",
    "State",
    "unavailable",
]

# starting -> ready | failed; ready -> failed (it exited, wrote garbage, ...) | stopped (close()).
# A restart starts over at starting. A project's server not trusted yet is "waiting for trust"
# (the extensions' word: the client never has it).
State = Literal["starting", "ready", "failed", "stopped"]
# Tool descriptions go into every request: one server's essay must not crowd the context.
MAX_DESCRIPTION_CHARS = 2048


class McpError(Exception):
    """An MCP request that did not give an answer; ``str(err)`` is one line saying why."""


def unavailable(server: str, state: State | str, reason: str = "") -> str:
    """One line: why a server cannot answer now."""
    said = {"starting": "is still starting", "failed": "failed", "stopped": "is stopped"}.get(
        state, f"is {state}"
    )
    return f"the MCP server {server!r} {said}" + (f": {reason}" if reason else "")


@dataclass(frozen=True)
class ServerTool:
    """A tool as its server lists it."""

    name: str
    description: str
    input_schema: JsonObject
    read_only: bool = False


@dataclass(frozen=True)
class PromptArgument:
    name: str
    description: str = ""
    required: bool = False


@dataclass(frozen=True)
class ServerPrompt:
    """A prompt as its server lists it."""

    name: str
    description: str = ""
    arguments: tuple[PromptArgument, ...] = ()


@dataclass(frozen=True)
class McpTool:
    """An MCP tool as the model is offered it: ``name`` is ``mcp__SERVER__TOOL``."""

    name: str
    server: str
    tool: str
    description: str
    input_schema: JsonObject
    read_only: bool = False

    def api(self) -> ToolParam:
        """The Messages API's tool definition (``name``, ``description``, ``input_schema``)."""
        schema = copy.deepcopy(self.input_schema)
        # The API takes an object schema only; a server that gives none takes any object.
        if schema.get("type") != "object":
            schema = {"type": "object", **{k: v for k, v in schema.items() if k != "type"}}
        return {
            "name": self.name,
            "description": self.description[:MAX_DESCRIPTION_CHARS],
            "input_schema": schema,
        }


@dataclass(frozen=True)
class McpPrompt:
    """A server's prompt as a command: ``command`` is ``mcp__SERVER__PROMPT`` (shown with a
    leading ``/``); :meth:`McpManager.get_prompt` takes ``server`` and ``name``."""

    command: str
    server: str
    name: str
    description: str = ""
    arguments: tuple[PromptArgument, ...] = ()


@dataclass(frozen=True)
class ServerStatus:
    """One server for ``/mcp``: where it comes from, how it runs (``describe``: redacted), its
    state and, when it failed, one line of why; its tools (API names) and prompts."""

    name: str
    source: str
    transport: str
    describe: str
    state: State
    reason: str = ""
    tools: tuple[str, ...] = ()
    prompts: tuple[str, ...] = ()
    pid: int | None = field(default=None, compare=False)
