"""The model's thinking in the chat, collapsed to one line: "Thinking…" while it streams, then
"Thought for 4 s" ("Thought" for a resumed session's, whose time is not known; "Thinking
(redacted)" for a block the API sent encrypted). Enter (when focused) or a click expands it, its
text dimmed, and collapses it again; the chat screen's Ctrl+O does it for every block.

The thinking is model output: terminal sequences stripped, never parsed as markup, and an
expanded block shows at most ``EXPANDED_CHARS`` of it (the model keeps it all)."""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Static

from memory.text.terminal import strip_terminal

__all__ = ["ThinkingBlock", "thought_for"]

# While it streams expanded, its text is drawn again at most this often (seconds): a long thinking
# drawn whole on every chunk would cost more than the chunks.
REDRAW_S = 0.1


def thought_for(seconds: float | None) -> str:
    """The collapsed line of a finished thinking block (``seconds``: None when not known)."""
    if seconds is None:
        return "Thought"
    return f"Thought for {max(1, round(seconds))} s"


class ThinkingBlock(Static):
    """One thinking block of a response. ``text`` keeps its text as the model sent it."""

    EXPANDED_CHARS: ClassVar[int] = 100_000

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "toggle_expanded", "Expand/collapse", show=False),
    ]

    DEFAULT_CSS = """
    ThinkingBlock {
        margin: 1 0 0 0;
        padding: 0 1;
        color: $text-muted;
        &:focus {
            background: $boost;
        }
    }
    """

    expanded: reactive[bool] = reactive(False, init=False)

    def __init__(
        self, text: str = "", *, redacted: bool = False, streaming: bool = True, expanded: bool = False
    ) -> None:
        self.text = text
        self.redacted = redacted
        self.streaming = streaming and not redacted
        self.seconds: float | None = None
        self._redraw: Timer | None = None
        super().__init__()
        self.can_focus = True
        self.set_reactive(ThinkingBlock.expanded, expanded)
        self.update(self._content())

    @property
    def label(self) -> str:
        """The collapsed line, as drawn."""
        if self.redacted:
            return "Thinking (redacted)"
        return "Thinking…" if self.streaming else thought_for(self.seconds)

    @property
    def shown_text(self) -> str:
        """The block as drawn now, plain text."""
        return self._content().plain

    def append(self, text: str) -> None:
        """More of the streaming thinking (drawn when expanded, at most every ``REDRAW_S``)."""
        self.text += text
        if self.expanded and self._redraw is None and self.is_mounted:
            self._redraw = self.set_timer(REDRAW_S, self._redrawn)

    def finish(self, seconds: float | None) -> None:
        """The thinking ended after ``seconds``."""
        self.streaming, self.seconds = False, seconds
        self.update(self._content())

    def toggle(self) -> None:
        self.expanded = not self.expanded

    def action_toggle_expanded(self) -> None:
        self.toggle()

    def on_click(self, event: events.Click) -> None:
        event.stop()
        self.toggle()

    def watch_expanded(self, expanded: bool) -> None:
        self.update(self._content())

    def _redrawn(self) -> None:
        self._redraw = None
        self.update(self._content())

    def _content(self) -> Content:
        arrow = "▾" if self.expanded else "▸"
        parts: list[str | tuple[str, str]] = [(f"{arrow} {self.label}", "italic")]
        if not self.expanded:
            if self.text.strip():
                parts.append((" · Ctrl+O shows it", "$foreground-muted"))
            return Content.assemble(*parts)
        shown = strip_terminal(self.text).strip()
        if len(shown) > self.EXPANDED_CHARS:
            shown = shown[: self.EXPANDED_CHARS] + f"\n… cut here: {len(shown):,} characters in all"
        if shown:
            parts.append(("\n" + shown, "dim"))
        elif not self.redacted and not self.streaming:
            parts.append(("\n(the model sent no text of its thinking)", "dim italic"))
        return Content.assemble(*parts)
