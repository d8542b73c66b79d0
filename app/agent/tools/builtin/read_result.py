"""``read_result {id, offset?, limit?}``: a tool result kept on disk, a part at a time."""

from __future__ import annotations

import asyncio

from pydantic import Field

from app.agent.tools.base import ToolContext, ToolError, ToolInput, ToolResult, quote
from app.agent.tools.fields import Count, FilledText, Line
from app.agent.tools.tool import Tool, ToolKind


class ReadResultInput(ToolInput):
    id: FilledText = Field(description="The stored result's id, e.g. `r0123456789abcdef`.")
    offset: Line | None = Field(None, description="First line to read, 1-based (default 1).")
    limit: Count | None = Field(None, description="How many lines to read (default 2000).")


class ReadResult(Tool[ReadResultInput]):
    name = "read_result"
    Input = ReadResultInput
    kind = ToolKind.READ
    offloads = False
    description = (
        "Read a tool result that was too large to keep in the conversation. Such a result shows "
        'only its head and tail and says `read_result {"id": "r…"}`; this returns its lines '
        "exactly as the tool produced them, a part at a time (a line over 4000 characters counts "
        "as several). `offset` is the first line (1-based) and `limit` the number of lines "
        "(default 2000, and about 24,000 characters at most); a cut output ends with the "
        "`offset` to read on from."
    )

    async def run(self, args: ReadResultInput, ctx: ToolContext) -> ToolResult:
        if ctx.results is None:
            raise ToolError("no stored tool results: this conversation has no session")
        rid = args.id.strip()
        try:
            text = await asyncio.to_thread(ctx.results.read, rid, args.offset, args.limit)
        except (ValueError, OSError) as e:
            raise ToolError(str(e) or f"cannot read stored result {quote(rid)}") from None
        return ToolResult(content=text if text else "[the stored result is empty]")
