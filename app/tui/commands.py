"""Slash commands: the table (names, usage, help), parsing, the completion list, and the handlers.

``parse``/``completions``/``help_text`` are plain functions (tested without a terminal). The
handlers are the coroutines of ``SlashCommands``, an object the App holds: ``run_command``
dispatches a parsed command through its table. They reach the App only through ``CommandHost``
(what they need of it) and the runtime only through its services; slow work runs in the App's
workers that report back with messages.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, cast

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from app.tui.flows.extension_commands import ExtensionCommands, ExtHost
from app.tui.flows.rewind_flow import RewindFlow, RewindHost
from app.tui.messages import ChatNote, SessionSwitched, SettingsChanged, TurnDone, TurnEvent
from app.tui.phase import Phase
from app.tui.workers import RunsWorkers
from memory.constants import MEMORY_MODES, MemoryMode
from memory.text.lines import one_line

if TYPE_CHECKING:
    from textual.message import Message
    from textual.worker import Worker

    from app.agent.config.settings import Settings
    from app.agent.model.pricing import CostMeter
    from app.agent.turn.events import RunEvent
    from app.services.bundle import Services
    from app.tui.bridge import Bridge
    from app.tui.flows.scale_flow import ScaleFlow
    from app.tui.screens.memory import MemoryScreens
    from widgets.chat.log import ChatPane
    from widgets.chat.prompt import PromptInput


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    help: str


COMMANDS: tuple[Command, ...] = (
    Command("help", "/help", "list the commands and keys"),
    Command("clear", "/clear", "start a new session (memory is kept)"),
    Command("memory", "/memory", "browse and edit the memory cards"),
    Command("pending", "/pending", "watch and review the pending memory updates"),
    Command("remember", "/remember TEXT", "open the card editor with TEXT (Ctrl+S saves)"),
    Command("undo", "/undo", "revert the last memory batch"),
    Command(
        "consolidate",
        "/consolidate [LEVEL]",
        "merge duplicate cards (both levels, or LEVEL); review in /pending",
    ),
    Command("model", "/model NAME", "switch the main model"),
    Command("mode", f"/mode {'|'.join(MEMORY_MODES)}", "switch the memory mode"),
    Command("resume", "/resume", "pick a session of this workspace to resume"),
    Command("cost", "/cost", "show this session's tokens and cost"),
    Command("compact", "/compact [FOCUS]", "compact the conversation now (automatic near the context limit)"),
    Command("rewind", "/rewind", "files and/or the conversation back to before a turn"),
    Command("permissions", "/permissions", "the permission rules and their files; /permissions remove RULE"),
    Command("mcp", "/mcp", "list the MCP servers: state, tools, prompts; /mcp restart NAME"),
    Command("quit", "/quit", "quit (pending memory is saved first)"),
)
BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS}

# What a command needs before it can run. None of these needs a model: the memory stores are
# reachable a moment after the first frame (the runtime object, before the SDK is loaded), and
# a command typed earlier runs then. The session commands wait, in order with the queued prompts,
# until the runtime is open. The rest (/help, /cost, /quit) run at once.
NEEDS_STORES = frozenset({"memory", "pending", "remember", "undo", "mode", "model", "consolidate"})
NEEDS_SESSION = frozenset({"clear", "resume", "compact", "rewind"})

KEYS: tuple[tuple[str, str], ...] = (
    ("Enter", "send"),
    ("Shift+Enter, Ctrl+J", "newline"),
    ("Up, Down", "prompt history"),
    ("PageUp, PageDown", "scroll the chat (from the prompt too)"),
    ("Ctrl+Home, Ctrl+End", "the chat's top, its bottom"),
    ("Esc, Ctrl+C", "cancel the turn (Ctrl+C copies a selection)"),
    ("Esc Esc", "on an empty prompt, nothing running or queued: /rewind"),
    ("F2", "show or hide the memory panel"),
    ("Ctrl+Q", "quit (twice: at once)"),
    ("@path", "attach a file"),
    # A row with no key goes on with the one above: no row wraps in a chat 100 columns wide.
    ("a large paste", "collapsed to [pasted 3,000 lines, 195.3 KiB], sent whole"),
    ("", "Enter or a click on it in the chat expands it"),
    ("in /pending", "Enter expand · a approve · r reject · t retry · x dismiss · Esc back"),
    ("in /memory", "/ filter · 1-4 type · 0 all · l level · s stale only · Esc back"),
    ("", "i in/not in prompt · r sort: name/use"),
    ("on a card", "n new · e/Enter edit · p pin · c still true · d delete · m move"),
    ("", "o $EDITOR · v raw/rendered · u undo"),
    ("in the editor", "Ctrl+S save · Esc cancel"),
    ("in /rewind", "Enter pick a turn · b files and conversation · f files"),
    ("", "c conversation · m undo its memory batches · Esc back"),
)


@dataclass(frozen=True)
class Parsed:
    """A slash command as typed. ``command`` is None for an unknown name."""

    name: str
    arg: str
    command: Command | None


def parse(text: str) -> Parsed | None:
    """``/name args`` → Parsed; None when the text is not a command (a message to send).

    ``//text`` and a lone ``/`` are messages, so a path such as ``/etc/hosts …`` typed as the start
    of a sentence is still a command only when its first word names one or looks like one."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//") or stripped == "/":
        return None
    head, _, rest = stripped[1:].partition(" ")
    if "/" in head:  # "/usr/bin is where…": a path, not a command
        return None
    name = head.split("\n", 1)[0].lower()
    rest = (stripped[1 + len(head) :]).strip() if "\n" in head else rest.strip()
    return Parsed(name=name, arg=rest, command=BY_NAME.get(name))


