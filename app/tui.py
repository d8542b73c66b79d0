"""The full-screen app: chat pane, prompt, memory side panel, status line (DESIGN.md §12).

The App owns all UI state. Workers do the slow parts and tell the App by messages
(app/messages.py); the App talks to the runtime only through ``app.bridge.Bridge``.

Start-up keeps the first frame fast: this module imports Textual and the widgets only. The runtime
(pydantic, the stores) and the ``anthropic`` SDK (about 3 s) are imported by a worker after the
first frame; until the runtime is open the prompt says "connecting…" and does not send.
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
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.content import Content
from textual.worker import Worker, WorkerState

from memory.sanitize import strip_terminal, strip_terminal_deep
from widgets.chat import ChatPane
from widgets.memory_panel import MemoryPanel
from widgets.modals import PermissionModal, TrustCard, TrustModal
from widgets.prompt import PromptInput, Suggestion
from widgets.status import StatusInfo, StatusLine

from . import commands
from .bridge import CONFIGURE_HELP, Bridge
from .commands import SlashCommands, one_line
from .memory_screens import MemoryScreens
from .messages import (
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
    TurnDone,
    TurnEvent,
)

if TYPE_CHECKING:
    from .settings import Settings

CSS_FILE = Path(__file__).resolve().parent.parent / "assets" / "app.tcss"
NARROW = 100  # columns: below this the memory panel starts hidden
QUIT_DRAIN_S = 3.0
HISTORY_SHOWN = 200  # messages of a resumed session drawn (the pane prunes beyond its bound anyway)
# While an answer streams, a full garbage collection runs at most this often (see _hold_gc).
GC_FULL_EVERY_S = 60.0
# How long after a key (or a turn's end) the memory worker's threads still make room for the screen.
PACE_AFTER_S = 1.0
GC_IDLE_S = 2.0  # after a turn, the collector's schedule is back once no key was pressed for this long
_gc_frozen = False  # gc.freeze() is done once per process (see PseudoClaudeApp._hold_gc)
_ATTACH_RE = re.compile(r"(?<!\S)@(\S+)")




def _trust_cards(notes: list[Any]) -> list[TrustCard]:
    return [
        TrustCard(
            type=one_line(getattr(n.meta.type, "value", n.meta.type)),
            title=one_line(n.meta.title),
            summary=one_line(n.meta.summary),
            filename=one_line(n.filename),
        )
        for n in notes
    ]


class PseudoClaudeApp(SlashCommands, MemoryScreens, App[int]):
    TITLE = "PseudoClaude"
    CSS_PATH = str(CSS_FILE)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+q", "quit", "Quit", priority=True),
        # Ctrl+C never kills the app mid-write: it copies in the prompt, and says how to quit elsewhere.
        Binding("ctrl+c", "help_quit", show=False, system=True),
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

    def compose(self) -> ComposeResult:
        # Kept as attributes: while a modal is up, queries go to the modal's screen.
        self._chat = ChatPane(id="chat")
        self._prompt = PromptInput(id="prompt")
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
        self.prompt.disabled_reason = "connecting…"
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
        self._connect()

    # -- start-up ------------------------------------------------------------------------------

    @work(exclusive=True, group="connect", exit_on_error=False)
    async def _connect(self) -> None:
        if self.settings is None:
            from .settings import SettingsError, load_settings

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
            await asyncio.to_thread(importlib.import_module, "widgets.blocks")
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
        untrusted = await self.bridge.untrusted_cards()
        self.post_message(RuntimeReady(self.bridge.credentials, note, untrusted))

    @on(RuntimeBuilt)
    def _on_built(self, message: RuntimeBuilt) -> None:
        from memory.paths import pseudoclaude_home

        from .prompt_history import PromptHistory

        self.built = True
        self._history = PromptHistory(self.home if self.home is not None else pseudoclaude_home(), self.workspace)
        self._load_side_data(self._history)
        self._refresh_panel()
        self._watch_stores()

    @on(RuntimeReady)
    def _on_ready(self, message: RuntimeReady) -> None:
        from .pricing import CostMeter

        self._cost = CostMeter(getattr(self.settings, "prices", None))
        self.ready = message.credentials
        # Without credentials commands still work offline (/remember, /memory, /undo): the prompt
        # is enabled and a message gets the configuration help again.
        self._status_note = "" if message.credentials else "no model configured"
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
        if message.untrusted:
            # Pushed in this same handler: no prompt can be sent before the question is answered.
            self.push_screen(TrustModal(_trust_cards(message.untrusted), where=str(self.bridge.stores.project.dir)),
                             callback=self._trust_answered)

    def _show_configure_help(self) -> None:
        block = self.chat.add_note(CONFIGURE_HELP)
        block.add_class("-setup")
        heading, _, body = CONFIGURE_HELP.partition("\n")
        block.update(Content.assemble((heading, "bold"), "\n", body))

    @on(RuntimeFailed)
    def _on_failed(self, message: RuntimeFailed) -> None:
        self._status_note = "not connected"
        self.prompt.disabled_reason = "not connected"
        self.chat.add_error(message.message)
        self._show_status()

    @work(group="side", exit_on_error=False)
    async def _load_side_data(self, history: Any) -> None:
        from .filecomplete import workspace_files

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

    def _trust_answered(self, trusted: bool | None) -> None:
        self._settle_trust(bool(trusted))

    @work(exclusive=True, group="trust", exit_on_error=False)
    async def _settle_trust(self, trusted: bool) -> None:
        if trusted:
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
            from .filecomplete import fuzzy

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
        if not self.built or not self.bridge.opened:
            self.chat.add_note("still connecting… the prompt is sent once the model is ready")
            return
        if not self.ready:
            self._show_configure_help()
            return
        if self._turn is not None and self._turn.is_running:
            self.chat.add_note("a turn is running: wait for it, or press Esc to cancel it")
            return
        if self._history is not None:
            self._remember_prompt(text)
        self.chat.add_user(strip_terminal(text))
        self._answer = None
        self._turn_usage = None
        self.prompt.disabled_reason = "a turn is running (Esc cancels)"
        self._turn = self._run_turn(text)

    @work(group="history", exit_on_error=False)
    async def _remember_prompt(self, text: str) -> None:
        if self._history is not None:
            await asyncio.to_thread(self._history.append, text)

    async def _attachments(self, text: str) -> tuple[str, list[str]]:
        """The message with each ``@path`` file appended (bounded), and notes for the user."""
        from .filecomplete import attach

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
        if self._turn is not None and self._turn.is_running:
            self._turn.cancel()

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
        from .provider import Retrying, TextDelta, ToolUseArgs, ToolUseStart, UsageEvent
        from .runner import Compacted, Compacting, ContextUsage, RunStop, ToolCallFinished, ToolCallStarted

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
            await self._answer.append(strip_terminal(ev.text))
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
            block.set_running(strip_terminal_deep(ev.input) if isinstance(ev.input, dict) else {})
            if ev.name == "task":
                self._task_blocks[depth] = block
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
                from .provider import Usage

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
                from .pricing import format_usage

                self._last_turn = format_usage(self._turn_usage)
            if ev.status == "cancelled":
                self.chat.add_note("cancelled")
            elif ev.status != "completed":
                self.chat.add_error(one_line(ev.message or ev.status, 500))
            self._show_status()

    @on(Worker.StateChanged)
    def _on_worker_state(self, event: Worker.StateChanged) -> None:
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

    def _show_history(self, messages: list[dict[str, Any]]) -> None:
        from .session import is_app_note

        results: dict[str, dict[str, Any]] = {}
        for m in messages:
            if m.get("role") == "user" and isinstance(m.get("content"), list):
                for b in m["content"]:
                    if isinstance(b, dict) and b.get("type") == "tool_result":
                        results[str(b.get("tool_use_id", ""))] = b
        shown = messages[-HISTORY_SHOWN:]
        if len(shown) < len(messages):
            self.chat.add_note(f"{len(messages) - len(shown)} earlier message(s) not shown")
        for m in shown:
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
                        self.chat.add_user(strip_terminal(text))
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

    async def ask_permission(self, request: Any) -> str:
        """Show the PermissionModal for a tool call; "once", "session" or "deny"."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[str] = loop.create_future()

        def done(result: str | None) -> None:
            if not answer.done():
                answer.set_result(result or "deny")

        modal = PermissionModal(request)
        await self.push_screen(modal, callback=done)
        try:
            return await answer
        except asyncio.CancelledError:
            # The turn was cancelled while asking: take the question away.
            if modal.is_attached and self.screen is modal:
                modal.dismiss("deny")
            raise

    # -- quit ------------------------------------------------------------------------------------

    async def action_quit(self) -> None:
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
        if self._turn is not None and self._turn.is_running:
            self._turn.cancel()
        n = await self.bridge.in_flight() if self.built else 0
        if n:
            self._status_note = f"saving {n} memory update{'s' if n != 1 else ''}… (Ctrl+Q again leaves at once)"
            self._show_status()
            self.notify(self._status_note, title="Quitting")
        self._drain = self._leave(QUIT_DRAIN_S if n else 0.0)

    @work(group="quit", exit_on_error=False)
    async def _leave(self, timeout: float) -> None:
        try:
            task = getattr(self._turn, "_task", None)
            if task is not None and not task.done():
                # The cancelled turn closes its session record first (the runner shields it).
                await asyncio.wait({task}, timeout=QUIT_DRAIN_S)
            await self.bridge.close(timeout)
        finally:
            self.exit(self.exit_code)


    async def on_unmount(self) -> None:
        # However the app ends (Ctrl+Q, an error, a test leaving run_test), the session file is
        # closed (its lock released) and the memory worker stopped; jobs left stay spooled.
        self._release_gc()
        with contextlib.suppress(Exception):
            await self.bridge.close(0.0)


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
