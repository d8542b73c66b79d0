"""The conflict view: the card changed on disk since the editor read it; both versions side by
side (stacked on a narrow screen), the body's changes as a diff, and the person's choice."""

from __future__ import annotations

import difflib
from typing import ClassVar, Literal

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import Button, Static

from memory.text.terminal import strip_terminal
from widgets.cards.draft import FIELDS, CardDraft, as_typed
from widgets.cards.editor import WIDE
from widgets.dialogs.decision import DecisionGate, typed_ahead_line
from widgets.dialogs.frame import render_preview

__all__ = ["CONFLICT_CHOICES", "ConflictChoice", "ConflictModal"]

# The person's answer: keep their version, take the disk's, or back to editing.
ConflictChoice = Literal["mine", "disk", "cancel"]
CONFLICT_CHOICES: tuple[ConflictChoice, ...] = ("mine", "disk", "cancel")


def _version(draft: CardDraft) -> Content:
    """One version of the card, every field labelled, as plain (sanitized) text."""
    muted = "$text-muted"
    parts: list[str | tuple[str, str]] = []
    for label, value in (
        ("title   ", draft.title),
        ("summary ", draft.summary),
        ("type    ", draft.type or "(none)"),
        ("level   ", draft.level),
    ):
        parts += [(label, muted), (as_typed(value), "bold" if label.startswith("title") else ""), "\n"]
    parts.append(("body", muted))
    parts.append("\n" + strip_terminal(draft.body).expandtabs(4))
    return Content.assemble(*parts)


def _differing(mine: CardDraft, disk: CardDraft) -> list[str]:
    return [name for name in FIELDS if getattr(mine, name) != getattr(disk, name)]


class ConflictModal(DecisionGate, ModalScreen[ConflictChoice]):
    """The card changed on disk since the editor read it: dismisses with "mine" (keep yours,
    overwrite), "disk" (take the disk's, or leave it deleted) or "cancel" (back to editing)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("k", "choose('mine')", "Keep yours"),
        Binding("t", "choose('disk')", "Take the disk's"),
        Binding("c,escape", "choose('cancel')", "Cancel"),
    ]

    # Textual declares it on Screen as a plain attribute, not a ClassVar (mypy), yet it is one.
    HORIZONTAL_BREAKPOINTS: list[tuple[int, str]] | None = [(0, "-narrow"), (WIDE, "-wide")]  # noqa: RUF012

    DEFAULT_CSS = """
    ConflictModal {
        align: center middle;
        background: $background 60%;
        & > #dialog {
            width: 96%;
            max-width: 180;
            height: 96%;
            padding: 0 1;
            border: round $warning;
            background: $surface;
        }
        #conflict-title { height: auto; }
        #where, #differs {
            height: auto;
            color: $text-muted;
        }
        #panes {
            height: 1fr;
            layout: vertical;
        }
        &.-wide #panes { layout: horizontal; }
        .pane {
            height: 1fr;
            min-height: 3;
            border: round $foreground 25%;
            border-title-color: $text;
            border-title-style: bold;
            padding: 0 1;
            background: $background;
            scrollbar-size-vertical: 1;
            &:focus { border: round $foreground 50%; }
        }
        &.-wide #panes > .pane { width: 1fr; }
        /* Narrow: three stacked panes need every line, so only a top rule carries the title. */
        &.-narrow .pane {
            border: none;
            border-top: solid $foreground 25%;
            &:focus { border: none; border-top: solid $foreground 60%; }
        }
        #diff {
            height: auto;
            max-height: 40%;
        }
        #keys { height: 1; }
        #keys > Button { margin: 0 2 0 0; }
    }
    """

    def __init__(self, mine: CardDraft, disk: CardDraft | None, *, where: str) -> None:
        super().__init__()
        self.mine = mine
        self.disk = disk
        self.where = where

    def compose(self) -> ComposeResult:
        mine, disk = self.mine, self.disk
        with Vertical(id="dialog"):
            yield Static(
                Content.styled("This card changed on disk since you opened it", "bold"), id="conflict-title"
            )
            yield Static(Content(as_typed(self.where)), id="where")
            if disk is not None:
                differs = _differing(mine, disk)
                what = ", ".join(differs) if differs else "nothing (the same text was saved)"
                yield Static(Content(f"Different: {what}"), id="differs")
            with Horizontal(id="panes"):
                yield self._pane("mine-pane", "Yours", Static(_version(mine), id="mine-text"))
                if disk is None:
                    gone = Content.styled("deleted on disk since you opened it", "$text-warning italic")
                    yield self._pane("disk-pane", "On disk", Static(gone, id="disk-text"))
                else:
                    yield self._pane("disk-pane", "On disk", Static(_version(disk), id="disk-text"))
            if disk is not None and disk.body != mine.body:
                diff = "\n".join(
                    difflib.unified_diff(
                        disk.body.splitlines(), mine.body.splitlines(), "on disk", "yours", lineterm=""
                    )
                )
                yield self._pane(
                    "diff", "Body changes (on disk → yours)", Static(render_preview(diff, "diff"))
                )
            yield typed_ahead_line()
            with Horizontal(id="keys"):
                yield Button(Content("Keep yours [k]"), id="mine", variant="warning", compact=True)
                take = "Drop yours (keep it deleted) [t]" if disk is None else "Take the disk's [t]"
                yield Button(Content(take), id="disk", compact=True)
                yield Button(Content("Cancel [c/Esc]"), id="cancel", compact=True)

    @staticmethod
    def _pane(pane_id: str, title: str, content: Widget) -> VerticalScroll:
        pane = VerticalScroll(content, id=pane_id, classes="pane")
        pane.border_title = Content(title)
        return pane

    def on_mount(self) -> None:
        # A pane, not a button, has the focus: Enter alone decides nothing.
        self.query_one("#mine-pane").focus()

    def action_choose(self, choice: str) -> None:
        for known in CONFLICT_CHOICES:
            if choice == known:
                self.dismiss(known)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_choose(event.button.id or "")