def completions(prefix: str) -> list[Command]:
    """Commands whose name starts with ``prefix`` (without the slash), in table order."""
    p = prefix.lstrip("/").lower()
    return [c for c in COMMANDS if c.name.startswith(p)]


def help_rows(custom: list[tuple[str, str]] | None = None) -> list[tuple[str, str]]:
    """(what to type, what it does) for each command, the custom ones (``custom``) after a blank
    row, a blank row, then the keys."""
    extra = [("", ""), *custom] if custom else []
    return [*((c.usage, c.help) for c in COMMANDS), *extra, ("", ""), *KEYS]


def help_text(custom: list[tuple[str, str]] | None = None) -> str:
    """/help as plain text (the block's ``text``; what tests and copies read)."""
    return "\n".join(f"{left}  {right}".rstrip() for left, right in help_rows(custom))


def help_table(custom: list[tuple[str, str]] | None = None) -> Table:
    """/help as drawn: two columns, so a wrapped description stays under its own column (a
    hanging indent) at any chat width instead of running back under the command names."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for left, right in help_rows(custom):
        # Text, not markup: "[pasted …]" would be read as a style tag and vanish.
        table.add_row(Text(left), Text(right))
    return table


class SessionPicker(ModalScreen[str | None]):
    """/resume: this workspace's sessions that have a prompt, newest first; Enter resumes, Esc cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]
    AUTO_FOCUS = "#sessions"  # its own list, whatever the App focuses on its screens
    DEFAULT_CSS = """
    SessionPicker { align: center middle; }
    SessionPicker > OptionList { width: 90%; max-width: 110; height: auto; max-height: 80%; border: round $accent; }
    """

    def __init__(self, sessions: list[Any], current: str | None) -> None:
        super().__init__()
        self.sessions = sessions
        self.current = current

    def compose(self) -> ComposeResult:
        options = []
        for s in self.sessions:
            mark = " (current)" if s.id == self.current else ""
            title = one_line(s.title or "(untitled)", 70)
            options.append(
                Option(f"{s.updated[:16].replace('T', ' ')}  {s.turns:>3} turn(s)  {title}{mark}", id=s.id)
            )
        picker = OptionList(*options, id="sessions")
        picker.border_title = "Resume a session (Enter) · Esc cancels"
        yield picker

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class CommandHost(RunsWorkers, Protocol):
    """What the commands need of the App."""

    settings: Settings | None
    phase: Phase
    memory_screens: MemoryScreens
    scale: ScaleFlow
    turn: Worker[Any] | None  # the running turn (or /compact): Esc cancels it
    cost: CostMeter | None
    bridge: Bridge  # says a new session's SessionStart hook failures again, after its switch

    @property
    def services(self) -> Services: ...

    @property
    def built(self) -> bool:
        """The runtime object exists: the memory stores can be reached."""

    @property
    def waiting(self) -> bool:
        """Something waits before a new command: the trust question's answer, queued prompts."""

    @property
    def chat(self) -> ChatPane: ...

    @property
    def prompt(self) -> PromptInput: ...

    def post_message(self, message: Message) -> bool: ...

    async def push_screen_wait(self, screen: Any) -> Any: ...

    def defer_command(self, parsed: Parsed, needs: str) -> None: ...

    async def action_quit(self) -> None: ...


