"""What the Runner needs of the pieces around it, and nothing more.

The Runtime plugs in the real ones (``memory.store.stores.MemoryStores``, ``memory.jobs.manager.
Manager``, ``app.agent.conversation.session.Session``); tests plug in their own. Keeping the Runner to these
ports keeps the agent loop apart from how memory and the session log are stored.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

from memory.model import Turn


class IndexSource(Protocol):
    """Where the merged memory index comes from (read off the event loop). ``keep``: the
    ``level/filename`` of the cards the session's index shows, kept first when cut."""

    def merged_index(self, *, keep: Collection[str] = ...) -> str: ...


class RecalledCard(Protocol):
    @property
    def key(self) -> str: ...  # level/filename

    @property
    def line(self) -> str: ...  # its index line, as the index shows it (stale mark included)

    @property
    def sha(self) -> str: ...  # the card's content hash: recalled again only once it changed


class RecallSource(Protocol):
    """Cards beyond the prompt's index that a message is about (read off the event loop)."""

    def recall(
        self, text: str, shown: Collection[str], seen: Mapping[str, str] | None = ..., limit: int = ...
    ) -> Sequence[RecalledCard]: ...


class SpooledJob(Protocol):
    @property
    def id(self) -> str: ...


class TurnSink(Protocol):
    """Where completed turns go to be learnt from; None back when nothing was spooled."""

    async def submit(self, turn: Turn) -> SpooledJob | None: ...


class ConversationLog(Protocol):
    """The session log that owns the conversation: its methods do blocking file work (the Runner
    calls them in a thread) and keep ``messages`` valid by the session's conversation rules."""

    @property
    def id(self) -> str: ...

    @property
    def messages(self) -> list[dict[str, Any]]: ...

    @property
    def turn_start(self) -> int: ...

    # A restored session's usage anchor (tokens, chars) and the summary of its compacted part.
    @property
    def anchor(self) -> tuple[int, int] | None: ...

    @property
    def summary(self) -> str | None: ...

    def begin_turn(self, user_text: str) -> int: ...

    def append(self, message: object) -> None: ...

    def append_at(self, message: object) -> int: ...

    def open_turn(self, user_text: str, message: object) -> int: ...

    def end_turn(self, status: str, **info: Any) -> bool: ...

    def record_usage(self, tokens: int, chars: int) -> None: ...

    def record_offloads(self, replaced: list[tuple[str, str]]) -> None: ...

    def compact(
        self, summary: str, messages: list[dict[str, Any]], turn_start: int | None, **info: Any
    ) -> None: ...
