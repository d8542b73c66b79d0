"""What the App's flows need of it, as Protocols: the App is the one host; a test can hand anything
that has these. The flows (start-up, the send queue, the trust question, quitting, sharing, the
grounding watch) import this module, never the App's, so the App composes them and nothing points
back at it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from app.tui.workers import RunsWorkers

if TYPE_CHECKING:
    from textual.message import Message
    from textual.timer import Timer
    from textual.worker_manager import WorkerManager

    from app.agent.config.settings import Settings
    from app.services.bundle import Services
    from app.tui.bridge import Bridge
    from app.tui.phase import Phase
    from app.tui.status_model import StatusModel
    from widgets.chat.log import ChatPane
    from widgets.chat.prompt import PromptInput
    from widgets.panel.memory_panel import MemoryPanel


class Host(RunsWorkers, Protocol):
    """The App as every flow sees it."""

    workspace: Path
    settings: Settings | None
    bridge: Bridge  # builds, opens and closes the runtime
    status_model: StatusModel
    phase: Phase

    @property
    def services(self) -> Services: ...

    @property
    def built(self) -> bool: ...

    @property
    def chat(self) -> ChatPane: ...

    @property
    def prompt(self) -> PromptInput: ...

    @property
    def panel(self) -> MemoryPanel: ...

    @property
    def workers(self) -> WorkerManager: ...

    def post_message(self, message: Message) -> bool: ...

    def call_later(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> bool: ...

    def set_timer(
        self,
        delay: float,
        callback: Callable[[], Any] | None = None,
        *,
        name: str | None = None,
        pause: bool = False,
    ) -> Timer: ...

    def set_interval(
        self,
        interval: float,
        callback: Callable[[], Any] | None = None,
        *,
        name: str | None = None,
        repeat: int = 0,
        pause: bool = False,
    ) -> Timer: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: Any = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...

    def exit(self, result: Any = None, return_code: int = 0, message: Any = None) -> None: ...

    def refresh_panel(self) -> None:
        """Read the side panel's state again (a worker; the panel shows it when it comes)."""

    def refresh_screens(self) -> None:
        """The memory screens that are open read again what they show."""
