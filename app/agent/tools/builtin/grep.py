"""``grep {pattern, path?, glob?}``: a regular expression over the workspace's text files."""

from __future__ import annotations

import asyncio
import threading

from pydantic import Field

from app.agent.tools.base import ToolContext, ToolInput, ToolResult
from app.agent.tools.fields import FilledText, Text
from app.agent.tools.paths import PATH_NOTE
from app.agent.tools.search import grep
from app.agent.tools.tool import RuleTarget, Tool, ToolKind


class GrepInput(ToolInput):
    pattern: FilledText = Field(description="Python regular expression to search for.")
    path: Text | None = Field(None, description=f"File or folder to search, {PATH_NOTE} (default: the root).")
    glob: Text | None = Field(None, description="Only search files matching this glob, e.g. `*.py`.")


class Grep(Tool[GrepInput]):
    name = "grep"
    Input = GrepInput
    kind = ToolKind.READ
    display = (("pattern", "{}"), ("path", "in {}"), ("glob", "files {}"))
    aliases = ("Grep",)
    rule_kind = "path"
    description = (
        "Search file contents with a Python regular expression (`re` syntax, matched per line; use "
        "`(?i)` for case-insensitive). Prints one line per match as `path:line: text`, files in "
        "sorted order. `path` is a file or a folder to search recursively (default: the workspace "
        "root); `glob` keeps only files whose name (or, if it contains `/`, path relative to `path`) "
        "matches, e.g. `*.py` or `src/**/*.ts`. Binary files and the folders .git, .venv, "
        "node_modules and __pycache__ are skipped. At most 500 matches are shown, with a note "
        "giving the total; narrow the pattern, path or glob if you hit it. A search is stopped "
        "with an error after 20 s (a pattern with nested repeats like `(a+)+` can backtrack "
        "for ever on some lines)."
    )

    async def run(self, args: GrepInput, ctx: ToolContext) -> ToolResult:
        """In a worker thread; a cancelled call tells the thread to stop (it checks between lines)."""
        cancel = threading.Event()
        try:
            return await asyncio.to_thread(grep, ctx, args.pattern, args.path, args.glob, cancel)
        except asyncio.CancelledError:
            cancel.set()
            raise

    def rule_target(self, args: GrepInput) -> RuleTarget:
        return RuleTarget.path(args.path)

    def paths(self, args: GrepInput) -> list[str]:
        return [args.path] if args.path else []
