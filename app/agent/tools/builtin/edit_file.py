"""``edit_file {path, old_string, new_string, replace_all?}``: replace exact text in a file."""

from __future__ import annotations

import asyncio
import difflib

from pydantic import Field

from app.agent.tools.base import ToolContext, ToolInput, ToolResult
from app.agent.tools.fields import FilledText, Flag, Text
from app.agent.tools.files import check_edit_file, edit_file
from app.agent.tools.paths import PATH_NOTE
from app.agent.tools.previews import PREVIEW_LINES, current_text, cut_lines
from app.agent.tools.tool import Preview, RuleTarget, Tool, ToolKind
from memory.text.terminal import split_lines, strip_terminal


class EditFileInput(ToolInput):
    path: FilledText = Field(description=f"The file to edit, {PATH_NOTE}.")
    old_string: Text = Field(description="The exact text to replace.")
    new_string: Text = Field(description="The text to put in its place (may be empty).")
    replace_all: Flag = Field(
        False, description="Replace every occurrence instead of requiring exactly one (default false)."
    )


class EditFile(Tool[EditFileInput]):
    name = "edit_file"
    Input = EditFileInput
    kind = ToolKind.WRITE
    display = (("path", "{}"),)
    aliases = ("Edit", "MultiEdit")
    rule_kind = "path"
    description = (
        "Replace exact text in an existing text file. `old_string` must match the file exactly "
        "(whitespace and indentation included; copy it from read_file's output without the line "
        "number prefix) and occur exactly once, unless `replace_all` is true, which replaces every "
        "occurrence. If it occurs more than once, include more surrounding lines to make it unique. "
        "Read the file before editing it. May need the user's permission."
    )

    async def run(self, args: EditFileInput, ctx: ToolContext) -> ToolResult:
        # Reading and writing a 10 MB file is blocking I/O: off the event loop.
        return await asyncio.to_thread(
            edit_file, ctx, args.path, args.old_string, args.new_string, args.replace_all
        )

    def precheck(self, args: EditFileInput, ctx: ToolContext) -> None:
        check_edit_file(ctx, args.path, args.old_string, args.new_string)

    def preview(self, args: EditFileInput, ctx: ToolContext) -> Preview:
        """The edit as a diff of the file, or what was asked when the file does not hold it."""
        path, old, new = args.path, args.old_string, args.new_string
        before = current_text(ctx.workspace, path)
        summary = strip_terminal(f"edit {path}", keep_newlines=False)
        if before is None or old not in before:
            # The tool itself will refuse or report; show what was asked.
            asked = [f"- {line}" for line in split_lines(old)] + [f"+ {line}" for line in split_lines(new)]
            return Preview(summary=summary, body=strip_terminal(cut_lines(asked)), kind="diff")
        after = before.replace(old, new) if args.replace_all else before.replace(old, new, 1)
        diff = difflib.unified_diff(
            before.splitlines(), after.splitlines(), f"a/{path}", f"b/{path}", lineterm=""
        )
        return Preview(
            summary=summary, body=strip_terminal(cut_lines(list(diff), PREVIEW_LINES * 2)), kind="diff"
        )

    def rule_target(self, args: EditFileInput) -> RuleTarget:
        return RuleTarget.path(args.path)

    def paths(self, args: EditFileInput) -> list[str]:
        return [args.path]
