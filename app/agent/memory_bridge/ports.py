"""What the Runner needs of the pieces around it, and nothing more.

The Runtime plugs in the real ones (``RunMemory`` over ``memory.store.stores.MemoryStores`` and
``memory.jobs.manager.Manager``; ``app.agent.conversation.session.Session``); tests plug in their
own. The Runner imports only these ports: the agent loop stays apart from how memory and the
session log are stored.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from pydantic import JsonValue

from app.agent.conversation.blocks import Message

if TYPE_CHECKING:
    from app.agent.tools import CardRead
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
    def messages(self) -> list[Message]: ...

    @property
    def turn_start(self) -> int: ...

    # A restored session's usage anchor (tokens, chars) and the summary of its compacted part.
    @property
    def anchor(self) -> tuple[int, int] | None: ...

    @property
    def summary(self) -> str | None: ...

    def begin_turn(self, text: str) -> int: ...

    def append(self, message: Message) -> None: ...

    def append_at(self, message: Message) -> int: ...

    def open_turn(self, text: str, message: Message) -> int: ...

    def end_turn(
        self, status: str, memory: dict[str, list[str]] | None = None, **info: JsonValue
    ) -> bool: ...

    def record_usage(self, tokens: int, chars: int) -> None: ...

    def record_offloads(self, replaced: list[tuple[str, str]]) -> None: ...

    def compact(self, summary: str, messages: list[Message], turn_start: int | None, **info: int) -> None: ...


class MemoryPort(Protocol):
    """Memory as a Run meets it: the index the model has, the blocks at the head of a Run's user
    message, the turn's receipt, and where a completed turn goes. Only the top-level agent asks
    for heads and submits; a sub-agent's reads count in its parent's receipt."""

    shown_index: str  # the index the model has in full (system prompt) or by updates
    recall: RecallSource | None
    manager: TurnSink | None

    async def heads(self, text: str) -> tuple[str, str]:
        """The ``<memory-update>`` and ``<memory-recall>`` blocks for a Run of ``text`` ("" for
        none); the turn's receipt starts from the index they leave."""

    def mark(self) -> None:
        """A Run begins: what ``undo`` goes back to."""

    def undo(self) -> None:
        """The Run's turn was dropped with its head blocks: the next Run says them again."""

    def saw(self, card: CardRead) -> None:
        """``read_memory`` read a card during the turn."""

    def receipt(self) -> dict[str, list[str]]:
        """The turn's receipt as the session log keeps it (call it off the event loop)."""

    async def submit(self, messages: list[Message], session: str, workspace: Path) -> str | None:
        """A completed turn's messages to the memory manager; the job's id, if one was spooled."""
