"""The one place the App talks to the runtime (Runtime, Manager, StoresWatcher).

Why one place: the App stays a view over messages, and a Pilot test drives the whole app against
the local fake Messages API through the real SDK with nothing else faked. Everything the bridge
hears — runner events, memory events, store changes, memory-model usage — it posts to the App as
messages (app/tui/messages.py); it never touches a widget. Blocking work (importing the SDK, file I/O)
runs in threads; the rest are coroutines for the App's async workers.

Start-up order (the first frame comes first; see app/tui/startup.py): ``build()`` (a thread)
constructs the Runtime — which computes paths only and does not import ``anthropic`` — so the
memory panel can show at once; ``warm_sdk()`` (a thread) then pays the SDK's ~3 s import;
``open()`` starts the memory worker and the session. Without credentials no session is opened and no memory worker runs (nothing could
ask a model): memory browsing and edits still work.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.message import Message

from app.tui.messages import (
    ChatNote,
    ChildWrote,
    MemoryEventMessage,
    MemoryUsage,
    SettingsChanged,
    StoresChangedMessage,
    TurnEvent,
)
from memory.jobs.pace import Pacer

if TYPE_CHECKING:
    from app.agent.events import Compacted, RunEvent, RunStop
    from app.agent.provider import Provider, Usage
    from app.agent.runtime import Runtime
    from app.agent.session import SessionInfo
    from app.agent.settings import Settings
    from app.tui.memory_views import AppliedRecord
    from app.tui.modal_gate import Ask, ModalGate
    from memory.events import MemoryEvent
    from memory.extract.completion import Completion
    from memory.jobs.spool import Job
    from memory.jobs.views import JobView
    from memory.model import BatchResult
    from memory.sharing.sync import SyncResult
    from memory.store.cards import CardResult, ExternalEdit, ExternalEditResult
    from memory.store.fs import FS
    from memory.store.index import TrustPreview
    from memory.store.stores import MemoryStores
    from memory.store.watch import StoresWatcher
    from widgets.cards.card_list import CardRow, FilterAnswer
    from widgets.cards.draft import CardDraft
    from widgets.panel.memory_panel import PanelState
    from widgets.pending.state import PendingState

log = logging.getLogger(__name__)

IN_FLIGHT = frozenset({"queued", "extracting", "applying", "retrying"})
# The derived-index rule after an outside change waits this long for the stores' lock: a batch
# holding it rewrites MEMORY.md itself, and the next change tries again.
REFRESH_LOCK_S = 2.0

# One item per line and no column alignment: the chat beside the panel is about 52 cells wide at
# 100 columns, and aligned columns wrapped into stray lines there. The first line is the heading
# (the App draws it bold, in a setup block).
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


def _title_from(text: str, words: int = 8, limit: int = 60) -> str:
    title = " ".join(text.split()[:words])
    return title if len(title) <= limit else title[: limit - 1].rstrip() + "…"


class Bridge:
    def __init__(
        self,
        settings: Settings | None,
        workspace: Path,
        post: Callable[[Message], object],
        ask: Ask,
        *,
        home: Path | None = None,
        provider: Provider | None = None,
        completion: Completion | None = None,
        fs: FS | None = None,
        watch_debounce_ms: int = 300,
    ) -> None:
        """``settings``: None until the App has loaded them (before ``build``). ``home`` (the
        app's folder), ``provider``, ``completion`` (the memory model), ``fs`` (the stores' file
        layer) and the watcher's debounce are the runtime's adapters: None builds the real ones."""
        self.settings: Settings | None = settings
        self.workspace = workspace
        self.post = post
        self.home = home
        self._ask = ask
        self.gate: ModalGate = None  # type: ignore[assignment]  # built with the runtime (it imports the tools)
        self._provider = provider
        self._completion = completion
        self._fs = fs  # memory.fs.FS: tests slow or fault it (one hookable layer for all store I/O)
        self.pacer = Pacer()
        self._watch_debounce_ms = watch_debounce_ms
        self.runtime: Runtime | None = None
        self.credentials = False
        self.opened = False
        self._unsubscribe: Callable[[], None] | None = None
        self._watcher: StoresWatcher | None = None
        self.excerpts: dict[str, str] = {}  # job id -> its turn's excerpt, as last listed
        # The reads that parse every card of a store (the trust window's, the panel's) take turns:
        # side by side on a 10,000-card store each took twice as long, and the second now finds
        # the parse cache warm.
        self._card_reads = threading.Lock()
        self._early_stores: MemoryStores | None = None  # the trust question's, until the runtime exists
        self._early_lock = threading.Lock()
        # The user store's sync: memory.sharing.sync.sync_user_store unless a test
        # sets another; its last outcome (line, failed) is what the panel shows.
        self.sync_user_store: Callable[..., SyncResult] | None = None
        self.sync_status: tuple[str, bool] | None = None

    # -- start-up --------------------------------------------------------------------------------

    def build(self) -> None:
        """Construct the Runtime (blocking imports; no file is read or written). Call in a thread,
        once the settings are loaded."""
        settings = self.require_settings()
        # Everything the App imports later is imported here, in this thread: a first import on
        # the event loop would stall the screen.
        import memory.store.watch  # noqa: F401  # the store watcher (watchfiles), started by the App
        from app.agent.provider import MODEL_COMMAND, AnthropicProvider, has_credentials
        from app.agent.runtime import Runtime
        from app.tui.modal_gate import ModalGate
        from memory.store.fs import FS

        self.gate = ModalGate(self.workspace, self._ask)
        # The stores' own filesystem layer, paced: the memory worker's threads make room for the
        # screen while the App says it is busy (a turn streams, a key was just pressed).
        if self._fs is None:
            self._fs = FS()
        self._fs.pace = self.pacer
        self.credentials = self._provider is not None or has_credentials()
        completion = self._completion
        if completion is None and self.credentials:
            completion = self._memory_completion()
        self.runtime = Runtime(
            settings,
            self.workspace,
            gate=self.gate,
            # An unknown model names the app's own way to pick another (/model, not --model).
            provider=self._provider or AnthropicProvider(model_switch=MODEL_COMMAND),
            completion=completion,
            home=self.home,
            fs=self._fs,
            # A child process, unless a test hands the App an in-process memory model.
            worker_process=settings.memory_worker == "process" and self._completion is None,
        )
        self.runtime.on_worker_note, self.runtime.on_worker_wrote = self._on_worker_note, lambda: self.post(ChildWrote())
        self.runtime.on_worker_usage = self._on_memory_usage  # the child's requests count in the cost too
        self._unsubscribe = self.runtime.manager.subscribe(self._on_memory_event)

    def warm_sdk(self) -> None:
        """Import the SDK (about 3 s) — in a thread, after the first frame."""
        if self.credentials:
            import anthropic  # noqa: F401

    async def warm_search(self) -> None:
        """The search caches built after the first frame (a Run's recall never waits for that)."""
        if self.runtime is not None:
            await self.runtime.warm_search()

    def _memory_completion(self) -> Completion:
        from app.agent.memory_model import AnthropicCompletion

        # Memory-model calls count in the session's cost.
        settings = self.require_settings()
        return AnthropicCompletion(settings.memory_model, on_usage=self._on_memory_usage, home=self.home,
                                   idle_timeout=settings.memory_idle_timeout)

    async def open(self, *, resume: str | None = None, continue_latest: bool = False) -> str | None:
        """Start memory and the session. Raises ValueError (one line) for a bad ``--resume``."""
        rt = self.require()
        if not self.credentials:
            # Nothing can ask a model: finish interrupted writes, run no worker, open no session.
            await asyncio.to_thread(rt.stores.recover)
            self.opened = True
            return None
        note = await rt.open_session(resume=resume, continue_latest=continue_latest)
        self.opened = True
        return note

    def require_settings(self) -> Settings:
        if self.settings is None:
            raise RuntimeError("the settings are not loaded yet")
        return self.settings

    def require(self) -> Runtime:
        if self.runtime is None:
            raise RuntimeError("the runtime is not ready yet")
        return self.runtime

    @property
    def stores(self) -> MemoryStores:
        return self.require().stores

    # -- what the bridge hears ---------------------------------------------------------------------

    def _on_memory_event(self, event: MemoryEvent) -> None:
        self.post(MemoryEventMessage(event))

    def _on_worker_note(self, line: str) -> None:
        self.post(ChatNote(line, error=True))  # the worker child died and was replaced (one line)

    def _on_memory_usage(self, model: str, usage: Usage) -> None:
        self.post(MemoryUsage(model, usage))

    async def watch_stores(self) -> None:
        """Post a StoresChangedMessage per external change of a store folder, until close()."""
        from memory.store.watch import StoresWatcher

        self._watcher = StoresWatcher(self.stores, debounce_ms=self._watch_debounce_ms, own=self.require().own_writes)
        async for ev in self._watcher.events():
            self.post(StoresChangedMessage(tuple(str(getattr(lv, "value", lv)) for lv in ev.levels)))

    @property
    def watcher_ready(self) -> bool:
        return self._watcher is not None and self._watcher.ready.is_set()

    # -- turns -------------------------------------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        rt = self.runtime
        return rt.session.id if rt is not None and rt.session is not None else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        rt = self.runtime
        return list(rt.session.messages) if rt is not None and rt.session is not None else []

    async def run_turn(self, text: str) -> RunStop:
        """One Run; every event is posted as a TurnEvent. A cancel raises CancelledError after
        the runner closed the turn (the conversation stays valid). An ``AnswerDone`` behind the
        answer's events: its end is drawn before the job is spooled (app.agent.events)."""
        from app.agent.events import posting_answer_done
        from app.tui.text_batch import TextBatch

        rt = self.require()
        emit = TextBatch(lambda ev: self.post(TurnEvent(ev)))  # a message per token is a fifth of a core
        try:
            return await rt.runner.run(text, emit, answer_shown=posting_answer_done(emit))
        finally:
            emit.flush()

    async def compact(self, focus: str = "") -> Compacted | None:
        """``/compact [focus]``: summarise the earlier conversation now; events go to the App as
        TurnEvents (Compacting, Compacted, ContextUsage, UsageEvent). RuntimeError: why not."""
        rt = self.require()
        if rt.runner is None:
            raise RuntimeError("no session is open")

        def emit(ev: RunEvent) -> None:
            self.post(TurnEvent(ev))

        return await rt.runner.compact(focus, emit)

    def note_files(self) -> frozenset[tuple[str, str]]:
        """(level, filename) of every card in the merged index now: what a Run starts with
        (cards not among them are marked new in the panel). Blocking: call in a thread."""
        from app.tui.panel_state import index_files

        return index_files(self.stores.merged_index())

    # -- memory ------------------------------------------------------------------------------------

    async def jobs(self) -> list[JobView]:
        views = await self.require().manager.jobs()
        for v in views:  # a job applied later is listed with its turn's words
            self.excerpts[v.id] = v.excerpt
        return views

    def _kept_panel_state(self, stores: MemoryStores, jobs: list[JobView] | None = None,
                          files: frozenset[tuple[str, str]] | None = None,
                          sync: tuple[str, bool] | None = None) -> PanelState:
        """A panel state built from ``stores`` (blocking), kept as the next start's snapshot."""
        from app.tui.panel_snapshot import recorder
        from app.tui.panel_state import build_panel_state

        with self._card_reads:
            return recorder(self.home, self.workspace).record(
                lambda: build_panel_state(stores, jobs or [], files, sync=sync))

    async def panel_state(self, run_start_files: frozenset[tuple[str, str]] | None) -> tuple[PanelState, int]:
        """(PanelState, number of this workspace's spooled jobs), read off the loop."""
        jobs = await self.jobs()
        state = await asyncio.to_thread(self._kept_panel_state, self.stores, jobs, run_start_files, self.sync_status)
        return state, len(jobs)  # pending: in flight, failed or held (what `memory pending` lists)

    async def record_panel_snapshot(self) -> None:
        """The panel's cards built again only for the next start's snapshot (off the loop)."""
        await asyncio.to_thread(self._kept_panel_state, self.stores)

    async def early_panel_state(self) -> PanelState | None:
        """The panel's cards before the runtime, from the trust question's stores (no jobs; trust
        read from disk as always). None once the runtime is built: its own state comes."""
        return await asyncio.to_thread(lambda: None if self.runtime else self._kept_panel_state(self.trust_stores()))

    async def refresh_indexes(self) -> list[str]:
        """The derived-index rule after an outside change (``git pull``, an editor): each
        ``MEMORY.md`` that no longer matches its cards is rebuilt from them. Never raises: a
        store that cannot be refreshed now is logged, and its cards are still read from files."""

        def run() -> list[str]:
            return [str(getattr(lv, "value", lv)) for lv in self.stores.refresh_indexes(timeout=REFRESH_LOCK_S)]

        try:
            return await asyncio.to_thread(run)
        except Exception as e:
            log.warning("memory index not refreshed: %s", e)
            return []

    @property
    def sync_remote(self) -> str:
        """``user_memory_remote`` ("" when the user store is not synced)."""
        return str(getattr(self.settings, "user_memory_remote", "") or "")

    async def in_flight(self) -> int:
        try:
            return sum(1 for j in await self.jobs() if j.state in IN_FLIGHT)
        except Exception:
            return 0

    def trust_stores(self) -> MemoryStores:
        """The trust question's stores, before the runtime too (no settings needed). Blocking: in a thread."""
        if self.runtime is not None:
            return self.runtime.stores
        with self._early_lock:
            if self._early_stores is None:
                from memory.store.fs import FS
                from memory.store.stores import MemoryStores

                fs = self._fs if self._fs is not None else FS(pace=self.pacer)
                self._early_stores = MemoryStores(self.workspace, self.home, fs=fs)
            return self._early_stores

    async def trust_needed(self) -> tuple[bool, str]:
        """Whether the project store waits for the person's trust, and its folder: a trust record and
        a folder listing are read (``trust.needs_asking``), no card, no module of the stores' own."""

        def check() -> tuple[bool, str]:
            from memory.store import fs, paths, trust  # no pydantic, no YAML: milliseconds
            at = paths.Paths.for_workspace(self.workspace, self.home)
            return trust.needs_asking(at, self._fs or fs.FS(pace=self.pacer)), str(at.project_store)

        return await asyncio.to_thread(check)

    async def trust_preview(self) -> TrustPreview:
        """What trusting the project store would let into a prompt (memory.index.TrustPreview:
        every card's index line, and the cards left out with why). Reads every card: seconds on
        a cold 10,000-card store, in a thread."""

        def read() -> TrustPreview:
            stores = self.trust_stores()
            with self._card_reads:
                return stores.trust_preview()

        return await asyncio.to_thread(read)

    async def trust_project(self) -> None:
        rt = self.runtime
        if rt is None:  # the start-up failed: the person's answer is still recorded
            await asyncio.to_thread(lambda: self.trust_stores().trust_project())
            return
        await rt.trust_project()

    def remember_draft(self, text: str) -> CardDraft:
        """/remember TEXT: the editor's prefilled card (body = TEXT, a title from its first words,
        a project_knowledge card of the project level — the user level when the workspace has none)."""
        from widgets.cards.draft import CardDraft

        level = "project" if self.stores.has_project_level else "user"
        return CardDraft(level=level, type="project_knowledge", title=_title_from(text), summary="", body=text)

    @property
    def levels(self) -> tuple[str, ...]:
        return ("project", "user") if self.stores.has_project_level else ("user",)

    # -- the memory screens (app/tui/screens/) ------------------------------------------------

    async def card_rows(self) -> tuple[list[CardRow], str | None]:
        from app.tui.memory_views import card_rows

        return await asyncio.to_thread(card_rows, self.stores)

    async def read_draft(self, level: str, filename: str) -> tuple[CardDraft, str] | None:
        from app.tui.memory_views import read_draft

        return await asyncio.to_thread(read_draft, self.stores, level, filename)

    async def pending_state(self, applied: list[AppliedRecord], note: str | None = None) -> PendingState:
        """The pending screen's state: this workspace's jobs, those applied this session, orphans."""
        from app.tui.memory_views import pending_state

        manager = self.require().manager
        views = await manager.jobs()
        everyone = await manager.jobs(all_workspaces=True)
        orphans = [v for v in everyone if v.state == "orphaned"]
        mode = self.require().memory_mode
        return await asyncio.to_thread(pending_state, self.stores, views, orphans, applied, mode, note)

    async def approve(self, job_id: str, ops: tuple[int, ...] | None) -> BatchResult:
        return await self.require().manager.approve(job_id, ops)

    async def reject(self, job_id: str, ops: tuple[int, ...] | None) -> Job | None:
        return await self.require().manager.reject(job_id, ops)

    async def retry(self, job_id: str) -> Job:
        return await self.require().manager.retry(job_id)

    async def dismiss(self, job_id: str) -> None:
        await self.require().manager.dismiss(job_id)

    async def turn_text(self, job_id: str) -> str:
        return await self.require().manager.turn_text(job_id)

    async def check_card(self, draft: CardDraft) -> dict[str, str]:
        return await asyncio.to_thread(
            self.stores.check_card, draft.level, draft.type, draft.title, draft.summary, draft.body
        )

    async def save_card(
        self, draft: CardDraft, filename: str | None, sha256: str | None, original_level: str | None,
        cites: tuple[str, ...] | None = None,
    ) -> CardResult:
        """The editor's save; ``cites``: the citations the person changed (None: left alone)."""
        if cites is None:
            return await asyncio.to_thread(
                self.stores.save_card, draft.level, draft.type, draft.title, draft.summary, draft.body,
                filename=filename, expected_sha=sha256, original_level=original_level,
            )
        from memory.store.cards import save_card

        return await asyncio.to_thread(
            lambda: save_card(self.stores, draft.level, draft.type, draft.title, draft.summary, draft.body,
                              filename=filename, expected_sha=sha256, original_level=original_level, cites=cites)
        )

    # -- grounded cards ---------------------------------------------------------------

    async def stale_cards(self) -> frozenset[tuple[str, str]]:
        """(filename, reason) of each stale project card now: a stat per cited file while
        nothing changed (the checker caches by stat). Off the loop."""

        def check() -> frozenset[tuple[str, str]]:
            with self._card_reads:
                checks = self.stores.staleness()
            return frozenset((name, c.reason) for name, c in checks.items() if c.stale)

        return await asyncio.to_thread(check)

    async def confirm_card(self, level: str, filename: str, sha256: str | None) -> tuple[BatchResult, list[str]]:
        """A person's "still true" (a manual, undoable batch); StoreError (one line) when it cannot be."""
        return await asyncio.to_thread(self.stores.confirm, level, filename, sha256)

    async def delete_card(self, level: str, filename: str, sha256: str) -> CardResult:
        return await asyncio.to_thread(self.stores.delete_card, level, filename, sha256)

    async def move_card(self, level: str, filename: str, sha256: str) -> CardResult:
        to = "user" if level == "project" else "project"
        return await asyncio.to_thread(self.stores.move_card, level, filename, to, sha256)

    async def start_external_edit(self, level: str, filename: str) -> ExternalEdit:
        """The card copied to a private file for ``$EDITOR`` (memory.cards.ExternalEdit);
        memory.store.StoreError or OSError (one line) when it cannot be copied."""
        from memory.store.cards import start_external_edit

        return await asyncio.to_thread(start_external_edit, self.stores, level, filename)

    async def finish_external_edit(self, edit: ExternalEdit, *, refuse: str | None = None) -> ExternalEditResult:
        """The copy read back, checked and applied as one manual edit (memory.cards.ExternalEditResult);
        ``refuse``: a reason not to apply a changed copy (the editor failed)."""
        from memory.store.cards import finish_external_edit

        return await asyncio.to_thread(lambda: finish_external_edit(self.stores, edit, refuse=refuse))

    async def discard_external_edit(self, edit: ExternalEdit) -> None:
        from memory.store.cards import discard_external_edit

        await asyncio.to_thread(discard_external_edit, edit)

    async def undo(self) -> BatchResult:
        return await asyncio.to_thread(self.stores.undo)

    # -- memory at scale ----------------------------------------------------------------

    async def pin_card(self, level: str, filename: str, pinned: bool, sha256: str | None) -> BatchResult:
        """Pin or unpin a card: its own manual, undoable batch (empty when it already was)."""
        return await asyncio.to_thread(self.stores.pin, level, filename, pinned, sha256)

    async def pin_as_edit(self, level: str, filename: str, pinned: bool, sha256: str | None) -> CardResult:
        """The editor's save when only its Pinned box changed: the pin as the editor's outcome.
        StoreError (one line) when the card changed or went since it was read."""
        from memory.constants import Level
        from memory.store.cards import CardResult

        result = await self.pin_card(level, filename, pinned, sha256)
        reasons = [c.reason for c in result.conflicts] + [r.reason for r in result.rejected]
        if reasons:
            return CardResult(status="conflict" if result.conflicts else "rejected", level=Level(level),
                              filename=filename, reason=reasons[0])
        return CardResult(status="applied", level=Level(level), filename=filename, txid=result.txid)

    async def filter_keys(self, text: str) -> FilterAnswer:
        """The card browser's filter through the search index: per level the ``level/filename``
        of the cards holding every word with its search score, best first, None for a level it
        cannot search (untrusted)."""
        search = self.require().search

        def look() -> FilterAnswer:
            return {level: search.filter_keys(text, level) for level in self.levels}

        return await asyncio.to_thread(look)

    async def search_changed(self) -> list[str]:
        """A store changed outside the app: the search caches sync again before their next use.
        The one-line notices of caches rebuilt meanwhile (damaged, foreign) are returned."""
        search = self.require().search
        search.mark_changed()
        return await asyncio.to_thread(search.notices)

    async def consolidate(self, level: str | None) -> list[Any]:
        """``/consolidate [level]``: the Manager's ConsolidateOutcome per level (job id or why none)."""
        return list(await self.require().manager.consolidate(level))

    async def maybe_consolidate(self) -> list[Any]:
        """The automatic consolidation (the App calls it only while no turn runs or waits)."""
        return list(await self.require().manager.maybe_consolidate())

    async def set_memory_mode(self, mode: str) -> None:
        await self.require().set_memory_mode(mode)
        self.post(SettingsChanged())

    def set_model(self, name: str) -> None:
        rt = self.require()
        self.require_settings().model = name
        if rt.runner is not None:
            rt.runner.model = name
        self.post(SettingsChanged())

    # -- sessions ----------------------------------------------------------------------------------

    async def new_session(self) -> str | None:
        note = await self.require().new_session()
        self.gate.reset()
        return note

    async def resume(self, session_id: str) -> str | None:
        note = await self.require().open_session(resume=session_id)
        self.gate.reset()
        return note

    async def sessions(self) -> list[SessionInfo]:
        rt = self.require()
        return await asyncio.to_thread(rt.sessions.list, self.workspace)

    # -- quit --------------------------------------------------------------------------------------

    async def close(self, timeout: float = 0.0) -> None:
        """Drain memory for up to ``timeout`` seconds, close the session; leftovers stay spooled."""
        if self._watcher is not None:
            self._watcher.stop()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        rt = self.runtime
        if rt is not None:
            await rt.close(timeout)
