"""What a workspace adds to the agent, for a face: permission rules (listed, saved, removed), MCP
servers (their state, tools and prompts), custom commands (listed, expanded) and what the project
brings that waits for the person's trust.

Plain data in and out. Saving or removing a rule writes the personal settings file and reads every
file again (``Extensions.load``) off the event loop, so the next call is decided by it.
"""

from __future__ import annotations

import asyncio
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING

from app.agent.config.layers import local_settings_path, user_config_path
from app.agent.permissions.edits import add_rule, gitignore_line_missing, remove_rule
from app.agent.permissions.rules import parse_rule_list

if TYPE_CHECKING:
    from app.agent.extensions.extensions import Extensions, Waiting
    from app.agent.runtime import Runtime

__all__ = [
    "CommandView",
    "ExtensionsService",
    "McpServerView",
    "Restarted",
    "RuleView",
    "SavedRule",
    "WaitingView",
    "check_rules",
]


@dataclass(frozen=True)
class RuleView:
    """One rule for ``/permissions``: ``where`` is the file (or flag) it comes from."""

    text: str
    list: str  # allow | ask | deny
    where: str
    scope: str
    state: str  # "active" or "waiting for trust"
    removable: bool  # in a file this app may edit (the personal settings file, the user's config)


@dataclass(frozen=True)
class SavedRule:
    """What saving an "always allow" did, each a line for the chat."""

    saved: tuple[str, ...]  # the rules written (those already there are not repeated)
    path: str
    gitignore_line: str | None  # the line .gitignore lacks to keep that file out of git
    error: str | None = None  # why nothing was saved (the call still ran)


@dataclass(frozen=True)
class McpServerView:
    name: str
    source: str
    describe: str  # the command line or URL (secrets redacted)
    state: str  # waiting for trust | starting | ready | failed | stopped
    reason: str  # why it failed (its secrets masked)
    tools: tuple[str, ...]
    prompts: tuple[str, ...]


WAITING = "waiting for trust"


@dataclass(frozen=True)
class Restarted:
    """How ``/mcp restart NAME`` went: a line for the chat."""

    line: str
    error: bool = False


@dataclass(frozen=True)
class CommandView:
    """A command for ``/help`` and the completion: ``name`` with its slash."""

    name: str
    hint: str
    description: str


@dataclass(frozen=True)
class BrokenView:
    name: str
    path: str
    why: str


@dataclass(frozen=True)
class WaitingView:
    """One kind of what the project brings that waits for trust, and exactly what is shown."""

    kind: str  # mcp | commands | hooks | permissions
    title: str
    shown: str
    tally: str = ""  # how many, said: "2 hooks", "1 MCP server"


@dataclass(frozen=True)
class Expanded:
    """A typed custom command or MCP prompt, as the prompt to send."""

    prompt: str
    name: str  # the command, with its slash
    allowed_tools: tuple[str, ...] = ()  # its front matter's rules, as text
    model: str | None = None


# Each title fits one line of the trust window at 80 columns.
_TITLES = {
    "mcp": "MCP servers (.mcp.json): these commands would run",
    "commands": "custom commands (.PseudoClaude/commands, .claude/commands)",
    "hooks": "hooks: these commands would run by themselves, at their events",
    "permissions": "allow rules, permission mode (.PseudoClaude/settings.toml)",
}
_NOUNS = {
    "mcp": ("MCP server", "MCP servers"),
    "commands": ("command", "commands"),
    "hooks": ("hook", "hooks"),
    "permissions": ("allow rule", "allow rules"),
}


def tally(kind: str, count: int) -> str:
    """``2 hooks``, ``1 MCP server``: how many of a kind wait (the plural alone when not counted)."""
    one, many = _NOUNS.get(kind, (kind, kind))
    return many if count <= 0 else f"{count} {one if count == 1 else many}"


def check_rules(text: str) -> str | None:
    """Why ``text`` (rules separated by commas) cannot be saved, in one line; None: it can."""
    try:
        rules = parse_rule_list(text, what="the rule")
    except ValueError as e:
        return str(e)
    return None if rules else "the rule is empty"


