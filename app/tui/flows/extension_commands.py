"""What a workspace adds, in the app: custom commands and MCP prompts typed as ``/name args``,
``/permissions`` and ``/mcp``, the trust question for what the project brings, and the notes said
once after start (a broken command, a bad rule, a server that failed, then or later).

Every call goes through the extensions service (plain data); slow work (an MCP prompt, trusting,
saving) runs in the App's workers, and what they find reaches the chat by messages.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from app.tui.messages import ChatNote
from app.tui.phase import Phase
from app.tui.workers import start
from memory.text.lines import one_line
from widgets.dialogs.extension_trust import ExtensionTrustModal, WaitingKind

if TYPE_CHECKING:
    from textual.app import App
    from textual.message import Message

    from app.services.extensions import CommandView, ExtensionsService

POLL_S = 1.0  # how often the MCP servers' states are looked at (in memory: microseconds)
TRUST_RETRY_S = 0.2  # the memory trust question first: the extensions' waits for its answer
HELP_DESCRIPTION_CHARS = 80


class ExtensionCommands:
    """``app`` runs the workers, timers and the trust window; ``post`` takes what the chat says;
    ``service``: the extensions service, None before the runtime is built; ``phase``: the App's;
    ``trust_pending``: the memory trust question is still open (this one waits for it);
    ``submit`` sends a prompt as typed (``text``, ``typed``, pastes)."""

    def __init__(
        self,
        app: App[Any],
        *,
        post: Callable[[Message], object],
        service: Callable[[], ExtensionsService | None],
        phase: Callable[[], Phase],
        trust_pending: Callable[[], bool],
        submit: Callable[[str, str, dict[str, str]], None],
    ) -> None:
        self._app = app
        self._post = post
        self._service = service
        self._phase = phase
        self._trust_pending = trust_pending
        self._submit = submit
        self._states: dict[str, str] = {}  # each server's last state seen
        self._restarting: set[str] = set()  # said by /mcp restart itself, not by the poll
        self._started = False

    def _say(self, text: str, *, error: bool = False) -> None:
        self._post(ChatNote(text, error=error))

    # -- after start ------------------------------------------------------------------------------

    def ready(self) -> None:
        """The runtime is open (its files read): the notes once, then the trust question."""
        service = self._service()
        if service is None or self._started:
            return
        self._started = True
        for line in service.notes():
            self._say(one_line(line, 300))
        self._poll()
        self._app.set_interval(POLL_S, self._poll, name="mcp-states")
        self._ask_trust()

    def _ask_trust(self) -> None:
        service = self._service()
        if service is None or self._phase() is Phase.QUITTING:
            return
        if self._trust_pending():  # the memory question is up: this one follows it
            self._app.set_timer(TRUST_RETRY_S, self._ask_trust)
            return
        waiting = service.pending()
        if waiting:
            kinds = [WaitingKind(w.title, w.shown, w.tally) for w in waiting]
            self._app.push_screen(ExtensionTrustModal(kinds), callback=self._answered)

    def _answered(self, trusted: bool | None) -> None:
        if trusted:
            start(self._app, self._trust, group="ext-trust", exclusive=True)
        else:
            self._say(
                "what the project brings is not trusted for now: it is not used (asked again next start)"
            )

    async def _trust(self) -> None:
        service = self._service()
        if service is None:
            return
        started = await service.trust()
        self._say("trusted: the project's servers start, its commands, hooks and rules are used")
        self._app.call_later(self._poll)
        for s in await service.settled(started):
            if s.state == "ready":  # a failure is said by the poll
                self._say(one_line(f"MCP server {s.name} ready: {len(s.tools)} tool(s)", 200))

    def _poll(self) -> None:
        """A server that failed (at start or later) is one line in the chat, once per failure."""
        service = self._service()
        if service is None:
            return
        for s in service.servers():
            if s.name in self._restarting:
                continue
            before = self._states.get(s.name)
            self._states[s.name] = s.state
            if s.state == "failed" and before != "failed":
                self._say(
                    one_line(f"MCP server {s.name} failed: {s.reason or 'no reason given'}", 300), error=True
                )

    @staticmethod
    def failed_line(e: BaseException) -> str:
        """The chat's line for a turn that failed; a prompt refused by a ``UserPromptSubmit``
        hook says only why (nothing was sent; the prompt is in the history)."""
        # Loaded with the runtime, never before the first frame.
        from app.agent.turn.runner import PromptRefused

        if isinstance(e, PromptRefused):
            return one_line(f"{e} (the prompt was not sent; Up brings it back)", 400)
        return one_line(f"the turn failed: {type(e).__name__}: {e}", 400)

    # -- typed commands ---------------------------------------------------------------------------

    def listing(self) -> list[CommandView]:
        """The custom commands and MCP prompts, for the completion and /help."""
        service = self._service()
        return service.commands() if service is not None else []

    def help_rows(self) -> list[tuple[str, str]]:
        """/help's rows for the custom commands, then the broken ones with why."""
        service = self._service()
        if service is None:
            return []
        rows = [
            (f"{c.name} {c.hint}".rstrip(), one_line(c.description, HELP_DESCRIPTION_CHARS))
            for c in service.commands()
        ]
        rows += [
            (f"/{b.name}" if b.name else b.path, one_line(f"broken: {b.why}", 200)) for b in service.broken()
        ]
        return rows

    def unknown(self, name: str) -> str:
        """The chat's line for a typed ``/name`` that runs nothing: a broken command says why."""
        service = self._service()
        broken = (
            [b for b in service.broken() if b.name and b.name.casefold() == name.casefold()]
            if service
            else []
        )
        if broken:
            return one_line(
                f"/{broken[0].name} is a broken custom command ({broken[0].path}): {broken[0].why}", 400
            )
        return f"unknown command /{one_line(name, 40)}: /help lists the commands"

    def run(self, name: str, arg: str) -> bool:
        """``/name arg`` as a custom command or an MCP prompt: sent as the prompt. False when no
        command has that name."""
        service = self._service()
        if service is None:
            return False
        typed = f"/{name} {arg}".rstrip()
        expanded = service.expand(typed)
        if expanded is not None:
            if expanded.allowed_tools:
                self._say(
                    one_line(
                        f"{expanded.name} allows without asking for this run: "
                        f"{', '.join(expanded.allowed_tools)}",
                        300,
                    )
                )
            if expanded.model:
                self._say(
                    one_line(
                        f"{expanded.name} asks for the model {expanded.model}: "
                        f"/model {expanded.model} switches to it (print mode uses it)",
                        300,
                    )
                )
            # Now, not later: a queued command's prompt keeps its place in the queue.
            self._submit(expanded.prompt, typed, {})
            return True
        if any(c.name == f"/{name}" for c in service.commands()):
            start(self._app, partial(self._mcp_prompt, service, name, arg, typed), group="mcp-prompt")
            return True
        return False

    async def _mcp_prompt(self, service: ExtensionsService, name: str, arg: str, typed: str) -> None:
        from app.agent.extensions.mcp import McpError  # loaded with the servers, never before the first frame

        try:
            expanded = await service.mcp_prompt(name, arg)
        except (TimeoutError, McpError) as e:
            self._say(one_line(f"/{name}: {e}", 300), error=True)
            return
        if expanded is None:
            self._say(f"/{one_line(name, 60)}: the server's prompt is gone", error=True)
            return
        self._app.call_later(self._submit, expanded.prompt, typed, {})

    # -- /permissions and /mcp --------------------------------------------------------------------

    async def permissions(self, arg: str) -> None:
        """``/permissions``: every rule with where it comes from; ``/permissions remove RULE``."""
        say, service = self._say, self._service()
        if service is None:
            say("the rules are read once the runtime is open")
            return
        verb, _, rest = arg.strip().partition(" ")
        if verb == "remove":
            if not rest.strip():
                say("usage: /permissions remove RULE")
                return
            say(one_line(await service.remove_rule(rest.strip()), 400))
            return
        if verb:
            say("usage: /permissions, or /permissions remove RULE")
            return
        rules = service.rules()
        if not rules:
            say(
                "no permission rules: writing, running and MCP tools ask ([permissions] allow/ask/deny "
                "in .PseudoClaude/settings.local.toml or your config.toml)"
            )
            return
        lines = [
            f"{r.list:<5}  {r.text}  — {r.where}" + ("  (waiting for trust)" if r.state != "active" else "")
            for r in rules
        ]
        lines.append("/permissions remove RULE removes one from your own files")
        say("\n".join(one_line(line, 300) for line in lines))

    async def mcp(self, arg: str) -> None:
        """``/mcp``: each server's state (why, when it failed), its tools and prompts;
        ``/mcp restart NAME`` restarts one (in a worker: the line comes once it is up or failed)."""
        say, service = self._say, self._service()
        if service is None:
            say("the MCP servers are read once the runtime is open")
            return
        verb, _, name = arg.strip().partition(" ")
        name = name.strip()
        if verb == "restart" and name:
            refused = service.cannot_restart(name)
            if refused is not None:
                say(one_line(refused, 300))
                return
            self._restarting.add(name)
            say(one_line(f"restarting MCP server {name}…", 120))
            start(self._app, partial(self._restart, service, name), group="mcp-restart")
            return
        if verb:
            say("usage: /mcp, or /mcp restart NAME")
            return
        servers = service.servers()
        if not servers:
            say("no MCP servers ([mcp_servers.NAME] in your config.toml, or the project's .mcp.json)")
            return
        lines: list[str] = []
        for s in servers:
            state = f"failed: {s.reason or 'no reason given'}" if s.state == "failed" else s.state
            lines.append(one_line(f"{s.name} ({s.source}) — {state} — {s.describe}", 300))
            if s.tools:
                lines.append(one_line("  tools: " + ", ".join(s.tools), 600))
            if s.prompts:
                lines.append(one_line("  prompts: " + ", ".join(f"/{p}" for p in s.prompts), 600))
        if any(s.state in ("failed", "stopped") for s in servers):
            lines.append("/mcp restart NAME starts one again")
        say("\n".join(lines))

    async def _restart(self, service: ExtensionsService, name: str) -> None:
        try:
            done = await service.restart(name)
        finally:
            self._app.call_later(self._restarted, name)
        self._say(one_line(done.line, 300), error=done.error)

    def _restarted(self, name: str) -> None:
        """The restart said how it went: the poll takes the state from here, not saying it again."""
        self._restarting.discard(name)
        service = self._service()
        for s in service.servers() if service is not None else []:
            if s.name == name:
                self._states[name] = s.state
