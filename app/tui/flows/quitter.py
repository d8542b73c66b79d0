"""Leaving the app: Ctrl+Q drains memory for a bounded time, closes, exits.

Nothing here waits on the store or a thread without a bound: the drain gets at most
``QUIT_DRAIN_S`` and the close ``QUIT_CLOSE_S`` more; then the app exits whatever still runs (a job
cut off stays spooled, a transaction recovers at next start). With ``user_memory_remote`` set,
one last sync of the user store follows (at most ``sync_flow.QUIT_SYNC_S``, a sync still running
then included; cut off, its git is killed with what it started); its failure is said in the
terminal after the app exits. A second Ctrl+Q leaves at once.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol

from rich.text import Text

from app.tui.host import Host
from app.tui.phase import Phase

if TYPE_CHECKING:
    from textual.worker import Worker

QUIT_DRAIN_S = 3.0
# After the drain, closing the session file and the clients gets this long; then the app exits.
QUIT_CLOSE_S = 2.0


async def wait_bounded(task: asyncio.Future[Any], timeout: float) -> None:
    """Wait for ``task`` at most ``timeout`` seconds, and never for its cancellation: one still
    running then is left to finish on its own (its outcome, an error included, is dropped)."""
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
    await asyncio.wait({task}, timeout=max(timeout, 0.0))


class LastSync(Protocol):
    """The user store's sync at quit (the sharing flow)."""

    @property
    def enabled(self) -> bool: ...

    async def at_quit(self) -> str | None: ...


class QuitHost(Host, Protocol):
    exit_code: int

    @property
    def turn(self) -> Worker[Any] | None:
        """The running turn (or /compact), if any."""

    @property
    def is_running(self) -> bool: ...


class Quitter:
    """The App's way out (``quit``: Ctrl+Q and /quit)."""

    def __init__(self, app: QuitHost, sharing: LastSync) -> None:
        self.app = app
        self._sharing = sharing
        self._drain: Worker[None] | None = None

    def quit(self) -> None:
        app = self.app
        if app.phase is Phase.QUITTING:
            # Second Ctrl+Q: leave now (on_unmount stops the worker without waiting for the
            # model); what is left stays spooled for the next start.
            if self._drain is not None and self._drain.is_running:
                self._drain.cancel()  # its `finally` exits
            else:
                app.exit(app.exit_code)
            return
        app.phase = Phase.QUITTING
        app.prompt.disabled_reason = "quitting…"
        # The memory worker's threads no longer make room for the screen: the drain gets the CPU.
        app.bridge.pacer.idle()
        if app.turn is not None and app.turn.is_running:
            app.turn.cancel()
        self._drain = app.run_worker(self._leave, group="quit", exit_on_error=False)

    def _say_saving(self, n: int) -> None:
        app = self.app
        if app.phase is Phase.QUITTING and app.is_running:
            note = f"saving {n} memory update{'s' if n != 1 else ''}… (Ctrl+Q again leaves at once)"
            app.status_model.update(note=note)
            app.notify(note, title="Quitting")

    async def _leave(self) -> None:
        app = self.app
        loop = asyncio.get_running_loop()
        deadline = loop.time() + QUIT_DRAIN_S
        note: str | None = None
        try:
            task = getattr(app.turn, "_task", None)
            if task is not None and not task.done():
                # The cancelled turn closes its session record first (the runner shields it).
                await asyncio.wait({task}, timeout=QUIT_DRAIN_S)
            n = 0
            if app.built:
                counted = asyncio.ensure_future(app.services.jobs.in_flight())  # never raises: 0 on errors
                await wait_bounded(counted, max(deadline - loop.time(), 0.0))
                n = counted.result() if counted.done() else 0
            if n:
                app.call_later(self._say_saving, n)
            drain = max(deadline - loop.time(), 0.0) if n else 0.0
            await wait_bounded(asyncio.ensure_future(app.bridge.close(drain)), drain + QUIT_CLOSE_S)
            if self._sharing.enabled:
                # After the drain: the batches it applied are in this push.
                app.status_model.update(note="syncing the user store… (Ctrl+Q again leaves at once)")
                note = await self._sharing.at_quit()
        finally:
            # After the app, in the terminal: the last sync's failure, an MCP server's process
            # that could not be stopped (by PID). Plain text (no markup): a line may quote git.
            lines = ([note] if note else []) + (app.services.extensions.left_running() if app.built else [])
            said = "\n".join(f"pseudoclaude: {line}" for line in lines)
            app.exit(app.exit_code, message=Text(said) if said else None)
