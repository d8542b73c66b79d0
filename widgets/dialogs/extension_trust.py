"""The question before what a cloned project brings runs or reaches the model: its MCP servers,
custom commands, hooks and allow rules.

Keys are a contract: ``y`` trusts all that is listed, ``n`` or Esc is "not now" (asked again next
start). Each kind is shown with exactly what would be trusted (each server's command line or URL,
the hooks' commands, the rules), stripped of terminal escapes and bounded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from memory.text.terminal import strip_terminal
from widgets.dialogs.decision import DecisionGate, typed_ahead_line
from widgets.dialogs.frame import DIALOG_CSS

__all__ = ["SHOWN_LINES", "ExtensionTrustModal", "WaitingKind"]

SHOWN_LINES = 60  # per kind; the rest is counted
LINE_CHARS = 300


@dataclass(frozen=True)
class WaitingKind:
    """One kind of what waits: a title, and the text that is trusted, as it will be recorded."""

    title: str
    shown: str


def _bounded(text: str) -> str:
    lines = strip_terminal(text).expandtabs(4).splitlines()
    cut = [line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…" for line in lines[:SHOWN_LINES]]
    if len(lines) > SHOWN_LINES:
        cut.append(f"… {len(lines) - SHOWN_LINES} more line(s)")
    return "\n".join(cut)


class ExtensionTrustModal(DecisionGate, ModalScreen[bool]):
    """``y`` trusts every kind listed (True); ``n``/Esc is "not now" (False)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "choose(True)", "Trust"),
        Binding("n,escape", "choose(False)", "Not now"),
    ]

    DEFAULT_CSS = "ExtensionTrustModal {" + DIALOG_CSS + """
        #preview {
            max-height: 50vh;
        }
    }"""

    def __init__(self, kinds: Sequence[WaitingKind]) -> None:
        super().__init__()
        self.kinds = tuple(kinds)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = Content("Trust what this project brings?")
            yield Static(Content(
                "This repository configures what runs programs or reaches the model. Nothing of it is "
                "used until you trust it; a change to it asks again."), id="summary")
            with VerticalScroll(id="preview"):
                yield Static(self._listing(), id="listing")
            yield typed_ahead_line()
            with Horizontal(id="keys"):
                yield Button(Content("Trust and use them [y]"), id="trust", variant="warning", compact=True)
                yield Button(Content("Not now, ask next start [n/Esc]"), id="not-now", compact=True)

    def _listing(self) -> Content:
        parts = [Content.assemble((k.title, "bold"), "\n", _bounded(k.shown)) for k in self.kinds]
        return Content("\n\n").join(parts)

    def on_mount(self) -> None:
        self.query_one("#preview").focus()

    def action_choose(self, trusted: bool) -> None:
        self.dismiss(trusted)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "trust")
