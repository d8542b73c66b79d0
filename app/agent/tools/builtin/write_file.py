"""``write_file {path, content}``: create a file or replace its whole content, atomically."""

from __future__ import annotations

import asyncio

from pydantic import Field

from app.agent.tools.base import ToolContext, ToolInput, ToolResult
from app.agent.tools.fields import FilledText, Text
from app.agent.tools.files import check_write_file, write_file
from app.agent.tools.paths import PATH_NOTE
from app.agent.tools.previews import current_text, cut_lines
from app.agent.tools.tool import Preview, RuleTarget, Tool, ToolKind
from memory.text.terminal import line_count, split_lines, strip_terminal


class WriteFileInput(ToolInput):
    path: FilledText = Field(description=f"The file to write, {PATH_NOTE}.")
    content: Text = Field(description="The complete new content of the file.")


class WriteFile(Tool[WriteFileInput]):
    name = "write_file"
    Input = WriteFileInput
    kind = ToolKind.WRITE
    display = (("path", "{}"),)
    aliases = ("Write",)
    rule_kind = "path"
    description = (
        "Create a file or replace its whole content (written atomically; missing parent folders "
        "are created). Use it for new files or complete rewrites; for changes to an existing file "
        "prefer edit_file. Paths must be inside the workspace; writing inside .git/ or the memory "
        "stores (.PseudoClaude/memory) is refused. May need the user's permission."
    )

    async def run(self, args: WriteFileInput, ctx: ToolContext) -> ToolResult:
        # A 10 MB write and its fsync are blocking I/O: off the event loop.
        return await asyncio.to_thread(write_file, ctx, args.path, args.content)

    def precheck(self, args: WriteFileInput, ctx: ToolContext) -> None:
        check_write_file(ctx, args.path, args.content)

    def preview(self, args: WriteFileInput, ctx: ToolContext) -> Preview:
        """Whether it creates or overwrites, its size, and its first lines."""
        content = args.content
        what = "overwrite" if current_text(ctx.workspace, args.path) is not None else "create"
        count = line_count(content)  # the tool block's count too
        size = len(content.encode("utf-8", "replace"))
        summary = f"{what} {args.path} ({count} line(s), {size} bytes)"
        return Preview(
            summary=strip_terminal(summary, keep_newlines=False),
            body=strip_terminal(cut_lines(split_lines(content))),
            kind="text",
        )

    def rule_target(self, args: WriteFileInput) -> RuleTarget:
        return RuleTarget.path(args.path)

    def paths(self, args: WriteFileInput) -> list[str]:
        return [args.path]
