"""``list_files {path?, pattern?}``: the entries of a folder, or the paths a glob matches."""

from __future__ import annotations

import asyncio

from pydantic import Field

from app.agent.tools.base import ToolContext, ToolInput, ToolResult
from app.agent.tools.fields import Text
from app.agent.tools.files import list_files
from app.agent.tools.paths import PATH_NOTE
from app.agent.tools.tool import RuleTarget, Tool, ToolKind


class ListFilesInput(ToolInput):
    path: Text | None = Field(None, description=f"The folder to list, {PATH_NOTE} (default: the root).")
    pattern: Text | None = Field(None, description="Glob to match, relative to path, e.g. `**/*.py`.")


class ListFiles(Tool[ListFilesInput]):
    name = "list_files"
    Input = ListFilesInput
    kind = ToolKind.READ
    display = (("pattern", "{}"), ("path", "in {}"))
    aliases = ("Glob", "LS")
    rule_kind = "path"
    description = (
        "List files and folders of the workspace, sorted, as workspace-relative paths; folders end "
        "with `/`. Without `pattern` it lists the direct entries of `path` (default: the workspace "
        "root). `pattern` is a glob matched against paths relative to `path`: `*` and `?` stay "
        "within one folder, `**` spans folders, `{a,b}` gives alternatives; e.g. `**/*.py` finds "
        "every Python file below `path`, `src/*/` the folders in src. The folders .git, .venv, "
        "node_modules and __pycache__ are skipped unless the pattern names them. At most 1000 "
        "entries are shown, with a note saying how many more there were."
    )

    async def run(self, args: ListFilesInput, ctx: ToolContext) -> ToolResult:
        # A big tree is blocking I/O: off the event loop.
        return await asyncio.to_thread(list_files, ctx, args.path, args.pattern)

    def rule_target(self, args: ListFilesInput) -> RuleTarget:
        return RuleTarget.path(args.path)

    def paths(self, args: ListFilesInput) -> list[str]:
        return [args.path] if args.path else []
