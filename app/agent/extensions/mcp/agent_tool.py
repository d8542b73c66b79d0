"""An MCP server's tool as one of the agent's tools: offered with the server's own input schema,
called through the manager, previewed as its server, tool and arguments. It asks like ``bash``
(a server's tool may do anything) unless a rule allows it; a sub-agent gets it only when its
server marks it read-only."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pydantic import ConfigDict, model_validator

from app.agent.extensions.mcp.manager import McpManager
from app.agent.extensions.mcp.model import McpTool
from app.agent.extensions.mcp.names import PREFIX
from app.agent.extensions.mcp.results import with_images
from app.agent.tools.base import ToolContext, ToolInput, ToolResult
from app.agent.tools.previews import cut_lines
from app.agent.tools.schema import JsonObject
from app.agent.tools.tool import Preview, Tool, ToolKind, ToolParam
from memory.text.terminal import split_lines, strip_terminal

__all__ = ["McpAgentTool", "McpArguments"]

MCP_PREVIEW_CHARS = 4_000  # an MCP call's arguments as JSON, cut beyond this


class McpArguments(ToolInput):
    """Any JSON object: the server checks its own arguments. Kept as sent, nulls included."""

    model_config = ConfigDict(frozen=True, extra="allow")

    @model_validator(mode="before")
    @classmethod
    def _null_is_absent(cls, data: Any) -> Any:
        return data  # a null is an argument the server may mean

    def arguments(self) -> JsonObject:
        """The arguments as the MCP wire takes them (JSON as the model sent it)."""
        return dict(self.model_extra or {})


class McpAgentTool(Tool[McpArguments]):
    Input = McpArguments
    kind = ToolKind.EXECUTE

    def __init__(self, tool: McpTool, manager: McpManager) -> None:
        self.name, self.description = tool.name, tool.description
        self._tool, self._manager = tool, manager

    @property
    def read_only(self) -> bool:
        return self._tool.read_only  # the server's ``readOnlyHint``

    def input_schema(self) -> JsonObject:
        return self.api()["input_schema"]

    def api(self) -> ToolParam:
        return self._tool.api()

    async def run(self, args: McpArguments, ctx: ToolContext) -> ToolResult:
        """The server's answer (never raises but for cancellation); its images as images."""
        r = await self._manager.call(self.name, args.arguments())
        if not r.parts:
            return ToolResult(content=r.content, is_error=r.is_error)
        # Pillow decodes and scales each image: off the event loop.
        text, images = await asyncio.to_thread(with_images, r.parts)
        return ToolResult(content=text, images=images, is_error=r.is_error)

    def preview(self, args: McpArguments, ctx: ToolContext) -> Preview:
        """Its server and tool, and its arguments as JSON (bounded)."""
        server, _, tool = self.name[len(PREFIX) :].partition("__")
        summary = f"MCP server {server}: call the tool {tool or '?'}"
        shown = args.arguments()
        try:
            text = json.dumps(shown, indent=2, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            text = repr(shown)
        if len(text) > MCP_PREVIEW_CHARS:
            text = text[:MCP_PREVIEW_CHARS] + f"\n… {len(text) - MCP_PREVIEW_CHARS} more character(s)"
        return Preview(
            summary=strip_terminal(summary, keep_newlines=False),
            body=strip_terminal(cut_lines(split_lines(text))),
            kind="text",
        )
