"""The rewind view's first step: the session's turns, newest first, each with the files it
changed (+/- lines) and whether it ran ``bash``. Enter (or a click) picks one; Esc closes.

Picking changes nothing: what a rewind to before that turn would do is shown next (the plan
window), and only an answer there rewinds. Prompts and paths come from the model and the
workspace: every string is drawn as plain text on one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from memory.text.lines import one_line
from widgets.dialogs.frame import DIALOG_CSS
from widgets.rewind.state import BASH_NOTE, FileLine, TurnItem

__all__ = ["FILES_SHOWN", "RewindTurns", "file_line", "turn_prompt"]

FILES_SHOWN = 8  # files listed under a turn; the rest are counted
TITLE = "Rewind: pick a turn (Enter) · Esc closes"
HINT = (
    "The files and the conversation go back to before the turn you pick; the next window says "
    "what that does, and asks. Memory is never rewound."
)


def file_line(f: FileLine) -> Content:
    """``path  +3 −1`` (the counts left out when they could not be counted)."""
    parts: list[str | tuple[str, str]] = [one_line(f.path, 120)]
    if f.added is not None and f.removed is not None:
        parts += ["  ", (f"+{f.added}", "$text-success"), " ", (f"−{f.removed}", "$text-error")]
    return Content.assemble(*parts)


def turn_prompt(item: TurnItem) -> Content:
    """A turn's option: its number, time and prompt, then a line per file and the bash note."""
    head: list[str | tuple[str, str]] = [
        (f"{item.turn:>3}", "bold"),
        "  ",
        (item.when, "$foreground-muted"),
        "  ",
    ]
    text = one_line(item.text, 160) or "(no prompt)"
    head.append((text, "$text-accent") if item.kind == "rewind" else text)
    if item.note:
        head += ["  ", (f"({one_line(item.note, 80)})", "italic $foreground-muted")]
    lines = [Content.assemble(*head)]
    for f in item.files[:FILES_SHOWN]:
        lines.append(Content("       ") + file_line(f))
    rest = len(item.files) - FILES_SHOWN
    if rest > 0:
        lines.append(
            Content.styled(f"       … and {rest} more file{'s' if rest != 1 else ''}", "$foreground-muted")
        )
    if item.bash:
        lines.append(Content.styled(f"       {BASH_NOTE}", "$text-warning"))
    return Content("\n").join(lines)


class RewindTurns(ModalScreen[int | None]):
    """The turns (``items``, newest first); dismisses with the picked turn's number, or None."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "close", "Close")]
    AUTO_FOCUS = "#turns"
    DEFAULT_CSS = (
        "RewindTurns {"
        + DIALOG_CSS
        + """
        #turns {
            height: auto;
            max-height: 70vh;
            border: none;
            background: $background;
        }
    }"""
    )

    def __init__(self, items: Sequence[TurnItem]) -> None:
        super().__init__()
        self.items = tuple(items)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = Content(TITLE)
            yield Static(Content(HINT), id="summary")
            options = [Option(turn_prompt(item), id=str(item.turn)) for item in self.items]
            yield OptionList(*options, id="turns")

    @on(OptionList.OptionSelected, "#turns")
    def _picked(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(int(event.option.id or 0) or None)

    def action_close(self) -> None:
        self.dismiss(None)
