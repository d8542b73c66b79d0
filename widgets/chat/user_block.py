"""What the user sent, in the chat: plain text, large pastes collapsed to their placeholder, the
labels of the images that went with it."""

from __future__ import annotations

import re
from typing import ClassVar

from textual import events
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.reactive import reactive
from textual.widgets import Static

from memory.text.lines import one_line
from memory.text.terminal import strip_terminal
from widgets.chat.prompt import expand_pastes
from widgets.chat.text_block import TextBlock

__all__ = ["UserBlock"]


class UserBlock(TextBlock):
    """What the user sent, as plain text (never markup: ``[b]`` stays ``[b]``).

    ``text`` is the whole message as sent. A large paste shows as its placeholder (``pastes``:
    placeholder -> pasted text, as the prompt made them) until a click or Enter expands it;
    expanded, each paste shows at most ``EXPANDED_LINES`` lines. ``set_note`` puts a dim line
    under the message (queued until the model is connected, not sent, …)."""

    EXPANDED_LINES: ClassVar[int] = 1_000
    EXPANDED_CHARS: ClassVar[int] = 100_000

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "toggle_expanded", "Expand/collapse", show=False),
    ]

    DEFAULT_CSS = """
    UserBlock {
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: outer $primary;
        background: $primary 10%;
        color: $text;
        &.-note {
            border-left: outer $warning;
        }
        &:focus {
            background: $primary 25%;
        }
    }
    """

    expanded: reactive[bool] = reactive(False, init=False)

    def __init__(self, text: str, pastes: dict[str, str] | None = None) -> None:
        self.typed = text
        """The message as the prompt showed it (paste placeholders kept)."""
        self.pastes = {label: pasted for label, pasted in (pastes or {}).items() if label in text}
        self.note = ""
        self.images: list[str] = []
        """The labels of the images that went with it and are not in its words (``@shot.png``)."""
        self.text = expand_pastes(text, self.pastes)
        Static.__init__(self)  # the reactives exist from here on
        self.update(self._content())
        self.can_focus = bool(self.pastes)  # Enter expands: only a block with something to expand

    @property
    def shown_text(self) -> str:
        """The block as drawn now, plain text."""
        return self._content().plain

    def set_note(self, note: str | None) -> None:
        """A dim line under the message (None: none)."""
        self.note = note or ""
        self.set_class(bool(self.note), "-note")
        self.update(self._content())

    def set_images(self, labels: list[str]) -> None:
        """The labels of the images sent with the message (``[Image #1: shot.png 1280×720]``),
        a line each under its words."""
        self.images = [one_line(label, 200) for label in labels]
        self.update(self._content())

    def toggle(self) -> None:
        if self.pastes:
            self.expanded = not self.expanded

    def action_toggle_expanded(self) -> None:
        self.toggle()

    def on_click(self, event: events.Click) -> None:
        if self.pastes:
            event.stop()
            self.toggle()

    def watch_expanded(self, expanded: bool) -> None:
        self.update(self._content())

    def _content(self) -> Content:
        parts: list[str | tuple[str, str]] = []
        if not self.pastes:
            parts.append(strip_terminal(self.text))
        else:
            pattern = re.compile(
                "|".join(re.escape(label) for label in sorted(self.pastes, key=len, reverse=True))
            )
            at = 0
            for m in pattern.finditer(self.typed):
                parts.append(strip_terminal(self.typed[at : m.start()]))
                label = m.group(0)
                parts.append((label, "bold $accent"))
                if self.expanded:
                    parts.append("\n" + self._pasted_shown(self.pastes[label]))
                at = m.end()
            parts.append(strip_terminal(self.typed[at:]))
            hint = "collapse" if self.expanded else "show the pasted text"
            parts.append((f"\n(click or Enter: {hint})", "$foreground-muted italic"))
        for label in self.images:
            parts.append(("\n" + label, "bold $accent"))
        if self.note:
            parts.append((f"\n{one_line(self.note)}", "$text-warning italic"))
        return Content.assemble(*parts)

    def _pasted_shown(self, pasted: str) -> str:
        lines = strip_terminal(pasted).splitlines()
        head = "\n".join(lines[: self.EXPANDED_LINES])
        if len(lines) > self.EXPANDED_LINES or len(head) > self.EXPANDED_CHARS:
            return (
                head[: self.EXPANDED_CHARS]
                + f"\n… cut here: {len(lines):,} lines in all (the model got them all)"
            )
        return head
