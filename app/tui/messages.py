"""The App's messages: what workers and the bridge tell the App (which alone owns UI state).

Every message is a small ``@dataclass`` whose payload is frozen or owned by the receiver, so it
may be posted from any thread (``post_message`` is thread-safe in Textual).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from textual.message import Message


@dataclass
class RuntimeBuilt(Message):
    """The Runtime object exists (no SDK yet): the memory panel and the watcher can start."""


@dataclass
class RuntimeReady(Message):
    """The SDK is imported and the runtime built and opened: sending is possible.

    ``credentials``: False when no key is configured (the app works offline: memory only).
    ``note``: a line from opening the session (resumed, continued, …)."""

    credentials: bool
    note: str | None = None


@dataclass
class TrustChecked(Message):
    """Whether the project store waits for the person's trust (asked right after the first
    frame, before its cards are read); ``where``: the store's folder."""

    needed: bool
    where: str = ""


@dataclass
class TrustCardsRead(Message):
    """The cards of the project store waiting for trust (widgets.modals.TrustCard values), or
    ``error``: why they could not be read (one line)."""

    cards: list[Any]
    error: str | None = None


@dataclass
class RuntimeFailed(Message):
    """Building or opening the runtime failed; ``message`` is one line for the user."""

    message: str


@dataclass
class TurnEvent(Message):
    """One Runner event of the running turn (app.runner.RunEvent, a frozen value)."""

    event: Any


@dataclass
class TurnDone(Message):
    """The turn's worker ended (completed, failed, or cancelled): the prompt is free again."""

    status: str


@dataclass
class MemoryEventMessage(Message):
    """An event of the memory Manager (memory.events.MemoryEvent, a frozen value)."""

    event: Any


@dataclass
class StoresChangedMessage(Message):
    """A store folder changed from outside (an editor, ``git pull``)."""

    levels: tuple[str, ...] = ()


@dataclass
class PanelStateReady(Message):
    """A freshly computed side-panel state (widgets.memory_panel.PanelState) and the pending job count."""

    state: Any
    pending: int = 0


@dataclass
class MemoryUsage(Message):
    """A memory-model request's token usage (counted in the session's cost)."""

    model: str
    usage: Any


@dataclass
class FilesLoaded(Message):
    """The workspace's file list for ``@path`` completion."""

    paths: list[str] = field(default_factory=list)


@dataclass
class HistoryLoaded(Message):
    """This workspace's prompt history, oldest first."""

    items: list[str] = field(default_factory=list)


@dataclass
class ChatNote(Message):
    """A one-line (or short) note for the chat pane from a worker (a command's outcome)."""

    text: str
    error: bool = False


@dataclass
class SessionSwitched(Message):
    """A new or resumed session is in place: the chat pane shows its history (``messages``)."""

    note: str | None
    messages: list[dict[str, Any]] = field(default_factory=list)


# -- the memory screens (app/tui/memory_screens.py) ------------------------------------------------------


@dataclass
class CardsLoaded(Message):
    """The card browser's rows (widgets.card_browser.CardRow), a header note, and a card to select."""

    rows: list[Any]
    note: str | None = None
    select: tuple[str, str] | None = None


@dataclass
class PendingLoaded(Message):
    """The pending screen's state (widgets.pending.PendingState)."""

    state: Any


@dataclass
class MemoryFlash(Message):
    """An action's outcome, for the memory screen it came from (or the chat when it is closed)."""

    text: str
    error: bool = False
    where: str = "cards"  # "cards" | "pending"


@dataclass
class EditorOutcome(Message):
    """What a Ctrl+S in the card editor came to.

    ``status``: "saved" (``result`` is the memory.cards.CardResult), "invalid" (``errors`` by field,
    ``general``), or "conflict" (``disk``: the card on disk now as (CardDraft, sha256), or None
    when it is gone)."""

    editor: Any
    status: str
    result: Any = None
    errors: dict[str, str] = field(default_factory=dict)
    general: str | None = None
    disk: Any = None


@dataclass
class DismissAsk(Message):
    """A failed or orphaned job's turn text, read so the person sees it before dismissing."""

    job_id: str
    text: str
