"""The bash tool: ``bash -c COMMAND`` in the workspace, bounded in time and output.

The command runs in its own session (so its own process group) with stdin from /dev/null.
A timeout or a cancellation ends the whole group: SIGTERM, a short grace, then SIGKILL, so no
child (``sleep 30 &``) outlives it. When the shell exits but something it started still holds
the output pipes, the group is ended after a short grace too: a command's output is only
complete when every writer is gone, and nothing is left running attached to a dead tool call.
(A process whose output is redirected elsewhere, e.g. ``server > log 2>&1 &``, is left alone.)
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from typing import Any

from app.agent.tools.base import ToolContext, ToolError, ToolResult, opt_number, req_str

TERM_GRACE = 2.0  # seconds between SIGTERM and SIGKILL on a timeout
CANCEL_GRACE = 0.5  # the same on cancellation (the person is waiting)
PIPE_GRACE = 0.5  # how long output may stay open after the shell exited
READ_CHUNK = 65536
EXIT_POLL = 0.05  # how often the exit is checked while a background child holds the pipes


class _Capture:
    """Keeps the head and the tail of a stream, counting what was cut in between."""

    def __init__(self, limit: int) -> None:
        self.head_cap = max(limit // 2, 1)
        self.tail_cap = max(limit - self.head_cap, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.tail_cap:
                del self.tail[: len(self.tail) - self.tail_cap]

    def text(self) -> str:
        cut = self.total - len(self.head) - len(self.tail)
        if cut > 0:
            return (
                self.head.decode("utf-8", "replace")
                + f"\n[... {cut} bytes cut ...]\n"
                + self.tail.decode("utf-8", "replace")
            )
        return (bytes(self.head) + bytes(self.tail)).decode("utf-8", "replace")


async def _pump(stream: asyncio.StreamReader | None, cap: _Capture) -> None:
    if stream is None:
        return
    while chunk := await stream.read(READ_CHUNK):
        cap.feed(chunk)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


async def _wait_exit(
    proc: asyncio.subprocess.Process,
    waiter: asyncio.Future[int],
    pumps: asyncio.Future[Any],
    timeout: float,
    *,
    with_output: bool = False,
) -> bool:
    """Wait up to ``timeout`` s for the shell to exit (and, ``with_output``, for its output
    pipes to close); True if that happened.

    ``Process.wait()`` alone is not enough: from Python 3.12 it also waits for the pipes to
    close, which a background child can hold open; the exit itself shows in ``returncode``.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while proc.returncode is None or (with_output and not pumps.done()):
        left = deadline - loop.time()
        if left <= 0:
            return False
        if pumps.done():
            await asyncio.wait({waiter}, timeout=left)
        elif proc.returncode is not None:
            await asyncio.wait({pumps}, timeout=left)
        else:
            await asyncio.wait({waiter, pumps}, timeout=min(left, EXIT_POLL), return_when=asyncio.FIRST_COMPLETED)
    return True


async def _end_group(
    proc: asyncio.subprocess.Process, waiter: asyncio.Future[int], pumps: asyncio.Future[Any], grace: float
) -> None:
    """SIGTERM the group, give it ``grace`` seconds to go (shell exited, output closed), then
    SIGKILL whatever is left."""
    _signal_group(proc.pid, signal.SIGTERM)
    await _wait_exit(proc, waiter, pumps, grace, with_output=True)
    _signal_group(proc.pid, signal.SIGKILL)
    await _wait_exit(proc, waiter, pumps, grace, with_output=True)


def _fmt_seconds(t: float) -> str:
    return f"{t:g}"


async def run_bash(ctx: ToolContext, inp: dict[str, Any]) -> ToolResult:
    command = req_str(inp, "command")
    if "\x00" in command:
        raise ToolError("command contains a NUL character")
    try:
        command.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError("command is not valid UTF-8 text (it holds a lone surrogate)") from None
    asked = opt_number(inp, "timeout")
    timeout = asked if asked is not None else ctx.bash_timeout_default
    capped = timeout > ctx.bash_timeout_max
    timeout = min(timeout, ctx.bash_timeout_max)
    try:
        proc = await asyncio.create_subprocess_exec(
            "bash",
            "-c",
            command,
            cwd=str(ctx.workspace),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as e:
        raise ToolError(f"could not start bash: {e.strerror or e}") from None

    limit = max((ctx.bash_capture_chars or ctx.max_output_chars) // 2, 2)
    out, err = _Capture(limit), _Capture(limit)
    waiter: asyncio.Future[int] = asyncio.ensure_future(proc.wait())
    pumps = asyncio.ensure_future(asyncio.gather(_pump(proc.stdout, out), _pump(proc.stderr, err)))
    timed_out = False
    leftovers = False
    try:
        if not await _wait_exit(proc, waiter, pumps, timeout):
            timed_out = True
            await _end_group(proc, waiter, pumps, TERM_GRACE)
        # The shell is gone; its output is complete when every writer has closed the pipes.
        if not await _wait_exit(proc, waiter, pumps, PIPE_GRACE, with_output=True):
            leftovers = not timed_out
            await _end_group(proc, waiter, pumps, CANCEL_GRACE)
    except asyncio.CancelledError:
        try:
            await _end_group(proc, waiter, pumps, CANCEL_GRACE)
        finally:
            _signal_group(proc.pid, signal.SIGKILL)
            pumps.cancel()
            waiter.cancel()
        raise
    finally:
        if not pumps.done():
            pumps.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await pumps
        if not waiter.done():
            waiter.cancel()

    rc = proc.returncode
    lines: list[str] = []
    if timed_out:
        lines.append(f"timed out after {_fmt_seconds(timeout)} s; the command and its child processes were killed")
    elif rc is not None and rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        lines.append(f"exit code: {rc} (killed by {name})")
    else:
        lines.append(f"exit code: {rc}")
    if capped:
        lines.append(f"[timeout capped at {_fmt_seconds(ctx.bash_timeout_max)} s]")
    if leftovers:
        lines.append(
            "[background processes still attached to the output were stopped; redirect their output "
            "(cmd > file 2>&1 &) to keep one running]"
        )
    stdout, stderr = out.text(), err.text()
    if stdout:
        lines.append("--- stdout ---")
        lines.append(stdout.rstrip("\n"))
    if stderr:
        lines.append("--- stderr ---")
        lines.append(stderr.rstrip("\n"))
    if not stdout and not stderr:
        lines.append("(no output)")
    return ToolResult(content="\n".join(lines), is_error=timed_out or rc != 0)
