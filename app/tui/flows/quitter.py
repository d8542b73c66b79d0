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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from rich.text import Text

from app.tui.messages import PromptClosed
from app.tui.phase import Phase

if TYPE_CHECKING:
    from textual.app import App
    from textual.message import Message
    from textual.worker import Worker

    from app.services.bundle import Services
    from app.tui.bridge import Bridge
    from app.tui.status_model import StatusModel

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


class Quitter:
    """The App's way out (``quit``: Ctrl+Q and /quit). ``app`` runs the drain and exits;
    ``post`` closes the prompt; ``phase``/``set_phase``: the App's phase, QUITTING from the first
    Ctrl+Q; ``turn``: the running turn (or /compact), cancelled; ``services``: the runtime's, None
    if it was never built; ``bridge`` closes the runtime; ``status`` shows what the quit waits
    for; ``sharing``: the last sync; ``exit_code``: what the app exits with."""

    def __init__(
        self,
        app: App[int],
        *,
        post: Callable[[Message], object],
        phase: Callable[[], Phase],
        set_phase: Callable[[Phase], None],
        turn: Callable[[], Worker[Any] | None],
        services: Callable[[], Services | None],
        bridge: Callable[[], Bridge],
        status: StatusModel,
        sharing: LastSync,
        exit_code: Callable[[], int],
    ) -> None:
        self._app = app
        self._post = post
        self._phase = phase
        self._set_phase = set_phase
        self._turn = turn
        self._services = services
        self._bridge = bridge
        self._status = status
        self._sharing = sharing
        self._exit_code = exit_code
        self._drain: Worker[None] | None = None

    def quit(self) -> None:
        if self._phase() is Phase.QUITTING:
            # Second Ctrl+Q: leave now (on_unmount stops the worker without waiting for the
            # model); what is left stays spooled for the next start.
            if self._drain is not None and self._drain.is_running:
                self._drain.cancel()  # its `finally` exits
            else:
                self._app.exit(self._exit_code())
            return
        self._set_phase(Phase.QUITTING)
        self._post(PromptClosed("quitting…"))
        # The memory worker's threads no longer make room for the screen: the drain gets the CPU.
        self._bridge().pacer.idle()
        turn = self._turn()
        if turn is not None and turn.is_running:
            turn.cancel()
        self._drain = self._app.run_worker(self._leave, group="quit", exit_on_error=False)

    def _say_saving(self, n: int) -> None:
        if self._phase() is Phase.QUITTING and self._app.is_running:
            note = f"saving {n} memory update{'s' if n != 1 else ''}… (Ctrl+Q again leaves at once)"
            self._status.update(note=note)
            self._app.notify(note, title="Quitting")

    async def _in_flight(self, deadline: float) -> int:
        """The memory jobs still to apply (0 when the runtime was never built), counted until
        ``deadline`` at most."""
        services = self._services()
        if services is None:
            return 0
        counted = asyncio.ensure_future(services.jobs.in_flight())  # never raises: 0 on errors
        await wait_bounded(counted, max(deadline - asyncio.get_running_loop().time(), 0.0))
        return counted.result() if counted.done() else 0

    async def _leave(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + QUIT_DRAIN_S
        note: str | None = None
        try:
            task = getattr(self._turn(), "_task", None)
            if task is not None and not task.done():
                # The cancelled turn closes its session record first (the runner shields it).
                await asyncio.wait({task}, timeout=QUIT_DRAIN_S)
            n = await self._in_flight(deadline)
            if n:
                self._app.call_later(self._say_saving, n)
            drain = max(deadline - loop.time(), 0.0) if n else 0.0
            await wait_bounded(asyncio.ensure_future(self._bridge().close(drain)), drain + QUIT_CLOSE_S)
            if self._sharing.enabled:
                # After the drain: the batches it applied are in this push.
                self._status.update(note="syncing the user store… (Ctrl+Q again leaves at once)")
                note = await self._sharing.at_quit()
        finally:
            # After the app, in the terminal: the last sync's failure, an MCP server's process
            # that could not be stopped (by PID). Plain text (no markup): a line may quote git.
            services = self._services()
            lines = ([note] if note else []) + (services.extensions.left_running() if services else [])
            said = "\n".join(f"pseudoclaude: {line}" for line in lines)
            self._app.exit(self._exit_code(), message=Text(said) if said else None)
