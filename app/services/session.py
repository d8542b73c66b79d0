"""The conversation's session: which one is open, a new one, a resumed one, its model and memory mode."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.agent.conversation.blocks import Message
    from app.agent.conversation.session_log import CompactionMark
    from app.agent.conversation.session_store import SessionInfo
    from app.agent.conversation.todos import TodoList
    from app.agent.runtime import Runtime


class SessionService:
    def __init__(self, rt: Runtime) -> None:
        self._rt = rt

    @property
    def id(self) -> str | None:
        session = self._rt.session
        return session.id if session is not None else None

    @property
    def messages(self) -> list[Message]:
        """The open session's conversation (a copy), as the model gets it."""
        session = self._rt.session
        return list(session.messages) if session is not None else []

    @property
    def earlier(self) -> list[Message | CompactionMark]:
        """What the session's log holds before its compaction boundaries (shown, never sent)."""
        return list(getattr(self._rt.session, "earlier", None) or [])

    @property
    def earlier_left_out(self) -> int:
        """How many of those earlier messages were not read (the log's head, past a bound)."""
        return int(getattr(self._rt.session, "earlier_left_out", 0) or 0)

    @property
    def todos(self) -> TodoList | None:
        """The open session's to-do list (``todo_write``'s); None without a session."""
        session = self._rt.session
        return session.todos if session is not None else None

    @property
    def model(self) -> str:
        return self._rt.settings.model

    @property
    def memory_mode(self) -> str:
        return str(self._rt.memory_mode)

    async def new(self) -> str | None:
        """``/clear``: a new session over the same memory; a note for the person, if any."""
        note = await self._rt.new_session()
        self._forget_allowances()
        return note

    async def resume(self, session_id: str) -> str | None:
        """Open an earlier session of this workspace; ValueError (one line) when it cannot be."""
        note = await self._rt.open_session(resume=session_id)
        self._forget_allowances()
        return note

    async def list(self) -> list[SessionInfo]:
        """This workspace's sessions, most recently active first (read off the event loop)."""
        rt = self._rt
        return await asyncio.to_thread(rt.sessions.list, rt.workspace)

    def set_model(self, name: str) -> None:
        """The main model from the next request on."""
        rt = self._rt
        rt.settings.model = name
        if rt.runner is not None:
            rt.runner.model = name

    def set_thinking(self, on: bool) -> None:
        """Extended thinking (the settings' budget) from the next Run on: a Run keeps the
        configuration it started with, as the API wants through a tool-use loop. ValueError (one
        line) when the budget does not fit the response's max_tokens."""
        rt = self._rt
        rt.settings.turn_thinking(on)
        if rt.runner is not None:
            rt.runner.thinking_budget = rt.settings.thinking_budget if on else 0

    async def set_memory_mode(self, mode: str) -> None:
        """``auto``, ``review`` or ``off`` from now on; ValueError (one line) for another word."""
        await self._rt.set_memory_mode(mode)

    def _forget_allowances(self) -> None:
        # "Allow for this session" ends with the session it was given in.
        reset = getattr(self._rt.gate, "reset", None)
        if callable(reset):
            reset()
