"""One registry of the tools the model can call: the built-ins in their order, then the tools of
each attached source (the MCP servers' ready tools, which come and go), in the source's order.

The runner offers ``offered(planning).api()`` (the tools only for plan mode while planning), looks
each call up with ``get``, validates its input with the tool's model and runs it with
``call_tool``; a sub-agent gets ``read_only()``, a view of the same tools.
``call_tool`` never raises for bad input or a failing tool: it returns an ``is_error`` result with a
one-line reason. Only cancellation (``asyncio.CancelledError``) propagates.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Protocol

from pydantic import ValidationError

from app.agent.conversation.blocks import scrub_text
from app.agent.tools.base import (
    MAX_REASON_CHARS,
    ToolContext,
    ToolError,
    ToolInput,
    ToolResult,
    quote,
)
from app.agent.tools.builtin import builtins
from app.agent.tools.tool import AnyTool, RuleTarget, ToolParam
from memory.text.lines import one_line

__all__ = [
    "BUILTIN_TOOLS",
    "ToolRegistry",
    "ToolSource",
    "api_tools",
    "call_tool",
    "run_tool",
]

log = logging.getLogger(__name__)


class ToolSource(Protocol):
    """Tools that come and go (an MCP server's, once it is ready)."""

    def tools(self) -> Sequence[AnyTool]: ...

    def missing(self, name: str) -> str | None:
        """Why a tool of this source named ``name`` cannot be called now; None: not one of its."""


class ToolRegistry:
    """The tools, by name. ``register`` adds one (a name taken is an error); ``attach`` adds a
    source whose tools follow the registered ones. ``read_only()`` and ``only()`` are views: they
    see what is registered or attached later too."""

    def __init__(self, tools: Iterable[AnyTool] = (), sources: Iterable[ToolSource] = ()) -> None:
        self._tools: dict[str, AnyTool] = {}
        self._sources: list[ToolSource] = list(sources)
        self._keep: Callable[[AnyTool], bool] = lambda _tool: True
        self._base: ToolRegistry | None = None
        for tool in tools:
            self.register(tool)

    # -- building ---------------------------------------------------------------------------------

    def register(self, tool: AnyTool) -> None:
        home = self._root()
        if tool.name in home._tools:
            raise ValueError(f"a tool named {tool.name!r} is registered already")
        home._tools[tool.name] = tool

    def attach(self, source: ToolSource) -> None:
        self._root()._sources.append(source)

    def copy(self) -> ToolRegistry:
        """A registry of the same tools and sources that registers and attaches on its own."""
        home = self._root()
        return ToolRegistry(home._tools.values(), home._sources)

    def _view(self, keep: Callable[[AnyTool], bool]) -> ToolRegistry:
        view = ToolRegistry()
        view._base, outer = self._root(), self._keep
        view._keep = lambda tool: outer(tool) and keep(tool)
        return view

    def read_only(self) -> ToolRegistry:
        """The tools that change nothing (a sub-agent's)."""
        return self._view(lambda tool: tool.read_only)

    def offered(self, planning: bool) -> ToolRegistry:
        """The tools a request offers: those only for plan mode only while ``planning``."""
        return self if planning else self._view(lambda tool: not tool.planning_only)

    def only(self, names: Iterable[str]) -> ToolRegistry:
        """The tools named (in the registry's order, not the names')."""
        wanted = frozenset(names)
        return self._view(lambda tool: tool.name in wanted)

    def _root(self) -> ToolRegistry:
        return self._base if self._base is not None else self

    # -- reading ----------------------------------------------------------------------------------

    def __iter__(self) -> Iterator[AnyTool]:
        home = self._root()
        found = [*home._tools.values(), *(t for s in home._sources for t in s.tools())]
        return iter([t for t in found if self._keep(t)])

    def names(self) -> list[str]:
        return [t.name for t in self]

    def get(self, name: str) -> AnyTool | None:
        home = self._root()
        tool = home._tools.get(name)
        if tool is None:
            tool = next((t for s in home._sources for t in s.tools() if t.name == name), None)
        return tool if tool is not None and self._keep(tool) else None

    def named(self, name: str) -> AnyTool | None:
        """The tool a permission rule names: by its name or one of its aliases."""
        tool = self.get(name)
        return tool or next((t for t in self if name in t.aliases), None)

    def missing(self, name: str) -> str:
        """Why a call of ``name`` cannot run (its server is not ready, no such tool)."""
        for source in self._root()._sources:
            why = source.missing(name)
            if why is not None:
                return why
        return f"unknown or unavailable tool {name!r}"

    def api(self) -> list[ToolParam]:
        """Every tool as the Messages API takes it, in order (fresh copies)."""
        return [t.api() for t in self]

    def target_of(self, name: str, raw: object) -> RuleTarget | None:
        """What a rule's pattern matches of a call of ``name`` with ``raw`` input, as far as the
        input shows it (a hook's matcher sees what the model sent); None: only whole-tool rules."""
        tool = self.get(name)
        args = _as_far_as_shown(tool, raw) if tool is not None else None
        try:
            return tool.rule_target(args) if tool is not None and args is not None else None
        except (AttributeError, ValidationError):  # a field it lacks, or one of the wrong type
            return None

    def paths_of(self, name: str, raw: object) -> list[str]:
        """The paths a call of ``name`` with ``raw`` input names, as far as the input shows them."""
        tool = self.get(name)
        args = _as_far_as_shown(tool, raw) if tool is not None else None
        try:
            found: list[object] = list(tool.paths(args)) if tool is not None and args is not None else []
        except AttributeError:  # a field it lacks
            return []
        # A field as sent, unchecked, may be anything: only text is a path.
        return [p for p in found if isinstance(p, str)]


def _as_far_as_shown(tool: AnyTool, raw: object) -> ToolInput | None:
    """``raw`` as the tool's input: validated, or when it is not valid, its fields as sent
    (unchecked; read only for what a rule or memory's paths look at)."""
    if not isinstance(raw, dict):
        return None
    try:
        return tool.parse(raw)
    except ToolError:
        return tool.Input.model_construct(**{k: v for k, v in raw.items() if isinstance(k, str)})


async def call_tool(tool: AnyTool, args: object, ctx: ToolContext) -> ToolResult:
    """Run one call of ``tool`` with its validated ``args``; a refusal or a failure comes back as
    an ``is_error`` result of one line."""
    try:
        result = await tool.run(args, ctx)
    except ToolError as e:
        result = ToolResult(content=one_line(e, MAX_REASON_CHARS) or f"{tool.name} failed", is_error=True)
    except Exception as e:  # the contract: a failing tool is a result, never an exception
        reason = one_line(f"{tool.name} failed: {type(e).__name__}: {e}", MAX_REASON_CHARS)
        result = ToolResult(content=reason, is_error=True)
    # The one scrub of a result: a lone surrogate (an undecodable file name, a model's "\\ud800")
    # cannot be encoded for the API or the session log, so it never leaves a tool.
    content = scrub_text(result.content)
    return result if content == result.content else result.model_copy(update={"content": content})


BUILTIN_TOOLS = ToolRegistry(builtins())


async def run_tool(
    name: str, raw: object, ctx: ToolContext, tools: ToolRegistry = BUILTIN_TOOLS
) -> ToolResult:
    """A call by name, its input as the model sent it: looked up, validated, run (``call_tool``)."""
    tool = tools.get(name)
    if tool is None:
        available = ", ".join(tools.names())
        return ToolResult(
            content=f"unknown tool {quote(str(name))}; available tools: {available}", is_error=True
        )
    try:
        args = tool.parse(raw)
    except ToolError as e:
        return ToolResult(content=one_line(e, MAX_REASON_CHARS) or f"{name} failed", is_error=True)
    return await call_tool(tool, args, ctx)


def api_tools(names: Iterable[str] | None = None, tools: ToolRegistry = BUILTIN_TOOLS) -> list[ToolParam]:
    """The tools as the Messages API takes them, in the registry's order; ``names`` picks some
    (an unknown one is a ValueError). Fresh copies: the caller may change them."""
    if names is None:
        return tools.api()
    wanted = set(names)
    unknown = sorted(wanted - set(tools.names()))
    if unknown:
        raise ValueError(f"unknown tool name(s): {', '.join(unknown)}")
    return tools.only(wanted).api()
