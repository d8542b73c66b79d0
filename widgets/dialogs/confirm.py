"""A yes/no question before something is lost (delete a card, dismiss a job, drop unsaved changes)."""

from __future__ import annotations

from typing import ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from memory.text.lines import one_line
from memory.text.terminal import strip_terminal
from widgets.dialogs.decision import DecisionGate, typed_ahead_line
from widgets.dialogs.frame import DIALOG_CSS, render_preview

__all__ = ["ConfirmModal"]


class ConfirmModal(DecisionGate, ModalScreen[bool]):
    """A yes/no question (delete a card, dismiss a job, drop unsaved changes): ``y`` confirms
    (True); ``n`` or Esc declines (False). ``body`` is shown in a scrolling preview first — what
    would be lost is seen before it goes (``kind`` as for :func:`render_preview`)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "choose(True)", "Yes"),
        Binding("n,escape", "choose(False)", "No"),
    ]

    DEFAULT_CSS = "ConfirmModal {" + DIALOG_CSS + "}"

    def __init__(
        self,
        title: str,
        summary: str,
        body: str | None = None,
        *,
        kind: Literal["diff", "text", "command"] = "text",
        yes: str = "Yes",
        no: str = "Cancel",
    ) -> None:
        super().__init__()
        self.title_text = title
        self.summary = summary
        self.body = body
        self.kind = kind
        self.yes = yes
        self.no = no

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = Content(one_line(self.title_text))
            yield Static(Content(strip_terminal(self.summary)), id="summary")
            if self.body is not None:
                with VerticalScroll(id="preview"):
                    yield Static(render_preview(self.body, self.kind), id="preview-text")
            yield typed_ahead_line()
            with Horizontal(id="keys"):
                yield Button(Content(f"{self.yes} [y]"), id="yes", variant="warning", compact=True)
                yield Button(Content(f"{self.no} [n/Esc]"), id="no", compact=True)

    def on_mount(self) -> None:
        if self.body is not None:
            self.query_one("#preview").focus()

    def action_choose(self, yes: bool) -> None:
        self.dismiss(yes)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")
