"""Where a Runner's conversation lives, and the file work that keeps it: the session log (a
``ConversationLog``) or, without one (a sub-agent), a list of its own. Either way the same
conversation rules apply (app/agent/conversation/messages.py).

The session's file work runs off the event loop, in order: a cancel never reorders two writes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from pydantic import JsonValue

from app.agent.conversation.blocks import Message
from app.agent.conversation.messages import TurnMark, drop_turn, push_message, turn_closing
from app.agent.memory_bridge.ports import ConversationLog

__all__ = ["TurnLog"]

T = TypeVar("T")


class TurnLog:
    """The conversation of a Runner. ``turn_start``: where the Run's turn begins in it (None
    between turns); ``mark``: enough to take that turn back out (the rules' ``TurnMark``)."""

    def __init__(self, session: ConversationLog | None, conversation: list[Message] | None = None) -> None:
        self.session = session
        # With a session, the session's messages are the conversation (one list, one set of rules).
        self._own: list[Message] = []
        for m in (conversation or []) if session is None else []:
            push_message(self._own, m.model_copy(deep=True))
        self.turn_start: int | None = None
        self.mark: TurnMark | None = None
        self._pending: asyncio.Future[object] | None = None

    @property
    def conversation(self) -> list[Message]:
        return self.session.messages if self.session is not None else self._own

    @property
    def session_id(self) -> str:
        return str(getattr(self.session, "id", "") or "")

    async def io(self, fn: Callable[..., T], *args: object, **kwargs: JsonValue) -> T:
        """Session file work off the event loop, in order: a cancel never reorders two writes."""
        pending = self._pending
        if pending is not None and not pending.done():
            # A write a cancel left running in its thread: it lands first.
            await asyncio.wait({pending})
        fut: asyncio.Future[T] = asyncio.ensure_future(asyncio.to_thread(fn, *args, **kwargs))
        self._pending = fut  # type: ignore[assignment]
        return await asyncio.shield(fut)

    async def open(self, text: str, message: Message) -> None:
        """A turn begins with ``message`` (the person's ``text`` and what goes with it). It may join
        a trailing user message (an interrupted turn's results): the turn's messages start where it
        landed. One trip to the session's thread for both."""
        self.mark = TurnMark(self.conversation)
        if self.session is not None:
            self.turn_start = await self.io(self.session.open_turn, text, message)
        else:
            self.turn_start = await self.append(message)

    async def append(self, message: Message) -> int:
        """Add a message by the conversation rules; returns the index of the message holding it."""
        if self.session is not None:
            return await self.io(self.session.append_at, message)
        held, _ = push_message(self._own, message)
        return held if held is not None else len(self._own)

    async def end(
        self, status: str, receipt: Callable[[], dict[str, list[str]]], info: dict[str, JsonValue]
    ) -> bool:
        """Close the turn by the rules (``turn_closing``); with a session, its ``turn_end`` record
        carries ``info`` and the turn's memory ``receipt`` (made in the log's thread: it parses
        the index). Returns whether the turn was dropped from the conversation."""
        info = {k: v for k, v in info.items() if v is not None}
        session = self.session
        if session is not None:

            def end() -> bool:
                return session.end_turn(status, **info, memory=receipt())

            drop = await self.io(end)
        else:
            mark = self.mark or TurnMark(self._own)
            reason = info.get("message")
            closing, drop = turn_closing(self._own, mark, status, reason if isinstance(reason, str) else "")
            for m in closing:
                push_message(self._own, m)
            if drop:
                drop_turn(self._own, mark)
        self.turn_start = None
        return drop

    async def replace(
        self, summary: str, kept: list[Message], turn_start: int | None, *, summarised: int, requests: int
    ) -> None:
        """The conversation compacted: ``kept`` goes on after ``summary``; the turn in progress
        begins at ``turn_start`` in it."""
        if self.session is not None:
            await self.io(
                self.session.compact, summary, kept, turn_start, summarised=summarised, requests=requests
            )
        else:
            self._own[:] = kept
            if self.mark is not None and turn_start is not None:
                self.mark = TurnMark(self._own[:turn_start])
        if self.turn_start is not None:
            self.turn_start = turn_start
