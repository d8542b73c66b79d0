"""The full-screen app: chat pane, prompt, memory side panel, status line (DESIGN.md §12).

The App owns all UI state. Workers do the slow parts and tell the App by messages
(app/tui/messages.py); the App talks to the runtime only through ``app.bridge.Bridge``.

Start-up keeps the first frame fast: this module imports Textual and the widgets only. The runtime
(pydantic, the stores) and the ``anthropic`` SDK (about 3 s) are imported by a worker after the
first frame. The prompt works from the first frame: a prompt sent while the runtime connects is
queued (shown as such in the chat) and sent once it is open, and the commands that need no model
run as soon as the memory stores can be reached (see ``commands.NEEDS_STORES``).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import importlib
import json
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Input, TextArea
from textual.worker import Worker, WorkerState

from app.tui import commands
from app.tui.bridge import CONFIGURE_HELP, Bridge
from app.tui.commands import Parsed, SlashCommands, one_line
from app.tui.memory_screens import MemoryScreens
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
    StoresChangedMessage,
    TrustCardsRead,
    TrustChecked,
    TurnDone,
    TurnEvent,
)
from memory.text.sanitize import strip_terminal, strip_terminal_deep
from widgets.chat.log import ChatPane
from widgets.chat.prompt import PromptInput, Suggestion
from widgets.chat.status import StatusInfo, StatusLine
from widgets.dialogs.modals import PermissionAnswer, PermissionModal, TrustCard, TrustModal
from widgets.panel.memory_panel import MemoryPanel

if TYPE_CHECKING:
    from app.agent.settings import Settings

CSS_FILE = Path(__file__).resolve().parent / "app.tcss"
NARROW = 100  # columns: below this the memory panel starts hidden
QUIT_DRAIN_S = 3.0
# After the drain, closing the session file and the clients gets this long; then the app exits
# whatever is still running (a job cut off stays spooled, a transaction recovers at next start).
QUIT_CLOSE_S = 2.0
HISTORY_SHOWN = 200  # messages of a resumed session drawn (the pane prunes beyond its bound anyway)
# While an answer streams, a full garbage collection runs at most this often (see _hold_gc).
GC_FULL_EVERY_S = 60.0
# How long after a key (or a turn's end) the memory worker's threads still make room for the screen.
PACE_AFTER_S = 1.0
TYPEAHEAD_GRACE_S = 0.3  # after the first frame, a Ctrl+J may still be an Enter typed ahead
GC_IDLE_S = 2.0  # after a turn, the collector's schedule is back once no key was pressed for this long
_gc_frozen = False  # gc.freeze() is done once per process (see PseudoClaudeApp._hold_gc)
_ATTACH_RE = re.compile(r"(?<!\S)@(\S+)")
QUIT_HINT = "Ctrl+Q quits (Ctrl+C cancels a running turn)"
QUIT_HINT_S = 4.0  # how long the hint shows; Ctrl+C again meanwhile does not stack another
CONNECTING = "connecting… (Enter queues the prompt)"
QUEUED_NOTE = "queued: sent once the model is connected (Esc cancels)"
# Workers that the next queued prompt or command waits for: a turn (or /compact), a session
# switch (/clear, /resume), the trust question's outcome.
_WAIT_GROUPS = frozenset({"turn", "session", "trust"})


@dataclass
class _Queued:
    """A prompt sent before it could go: shown in the chat (``block``), sent in its turn."""

    text: str  # as sent to the model (pastes expanded)
    typed: str  # as the prompt showed it
    pastes: dict[str, str] = field(default_factory=dict)
    block: Any | None = None


class MainScreen(Screen[None]):
    """The chat's screen. Whenever it is on top again — a modal answered, a screen closed,
    however it was opened — the focus goes back to the prompt."""

    AUTO_FOCUS = "#prompt"  # from its first compose: keys typed before the first frame go there

    def on_screen_resume(self) -> None:
        prompt = getattr(self.app, "_prompt", None)
        if isinstance(prompt, PromptInput) and prompt.is_attached:
            self.set_focus(prompt)




def _trust_cards(preview: Any) -> list[TrustCard]:
    """The trust window's cards from a memory.index.TrustPreview: one per index line the model
    would get, then one per card it would leave out (with why). Blocking: call in a thread."""
    from memory.store.index import INDEX_LINE_RE

    cards = []
    for line in preview.lines:
        m = INDEX_LINE_RE.match(line)
        if m is None:
            continue
        text = m.group("text")
        # " — " inside a title or a summary: the line's text is shown whole, as the model reads it.
        title, summary = text.split(" — ") if text.count(" — ") == 1 else (text, "")
        cards.append(TrustCard(type=m.group("type"), title=one_line(title), summary=one_line(summary),
                               filename=one_line(m.group("filename"))))
    for filename, reason in preview.left_out:
        name = one_line(filename)
        cards.append(TrustCard(type="", title=name, summary="", filename=name,
                               problem=one_line(reason, 300) or "left out"))
    return cards


class PseudoClaudeApp(SlashCommands, MemoryScreens, App[int]):
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
    # The setup help must stand out from the dim notes around it (it is why nothing else works).
    CSS = """
    NoteBlock.-setup {
        color: $text;
        border-left: outer $warning;
        background: $warning 10%;
    }
    """

    def __init__(
        self,
        settings: Settings | Mapping[str, object],
        workspace: Path,
        *,
        resume: str | None = None,
        continue_latest: bool = False,
        home: Path | None = None,
        provider: Any | None = None,
        completion: Any | None = None,
        fs: Any | None = None,
        watch_debounce_ms: int = 300,
    ) -> None:
        super().__init__()
        # The command line passes its flags (a mapping): the settings are loaded in _connect,
        # after the first frame (see app.cli). Until then ``settings`` is None.
        self._settings_flags: dict[str, object] | None = None
        if isinstance(settings, Mapping):
            self._settings_flags = dict(settings)
        self.settings: Settings | None = None if isinstance(settings, Mapping) else settings
        self.startup_error: str | None = None  # a bad setting: printed by run_app after the app ends
        self.workspace = workspace
        self.resume_id = resume
        self.continue_latest = continue_latest
        self.home = home
        self.bridge = Bridge(
            self.settings,  # type: ignore[arg-type]  # set before the runtime is built (_connect)
            workspace,
            self.post_message,
            self.ask_permission,
            home=home,
            provider=provider,
            completion=completion,
            fs=fs,
            watch_debounce_ms=watch_debounce_ms,
        )
        self.ready = False  # the runtime is open: prompts can be sent (with credentials)
        self.built = False  # the runtime object exists: memory features work
        self.connecting = True  # start-up is not over (neither RuntimeReady nor RuntimeFailed yet)
        # Sent before they could run, oldest first: prompts (and /clear, /resume, /compact) wait
        # for the session; commands that need only the stores wait for the runtime object.
        self._waiting: list[_Queued | Parsed] = []
        self._after_built: list[Parsed] = []
        self._awaiting_trust = False  # the trust question is open: nothing is sent before its answer
        self._trust_modal: TrustModal | None = None  # the trust question, until answered
        self._draining = False
        self._quit_hint_at = float("-inf")
        self.exit_code = 0
        self._turn: Worker[Any] | None = None
        self._answer: Any | None = None
        self._tools: dict[str, Any] = {}
        self._tool_bytes: dict[str, int] = {}
        self._unsettled: set[str] = set()  # tool blocks still streaming their arguments
        self._running_calls: set[str] = set()  # tool calls started and not finished
        self._task_blocks: dict[int, Any] = {}  # depth -> the running task block
        self._run_start_files: frozenset[tuple[str, str]] | None = None
        self._turn_usage: Any | None = None
        self._last_turn = ""
        self._cost: Any | None = None
        self._pending = 0
        self._new_cards = 0  # cards in the index that were not there when the current Run started
        self._status_note = "connecting…"
        self._files: list[str] = []
        self._files_set: frozenset[str] = frozenset()
        self._history: Any | None = None
        self._quitting = False
        self._drain: Worker[Any] | None = None
        self._last_worker_error = ""
        self.panel_shows = 0  # how many panel states were shown (tests wait on it)
        self._context_pct: int | None = None  # how full the model's window is
        self._gc_saved: tuple[int, int, int] | None = None  # the collector's thresholds, while held
        self._gc_full_at = 0.0
        self._last_key = 0.0
        self._init_memory_screens()

    # -- layout --------------------------------------------------------------------------------

    def get_default_screen(self) -> Screen[Any]:
        return MainScreen(id="_default")

    def compose(self) -> ComposeResult:
        # Kept as attributes: while a modal is up, queries go to the modal's screen.
        self._chat = ChatPane(id="chat")
        self._prompt = PromptInput(id="prompt")
        # Keys typed before the first frame were typed blind: their Enter is an Enter.
        self._prompt.typeahead_enter_until = float("inf")
        self._panel = MemoryPanel(id="panel")
        self._status = StatusLine(id="status")
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
        self._show_prompt_notice()
        self.prompt.set_completer(self.complete)
        self.prompt.set_on_key(self._typing)
        self._narrow = self.size.width < NARROW
        self.set_class(self._narrow, "-narrow")
        self.panel.display = not self._narrow
        self.prompt.focus()
        self._show_status()
        self.call_after_refresh(self._after_first_frame)

    def _after_first_frame(self) -> None:
        """Everything slow starts here, after the first frame is on the screen."""
        # What the terminal buffered before raw mode is read at once: a moment's grace for it.
        self.prompt.typeahead_enter_until = time.monotonic() + TYPEAHEAD_GRACE_S
        # The trust question first (the stores need no settings, no SDK, no session): the window
        # is up within moments of the first frame, and the connection starts as soon as it is
        # known whether to ask. Nothing queued is sent until the question is answered.
        self._awaiting_trust = True
        self._ask_trust()

    # -- start-up ------------------------------------------------------------------------------

    @work(exclusive=True, group="connect", exit_on_error=False)
    async def _connect(self) -> None:
        if self.settings is None:
            # Imported in a thread: a first import on the loop held the screen and the keys.
            await asyncio.to_thread(importlib.import_module, "app.agent.settings")
            from app.agent.settings import SettingsError, load_settings

            try:
                settings = await asyncio.to_thread(load_settings, self._settings_flags, home=self.home)
            except SettingsError as e:
                self.startup_error = str(e)
                self.exit(return_code=2)
                return
            self.settings = self.bridge.settings = settings
            for warning in settings.warnings:
                self.chat.add_note(one_line(warning, 300))
            self._show_status()
        try:
            await asyncio.to_thread(self.bridge.build)
        except Exception as e:
            self.post_message(RuntimeFailed(one_line(f"could not start: {type(e).__name__}: {e}", 300)))
            return
        self.post_message(RuntimeBuilt())
        try:
            # What the first frame did without: the chat's Markdown, then the SDK (seconds).
            await asyncio.to_thread(importlib.import_module, "widgets.chat.blocks")
            await asyncio.to_thread(self.bridge.warm_sdk)
            note = await self.bridge.open(resume=self.resume_id, continue_latest=self.continue_latest)
        except ValueError as e:  # a bad --resume: said once, the app goes on with a new session
            self.post_message(ChatNote(one_line(e, 400), error=True))
            try:
                note = await self.bridge.open()
            except Exception as e2:
                self.post_message(RuntimeFailed(one_line(e2, 300)))
                return
        except Exception as e:
            self.post_message(RuntimeFailed(one_line(f"could not start: {type(e).__name__}: {e}", 300)))
            return
        self.post_message(RuntimeReady(self.bridge.credentials, note))

    @on(RuntimeBuilt)
    def _on_built(self, message: RuntimeBuilt) -> None:
        from app.tui.prompt_history import PromptHistory
        from memory.store.paths import pseudoclaude_home

        self.built = True
        self._history = PromptHistory(self.home if self.home is not None else pseudoclaude_home(), self.workspace)
        self._load_side_data(self._history)
        self._refresh_panel()
        self._watch_stores()
        waiting, self._after_built = self._after_built, []
        for parsed in waiting:  # the commands typed meanwhile, in order
            self.call_later(self.run_command, parsed)

    @on(RuntimeReady)
    def _on_ready(self, message: RuntimeReady) -> None:
        from app.agent.pricing import CostMeter

        self._cost = CostMeter(getattr(self.settings, "prices", None))
        self.ready = message.credentials
        self.connecting = False
        # Without credentials commands still work offline (/remember, /memory, /undo): the prompt
        # is enabled and a message gets the configuration help again.
        self._status_note = "" if message.credentials else "no model configured"
        if not self._quitting:
            self.prompt.disabled_reason = None
        if not message.credentials:
            self._show_configure_help()
        if message.note:
            self.chat.add_note(one_line(message.note, 300))
        messages = self.bridge.messages
        if messages:
            self._show_history(messages)
        self._show_status()
        self._refresh_panel()
        self._show_prompt_notice()
        self.call_later(self._drain_waiting)

    def _show_configure_help(self) -> None:
        block = self.chat.add_note(CONFIGURE_HELP)
        block.add_class("-setup")
        heading, _, body = CONFIGURE_HELP.partition("\n")
        block.update(Content.assemble((heading, "bold"), "\n", body))

    @on(RuntimeFailed)
    def _on_failed(self, message: RuntimeFailed) -> None:
        self.connecting = False
        self._status_note = "not connected"
        self.prompt.disabled_reason = "not connected"
        self.chat.add_error(message.message)
        # What was waiting cannot run: said on each, and the prompts stay in the history (Up).
        for item in [*self._waiting, *([] if self.built else self._after_built)]:
            if isinstance(item, Parsed):
                self.chat.add_note(f"/{item.name} not run: the app could not start (see the error above)")
            else:
                self._not_sent(item, "not sent: the app could not connect (see the error below)")
        self._waiting.clear()
        self._after_built.clear()
        self._show_prompt_notice()
        self._show_status()

    @work(group="side", exit_on_error=False)
    async def _load_side_data(self, history: Any) -> None:
        from app.tui.filecomplete import workspace_files

        with contextlib.suppress(Exception):
            self.post_message(HistoryLoaded(await asyncio.to_thread(history.load)))
        with contextlib.suppress(Exception):
            self.post_message(FilesLoaded(await asyncio.to_thread(workspace_files, self.workspace)))

    @on(HistoryLoaded)
    def _on_history(self, message: HistoryLoaded) -> None:
        self.prompt.set_history(message.items)

    @on(FilesLoaded)
    def _on_files(self, message: FilesLoaded) -> None:
        self._files = message.paths
        self._files_set = frozenset(message.paths)

    # -- trust (DESIGN.md §11) -------------------------------------------------------------------

    @work(exclusive=True, group="trust-ask", exit_on_error=False)
    async def _ask_trust(self) -> None:
        """Whether to ask (a listing, milliseconds), then the cards to list (every card read:
        seconds on a cold 10,000-card store), each told to the App as soon as it is known; the
        connection (``_connect``) is started in between."""
        try:
            needed, where = await self.bridge.trust_needed()
        except Exception:
            # Nothing to ask on; the stores still leave an untrusted store out of every prompt.
            self.post_message(TrustChecked(False))
            raise
        finally:
            # After the check, not beside it: its imports (the stores) are the runtime's too, and
            # two threads importing at once under one interpreter lock each take twice as long.
            self._connect()
        self.post_message(TrustChecked(needed, where=where))
        if not needed:
            return
        try:
            preview = await self.bridge.trust_preview()
            cards = await asyncio.to_thread(_trust_cards, preview)
        except Exception as e:
            self.post_message(TrustCardsRead([], error=one_line(f"{type(e).__name__}: {e}", 300)))
            raise
        self.post_message(TrustCardsRead(cards))

    @on(TrustChecked)
    def _on_trust_checked(self, message: TrustChecked) -> None:
        if not message.needed or self._quitting:
            self._awaiting_trust = False
            if self._waiting:
                self.call_later(self._drain_waiting)
            return
        # Up at once, "reading the cards…"; ``y`` waits for the list (TrustCardsRead).
        self._trust_modal = TrustModal(None, where=message.where)
        self.push_screen(self._trust_modal, callback=self._trust_answered)

    @on(TrustCardsRead)
    def _on_trust_cards(self, message: TrustCardsRead) -> None:
        modal = self._trust_modal
        if modal is None:
            return  # answered ("not now") before the cards were read
        if message.error is not None:
            modal.show_error(f"the cards could not be read: {message.error}")
        else:
            modal.show_cards(message.cards)

    def _trust_answered(self, trusted: bool | None) -> None:
        self._trust_modal = None
        self._settle_trust(bool(trusted))

    @work(exclusive=True, group="trust", exit_on_error=False)
    async def _settle_trust(self, trusted: bool) -> None:
        if trusted:
            # Start-up builds the session's first system prompt from the stores: the trust goes
            # in once that is done (the runtime then rebuilds the prompt), never halfway through.
            starting = {t for w in self.workers if w.group == "connect" and (t := getattr(w, "_task", None))}
            if starting:
                await asyncio.wait(starting)
            await self.bridge.trust_project()
            self.post_message(ChatNote("project memory trusted: its cards are used from now on"))
        else:
            self.post_message(ChatNote("project memory not trusted for now: it is left out (asked again next start)"))
        self._refresh_panel()

    # -- the memory side panel -------------------------------------------------------------------

    @work(exclusive=True, group="panel", exit_on_error=False)
    async def _refresh_panel(self) -> None:
        if not self.built:
            return
        state, pending = await self.bridge.panel_state(self._run_start_files)
        self.post_message(PanelStateReady(state, pending))

    @on(PanelStateReady)
    def _on_panel_state(self, message: PanelStateReady) -> None:
        self.panel.show(message.state)
        self.panel_shows += 1
        self._pending = message.pending
        state = message.state
        self._new_cards = sum(1 for c in (*state.project, *state.user) if c.new)
        self._show_status()

    @work(exclusive=True, group="watch", exit_on_error=False)
    async def _watch_stores(self) -> None:
        await self.bridge.watch_stores()

    @on(MemoryEventMessage)
    def _on_memory_event(self, message: MemoryEventMessage) -> None:
        self._record_memory_event(message.event)
        self._refresh_panel()
        self._refresh_memory_screens()

    @on(MemoryPanel.OpenPending)
    def _on_open_pending(self, message: MemoryPanel.OpenPending) -> None:
        if self.built:
            self.open_pending()

    @on(MemoryPanel.OpenBrowser)
    def _on_open_browser(self, message: MemoryPanel.OpenBrowser) -> None:
        if self.built:
            self.open_browser(message.card)

    @on(StoresChangedMessage)
    def _on_stores_changed(self, message: StoresChangedMessage) -> None:
        self._refresh_panel()
        self._refresh_memory_screens()

    @on(MemoryUsage)
    def _on_memory_usage(self, message: MemoryUsage) -> None:
        if self._cost is not None:
            self._cost.add(message.model, message.usage)
            self._show_status()

    def on_resize(self, event: events.Resize) -> None:
        # Crossing the threshold resets the panel to that size's default; F2 still toggles it.
        narrow = event.size.width < NARROW
        if narrow != getattr(self, "_narrow", narrow):
            self.panel.display = not narrow
            self._show_status()
        self._narrow = narrow
        self.set_class(narrow, "-narrow")

    def action_toggle_panel(self) -> None:
        self.panel.display = not self.panel.display
        self._show_status()  # the "F2 memory" hint shows only while the panel is hidden

    # -- status line -----------------------------------------------------------------------------

    def _show_status(self) -> None:
        settings = self.settings
        info = StatusInfo(
            workspace=str(self.workspace),
            model=settings.model if settings is not None else "",
            memory_mode=(
                self.bridge.runtime.memory_mode if self.bridge.runtime is not None
                else settings.memory_mode if settings is not None else ""
            ),
            last_turn=self._last_turn,
            cost=self._cost.describe() if self._cost is not None else "",
            pending=self._pending,
            note=self._status_note,
            panel_hidden=not self.panel.display,
            new_cards=self._new_cards,
            context_pct=self._context_pct,
            compact_pct=round(settings.compact_at * 100) if settings is not None else 80,
        )
        self._status.show(info)

    # -- completion ------------------------------------------------------------------------------

    def complete(self, text: str, cursor: int) -> list[Suggestion]:
        """The prompt's completer: slash commands at the start, ``@path`` anywhere."""
        before = text[:cursor]
        word = before.split()[-1] if before and not before[-1].isspace() else ""
        if word.startswith("/") and before.lstrip() == word:
            return [
                Suggestion(label=c.usage, insert=f"/{c.name} ", kind="command", detail=c.help)
                for c in commands.completions(word)
            ]
        if word.startswith("@"):
            from app.tui.filecomplete import fuzzy

            return [Suggestion(label=p, insert=f"@{p} ", kind="file") for p in fuzzy(word[1:], self._files)]
        return []

    # -- sending ---------------------------------------------------------------------------------

    @on(PromptInput.Submitted)
    async def _on_submit(self, message: PromptInput.Submitted) -> None:
        text = message.text
        if not text.strip():
            return
        parsed = commands.parse(text)
        if parsed is not None:
            await self.run_command(parsed)
            return
        if self._quitting:
            return
        item = _Queued(text, message.typed or text, dict(message.pastes))
        if self.connecting or self._waiting or not self._can_send():
            # Never dropped: shown as queued, sent in order once the runtime is open.
            item.block = self.chat.add_user(item.typed, item.pastes)
            item.block.set_note(QUEUED_NOTE if self.connecting else "queued: sent after what runs now (Esc cancels)")
            self._waiting.append(item)
            self._show_prompt_notice()
            if self._can_send():
                self.call_later(self._drain_waiting)
            return
        self._send(item)

    def _can_send(self) -> bool:
        """Nothing that a queued prompt or command waits for: start-up, the trust question, a
        turn, a session switch."""
        if self.connecting or self._awaiting_trust or self._quitting:
            return False
        return not any(w.group in _WAIT_GROUPS and not w.is_finished for w in self.workers)

    def _send(self, item: _Queued) -> None:
        if item.block is not None:
            item.block.remove()  # drawn again below what came meanwhile (notes, a resumed history)
            item.block = None
        if not self.ready:
            # No model (or no connection): the prompt is kept — in the chat, and in the history.
            self._not_sent(item, "not sent: no model is configured (see the setup note below)")
            self._show_configure_help()
            return
        if self._history is not None:
            self._remember_prompt(item.text)
        self.chat.add_user(item.typed, item.pastes)
        self._answer = None
        self._turn_usage = None
        self.prompt.disabled_reason = "a turn is running (Esc cancels)"
        self._turn = self._run_turn(item.text)

    def _not_sent(self, item: _Queued, why: str) -> None:
        block = item.block if item.block is not None else self.chat.add_user(item.typed, item.pastes)
        item.block = block
        block.set_note(why)
        if self._history is not None:
            self._remember_prompt(item.text)

    def defer_command(self, parsed: Parsed, needs: str) -> None:
        """Run ``parsed`` once what it needs is there: "stores" (the runtime object) or
        "session" (in order with the queued prompts, once the runtime is open)."""
        if needs == "stores":
            self._after_built.append(parsed)
            self.chat.add_note(f"/{parsed.name} runs in a moment (the memory stores are being opened)")
        else:
            self._waiting.append(parsed)
            when = "once the model is connected" if self.connecting else "after what runs or waits before it"
            self.chat.add_note(f"/{parsed.name} runs {when} (Esc cancels)")
            if self._can_send():
                self.call_later(self._drain_waiting)
        self._show_prompt_notice()

    async def _drain_waiting(self) -> None:
        """Send the queued prompts and run the queued commands, oldest first, each when nothing
        it waits for runs (a prompt starts a turn: the next waits for its end)."""
        if self._draining:
            return
        self._draining = True
        try:
            while self._waiting and self._can_send():
                item = self._waiting.pop(0)
                if isinstance(item, Parsed):
                    await self.run_command(item, queued=True)
                else:
                    self._send(item)
        finally:
            self._draining = False
            self._show_prompt_notice()

    def _cancel_waiting(self) -> None:
        """Esc / Ctrl+C: nothing queued is sent; the queued prompts' text goes back to an
        empty prompt (and stays in the history)."""
        items, self._waiting = self._waiting, []
        prompts = [item for item in items if isinstance(item, _Queued)]
        back = bool(prompts) and not self.prompt.text.strip()
        for item in items:
            if isinstance(item, Parsed):
                self.chat.add_note(f"/{item.name} not run: cancelled")
            elif item.block is not None:
                item.block.set_note("not sent: cancelled" + (" (back in the prompt)" if back else ""))
        if back:
            self.prompt.text = "\n\n".join(item.typed for item in prompts)
            self.prompt.move_cursor(self.prompt.document.end)
        self._show_prompt_notice()

    def _show_prompt_notice(self) -> None:
        prompts = sum(1 for item in self._waiting if isinstance(item, _Queued))
        if prompts:
            when = "once connected" if self.connecting else "in turn"
            self.prompt.notice = f"{prompts} queued: sent {when} (Esc cancels)"
        else:
            self.prompt.notice = CONNECTING if self.connecting else None

    @work(group="history", exit_on_error=False)
    async def _remember_prompt(self, text: str) -> None:
        if self._history is not None:
            await asyncio.to_thread(self._history.append, text)

    async def _attachments(self, text: str) -> tuple[str, list[str]]:
        """The message with each ``@path`` file appended (bounded), and notes for the user."""
        from app.tui.filecomplete import attach

        wanted: list[str] = []
        for raw in _ATTACH_RE.findall(text):
            rel = raw.rstrip(".,;:!?)")
            if rel and rel not in wanted and (rel in self._files_set or not self._files_set):
                wanted.append(rel)
        blocks, notes = [], []
        for rel in wanted:
            try:
                block, note = await asyncio.to_thread(attach, self.workspace, rel)
            except Exception as e:
                notes.append(f"@{rel}: not attached ({one_line(e, 200)})")
                continue
            if block:
                blocks.append(block)
            if note:
                notes.append(note)
        return (text + "".join(f"\n\n{b}" for b in blocks)) if blocks else text, notes

    @work(exclusive=True, group="turn", exit_on_error=False)
    async def _run_turn(self, text: str) -> None:
        status = "error"
        # While the turn runs, the memory worker's threads make room for the screen (memory.pace).
        self.bridge.pacer.busy(float("inf"))
        try:
            message, notes = await self._attachments(text)
            for n in notes:
                self.post_message(ChatNote(one_line(n, 300)))
            self._run_start_files = await asyncio.to_thread(self.bridge.note_files)
            stop = await self.bridge.run_turn(message)
            status = stop.status
        except asyncio.CancelledError:
            status = "cancelled"
            raise
        except Exception as e:
            self.post_message(ChatNote(one_line(f"the turn failed: {type(e).__name__}: {e}", 400), error=True))
        finally:
            self.post_message(TurnDone(status))

    def action_cancel_turn(self) -> None:
        """Esc and Ctrl+C: cancel the running turn (or /compact), and take back what is queued."""
        if self._turn is not None and self._turn.is_running:
            self._turn.cancel()
        if self._waiting:
            self._cancel_waiting()

    def action_interrupt(self) -> None:
        """Ctrl+C: as Esc while a turn runs or something is queued; else a hint how to quit."""
        if (self._turn is not None and self._turn.is_running) or self._waiting:
            self.action_cancel_turn()
            return
        now = time.monotonic()
        if now - self._quit_hint_at > QUIT_HINT_S:
            self._quit_hint_at = now
            self.notify(QUIT_HINT, timeout=QUIT_HINT_S)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # With text selected (in the prompt, an input, or on the screen with the mouse), Ctrl+C
        # is not ours: the binding falls through to the widget's or the screen's copy.
        if action == "interrupt" and self._selection_to_copy():
            return False
        return True

    def _selection_to_copy(self) -> bool:
        focused = self.focused
        if focused is not None and getattr(focused, "selected_text", ""):
            return True
        try:
            return bool(self.screen.get_selected_text())
        except Exception:  # no screen yet, a widget removed mid-selection: nothing to copy
            return False

    # -- typing reaches the prompt ---------------------------------------------------------------

    def _stray_input(self) -> bool:
        """On the chat's screen with the focus somewhere that takes no text (the panel, a tool
        block, the chat): typed and pasted text belong to the prompt."""
        if not isinstance(self.screen, MainScreen) or not self._prompt.is_attached:
            return False
        focused = self.focused
        return focused is not self._prompt and not isinstance(focused, (Input, TextArea))

    def on_key(self, event: events.Key) -> None:
        # A key no widget took. Printable ones go to the prompt (focused from now on), so text
        # typed after a Tab or a closed screen is never lost and Enter then sends it.
        if event.is_printable and event.character and self._stray_input():
            event.stop()
            event.prevent_default()  # not the App's bindings as well
            self.screen.set_focus(self._prompt)
            # Forwarded (not posted): were it to bubble back up, the App would not take it for a
            # new key and deliver it a second time.
            self._prompt._forward_event(events.Key(event.key, event.character))

    def on_paste(self, event: events.Paste) -> None:
        if self._stray_input():
            event.stop()
            self.screen.set_focus(self._prompt)
            self._prompt._forward_event(events.Paste(event.text))  # once: see on_key

    @on(TurnDone)
    async def _on_turn_done(self, message: TurnDone) -> None:
        await self._finish_answer()
        for call_id in list(self._unsettled):
            block = self._tools.get(call_id)
            if block is not None:
                block.set_result("not run: the turn ended first", is_error=True, denied=False)
        self._unsettled.clear()
        for call_id in list(self._running_calls):
            block = self._tools.get(call_id)
            if block is not None:
                block.set_result("[interrupted]", is_error=True, denied=False)
        self._running_calls.clear()
        self._task_blocks.clear()
        self._tool_bytes.clear()
        if self.bridge.opened and not self._quitting:
            self.prompt.disabled_reason = None
        self._refresh_panel()
        self.bridge.pacer.idle()
        self.bridge.pacer.busy(PACE_AFTER_S)  # the turn's last frames
        # After the turn's last frame, once nobody types: a full collection that is due runs then.
        self.call_after_refresh(self._release_gc_when_idle)

    # -- the Runner's events -> the chat pane ----------------------------------------------------

    async def _finish_answer(self) -> None:
        answer, self._answer = self._answer, None
        if answer is not None:
            await answer.finish()

    def _typing(self) -> None:
        self._last_key = time.monotonic()
        self.bridge.pacer.busy(PACE_AFTER_S)
        if self._answer is not None:
            self._answer.typing()
        self._gc_tick()

    def _hold_gc(self) -> None:
        """No full garbage collection while a turn streams, but one every GC_FULL_EVERY_S;
        the collector's own schedule is back when the turn is over and the keyboard has been
        still for GC_IDLE_S (``_release_gc_when_idle``).

        A full collection walks every object of the process: with the SDK, the runtime, the
        stores' notes and a chat of Markdown widgets that is a pause of a few hundred
        milliseconds or more, and the allocations of a fast stream set one off about every
        second — the screen and the keyboard stall each time. The young generations are
        still collected; what reaches the old one waits for a moment nobody is typing.
        """
        if self._gc_saved is not None:
            return
        global _gc_frozen
        if not _gc_frozen:
            # What exists before the process's first answer (modules, the runtime, the SDK)
            # lives as long as the app: a full collection need not walk it again.
            _gc_frozen = True
            gc.freeze()
        self._gc_saved = gc.get_threshold()
        self._gc_full_at = time.monotonic()
        gc.set_threshold(self._gc_saved[0], self._gc_saved[1], 1_000_000)

    def _gc_tick(self) -> None:
        # A long stream does not keep its old garbage for longer than this.
        if self._gc_saved is not None and time.monotonic() - self._gc_full_at > GC_FULL_EVERY_S:
            gc.collect()
            self._gc_full_at = time.monotonic()

    def _release_gc_when_idle(self) -> None:
        if self._gc_saved is None or self._answer is not None:
            return  # released already, or an answer streams again (its turn's end calls this)
        wait = self._last_key + GC_IDLE_S - time.monotonic()
        if wait > 0:
            self.set_timer(wait, self._release_gc_when_idle)
        else:
            self._release_gc()

    def _release_gc(self) -> None:
        if self._gc_saved is not None:
            gc.set_threshold(*self._gc_saved)
            self._gc_saved = None

    def _new_tool_block(self, call_id: str, name: str, depth: int) -> Any:
        parent = self._task_blocks.get(depth - 1) if depth else None
        parent_id = getattr(parent, "call_id", None)
        block = self.chat.add_tool(call_id, name, depth=depth, parent_id=parent_id)
        self._tools[call_id] = block
        return block

    @on(TurnEvent)
    async def _on_turn_event(self, message: TurnEvent) -> None:
        from app.agent.provider import Retrying, TextDelta, ToolUseArgs, ToolUseStart, UsageEvent
        from app.agent.runner import (
            Compacted,
            Compacting,
            ContextUsage,
            RunStop,
            ToolCallApproved,
            ToolCallFinished,
            ToolCallStarted,
        )

        ev = message.event
        depth = getattr(ev, "depth", 0)
        if isinstance(ev, TextDelta):
            if depth:
                parent = self._task_blocks.get(depth - 1)
                append = getattr(parent, "append_text", None)
                if append is not None:  # a sub-agent's words go into its task block, not the answer
                    append(strip_terminal(ev.text))
                return
            if self._answer is None:
                self._answer = self.chat.start_answer()
                self._hold_gc()
            await self._answer.append(ev.text)  # stripped over the stream by the block
            self._gc_tick()
        elif isinstance(ev, ToolUseStart):
            if not depth:
                await self._finish_answer()
            self._new_tool_block(ev.id, one_line(ev.name, 60), depth)
            self._tool_bytes[ev.id] = 0
            self._unsettled.add(ev.id)
        elif isinstance(ev, ToolUseArgs):
            block = self._tools.get(ev.id)
            if block is not None:
                self._tool_bytes[ev.id] = self._tool_bytes.get(ev.id, 0) + len(ev.partial_json.encode("utf-8", "replace"))
                block.set_streaming(self._tool_bytes[ev.id])
        elif isinstance(ev, ToolCallStarted):
            block = self._tools.get(ev.id) or self._new_tool_block(ev.id, one_line(ev.name, 60), depth)
            self._unsettled.discard(ev.id)
            self._running_calls.add(ev.id)
            args = strip_terminal_deep(ev.input) if isinstance(ev.input, dict) else {}
            if ev.waiting:
                block.set_waiting(args)  # its permission window is about to open
            else:
                block.set_running(args)
            if ev.name == "task":
                self._task_blocks[depth] = block
        elif isinstance(ev, ToolCallApproved):
            block = self._tools.get(ev.id)
            if block is not None:
                block.set_running()
        elif isinstance(ev, ToolCallFinished):
            block = self._tools.get(ev.id) or self._new_tool_block(ev.id, one_line(ev.name, 60), depth)
            self._running_calls.discard(ev.id)
            block.set_result(strip_terminal(ev.result.content), is_error=ev.result.is_error, denied=ev.denied)
            if ev.name == "task":
                self._task_blocks.pop(depth, None)
        elif isinstance(ev, Retrying):
            if not depth:
                had_text = self._answer is not None
                await self._finish_answer()
                void = "; the partial answer above is void" if had_text else ""
                self.chat.add_note(f"retrying in {ev.delay:g}s: {one_line(ev.reason, 200)}{void}")
            # The retried response's half-streamed calls (of that agent only) will never run.
            for call_id in list(self._unsettled):
                block = self._tools.get(call_id)
                if block is not None and getattr(block, "depth", 0) == depth:
                    block.set_result("void: the response was retried", is_error=True, denied=False)
                    self._unsettled.discard(call_id)
        elif isinstance(ev, UsageEvent):
            if not depth and self._answer is not None:
                # The response is complete: its last words are written now, not when the turn's
                # bookkeeping (the session file, the memory job) is done — and not waited for
                # here, where keys queue behind this handler.
                self._answer.flush()
            if self._turn_usage is None:
                from app.agent.provider import Usage

                self._turn_usage = Usage()
            self._turn_usage.add(ev.usage)
            if self._cost is not None:
                self._cost.add(self.settings.model if self.settings is not None else "", ev.usage)
            self._show_status()
        elif isinstance(ev, ContextUsage):
            if not depth:
                self._context_pct = 100 * ev.tokens // max(ev.window, 1)
                self._show_status()
        elif isinstance(ev, Compacting):
            await self._finish_answer()
            self._status_note = "compacting the conversation…"
            self._show_status()
        elif isinstance(ev, Compacted):
            self._status_note = ""
            if ev.error:
                self.chat.add_error(one_line(ev.describe(), 400))
            else:
                self.chat.add_note(one_line(ev.describe(), 400))
            self._show_status()
        elif isinstance(ev, RunStop):
            await self._finish_answer()
            if self._turn_usage is not None:
                from app.agent.pricing import format_usage

                self._last_turn = format_usage(self._turn_usage)
            if ev.status == "cancelled":
                self.chat.add_note("cancelled")
            elif ev.status != "completed":
                self.chat.add_error(one_line(ev.message or ev.status, 500))
            self._show_status()

    @on(Worker.StateChanged)
    def _on_worker_state(self, event: Worker.StateChanged) -> None:
        done = event.state in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED)
        if done and event.worker.group in _WAIT_GROUPS:
            if event.worker.group == "trust":
                self._awaiting_trust = False
            if self._waiting:
                self.call_later(self._drain_waiting)  # the next queued prompt or command
        # A failed background worker is one line in the chat, never a crashed app.
        if event.state is WorkerState.ERROR and not self._quitting:
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

    def _show_user_text(self, text: str) -> None:
        """An earlier user message; a large one collapsed as a paste would be (its typed form
        is not in the log, so the whole message is the paste)."""
        from widgets.chat.prompt import is_large_paste, paste_label

        if is_large_paste(text):
            label = paste_label(text)
            self.chat.add_user(label, {label: text})
        else:
            self.chat.add_user(text)

    def _show_history(self, messages: list[dict[str, Any]]) -> None:
        """Draw the current session's conversation ``messages``, preceded by what its log holds
        before its compaction boundaries (one line marks each boundary): a compacted session reads
        as it was lived, though the model is sent only the compacted part."""
        from app.agent.session import COMPACTION_MARK, is_app_note

        rt = self.bridge.runtime
        session = rt.session if rt is not None else None
        earlier: list[dict[str, Any]] = list(getattr(session, "earlier", None) or [])
        items = [*earlier, *messages]
        results: dict[str, dict[str, Any]] = {}
        for m in items:
            if m.get("role") == "user" and isinstance(m.get("content"), list):
                for b in m["content"]:
                    if isinstance(b, dict) and b.get("type") == "tool_result":
                        results[str(b.get("tool_use_id", ""))] = b
        shown = items[-HISTORY_SHOWN:]
        hidden = int(getattr(session, "earlier_left_out", 0) or 0) if earlier else 0
        hidden += sum(1 for m in items[: len(items) - len(shown)] if m.get("type") != COMPACTION_MARK)
        if hidden:
            self.chat.add_note(f"{hidden} earlier message(s) not shown")
        for m in shown:
            if m.get("type") == COMPACTION_MARK:
                when = one_line(str(m.get("time") or "")[:16].replace("T", " "), 16)
                self.chat.add_note(
                    f"── compacted{' ' + when if when else ''}: the model has a summary of the "
                    f"{one_line(m.get('summarised', 0), 12)} message(s) before this line, not the messages ──"
                )
                continue
            content = m.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else (content or [])
            for b in blocks:
                if not isinstance(b, dict) or is_app_note(b):
                    continue
                if b.get("type") == "text":
                    text = str(b.get("text", ""))
                    if not text.strip() or text.startswith("<memory-update>"):
                        continue
                    if m.get("role") == "user":
                        self._show_user_text(strip_terminal(text))
                    else:
                        answer = self.chat.start_answer()
                        # The block's own stream coalesces; a finished answer is written once.
                        self.call_later(self._write_answer, answer, strip_terminal(text))
                elif b.get("type") == "tool_use":
                    call_id = str(b.get("id", ""))
                    block = self.chat.add_tool(call_id, one_line(b.get("name", ""), 60))
                    block.set_running(strip_terminal_deep(b.get("input") or {}))
                    r = results.get(call_id)
                    if r is not None:
                        content_r = r.get("content")
                        text_r = content_r if isinstance(content_r, str) else json.dumps(content_r, ensure_ascii=False)
                        block.set_result(strip_terminal(text_r), is_error=bool(r.get("is_error")), denied=False)

    async def _write_answer(self, answer: Any, text: str) -> None:
        await answer.append(text)
        await answer.finish()

    @on(SessionSwitched)
    def _on_session_switched(self, message: SessionSwitched) -> None:
        self.chat.clear_blocks()
        self._tools.clear()
        self._answer = None
        self._release_gc()
        self._last_turn = ""
        self._context_pct = None
        self._run_start_files = None
        if message.note:
            self.chat.add_note(one_line(message.note, 300))
        if message.messages:
            self._show_history(message.messages)
        self._show_status()
        self._refresh_panel()

    # -- permission modal ------------------------------------------------------------------------

    async def ask_permission(self, request: Any) -> PermissionAnswer:
        """Show the PermissionModal for a tool call; its answer ("once", "session" or "deny",
        a denial maybe with the person's note)."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[PermissionAnswer] = loop.create_future()

        def done(result: PermissionAnswer | None) -> None:
            if not answer.done():
                answer.set_result(result or PermissionAnswer("deny"))

        modal = PermissionModal(request)
        await self.push_screen(modal, callback=done)
        try:
            return await answer
        except asyncio.CancelledError:
            # The turn was cancelled while asking: take the question away.
            if modal.is_attached and self.screen is modal:
                modal.dismiss(PermissionAnswer("deny"))
            raise

    # -- quit ------------------------------------------------------------------------------------

    async def action_quit(self) -> None:
        """Ctrl+Q: drain memory for at most QUIT_DRAIN_S, close for at most QUIT_CLOSE_S, exit.
        Nothing here waits on the store or a thread; a second Ctrl+Q leaves at once."""
        if self._quitting:
            # Second Ctrl+Q: leave now (on_unmount stops the worker without waiting for the
            # model); what is left stays spooled for the next start.
            if self._drain is not None and self._drain.is_running:
                self._drain.cancel()  # its `finally` exits
            else:
                self.exit(self.exit_code)
            return
        self._quitting = True
        self.prompt.disabled_reason = "quitting…"
        # The memory worker's threads no longer make room for the screen: the drain gets the CPU.
        self.bridge.pacer.idle()
        if self._turn is not None and self._turn.is_running:
            self._turn.cancel()
        self._drain = self._leave()

    def _say_saving(self, n: int) -> None:
        if self._quitting and self.is_running:
            self._status_note = f"saving {n} memory update{'s' if n != 1 else ''}… (Ctrl+Q again leaves at once)"
            self._show_status()
            self.notify(self._status_note, title="Quitting")

    @work(group="quit", exit_on_error=False)
    async def _leave(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + QUIT_DRAIN_S
        try:
            task = getattr(self._turn, "_task", None)
            if task is not None and not task.done():
                # The cancelled turn closes its session record first (the runner shields it).
                await asyncio.wait({task}, timeout=QUIT_DRAIN_S)
            n = 0
            if self.built:
                counted = asyncio.ensure_future(self.bridge.in_flight())  # never raises: 0 on errors
                await _wait_bounded(counted, max(deadline - loop.time(), 0.0))
                n = counted.result() if counted.done() else 0
            if n:
                self.call_later(self._say_saving, n)
            drain = max(deadline - loop.time(), 0.0) if n else 0.0
            await _wait_bounded(asyncio.ensure_future(self.bridge.close(drain)), drain + QUIT_CLOSE_S)
        finally:
            self.exit(self.exit_code)

    async def on_unmount(self) -> None:
        # However the app ends (Ctrl+Q, an error, a test leaving run_test), the session file is
        # closed (its lock released) and the memory worker stopped; jobs left stay spooled. Bounded:
        # a close stuck on a thread or a lock must not keep the app from ending.
        self._release_gc()
        await _wait_bounded(asyncio.ensure_future(self.bridge.close(0.0)), QUIT_CLOSE_S)


async def _wait_bounded(task: asyncio.Future[Any], timeout: float) -> None:
    """Wait for ``task`` at most ``timeout`` seconds, and never for its cancellation: one still
    running then is left to finish on its own (its outcome, an error included, is dropped)."""
    task.add_done_callback(lambda t: t.cancelled() or t.exception())
    await asyncio.wait({task}, timeout=max(timeout, 0.0))


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
    if app.startup_error is not None:
        with contextlib.suppress(OSError):
            sys.stderr.write(f"pseudoclaude: {app.startup_error}\n")
        return 2
    return app.return_code or 0
