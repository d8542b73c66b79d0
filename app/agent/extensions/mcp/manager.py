"""Every configured MCP server for one session: started in parallel, each within its bound;
their tools offered as ``mcp__SERVER__TOOL`` in one stable order; calls and prompts answered
as one-line errors when anything goes wrong; a server added later (a project trusted in the
app) started by the next ``start()``; one restarted by name; all of it shut down by ``close()``.

The SDK (a second or more of imports) is loaded only when there is a server to start, and
then in a thread, so a screen's loop keeps drawing meanwhile.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.agent.extensions.mcp.config import ServerConfig
from app.agent.extensions.mcp.model import McpError, McpPrompt, McpTool, ServerStatus, State, unavailable
from app.agent.extensions.mcp.names import PREFIX, assign_names
from app.agent.extensions.mcp.results import McpResult, content_text, tool_result
from app.agent.tools.schema import JsonObject
from app.agent.tools.tool import ToolParam
from memory.text.lines import one_line

if TYPE_CHECKING:
    from app.agent.extensions.mcp.connection import Connection

__all__ = ["DEFAULT_CALL_TIMEOUT", "DEFAULT_START_TIMEOUT", "McpManager"]

DEFAULT_START_TIMEOUT = 10.0
DEFAULT_CALL_TIMEOUT = 120.0


class McpManager:
    """The MCP servers of a session. Construct anywhere; ``start()`` on the running loop."""

    def __init__(
        self,
        servers: Sequence[ServerConfig],
        *,
        workspace: Path,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        call_timeout: float = DEFAULT_CALL_TIMEOUT,
        on_change: Callable[[], None] | None = None,
    ) -> None:
        self.servers: tuple[ServerConfig, ...] = ()
        self.workspace = Path(workspace)
        self.start_timeout, self.call_timeout = start_timeout, call_timeout
        self.on_change = on_change
        self._conns: dict[str, Connection] = {}
        self._starter: asyncio.Task[None] | None = None
        self._module: Any = None  # app.agent.extensions.mcp.connection, once loaded
        self._import_error = ""
        self._closed = False
        self._retired_left: list[str] = []  # ``left`` of the connections a restart replaced
        self.add(servers)

    # -- start ----------------------------------------------------------------------------------

    def add(self, servers: Sequence[ServerConfig]) -> list[str]:
        """Take on the servers of ``servers`` whose name is new (any thread); the next
        ``start()`` starts them. Returns their names."""
        by_name = {s.name: s for s in self.servers}
        added = [by_name.setdefault(s.name, s).name for s in servers if s.name not in by_name]
        self.servers = tuple(sorted(by_name.values(), key=lambda s: s.name))
        return added

    def start(self) -> None:
        """Start every server not started yet (returns at once; idempotent). Needs a running loop."""
        if self._closed or not self.servers:
            return
        if self._module is not None:
            self._start_new()
        elif self._starter is None:
            self._starter = asyncio.get_running_loop().create_task(self._start_all(), name="mcp:start")

    async def _start_all(self) -> None:
        try:
            module = await asyncio.to_thread(importlib.import_module, "app.agent.extensions.mcp.connection")
        except Exception as e:  # a broken install fails the servers, never the program
            self._import_error = f"the MCP SDK could not be loaded: {one_line(e, 200)}"
            self._changed()
            return
        if self._closed:
            return
        self._module = module
        self._start_new()  # with those added while the SDK loaded

    def _connect(self, config: ServerConfig) -> None:
        conn: Connection = self._module.Connection(
            config, workspace=self.workspace, start_timeout=self.start_timeout, on_change=self._changed
        )
        self._conns[config.name] = conn
        conn.start()

    def _start_new(self) -> None:
        for config in self.servers:
            if config.name not in self._conns:
                self._connect(config)
        self._changed()

    async def restart(self, name: str) -> ServerStatus:
        """Stop the server ``name`` (whatever its state) and start it again, the way back after
        it failed; returns its status once it is ready or failed (within its start bound).
        ``KeyError`` for a name no server has."""
        config = next((s for s in self.servers if s.name == name), None)
        if config is None:
            raise KeyError(name)
        old = self._conns.pop(name, None)
        if old is not None:
            await old.close()
            self._retired_left += old.left
        if (
            not self._closed and name not in self._conns
        ):  # not closed, nor restarted by another call meanwhile
            if self._module is None:
                self.start()  # the SDK still loads (or failed to): it starts them all
            else:
                self._connect(config)
                self._changed()
        conn = self._conns.get(name)
        if conn is not None:
            await conn.settled.wait()  # bounded: a start that takes too long fails
        return next(s for s in self.status() if s.name == name)

    def _changed(self) -> None:
        if self.on_change is not None:
            with suppress(Exception):  # a screen that cannot refresh never stops a server
                self.on_change()

    async def wait_ready(self, timeout: float | None = None) -> list[ServerStatus]:
        """Start the servers if not yet, then wait until none is still starting, or ``timeout``
        seconds (``None``: each server's own start bound, after the SDK is loaded)."""
        self.start()

        async def settled() -> None:
            if self._starter is not None:
                await asyncio.wait({self._starter})
            await asyncio.gather(*(c.settled.wait() for c in list(self._conns.values())))

        with suppress(TimeoutError):
            await asyncio.wait_for(settled(), timeout)
        return self.status()

    # -- what there is --------------------------------------------------------------------------

    def _state(self, name: str) -> tuple[State, str]:
        conn = self._conns.get(name)
        if conn is not None:
            return conn.state, conn.reason
        if self._import_error:
            return "failed", self._import_error
        return ("stopped", "") if self._closed else ("starting", "")

    def _ready(self) -> list[Connection]:
        return [c for c in self._conns.values() if c.state == "ready"]

    def _named_tools(self) -> tuple[list[McpTool], list[str]]:
        found = {(c.config.name, t.name): t for c in self._ready() for t in c.tools}
        named, refused = assign_names(found)
        tools = [
            McpTool(api, s, t, found[s, t].description, found[s, t].input_schema, found[s, t].read_only)
            for api, (s, t) in named.items()
        ]
        return tools, refused

    def tools(self, read_only: bool = False) -> list[McpTool]:
        """The ready servers' tools, sorted by server then tool; ``read_only``: only those their
        server marks read-only (``readOnlyHint``), for a sub-agent."""
        tools, _ = self._named_tools()
        return [t for t in tools if t.read_only or not read_only]

    def api_tools(self, read_only: bool = False) -> list[ToolParam]:
        """:meth:`tools` as the Messages API's tool definitions, to append after the built-ins."""
        return [t.api() for t in self.tools(read_only)]

    def refused(self) -> list[str]:
        """One line for each tool left out (a name over 64 characters, or one already taken)."""
        return self._named_tools()[1]

    def tool(self, name: str) -> McpTool | None:
        return next((t for t in self.tools() if t.name == name), None)

    def prompts(self) -> list[McpPrompt]:
        """The ready servers' prompts as commands (``mcp__SERVER__PROMPT``), sorted."""
        found = {(c.config.name, p.name): p for c in self._ready() for p in c.prompts}
        named, _ = assign_names(found)
        return [
            McpPrompt(cmd, s, p, found[s, p].description, found[s, p].arguments)
            for cmd, (s, p) in named.items()
        ]

    def status(self) -> list[ServerStatus]:
        """Every configured server for ``/mcp``, sorted by name."""
        tools, prompts = self.tools(), self.prompts()
        out = []
        for s in self.servers:
            state, reason = self._state(s.name)
            conn = self._conns.get(s.name)
            out.append(
                ServerStatus(
                    s.name,
                    s.source,
                    s.transport,
                    s.describe(),
                    state,
                    reason,
                    tuple(t.name for t in tools if t.server == s.name),
                    tuple(p.command for p in prompts if p.server == s.name),
                    conn.pid if conn is not None else None,
                )
            )
        return out

    # -- use ------------------------------------------------------------------------------------

    def why_unavailable(self, name: str) -> str:
        """Why the tool the model knows as ``name`` cannot be called (its server is not ready)."""
        for s in self.servers:
            if name.startswith(f"{PREFIX}{s.name}__"):
                state, reason = self._state(s.name)
                if state != "ready":
                    return f"{name}: {unavailable(s.name, state, reason)}"
        return f"unknown MCP tool {name!r}"

    async def call(self, name: str, arguments: JsonObject, *, timeout: float | None = None) -> McpResult:
        """Call the tool the model knows as ``name``. Never raises (but for cancellation): a
        timeout, a server that fails or exits, an error the server reports, all come back as an
        ``is_error`` result of one line. The result is whole: bound it as any tool's."""
        tool = self.tool(name)
        conn = self._conns.get(tool.server) if tool is not None else None
        if tool is None or conn is None:
            return McpResult(self.why_unavailable(name), is_error=True)
        args = dict(arguments)

        async def work(client: Any) -> McpResult:
            return tool_result(await client.call_tool(tool.tool, args))

        try:
            result: McpResult = await conn.request(
                work, timeout if timeout is not None else self.call_timeout
            )
        except McpError as e:
            return McpResult(f"{name} failed: {e}", is_error=True)
        # An error the server reports is what it says, as its stderr is: its secrets masked.
        return McpResult(conn.mask(result.content), is_error=True) if result.is_error else result

    async def get_prompt(
        self,
        server: str,
        name: str,
        arguments: Mapping[str, str] | None = None,
        *,
        timeout: float | None = None,
    ) -> str:
        """The text of a server's prompt (its messages, each block as text or a one-line note);
        raises :class:`McpError` (one line) when it cannot be had."""
        conn = self._conns.get(server)
        if conn is None:
            state, reason = (
                self._state(server) if any(s.name == server for s in self.servers) else ("unknown", "")
            )
            raise McpError(unavailable(server, state, reason))
        args = dict(arguments) if arguments is not None else None

        async def work(client: Any) -> str:
            result = await client.get_prompt(name, args)
            parts = []
            for message in result.messages:
                content = message.content
                parts.append(content_text(content if isinstance(content, list) else [content]))
            return "\n\n".join(p for p in parts if p)

        text: str = await conn.request(work, timeout if timeout is not None else self.call_timeout)
        return text

    async def close(self) -> None:
        """Shut every server down (stdio: the process group and what left it, terminated then
        killed after a short grace) and wait for it; tools and prompts are gone after. What
        could not be stopped is in ``left`` (and logged), a line per process."""
        self._closed = True
        if self._starter is not None and not self._starter.done():
            self._starter.cancel()
            await asyncio.wait({self._starter})
        await asyncio.gather(*(c.close() for c in list(self._conns.values())))
        self._changed()

    @property
    def left(self) -> list[str]:
        """A line for each process of a stopped (or failed) server that could not be stopped."""
        return [*self._retired_left, *(line for c in self._conns.values() for line in c.left)]
