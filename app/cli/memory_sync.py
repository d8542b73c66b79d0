"""``pseudoclaude memory sync`` (DESIGN §16): the user store kept in step with ``user_memory_remote``.

Imported by app/cli/main.py's parser on every start: git and the settings are used when it runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memory.store.stores import MemoryStores

EXIT_OK, EXIT_ERROR = 0, 1


def add_command(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    cmd("sync", "pull the user store from user_memory_remote (rebase), rebuild its index, commit and push")


def sync(stores: MemoryStores, args: argparse.Namespace) -> int:
    print("pseudoclaude: memory sync is not built yet", file=sys.stderr)  # H1 replaces this
    return EXIT_ERROR


HANDLERS: dict[str, Callable[[MemoryStores, argparse.Namespace], int]] = {"sync": sync}
