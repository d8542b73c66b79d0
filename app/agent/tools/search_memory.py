"""The ``search_memory`` tool: the cards of both stores that hold a query's
words, best first, as index lines, so the model can look beyond the prompt's index on purpose.

Output: one line per card, ``<level>: <index line>`` (``project: - [type] Title — summary
(file.md)``), best first across both levels, or ``no card matches``: a card whose matched words
carry less than a fifth of the query's weight (``SEARCH_FLOOR``) is no match, not a weak one.
One flat list rather than
``## Project Memory`` / ``## User Memory`` sections: the order is the ranking, and the level the
model needs for read_memory is on the line it reads. An untrusted project store is never
searched: asked for by name it is an error with read_memory's reason; searched with both levels
a last line says it was left out.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from app.agent.tools.base import (
    MemorySearcher,
    ToolContext,
    ToolError,
    ToolResult,
    parse_input,
)
from app.agent.tools.specs import SEARCH_MEMORY_MAX_LIMIT, SearchMemoryInput
from memory.search.engine import SEARCH_FLOOR
from memory.store.trust import UNTRUSTED_REASON

__all__ = ["DEFAULT_LIMIT", "MAX_LIMIT", "NO_MATCH", "NO_PROJECT_LEVEL", "UNTRUSTED_NOTE", "search_memory"]

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 10
MAX_LIMIT = SEARCH_MEMORY_MAX_LIMIT
NO_MATCH = "no card matches"
UNTRUSTED_NOTE = "[the project store was not searched: it came with this workspace and is not trusted yet]"
NO_PROJECT_LEVEL = (
    "this workspace has no project level (its project store is the user store): search level 'user'"
)


def check_input(inp: dict[str, Any]) -> tuple[str, str | None, int]:
    """(query, level or None, limit) from the tool's input, or a ToolError with one reason."""
    args = parse_input(SearchMemoryInput, inp)
    return args.query, args.level, DEFAULT_LIMIT if args.limit is None else args.limit


def found_lines(search: MemorySearcher, query: str, level: str | None, limit: int) -> tuple[list[str], bool]:
    """(``<level>: <line>`` per card found, best first; whether an untrusted project store was
    left out). Blocking (SQLite and card files): call it off the event loop. Raises ToolError
    for a level that cannot be searched."""
    stores = search.stores
    project_left_out = stores.has_project_level and not stores.project_trusted
    if level == "project":
        if not stores.has_project_level:
            raise ToolError(NO_PROJECT_LEVEL)
        if project_left_out:
            raise ToolError(UNTRUSTED_REASON)
    try:
        hits = search.search(query, level, limit, floor=SEARCH_FLOOR)
    finally:
        # A rebuilt cache is the program's business, not the model's: logged, never in the result.
        for notice in search.notices():
            log.warning("memory search: %s", notice)
    lines = [f"{hit.level}: {hit.line}" for hit in hits]
    return lines, project_left_out and level is None


async def search_memory(ctx: ToolContext, inp: dict[str, Any]) -> ToolResult:
    query, level, limit = check_input(inp)
    if ctx.search is None:
        raise ToolError("memory search is not available")
    lines, left_out = await asyncio.to_thread(found_lines, ctx.search, query, level, limit)
    out = lines or [NO_MATCH]
    if left_out:
        out.append(UNTRUSTED_NOTE)
    return ToolResult(content="\n".join(out))
