"""The memory-at-scale side of ``pseudoclaude memory``: ``search QUERY``,
``pin LEVEL FILE``, ``unpin LEVEL FILE``.

``memory search`` prints what the ``search_memory`` tool gives the model: one line per card,
``<level>: <index line>``, best first. Like ``grep`` it exits 0 when it found something and 1
when not; what is not a card (an untrusted project store left out, a rebuilt cache, "no notes
match") goes to stderr, so stdout holds only cards.

Loaded with the other ``memory`` commands' parsers: the stores and the search engine load when
a command runs, never here.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from memory.constants import Level
from memory.text.lines import one_line
from memory.text.names import quote

if TYPE_CHECKING:
    from memory.store.stores import MemoryStores

EXIT_OK, EXIT_ERROR = 0, 1

DEFAULT_LIMIT, MAX_LIMIT = 10, 50  # the search_memory tool's


def _err(msg: str) -> None:
    print(f"pseudoclaude: {msg}", file=sys.stderr)


def _limit(v: str) -> int:
    """``--limit N``: a whole number 1..50 (argparse makes the error a usage error, exit 2)."""
    text = v.strip()
    if not (text.isascii() and text.isdigit()) or not 1 <= int(text) <= MAX_LIMIT:
        raise argparse.ArgumentTypeError(f"N is a whole number from 1 to {MAX_LIMIT}, not {quote(v)}")
    return int(text)


def _query(v: str) -> str:
    if not v.strip():
        raise argparse.ArgumentTypeError("QUERY must name what to look for")
    return v


def add_commands(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    p = cmd(
        "search",
        "find cards by their words (title, summary, body, filename), best first: one line per card, "
        "`<level>: <index line>`, as the search_memory tool gives the model; exit 0 when a card "
        "matches, 1 when none does (like grep); an untrusted project store is not searched",
    )
    p.add_argument("query", type=_query, help="a few words naming the topic")
    p.add_argument(
        "--level", choices=[lv.value for lv in Level], help="search one store only (default: both)"
    )
    p.add_argument(
        "--limit",
        type=_limit,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"at most N cards, 1 to {MAX_LIMIT} (default {DEFAULT_LIMIT})",
    )
    for name, what in (
        ("pin", "keep a card in the prompt's index whatever its rank (`memory undo` reverts it)"),
        ("unpin", "let a pinned card compete for the prompt's index again"),
    ):
        p = cmd(name, what)
        p.add_argument("level", choices=[lv.value for lv in Level])
        p.add_argument("file", help="the card's filename (see `pseudoclaude memory list`)")


def search(stores: MemoryStores, args: argparse.Namespace) -> int:
    # The search engine loads only for a search; the trust rule with the stores, not the parsers.
    from memory.search.engine import MemorySearch
    from memory.store.trust import UNTRUSTED_REASON

    level: str | None = args.level
    if level == Level.PROJECT and not stores.has_project_level:
        _err("this workspace has no project level (its project store is the user store): search --level user")
        return EXIT_ERROR
    if stores.has_project_level and level in (None, Level.PROJECT) and not stores.project_trusted:
        _err(f"left out the project store {stores.project.dir}: {UNTRUSTED_REASON}")
        if level == Level.PROJECT:
            return EXIT_ERROR
    engine = MemorySearch(stores)
    try:
        hits = engine.search(args.query, level, args.limit)
        notices = engine.notices()
    finally:
        engine.close()
    for notice in notices:
        _err(one_line(notice, 300))
    for hit in hits:
        print(f"{hit.level}: {hit.line}")
    if not hits:
        _err(f"no notes match {quote(args.query, 80)}")
        return EXIT_ERROR
    return EXIT_OK


def pin(stores: MemoryStores, args: argparse.Namespace) -> int:
    """``memory pin|unpin LEVEL FILE``: one manual batch (``memory undo`` reverts it). A bad file
    is a StoreError: the caller says it in one line, exit 1."""
    # The cards service (the card editors) loads only for an edit.
    from app.services.cards import CardsService

    pinned = args.memory_command == "pin"
    result = asyncio.run(CardsService(stores, None).pin_card(args.level, args.file, pinned, None))
    key = f"{args.level}/{args.file}"
    if result.applied:
        print(f"{'pinned' if pinned else 'unpinned'} {key}")
    else:
        print(f"{key} was {'already pinned' if pinned else 'not pinned'}")
    return EXIT_OK


HANDLERS: dict[str, Callable[[MemoryStores, argparse.Namespace], int]] = {
    "search": search,
    "pin": pin,
    "unpin": pin,
}
