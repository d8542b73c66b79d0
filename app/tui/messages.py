"""The app's messages: what workers, the bridge and the flows tell the App and the chat screen.

Every message is a small ``@dataclass`` whose payload is frozen or owned by the receiver, so it
may be posted from any thread (``post_message`` is thread-safe in Textual). A ``ChatMessage`` is
the chat's: whoever posts it to the App, the App hands it to the chat screen (app.tui.chat), so
all that draws the chat comes through one queue in the order it was posted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from textual.message import Message

if TYPE_CHECKING:
    from app.agent.conversation.blocks import Message as ConversationMessage
    from app.agent.model.provider import Usage
    from app.agent.turn.events import RunEvent
    from memory.events import MemoryEvent
    from widgets.cards.card_list import CardRow, FilterAnswer
    from widgets.cards.draft import CardDraft
    from widgets.cards.editor import CardEditor
    from widgets.dialogs.trust_modal import TrustCard
    from widgets.panel.memory_panel import PanelState
    from widgets.pending.state import PendingState


class ChatMessage(Message):
    """A message the chat screen handles. ``shown``: the screen has handled it; one it lets
    bubble on (a turn's end, a session switch) is then the App's too."""

    shown = False


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

    cards: list[TrustCard]
    error: str | None = None


@dataclass
class RuntimeFailed(Message):
    """Building or opening the runtime failed; ``message`` is one line for the user."""

    message: str


@dataclass
class TurnEvent(ChatMessage):
    """One Runner event of the running turn (a frozen value)."""

    event: RunEvent


@dataclass
class SettingsChanged(Message):
    """The model or the memory mode was switched (``/model``, ``/mode``): the status line shows
    the new one."""


@dataclass
class TurnStarted(Message):
    """A turn is about to run (the chat screen says so; it bubbles on to the App): the panel notes
    the cards as they are at its start, to mark the ones its job writes as new."""


@dataclass
class TurnDone(ChatMessage):
    """The turn's worker ended (completed, failed, or cancelled): the prompt is free again."""

    status: str


@dataclass
class MemoryEventMessage(Message):
    """An event of the memory Manager (a frozen value)."""

    event: MemoryEvent


@dataclass
class StoresChangedMessage(Message):
    """A store folder changed from outside (an editor, ``git pull``)."""

    levels: tuple[str, ...] = ()


@dataclass
class PanelStateReady(Message):
    """A freshly computed side-panel state and the pending job count."""

    state: PanelState
    pending: int = 0


@dataclass
class MemoryUsage(ChatMessage):
    """A memory-model request's token usage (counted in the session's cost, which the chat's
    status line shows)."""

    model: str
    usage: Usage


@dataclass
class FilesLoaded(ChatMessage):
    """The workspace's file list for ``@path`` completion."""

    paths: list[str] = field(default_factory=list)


@dataclass
class HistoryLoaded(ChatMessage):
    """This workspace's prompt history, oldest first."""

    items: list[str] = field(default_factory=list)


@dataclass
class ChatNote(ChatMessage):
    """A one-line (or short) note for the chat pane from a worker (a command's outcome)."""

    text: str
    error: bool = False


@dataclass
class PromptBack(ChatMessage):
    """Text for the prompt, put before what is typed there meanwhile (a rewound turn's prompt)."""

    text: str


@dataclass
class PromptClosed(ChatMessage):
    """The prompt takes no more input; ``reason`` is what it says instead (``quitting…``)."""

    reason: str


@dataclass
class SessionSwitched(ChatMessage):
    """A new or resumed session is in place: the chat pane shows its history (``messages``)."""

    note: str | None
    messages: list[ConversationMessage] = field(default_factory=list)


# -- the memory screens ------------------------------------------------------------------------------


@dataclass
class CardsLoaded(Message):
    """The card browser's rows, a header note, and a card to select."""

    rows: list[CardRow]
    note: str | None = None
    select: tuple[str, str] | None = None


@dataclass
class SearchFound(Message):
    """The search index's answer for the card browser's filter text: per level the matching
    ``level/filename`` -> score, best first, None for a level it cannot search."""

    text: str
    keys: FilterAnswer


@dataclass
class PendingLoaded(Message):
    """The pending screen's state."""

    state: PendingState


@dataclass
class MemoryFlash(Message):
    """An action's outcome, for the memory screen it came from (or the chat when it is closed)."""

    text: str
    error: bool = False
    where: str = "cards"  # "cards" | "pending"


@dataclass
class EditorOutcome(Message):
    """What a Ctrl+S in the card editor came to.

    ``status``: "saved" (``result`` is the memory.store.cards.CardResult), "invalid" (``errors`` by field,
    ``general``), or "conflict" (``disk``: the card on disk now as (CardDraft, sha256), or None
    when it is gone)."""

    editor: CardEditor
    status: str
    result: Any = None  # a CardResult when "saved" (Any: the handler reads it only then)
    errors: dict[str, str] = field(default_factory=dict)
    general: str | None = None
    disk: tuple[CardDraft, str] | None = None


@dataclass
class DismissAsk(Message):
    """A failed or orphaned job's turn text, read so the person sees it before dismissing."""

    job_id: str
    text: str