class SlashCommands:
    """The commands' handlers, one per name of ``COMMANDS``, for the App ``host``. The status
    line follows the settings by itself (the commands say when they change)."""

    def __init__(self, host: CommandHost) -> None:
        self.host = host
        # One session switch at a time, each to its end: a switch cancelled half-way (/resume
        # typed while /clear still closed the session) left no session open, its lock still held.
        self._switching = asyncio.Lock()
        # Custom commands, MCP prompts, /permissions, /mcp (the App is their host too).
        self.ext = ExtensionCommands(cast("ExtHost", host))
        self.rewind = RewindFlow(cast("RewindHost", host), switching=self._switching)  # /rewind, Esc Esc
        self.handlers: dict[str, Callable[[str], Awaitable[None]]] = {
            "help": self.cmd_help,
            "clear": self.cmd_clear,
            "memory": self.cmd_memory,
            "pending": self.cmd_pending,
            "remember": self.cmd_remember,
            "undo": self.cmd_undo,
            "consolidate": self.cmd_consolidate,
            "model": self.cmd_model,
            "mode": self.cmd_mode,
            "resume": self.cmd_resume,
            "cost": self.cmd_cost,
            "compact": self.cmd_compact,
            "rewind": self.cmd_rewind,
            "permissions": self.ext.permissions,
            "mcp": self.ext.mcp,
            "quit": self.cmd_quit,
        }

    @property
    def chat(self) -> ChatPane:
        return self.host.chat

    def _run(
        self, work: Callable[..., Coroutine[Any, Any, None]], *args: Any, group: str, exclusive: bool = False
    ) -> Worker[Any]:
        """``work(*args)`` as the App's worker (called when it starts: an exclusive one may be
        cancelled before); a failure is one line in the chat, never a crash."""
        return self.host.run_worker(
            partial(work, *args), group=group, exclusive=exclusive, exit_on_error=False
        )

    async def run_command(self, parsed: Parsed, *, queued: bool = False) -> None:
        """Run ``parsed`` now, or once what it needs is there (never dropped while starting).
        ``queued``: it comes from the queue, whose turn it is."""
        host = self.host
        if parsed.command is None:
            if not queued and (host.phase.connecting or host.waiting):
                host.defer_command(parsed, "session")  # a custom command is known once the runtime is open
            elif not self.ext.run(parsed.name, parsed.arg):
                self.chat.add_note(self.ext.unknown(parsed.name))
            return
        name = parsed.command.name
        if name in NEEDS_SESSION and not queued and (host.phase.connecting or host.waiting):
            host.defer_command(parsed, "session")
            return
        if name in NEEDS_STORES and not host.built:
            if host.phase.connecting:
                host.defer_command(parsed, "stores")
            else:
                self.chat.add_note(f"/{name} is not available: the app could not start (see the error above)")
            return
        await self.handlers[name](parsed.arg)

    def _turn_running(self) -> bool:
        turn = self.host.turn
        if turn is not None and turn.is_running:
            self.chat.add_note("a turn is running: wait for it, or press Esc to cancel it first")
            return True
        return False

    async def cmd_help(self, arg: str) -> None:
        custom = self.ext.help_rows()
        block = self.chat.add_note(help_text(custom))  # ``text`` stays the plain form
        block.update(help_table(custom))

    async def cmd_clear(self, arg: str) -> None:
        if self._turn_running():
            return
        if not self.host.phase.ready:
            self.chat.clear_blocks()
            return
        self._run(self._new_session, group="session")

    async def _new_session(self) -> None:
        session = self.host.services.session
        async with self._switching:
            try:
                note = await session.new()
            except (ValueError, RuntimeError) as e:
                self.host.post_message(ChatNote(one_line(e, 300), error=True))
                return
            self.host.post_message(SessionSwitched(note or "new session (memory is kept)", []))
            self.host.bridge.repeat_start_notes()

    async def cmd_memory(self, arg: str) -> None:
        self.host.memory_screens.open_browser()

    async def cmd_pending(self, arg: str) -> None:
        self.host.memory_screens.open_pending()

    async def cmd_remember(self, arg: str) -> None:
        if not arg.strip():
            self.chat.add_note("usage: /remember TEXT")
            return
        self.host.memory_screens.remember(arg.strip())

    async def cmd_undo(self, arg: str) -> None:
        self.host.memory_screens.undo()

    async def cmd_consolidate(self, arg: str) -> None:
        problem = self.host.scale.command(arg)
        if problem is not None:
            self.chat.add_note(problem)

    async def cmd_model(self, arg: str) -> None:
        name = arg.strip()
        if not name:
            model = self.host.settings.model if self.host.settings is not None else ""
            self.chat.add_note(f"model: {model} (/model NAME switches)")
            return
        if len(name.split()) != 1:
            self.chat.add_note("usage: /model NAME")
            return
        self.host.services.session.set_model(name)
        self.host.post_message(SettingsChanged())
        self.chat.add_note(f"model: {one_line(name, 80)} (from the next request)")

    async def cmd_mode(self, arg: str) -> None:
        host = self.host
        wanted = arg.strip().lower()
        if wanted not in MEMORY_MODES:
            settings = host.settings
            current = (
                host.services.session.memory_mode if host.built else settings.memory_mode if settings else ""
            )
            self.chat.add_note(f"memory mode: {current} (usage: /mode {'|'.join(MEMORY_MODES)})")
            return
        mode = MemoryMode(wanted)
        try:
            await host.services.session.set_memory_mode(mode)
        except Exception as e:
            self.chat.add_error(one_line(e, 300))
            return
        host.post_message(SettingsChanged())
        self.chat.add_note(f"memory mode: {mode}")

    async def cmd_resume(self, arg: str) -> None:
        if self._turn_running():
            return
        if not self.host.built:
            # Sessions are files: browsing and resuming one needs no model, only the runtime.
            self.chat.add_note("sessions are not open yet (see the note above)")
            return
        self._run(self._pick_session, arg.strip(), group="session")

    async def _pick_session(self, wanted: str) -> None:
        async with self._switching:
            await self._switch_to(wanted)

    async def _switch_to(self, wanted: str) -> None:
        host, session = self.host, self.host.services.session
        if wanted:
            chosen: str | None = wanted
        else:
            # A session opened and closed without a prompt has nothing to go back to.
            sessions = [s for s in await session.list() if s.has_prompt]
            if not sessions:
                host.post_message(ChatNote("no sessions to resume in this workspace yet"))
                return
            chosen = await host.push_screen_wait(SessionPicker(sessions, session.id))
        if not chosen:
            return
        try:
            note = await session.resume(chosen)
        except (ValueError, RuntimeError) as e:
            host.post_message(ChatNote(one_line(e, 300), error=True))
            return
        host.post_message(SessionSwitched(note, session.messages))
        host.bridge.repeat_start_notes()

    async def cmd_cost(self, arg: str) -> None:
        cost = self.host.cost
        if cost is None:
            self.chat.add_note("no cost yet")
            return
        self.chat.add_note("\n".join(cost.report()))

    async def cmd_compact(self, arg: str) -> None:
        if self._turn_running():
            return
        if not self.host.phase.ready:
            self.chat.add_note("compacting needs a configured model (see the note above)")
            return
        # Run as the turn: Esc cancels it like one, and what is queued waits for it.
        self.host.turn = self._run(self._compact, arg.strip(), group="turn", exclusive=True)

    async def _compact(self, focus: str) -> None:
        host = self.host
        host.prompt.disabled_reason = "compacting… (Esc cancels)"

        def emit(event: RunEvent) -> None:
            host.post_message(TurnEvent(event))

        try:
            done = await host.services.turn.compact(focus, emit)
        except asyncio.CancelledError:
            host.post_message(ChatNote("compaction cancelled: the conversation is as it was"))
            raise
        except (RuntimeError, ValueError) as e:
            host.post_message(ChatNote(one_line(e, 400), error=True))
        else:
            if done is None:
                host.post_message(ChatNote("nothing to compact yet"))
        finally:
            host.post_message(TurnDone("compacted"))

    async def cmd_rewind(self, arg: str) -> None:
        if arg.strip():
            self.chat.add_note("usage: /rewind (then pick the turn)")
            return
        self.rewind.open()

    async def cmd_quit(self, arg: str) -> None:
        await self.host.action_quit()
