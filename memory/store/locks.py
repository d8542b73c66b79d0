"""The one way the memory core takes an OS file lock (worker election, review, transactions)."""

from __future__ import annotations

from pathlib import Path

import filelock


def file_lock(path: Path | str, timeout: float = -1) -> filelock.FileLock:
    """A lock object that owns its descriptor: non-singleton and not thread-local.

    Why: filelock's defaults share one object per path and per thread, so two managers (or a
    manager and its threads) in one process would not exclude each other the way two
    processes do. ``timeout`` < 0 waits forever; 0 tries once.
    """
    return filelock.FileLock(str(path), timeout=timeout, is_singleton=False, thread_local=False)


__all__ = ["file_lock"]
