"""The slash commands' handlers: ``run_command`` dispatches a parsed command (app.tui.chat
.command_table) through its table, now or once what it needs is there.

They draw nothing themselves: what they say goes to the chat screen they serve (its notes), the
runtime is reached only through its services, and slow work runs in the chat screen's workers,
which report back with messages. The commands a workspace adds and /permissions, /mcp are the
extensions' flow, /rewind the rewind view's (both made here); the memory screens and the
consolidation are the memory side's, handed in.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from typing import TYPE_CHECKING, Any

from app.tui.chat.command_table import NEEDS_SESSION, NEEDS_STORES, Parsed, help_table, help_text
from app.tui.chat.session_picker import SessionPicker
from app.tui.chat.todo_view import todos_text
from app.tui.flows.extension_commands import ExtensionCommands
from app.tui.flows.rewind_flow import RewindFlow
from app.tui.messages import ChatNote, SessionSwitched, SettingsChanged, TurnDone, TurnEvent
from memory.constants import MEMORY_MODES, MemoryMode
from memory.text.lines import one_line

if TYPE_CHECKING:
    from textual.app import App
    from textual.worker import Worker

    from app.agent.turn.events import RunEvent
    from app.tui.chat.chat_screen import ChatScreen
    from app.tui.flows.scale_flow import ScaleFlow
    from app.tui.screens.memory import MemoryScreens

__all__ = ["SlashCommands"]


class SlashCommands:
    """The commands' handlers, one per name of the table, for the ``chat`` screen of ``app``;
    ``memory`` and ``scale`` open the memory screens and consolidate, ``memory_changed`` shows
    memory batches undone (the panel, the open memory screens). The status line follows the
    settings by itself (the commands say when they change)."""

    def __init__(
        self,
        chat: ChatScreen,
        app: App[Any],
        *,
        memory: MemoryScreens,
        scale: ScaleFlow,
        memory_changed: Callable[[], None],
    ) -> None:
        self.chat = chat
        self._app = app  # its windows (the chat screen is not yet on it when this is made)
        self.state = state = chat.state
        self.memory = memory
        self.scale = scale
        # One session switch at a time, each to its end: a switch cancelled half-way (/resume
        # typed while /clear still closed the session) left no session open, its lock still held.
        self._switching = asyncio.Lock()
        self.ext = ExtensionCommands(  # custom commands, MCP prompts, /permissions, /mcp
            app,
            post=chat.post_message,
            service=lambda: s.extensions if (s := state.built_services()) is not None else None,
            phase=lambda: state.phase,
            trust_pending=state.trusting,
            submit=chat.queue.submit,
        )
        self.rewind = RewindFlow(  # /rewind, Esc Esc: it rebuilds the Runner as a session switch does
            app,
            post=chat.post_message,
            services=state.built_services,
            turn_running=chat.turn_running,
            switching=self._switching,
            start_notes=state.bridge.repeat_start_notes,
            memory_changed=memory_changed,
        )
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
            "todos": self.cmd_todos,
            "compact": self.cmd_compact,
            "rewind": self.cmd_rewind,
            "permissions": self.ext.permissions,
            "mcp": self.ext.mcp,
            "quit": self.cmd_quit,
        }

    def _run(
        self, work: Callable[..., Coroutine[Any, Any, None]], *args: Any, group: str, exclusive: bool = False
    ) -> Worker[Any]:
        """``work(*args)`` as the chat screen's worker (called when it starts: an exclusive one may
        be cancelled before); a failure is one line in the chat, never a crash."""
        return self.chat.run_worker(
            partial(work, *args), group=group, exclusive=exclusive, exit_on_error=False
        )

    # -- what the chat screen calls --------------------------------------------------------------

    async def run_command(self, parsed: Parsed, *, queued: bool = False) -> None:
        """Run ``parsed`` now, or once what it needs is there (never dropped while starting).
        ``queued``: it comes from the queue, whose turn it is."""
        chat, connecting = self.chat, self.state.phase.connecting
        if parsed.command is None:
            if not queued and (connecting or chat.waiting):
                chat.queue.defer(parsed, "session")  # a custom command is known once the runtime is open
            elif not self.ext.run(parsed.name, parsed.arg):
                chat.note(self.ext.unknown(parsed.name))
            return
        name = parsed.command.name
        if name in NEEDS_SESSION and not queued and (connecting or chat.waiting):
            chat.queue.defer(parsed, "session")
            return
        if name in NEEDS_STORES and not self.state.built:
            if connecting:
                chat.queue.defer(parsed, "stores")
            else:
                chat.note(f"/{name} is not available: the app could not start (see the error above)")
            return
        await self.handlers[name](parsed.arg)

    def _turn_running(self) -> bool:
        if self.chat.turn_running():
            self.chat.note("a turn is running: wait for it, or press Esc to cancel it first")
            return True
        return False

    # -- the handlers ----------------------------------------------------------------------------

    async def cmd_help(self, arg: str) -> None:
        custom = self.ext.help_rows()
        self.chat.show_help(help_text(custom), help_table(custom))

    async def cmd_clear(self, arg: str) -> None:
        if self._turn_running():
            return
        if not self.state.phase.ready:
            self.chat.clear()
            return
        self._run(self._new_session, group="session")

    async def _new_session(self) -> None:
        session = self.state.services.session
        async with self._switching:
            try:
                note = await session.new()
            except (ValueError, RuntimeError) as e:
                self.chat.post_message(ChatNote(one_line(e, 300), error=True))
                return
            self.chat.post_message(SessionSwitched(note or "new session (memory is kept)", []))
            self.state.bridge.repeat_start_notes()

    async def cmd_memory(self, arg: str) -> None:
        self.memory.open_browser()

    async def cmd_pending(self, arg: str) -> None:
        self.memory.open_pending()

    async def cmd_remember(self, arg: str) -> None:
        if not arg.strip():
            self.chat.note("usage: /remember TEXT")
            return
        self.memory.remember(arg.strip())

    async def cmd_undo(self, arg: str) -> None:
        self.memory.undo()

    async def cmd_consolidate(self, arg: str) -> None:
        problem = self.scale.command(arg)
        if problem is not None:
            self.chat.note(problem)

    async def cmd_model(self, arg: str) -> None:
        name = arg.strip()
        if not name:
            settings = self.state.bridge.settings
            self.chat.note(f"model: {settings.model if settings is not None else ''} (/model NAME switches)")
            return
        if len(name.split()) != 1:
            self.chat.note("usage: /model NAME")
            return
        self.state.services.session.set_model(name)
        self.chat.post_message(SettingsChanged())
        self.chat.note(f"model: {one_line(name, 80)} (from the next request)")

    async def cmd_mode(self, arg: str) -> None:
        wanted = arg.strip().lower()
        if wanted not in MEMORY_MODES:
            settings = self.state.bridge.settings
            current = (
                self.state.services.session.memory_mode
                if self.state.built
                else settings.memory_mode
                if settings
                else ""
            )
            self.chat.note(f"memory mode: {current} (usage: /mode {'|'.join(MEMORY_MODES)})")
            return
        mode = MemoryMode(wanted)
        try:
            await self.state.services.session.set_memory_mode(mode)
        except Exception as e:
            self.chat.note(one_line(e, 300), error=True)
            return
        self.chat.post_message(SettingsChanged())
        self.chat.note(f"memory mode: {mode}")

    async def cmd_resume(self, arg: str) -> None:
        if self._turn_running():
            return
        if not self.state.built:
            # Sessions are files: browsing and resuming one needs no model, only the runtime.
            self.chat.note("sessions are not open yet (see the note above)")
            return
        self._run(self._pick_session, arg.strip(), group="session")

    async def _pick_session(self, wanted: str) -> None:
        async with self._switching:
            await self._switch_to(wanted)

    async def _switch_to(self, wanted: str) -> None:
        chat, session = self.chat, self.state.services.session
        if wanted:
            chosen: str | None = wanted
        else:
            # A session opened and closed without a prompt has nothing to go back to.
            sessions = [s for s in await session.list() if s.has_prompt]
            if not sessions:
                chat.post_message(ChatNote("no sessions to resume in this workspace yet"))
                return
            chosen = await self._app.push_screen_wait(SessionPicker(sessions, session.id))
        if not chosen:
            return
        try:
            note = await session.resume(chosen)
        except (ValueError, RuntimeError) as e:
            chat.post_message(ChatNote(one_line(e, 300), error=True))
            return
        chat.post_message(SessionSwitched(note, session.messages))
        self.state.bridge.repeat_start_notes()

    async def cmd_cost(self, arg: str) -> None:
        cost = self.chat.cost
        if cost is None:
            self.chat.note("no cost yet")
            return
        self.chat.note("\n".join(cost.report()))

    async def cmd_todos(self, arg: str) -> None:
        todos = self.state.services.session.todos if self.state.built else None
        self.chat.note(todos_text(todos))

    async def cmd_compact(self, arg: str) -> None:
        if self._turn_running():
            return
        if not self.state.phase.ready:
            self.chat.note("compacting needs a configured model (see the note above)")
            return
        # Run as the turn: Esc cancels it like one, and what is queued waits for it.
        self.chat.run_as_turn(partial(self._compact, arg.strip()), "compacting… (Esc cancels)")

    async def _compact(self, focus: str) -> None:
        post = self.chat.post_message

        def emit(event: RunEvent) -> None:
            post(TurnEvent(event))

        try:
            done = await self.state.services.turn.compact(focus, emit)
        except asyncio.CancelledError:
            post(ChatNote("compaction cancelled: the conversation is as it was"))
            raise
        except (RuntimeError, ValueError) as e:
            post(ChatNote(one_line(e, 400), error=True))
        else:
            if done is None:
                post(ChatNote("nothing to compact yet"))
        finally:
            post(TurnDone("compacted"))

    async def cmd_rewind(self, arg: str) -> None:
        if arg.strip():
            self.chat.note("usage: /rewind (then pick the turn)")
            return
        self.rewind.open()

    async def cmd_quit(self, arg: str) -> None:
        await self._app.run_action("quit")
