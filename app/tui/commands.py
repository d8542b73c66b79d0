"""Slash commands: the table (names, usage, help), parsing, the completion list, and the handlers.

``parse``/``completions``/``help_text`` are plain functions (tested without a terminal). The
handlers are ``SlashCommands.cmd_<name>`` coroutines, mixed into the App: ``run_command``
dispatches a parsed command to them. Like the rest of the App they reach the runtime only through
the bridge, and slow work runs in workers that report back with messages.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from rich.table import Table
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from app.tui.messages import ChatNote, SessionSwitched, TurnDone
from memory.constants import MEMORY_MODES
from memory.text.sanitize import strip_terminal

if TYPE_CHECKING:
    from textual.worker import Worker

    from app.agent.settings import Settings
    from app.tui.bridge import Bridge
    from widgets.chat.log import ChatPane


@dataclass(frozen=True)
class Command:
    name: str
    usage: str
    help: str

    @property
    def handler(self) -> str:
        return f"cmd_{self.name}"


COMMANDS: tuple[Command, ...] = (
    Command("help", "/help", "list the commands and keys"),
    Command("clear", "/clear", "start a new session (memory is kept)"),
    Command("memory", "/memory", "browse and edit the memory cards"),
    Command("pending", "/pending", "watch and review the pending memory updates"),
    Command("remember", "/remember TEXT", "open the card editor with TEXT (Ctrl+S saves)"),
    Command("undo", "/undo", "revert the last memory batch"),
    Command("model", "/model NAME", "switch the main model"),
    Command("mode", "/mode auto|review|off", "switch the memory mode"),
    Command("resume", "/resume", "pick a session of this workspace to resume"),
    Command("cost", "/cost", "show this session's tokens and cost"),
    Command("compact", "/compact [FOCUS]", "compact the conversation now (automatic near the context limit)"),
    Command("quit", "/quit", "quit (pending memory is saved first)"),
)
BY_NAME: dict[str, Command] = {c.name: c for c in COMMANDS}

# What a command needs before it can run. None of these needs a model: the memory stores are
# reachable a moment after the first frame (the runtime object, before the SDK is loaded), and
# a command typed earlier runs then. The session commands wait, in order with the queued prompts,
# until the runtime is open. The rest (/help, /cost, /quit) run at once.
NEEDS_STORES = frozenset({"memory", "pending", "remember", "undo", "mode", "model"})
NEEDS_SESSION = frozenset({"clear", "resume", "compact"})

KEYS: tuple[tuple[str, str], ...] = (
    ("Enter", "send"),
    ("Shift+Enter, Ctrl+J", "newline"),
    ("Up, Down", "prompt history"),
    ("Esc, Ctrl+C", "cancel the turn (Ctrl+C copies a selection)"),
    ("F2", "show or hide the memory panel"),
    ("Ctrl+Q", "quit (twice: at once)"),
    ("@path", "attach a file"),
    ("a large paste", "collapsed to [pasted …], sent whole; Enter/click expands it"),
    ("in /pending", "Enter expand · a approve · r reject · t retry · x dismiss · Esc back"),
    ("in /memory", "/ filter · 1-4 type · 0 all · l level · Esc back"),
    ("on a card", "n new · e edit · d delete · m move · o $EDITOR · u undo"),
    ("in the editor", "Ctrl+S save · Esc cancel"),
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
    rest = (stripped[1 + len(head):]).strip() if "\n" in head else rest.strip()
    return Parsed(name=name, arg=rest, command=BY_NAME.get(name))


def completions(prefix: str) -> list[Command]:
    """Commands whose name starts with ``prefix`` (without the slash), in table order."""
    p = prefix.lstrip("/").lower()
    return [c for c in COMMANDS if c.name.startswith(p)]


def help_rows() -> list[tuple[str, str]]:
    """(what to type, what it does) for each command, a blank row, then the keys."""
    return [*((c.usage, c.help) for c in COMMANDS), ("", ""), *KEYS]


def help_text() -> str:
    """/help as plain text (the block's ``text``; what tests and copies read)."""
    return "\n".join(f"{left}  {right}".rstrip() for left, right in help_rows())


def help_table() -> Table:
    """/help as drawn: two columns, so a wrapped description stays under its own column (a
    hanging indent) at any chat width instead of running back under the command names."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for left, right in help_rows():
        table.add_row(left, right)
    return table


def one_line(value: object, width: int = 120) -> str:
    """``value`` as one line of at most ``width`` characters, safe for the terminal."""
    text = " ".join(strip_terminal(str(value), keep_newlines=False).split())
    return text if len(text) <= width else text[: width - 1] + "…"


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
            options.append(Option(f"{s.updated[:16].replace('T', ' ')}  {s.turns:>3} turn(s)  {title}{mark}", id=s.id))
        picker = OptionList(*options, id="sessions")
        picker.border_title = "Resume a session (Enter) · Esc cancels"
        yield picker

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


class SlashCommands:
    """The commands' handlers, mixed into ``PseudoClaudeApp`` (which provides what is declared here)."""

    bridge: Bridge
    settings: Settings
    ready: bool
    built: bool
    connecting: bool
    _awaiting_trust: bool
    _waiting: list[Any]
    _turn: Worker[Any] | None
    _cost: Any
    chat: ChatPane
    prompt: Any
    # Also from the App: post_message, push_screen_wait, _refresh_panel, _show_status, action_quit,
    # defer_command, _waiting, and from MemoryScreens: open_browser, open_pending, remember.

    async def run_command(self, parsed: Parsed, *, queued: bool = False) -> None:
        """Run ``parsed`` now, or once what it needs is there (never dropped while starting).
        ``queued``: it comes from the queue, whose turn it is."""
        if parsed.command is None:
            self.chat.add_note(f"unknown command /{one_line(parsed.name, 40)}: /help lists the commands")
            return
        handler = getattr(self, parsed.command.handler)
        name = parsed.command.name
        if name in NEEDS_SESSION and not queued and (self.connecting or self._awaiting_trust or self._waiting):
            self.defer_command(parsed, "session")
            return
        if name in NEEDS_STORES and not self.built:
            if self.connecting:
                self.defer_command(parsed, "stores")
            else:
                self.chat.add_note(f"/{name} is not available: the app could not start (see the error above)")
            return
        await handler(parsed.arg)

    def _turn_running(self) -> bool:
        if self._turn is not None and self._turn.is_running:
            self.chat.add_note("a turn is running: wait for it, or press Esc to cancel it first")
            return True
        return False

    async def cmd_help(self, arg: str) -> None:
        block = self.chat.add_note(help_text())  # ``text`` stays the plain form
        block.update(help_table())

    async def cmd_clear(self, arg: str) -> None:
        if self._turn_running():
            return
        if not self.ready:
            self.chat.clear_blocks()
            return
        self._switch(None)

    @work(exclusive=True, group="session", exit_on_error=False)
    async def _switch(self, session_id: str | None) -> None:
        try:
            note = await (self.bridge.new_session() if session_id is None else self.bridge.resume(session_id))
        except (ValueError, RuntimeError) as e:
            self.post_message(ChatNote(one_line(e, 300), error=True))
            return
        if session_id is None:
            note = note or "new session (memory is kept)"
        self.post_message(SessionSwitched(note, self.bridge.messages if session_id is not None else []))

    async def cmd_memory(self, arg: str) -> None:
        self.open_browser()

    async def cmd_pending(self, arg: str) -> None:
        self.open_pending()

    async def cmd_remember(self, arg: str) -> None:
        if not arg.strip():
            self.chat.add_note("usage: /remember TEXT")
            return
        self.remember(arg.strip())

    async def cmd_undo(self, arg: str) -> None:
        self._undo()

    @work(group="command", exit_on_error=False)
    async def _undo(self) -> None:
        try:
            result = await self.bridge.undo()
        except Exception as e:  # UndoError: nothing to undo, or a note changed since
            self.post_message(ChatNote(one_line(e, 300), error=True))
            return
        problems = [*result.conflicts, *result.rejected]
        if problems:
            self.post_message(ChatNote(one_line(f"not undone: {problems[0].reason}", 300), error=True))
        else:
            self.post_message(ChatNote(f"undid the last memory batch ({len(result.applied)} change(s))"))
        self._refresh_panel()

    async def cmd_model(self, arg: str) -> None:
        name = arg.strip()
        if not name:
            self.chat.add_note(f"model: {self.settings.model} (/model NAME switches)")
            return
        if len(name.split()) != 1:
            self.chat.add_note("usage: /model NAME")
            return
        self.bridge.set_model(name)
        self.chat.add_note(f"model: {one_line(name, 80)} (from the next request)")
        self._show_status()

    async def cmd_mode(self, arg: str) -> None:
        mode = arg.strip().lower()
        if mode not in MEMORY_MODES:
            current = self.bridge.runtime.memory_mode if self.bridge.runtime is not None else self.settings.memory_mode
            self.chat.add_note(f"memory mode: {current} (usage: /mode auto|review|off)")
            return
        try:
            await self.bridge.set_memory_mode(mode)
        except Exception as e:
            self.chat.add_error(one_line(e, 300))
            return
        self.chat.add_note(f"memory mode: {mode}")
        self._show_status()

    async def cmd_resume(self, arg: str) -> None:
        if self._turn_running():
            return
        if self.bridge.runtime is None:
            # Sessions are files: browsing and resuming one needs no model, only the runtime.
            self.chat.add_note("sessions are not open yet (see the note above)")
            return
        self._pick_session(arg.strip())

    @work(exclusive=True, group="session", exit_on_error=False)
    async def _pick_session(self, wanted: str) -> None:
        if wanted:
            chosen: str | None = wanted
        else:
            # A session opened and closed without a prompt has nothing to go back to.
            sessions = [s for s in await self.bridge.sessions() if s.has_prompt]
            if not sessions:
                self.post_message(ChatNote("no sessions to resume in this workspace yet"))
                return
            chosen = await self.push_screen_wait(SessionPicker(sessions, self.bridge.session_id))
        if not chosen:
            return
        try:
            note = await self.bridge.resume(chosen)
        except (ValueError, RuntimeError) as e:
            self.post_message(ChatNote(one_line(e, 300), error=True))
            return
        self.post_message(SessionSwitched(note, self.bridge.messages))

    async def cmd_cost(self, arg: str) -> None:
        if self._cost is None:
            self.chat.add_note("no cost yet")
            return
        self.chat.add_note("\n".join(self._cost.report()))

    async def cmd_compact(self, arg: str) -> None:
        if self._turn_running():
            return
        if not self.ready:
            self.chat.add_note("compacting needs a configured model (see the note above)")
            return
        self._turn = self._compact(arg.strip())  # Esc cancels it like a turn

    @work(exclusive=True, group="turn", exit_on_error=False)
    async def _compact(self, focus: str) -> None:
        self.prompt.disabled_reason = "compacting… (Esc cancels)"
        try:
            done = await self.bridge.compact(focus)
        except asyncio.CancelledError:
            self.post_message(ChatNote("compaction cancelled: the conversation is as it was"))
            raise
        except (RuntimeError, ValueError) as e:
            self.post_message(ChatNote(one_line(e, 400), error=True))
        else:
            if done is None:
                self.post_message(ChatNote("nothing to compact yet"))
        finally:
            self.post_message(TurnDone("compacted"))

    async def cmd_quit(self, arg: str) -> None:
        await self.action_quit()
