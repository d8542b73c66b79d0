"""The answer to a card edited in ``$EDITOR`` that cannot be applied: the problem in one line and
the person's text, with "edit again" (the same text, back in the editor) or "discard"."""

from __future__ import annotations

from typing import ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from widgets.cards.draft import as_typed
from widgets.dialogs.confirm import ConfirmModal
from widgets.dialogs.decision import DecisionGate, typed_ahead_line
from widgets.dialogs.frame import DIALOG_CSS, render_preview

__all__ = ["EDIT_PROBLEM_CHOICES", "EditProblemChoice", "EditProblemModal"]

# The person's answer: the editor again on the same text, or their text dropped.
EditProblemChoice = Literal["edit", "discard"]
EDIT_PROBLEM_CHOICES: tuple[EditProblemChoice, ...] = ("edit", "discard")


class EditProblemModal(DecisionGate, ModalScreen[EditProblemChoice]):
    """A card edited in ``$EDITOR`` was not applied (``problem``, one line); the card is as it
    was. Dismisses with "edit" (open the editor again on the same text) or "discard" (drop the
    person's text; Esc asks first). ``text`` is what the editor left, as far as it could be read."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("e", "choose('edit')", "Edit again"),
        Binding("d", "choose('discard')", "Discard"),
        Binding("escape", "ask_discard", "Discard"),
    ]

    # The dialogs' frame (widgets/dialogs/frame.py), with an error border and the person's text below.
    DEFAULT_CSS = (
        "EditProblemModal {"
        + DIALOG_CSS
        + """
        & > #dialog { border: round $error; }
        #problem { height: auto; color: $text-error; }
        #where { height: auto; color: $text-muted; margin: 0 0 1 0; }
        #edited {
            height: auto;
            max-height: 60vh;
            border: solid $foreground 20%;
            background: $background;
            padding: 0 1;
            scrollbar-size-vertical: 1;
            &:focus { border: solid $foreground 40%; }
        }
    }"""
    )

    def __init__(self, problem: str, text: str, *, where: str) -> None:
        super().__init__()
        self.problem = problem
        self.text = text
        self.where = where

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = Content("Your edit was not applied")
            yield Static(Content(as_typed(self.problem)), id="problem")
            yield Static(
                Content(f"{as_typed(self.where)} is unchanged · your text is kept until you discard it"),
                id="where",
            )
            shown = self.text if self.text.strip() else "(nothing could be read)"
            with VerticalScroll(id="edited"):
                yield Static(render_preview(shown, "text"), id="edited-text")
            yield typed_ahead_line()
            with Horizontal(id="keys"):
                yield Button(Content("Edit again [e]"), id="edit", variant="primary", compact=True)
                yield Button(Content("Discard [d]"), id="discard", compact=True)

    def on_mount(self) -> None:
        # The text, not a button, has the focus: Enter alone decides nothing.
        self.query_one("#edited").focus()

    def action_choose(self, choice: str) -> None:
        for known in EDIT_PROBLEM_CHOICES:
            if choice == known:
                self.dismiss(known)

    def action_ask_discard(self) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                self.dismiss("discard")

        self.app.push_screen(
            ConfirmModal(
                "Discard your edit?",
                "Your text is dropped; the card stays as it is.",
                yes="Discard",
                no="Keep it",
            ),
            answered,
        )

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose(event.button.id or "")
