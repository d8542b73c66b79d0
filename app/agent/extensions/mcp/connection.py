"""One MCP server, connected: a long-lived task owns its transport and its SDK session.

The SDK runs on anyio task groups, whose cancel scopes must be entered and left by one task: so
the session is entered, used and left by this connection's own task only. A request (a tool
call, a prompt) is handed to that task, run there in the session's task group under its own
timeout, and answered through a future; a caller that gives up cancels its future, which
cancels the request.

Every failure (the server cannot start, does not start in time, exits, writes garbage, ...)
goes through :meth:`Connection._fail`: one line of why (the server's secrets masked), the state
``failed``, the task ended (and with it the process and what it started) and every pending
request answered with that line. A connection runs once: a restart is a new one.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import Implementation

from app.agent.extensions.mcp.config import HttpServer, ServerConfig, StdioServer, UnsetVariableError
from app.agent.extensions.mcp.leftovers import Proc, new_tag
from app.agent.extensions.mcp.masking import SDK_LOGS, SecretMask, guard_sdk_logs, secrets_of
from app.agent.extensions.mcp.model import (
    McpError,
    PromptArgument,
    ServerPrompt,
    ServerTool,
    State,
    unavailable,
)
from app.agent.extensions.mcp.stdio import MAX_MESSAGE_BYTES, StdioHooks, stdio_transport
from memory.text.lines import one_line

__all__ = ["Connection"]

log = logging.getLogger(__name__)

# A listing that never ends (a cursor that always comes back) cannot hang the start.
_MAX_PAGES = 100
# HTTP: connecting and writing are quick or broken; a read waits as long as a call may.
_HTTP_TIMEOUT = httpx2.Timeout(30.0, read=None)

Streams = tuple[Any, Any]


@dataclass
class _Request:
    work: Callable[[Client], Awaitable[Any]]
    timeout: float
    future: asyncio.Future[Any]


def _version() -> str:
    try:
        return importlib.metadata.version("pseudoclaude")
    except importlib.metadata.PackageNotFoundError:
        return "0"


def _why(exc: BaseException, mask: SecretMask) -> str:
    """One line for an exception, the first real one inside a group; ``mask`` applied before
    the line is cut."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = next((e for e in exc.exceptions if isinstance(e, Exception)), exc.exceptions[0])
    if isinstance(exc, MCPError):
        return one_line(mask(exc.message), 300) or f"error {exc.code}"
    if isinstance(exc, UnsetVariableError):
        return str(exc)
    if isinstance(exc, FileNotFoundError):
        return f"cannot run {one_line(mask(str(exc.filename or 'the command')), 120)!r}: no such file"
    text = one_line(mask(str(exc)), 300)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


@asynccontextmanager
async def _http_transport(server: HttpServer) -> AsyncIterator[Streams]:
    async with httpx2.AsyncClient(headers=dict(server.headers), timeout=_HTTP_TIMEOUT) as http:
        async with streamable_http_client(
            server.url, http_client=http, max_sse_event_size=MAX_MESSAGE_BYTES
        ) as s:
            yield s


async def _list_tools(client: Client) -> tuple[ServerTool, ...]:
    tools: list[ServerTool] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_tools(cursor=cursor)
        for t in page.tools:
            hints = t.annotations
            tools.append(
                ServerTool(
                    t.name,
                    t.description or t.title or "",
                    dict(t.input_schema or {}),
                    bool(hints is not None and hints.read_only_hint is True),
                )
            )
        cursor = page.next_cursor
        if cursor is None:
            break
    return tuple(tools)


async def _list_prompts(client: Client) -> tuple[ServerPrompt, ...]:
    prompts: list[ServerPrompt] = []
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        page = await client.list_prompts(cursor=cursor)
        for p in page.prompts:
            args = tuple(
                PromptArgument(a.name, a.description or "", bool(a.required)) for a in p.arguments or ()
            )
            prompts.append(ServerPrompt(p.name, p.description or p.title or "", args))
        cursor = page.next_cursor
        if cursor is None:
            break
    return tuple(prompts)


