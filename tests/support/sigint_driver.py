"""The real CLI with a Ctrl+C (SIGINT) delivered the hard ways, for
tests/integration/cli/test_print_ctrl_c.py.

``python -m tests.support.sigint_driver MODE CLI-ARGS…`` runs ``pseudoclaude CLI-ARGS…`` in this
process after arranging, by MODE:

* ``ignored``: the CLI starts with SIGINT ignored, as a shell starts a script's ``&`` job (the
  disposition is inherited through ``exec``, as from the shell); the test sends the SIGINT.
* ``thread``: once the answer's first bytes are on stdout and the main thread is asleep in the
  event loop's wait for the rest (read from /proc), a SIGINT is sent to another thread (the
  kernel may hand a process's signal to any of its threads): only a wake-up through the loop can
  cancel the turn.
* ``commit``: a SIGINT is sent while the turn's memory job is being written to the spool, after
  the whole answer is out: the turn is then complete and must stay so, with its job.

Nothing here sleeps: each SIGINT is sent as soon as its window is open.
"""

from __future__ import annotations

import os
import platform
import signal
import sys
import threading
import time
from typing import Any


def _ignored(argv: list[str]) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.execv(sys.executable, [sys.executable, "-m", "app.cli.main", *argv])


# epoll_wait, epoll_pwait, epoll_pwait2 by architecture (/proc/…/syscall names a blocked call by number).
_EPOLL_WAITS = {"x86_64": {"232", "281", "441"}, "aarch64": {"22", "441"}}


def _asleep_in_epoll(tid: int) -> bool | None:
    """Whether thread ``tid`` of this process sleeps in ``epoll_wait`` (None: the kernel does not say)."""
    task = f"/proc/self/task/{tid}"
    try:
        with open(f"{task}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        with open(f"{task}/syscall") as f:
            call = f.read().split()
    except OSError:
        return None
    waits = _EPOLL_WAITS.get(platform.machine())
    if waits is None or not call:
        return None
    return state == "S" and call[0] in waits


def _thread() -> None:
    from app.cli.print_mode import PrintUI

    first_bytes = threading.Event()
    main_tid = threading.get_native_id()

    def deliver() -> None:
        first_bytes.wait()
        # Only once the main thread sleeps in the loop's wait for the held rest of the answer:
        # while it still runs Python, it would see the signal at its next instruction whatever
        # the handler (a false pass).
        deadline = time.monotonic() + 30
        while _asleep_in_epoll(main_tid) is False and time.monotonic() < deadline:
            os.sched_yield()
        # To this thread itself: its C-level handler runs here, not on the main thread.
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    threading.Thread(target=deliver, name="sigint-elsewhere", daemon=True).start()
    real = PrintUI._answer

    def answer(self: PrintUI, text: str) -> None:
        real(self, text)
        if self.wrote_text:
            first_bytes.set()

    PrintUI._answer = answer  # type: ignore[method-assign]  # the driver's hook on the first bytes


def _commit() -> None:
    from memory.jobs.spool import Spool

    real = Spool.submit

    def submit(self: Spool, job: Any) -> Any:
        os.kill(os.getpid(), signal.SIGINT)  # the job is being written: the turn's last step
        return real(self, job)

    Spool.submit = submit  # type: ignore[method-assign]  # the driver's hook on the spool write


def main() -> int:
    mode, argv = sys.argv[1], sys.argv[2:]
    if mode == "ignored":
        _ignored(argv)
    {"thread": _thread, "commit": _commit}[mode]()
    from app.cli.main import main as cli_main

    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
