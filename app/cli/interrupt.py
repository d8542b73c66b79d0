"""Ctrl+C (SIGINT) in print mode: a person's Ctrl+C always cancels.

The first SIGINT cancels the run: a turn in progress ends cancelled and closed (the conversation
stays valid, no memory job is spooled) and the process exits 130. Once the whole answer is out,
the turn is committed first (its job spooled, the turn closed as completed): a SIGINT then ends
the run right after, the job staying spooled for the next run. A second SIGINT leaves at once.

The handler is the event loop's own (``loop.add_signal_handler``), installed before the run's
first byte whatever disposition the process inherited:

- a shell starts a script's ``&`` job with SIGINT ignored, and ``asyncio.run`` then installs no
  handler at all: the SIGINT was lost for the whole run;
- the kernel may hand a process's signal to any of its threads; the loop's handler is woken
  through the loop's own wake-up descriptor from any thread, where a ``signal.signal`` handler (the
  one ``asyncio.run`` installs) ran only once the loop woke for something else, the model's next
  byte, so a stalled stream held the cancel with it.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Awaitable, Callable

EXIT_INTERRUPTED = 130  # what a shell reports for a command that SIGINT ended


class Interrupt:
    """The run's SIGINT: cancels the task that installed it, or, while the turn is committing,
    only records it (``committed`` says so once the turn is closed)."""

    def __init__(self) -> None:
        self.fired = False
        self._task: asyncio.Task[object] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._committing = False

    def install(self) -> None:
        """From the task that SIGINT cancels."""
        self._task = asyncio.current_task()
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGINT, self._on_sigint)
        except (ValueError, RuntimeError):
            return  # not the main thread: no signal reaches this run
        self._loop = loop

    def remove(self) -> None:
        loop, self._loop = self._loop, None
        if loop is not None:
            loop.remove_signal_handler(signal.SIGINT)

    def committing(self, answer_shown: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
        """The Runner's ``answer_shown`` hook: from its call on, the turn commits uninterrupted."""

        async def hook() -> None:
            self._committing = True
            await answer_shown()

        return hook

    def committed(self) -> bool:
        """The turn is closed: whether a SIGINT came while it committed (the run then ends)."""
        self._committing = False
        return self.fired

    def _on_sigint(self) -> None:
        if self.fired:
            raise KeyboardInterrupt  # the second Ctrl+C: leave at once
        self.fired = True
        if not self._committing and self._task is not None:
            self._task.cancel()


async def interruptible(run: Callable[[Interrupt], Awaitable[int]]) -> int:
    """``run``'s exit code, or 130 once a SIGINT ended it."""
    interrupt = Interrupt()
    interrupt.install()
    try:
        code = await run(interrupt)
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if not interrupt.fired or task is None or task.uncancel():
            raise  # not (only) ours: someone else cancelled the run
        code = EXIT_INTERRUPTED
    finally:
        interrupt.remove()
    return EXIT_INTERRUPTED if interrupt.fired else code
