"""The chat: one screen that owns the chat pane, the prompt, the send queue and the running turn.

It composes the chat's layout (the chat pane and the prompt, the memory panel beside them, the
status line below; the App shows or hides the panel and its feed fills it), sends what is typed
(a slash command runs, a prompt is sent or queued, never dropped while starting), runs the turn
and draws its events, and draws a resumed session's history. Nothing else draws in the chat:
the chat's messages (``ChatMessage``: a note, a turn's event and end, a session switch, the
prompt's history and files, the prompt closed or given text back) are handed to this screen's
queue whoever posts them (see ``PseudoClaudeApp.post_message``), so all that draws the chat keeps
the order it was posted in. A turn's end and a session switch bubble on to the App (the panel,
the grounding watch and the automatic consolidation follow them), as does ``TurnStarted``.

The rest of the app reaches the screen by those messages and by a few public methods (``note``,
``cancel_turn``, ``worker_changed``); it reads the app-wide state through ``AppState``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from app.tui.app_state import AppState
from app.tui.chat.command_table import Parsed, parse
from app.tui.chat.completion import complete
from app.tui.chat.gc_hold import GcHold
from app.tui.chat.history_view import HistoryView
from app.tui.chat.image_paste import ImagePaste, sent_labels
from app.tui.chat.prompt_typing import PromptTyping
from app.tui.chat.send_queue import WAIT_GROUPS, SendQueue
from app.tui.chat.thinking_view import tab_toggles_thinking, toggle_thinking
from app.tui.chat.todo_view import TodoView
from app.tui.chat.turn_view import TurnRenderer
from app.tui.messages import (
    ChatNote,
    FilesLoaded,
    HistoryLoaded,
    MemoryUsage,
    PromptBack,
    PromptClosed,
    RuntimeBuilt,
    RuntimeFailed,
    RuntimeReady,
    SessionSwitched,
    TurnDone,
    TurnEvent,
    TurnStarted,
)
from app.tui.phase import Phase
from memory.text.lines import one_line
from widgets.chat.log import ChatPane
from widgets.chat.prompt import PromptInput, Suggestion
from widgets.chat.status import StatusLine
from widgets.chat.todo_list import TodoListView
from widgets.panel.memory_panel import MemoryPanel

if TYPE_CHECKING:
    from rich.console import RenderableType

    from app.agent.conversation.blocks import Message as ConversationMessage
    from app.agent.model.pricing import CostMeter
    from app.services.prompt_history import PromptHistory
    from app.tui.flows.extension_commands import ExtensionCommands
    from app.tui.flows.rewind_flow import RewindFlow
    from widgets.chat.user_block import UserBlock

__all__ = ["PACE_AFTER_S", "ChatScreen", "Commands"]

# How long after a key (or a turn's end) the memory worker's threads still make room for the screen.
PACE_AFTER_S = 1.0
TYPEAHEAD_GRACE_S = 0.3  # after the first frame, a Ctrl+J may still be an Enter typed ahead
QUIT_HINT = "Ctrl+Q quits (Ctrl+C cancels a running turn)"
QUIT_HINT_S = 4.0  # how long the hint shows; Ctrl+C again meanwhile does not stack another

# One item per line and no column alignment: the chat beside the panel is about 52 cells wide at
# 100 columns, and aligned columns wrapped into stray lines there. The first line is the heading
# (drawn bold, in a setup block).
CONFIGURE_HELP = (
    "Setup: no model is configured\n"
    "Chatting is off; memory browsing and editing work.\n"
    "To chat, set credentials and restart:\n"
    "  export ANTHROPIC_API_KEY=sk-ant-…\n"
    "  or: export ANTHROPIC_AUTH_TOKEN=…\n"
    "Optional (an Anthropic-compatible endpoint):\n"
    "  export ANTHROPIC_BASE_URL=https://…\n"
    "Settings go in $PSEUDOCLAUDE_HOME/config.toml\n"
    "(default ~/.PseudoClaude/config.toml):\n"
    '  model = "claude-sonnet-5-5"\n'
    '  memory_model = "claude-haiku-5-5"\n'
    '  memory_mode = "auto"'
)


class Commands(Protocol):
    """The slash commands as the chat runs them (app.tui.chat.slash_commands.SlashCommands)."""

    ext: ExtensionCommands  # custom commands and MCP prompts (completion, a turn's failure line)
    rewind: RewindFlow  # Esc Esc on an empty prompt

    async def run_command(self, parsed: Parsed, *, queued: bool = False) -> None: ...


class ChatScreen(Screen[None]):
    """The chat's screen. Whenever it is on top again — a window answered, a screen closed,
    however it was opened — the focus goes back to the prompt. ``state`` is what it reads of the
    app-wide state (the status line's included: the turn keeps its fields, the session's cost);
    ``mounted`` is the App's part of the first frame (the panel's size and its last cards)."""

    AUTO_FOCUS = "#prompt"  # from its first compose: keys typed before the first frame go there

    BINDINGS: ClassVar[list[BindingType]] = [
        # Every thinking block of the chat expanded or collapsed (app.tui.chat.thinking_view).
        Binding("ctrl+o", "toggle_thinking_blocks", "Show thinking", show=False),
        # The permission mode, default → accept-edits → plan, also while a turn runs (its next
        # tool call counts under the new one). A priority binding: focus navigation, which takes
        # Shift+Tab otherwise, never gets it on this screen.
        Binding("shift+tab", "cycle_permission_mode", "Permission mode", show=False, priority=True),
    ]

    def __init__(self, state: AppState, *, mounted: Callable[[], None]) -> None:
        super().__init__(id="_default")  # app.tcss places the chat's widgets on this screen
        self.state = state
        self.status = state.status
        self.workspace = state.workspace
        self._mounted = mounted
        self.commands: Commands | None = None  # the App's slash commands, handed in once made
        self.chat = ChatPane(id="chat")
        self.prompt = PromptInput(id="prompt")
        # Keys typed before the first frame were typed blind: their Enter is an Enter.
        self.prompt.typeahead_enter_until = float("inf")
        self.panel = MemoryPanel(id="panel")
        self.status_line = StatusLine(id="status")
        self.typing = PromptTyping(self, self.prompt)
        self.images = ImagePaste(self, self.prompt, lambda text, error: self.note(text, error=error))
        self.queue = SendQueue(
            self,
            self.chat,
            self.prompt,
            phase=lambda: state.phase,
            built=lambda: state.built,
            trust_pending=state.trusting,
            run_command=self._run_command,
            start_turn=self.start_turn,
            remember=self.remember_prompt,
            configure_help=self.show_configure_help,
        )
        self.turn: Worker[Any] | None = None  # the running turn (or /compact)
        self.cost: CostMeter | None = None  # the session's tokens and cost, once the runtime is open
        self.history: PromptHistory | None = None  # the prompt history (Up), once the runtime is built
        self.files: list[str] = []  # the workspace's, for @path completion and attachments
        self._files_set: frozenset[str] = frozenset()
        self._gc = GcHold()
        self.turn_view = TurnRenderer(
            lambda: self.chat, self.status, self._gc, lambda: self.cost, self._model
        )
        self.history_view = HistoryView(lambda: self.chat, self.call_later)
        # The session's to-do list, live between the chat and the prompt (todo_write redraws it).
        self.todos = TodoView(TodoListView(id="todos"))
        self.turn_view.on_todos = self.todos.changed
        self._last_worker_error = ""
        self._quit_hint_at = float("-inf")

    def _model(self) -> str:
        settings = self.state.bridge.settings
        return settings.model if settings is not None else ""

    def _commands(self) -> Commands:
        if self.commands is None:
            raise RuntimeError("the slash commands are not handed in yet")
        return self.commands

    async def _run_command(self, parsed: Parsed, *, queued: bool = False) -> None:
        await self._commands().run_command(parsed, queued=queued)

    # -- layout ------------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        self.status.attach(self.status_line)
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield self.chat
                yield self.todos.widget
                yield self.prompt
            yield self.panel
        yield self.status_line

    def on_mount(self) -> None:
        self.queue.show_notice()
        self.prompt.set_completer(self.complete)
        self.prompt.set_on_key(self._typing)
        self.prompt.set_paste_claim(self.images.claim)
        self.prompt.set_clipboard_paste(self.images.from_clipboard)
        self._mounted()
        self.prompt.focus()
        self.call_after_refresh(self._first_frame_shown)

    def _first_frame_shown(self) -> None:
        # What the terminal buffered before raw mode is read at once: a moment's grace for it.
        self.prompt.typeahead_enter_until = time.monotonic() + TYPEAHEAD_GRACE_S

    def on_screen_resume(self) -> None:
        if self.prompt.is_attached:
            self.set_focus(self.prompt)

    def on_key(self, event: events.Key) -> None:
        if tab_toggles_thinking(event, self.prompt, self.app.focused):
            # Tab on the empty prompt: thinking on or off (with text, Tab goes on to the panel).
            event.stop()
            event.prevent_default()
            if problem := toggle_thinking(self.state):
                self.note(problem, error=True)
            return
        self.typing.stray_key(event)  # a key no widget took: printable, it goes to the prompt

    def action_toggle_thinking_blocks(self) -> None:
        self.turn_view.thinking.toggle_blocks()

    def action_cycle_permission_mode(self) -> None:
        """Shift+Tab: the next permission mode; the status line shows it (the runtime says so).
        Before the runtime exists there is no mode to change yet: a bell."""
        runtime = self.state.bridge.runtime
        if runtime is None:
            self.app.bell()
            return
        runtime.set_permission_mode(runtime.permission_mode.next())

    def on_paste(self, event: events.Paste) -> None:
        self.typing.stray_paste(event)

    def complete(self, text: str, cursor: int) -> list[Suggestion]:
        listing = self.commands.ext.listing() if self.commands is not None else []
        return complete(text, cursor, self.files, listing)

    # -- what the rest of the app calls ---------------------------------------------------------

    def note(self, text: str, *, error: bool = False) -> None:
        """A line (or a few) in the chat: an outcome, a problem (``error``)."""
        if error:
            self.chat.add_error(text)
        else:
            self.chat.add_note(text)

    def show_help(self, text: str, table: RenderableType) -> None:
        """/help: drawn as ``table``; ``text`` stays the block's plain form (what copies read)."""
        self.chat.add_note(text).update(table)

    def clear(self) -> None:
        self.chat.clear_blocks()

    def show_configure_help(self) -> None:
        """The setup note: why chatting is off, and how to configure a model."""
        block = self.chat.add_note(CONFIGURE_HELP)
        block.add_class("-setup")
        heading, _, body = CONFIGURE_HELP.partition("\n")
        block.update(Content.assemble((heading, "bold"), "\n", body))

    @property
    def waiting(self) -> bool:
        """Something waits before a new command: the trust question's answer, queued prompts."""
        return self.state.trusting() or bool(self.queue.items)

    def turn_running(self) -> bool:
        return self.turn is not None and self.turn.is_running

    def busy(self) -> bool:
        """A turn runs or something waits in the queue (Ctrl+C cancels them; the automatic
        consolidation waits for neither)."""
        return self.turn_running() or bool(self.queue.items)

    def interrupt(self) -> None:
        """Ctrl+C (on any screen): as Esc while a turn runs or something is queued; else a hint
        how to quit."""
        if self.busy():
            self.cancel_turn()
            return
        now = time.monotonic()
        if now - self._quit_hint_at > QUIT_HINT_S:
            self._quit_hint_at = now
            self.app.notify(QUIT_HINT, timeout=QUIT_HINT_S)

    def cancel_turn(self) -> None:
        """Esc and Ctrl+C: cancel the running turn (or /compact), and take back what is queued."""
        idle = not (self.turn_running() or self.waiting or self.prompt.text.strip())
        # With neither: Esc Esc on an empty prompt, no window up, opens /rewind.
        self._commands().rewind.escape(idle=idle and len(self.app.screen_stack) == 1)
        if self.turn is not None and self.turn.is_running:
            self.turn.cancel()
        if self.queue.items:
            self.queue.cancel()

    def worker_changed(self, event: Worker.StateChanged) -> None:
        """A worker ended: the next queued prompt or command may go when it was one they wait
        for; a failed one is one line in the chat, never a crashed app (once while it stays)."""
        done = event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED)
        if done and event.worker.group in WAIT_GROUPS:
            self.queue.drain_soon()
        if event.state is WorkerState.ERROR and self.state.phase is not Phase.QUITTING:
            error = event.worker.error
            what = f"{type(error).__name__}: {error}" if error is not None else "unknown error"
            line = one_line(f"{event.worker.group or 'background'} task failed: {what}", 400)
            if line != self._last_worker_error:  # a store that stays broken is said once
                self._last_worker_error = line
                self.chat.add_error(line)

    @on(Worker.StateChanged)
    def _on_worker_state(self, event: Worker.StateChanged) -> None:
        self.worker_changed(event)  # the chat's own workers, and the App's it hands on

    # -- start-up, as the App hands it on ----------------------------------------------------------

    @on(RuntimeBuilt)
    def _on_built(self, message: RuntimeBuilt) -> None:
        """The runtime object exists: the prompt history and the workspace's files load, and
        the commands typed meanwhile that need only the stores run."""
        message.stop()
        # After the first frame: this module loads before it, the history's modules need not.
        from app.services.prompt_history import PromptHistory

        self.history = PromptHistory(self.state.bridge.home, self.workspace)
        self._load_side_data(self.history)
        self.queue.run_after_built()

    @work(group="side", exit_on_error=False)
    async def _load_side_data(self, history: PromptHistory) -> None:
        # After the first frame: the file lister (pathspec) stays out of it.
        from app.tui.chat.filecomplete import workspace_files

        with contextlib.suppress(Exception):
            self.post_message(HistoryLoaded(await asyncio.to_thread(history.load)))
        with contextlib.suppress(Exception):
            self.post_message(FilesLoaded(await asyncio.to_thread(workspace_files, self.workspace)))

    @on(RuntimeReady)
    def _on_ready(self, message: RuntimeReady) -> None:
        """The session is open (or, without credentials, memory only: commands still work
        offline, and a message gets the configuration help again): what the workspace adds is
        said, then what waited is sent."""
        message.stop()
        # After the first frame: the prices are a pydantic model.
        from app.agent.model.pricing import CostMeter

        self.cost = CostMeter(getattr(self.state.bridge.settings, "prices", None))
        note = "" if message.credentials else "no model configured"
        self.status.update(note=note, cost=self.cost.describe())
        if self.state.phase is not Phase.QUITTING:
            self.prompt.disabled_reason = None
        if not message.credentials:
            self.show_configure_help()
        if message.note:
            self.chat.add_note(one_line(message.note, 300))
        if messages := self.state.services.session.messages:
            self.show_history(messages)
        self.todos.session(self.state.services.session.todos)
        self.queue.show_notice()
        # Its notes, its trust question, the servers' states; said before what waited is sent.
        self._commands().ext.ready()
        self.queue.drain_soon()

    @on(RuntimeFailed)
    def _on_failed(self, message: RuntimeFailed) -> None:
        """Start-up failed, said once, and on each thing that waited."""
        message.stop()
        self.status.update(note="not connected")
        self.prompt.disabled_reason = "not connected"
        self.chat.add_error(message.message)
        self.queue.fail_all()

    @on(HistoryLoaded)
    def _on_history(self, message: HistoryLoaded) -> None:
        message.stop()
        self.prompt.set_history(message.items)

    @on(FilesLoaded)
    def _on_files(self, message: FilesLoaded) -> None:
        message.stop()
        self.files = message.paths
        self._files_set = frozenset(message.paths)

    # -- sending -------------------------------------------------------------------------------------

    @on(PromptInput.Submitted)
    async def _on_submit(self, message: PromptInput.Submitted) -> None:
        """What the person sends is answered at the chat's end (a chat scrolled up to read goes
        back to it and follows again): a slash command runs, a prompt is sent or queued."""
        message.stop()
        self.chat.scroll_end(animate=False)
        text = message.text
        if not text.strip():
            return
        parsed = parse(text)
        if parsed is not None:
            await self._run_command(parsed)
        elif self.state.phase is not Phase.QUITTING:
            self.queue.submit(text, message.typed, message.pastes)

    @on(PromptInput.ScrollChat)
    def _on_scroll_chat(self, event: PromptInput.ScrollChat) -> None:
        """PageUp/PageDown, Ctrl+Home/Ctrl+End in the prompt scroll the chat a page, to its top or
        its bottom (following it again there); at once, so a key held down is a page per key."""
        event.stop()
        chat = self.chat
        if event.where == "page_up":
            chat.scroll_page_up(animate=False)
        elif event.where == "page_down":
            chat.scroll_page_down(animate=False)
        elif event.where == "top":
            chat.scroll_home(animate=False)
        else:
            chat.scroll_end(animate=False)

    @on(PromptBack)
    def _on_prompt_back(self, message: PromptBack) -> None:
        """Text for the prompt (a rewound turn's), before what was typed there meanwhile."""
        message.stop()
        typed = self.prompt.text
        self.prompt.text = message.text + (f"\n\n{typed}" if typed.strip() else "")
        self.prompt.move_cursor(self.prompt.document.end)

    @on(PromptClosed)
    def _on_prompt_closed(self, message: PromptClosed) -> None:
        message.stop()
        self.prompt.disabled_reason = message.reason

    def remember_prompt(self, text: str) -> None:
        """Into the prompt history (Up), once it is open."""
        if self.history is not None:
            self._remember_prompt(self.history, text)

    @work(group="history", exit_on_error=False)
    async def _remember_prompt(self, history: PromptHistory, text: str) -> None:
        await asyncio.to_thread(history.append, text)

    # -- the turn ------------------------------------------------------------------------------------

    def start_turn(self, text: str, block: UserBlock | None = None) -> None:
        """Send ``text`` (``block``: the chat's entry for it, which shows the images that go with
        it, or says why it was not sent)."""
        self.turn_view.start()
        self.prompt.disabled_reason = "a turn is running (Esc cancels)"
        self.turn = self._run_turn(text, block)

    def run_as_turn(self, work: Callable[[], Coroutine[Any, Any, None]], reason: str) -> None:
        """Run ``work`` as the turn (/compact): Esc cancels it like one, what is queued waits for
        it; the prompt says ``reason`` until its ``TurnDone``."""
        self.prompt.disabled_reason = reason
        self.turn = self.run_worker(work, group="turn", exclusive=True, exit_on_error=False)

    @work(exclusive=True, group="turn", exit_on_error=False)
    async def _run_turn(self, text: str, block: UserBlock | None) -> None:
        # Loaded by the first turn: the attachments are the agent's, not the first frame's.
        from app.agent.conversation.attachments import with_attachments
        from app.agent.conversation.images import ImageError

        status, bridge = "error", self.state.bridge
        bridge.pacer.busy(float("inf"))  # the memory worker's threads make room while it runs
        try:
            try:
                message, notes = await with_attachments(
                    text, self.workspace, self._files_set, pasted=self.images.pictures
                )
            except ImageError as e:  # an image that cannot go: nothing is sent, nothing lost
                status = "not sent"
                self._not_sent(one_line(e, 300), block, text)
                return
            if block is not None:
                block.set_images(sent_labels(message, block.typed))
            for n in notes:  # a file cut or refused, an image scaled: one line each
                self.post_message(ChatNote(one_line(n, 300)))
            # Beside the Run, not before it: the cards cannot change until its job is applied.
            self.post_message(TurnStarted())
            stop = await bridge.run_turn(self.state.services.turn, message)
            status = stop.status
        except asyncio.CancelledError:
            status = "cancelled"
            raise
        except Exception as e:
            self.post_message(ChatNote(self._commands().ext.failed_line(e), error=True))
        finally:
            self.post_message(TurnDone(status))

    def _not_sent(self, line: str, block: UserBlock | None, text: str) -> None:
        """The prompt is not sent: why, in the chat, and its words back in the prompt."""
        self.post_message(ChatNote(f"{line}; nothing was sent", error=True))
        if block is not None:
            block.set_note("not sent (back in the prompt)")
        self.post_message(PromptBack(block.typed if block is not None else text))

    @on(MemoryUsage)
    def _on_memory_usage(self, message: MemoryUsage) -> None:
        """A memory-model request counts in the session's cost too."""
        message.stop()
        if self.cost is not None:
            self.cost.add(message.model, message.usage)
            self.status.update(cost=self.cost.describe())

    @on(TurnEvent)
    async def _on_turn_event(self, message: TurnEvent) -> None:
        message.stop()
        await self.turn_view.handle(message.event)

    @on(TurnDone)
    async def _on_turn_done(self, message: TurnDone) -> None:
        message.shown = True  # it bubbles on: the App's part of a turn's end
        await self.turn_view.end()
        self.todos.turn_ended()
        if self.state.phase.opened:
            self.prompt.disabled_reason = None
        pacer = self.state.bridge.pacer
        pacer.idle()
        pacer.busy(PACE_AFTER_S)  # the turn's last frames
        # After the turn's last frame, once nobody types: a full collection that is due runs then.
        self.call_after_refresh(self._release_gc_when_idle)

    def _typing(self) -> None:
        self._gc.last_key = time.monotonic()
        self.state.bridge.pacer.busy(PACE_AFTER_S)
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

    def release_gc(self) -> None:
        """The app ends: the collector's own schedule is back."""
        self._gc.release()

    # -- notes and sessions ---------------------------------------------------------------------------

    @on(ChatNote)
    def _on_chat_note(self, message: ChatNote) -> None:
        message.stop()
        self.note(message.text, error=message.error)

    def show_history(self, messages: Sequence[ConversationMessage]) -> None:
        """A resumed session's conversation, after what its log holds before its compactions."""
        self.history_view.show(messages, self.state.services.session if self.state.built else None)

    @on(SessionSwitched)
    def _on_session_switched(self, message: SessionSwitched) -> None:
        message.shown = True  # it bubbles on: the panel reads again
        self.chat.clear_blocks()
        self.turn_view.reset()
        self._gc.release()
        self.status.update(last_turn="", context_pct=None)
        self.todos.session(self.state.services.session.todos if self.state.built else None)
        if message.note:
            self.chat.add_note(one_line(message.note, 300))
        if message.messages:
            self.show_history(message.messages)
