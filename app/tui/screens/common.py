"""What the memory screens (cards.py, external.py, pending.py) need of their controller, and the
constants they share with it: the controller (memory.py) opens the screens, so they know it only
as this Protocol and never import it back."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.app import App
    from textual.message import Message
    from textual.worker import Worker

    from app.services.bundle import Services
    from widgets.cards.card_list import CardRow
    from widgets.cards.draft import CardDraft

__all__ = ["FLASH_WIDTH", "MemoryControl", "OpensCards", "PostsMessages"]

FLASH_WIDTH = 300  # characters of an action's outcome line


class PostsMessages(Protocol):
    def post_message(self, message: Message) -> bool: ...


class OpensCards(Protocol):
    """Cards out in the person's own editor."""

    def open(self, row: CardRow) -> None: ...


class MemoryControl(Protocol):
    """The memory screens' controller as the screens use it (``memory.MemoryScreens`` is one)."""

    @property
    def app(self) -> App[Any]:
        """Where the workers run and the windows open (outliving any one screen)."""
        ...

    @property
    def services(self) -> Services: ...

    def post(self, message: Message) -> object:
        """A message for the chat (an outcome while no memory screen is open)."""
        ...

    @property
    def browser(self) -> PostsMessages | None:
        """The open card browser, if any."""
        ...

    @property
    def external(self) -> OpensCards: ...

    def run(
        self, work: Callable[..., Coroutine[Any, Any, None]], *args: Any, group: str, exclusive: bool = False
    ) -> Worker[Any]: ...

    def flash(self, text: object, *, error: bool = False, where: str = "cards") -> None: ...

    def say(self, text: str) -> None: ...

    def after_change(self, select: tuple[str, str] | None = None) -> None: ...

    def open_editor(
        self,
        draft: CardDraft,
        *,
        filename: str | None = None,
        sha256: str | None = None,
        resolving: CardRow | None = None,
    ) -> None: ...

    def undo(self) -> None: ...
