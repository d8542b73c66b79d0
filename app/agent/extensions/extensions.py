"""What a workspace adds to the built-in agent: MCP servers, permission rules that last, hooks and
custom commands, loaded together from the user's config and the project's files.

Nothing a cloned repository brings runs or reaches the model before the person says so: the
project's ``.mcp.json`` servers, its commands, its hooks and its allow rules each wait for trust
(``app.agent.config.project_trust``, keyed by the repository's identity and a hash of what was shown);
``pending()`` lists what waits, ``trust()`` records a yes and loads it. The user's own files are
trusted as they are.

Loading is blocking (small files, and a ``git ls-files``): the runtime calls ``load`` off the event
loop. The MCP servers start with ``start()`` on the running loop and never hold a turn up: their
tools join the next request once they are ready (print mode waits for them first): ``Extensions``
is a source of the tool registry, whose MCP tools are agent tools like any other.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.agent.config.layers import PendingTrust, read_layers
from app.agent.config.project_trust import Kind, ProjectTrust
from app.agent.extensions.custom_commands import CommandCatalog, load_custom_commands
from app.agent.extensions.hooks import HookConfig, HookEvent, HookOutcome, load_hooks, run_hooks
from app.agent.extensions.mcp import PREFIX, LoadedServers, McpManager, load_servers, trust_project_servers
from app.agent.extensions.mcp.agent_tool import McpAgentTool
from app.agent.permissions.loading import load_permission_rules
from app.agent.permissions.rules import PermissionRules, Rule
from app.agent.tools.registry import BUILTIN_TOOLS, ToolRegistry
from app.agent.tools.tool import AnyTool
from memory.text.lines import one_line

__all__ = ["APP_COMMANDS", "Extensions", "Waiting"]

log = logging.getLogger(__name__)

# The app's own slash commands: a custom command may not take one of these names (print mode
# refuses the same ones as the app; a test keeps this list equal to the app's table).
APP_COMMANDS = (
    "help",
    "clear",
    "memory",
    "pending",
    "remember",
    "undo",
    "consolidate",
    "model",
    "mode",
    "resume",
    "cost",
    "compact",
    "quit",
    "permissions",
    "mcp",
    "rewind",
    "todos",
)


@dataclass(frozen=True)
class Waiting:
    """One kind of what the project brings that waits for the person's trust."""

    kind: Kind
    shown: str  # exactly what the person is asked about (a server's command line, the rules…)
    digest: str
    count: int = 0  # how many of the kind: hooks, servers, allow rules, commands


