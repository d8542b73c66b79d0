"""/resume's window: this workspace's sessions that have a prompt, newest first; it returns the
chosen session's id (None: cancelled)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import ModalScreen
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from memory.text.lines import one_line

if TYPE_CHECKING:
    from app.services.session import SessionInfo


class SessionPicker(ModalScreen[str | None]):
    """/resume: this workspace's sessions that have a prompt, newest first; Enter resumes, Esc cancels."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]
    AUTO_FOCUS = "#sessions"  # its own list, whatever the App focuses on its screens
    DEFAULT_CSS = """
    SessionPicker { align: center middle; }
    SessionPicker > OptionList {
        width: 90%; max-width: 110; height: auto; max-height: 80%; border: round $accent;
    }
    """

    def __init__(self, sessions: list[SessionInfo], current: str | None) -> None:
        super().__init__()
        self.sessions = sessions
        self.current = current

    def compose(self) -> ComposeResult:
        options = []
        for s in self.sessions:
            mark = " (current)" if s.id == self.current else ""
            title = one_line(s.title or "(untitled)", 70)
            options.append(
                Option(f"{s.updated[:16].replace('T', ' ')}  {s.turns:>3} turn(s)  {title}{mark}", id=s.id)
            )
        picker = OptionList(*options, id="sessions")
        picker.border_title = "Resume a session (Enter) · Esc cancels"
        yield picker

    @on(OptionList.OptionSelected)
    def _picked(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
