"""``pseudoclaude memory consolidate [--level L] [--yes]`` (DESIGN §15): one consolidation job
now, through the memory model, like ``flush``.

Imported by app/cli/main.py's parser on every start: the manager is imported by the command
when it runs, never here.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from memory.constants import Level

if TYPE_CHECKING:
    from memory.store.stores import MemoryStores


def add_command(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    p = cmd("consolidate", "ask the memory model to merge likely duplicates and fix contradictions in a store; "
                           "its operations are held for review (`memory approve`) unless --yes")
    p.add_argument("--level", choices=[lv.value for lv in Level])
    p.add_argument("--yes", action="store_true", help="apply the proposed operations at once")


def consolidate(stores: MemoryStores, args: argparse.Namespace) -> int:
    raise NotImplementedError  # filled in by issue 18's consolidation work
