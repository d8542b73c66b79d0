"""``pseudoclaude memory log [LEVEL] [FILE]``: the history of a store's cards, the
app's batches and the git commits that touched the store, newest first.

Loaded with the other ``memory`` commands' parsers: the sharing service (git) loads when the
log is asked for.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from memory.constants import Level
from memory.text.names import quote

if TYPE_CHECKING:
    from memory.store.stores import MemoryStores

EXIT_OK, EXIT_ERROR = 0, 1
MAX_LIMIT = 1_000_000


def _limit(v: str) -> int:
    try:
        n = int(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {quote(v)}") from None
    if not 0 < n <= MAX_LIMIT:
        raise argparse.ArgumentTypeError(f"must be from 1 to {MAX_LIMIT}, not {n}")
    return n


def add_command(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    p = cmd(
        "log",
        "the history of the cards: the app's batches and the git commits touching the store, newest first",
    )
    p.add_argument("level", nargs="?", choices=[lv.value for lv in Level], help="one store (default: both)")
    p.add_argument("file", nargs="?", help="one card of that store")
    p.add_argument("--limit", type=_limit, metavar="N", help="only the N newest entries")


def log(stores: MemoryStores, args: argparse.Namespace) -> int:
    # Git's helpers load only when the log is asked for: no other command needs them.
    from app.services.sharing import SharingService, format_entry

    level = Level(args.level) if args.level else None
    service = SharingService(stores, None)  # the log reads no setting
    try:
        history = asyncio.run(service.log(level, args.file, limit=args.limit))
    except ValueError as e:  # a filename that cannot name a card
        print(f"pseudoclaude: {e}", file=sys.stderr)
        return EXIT_ERROR
    for line in history.problems:
        # Said, not fatal: the app's own batches are still shown.
        print(f"pseudoclaude: {line}", file=sys.stderr)
    if not history.entries:
        what = (
            f"{level} card {args.file}"
            if args.file
            else (f"the {level} store" if level else "the memory stores")
        )
        print(f"no history of {what} in this workspace")
        return EXIT_OK
    for entry in history.entries:
        print(format_entry(entry))
    return EXIT_OK


HANDLERS: dict[str, Callable[[MemoryStores, argparse.Namespace], int]] = {"log": log}
