"""Whether a process a test started (an MCP server, a hook) is still there."""

from __future__ import annotations

import os
import time
from pathlib import Path


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def gone(pid_file: Path, timeout: float = 5.0) -> bool:
    """The process whose PID ``pid_file`` holds (if it ever started) has ended within ``timeout``."""
    if not pid_file.exists():
        return True
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + timeout
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)
