"""``pseudoclaude memory worker`` that SIGKILLs itself mid-apply (for the worker-death tests and
the worker benchmark, tests/bench/fig_worker.py).

    python -m tests.support.worker_driver KILL_AT MARKER -- <memory worker argv after the program>
    python -m tests.support.worker_driver --arm ARM LOG -- <memory worker argv after the program>

The first form: the ``KILL_AT``-th file change inside a store transaction (``MemoryStores.apply``)
kills this process with SIGKILL, unless ``MARKER`` exists; the marker is made just before, so the
child the app starts next runs the job to its end.

The second form (any number of kills, one per arming): a transaction that starts while the file
``ARM`` exists takes it (it is removed at once, so an arming serves one transaction in one child)
and reads the kill point from it (an integer); that file change kills the process. Every
transaction appends ``apply PID START END`` to ``LOG`` and every kill ``kill PID T KILL_AT``
(``time.perf_counter()``: CLOCK_MONOTONIC on Linux, comparable across processes).
Everything else is the real command.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from typing import Any

MUTATING = frozenset({"mkdir", "create", "write", "fsync", "replace", "link", "unlink", "fsync_dir"})


def _append(log: str, line: str) -> None:
    # One write of a whole line: the page cache keeps it through the SIGKILL that follows.
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def _take_arm(arm: str) -> int | None:
    """The kill point of an arming, removing it (None: not armed, or unreadable)."""
    try:
        with open(arm) as f:
            text = f.read()
        os.unlink(arm)
    except OSError:
        return None
    with contextlib.suppress(ValueError):
        return int(text.strip())
    return None


def main(argv: list[str]) -> int:
    rest = argv[argv.index("--") + 1 :]
    armed = argv[0] == "--arm"
    if armed:
        arm, log = argv[1], argv[2]
        kill_at: int | None = None
        marker = ""
    else:
        kill_at, marker = int(argv[0]), argv[1]
    from app.cli.main import main as cli_main
    from memory.store.fs import DEFAULT_FS
    from memory.store.stores import MemoryStores

    state = {"inside": 0, "n": 0, "at": -1}
    apply = MemoryStores.apply

    def counted_apply(self: MemoryStores, *args: Any, **kwargs: Any) -> Any:
        if armed and not state["inside"]:
            point = _take_arm(arm)
            state["at"], state["n"] = (point if point is not None else -1), 0
        state["inside"] += 1
        started = time.perf_counter()
        try:
            return apply(self, *args, **kwargs)
        finally:
            state["inside"] -= 1
            if armed and not state["inside"]:
                state["at"] = -1
                _append(log, f"apply {os.getpid()} {started:.6f} {time.perf_counter():.6f}")

    def hook(op: str, path: str) -> None:
        if not state["inside"] or op not in MUTATING:
            return
        if armed:
            if state["n"] == state["at"]:
                _append(log, f"kill {os.getpid()} {time.perf_counter():.6f} {state['at']}")
                os.kill(os.getpid(), signal.SIGKILL)
            state["n"] += 1
        elif not os.path.exists(marker):
            if state["n"] == kill_at:
                with open(marker, "w") as f:
                    f.write(f"{os.getpid()}\n")
                os.kill(os.getpid(), signal.SIGKILL)
            state["n"] += 1

    MemoryStores.apply = counted_apply  # type: ignore[method-assign]
    DEFAULT_FS.hook = hook
    return cli_main(rest)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
