"""Builds the app's runtime and posts what it hears; every feature is a service call (app.services).

Why here: the App stays a view over messages, and a Pilot test drives the whole app against the
local fake Messages API through the real SDK with nothing else faked. What the runtime says —
memory events, a worker child replaced, a hook that failed, memory-model usage, store changes
from outside — is posted to the App as messages (app/tui/messages.py; the chat's go on to the
chat screen); nothing here touches a widget. Blocking work (importing the SDK, building the
runtime) runs in threads.

Start-up order (the first frame comes first; see app/tui/startup.py): ``build()`` (a thread)
constructs the Runtime — which computes paths only and does not import ``anthropic`` — and its
services, so the memory panel can show at once; ``warm_sdk()`` (a thread) then pays the SDK's
~3 s import; ``open()`` starts the memory worker and the session. Without credentials no session
is opened and no memory worker runs (nothing could ask a model): memory browsing and edits work.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.message import Message

from app.services.runtime import Pacer, StoreChanges, build_runtime
from app.tui.messages import (
    ChatNote,
    MemoryEventMessage,
    MemoryUsage,
    SettingsChanged,
    StoresChangedMessage,
    TurnEvent,
)

if TYPE_CHECKING:
    from app.agent.config.settings import Settings
    from app.agent.conversation.blocks import Prompt
    from app.agent.model.provider import Provider, Usage
    from app.agent.permissions.gate import Gate
    from app.agent.permissions.modes import PermissionMode
    from app.agent.runtime import Runtime
    from app.agent.turn.events import RunStop
    from app.services.bundle import Services
    from app.services.turn import TurnService
    from app.tui.permission.modal_ask import Ask
    from app.tui.permission.plan_ask import AskPlan
    from memory.events import MemoryEvent


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
        completion: Any = None,
        fs: Any = None,
        watch_debounce_ms: int = 300,
    ) -> None:
        """``settings``: None until the App has loaded them (before ``build``); ``post`` takes
        what the runtime says, ``ask`` asks the person's permission. The rest are the runtime's
        adapters (see ``use_adapters``)."""
        self.settings: Settings | None = settings
        self.workspace = workspace
        self.post = post
        self._ask = ask
        # Whether the person approves a plan (the App's plan window); None: nobody is asked (a
        # plan ends the turn, as in print mode).
        self.ask_plan: AskPlan | None = None
        self.gate: Gate = None  # type: ignore[assignment]  # the runtime's, once built (it imports the tools)
        self.pacer = Pacer()
        self.runtime: Runtime | None = None
        self._services: Services | None = None
        self.credentials = False  # a model can be asked (the runtime was built with one)
        self._unsubscribe: Callable[[], None] | None = None
        self._changes: StoreChanges | None = None
        # The reads that parse every card of a store (the trust window's, the panel's, the
        # browser's) take turns: side by side on a 10,000-card store each took twice as long, and
        # the second finds the parse cache warm.
        self.card_reads = threading.Lock()
        # A test's stand-in for the user store's sync, handed to the sharing service once built.
        self.sync_user_store: Callable[..., Any] | None = None
        self.use_adapters(
            home=home, provider=provider, completion=completion, fs=fs, watch_debounce_ms=watch_debounce_ms
        )

    def use_adapters(
        self,
        *,
        home: Path | None = None,
        provider: Provider | None = None,
        completion: Any = None,
        fs: Any = None,
        watch_debounce_ms: int = 300,
    ) -> None:
        """The runtime's adapters, before it is built: ``home`` (the app's folder), ``provider``,
        ``completion`` (the memory model), ``fs`` (the stores' file layer: tests slow or fault
        it) and the store watcher's debounce; None builds the real ones. A test hands them to the
        App's own bridge, which all the App composed already holds."""
        from app.services.trust_service import TrustService  # stdlib only at import: before the first frame

        self.home = home
        self._provider = provider
        self._completion = completion
        self._fs = fs
        self._watch_debounce_ms = watch_debounce_ms
        # The trust question's service works before the runtime exists (its own stores then).
        self.trust = TrustService(
            self.workspace,
            home,
            fs=fs,
            pacer=self.pacer,
            card_reads=self.card_reads,
            runtime=lambda: self.runtime,
        )

    def build(self) -> None:
        """Construct the Runtime and its services (blocking imports; no file is read or written).
        Call in a thread, once the settings are loaded."""
        # In this thread, as everything the App uses later: a first import on the loop stalls it.
        from app.agent.model.provider import MODEL_COMMAND, AnthropicProvider, has_credentials
        from app.services.bundle import Services
        from app.tui.permission.modal_ask import ModalAsk
        from app.tui.permission.plan_ask import ModalPlanApproval

        settings = self.require_settings()
        self.credentials = self._provider is not None or has_credentials()
        completion = self._completion
        if completion is None and self.credentials:
            completion = self._memory_completion()
        rt = build_runtime(
            settings,
            self.workspace,
            ask=ModalAsk(self._ask),
            plan_approval=ModalPlanApproval(self.ask_plan) if self.ask_plan is not None else None,
            # An unknown model names the app's own way to pick another (/model, not --model).
            provider=self._provider or AnthropicProvider(model_switch=MODEL_COMMAND),
            completion=completion,
            home=self.home,
            fs=self._fs,
            pacer=self.pacer,
            # A child process, unless a test hands the App an in-process memory model.
            worker_process=settings.memory_worker == "process" and self._completion is None,
        )
        self.gate = rt.gate
        rt.on_worker_note = self._on_worker_note
        rt.on_worker_usage = self._on_memory_usage  # the child's requests count in the cost too
        rt.ext.on_hook_note = self._on_hook_note
        rt.on_permission_mode = self._on_permission_mode
        self._unsubscribe = rt.manager.subscribe(self._on_memory_event)
        services = Services.for_runtime(rt, card_reads=self.card_reads)
        if self.sync_user_store is not None:
            services.sharing.sync_user_store = self.sync_user_store
        self.runtime, self._services = rt, services

    def warm_sdk(self) -> None:
        """Import the SDK (about 3 s) — in a thread, after the first frame."""
        if self.credentials:
            import anthropic  # noqa: F401

    async def warm_search(self) -> None:
        """The search caches built after the first frame (a Run's recall never waits for that)."""
        if self.runtime is not None:
            await self.runtime.warm_search()

    def _memory_completion(self) -> Any:
        # Loaded in build's thread: the memory model's client brings the SDK's types.
        from app.agent.memory_bridge.manager import memory_completion

        # Memory-model calls count in the session's cost.
        return memory_completion(self.require_settings(), on_usage=self._on_memory_usage, home=self.home)

    async def open(self, *, resume: str | None = None, continue_latest: bool = False) -> str | None:
        """Start memory and the session. Raises ValueError (one line) for a bad ``--resume``."""
        rt = self.require()
        if not self.credentials:
            # Nothing can ask a model: finish interrupted writes, run no worker, open no session.
            await asyncio.to_thread(rt.stores.recover)
            return None
        return await rt.open_session(resume=resume, continue_latest=continue_latest)

    def require_settings(self) -> Settings:
        if self.settings is None:
            raise RuntimeError("the settings are not loaded yet")
        return self.settings

    def require(self) -> Runtime:
        if self.runtime is None:
            raise RuntimeError("the runtime is not ready yet")
        return self.runtime

    @property
    def services(self) -> Services:
        if self._services is None:
            raise RuntimeError("the runtime is not ready yet")
        return self._services

    @property
    def stores(self) -> Any:
        """The runtime's memory stores (tests reach into them)."""
        return self.require().stores

    # -- what the runtime says, posted to the App ---------------------------------------------------

    def _on_memory_event(self, event: MemoryEvent) -> None:
        self.post(MemoryEventMessage(event))

    def _on_worker_note(self, line: str) -> None:
        self.post(ChatNote(line, error=True))  # the worker child died and was replaced (one line)

    def _on_permission_mode(self, _mode: PermissionMode) -> None:
        # At start from the files, Shift+Tab, a plan approved: the status line shows the new mode.
        self.post(SettingsChanged())

    def _on_hook_note(self, line: str, failed: bool) -> None:
        self.post(ChatNote(line, error=failed))  # a hook failed (each time), or a block said

    def repeat_start_notes(self) -> None:
        """Post again what the new session's SessionStart hooks failed with, behind the
        ``SessionSwitched`` that clears the chat: they were said during the switch, before it."""
        for line, failed in self.runtime.ext.start_notes if self.runtime is not None else ():
            self._on_hook_note(line, failed)

    def _on_memory_usage(self, model: str, usage: Usage) -> None:
        self.post(MemoryUsage(model, usage))

    async def watch_stores(self) -> None:
        """Post a StoresChangedMessage per outside change of a store folder, until close()."""
        self._changes = StoreChanges(self.require(), debounce_ms=self._watch_debounce_ms)
        async for levels in self._changes.changes():
            self.post(StoresChangedMessage(levels))

    @property
    def watcher_ready(self) -> bool:
        return self._changes is not None and self._changes.ready

    async def run_turn(self, turns: TurnService, prompt: Prompt | str) -> RunStop:
        """One Run; every event is posted as a TurnEvent. A cancel raises CancelledError after
        the runner closed the turn (the conversation stays valid). An ``AnswerDone`` behind the
        answer's events: its end is drawn before the job is spooled (app.agent.turn.events)."""
        from app.tui.text_batch import TextBatch  # loaded by the first turn, not the first frame

        emit = TextBatch(lambda ev: self.post(TurnEvent(ev)))  # a message per token is a fifth of a core
        try:
            return await turns.run(prompt, emit)
        finally:
            emit.flush()

    async def close(self, timeout: float = 0.0) -> None:
        """Drain memory for up to ``timeout`` seconds, close the session; leftovers stay spooled."""
        if self._changes is not None:
            self._changes.stop()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        rt = self.runtime
        if rt is not None:
            await rt.close(timeout)
