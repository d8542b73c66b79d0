"""The question before a tool call runs: may it run once, for the session, or not at all.

Keys are a contract: ``1``/``y`` once, ``2``/``a`` for the session, ``3``/``n``/Esc deny. Enter
alone never allows anything (the preview has the focus, not a button), so a stray keypress cannot
approve a command. A denial may carry the person's reason for the model: Tab reaches a one-line
note box, Enter there denies with the note. What the model wrote is shown stripped of terminal
escapes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Static

from memory.text.lines import ELLIPSIS, one_line
from widgets.dialogs.decision import DecisionGate, typed_ahead_line
from widgets.dialogs.frame import DIALOG_CSS, render_preview

__all__ = ["NOTE_MAX_CHARS", "PermissionAnswer", "PermissionModal", "PermissionRequest", "clean_note"]

NOTE_MAX_CHARS = 300

Choice = Literal["once", "session", "deny"]
_CHOICES: tuple[Choice, ...] = ("once", "session", "deny")  # also the buttons' ids


@dataclass(frozen=True)
class PermissionRequest:
    call_id: str
    name: str
    summary: str
    preview: str
    preview_kind: Literal["diff", "text", "command"]


@dataclass(frozen=True)
class PermissionAnswer:
    """The person's answer; ``note``: why a call was denied (one clean line, maybe empty)."""

    choice: Choice
    note: str = ""


def clean_note(text: str, limit: int = NOTE_MAX_CHARS) -> str:
    """A typed or pasted note as the model may get it: one line (line breaks and whitespace runs
    become one space), no escape sequences or control, bidi or invisible characters, at most
    ``limit`` characters (a cut drops the spaces before its "…")."""
    line = one_line(text)
    return line if len(line) <= limit else line[: limit - 1].rstrip() + ELLIPSIS


class PermissionModal(DecisionGate, ModalScreen[PermissionAnswer]):
    """Dismisses with a ``PermissionAnswer``: "once", "session" or "deny" (``3``/``n``/Esc and
    the button deny without a note; Enter in the note box denies with what it holds)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("1,y", "choose('once')", "Allow once"),
        Binding("2,a", "choose('session')", "Allow for the session"),
        Binding("3,n,escape", "choose('deny')", "Deny"),
    ]

    DEFAULT_CSS = "PermissionModal {" + DIALOG_CSS + """
        #note {
            margin: 1 0 0 0;
            border: none;
            height: 1;
            padding: 0 1;
            background: $background;
            &:focus {
                background: $boost;
            }
        }
    }"""

    def __init__(self, request: PermissionRequest) -> None:
        super().__init__()
        self.request = request

    def compose(self) -> ComposeResult:
        request = self.request
        name = one_line(request.name)
        with Vertical(id="dialog") as dialog:
            dialog.border_title = Content(f"Allow {name}?")
            yield Static(Content(one_line(request.summary)), id="summary")
            with VerticalScroll(id="preview"):
                yield Static(render_preview(request.preview, request.preview_kind), id="preview-text")
            yield Input(
                placeholder="Tab: say why you deny it (optional), Enter: deny with that note",
                max_length=NOTE_MAX_CHARS,
                id="note",
                compact=True,
            )
            yield typed_ahead_line()
            with Horizontal(id="keys"):
                yield Button(Content("Allow once [1/y]"), id="once", variant="success", compact=True)
                yield Button(Content("Allow for this session [2/a]"), id="session", compact=True)
                yield Button(Content("Deny [3/n/Esc]"), id="deny", variant="error", compact=True)

    def on_mount(self) -> None:
        self.query_one("#preview").focus()

    def action_choose(self, choice: Choice) -> None:
        self.dismiss(PermissionAnswer(choice))

    @on(Input.Submitted, "#note")
    def _deny_with_note(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(PermissionAnswer("deny", clean_note(event.value)))

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        choice = next((c for c in _CHOICES if c == event.button.id), None)
        if choice is not None:
            self.dismiss(PermissionAnswer(choice))