class Extensions:
    """``builtin``: the app's own command names (a custom command may not take one);
    ``trust_project_mcp``: this run starts the project's servers without a record (print mode's
    ``--trust-project-mcp``); ``tools``: the tools a permission rule may name."""

    def __init__(
        self,
        workspace: Path,
        home: Path | None = None,
        *,
        builtin: Iterable[str] = (),
        trust_project_mcp: bool = False,
        start_timeout: float = 10.0,
        call_timeout: float = 120.0,
        on_change: Callable[[], None] | None = None,
        tools: ToolRegistry = BUILTIN_TOOLS,
    ) -> None:
        self.workspace = Path(workspace)
        self.registry = tools
        self.home = home
        self._builtin = tuple(builtin)
        self._trust_project_mcp = trust_project_mcp
        self._start_timeout, self._call_timeout = start_timeout, call_timeout
        self._on_change = on_change
        self.rules = PermissionRules(workspace=self.workspace)
        self.hooks = HookConfig(workspace=self.workspace)
        self.commands = CommandCatalog()
        self.servers = LoadedServers()
        self.mcp: McpManager | None = None
        # --allow-tools and the custom commands' allowed-tools, as given: kept over a reload.
        self.extra_rules: list[tuple[tuple[Rule, ...], str]] = []
        # Where a hook's failure (line, True) and a block nothing else shows (line, False) are
        # said, each time: the app's chat, print mode's stderr. None: the log.
        self.on_hook_note: Callable[[str, bool], None] | None = None
        self.start_notes: tuple[tuple[str, bool], ...] = ()  # what the last SessionStart run said

    # -- loading (blocking) ---------------------------------------------------------------------

    def load(self) -> None:
        """Read every file again: the rules, hooks, commands and the servers' configuration. The
        servers already started keep running; new ones (a project's, once trusted, beside the
        user's running ones) start with the next ``start()``."""
        trust = ProjectTrust(self.workspace, self.home)
        layers = read_layers(self.workspace, self.home)
        rules = load_permission_rules(
            self.workspace, self.home, trust=trust, layers=layers, tools=self.registry
        )
        for extra, source in self.extra_rules:
            rules = rules.with_rules(extra, scope="flag", source=source)
        self.rules = rules
        self.hooks = load_hooks(self.workspace, self.home, trust=trust, layers=layers)
        self.start_notes = ()  # of hooks that may be gone
        self.commands = load_custom_commands(self.workspace, self.home, builtin=self._builtin, trust=trust)
        self.servers = load_servers(self.workspace, self.home, trust_project=self._trust_project_mcp)
        if self.mcp is not None:
            self.mcp.add(self.servers.servers)
        elif self.servers.servers:
            self.mcp = McpManager(
                self.servers.servers,
                workspace=self.workspace,
                start_timeout=self._start_timeout,
                call_timeout=self._call_timeout,
                on_change=self._on_change,
            )

    def allow(self, rules: tuple[Rule, ...], source: str) -> None:
        """Rules given for this run only (print mode's ``--allow-tools``, a custom command's
        ``allowed-tools``), on top of the files'."""
        self.extra_rules.append((rules, source))
        self.rules = self.rules.with_rules(rules, scope="flag", source=source)

    def pending(self) -> list[Waiting]:
        """What the project brings that waits for trust, one entry per kind, riskiest first: what
        runs without asking (hooks, then MCP servers), what loosens a rule (allow rules), then the
        commands (text the person sends themselves)."""
        out: list[Waiting] = []
        hooks, rules, commands = (
            self.hooks.pending_trust,
            self.rules.pending_trust,
            self.commands.pending_trust,
        )
        if isinstance(hooks, PendingTrust):
            out.append(Waiting(hooks.kind, hooks.shown, hooks.digest, len(self.hooks.waiting)))
        project = self.servers.project
        if self.servers.waiting and project.digest:
            out.append(Waiting("mcp", project.text, project.digest, len(self.servers.waiting)))
        if isinstance(rules, PendingTrust):
            out.append(Waiting(rules.kind, rules.shown, rules.digest, len(self.rules.waiting)))
        if isinstance(commands, PendingTrust):
            out.append(Waiting(commands.kind, commands.shown, commands.digest, len(self.commands.waiting)))
        return out

    def trust(self, waiting: Iterable[Waiting]) -> None:
        """Record the person's yes to each of ``waiting`` (what they were shown), then load again."""
        trust = ProjectTrust(self.workspace, self.home)
        for w in waiting:
            if w.kind == "mcp":
                trust_project_servers(self.workspace, self.servers.project, self.home)
            else:
                trust.trust(w.kind, w.digest)
        self.load()

    def notes(self) -> list[str]:
        """One line each: what was refused or waits (a bad rule or hook, a server). A broken custom
        command is not among them: it is said where it is named (typed, or print mode's prompt)
        and listed in /help, not at every start whatever the prompt."""
        lines = [*self.rules.problems, *self.hooks.problems, *self.servers.warnings]
        lines += list(self.commands.notes)
        if self.servers.waiting:
            lines.append(f"MCP servers of the project wait for your trust: {', '.join(self.servers.waiting)}")
        if self.commands.waiting:
            lines.append(f"{len(self.commands.waiting)} custom command(s) of the project wait for your trust")
        if self.mcp is not None:
            lines += self.mcp.refused()
        return lines

    # -- the servers ----------------------------------------------------------------------------

    def start(self) -> None:
        """Start the MCP servers (on the running loop; returns at once)."""
        if self.mcp is not None:
            self.mcp.start()

    async def wait_ready(self, timeout: float | None = None) -> None:
        if self.mcp is not None:
            await self.mcp.wait_ready(timeout)

    async def close(self) -> None:
        """Every server shut down: no process is left."""
        if self.mcp is not None:
            await self.mcp.close()

    # -- the servers' tools, a source of the tool registry ---------------------------------------

    def tools(self) -> list[AnyTool]:
        """The ready servers' tools, in a stable order (by server, then tool): the request's
        ``tools`` stays the same bytes while the same servers are ready."""
        mcp = self.mcp
        return [McpAgentTool(t, mcp) for t in mcp.tools()] if mcp is not None else []

    def missing(self, name: str) -> str | None:
        """Why the MCP tool ``name`` cannot be called now (its server is not ready); None for a
        name that is no MCP tool's."""
        if not name.startswith(PREFIX):
            return None
        return (
            self.mcp.why_unavailable(name)
            if self.mcp is not None
            else f"unknown or unavailable tool {name!r}"
        )

    # -- hooks ----------------------------------------------------------------------------------

    async def hook(self, event: HookEvent, *, session_id: str, **fields: Any) -> HookOutcome:
        """Run the event's hooks; each failure is said, and so is a block of ``PostToolUse`` or
        ``Stop`` (the model sees its reason; nothing else on screen would)."""
        out = await run_hooks(self.hooks, event, session_id=session_id, **fields)
        notes = [(one_line(line, 400), True) for line in out.warnings]
        if out.blocked and event in ("PostToolUse", "Stop"):
            notes.append(
                (one_line(f"{event} hook `{out.blocker}` blocked (exit 2): {out.reason}", 300), False)
            )
        if event == "SessionStart":
            self.start_notes = tuple(notes)
        for line, failed in notes:
            self._hook_note(line, failed)
        return out

    def _hook_note(self, line: str, failed: bool) -> None:
        if self.on_hook_note is None:
            log.warning("%s", line)
        else:
            self.on_hook_note(line, failed)
