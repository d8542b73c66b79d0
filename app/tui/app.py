"""The full-screen app: chat pane, prompt, memory side panel, status line.

The App owns all UI state. Workers do the slow parts and tell the App by messages
(app/tui/messages.py). The Bridge (app/tui/bridge.py) builds the runtime and posts what it hears;
every feature is a call on the runtime's services (app/services). The flows the App composes
(start-up, the send queue, the trust question, quitting, sharing, the grounding watch) see it
through small host Protocols (app/tui/host.py) and never import this module. Where start-up is
is one value, ``phase`` (app/tui/phase.py).

Start-up keeps the first frame fast: this module imports Textual and the widgets only. The runtime
(pydantic, the stores) and the ``anthropic`` SDK (about 3 s) are imported by a worker after the
first frame. The prompt works from the first frame: a prompt sent while the runtime connects is
queued (shown as such in the chat) and sent once it is open, and the commands that need no model
run as soon as the memory stores can be reached (see ``commands.NEEDS_STORES``).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import Mapping
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from app.agent.conversation.attachments import with_attachments
from app.tui.bridge import Bridge
from app.tui.chat.completion import complete
from app.tui.chat.gc_hold import GcHold, release_start_up
from app.tui.chat.history_view import HistoryView
from app.tui.chat.main_screen import MainScreen, PromptTyping, selection_to_copy
from app.tui.chat.send_queue import WAIT_GROUPS, SendQueue
from app.tui.chat.turn_view import TurnRenderer
from app.tui.commands import Parsed, SlashCommands, parse
from app.tui.flows.quitter import QUIT_CLOSE_S, Quitter, wait_bounded
from app.tui.flows.scale_flow import ScaleFlow
from app.tui.flows.sharing_flow import SharingFlow
from app.tui.flows.trust_question import TrustQuestion
from app.tui.messages import (
    ChatNote,
    FilesLoaded,
    HistoryLoaded,
    MemoryEventMessage,
    MemoryUsage,
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
    TurnEvent,
)
from app.tui.panel.feed import PanelFeed
from app.tui.panel.grounding_watch import GroundingWatch
from app.tui.permission.window import ask as ask_permission
from app.tui.phase import Phase
from app.tui.screens.memory import MemoryScreens
from app.tui.startup import Startup
from app.tui.status_model import StatusModel
from memory.text.lines import one_line
from widgets.chat.log import ChatPane
from widgets.chat.prompt import PromptInput, Suggestion
from widgets.chat.status import StatusLine
from widgets.dialogs.permission import PermissionAnswer, PermissionRequest
from widgets.panel.memory_panel import MemoryPanel

if TYPE_CHECKING:
    from app.agent.config.settings import Settings
    from app.agent.model.pricing import CostMeter
    from app.services.bundle import Services
    from app.services.prompt_history import PromptHistory

# assets/ in the tree, app/assets/ in a wheel: the package app.assets either way (setup.py), by its spec.
CSS_FILE = Path(str(find_spec("app.assets").origin)).parent / "app.tcss"  # type: ignore[union-attr]
NARROW = 100  # columns: below this the memory panel starts hidden
# How long after a key (or a turn's end) the memory worker's threads still make room for the screen.
PACE_AFTER_S = 1.0
TYPEAHEAD_GRACE_S = 0.3  # after the first frame, a Ctrl+J may still be an Enter typed ahead
QUIT_HINT = "Ctrl+Q quits (Ctrl+C cancels a running turn)"
QUIT_HINT_S = 4.0  # how long the hint shows; Ctrl+C again meanwhile does not stack another


class PseudoClaudeApp(App[int]):
    TITLE = "PseudoClaude"
    CSS_PATH = str(CSS_FILE)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", priority=True),
        # Ctrl+C cancels the running turn (as Esc does), on any screen, a permission question
        # included; with text selected it copies instead (check_action); it never kills the app.
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
        # frame (see app.tui.startup). Until then ``settings`` is None.
        flags = settings if isinstance(settings, Mapping) else None
        self.settings: Settings | None = None if isinstance(settings, Mapping) else settings
        self.workspace = workspace
        self.bridge = Bridge(self.settings, workspace, self.post_message, self.ask_permission)
        self._panel_feed: PanelFeed | None = None
        self.phase = Phase.STARTING
        self.startup = Startup(self, flags, resume=resume, continue_latest=continue_latest)
        self.typing = PromptTyping(self, lambda: self._prompt)
        self.slash = SlashCommands(self)  # the slash commands' table and handlers
        # Sent before they could run, oldest first: prompts (and /clear, /resume, /compact) wait
        # for the session; commands that need only the stores wait for the runtime object.
        self.queue = SendQueue(
            self,
            run_command=self.slash.run_command,
            trust_pending=lambda: self.trust.pending,
            configure_help=self.startup.show_configure_help,
        )
        self._waiting = self.queue.items  # the same list: the automatic consolidation reads it
        self.trust: TrustQuestion = TrustQuestion(
            self,
            lambda: self.bridge.trust,
            connect=self.startup.connect,
            early_panel=self.startup.early_panel,
            drain=self.queue.drain_soon,
        )
        self._quit_hint_at = float("-inf")
        self.exit_code = 0
        self.turn: Worker[Any] | None = None  # the running turn (or /compact)
        self._run_start_files: frozenset[tuple[str, str]] | None = None
        self.cost: CostMeter | None = None
        self._files: list[str] = []
        self._files_set: frozenset[str] = frozenset()
        self.history: PromptHistory | None = None
        self._last_worker_error = ""
        self.panel_shows = 0  # how many panel states were shown (tests wait on it)
        # What the status line shows: it follows this state (each change redraws it).
        self.status_model = StatusModel(str(workspace), note="connecting…")
        self.show_settings()
        self._gc = GcHold()
        self.history_view = HistoryView(lambda: self.chat, self.call_later)
        self.turn_view = TurnRenderer(
            lambda: self.chat,
            self.status_model,
            self._gc,
            lambda: self.cost,
            lambda: self.settings.model if self.settings is not None else "",
        )
        self.memory_screens = MemoryScreens(self, refresh_panel=self.refresh_panel)
        self.scale = ScaleFlow(self)  # /consolidate, the automatic one, the search caches
        self.sharing = SharingFlow(self, self.refresh_panel)  # outside changes, the user store's sync
        self.quitter = Quitter(self, self.sharing)
        # Stale marks follow the cited files while the app runs (after turns, and on a timer).
        self.grounding = GroundingWatch(self, busy=self.turn_running)

    @property
    def services(self) -> Services:
        """The runtime's feature services (RuntimeError before the runtime is built)."""
        return self.bridge.services

    @property
    def panel_feed(self) -> PanelFeed:
        """The side panel's reads, over the bridge's home and lock (a test hands the App its own bridge)."""
        feed = self._panel_feed
        if feed is None or feed.card_reads is not self.bridge.card_reads:
            feed = self._panel_feed = PanelFeed(self.bridge.home, self.workspace, self.bridge.card_reads)
        return feed

    # -- where start-up is (one phase; these read it) ---------------------------------------------

    @property
    def ready(self) -> bool:
        """The session is open with a model: prompts can be sent."""
        return self.phase.ready

    @property
    def connecting(self) -> bool:
        """Start-up is not over (neither open nor failed)."""
        return self.phase.connecting

    @property
    def built(self) -> bool:
        """The runtime object exists: memory features work (also while quitting, once it did)."""
        if self.phase is Phase.QUITTING:
            return self.bridge.runtime is not None
        return self.phase not in (Phase.STARTING, Phase.FAILED)

    @property
    def waiting(self) -> bool:
        """Something waits before a new command: the trust question's answer, queued prompts."""
        return self.trust.pending or bool(self.queue.items)

    def turn_running(self) -> bool:
        return self.turn is not None and self.turn.is_running

    # -- layout --------------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        return MainScreen(id="_default")

    def compose(self) -> ComposeResult:
        self._chat = ChatPane(id="chat")  # kept: while a modal is up, queries go to the modal's screen
        self._prompt = PromptInput(id="prompt")
        # Keys typed before the first frame were typed blind: their Enter is an Enter.
        self._prompt.typeahead_enter_until = float("inf")
        self._panel = MemoryPanel(id="panel")
        self._status = StatusLine(id="status")
        self.status_model.attach(self._status)
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield self._chat
                yield self._prompt
            yield self._panel
        yield self._status

    @property
    def chat(self) -> ChatPane:
        return self._chat

    @property
    def prompt(self) -> PromptInput:
        return self._prompt

    @property
    def panel(self) -> MemoryPanel:
        return self._panel

    def on_mount(self) -> None:
        self.startup.snapshot_panel()  # the last start's cards, if the stores are as they were
        self.queue.show_notice()
        self.prompt.set_completer(self.complete)
        self.prompt.set_on_key(self._typing)
        self._narrow = self.size.width < NARROW
        self.set_class(self._narrow, "-narrow")
        self._show_panel(not self._narrow)
        self.prompt.focus()
        self.call_after_refresh(self._after_first_frame)

    def _after_first_frame(self) -> None:
        """Everything slow starts here, after the first frame is on the screen."""
        release_start_up()  # the collector, held since the command line (app.tui.chat.gc_hold)
        # What the terminal buffered before raw mode is read at once: a moment's grace for it.
        self.prompt.typeahead_enter_until = time.monotonic() + TYPEAHEAD_GRACE_S
        # The trust question first (no settings, SDK or session needed), then the panel's cards and
        # the connection. Nothing queued is sent until the question is answered.
        self.trust.ask()

    # -- start-up ------------------------------------------------------------------------------

    @on(RuntimeBuilt)
    def _on_built(self, message: RuntimeBuilt) -> None:
        self.startup.built()
        self.refresh_panel()
        self.queue.run_after_built()  # the commands typed meanwhile that need only the stores
        self.grounding.start()

    @on(RuntimeReady)
    def _on_ready(self, message: RuntimeReady) -> None:
        self.startup.ready(message)
        self.refresh_panel()
        self.queue.show_notice()
        self.queue.drain_soon()
        self.scale.started()
        self.sharing.start()
        self.slash.ext.ready()  # what the workspace adds: its notes, its trust question, the servers' states

    @on(RuntimeFailed)
    def _on_failed(self, message: RuntimeFailed) -> None:
        self.startup.failed(message)
        self.queue.fail_all()

    @on(HistoryLoaded)
    def _on_history(self, message: HistoryLoaded) -> None:
        self.prompt.set_history(message.items)

    @on(FilesLoaded)
    def _on_files(self, message: FilesLoaded) -> None:
        self._files = message.paths
        self._files_set = frozenset(message.paths)

    # -- the trust question (app.tui.flows.trust_question) ------------------------------------------------

    @on(TrustChecked)
    def _on_trust_checked(self, message: TrustChecked) -> None:
        self.trust.checked(message)

    @on(TrustCardsRead)
    def _on_trust_cards(self, message: TrustCardsRead) -> None:
        self.trust.cards_read(message)

    # -- the memory side panel -------------------------------------------------------------------

    def refresh_panel(self) -> None:
        """Read the side panel's state again (a worker; the panel shows it when it comes)."""
        self._refresh_panel()

    def refresh_screens(self) -> None:
        self.memory_screens.refresh()

    @work(exclusive=True, group="panel", exit_on_error=False)
    async def _refresh_panel(self) -> None:
        if not self.built:
            return
        state, pending = await self.panel_feed.state(self.services, self._run_start_files)
        self.post_message(PanelStateReady(state, pending))
        # Cards changed a moment ago cannot be stamped yet: the snapshot the next start shows
        # is written once they can (one try per refresh).
        if (delay := self.panel_feed.retry_in()) is not None:
            self.set_timer(delay, self._record_panel_snapshot)

    @work(exclusive=True, group="panel-snapshot-retry", exit_on_error=False)
    async def _record_panel_snapshot(self) -> None:
        if self.built and self.phase is not Phase.QUITTING:
            await self.panel_feed.record(self.services)

    @on(PanelStateReady)
    def _on_panel_state(self, message: PanelStateReady) -> None:
        if (kind := self.startup.panel_state_kind(message.state)) is None:
            return  # the cards read before the runtime, arriving after its own state
        self.panel.show(message.state)
        self.panel_shows += kind == "runtime"  # tests wait on the runtime's states
        state = message.state
        self.status_model.update(
            pending=message.pending, new_cards=sum(1 for c in (*state.project, *state.user) if c.new)
        )

    @on(MemoryEventMessage)
    def _on_memory_event(self, message: MemoryEventMessage) -> None:
        self.memory_screens.record(message.event)
        self._refresh_panel()
        self.memory_screens.refresh()
        self.scale.memory_event(message.event)
        self.sharing.memory_event(message.event)

    @on(MemoryPanel.OpenPending)
    def _on_open_pending(self, message: MemoryPanel.OpenPending) -> None:
        if self.built:
            self.memory_screens.open_pending()

    @on(MemoryPanel.OpenBrowser)
    def _on_open_browser(self, message: MemoryPanel.OpenBrowser) -> None:
        if self.built:
            self.memory_screens.open_browser(message.card)

    @on(StoresChangedMessage)
    def _on_stores_changed(self, message: StoresChangedMessage) -> None:
        self.sharing.stores_changed()  # MEMORY.md rebuilt from the cards, then the panel
        self.memory_screens.refresh()
        self.scale.stores_changed()

    @on(MemoryUsage)
    def _on_memory_usage(self, message: MemoryUsage) -> None:
        if self.cost is not None:
            self.cost.add(message.model, message.usage)
            self.status_model.update(cost=self.cost.describe())

    def on_resize(self, event: events.Resize) -> None:
        # Crossing the threshold resets the panel to that size's default; F2 still toggles it.
        narrow = event.size.width < NARROW
        if narrow != getattr(self, "_narrow", narrow):
            self._show_panel(not narrow)
        self._narrow = narrow
        self.set_class(narrow, "-narrow")

    def action_toggle_panel(self) -> None:
        self._show_panel(not self.panel.display)

    # -- status line -----------------------------------------------------------------------------

    def show_settings(self) -> None:
        """The status line's settings fields (the runtime's memory mode once it exists)."""
        settings, rt = self.settings, self.bridge.runtime
        if settings is None:
            return
        self.status_model.update(
            model=settings.model,
            memory_mode=rt.memory_mode if rt is not None else settings.memory_mode,
            compact_pct=round(settings.compact_at * 100),
        )

    @on(SettingsChanged)
    def _on_settings_changed(self, message: SettingsChanged) -> None:
        self.show_settings()

    def _show_panel(self, shown: bool) -> None:
        self.panel.display = shown
        self.status_model.update(panel_hidden=not shown)  # the "F2 memory" hint shows only then

    # -- completion ------------------------------------------------------------------------------

    def complete(self, text: str, cursor: int) -> list[Suggestion]:
        return complete(text, cursor, self._files, self.slash.ext.listing())

    # -- sending ---------------------------------------------------------------------------------

    @on(PromptInput.Submitted)
    async def _on_submit(self, message: PromptInput.Submitted) -> None:
        text = message.text
        if not text.strip():
            return
        parsed = parse(text)
        if parsed is not None:
            await self.slash.run_command(parsed)
        elif self.phase is not Phase.QUITTING:
            self.queue.submit(text, message.typed, message.pastes)

    def defer_command(self, parsed: Parsed, needs: str) -> None:
        """Run ``parsed`` once what it needs is there (see ``SendQueue.defer``)."""
        self.queue.defer(parsed, needs)

    def start_turn(self, text: str) -> None:
        self.turn_view.start()
        self.prompt.disabled_reason = "a turn is running (Esc cancels)"
        self.turn = self._run_turn(text)

    def remember_prompt(self, text: str) -> None:
        """Into the prompt history (Up), once it is open."""
        if self.history is not None:
            self._remember_prompt(self.history, text)

    @work(group="history", exit_on_error=False)
    async def _remember_prompt(self, history: PromptHistory, text: str) -> None:
        await asyncio.to_thread(history.append, text)

    @work(exclusive=True, group="turn", exit_on_error=False)
    async def _run_turn(self, text: str) -> None:
        status = "error"
        self.bridge.pacer.busy(float("inf"))  # the memory worker's threads make room while it runs
        try:
            message, notes = await with_attachments(text, self.workspace, self._files_set)
            for n in notes:  # a file cut or refused: one line each
                self.post_message(ChatNote(one_line(n, 300)))
            # Beside the Run, not before it: the cards cannot change until its job is applied.
            asyncio.ensure_future(asyncio.to_thread(self.services.index.note_files)).add_done_callback(
                self._noted_start_files
            )
            stop = await self.bridge.run_turn(self.services.turn, message)
            status = stop.status
        except asyncio.CancelledError:
            status = "cancelled"
            raise
        except Exception as e:
            self.post_message(ChatNote(self.slash.ext.failed_line(e), error=True))
        finally:
            self.post_message(TurnDone(status))

    def _noted_start_files(self, task: asyncio.Future[frozenset[tuple[str, str]]]) -> None:
        if not task.cancelled() and task.exception() is None:
            self._run_start_files = task.result()

    def action_cancel_turn(self) -> None:
        """Esc and Ctrl+C: cancel the running turn (or /compact), and take back what is queued."""
        self.slash.rewind.escape()  # with neither: Esc Esc on an empty prompt opens /rewind
        if self.turn is not None and self.turn.is_running:
            self.turn.cancel()
        if self.queue.items:
            self.queue.cancel()

    def action_interrupt(self) -> None:
        """Ctrl+C: as Esc while a turn runs or something is queued; else a hint how to quit."""
        if self.turn_running() or self.queue.items:
            self.action_cancel_turn()
            return
        now = time.monotonic()
        if now - self._quit_hint_at > QUIT_HINT_S:
            self._quit_hint_at = now
            self.notify(QUIT_HINT, timeout=QUIT_HINT_S)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # With text selected (in the prompt, an input, or on the screen with the mouse), Ctrl+C
        # is not ours: the binding falls through to the widget's or the screen's copy.
        if action == "interrupt" and selection_to_copy(self):
            return False
        return True

    # -- typing reaches the prompt (app.tui.chat.main_screen) ------------------------------------------

    @property
    def last_key_at(self) -> float:
        return self.typing.last_key_at

    async def on_event(self, event: events.Event) -> None:
        self.typing.saw(event)
        await super().on_event(event)

    def take_typed_ahead(self, text: str, backspaces: int) -> bool:
        return self.typing.take_typed_ahead(text, backspaces)

    def on_key(self, event: events.Key) -> None:
        self.typing.stray_key(event)

    def on_paste(self, event: events.Paste) -> None:
        self.typing.stray_paste(event)

    @on(TurnDone)
    async def _on_turn_done(self, message: TurnDone) -> None:
        await self.turn_view.end()
        if self.phase.opened:
            self.prompt.disabled_reason = None
        self._refresh_panel()
        self.grounding.recheck()  # the turn's tools may have changed cited files
        self.scale.when_idle()  # an automatic consolidation that waited for the turn
        self.bridge.pacer.idle()
        self.bridge.pacer.busy(PACE_AFTER_S)  # the turn's last frames
        # After the turn's last frame, once nobody types: a full collection that is due runs then.
        self.call_after_refresh(self._release_gc_when_idle)

    # -- the Runner's events -> the chat pane ----------------------------------------------------

    def _typing(self) -> None:
        self._gc.last_key = time.monotonic()
        self.bridge.pacer.busy(PACE_AFTER_S)
        self.turn_view.typing()
        self._gc.tick()

    def _release_gc_when_idle(self) -> None:
        if not self._gc.held or self.turn_view.answer is not None:
            return  # released already, or an answer streams again (its turn's end calls this)
        wait = self._gc.idle_in()
        if wait > 0:
            self.set_timer(wait, self._release_gc_when_idle)
        else:
            self._gc.release()

    @on(TurnEvent)
    async def _on_turn_event(self, message: TurnEvent) -> None:
        await self.turn_view.handle(message.event)

    @on(Worker.StateChanged)
    def _on_worker_state(self, event: Worker.StateChanged) -> None:
        done = event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED)
        if done and event.worker.group in WAIT_GROUPS:
            if event.worker.group == "trust":
                self.trust.pending = False
            self.queue.drain_soon()  # the next queued prompt or command
        # A failed background worker is one line in the chat, never a crashed app.
        if event.state is WorkerState.ERROR and self.phase is not Phase.QUITTING:
            error = event.worker.error
            what = f"{type(error).__name__}: {error}" if error is not None else "unknown error"
            line = one_line(f"{event.worker.group or 'background'} task failed: {what}", 400)
            if line != self._last_worker_error:  # a store that stays broken is said once
                self._last_worker_error = line
                self.chat.add_error(line)

    @on(ChatNote)
    def _on_chat_note(self, message: ChatNote) -> None:
        if message.error:
            self.chat.add_error(message.text)
        else:
            self.chat.add_note(message.text)

    # -- a resumed session's history ---------------------------------------------------------------

    def show_history(self, messages: list[dict[str, Any]]) -> None:
        self.history_view.show(messages, self.services.session if self.built else None)

    @on(SessionSwitched)
    def _on_session_switched(self, message: SessionSwitched) -> None:
        self.chat.clear_blocks()
        self.turn_view.reset()
        self._gc.release()
        self.status_model.update(last_turn="", context_pct=None)
        self._run_start_files = None
        if message.note:
            self.chat.add_note(one_line(message.note, 300))
        if message.messages:
            self.show_history(message.messages)
        self._refresh_panel()

    # -- permission modal ------------------------------------------------------------------------

    async def ask_permission(self, request: PermissionRequest) -> PermissionAnswer:
        return await ask_permission(self, request)

    # -- quit ------------------------------------------------------------------------------------

    async def action_quit(self) -> None:
        """Ctrl+Q: drain memory for a bounded time, close, exit; again: leave at once."""
        self.quitter.quit()

    async def on_unmount(self) -> None:
        # However the app ends, the session file is closed (its lock released) and the memory worker
        # stopped; jobs left stay spooled. Bounded: a stuck close must not keep the app from ending.
        self._gc.release()
        self.sharing.stop()  # a sync's git and its ssh do not outlive the app
        await wait_bounded(asyncio.ensure_future(self.bridge.close(0.0)), QUIT_CLOSE_S)


def run_app(
    settings: Settings | Mapping[str, object],
    workspace: Path,
    *,
    resume: str | None = None,
    continue_latest: bool = False,
) -> int:
    """``pseudoclaude`` without ``-p``: run the full-screen app until it quits. ``settings``
    may be the command line's setting flags: the app loads the settings after its first frame."""
    app = PseudoClaudeApp(settings, workspace, resume=resume, continue_latest=continue_latest)
    app.run()
    if app.startup.error is not None:
        with contextlib.suppress(OSError):
            sys.stderr.write(f"pseudoclaude: {app.startup.error}\n")
        return 2
    return app.return_code or 0