class ExtensionsService:
    def __init__(self, rt: Runtime) -> None:
        self._rt = rt
        self._waiting: list[Waiting] = []

    @property
    def ext(self) -> Extensions:
        return self._rt.ext

    # -- permission rules -------------------------------------------------------------------------

    def rules(self) -> list[RuleView]:

        editable = {
            str(local_settings_path(self._rt.workspace).relative_to(self._rt.workspace)),
            str(user_config_path(self._rt.ext.home)),
        }
        return [
            RuleView(
                text=r.rule.text,
                list=r.list,
                where=r.source,
                scope=r.scope,
                state=state,
                removable=r.source in editable and state == "active",
            )
            for r, state in self.ext.rules.listing()
        ]

    async def save_rules(self, text: str) -> SavedRule:
        """Append the rules (comma-separated) to the project's personal settings file's allow
        list, then read the files again: the next identical call is decided by them."""
        path = local_settings_path(self._rt.workspace)
        shown = str(path.relative_to(self._rt.workspace))

        def save() -> SavedRule:
            try:
                rules = parse_rule_list(text, what="the rule")
                saved = tuple(r.text for r in rules if add_rule(path, r.text))
            except (ValueError, OSError) as e:
                return SavedRule((), shown, None, error=str(e))
            self.ext.load()
            return SavedRule(saved, shown, gitignore_line_missing(self._rt.workspace))

        return await asyncio.to_thread(save)

    async def remove_rule(self, text: str) -> str:
        """Remove ``text`` from the file(s) this app may edit; one line saying what happened."""

        paths = (local_settings_path(self._rt.workspace), user_config_path(self.ext.home))

        def remove() -> str:
            done = []
            try:
                for p in paths:
                    if remove_rule(p, text):
                        done.append(
                            str(p.relative_to(self._rt.workspace))
                            if p.is_relative_to(self._rt.workspace)
                            else str(p)
                        )
            except (ValueError, OSError) as e:
                return str(e)
            if not done:
                return (
                    f"no rule {text!r} in {paths[0].relative_to(self._rt.workspace)} or {paths[1]}: "
                    "the project's shared settings are edited by hand"
                )
            self.ext.load()
            return f"removed {text} from {', '.join(done)}"

        return await asyncio.to_thread(remove)

    # -- MCP ----------------------------------------------------------------------------------------

    def servers(self) -> list[McpServerView]:
        """Every server, by name: the client's in their state, and the project's that wait for
        the person's trust (never started)."""
        mcp = self.ext.mcp
        views = [
            McpServerView(s.name, s.source, s.describe, s.state, s.reason, s.tools, s.prompts)
            for s in (mcp.status() if mcp is not None else [])
        ]
        known = {v.name for v in views}
        waiting = set(self.ext.servers.waiting) - known
        views += [
            McpServerView(s.name, s.source, s.describe(), WAITING, "", (), ())
            for s in self.ext.servers.project.servers
            if s.name in waiting
        ]
        return sorted(views, key=lambda v: v.name)

    def cannot_restart(self, name: str) -> str | None:
        """Why ``/mcp restart NAME`` cannot restart ``name`` (one line); None: it can."""
        views = self.servers()
        view = next((v for v in views if v.name == name), None)
        if view is not None and view.state == WAITING:
            return f"MCP server {name} waits for your trust: it is asked about at the next start"
        if view is None or self.ext.mcp is None:
            known = ", ".join(v.name for v in views)
            return f"no MCP server named {name!r}" + (f" (there are: {known})" if known else "")
        return None

    async def restart(self, name: str) -> Restarted:
        """``/mcp restart NAME``: the server stopped (what it started with it) and started
        again; one line of how it went, once it is ready or failed."""
        refused = self.cannot_restart(name)
        if refused is not None or self.ext.mcp is None:
            return Restarted(refused or f"no MCP server named {name!r}", error=True)
        status = await self.ext.mcp.restart(name)
        if status.state == "ready":
            return Restarted(f"MCP server {name} restarted: ready, {len(status.tools)} tool(s)")
        if status.state == "failed":
            return Restarted(
                f"MCP server {name} restarted but failed: {status.reason or 'no reason given'}", error=True
            )
        return Restarted(f"MCP server {name} restarted: {status.state}")

    def left_running(self) -> list[str]:
        """A line for each process of a stopped MCP server that could not be stopped (its PID)."""
        return list(self.ext.mcp.left) if self.ext.mcp is not None else []

    async def mcp_prompt(self, command: str, arguments: str) -> Expanded | None:
        """``/mcp__server__prompt args`` as the prompt's text; None when no ready server has that
        prompt. Arguments: ``name=value`` by name, other words fill the prompt's arguments in
        order. Raises McpError (one line) when the server cannot answer."""
        mcp = self.ext.mcp
        if mcp is None:
            return None
        prompt = next((p for p in mcp.prompts() if p.command == command), None)
        if prompt is None:
            return None
        try:
            words = shlex.split(arguments)
        except ValueError:
            words = arguments.split()
        named: dict[str, str] = {}
        rest: list[str] = []
        declared = [a.name for a in prompt.arguments]
        for w in words:
            key, eq, value = w.partition("=")
            if eq and key in declared:
                named[key] = value
            else:
                rest.append(w)
        for a in declared:
            if a not in named and rest:
                named[a] = rest.pop(0)
        if rest and declared:
            named[declared[-1]] = " ".join([named.get(declared[-1], ""), *rest]).strip()
        text = await mcp.get_prompt(prompt.server, prompt.name, named or None)
        return Expanded(text, f"/{command}")

    # -- custom commands ----------------------------------------------------------------------------

    def commands(self) -> list[CommandView]:
        """The custom commands, then the MCP servers' prompts, each with its description."""
        out = [
            CommandView(name, hint, description) for name, hint, description in self.ext.commands.listing()
        ]
        if self.ext.mcp is not None:
            out += [
                CommandView(f"/{p.command}", " ".join(a.name.upper() for a in p.arguments), p.description)
                for p in self.ext.mcp.prompts()
            ]
        return out

    def broken(self) -> list[BrokenView]:
        return [BrokenView(b.name or "", str(b.path), b.why) for b in self.ext.commands.broken]

    def expand(self, text: str) -> Expanded | None:
        """A typed ``/name args`` as its custom command's prompt; None when no command has the name."""
        catalog = self.ext.commands
        expanded = catalog.expand_prompt(text)
        if expanded is None:
            # Typed names are read case-insensitively as the app's own commands are.
            head, _, rest = text.strip().partition(" ")
            match = next((c for c in catalog.commands if c.name.lower() == head.lstrip("/").lower()), None)
            expanded = catalog.expand_prompt(f"/{match.name} {rest}") if match is not None else None
        if expanded is None:
            return None
        name = f"/{expanded.command.name}"
        if expanded.allowed_tools:
            # Allowed without asking from now on in this run, as the command's author meant for it.
            self.ext.allow(tuple(expanded.allowed_tools), f"{name} allowed-tools")
        return Expanded(expanded.prompt, name, tuple(r.text for r in expanded.allowed_tools), expanded.model)

    # -- trust ---------------------------------------------------------------------------------------

    def pending(self) -> list[WaitingView]:
        """What waits for trust now (kept: ``trust()`` records exactly what was shown)."""
        self._waiting = list(self.ext.pending())
        return [
            WaitingView(w.kind, _TITLES.get(w.kind, w.kind), w.shown, tally(w.kind, w.count))
            for w in self._waiting
        ]

    async def trust(self) -> list[str]:
        """Trust what ``pending()`` showed, read the files again, start the servers it lets in
        (beside those already running); returns their names."""
        waiting, self._waiting = self._waiting, []
        if not waiting:
            return []
        before = {s.name for s in self.ext.mcp.servers} if self.ext.mcp is not None else set()
        await asyncio.to_thread(self.ext.trust, waiting)
        self._rt.refresh_permission_mode()  # a project's accept-edits may be in force now
        self.ext.start()
        return sorted({s.name for s in self.ext.mcp.servers} - before) if self.ext.mcp is not None else []

    async def settled(self, names: list[str]) -> list[McpServerView]:
        """The servers ``names`` once none is still starting (each within its start bound)."""
        if self.ext.mcp is not None and names:
            await self.ext.mcp.wait_ready()
        return [v for v in self.servers() if v.name in names]

    def notes(self) -> list[str]:
        return self.ext.notes()
