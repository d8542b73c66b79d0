"""The garbage collector's schedule while an answer streams.

A full collection walks every object of the process: with the SDK, the runtime, the stores' notes
and a chat of Markdown widgets that is a pause of a few hundred milliseconds or more, and the
allocations of a fast stream set one off about every second — the screen and the keyboard stall
each time. So while an answer streams no full collection runs but one every ``GC_FULL_EVERY_S``;
the young generations are still collected, and what reaches the old one waits for a moment
nobody is typing (the collector's own schedule is back once the turn is over and the keyboard has
been still for ``GC_IDLE_S``).

Start-up is held too (``hold_start_up``, from the command line before the App's imports, until
``release_start_up`` after its first frame): what it allocates (modules, classes, the stylesheet,
the first widgets) lives as long as the process, and collecting it on the way (a full collection
among them, about 15 ms here) only delayed the first frame. Then it is frozen, so no later
collection walks it again either.
"""

from __future__ import annotations

import gc
import time

GC_FULL_EVERY_S = 60.0  # while an answer streams, a full collection runs at most this often
GC_IDLE_S = 2.0  # after a turn, the collector's schedule is back once no key was pressed for this long

_frozen = False  # gc.freeze() is done once per process
_start_up_held = False  # hold_start_up() disabled the collector and release_start_up() has not run


def hold_start_up() -> None:
    """No collection until :func:`release_start_up` (the App's first frame, or the App's end)."""
    global _start_up_held
    if gc.isenabled():
        gc.disable()
        _start_up_held = True


def release_start_up() -> None:
    """After the first frame: what start-up allocated is frozen (no collection walks it again)
    and the collector runs again. Nothing when start-up was not held (an App run by tests)."""
    global _start_up_held
    if _start_up_held:
        _start_up_held = False
        gc.freeze()
        gc.enable()


class GcHold:
    """Holds back full collections while a turn streams (``hold``) until ``release``."""

    def __init__(self) -> None:
        self._saved: tuple[int, int, int] | None = None  # the collector's thresholds, while held
        self._full_at = 0.0
        self.last_key = 0.0  # when a key was last pressed (monotonic)

    @property
    def held(self) -> bool:
        return self._saved is not None

    def hold(self) -> None:
        if self._saved is not None:
            return
        global _frozen
        if not _frozen:
            # What exists before the process's first answer (modules, the runtime, the SDK)
            # lives as long as the app: a full collection need not walk it again.
            _frozen = True
            gc.freeze()
        self._saved = gc.get_threshold()
        self._full_at = time.monotonic()
        gc.set_threshold(self._saved[0], self._saved[1], 1_000_000)

    def tick(self) -> None:
        """A long stream does not keep its old garbage for longer than ``GC_FULL_EVERY_S``."""
        if self._saved is not None and time.monotonic() - self._full_at > GC_FULL_EVERY_S:
            gc.collect()
            self._full_at = time.monotonic()

    def idle_in(self) -> float:
        """Seconds until the keyboard has been still for ``GC_IDLE_S`` (0 or less: it is)."""
        return self.last_key + GC_IDLE_S - time.monotonic()

    def release(self) -> None:
        if self._saved is not None:
            gc.set_threshold(*self._saved)
            self._saved = None
