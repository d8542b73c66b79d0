"""``read_file {path, offset?, limit?}``: a text file of the workspace, its lines numbered; an
image file as the image itself."""

from __future__ import annotations

import asyncio

from pydantic import Field

from app.agent.tools.base import ToolContext, ToolInput, ToolResult
from app.agent.tools.fields import Count, FilledText, Line
from app.agent.tools.files import read_file
from app.agent.tools.paths import PATH_NOTE
from app.agent.tools.tool import RuleTarget, Tool, ToolKind


class ReadFileInput(ToolInput):
    path: FilledText = Field(description=f"The file to read, {PATH_NOTE}.")
    offset: Line | None = Field(None, description="First line to read, 1-based (default 1).")
    limit: Count | None = Field(None, description="How many lines to read (default 2000).")


class ReadFile(Tool[ReadFileInput]):
    name = "read_file"
    Input = ReadFileInput
    kind = ToolKind.READ
    display = (("path", "{}"),)
    aliases = ("Read",)
    rule_kind = "path"
    description = (
        "Read a text file of the workspace. Returns its lines numbered like `cat -n` "
        "(line number, tab, text). Reads at most 2000 lines by default; use `offset` (first line, "
        "1-based) and `limit` (number of lines) to read a part or to read on where the output says "
        "it was cut. Lines longer than 2000 characters are cut. An image file (.png, .jpg, .jpeg, "
        ".gif, .webp) is given to you as the image itself, scaled to at most 1568 px; other binary "
        "files are refused; files over 10 MB can only be read in parts (give offset/limit). Use "
        "list_files or grep to find files first; read a file before editing it."
    )

    async def run(self, args: ReadFileInput, ctx: ToolContext) -> ToolResult:
        # A 10 MB file, or an image Pillow decodes and scales, is blocking work: off the event loop.
        return await asyncio.to_thread(read_file, ctx, args.path, args.offset, args.limit)

    def rule_target(self, args: ReadFileInput) -> RuleTarget:
        return RuleTarget.path(args.path)

    def paths(self, args: ReadFileInput) -> list[str]:
        return [args.path]
