"""The base of the chat's plain-text blocks.

Model and tool text is hostile (a file or a web page can carry terminal escape sequences), so
every string shown passes ``strip_terminal`` first, and none is ever parsed as markup.
"""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

from memory.text.terminal import strip_terminal

__all__ = ["TextBlock"]


class TextBlock(Static):
    """A block of plain text: terminal sequences stripped, never parsed as markup; ``text`` keeps
    the original."""

    def __init__(self, text: str) -> None:
        self.text = text
        super().__init__(self.render_text(text))

    @staticmethod
    def render_text(text: str) -> Content:
        return Content(strip_terminal(text))
