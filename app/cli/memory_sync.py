"""``pseudoclaude memory sync``: the user store kept in step with ``user_memory_remote``.

Imported by app/cli/main.py's parser on every start: git and the settings are used when it runs.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memory.store.stores import MemoryStores

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def add_command(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    p = cmd("sync", "pull the user store from user_memory_remote (rebase), rebuild its index, commit and push")
    p.add_argument("--accept-rewrite", action="store_true",
                   help="take a remote whose history was rewritten (refused otherwise): this machine's changes "
                        "since the last sync are replayed on it")


def sync(stores: MemoryStores, args: argparse.Namespace) -> int:
    from app.agent.settings import SettingsError, config_file_path, load_settings
    from memory.sharing.sync import sync_user_store

    try:
        settings = load_settings()
    except SettingsError as e:  # the same one line and exit code as every other command's
        print(f"pseudoclaude: {e}", file=sys.stderr)
        return EXIT_USAGE
    for warning in settings.warnings:
        print(f"pseudoclaude: {warning}", file=sys.stderr)
    if not settings.user_memory_remote:
        print(f"pseudoclaude: no user_memory_remote is set in {config_file_path()}; set it to a git URL or a "
              "local bare repository", file=sys.stderr)
        return EXIT_ERROR
    result = sync_user_store(stores, settings.user_memory_remote, accept_rewrite=args.accept_rewrite)
    if result.ok:
        print(result.line)
        return EXIT_OK
    print(f"pseudoclaude: {result.line}", file=sys.stderr)
    return EXIT_ERROR


HANDLERS: dict[str, Callable[[MemoryStores, argparse.Namespace], int]] = {"sync": sync}
