"""``pseudoclaude memory log [LEVEL] [FILE]`` (DESIGN §16): the history of a store's cards, the
app's batches and the git commits that touched the store, newest first.

Imported by app/cli/main.py's parser on every start: what the command reads is imported when it runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from memory.constants import Level

if TYPE_CHECKING:
    from memory.store.stores import MemoryStores

EXIT_OK, EXIT_ERROR = 0, 1


def add_command(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    p = cmd("log", "the history of the cards: the app's batches and the git commits touching the store, newest first")
    p.add_argument("level", nargs="?", choices=[lv.value for lv in Level], help="one store (default: both)")
    p.add_argument("file", nargs="?", help="one card of that store")


def log(stores: MemoryStores, args: argparse.Namespace) -> int:
    print("pseudoclaude: memory log is not built yet", file=sys.stderr)  # H2 replaces this
    return EXIT_ERROR


HANDLERS: dict[str, Callable[[MemoryStores, argparse.Namespace], int]] = {"log": log}
