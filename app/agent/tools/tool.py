"""A tool is one object: its name and description for the model, its input model (the only check
of its input), its kind, how it runs, what the permission window shows of a call (``preview``),
what a permission rule matches of a call (``rule_target``) and the paths a call touches.

Every tool the model can call is a ``Tool`` in one ``ToolRegistry`` (app/agent/tools/registry.py):
the built-ins (one module each in app/agent/tools/builtin/), the MCP servers' tools, and any tool a
caller registers. The runner, the gate, the sub-agent's tool list and memory's paths all ask the
tool; nothing decides by a tool's name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from enum import StrEnum
from typing import Any, Generic, Literal, TypedDict, TypeVar

from pydantic import BaseModel, ConfigDict

from app.agent.tools.base import ToolContext, ToolError, ToolInput, ToolResult, parse_input
from app.agent.tools.schema import JsonObject, input_schema
from memory.text.terminal import strip_terminal

__all__ = [
    "AnyTool",
    "Preview",
    "PreviewKind",
    "RuleTarget",
    "TargetKind",
    "Tool",
    "ToolKind",
    "ToolParam",
]


class ToolKind(StrEnum):
    """What a tool does to the world: it decides whether a call asks by default and whether the
    tool is read-only (a sub-agent's tools, later plan mode)."""

    READ = "read"  # reads the workspace or the session
    WRITE = "write"  # changes files
    EXECUTE = "execute"  # runs something that may do anything
    NETWORK = "network"  # reaches a host
    MEMORY = "memory"  # reads long-term memory
    INTERACTION = "interaction"  # talks to the person or to a sub-agent, changes nothing itself


PreviewKind = Literal["diff", "text", "command"]
# What a permission rule's pattern matches: a command line (``bash(git status:*)``), a
# workspace path (``edit_file(src/**)``) or a host (``web_fetch(domain:docs.python.org)``).
TargetKind = Literal["command", "path", "domain"]


class Preview(BaseModel):
    """What the permission window shows of a call: one ``summary`` line and a ``body`` drawn as
    a diff, plain text or a command line. Terminal escapes are already stripped."""

    model_config = ConfigDict(frozen=True)

    summary: str
    body: str = ""
    kind: PreviewKind = "text"


class RuleTarget(BaseModel):
    """What of one call a permission rule's pattern is matched against."""

    model_config = ConfigDict(frozen=True)

    kind: TargetKind
    value: str

    @classmethod
    def command(cls, line: str) -> RuleTarget:
        return cls(kind="command", value=line)

    @classmethod
    def path(cls, raw: str | None) -> RuleTarget:
        """A path as the tool was given it (none given: a pattern matches nothing)."""
        return cls(kind="path", value=raw or "")

    @classmethod
    def domain(cls, host: str) -> RuleTarget:
        """The host a call reaches, as the URL names it (lower case; none: a pattern matches
        nothing)."""
        return cls(kind="domain", value=host)


class ToolParam(TypedDict):
    """A tool as the Messages API's ``tools`` takes it."""

    name: str
    description: str
    input_schema: JsonObject


InputT = TypeVar("InputT", bound=ToolInput)


class Tool(ABC, Generic[InputT]):
    """One tool. A subclass sets ``name``, ``description``, ``Input`` and ``kind`` and writes
    ``run``; the rest has defaults that fit a tool that touches no path and takes no pattern."""

    name: str
    description: str
    Input: type[InputT]
    kind: ToolKind
    # The telling inputs of a call, in order, each with how it reads on one line ("in {}").
    display: tuple[tuple[str, str], ...] = ()
    # Other names a permission rule may call it by (Claude Code's ``Edit`` for ``edit_file``).
    aliases: tuple[str, ...] = ()
    # What a pattern in a rule naming this tool matches; None: its rules take no pattern.
    rule_kind: TargetKind | None = None
    # A large result goes to disk, the conversation keeping its head and tail (False: the tool
    # reads from there already, bounded, and a stub of its answer would be no answer).
    offloads: bool = True
    # Offered to the model only while the mode is ``plan`` (``exit_plan_mode``, its way out).
    planning_only: bool = False

    @property
    def read_only(self) -> bool:
        """Changes nothing: a sub-agent gets only these tools."""
        return self.kind in (ToolKind.READ, ToolKind.MEMORY)

    @property
    def plan_safe(self) -> bool:
        """Runs in plan mode: it changes nothing (read-only), or it only talks to the person or to
        a sub-agent that has the read-only tools (``task``, ``exit_plan_mode``)."""
        return self.read_only or self.kind == ToolKind.INTERACTION

    @property
    def asks(self) -> bool:
        """A call no rule decides asks the person (it runs otherwise)."""
        return self.kind in (ToolKind.WRITE, ToolKind.EXECUTE, ToolKind.NETWORK)

    def parse(self, raw: object) -> InputT:
        """The call's input as the model sent it, validated; ToolError with one reason."""
        if not isinstance(raw, dict):
            raise ToolError(f"{self.name}: the input must be a JSON object")
        return parse_input(self.Input, raw)

    @abstractmethod
    async def run(self, args: InputT, ctx: ToolContext) -> ToolResult:
        """Do the call. A refusal or failure raises ToolError (its one line is the result)."""

    def precheck(self, args: InputT, ctx: ToolContext) -> None:
        """Raise the ToolError the call would end in whatever the person answers (a write into
        .git/, outside the workspace): checked before anyone is asked. Blocking (it may stat the
        disk): called in a worker thread."""

    def preview(self, args: InputT, ctx: ToolContext) -> Preview:
        """What the permission window shows. Blocking (it may read a file): called in a thread."""
        shown = ", ".join(f"{k}={v!r}" for k, v in args.model_dump(exclude_unset=True).items())
        return Preview(summary=strip_terminal(f"{self.name}({shown})"[:200], keep_newlines=False))

    def rule_target(self, args: InputT) -> RuleTarget | None:
        """What a rule's pattern is matched against for this call; None: only whole-tool rules."""
        return None

    def paths(self, args: InputT) -> list[str]:
        """The workspace paths the call names, as given (memory cites what a turn touched)."""
        return []

    def input_schema(self) -> JsonObject:
        return input_schema(self.Input)

    def api(self) -> ToolParam:
        """The tool as the Messages API is given it (a fresh copy: the caller may change it)."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema()}


# The registry holds tools of every input model.
AnyTool = Tool[Any]
