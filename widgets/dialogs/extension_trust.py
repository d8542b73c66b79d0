"""The question before what a cloned project brings runs or reaches the model: its MCP servers,
custom commands, hooks and allow rules.

Keys are a contract: ``y`` trusts all that is listed, ``n`` or Esc is "not now" (asked again next
start). Each kind is shown with exactly what would be trusted (each server's command line or URL,
the hooks' commands, the rules), stripped of terminal escapes and bounded, in the order given
(the riskiest first), under a line that counts each kind: what is below the fold is still said on
the first screen. A listing taller than half the screen gets all the room the window has.
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
    tally: str = ""  # how many, said: "2 hooks"


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

    # The preview's border is the gap above and below it: on a small terminal every row is a
    # line of what would run.
    DEFAULT_CSS = (
        "ExtensionTrustModal {"
        + DIALOG_CSS
        + """
        #tally {
            text-style: bold;
        }
        #summary, #typed-ahead {
            margin: 0;
        }
        #preview {
            max-height: 50vh;
            &.-tall {
                height: 1fr;
                max-height: 100%;
            }
        }
    }"""
    )

    def __init__(self, kinds: Sequence[WaitingKind]) -> None:
        super().__init__()
        self.kinds = tuple(kinds)

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog") as dialog:
            dialog.border_title = Content("Trust what this project brings?")
            counts = Static(Content(" · ".join(k.tally for k in self.kinds if k.tally)), id="tally")
            counts.display = any(k.tally for k in self.kinds)
            yield counts
            yield Static(
                Content("None of it is used until you trust it; a change to it asks again."), id="summary"
            )
            with VerticalScroll(id="preview"):
                yield Static(self._listing(), id="listing")
            yield typed_ahead_line()
            with Horizontal(id="keys"):
                yield Button(Content("Trust and use them [y]"), id="trust", variant="warning", compact=True)
                yield Button(Content("Not now, ask next start [n/Esc]"), id="not-now", compact=True)

    def _listing(self) -> Content:
        # No blank line between kinds (each title stands out instead): a line more of each is
        # on the first screen of a small terminal.
        parts = [
            Content.assemble((f" {k.title} ", "bold reverse"), "\n", _bounded(k.shown)) for k in self.kinds
        ]
        return Content("\n").join(parts)

    def on_mount(self) -> None:
        self.query_one("#preview").focus()

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit)

    def _fit(self) -> None:
        """A listing taller than the half screen a preview gets takes all the room there is."""
        listing = self.query_one("#listing", Static)
        self.query_one("#preview").set_class(listing.outer_size.height > self.size.height // 2 - 2, "-tall")

    def action_choose(self, trusted: bool) -> None:
        self.dismiss(trusted)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "trust")
