"""Wires one workspace's runtime together: stores, memory manager, provider, session, Runner.

Print mode and the full-screen app both stand on this; neither builds these pieces itself.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from memory.completion import Completion
from memory.manager import Manager
from memory.transaction import MemoryStores

from .memory_model import AnthropicCompletion
from .provider import AnthropicProvider, Provider, retry_base_delay
from .runner import Runner
from .session import Session, SessionError, SessionStore
from .settings import Settings
from .tools import PermissionGate, ToolContext


async def scaled_sleep(seconds: float) -> None:
    # The memory worker's backoff (1 s, 2 s, ...) in units of the runtime's retry delay.
    await asyncio.sleep(seconds * retry_base_delay())


class Runtime:
    def __init__(
        self,
        settings: Settings,
        workspace: Path,
        *,
        gate: PermissionGate,
        provider: Provider | None = None,
        completion: Completion | None = None,
        home: Path | None = None,
    ) -> None:
        self.settings = settings
        self.workspace = workspace
        self.gate = gate
        self.stores = MemoryStores(workspace, home)
        self.memory_enabled = settings.memory_mode != "off"
        if completion is None and self.memory_enabled:
            completion = AnthropicCompletion(settings.memory_model)
        self.manager = Manager(self.stores, completion, mode=settings.memory_mode, sleep=scaled_sleep)
        self.provider: Provider = provider or AnthropicProvider()
        self.sessions = SessionStore(home)
        self.session: Session | None = None
        self.runner: Runner = None  # type: ignore[assignment]  # set by open_session

    def open_session(self, *, resume: str | None = None, continue_latest: bool = False) -> str | None:
        """Start, continue or resume a session; returns a note for the user (or None).

        Raises ValueError with a one-line reason for an unknown session id.
        """
        note = None
        session: Session | None = None
        if resume:
            try:
                session = self.sessions.open(resume)
            except SessionError as e:
                raise ValueError(str(e)) from None
            note = f"resumed session {session.id} ({len(session.messages)} messages)"
        elif continue_latest:
            try:
                session = self.sessions.latest(self.workspace)
            except SessionError as e:
                raise ValueError(str(e)) from None
            note = (
                f"continuing session {session.id} ({len(session.messages)} messages)"
                if session is not None
                else "no earlier session in this workspace: starting a new one"
            )
        if session is None:
            session = self.sessions.create(self.workspace, model=self.settings.model)
        for w in getattr(session, "warnings", []) or []:
            note = f"{note}; {w}" if note else w
        self.session = session
        self.manager.session = session.id
        self.runner = self.make_runner(session)
        return note

    def make_runner(self, session: Session | None, conversation: list[dict[str, Any]] | None = None) -> Runner:
        ctx = ToolContext(workspace=self.workspace, memory=self.stores, bash_timeout_default=self.settings.bash_timeout)
        return Runner(
            provider=self.provider,
            model=self.settings.model,
            tool_ctx=ctx,
            gate=self.gate,
            conversation=conversation if conversation is not None else (list(session.messages) if session else []),
            memory=self.stores,
            manager=self.manager if self.memory_enabled else None,
            session=session,
            max_iterations=self.settings.max_iterations,
            max_tokens=self.settings.max_tokens,
        )

    async def start(self) -> None:
        if self.memory_enabled:
            await self.manager.start()
        else:
            # Memory off: no worker and no model request, but interrupted writes are finished.
            self.stores.recover()

    async def close(self, timeout: float = 0.0) -> None:
        await self.manager.close(timeout)
        if self.session is not None:
            self.session.close()
