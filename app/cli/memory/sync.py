"""``pseudoclaude memory sync``: the user store kept in step with ``user_memory_remote``.

Loaded with the other ``memory`` commands' parsers: git and the settings load when it runs.
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
    p = cmd(
        "sync", "pull the user store from user_memory_remote (rebase), rebuild its index, commit and push"
    )
    p.add_argument(
        "--accept-rewrite",
        action="store_true",
        help="take a remote whose history was rewritten (refused otherwise): this machine's changes "
        "since the last sync are replayed on it",
    )


def sync(stores: MemoryStores, args: argparse.Namespace) -> int:
    # The settings (pydantic-settings) and git's helpers load only when a sync runs.
    from app.agent.config.settings import SettingsError, load_settings
    from app.services.sharing import SharingService

    try:
        settings = load_settings()
    except SettingsError as e:  # the same one line and exit code as every other command's
        print(f"pseudoclaude: {e}", file=sys.stderr)
        return EXIT_USAGE
    for warning in settings.warnings:
        print(f"pseudoclaude: {warning}", file=sys.stderr)
    service = SharingService(stores, settings)
    missing = service.remote_missing()
    if missing is not None:
        print(f"pseudoclaude: {missing}", file=sys.stderr)
        return EXIT_ERROR
    result = service.sync(accept_rewrite=args.accept_rewrite)
    if result.ok:
        print(result.line)
        return EXIT_OK
    print(f"pseudoclaude: {result.line}", file=sys.stderr)
    return EXIT_ERROR


HANDLERS: dict[str, Callable[[MemoryStores, argparse.Namespace], int]] = {"sync": sync}
