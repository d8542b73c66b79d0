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
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, Field

from app.agent.tools.base import MemorySearcher, ToolContext, ToolError, ToolInput, ToolResult
from app.agent.tools.fields import FilledText, Level, integer, refuse
from app.agent.tools.tool import Tool, ToolKind
from memory.search.engine import SEARCH_FLOOR
from memory.store.trust import UNTRUSTED_REASON

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "NO_MATCH",
    "NO_PROJECT_LEVEL",
    "UNTRUSTED_NOTE",
    "SearchMemory",
    "SearchMemoryInput",
]

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 10
# memory.search.engine.SEARCH_LIMIT_MAX: the engine would cut a larger one silently.
MAX_LIMIT = 50
NO_MATCH = "no card matches"
UNTRUSTED_NOTE = "[the project store was not searched: it came with this workspace and is not trusted yet]"
NO_PROJECT_LEVEL = (
    "this workspace has no project level (its project store is the user store): search level 'user'"
)


def _topic(value: str) -> str:
    if not value.strip():
        raise refuse("input 'query' must name what to look for, not only spaces")
    return value


class SearchMemoryInput(ToolInput):
    query: Annotated[FilledText, AfterValidator(_topic)] = Field(
        description="A few words naming the topic, e.g. `frobnicator calibration`."
    )
    level: Level | None = Field(None, description="Search only this store (default: both).")
    limit: Annotated[int, Field(ge=1, le=MAX_LIMIT), BeforeValidator(integer)] | None = Field(
        None, description="How many lines to return (default 10)."
    )


class SearchMemory(Tool[SearchMemoryInput]):
    name = "search_memory"
    Input = SearchMemoryInput
    kind = ToolKind.MEMORY
    display = (("query", "{}"), ("level", "{} level"))
    description = (
        "Search every long-term memory note by topic: its title, summary, body and filename, "
        "including the notes the memory index in the system prompt leaves out when there are many. "
        "Returns the matching notes' index lines, best first, one per line as "
        "`<level>: - [type] title — summary (filename)`, or `no card matches` when no note holds "
        "enough of the query's words. Read a note's body "
        "with read_memory (that level and the filename in parentheses). Words are matched whole, "
        "English endings aside (`calibrate` finds `calibration`, the exact word ranking first); "
        "names like `max_length` or `3.9` match as written; a note holding more of the query's "
        "rarer words, more often, ranks higher, so name the topic in a few specific words. "
        "`level` searches one store only; `limit` is how many lines to return "
        "(default 10, at most 50). A project store that is not trusted yet is not searched."
    )

    async def run(self, args: SearchMemoryInput, ctx: ToolContext) -> ToolResult:
        if ctx.search is None:
            raise ToolError("memory search is not available")
        limit = DEFAULT_LIMIT if args.limit is None else args.limit
        lines, left_out = await asyncio.to_thread(found_lines, ctx.search, args.query, args.level, limit)
        out = lines or [NO_MATCH]
        if left_out:
            out.append(UNTRUSTED_NOTE)
        return ToolResult(content="\n".join(out))


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
