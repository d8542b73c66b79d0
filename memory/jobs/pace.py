"""Background memory work that makes room for a busy foreground in the same process.

A job applied to a large store is a few tenths of a second of Python in a worker thread. Threads of one
process share one interpreter lock: while the app streams an answer or the person types, each
slice the job takes is a slice the screen waits for (a keystroke echoed 50 ms later instead of
10). ``Pacer`` is called at every filesystem operation of the stores (``FS.pace``) and at a few
pure-CPU loops; while the foreground has said it is busy, a thread other than the main one
that has used ``budget`` seconds of CPU since its last pause sleeps ``pause`` seconds, which
hands the lock back. Nothing changes when the foreground is idle, nor in the main thread, nor
in a process that never says it is busy (the CLI, print mode).
"""

from __future__ import annotations

import threading
import time

__all__ = ["Pacer"]


class Pacer:
    """``pacer()`` is a checkpoint; ``pacer.busy(seconds)`` says the foreground needs the
    interpreter for the next ``seconds`` (``float("inf")`` until ``pacer.idle()``)."""

    def __init__(self, budget: float = 0.001, pause: float = 0.009) -> None:
        self.budget = budget
        self.pause = pause
        self._busy_until = 0.0
        self._marks = threading.local()  # per thread: its CPU time at its last pause
        self._main = threading.main_thread()
        self.pauses = 0  # how many times a thread made room (for tests and the benchmarks)

    def busy(self, seconds: float) -> None:
        until = time.monotonic() + seconds
        if until > self._busy_until:
            self._busy_until = until

    def idle(self) -> None:
        self._busy_until = 0.0

    @property
    def is_busy(self) -> bool:
        return time.monotonic() < self._busy_until

    def __call__(self) -> None:
        if self._busy_until == 0.0 or threading.current_thread() is self._main:
            return
        if time.monotonic() >= self._busy_until:
            return
        marks = self._marks
        cpu = time.thread_time()
        start = getattr(marks, "start", None)
        if start is None or cpu - start < 0:
            marks.start = cpu
            return
        if cpu - start >= self.budget:
            self.pauses += 1
            time.sleep(self.pause)
            marks.start = time.thread_time()
