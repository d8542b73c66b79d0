"""Where a manager's events and wake-ups go: its subscribers, its worker's wake-up, its waiters.

The manager binds the bus to its event loop when it starts; from then on ``emit``, ``signal`` and
``call_in_loop`` are safe from any thread (the pipeline's, the worker child's line reader): what
must touch the loop's objects is handed to the loop. Before the bind (a manager that never
started: a CLI command) everything runs at once, in the caller's thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable

from memory.events import MemoryEvent

__all__ = ["EventBus", "Subscriber"]

log = logging.getLogger(__name__)

Subscriber = Callable[[MemoryEvent], None]


class EventBus:
    """``poll``: the longest a waiter sleeps without being signalled (it looks again then)."""

    def __init__(self, poll: float) -> None:
        self.poll = poll
        self._subscribers: list[Subscriber] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._wake: asyncio.Event | None = None
        self._changed: asyncio.Event | None = None

    def bind(self) -> None:
        """Bind to the running loop (the manager's start)."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._wake = asyncio.Event()
        self._changed = asyncio.Event()

    def in_loop(self) -> bool:
        return self._loop is not None and threading.get_ident() == self._loop_thread

    def call_in_loop(self, fn: Callable[[MemoryEvent], None], event: MemoryEvent) -> None:
        """``fn(event)`` on the bound loop (now, when called there or before the bind)."""
        loop = self._loop
        if self.in_loop() or loop is None:
            fn(event)
        else:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody listens any more
                loop.call_soon_threadsafe(fn, event)

    # -- subscribers -----------------------------------------------------------------------------

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call ``callback(event)`` for every event (on the bound loop once bound). Returns an
        unsubscribe."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._subscribers.remove(callback)

        return unsubscribe

    def emit(self, event: MemoryEvent) -> None:
        """Tell every subscriber (one that fails is logged, the others still hear it); then the waiters."""
        for cb in list(self._subscribers):
            try:
                cb(event)
            except Exception:
                log.exception("memory event subscriber %r failed on %s", cb, type(event).__name__)
        self.signal()

    # -- wake-ups --------------------------------------------------------------------------------

    def signal(self, wake: bool = False) -> None:
        """Wake the worker (``wake``) and/or the waiters; safe from any thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        if self.in_loop():
            self._signal_in_loop(wake)
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._signal_in_loop, wake)

    def _signal_in_loop(self, wake: bool) -> None:
        if wake and self._wake is not None:
            self._wake.set()
        if self._changed is not None:
            # Every waiter holds the event it saw: setting it and starting a fresh one is a broadcast.
            self._changed.set()
            self._changed = asyncio.Event()

    def clear_wake(self) -> None:
        if self._wake is not None:
            self._wake.clear()

    async def idle(self) -> bool:
        """Wait for a wake-up or one poll interval. True when woken."""
        assert self._wake is not None
        if self._wake.is_set():
            return True
        try:
            await asyncio.wait_for(self._wake.wait(), self.poll)
        except TimeoutError:
            return False
        return True

    async def wait_change(self, timeout: float) -> None:
        """Wait for the next signal, at most ``timeout`` (and one poll interval)."""
        if timeout <= 0:
            return
        if self._changed is None or not self.in_loop():
            await asyncio.sleep(min(timeout, self.poll))
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), min(timeout, self.poll))
