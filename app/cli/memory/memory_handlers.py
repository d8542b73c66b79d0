"""The requests ``memory serve-mcp`` answers, over this workspace's ``ServedMemory``: the tools
and the index resource, as the ``mcp`` SDK's low-level server calls them.

Loaded with the SDK, only when the server runs (app/cli/memory/serve_mcp.py builds the server).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from app.services.served_memory import INDEX_URI, ServedMemory
from memory.text.names import quote

__all__ = ["GcPause", "MemoryHandlers", "client_name"]

INDEX_NAME = "memory-index"
INDEX_MIME = "text/markdown"
INDEX_DESCRIPTION = "The merged index of this workspace's memory, as a PseudoClaude session's prompt gets it."


class GcPause:
    """The collector off while a call builds its answer: with 10,000 cards each collection in the
    middle of an index walked every card object built so far (a third of the first index call);
    the objects a call leaves behind are few and collected after it. Calls may overlap: the
    collector is back on when the last one ends, if it was on before the first."""

    def __init__(self) -> None:
        self.running = 0
        self.was_enabled = False

    @contextlib.asynccontextmanager
    async def __call__(self) -> AsyncIterator[None]:
        # One event loop runs the handlers: the count needs no lock.
        if self.running == 0:
            self.was_enabled = gc.isenabled()
            gc.disable()
        self.running += 1
        try:
            yield
        finally:
            self.running -= 1
            if self.running == 0 and self.was_enabled:
                gc.enable()


def client_name(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The name the client gave in its ``clientInfo`` (the initialize request's, or a request
    envelope's), or None when it gave none."""
    params = ctx.session.client_params
    return params.client_info.name if params is not None else None


class MemoryHandlers:
    """The server's four requests over ``served``; each call builds its answer with the collector
    paused (``GcPause``)."""

    def __init__(self, served: ServedMemory) -> None:
        self.served = served
        self.paused = GcPause()

    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t.name,
                    description=t.description,
                    input_schema=t.input_schema,
                    annotations=_annotations(t.read_only),
                )
                for t in self.served.tools()
            ]
        )

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        async with self.paused():
            answer = await self.served.call(
                params.name, dict(params.arguments or {}), client=client_name(ctx)
            )
        if answer is None:
            raise MCPError(code=types.INVALID_PARAMS, message=_unknown_tool(params.name, self.served))
        return types.CallToolResult(content=[types.TextContent(text=answer.text)], is_error=answer.is_error)

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=INDEX_URI,
                    name=INDEX_NAME,
                    title="PseudoClaude memory index",
                    mime_type=INDEX_MIME,
                    description=INDEX_DESCRIPTION,
                )
            ]
        )

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if params.uri != INDEX_URI:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"no resource {_shown(params.uri)}: this server has only {INDEX_URI}",
            )
        async with self.paused():
            text = await self.served.index()
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=INDEX_URI, mime_type=INDEX_MIME, text=text)]
        )


def _annotations(read_only: bool) -> types.ToolAnnotations:
    if read_only:
        return types.ToolAnnotations(read_only_hint=True, open_world_hint=False)
    # remember only adds a card (or a job held for review): nothing is changed or removed.
    return types.ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    )


def _shown(value: str) -> str:
    """A name the client sent, in an error it gets back: one short line, redacted, quoted."""
    return quote(value, 80)


def _unknown_tool(name: str, served: ServedMemory) -> str:
    known = ", ".join(t.name for t in served.tools())
    if name == "remember":
        return (
            f"unknown tool 'remember': this server was started without --allow-remember, so it only reads "
            f"memory (tools: {known})"
        )
    return f"unknown tool {_shown(name)} (tools: {known})"
