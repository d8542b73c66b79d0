"""The stdio transport: the server as a child process in its own process group, newline-delimited
JSON-RPC on its stdin and stdout.

Written here rather than taken from the SDK because the client must know the process (its PID,
to take its whole group down and find what left the group: ``leftovers``), must hear at once
that the server exited or wrote something that is not MCP (one line of why, with the last thing
it wrote to stderr, its secrets masked), and must keep the server's stderr off the terminal the
app draws on.
"""

from __future__ import annotations

import os
import subprocess
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager, suppress
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage
from mcp.types import jsonrpc_message_adapter

from app.agent.extensions.mcp.config import StdioServer
from app.agent.extensions.mcp.leftovers import TAG_VAR, Proc, alive, proc, started_by, stop
from app.agent.extensions.mcp.masking import SecretMask
from memory.text.lines import format_bytes, one_line

__all__ = ["MAX_MESSAGE_BYTES", "StderrTail", "StdioHooks", "server_env", "stdio_transport"]

# A hard safety cap on one message read from a server (the runtime bounds what the model sees).
MAX_MESSAGE_BYTES = 50 * 1024 * 1024
# How long a server has to exit on its own once its stdin is closed, then after SIGTERM.
STDIN_GRACE = 1.0
TERM_GRACE = 1.0
# Reading the exit code of a server whose stdout ended.
_EXIT_WAIT = 1.0
# Credentials of this program that a server gets only when its config passes them on.
_WITHHELD = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


class StderrTail:
    """The last few KiB a server wrote to stderr, for the one line that says why it failed
    (masked by ``mask`` before it is cut to a line: a secret cut in half is half shown)."""

    def __init__(self, limit: int = 4096, mask: SecretMask | None = None) -> None:
        self.chunks: deque[bytes] = deque()
        self.size, self.limit = 0, limit
        self.mask = mask if mask is not None else SecretMask()

    def add(self, chunk: bytes) -> None:
        self.chunks.append(chunk)
        self.size += len(chunk)
        while self.size > self.limit and len(self.chunks) > 1:
            self.size -= len(self.chunks.popleft())

    def last_line(self) -> str:
        text = b"".join(self.chunks)[-self.limit :].decode("utf-8", "replace")
        lines = [ln for ln in text.splitlines() if ln.strip()]
        return one_line(self.mask(lines[-1]), 200) if lines else ""


class StdioHooks:
    """What the transport tells its connection: the PID once spawned, a one-line failure (the
    server exited, or wrote what is not MCP) the moment it is known, and what could not be
    stopped with it. ``mask`` hides the server's secrets in what it wrote; ``tag`` marks what it
    starts (``leftovers``)."""

    def __init__(
        self,
        started: Callable[[int], None],
        failed: Callable[[str], None],
        *,
        mask: SecretMask | None = None,
        tag: str = "",
        left: Callable[[list[Proc]], None] | None = None,
    ) -> None:
        self.started, self.failed, self.left = started, failed, left
        self.mask = mask if mask is not None else SecretMask()
        self.tag = tag
        self.stderr = StderrTail(mask=self.mask)


def server_env(
    server: StdioServer, environ: Mapping[str, str] | None = None, *, tag: str = ""
) -> dict[str, str]:
    """The environment a server runs with: this process's, less its API credentials, plus the
    server's own ``env`` (as an existing configuration expects) and its ``tag``."""
    env = {k: v for k, v in (os.environ if environ is None else environ).items() if k not in _WITHHELD}
    env.update(server.env)
    if tag:
        env[TAG_VAR] = tag
    return env


