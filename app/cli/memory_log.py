"""``pseudoclaude memory log [LEVEL] [FILE]``: the history of a store's cards, the
app's batches and the git commits that touched the store, newest first.

Imported by app/cli/main.py's parser on every start: what the command reads is imported when it runs.
"""

from __future__ import annotations

import argparse
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
    p = cmd("log", "the history of the cards: the app's batches and the git commits touching the store, newest first")
    p.add_argument("level", nargs="?", choices=[lv.value for lv in Level], help="one store (default: both)")
    p.add_argument("file", nargs="?", help="one card of that store")
    p.add_argument("--limit", type=_limit, metavar="N", help="only the N newest entries")


def log(stores: MemoryStores, args: argparse.Namespace) -> int:
    from memory.sharing.log import format_entry, store_log
    from memory.store.store import filename_problem

    level = Level(args.level) if args.level else None
    if args.file is not None:
        reason = filename_problem(args.file)
        if reason is not None:
            print(f"pseudoclaude: {reason}", file=sys.stderr)
            return EXIT_ERROR
    entries, problems = store_log(stores, level, args.file, limit=args.limit)
    for line in problems:
        # Said, not fatal: the app's own batches are still shown.
        print(f"pseudoclaude: {line}", file=sys.stderr)
    if not entries:
        what = f"{level} card {args.file}" if args.file else (f"the {level} store" if level else "the memory stores")
        print(f"no history of {what} in this workspace")
        return EXIT_OK
    for entry in entries:
        print(format_entry(entry))
    return EXIT_OK


HANDLERS: dict[str, Callable[[MemoryStores, argparse.Namespace], int]] = {"log": log}
