"""What the memory screens' controller needs of the App, as a Protocol: the runtime's feature
services, the chat (for outcomes when no screen is open) and Textual's screen, worker and
message calls. The App is one; a test can pass anything that has these."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol

from app.tui.workers import RunsWorkers

if TYPE_CHECKING:
    from textual.message import Message
    from textual.screen import Screen

    from app.services.bundle import Services
    from widgets.chat.log import ChatPane


class ScreensHost(RunsWorkers, Protocol):
    @property
    def services(self) -> Services: ...

    @property
    def chat(self) -> ChatPane: ...

    @property
    def is_headless(self) -> bool: ...

    def push_screen(self, screen: Screen[Any], callback: Callable[[Any], None] | None = None) -> Any: ...

    def post_message(self, message: Message) -> bool: ...

    def call_later(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> bool: ...

    def suspend(self) -> AbstractContextManager[None]: ...
