"""The memory-at-scale side of ``pseudoclaude memory`` (DESIGN §15): ``search QUERY``,
``pin LEVEL FILE``, ``unpin LEVEL FILE``.

Imported by app/cli/main.py's parser on every start: the stores and the search engine are
imported by the commands when they run, never here.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from memory.constants import Level

if TYPE_CHECKING:
    from memory.store.stores import MemoryStores

EXIT_OK, EXIT_ERROR = 0, 1


def add_commands(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    p = cmd("search", "find cards by their words (title, summary, body, filename), best first; "
                      "an untrusted project store is not searched")
    p.add_argument("query")
    p.add_argument("--level", choices=[lv.value for lv in Level])
    p.add_argument("--limit", type=int, default=10)
    for name, what in (("pin", "keep a card in the prompt's index whatever its rank (`memory undo` reverts it)"),
                       ("unpin", "let a pinned card compete for the prompt's index again")):
        p = cmd(name, what)
        p.add_argument("level", choices=[lv.value for lv in Level])
        p.add_argument("file", help="the card's filename (see `pseudoclaude memory list`)")


def search(stores: MemoryStores, args: argparse.Namespace) -> int:
    raise NotImplementedError  # filled in by issue 18's CLI work


def pin(stores: MemoryStores, args: argparse.Namespace) -> int:
    raise NotImplementedError


HANDLERS: dict[str, Callable[[MemoryStores, argparse.Namespace], int]] = {
    "search": search,
    "pin": pin,
    "unpin": pin,
}
