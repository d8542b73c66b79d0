"""The command-line faces' output streams: a reader that went away ends the printing quietly.

``pseudoclaude -p ... | head -1`` and ``pseudoclaude memory list | head -1`` close the pipe while
the program still has things to say; the work goes on (a turn completes, a command keeps its exit
code), only the printing stops.
"""

from __future__ import annotations

import contextlib
import errno
import os
from typing import TextIO


def closed_pipe(e: OSError) -> bool:
    """Whether a write failed because the reader is gone (or the descriptor was closed)."""
    return isinstance(e, BrokenPipeError) or e.errno in (errno.EPIPE, errno.EBADF)


def silence(stream: TextIO | None) -> None:
    """Point a closed pipe's descriptor at /dev/null: the interpreter flushes the stream once
    more at exit, and that flush must not print "Exception ignored ... BrokenPipeError"."""
    if stream is None:
        return
    with contextlib.suppress(OSError, ValueError, AttributeError):  # no descriptor
        fd = stream.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, fd)
        finally:
            os.close(devnull)
