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
import re
import signal
from dataclasses import dataclass
from typing import Any

from app.agent.tools.base import ResultView, ToolContext, ToolError, ToolResult

TERM_GRACE = 2.0  # seconds between SIGTERM and SIGKILL on a timeout
CANCEL_GRACE = 0.5  # the same on cancellation (the person is waiting)
PIPE_GRACE = 0.5  # how long output may stay open after the shell exited
READ_CHUNK = 65536
EXIT_POLL = 0.05  # how often the exit is checked while a background child holds the pipes
STDOUT_MARK = "--- stdout ---"
STDERR_MARK = "--- stderr ---"
NO_OUTPUT = "(no output)"


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
            await asyncio.wait(
                {waiter, pumps}, timeout=min(left, EXIT_POLL), return_when=asyncio.FIRST_COMPLETED
            )
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


@dataclass
class _Outcome:
    """What became of one command: its exit, its output, and the notes the result carries."""

    rc: int | None
    timeout: float
    timed_out: bool = False
    leftovers: bool = False  # background processes held the output open and were stopped
    capped_at: float | None = None  # the asked timeout was over the maximum
    stdout: str = ""
    stderr: str = ""


async def run_bash(ctx: ToolContext, command: str, asked: float | None = None) -> ToolResult:
    """``command`` in the workspace, for ``asked`` seconds at most (None: the default)."""
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
    outcome = await _run(proc, timeout, limit)
    outcome.capped_at = ctx.bash_timeout_max if capped else None
    return _result(outcome)


async def _run(proc: asyncio.subprocess.Process, timeout: float, limit: int) -> _Outcome:
    """Wait for the command (ending its group on a timeout, a cancel, or output left open)."""
    out, err = _Capture(limit), _Capture(limit)
    waiter: asyncio.Future[int] = asyncio.ensure_future(proc.wait())
    pumps = asyncio.ensure_future(asyncio.gather(_pump(proc.stdout, out), _pump(proc.stderr, err)))
    outcome = _Outcome(rc=None, timeout=timeout)
    try:
        if not await _wait_exit(proc, waiter, pumps, timeout):
            outcome.timed_out = True
            await _end_group(proc, waiter, pumps, TERM_GRACE)
        # The shell is gone; its output is complete when every writer has closed the pipes.
        if not await _wait_exit(proc, waiter, pumps, PIPE_GRACE, with_output=True):
            outcome.leftovers = not outcome.timed_out
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
    outcome.rc = proc.returncode
    outcome.stdout, outcome.stderr = out.text(), err.text()
    return outcome


def _status(o: _Outcome) -> tuple[str, str | None]:
    """The result's first line, and the short status the screen shows (None: no exit known)."""
    rc = o.rc
    if o.timed_out:
        after = _fmt_seconds(o.timeout)
        return (
            f"timed out after {after} s; the command and its child processes were killed",
            f"timed out after {after} s",
        )
    if rc is not None and rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        return f"exit code: {rc} (killed by {name})", f"exit {rc} {name}"
    return f"exit code: {rc}", (f"exit {rc}" if rc is not None else None)


def _result(o: _Outcome) -> ToolResult:
    """The model's text (status, notes, output sections) and the screen's view of the same facts:
    the output first without its leading section marker, the notes after it."""
    first, status = _status(o)
    notes: list[str] = []
    if o.capped_at is not None:
        notes.append(f"[timeout capped at {_fmt_seconds(o.capped_at)} s]")
    if o.leftovers:
        notes.append(
            "[background processes still attached to the output were stopped; redirect their output "
            "(cmd > file 2>&1 &) to keep one running]"
        )
    body: list[str] = []
    if o.stdout:
        body += [STDOUT_MARK, o.stdout.rstrip("\n")]
    if o.stderr:
        body += [STDERR_MARK, o.stderr.rstrip("\n")]
    if not body:
        body.append(NO_OUTPUT)
    failed = o.timed_out or o.rc != 0
    shown = body[1:]  # the marker (or "(no output)") filled the collapsed excerpt before any output
    view = ResultView(status=status, output="\n".join(shown + notes), failed=failed) if status else None
    return ToolResult(content="\n".join([first, *notes, *body]), is_error=failed, view=view)


_EXIT_LINE = re.compile(r"exit code: (-?\d+)(?: \(killed by ([^)]*)\))?")
_TIMEOUT_LINE = re.compile(r"timed out after (\S+) s\b.*")


def view_of_content(text: str) -> ResultView | None:
    """The view of a bash result read back from a session log, which keeps only the model's text:
    the status and output ``_result`` gave when the command ran. None for any other text."""
    lines = text.split("\n")
    if m := _EXIT_LINE.fullmatch(lines[0]):
        code = int(m.group(1))
        status, failed = f"exit {code}" + (f" {m.group(2)}" if m.group(2) else ""), code != 0
    elif m := _TIMEOUT_LINE.fullmatch(lines[0]):
        status, failed = f"timed out after {m.group(1)} s", True
    else:
        return None
    i = 1
    while i < len(lines) and lines[i].startswith("[") and lines[i].endswith("]"):
        i += 1
    notes, rest = lines[1:i], lines[i:]
    if rest[:1] not in ([NO_OUTPUT], [STDOUT_MARK], [STDERR_MARK]):
        return None
    return ResultView(status=status, output="\n".join(rest[1:] + notes), failed=failed)