async def _read_stderr(stream: ByteReceiveStream | None, tail: StderrTail) -> None:
    if stream is None:
        return
    with suppress(anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        while True:
            tail.add(await stream.receive())


async def _exit_reason(process: Process, tail: StderrTail) -> str:
    with anyio.move_on_after(_EXIT_WAIT):
        while process.returncode is None:
            await anyio.sleep(0.01)
    code = process.returncode
    why = "the server exited" + (f" (code {code})" if code is not None else "")
    # Its last words on stderr arrive with or just after the end of stdout.
    await anyio.sleep(0.05)
    last = tail.last_line()
    return f"{why}: {last}" if last else why


def _parse(line: bytes, mask: SecretMask) -> SessionMessage:
    """One stdout line as a message; ``ValueError`` naming its start when it is not MCP."""
    try:
        return SessionMessage(jsonrpc_message_adapter.validate_json(line, by_name=False))
    except ValueError:
        # Masked before it is cut (a secret that starts in what is shown is masked whole).
        shown = one_line(mask(line[:4096].decode("utf-8", "replace")), 80)
        raise ValueError(f"the server wrote something that is not MCP to stdout: {shown!r}") from None


async def _read_stdout(
    process: Process,
    out: MemoryObjectSendStream[SessionMessage | Exception],
    tail: StderrTail,
    hooks: StdioHooks,
) -> None:
    assert process.stdout is not None
    parts: list[bytes] = []
    size = 0
    async with out:
        try:
            while True:
                chunk = await process.stdout.receive()
                while (cut := chunk.find(b"\n")) >= 0:
                    line, chunk = b"".join([*parts, chunk[:cut]]), chunk[cut + 1 :]
                    parts, size = [], 0
                    if line.strip():
                        await out.send(_parse(line, hooks.mask))
                parts.append(chunk)
                size += len(chunk)
                if size > MAX_MESSAGE_BYTES:
                    raise ValueError(f"the server sent a message over {format_bytes(MAX_MESSAGE_BYTES)}")
        except ValueError as e:
            hooks.failed(str(e))
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            hooks.failed(await _exit_reason(process, tail))


async def _watch_exit(process: Process, tail: StderrTail, hooks: StdioHooks) -> None:
    """The server's exit is a failure also while its stdout stays open: a process it started
    (one that left with ``setsid``) may hold the pipe, and no end of stdout ever comes."""
    await process.wait()
    hooks.failed(await _exit_reason(process, tail))


async def _write_stdin(process: Process, inbox: MemoryObjectReceiveStream[SessionMessage]) -> None:
    assert process.stdin is not None
    # A server that stopped reading shows as the end of its stdout: the reader says why.
    with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        async with inbox:
            async for message in inbox:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await process.stdin.send(data.encode("utf-8"))


def _unreaped(process: Process) -> int | None:
    """The server's PID while it is surely still the server's (not reaped: a PID is free again
    once reaped), to look for its descendants by; None after."""
    return process.pid if process.returncode is None else None


async def _stop(process: Process, hooks: StdioHooks) -> None:
    """Close stdin, give the server a moment, then SIGTERM and at last SIGKILL its whole process
    group and what left the group (``leftovers``: looked for while the server still runs, and
    again after), also when the server already exited itself. Then its pipes are closed, here
    on the loop: left to the garbage collector, a pipe still held open by a process that
    outlived the server is closed after the loop, which Python reports ("Event loop is closed")."""
    server = proc(process.pid)
    found = await anyio.to_thread.run_sync(started_by, _unreaped(process), hooks.tag)
    if process.stdin is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
    with anyio.move_on_after(STDIN_GRACE):
        while process.returncode is None:
            await anyio.sleep(0.01)
    found |= await anyio.to_thread.run_sync(started_by, _unreaped(process), hooks.tag)
    left: list[Proc] = []

    async def stop_found() -> None:
        left.extend(await stop(found, TERM_GRACE))

    async with anyio.create_task_group() as tg:
        tg.start_soon(terminate_posix_process_tree, process, TERM_GRACE)
        tg.start_soon(stop_found)
    with anyio.move_on_after(_EXIT_WAIT):
        await process.wait()
    if process.returncode is not None:
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.aclose()  # its pipes closed; it has exited, so no wait
    elif server is not None:
        left.insert(0, server)
    left = [p for p in left if alive(p)]
    if left and hooks.left is not None:
        hooks.left(left)


@asynccontextmanager
async def stdio_transport(
    server: StdioServer, cwd: Path, hooks: StdioHooks
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage | Exception], MemoryObjectSendStream[SessionMessage]]
]:
    """Start ``server`` (already resolved) in ``cwd`` and yield the SDK's stream pair; leaving
    stops the process group and what left it, shielded from cancellation, every wait bounded."""
    process = await anyio.open_process(
        [server.command, *server.args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=cwd,
        env=server_env(server, tag=hooks.tag),
        start_new_session=True,
    )
    hooks.started(process.pid)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    tail = hooks.stderr
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read_stderr, process.stderr, tail)
            tg.start_soon(_read_stdout, process, read_send, tail, hooks)
            tg.start_soon(_watch_exit, process, tail, hooks)
            tg.start_soon(_write_stdin, process, write_recv)
            try:
                yield read_recv, write_send
            finally:
                tg.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(process, hooks)
            for stream in (read_send, read_recv, write_send, write_recv):
                await stream.aclose()
