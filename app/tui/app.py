"""The full-screen app: it composes the chat screen and the memory side, owns the app-wide state
(app.tui.app_state: the bridge to the runtime, where start-up is; the panel's visibility,
quitting) and routes the messages: the chat's go to the chat screen (app.tui.chat) whoever posts
them, the memory's to the memory side (app.tui.panel.memory_side), start-up's to both. Each
flow is handed what it uses and never imports this module. The first frame is fast: this module
imports Textual and the widgets only (the runtime comes after it: app.tui.startup).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from textual import events, on
from textual.app import App
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.worker import Worker, WorkerState

from app.tui.app_state import AppState
from app.tui.bridge import Bridge
from app.tui.chat.chat_screen import ChatScreen
from app.tui.chat.gc_hold import release_start_up
from app.tui.chat.prompt_typing import selection_to_copy
from app.tui.chat.slash_commands import SlashCommands
from app.tui.flows.quitter import QUIT_CLOSE_S, Quitter, wait_bounded
from app.tui.messages import (
    ChatMessage,
    MemoryEventMessage,
    PanelStateReady,
    RuntimeBuilt,
    RuntimeFailed,
    RuntimeReady,
    SessionSwitched,
    SettingsChanged,
    StoresChangedMessage,
    TrustCardsRead,
    TrustChecked,
    TurnDone,
    TurnStarted,
)
from app.tui.panel.memory_side import MemorySide
from app.tui.permission import plan_window
from app.tui.permission import window as permission_window
from app.tui.startup import Startup
from app.tui.status_model import StatusModel
from widgets.panel.memory_panel import MemoryPanel

if TYPE_CHECKING:
    from app.agent.config.settings import Settings
    from app.services.bundle import Services

# assets/ in the tree, app/assets/ in a wheel: the package app.assets either way (setup.py), by its spec.
CSS_FILE = Path(str(find_spec("app.assets").origin)).parent / "app.tcss"  # type: ignore[union-attr]
NARROW = 100  # columns: below this the memory panel starts hidden


class PseudoClaudeApp(App[int]):
    TITLE = "PseudoClaude"
    CSS_PATH = str(CSS_FILE)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", priority=True),
        # Ctrl+C cancels the turn as Esc does, on any screen (a window too); never kills the app.
        Binding("ctrl+c", "interrupt", show=False, priority=True),
        Binding("escape", "cancel_turn", "Cancel turn"),
        Binding("f2", "toggle_panel", "Memory panel"),
    ]

    def __init__(
        self,
        settings: Settings | Mapping[str, object],
        workspace: Path,
        *,
        resume: str | None = None,
        continue_latest: bool = False,
    ) -> None:
        super().__init__()
        # The command line passes its flags (a mapping): the settings are loaded after the first
        # frame (see app.tui.startup). Until then the bridge's ``settings`` is None.
        flags, given = (settings, None) if isinstance(settings, Mapping) else (None, settings)
        self.workspace = workspace
        # The permission and plan windows, over whichever screen is up (looked up when asked: tests count).
        self.bridge = Bridge(given, workspace, self.post_message, lambda q: permission_window.ask(self, q))
        self.bridge.ask_plan = lambda plan: plan_window.ask_plan(self, plan)
        self.exit_code = 0
        # What the status line shows: it follows this state (each change redraws it).
        self.status_model = StatusModel(str(workspace), note="connecting…")
        self.status_model.show_settings(given, None)
        self.state = state = AppState(
            self.bridge, workspace, self.status_model, lambda: self.startup.trust.pending
        )
        self.chat_screen = chat = ChatScreen(state, mounted=self._chat_mounted)
        self.chat, self.prompt, self.panel = chat.chat, chat.prompt, chat.panel  # as tests reach them
        self.memory = memory = MemorySide(
            self, state, chat.panel, busy=chat.busy, turn_running=chat.turn_running
        )
        chat.commands = SlashCommands(
            chat, self, memory=memory.screens, scale=memory.scale, memory_changed=memory.changed
        )
        self.startup = Startup(
            self,
            state,
            flags,
            resume=resume,
            continue_latest=continue_latest,
            early=memory.panel.early,
            drain=chat.queue.drain_soon,
            refresh_panel=memory.refresh_panel,
        )
        self.quitter = Quitter(
            self,
            post=self.post_message,
            phase=lambda: state.phase,
            set_phase=state.set_phase,
            turn=lambda: chat.turn,
            services=state.built_services,
            bridge=lambda: self.bridge,
            status=self.status_model,
            sharing=memory.sharing,
            exit_code=lambda: self.exit_code,
        )

    @property
    def services(self) -> Services:
        """The runtime's feature services (RuntimeError before the runtime is built)."""
        return self.bridge.services

    def post_message(self, message: Message) -> bool:
        """The chat's messages go to the chat screen's queue whoever posts them: all that draws
        the chat keeps the order it was posted in. One the screen has handled is the App's."""
        if isinstance(message, ChatMessage) and not message.shown:
            return self.chat_screen.post_message(message)
        return super().post_message(message)

    # -- start-up -------------------------------------------------------------------------------------

    def get_default_screen(self) -> ChatScreen:
        return self.chat_screen

    def _chat_mounted(self) -> None:
        """The App's part of the chat screen's first frame: the panel's last cards, its size."""
        self.memory.panel.snapshot()
        self._narrow = self.size.width < NARROW
        self.set_class(self._narrow, "-narrow")
        self._show_panel(not self._narrow)
        self.call_after_refresh(self._after_first_frame)

    def _after_first_frame(self) -> None:
        """Everything slow starts here, after the first frame is on the screen."""
        release_start_up()  # the collector, held since the command line (app.tui.chat.gc_hold)
        self.startup.begin()

    @on(RuntimeBuilt)
    @on(RuntimeReady)
    @on(RuntimeFailed)
    def _on_start_up(self, message: RuntimeBuilt | RuntimeReady | RuntimeFailed) -> None:
        """Where start-up is, then the chat screen's part (through its queue) and the memory's."""
        self.state.phase = self.state.phase.after(message)
        self.chat_screen.post_message(message)
        self.memory.handle(message)

    @on(TrustChecked)
    def _on_trust_checked(self, message: TrustChecked) -> None:
        self.startup.trust.checked(message)

    @on(TrustCardsRead)
    def _on_trust_cards(self, message: TrustCardsRead) -> None:
        self.startup.trust.cards_read(message)

    @on(SettingsChanged)
    def _on_settings_changed(self, message: SettingsChanged) -> None:
        self.status_model.show_settings(self.bridge.settings, self.bridge.runtime)

    # -- routing ---------------------------------------------------------------------------------------

    @on(PanelStateReady)
    @on(MemoryEventMessage)
    @on(StoresChangedMessage)
    @on(MemoryPanel.OpenPending)
    @on(MemoryPanel.OpenBrowser)
    @on(TurnStarted)
    @on(TurnDone)
    @on(SessionSwitched)
    def _to_memory(self, message: Message) -> None:
        """The memory's news, and the chat's that the memory follows (after the chat drew it)."""
        self.memory.handle(message)

    @on(Worker.StateChanged)
    def _on_worker_state(self, event: Worker.StateChanged) -> None:
        if event.worker.group == "trust" and event.state not in (WorkerState.PENDING, WorkerState.RUNNING):
            self.startup.trust.pending = False
        self.chat_screen.worker_changed(event)  # what waited for it goes; a failure is one line

    # -- the panel's visibility ------------------------------------------------------------------------

    def on_resize(self, event: events.Resize) -> None:
        # Crossing the threshold resets the panel to that size's default; F2 still toggles it.
        narrow = event.size.width < NARROW
        if narrow != getattr(self, "_narrow", narrow):
            self._show_panel(not narrow)
        self._narrow = narrow
        self.set_class(narrow, "-narrow")

    def action_toggle_panel(self) -> None:
        self._show_panel(not self.panel.display)

    def _show_panel(self, shown: bool) -> None:
        self.panel.display = shown
        self.status_model.update(panel_hidden=not shown)  # the "F2 memory" hint shows only then

    # -- keys ------------------------------------------------------------------------------------------

    def action_cancel_turn(self) -> None:
        """Esc and Ctrl+C: cancel the running turn (or /compact), and take back what is queued."""
        self.chat_screen.cancel_turn()

    def action_interrupt(self) -> None:
        """Ctrl+C: as Esc while a turn runs or something is queued; else a hint how to quit."""
        self.chat_screen.interrupt()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # With text selected (prompt, an input, the screen), Ctrl+C falls through to their copy.
        return not (action == "interrupt" and selection_to_copy(self))

    # Typing is timed on every screen (deciding windows ask when it paused) and keys typed ahead of a
    # window go back to the prompt (app.tui.chat.prompt_typing).
    @property
    def last_key_at(self) -> float:
        return self.chat_screen.typing.last_key_at

    def take_typed_ahead(self, text: str, backspaces: int) -> bool:
        return self.chat_screen.typing.take_typed_ahead(text, backspaces)

    async def on_event(self, event: events.Event) -> None:
        self.chat_screen.typing.saw(event)
        await super().on_event(event)

    async def action_quit(self) -> None:
        """Ctrl+Q: drain memory for a bounded time, close, exit; again: leave at once."""
        self.quitter.quit()

    async def on_unmount(self) -> None:
        # However the app ends, the session file is closed (its lock released) and the memory worker
        # stopped; jobs left stay spooled. Bounded: a stuck close must not keep the app from ending.
        self.chat_screen.release_gc()
        self.memory.sharing.stop()  # a sync's git and its ssh do not outlive the app
        await wait_bounded(asyncio.ensure_future(self.bridge.close(0.0)), QUIT_CLOSE_S)
