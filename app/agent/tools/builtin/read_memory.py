"""``read_memory {level, filename, offset?, limit?}``: one long-term memory note, a part at a time."""

from __future__ import annotations

import asyncio
import logging

from pydantic import Field, model_validator

from app.agent.tools.base import CardRead, MemoryReader, ToolContext, ToolError, ToolInput, ToolResult, quote
from app.agent.tools.fields import LEVELS, Count, FilledText, Line, unknown_level
from app.agent.tools.files import DEFAULT_READ_LINES, NOTE_RESERVE
from app.agent.tools.tool import Tool, ToolKind
from memory.constants import INDEX_FILE
from memory.store.store import StoreError

log = logging.getLogger(__name__)


class ReadMemoryInput(ToolInput):
    # The store is checked after the other inputs: a malformed input is named before a wrong level.
    level: FilledText = Field(
        description="Which store: project or user.", json_schema_extra={"enum": list(LEVELS)}
    )
    filename: FilledText = Field(
        description="The note's filename, e.g. `project_knowledge_build.md`, or `MEMORY.md`."
    )
    offset: Line | None = Field(None, description="First line to read, 1-based (default 1).")
    limit: Count | None = Field(None, description="How many lines to read (default 2000).")

    @model_validator(mode="after")
    def _known_level(self) -> ReadMemoryInput:
        if self.level not in LEVELS:
            raise unknown_level(self.level)
        return self


class ReadMemory(Tool[ReadMemoryInput]):
    name = "read_memory"
    Input = ReadMemoryInput
    kind = ToolKind.MEMORY
    display = (("filename", "{}"), ("level", "{} level"))
    description = (
        "Read one long-term memory note in full. The memory index in the system prompt lists notes "
        "as `- [type] title — summary (filename)`; give the note's level (`project` for notes under "
        "Project Memory, `user` for notes under User Memory) and its filename. Filename `MEMORY.md` "
        "returns that level's whole index (useful when the prompt's index was cut). Long text is "
        "shown a part at a time: at most 2000 lines by default, and the output ends with the "
        "`offset` to read on from when it was cut; `offset` (first line, 1-based) and `limit` "
        "(number of lines) work as for read_file. Notes may be outdated: verify claims about code "
        "before relying on them. Memory cannot be written with tools; it is updated automatically "
        "after the turn."
    )

    async def run(self, args: ReadMemoryInput, ctx: ToolContext) -> ToolResult:
        if ctx.memory is None:
            raise ToolError("memory is not available")
        memory, max_chars = ctx.memory, ctx.max_output_chars
        # One worker thread for the read, the page and the count (SQLite: never on the loop).
        return await asyncio.to_thread(_read, memory, args, max_chars)


def _read(memory: MemoryReader, args: ReadMemoryInput, max_chars: int) -> ToolResult:
    level, filename = args.level, args.filename
    try:
        read = memory.read_memory_text(level, filename)
    except (StoreError, ValueError, OSError) as e:
        raise ToolError(str(e) or f"cannot read {quote(filename)} from the {level} store") from None
    text = read.text
    if not text.strip():
        content = (
            f"[the {level} store has no notes]" if filename == INDEX_FILE else "[this note has an empty body]"
        )
    else:
        content = page_lines(text, args.offset, args.limit, max_chars, filename)
    if filename == INDEX_FILE:
        return ToolResult(content=content)
    _count_read(memory, level, filename)  # only once the read gave the model something
    # Stale as the stores found it for this text, whichever page of it the model asked for.
    return ToolResult(content=content, card=CardRead(level=level, filename=filename, stale=read.stale))


def _count_read(memory: MemoryReader, level: str, filename: str) -> None:
    try:
        memory.record_read(level, filename)
    except Exception as e:  # the stores' record_read never raises; a stand-in for it must not fail a read
        log.warning("could not count a read of %s/%s: %s", level, filename, e)


def page_lines(text: str, offset: int | None, limit: int | None, max_chars: int, what: str) -> str:
    """Lines ``offset``.. (1-based, at most ``limit``) of ``text`` within ``max_chars``; a cut
    output ends by naming the offset to read on from, so every line of any text is reachable."""
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
    total = len(lines)
    first = max(offset or 1, 1)
    if first > total:
        raise ToolError(f"offset {first} is past the end: {quote(what)} has {total} lines")
    want = limit or DEFAULT_READ_LINES  # the same default as read_file's
    budget = max(max_chars - NOTE_RESERVE, 1)
    out: list[str] = []
    used = 0
    for line in lines[first - 1 : first - 1 + want]:
        if out and used + len(line) + 1 > budget:
            break
        if not out and len(line) > budget:
            # One line longer than the whole budget: shown cut, and reading goes on after it.
            line = line[:budget] + f" … [line cut at {budget} of {len(line)} characters]"
        out.append(line)
        used += len(line) + 1
    last = first + len(out) - 1
    if first == 1 and last == total and used <= budget:
        return text  # the whole text, exactly as stored
    if last >= total:
        return "\n".join(out)
    return "\n".join([*out, f"[showing lines {first}–{last} of {total}; use offset={last + 1} to read on]"])
