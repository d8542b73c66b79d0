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

from app.agent.config_layers import local_settings_path, user_config_path
from app.agent.permission_edits import add_rule, gitignore_line_missing, remove_rule
from app.agent.permissions import parse_rule_list

if TYPE_CHECKING:
    from app.agent.extensions import Extensions, Waiting
    from app.agent.runtime import Runtime

__all__ = [
    "CommandView",
    "ExtensionsService",
    "McpServerView",
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
    state: str  # starting | ready | failed | closed
    reason: str
    tools: tuple[str, ...]
    prompts: tuple[str, ...]


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


@dataclass(frozen=True)
class Expanded:
    """A typed custom command or MCP prompt, as the prompt to send."""

    prompt: str
    name: str  # the command, with its slash
    allowed_tools: tuple[str, ...] = ()  # its front matter's rules, as text
    model: str | None = None


_TITLES = {
    "mcp": "MCP servers (.mcp.json): these commands would run",
    "commands": "custom commands (.PseudoClaude/commands, .claude/commands)",
    "hooks": "hooks (.PseudoClaude/settings.toml): these commands would run around tool calls",
    "permissions": "allow rules (.PseudoClaude/settings.toml)",
}


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

        editable = {str(local_settings_path(self._rt.workspace).relative_to(self._rt.workspace)),
                    str(user_config_path(self._rt.ext.home))}
        return [RuleView(text=r.rule.text, list=r.list, where=r.source, scope=r.scope, state=state,
                         removable=r.source in editable and state == "active")
                for r, state in self.ext.rules.listing()]

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
                        done.append(str(p.relative_to(self._rt.workspace)) if p.is_relative_to(self._rt.workspace)
                                    else str(p))
            except (ValueError, OSError) as e:
                return str(e)
            if not done:
                return (f"no rule {text!r} in {paths[0].relative_to(self._rt.workspace)} or {paths[1]}: "
                        "the project's shared settings are edited by hand")
            self.ext.load()
            return f"removed {text} from {', '.join(done)}"

        return await asyncio.to_thread(remove)

    # -- MCP ----------------------------------------------------------------------------------------

    def servers(self) -> list[McpServerView]:
        mcp = self.ext.mcp
        if mcp is None:
            return []
        return [McpServerView(s.name, s.source, s.describe, s.state, s.reason, s.tools, s.prompts)
                for s in mcp.status()]

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
        out = [CommandView(name, hint, description) for name, hint, description in self.ext.commands.listing()]
        if self.ext.mcp is not None:
            out += [CommandView(f"/{p.command}", " ".join(a.name.upper() for a in p.arguments), p.description)
                    for p in self.ext.mcp.prompts()]
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
        return [WaitingView(w.kind, _TITLES.get(w.kind, w.kind), w.shown) for w in self._waiting]

    async def trust(self) -> None:
        """Trust what ``pending()`` showed, read the files again, start the servers it lets in."""
        waiting, self._waiting = self._waiting, []
        if not waiting:
            return
        await asyncio.to_thread(self.ext.trust, waiting)
        self.ext.start()

    def notes(self) -> list[str]:
        return self.ext.notes()
