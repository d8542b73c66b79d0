"""Sharing through git in the App.

Outside changes: a store changed by someone else (``git pull``, a merge, a checkout, an editor)
has its derived ``MEMORY.md`` rebuilt from the cards (``MemoryStores.refresh_indexes``) before the
panel is read again; changes that arrive while that runs are coalesced into one more pass.

The user store's sync with ``user_memory_remote``: once after the first frame (at RuntimeReady),
never on the event loop and never in a turn's way (a thread; the sync takes the stores' lock
only for its own writes). A failure is one line in the panel, replaced by the next outcome, and
is retried on a timer and after a batch applied to the user store; a retry never overlaps a
running sync. At quit one last sync pushes the session's batches, cut off after ``QUIT_SYNC_S``
(a sync still running then included): cut off, or when the app ends any other way, every git a
sync started is killed with its process group, so no ssh it started outlives the app.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from app.tui.phase import Phase
from app.tui.workers import start
from memory.text.lines import one_line

if TYPE_CHECKING:
    from textual.app import App
    from textual.timer import Timer

    from app.services.bundle import Services
    from app.services.sharing import GitCancel, SharingService, SyncResult

__all__ = ["QUIT_SYNC_S", "RETRY_S", "SYNC_TIMEOUT_S", "SharingFlow", "in_daemon_thread"]

log = logging.getLogger(__name__)
T = TypeVar("T")

RETRY_S = 300.0  # a failed sync is tried again this much later (and after a user-store batch)
SYNC_TIMEOUT_S = 60.0  # each git call of a sync while the app runs
QUIT_SYNC_S = 4.0  # the sync at quit, a running one's end included: then the app leaves (local cards stay)


async def in_daemon_thread(fn: Callable[[], T]) -> T:
    """``fn()`` in a daemon thread of its own, awaited: the default executor's threads are joined
    when the process ends, and a remote that hangs must not keep it from ending."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(value: T | None, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(value)  # type: ignore[arg-type]

    def run() -> None:
        value: T | None = None
        error: BaseException | None = None
        try:
            value = fn()
        except BaseException as e:
            error = e
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits
            loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=run, name="pseudoclaude-sync", daemon=True).start()
    return await done


class SharingFlow:
    """The App's part of sharing through git. ``app`` runs the workers and the retry's timer;
    ``services``: the runtime's, None before it is built; ``phase``: the App's (no sync starts
    while it quits); ``refresh_panel`` rebuilds the panel's state (a worker)."""

    def __init__(
        self,
        app: App[Any],
        *,
        services: Callable[[], Services | None],
        phase: Callable[[], Phase],
        refresh_panel: Callable[[], object],
    ) -> None:
        self._app = app
        self._services = services
        self._phase = phase
        self._refresh_panel = refresh_panel
        self._dirty = False
        self._refreshing = False
        self.refreshes = 0  # outside changes handled (tests wait on it)
        self._started = False
        self._syncing = False
        self._retry: Timer | None = None
        self.syncs = 0  # syncs finished (tests wait on it)
        self.last: SyncResult | None = None
        self._sync_lock: asyncio.Lock | None = None
        self._cancels: set[GitCancel] = set()  # one per sync running or waiting for its turn
        self._stopped = False

    # -- outside changes -------------------------------------------------------------------------

    def stores_changed(self) -> None:
        """A watched store changed from outside: rebuild its index, then the panel."""
        self._dirty = True
        if self._refreshing or self._services() is None:
            return
        self._refreshing = True
        start(self._app, self._refresh_loop, group="refresh-index")

    async def _refresh_loop(self) -> None:
        try:
            while self._dirty:
                self._dirty = False
                await self._sharing.refresh_indexes()
                self.refreshes += 1
                self._refresh_panel()
        finally:
            self._refreshing = False

    # -- the user store's sync -------------------------------------------------------------------

    @property
    def _sharing(self) -> SharingService:
        services = self._services()
        if services is None:
            raise RuntimeError("the runtime is not built yet")
        return services.sharing

    @property
    def enabled(self) -> bool:
        services = self._services()
        return services is not None and bool(services.sharing.remote)

    def start(self) -> None:
        """After RuntimeReady (so after the first frame): the first sync, if a remote is set."""
        if self._started or not self.enabled:
            return
        self._started = True
        self.sync_now()

    def sync_now(self) -> bool:
        """Start a sync unless one runs (or the app is leaving: the quit's sync is its own)."""
        if self._syncing or self._phase() is Phase.QUITTING or not self.enabled:
            return False
        self._syncing = True
        if self._retry is not None:
            self._retry.stop()
            self._retry = None
        start(self._app, self._sync, group="sync")
        return True

    async def sync_user(self, timeout: float) -> SyncResult:
        """Sync the user store with ``user_memory_remote``, in a daemon thread: a
        remote that hangs past every bound must not keep the process from ending. One sync at a
        time (a second waits for the first). Never raises: a failure is a failed SyncResult."""
        from app.services.sharing import GitCancel, SyncResult  # loaded with the runtime's services

        sharing = self._sharing
        if self._sync_lock is None:
            self._sync_lock = asyncio.Lock()
        cancel = GitCancel()
        self._cancels.add(cancel)
        if self._stopped:
            cancel.cancel()
        try:
            async with self._sync_lock:
                if cancel.cancelled:  # the app is leaving: no git started any more
                    result = SyncResult(ok=False, line="memory sync: cancelled (the app is leaving)")
                    sharing.last_sync = result
                    return result
                # The service's sync never raises: a failure (a bug included) is a failed result.
                return await in_daemon_thread(lambda: sharing.sync(timeout=timeout, cancel=cancel))
        finally:
            self._cancels.discard(cancel)

    def stop(self) -> None:
        """The app is leaving: each sync's git is killed with its process group (no ssh it started
        outlives the app), and no sync starts a git any more."""
        self._stopped = True
        for cancel in list(self._cancels):
            cancel.cancel()

    async def _sync(self) -> None:
        try:
            result = await self.sync_user(SYNC_TIMEOUT_S)
        finally:
            self._syncing = False
        self.last = result
        self.syncs += 1
        if not result.ok and self._phase() is not Phase.QUITTING:
            self._retry = self._app.set_timer(RETRY_S, self.sync_now)
        self._refresh_panel()  # the line, and the cards it pulled

    def memory_event(self, event: object) -> None:
        """A batch applied to the user store: a sync that failed is tried again now."""
        from memory.events import JobApplied  # loaded with the runtime, before any event

        if not isinstance(event, JobApplied) or self.last is None or self.last.ok:
            return
        if any(str(getattr(op.level, "value", op.level)) == "user" for op in event.applied):
            self.sync_now()

    async def at_quit(self) -> str | None:
        """The last sync (the session's batches pushed), at most ``QUIT_SYNC_S``; the line to
        say after the app exits when it failed or was cut off, else None."""
        if not self.enabled:
            return None
        if self._retry is not None:
            self._retry.stop()
        task = asyncio.ensure_future(self.sync_user(QUIT_SYNC_S))
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        try:
            finished, _ = await asyncio.wait({task}, timeout=QUIT_SYNC_S)
        except asyncio.CancelledError:  # Ctrl+Q again: leaving at once
            self.stop()
            raise
        if not finished:
            self.stop()
            return f"user store not synced at quit: no answer within {QUIT_SYNC_S:g} s (local cards are kept)"
        result = task.result()
        return None if result.ok else one_line(f"user store not synced at quit: {result.line}", 300)