class Connection:
    """One server's connection; ``start()`` on a running loop, ``close()`` to end it."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        workspace: Path,
        start_timeout: float,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.config = config
        self.workspace = workspace
        self.start_timeout = start_timeout
        self.on_change = on_change
        self.state: State = "starting"
        self.reason = ""
        self.tools: tuple[ServerTool, ...] = ()
        self.prompts: tuple[ServerPrompt, ...] = ()
        self.pid: int | None = None
        self.left: list[str] = []  # a line for each process that could not be stopped
        self.mask = secrets_of(config)
        self.settled = asyncio.Event()  # no longer starting
        self._inbox: asyncio.Queue[_Request] = asyncio.Queue()
        self._pending: set[asyncio.Future[Any]] = set()
        self._scope = anyio.CancelScope()
        self._hooks = StdioHooks(self._started, self._fail, mask=self.mask, tag=new_tag(), left=self._left)
        self._task: asyncio.Task[None] | None = None

    # -- state ----------------------------------------------------------------------------------

    def _set(self, state: State, reason: str = "") -> None:
        self.state, self.reason = state, self.mask(reason)
        if state != "starting":
            self.settled.set()
        if self.on_change is not None:
            with suppress(Exception):  # a screen that cannot refresh never stops a server
                self.on_change()

    def _started(self, pid: int) -> None:
        self.pid = pid

    def _left(self, procs: list[Proc]) -> None:
        for p in procs:
            name = one_line(p.name, 40)
            line = f"MCP server {self.config.name}: process {p.pid} ({name}) could not be stopped"
            self.left.append(line)
            log.warning("%s", line)

    def _fail(self, reason: str) -> None:
        """The one way a live server fails: its state says why, and its task ends."""
        if self.state in ("starting", "ready"):
            self._set("failed", reason)
        self._scope.cancel()

    def _start_timed_out(self) -> None:
        if self.state == "starting":
            last = self._hooks.stderr.last_line()
            self._fail(
                f"did not start within {self.start_timeout:g} s" + (f" (stderr: {last})" if last else "")
            )

    # -- the task -------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the server on the running loop (returns at once)."""
        if self._task is None:
            guard_sdk_logs()
            SDK_LOGS.add(self.mask)
            self._task = asyncio.get_running_loop().create_task(self._main(), name=f"mcp:{self.config.name}")

    async def _main(self) -> None:
        deadline = asyncio.get_running_loop().call_later(self.start_timeout, self._start_timed_out)
        try:
            with self._scope:
                await self._run()
        except BaseException as e:
            if self.state in ("starting", "ready"):
                self._set("failed", _why(e, self.mask))
            if not isinstance(e, Exception | BaseExceptionGroup):
                raise  # this task's own cancellation, or the interpreter stopping
        finally:
            deadline.cancel()
            SDK_LOGS.discard(self.mask)
            if self.state in ("starting", "ready"):
                self._set("failed", "the connection ended")
            gone = McpError(unavailable(self.config.name, self.state, self.reason))
            for future in list(self._pending):
                if not future.done():
                    future.set_exception(gone)

    def _transport(self, server: ServerConfig) -> AbstractAsyncContextManager[Streams]:
        if isinstance(server, StdioServer):
            return stdio_transport(server, self.workspace, self._hooks)
        if server.kind == "sse":
            return sse_client(server.url, headers=dict(server.headers))
        return _http_transport(server)

    async def _run(self) -> None:
        server = self.config.resolved()
        client = Client(
            self._transport(server),
            mode="auto",
            cache=None,
            client_info=Implementation(name="pseudoclaude", version=_version()),
        )
        async with client:
            tools = await _list_tools(client)
            caps = client.server_capabilities
            prompts = await _list_prompts(client) if caps.prompts is not None else ()
            if self.state != "starting":
                return
            self.tools, self.prompts = tools, prompts
            self._set("ready")
            async with anyio.create_task_group() as tg:
                while True:
                    request = await self._inbox.get()
                    tg.start_soon(self._answer, client, request)

    async def _answer(self, client: Client, request: _Request) -> None:
        if request.future.done():
            return  # the caller gave up before it was sent
        with anyio.CancelScope() as scope:

            def caller_gone(_: asyncio.Future[Any]) -> None:
                scope.cancel()

            request.future.add_done_callback(caller_gone)
            try:
                with anyio.fail_after(request.timeout):
                    value = await request.work(client)
            except TimeoutError:
                value = McpError(f"no answer within {request.timeout:g} s")
            except Exception as e:
                value = McpError(_why(e, self.mask))
            finally:
                request.future.remove_done_callback(caller_gone)
            if not request.future.done():
                if isinstance(value, McpError):
                    request.future.set_exception(value)
                else:
                    request.future.set_result(value)

    # -- for the manager ------------------------------------------------------------------------

    async def request(self, work: Callable[[Client], Awaitable[Any]], timeout: float) -> Any:
        """Run ``work`` with the session in this connection's task; raises :class:`McpError`."""
        if self.state != "ready":
            raise McpError(unavailable(self.config.name, self.state, self.reason))
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        self._inbox.put_nowait(_Request(work, timeout, future))
        return await future

    async def close(self, timeout: float = 10.0) -> None:
        """Stop the server (for stdio: its process group and what left it) and wait for the task
        to end."""
        if self.state in ("starting", "ready"):
            self._set("stopped")
        self._scope.cancel()
        if self._task is not None:
            # Waits without taking on the task's end: a closer that is cancelled is cancelled.
            await asyncio.wait({self._task}, timeout=timeout)
