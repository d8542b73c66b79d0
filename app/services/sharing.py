"""Sharing memory through git: the history of the cards, the user store's sync with
``user_memory_remote``, and the derived ``MEMORY.md`` rebuilt after an outside change.

The app and the ``memory log`` / ``memory sync`` commands both call this. A sync is blocking git
work: the caller picks its thread (the app runs it in a daemon thread, so a remote that hangs never
keeps the process from ending; the command line runs it in its own). Nothing here raises for a
git, lock or I/O failure: a sync's failure is a failed ``SyncResult`` with one line to show.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memory.constants import Level
from memory.sharing.git import GitCancel
from memory.sharing.log import LogEntry, format_entry, store_log
from memory.sharing.sync import SyncResult, sync_user_store
from memory.store.store import filename_problem
from memory.store.stores import MemoryStores

if TYPE_CHECKING:
    from app.agent.config.settings import Settings

__all__ = [
    "REFRESH_LOCK_S",
    "SYNC_TIMEOUT_S",
    "GitCancel",
    "SharingService",
    "StoreLog",
    "SyncFunction",
    "SyncResult",
    "format_entry",
]

log = logging.getLogger(__name__)

SYNC_TIMEOUT_S = 60.0  # each git call of one sync
# An outside change's index refresh waits at most this for the stores' lock: a batch being
# applied holds it, and the refresh after the next change rebuilds what this one could not.
REFRESH_LOCK_S = 2.0

# memory.sharing.sync.sync_user_store's shape: (stores, remote, *, timeout, cancel) -> SyncResult.
SyncFunction = Callable[..., SyncResult]


@dataclass(frozen=True)
class StoreLog:
    """``memory log``'s answer: entries newest first, and one line per git log that could not be
    read (said, not fatal: the app's own batches are still there)."""

    entries: tuple[LogEntry, ...]
    problems: tuple[str, ...]


class SharingService:
    """One workspace's sharing through git, over its stores and the settings. ``settings``
    None: none were loaded (``memory log`` reads no setting, and a bad config file must not stop
    it); the user store is then not synced."""

    def __init__(self, stores: MemoryStores, settings: Settings | None) -> None:
        self.stores = stores
        self.settings = settings
        # The sync itself: memory.sharing.sync.sync_user_store unless a test sets another of
        # its shape (a sync that hangs, fails or counts its calls).
        self.sync_user_store: SyncFunction | None = None
        self.last_sync: SyncResult | None = None  # the last outcome: what the panel shows

    # -- the history of the cards ----------------------------------------------------------------

    async def log(
        self, level: Level | str | None = None, filename: str | None = None, *, limit: int | None = None
    ) -> StoreLog:
        """The history of both stores (or ``level``'s, or one card's): this workspace's batches
        and the git commits that touched the store, newest first, at most ``limit``. Raises
        ValueError (one line) for a filename that cannot name a card."""
        if filename is not None:
            reason = filename_problem(filename)
            if reason is not None:
                raise ValueError(reason)
        lv = Level(level) if level is not None else None
        entries, problems = await asyncio.to_thread(store_log, self.stores, lv, filename, limit=limit)
        return StoreLog(entries=tuple(entries), problems=tuple(problems))

    # -- the user store's sync -------------------------------------------------------------------

    @property
    def remote(self) -> str:
        """``user_memory_remote``: "" when the user store is not synced."""
        return (self.settings.user_memory_remote if self.settings is not None else "") or ""

    def remote_missing(self) -> str | None:
        """Why no sync can run (no remote is set), in one line; None when one is set."""
        if self.remote:
            return None
        return (
            f"no user_memory_remote is set in {self.stores.paths.config_file}; set it to a git URL "
            "or a local bare repository"
        )

    @property
    def sync_status(self) -> tuple[str, bool] | None:
        """The last sync's (line, failed); None before the first."""
        last = self.last_sync
        return None if last is None else (last.line, not last.ok)

    def sync(
        self,
        *,
        timeout: float = SYNC_TIMEOUT_S,
        accept_rewrite: bool = False,
        cancel: GitCancel | None = None,
    ) -> SyncResult:
        """Sync the user store with ``user_memory_remote`` now (blocking: call it in a thread).
        ``accept_rewrite``: take a remote whose history was rewritten; ``cancel``: stops the sync
        from another thread (each git it started is killed with its process group). Never raises:
        a failure, a bug in the sync included, is a failed result; it is also ``last_sync``."""
        sync = self.sync_user_store or sync_user_store
        # The keyword only when asked: a test's sync function need not know it.
        rewrite = {"accept_rewrite": True} if accept_rewrite else {}
        try:
            result = sync(self.stores, self.remote, timeout=timeout, cancel=cancel, **rewrite)
        except Exception as e:
            log.warning("user store sync failed: %s", e)
            result = SyncResult(ok=False, line=f"user store not synced: {type(e).__name__}: {e}")
        self.last_sync = result
        return result

    # -- outside changes -------------------------------------------------------------------------

    async def refresh_indexes(self, timeout: float = REFRESH_LOCK_S) -> list[str]:
        """The derived-index rule after an outside change (``git pull``, an editor): each
        ``MEMORY.md`` that no longer matches its cards is rebuilt from them; the levels rebuilt.
        Never raises: a store that cannot be refreshed now is logged, and its cards are still
        read from their files."""

        def run() -> list[str]:
            return [str(getattr(lv, "value", lv)) for lv in self.stores.refresh_indexes(timeout=timeout)]

        try:
            return await asyncio.to_thread(run)
        except Exception as e:
            log.warning("memory index not refreshed: %s", e)
            return []
