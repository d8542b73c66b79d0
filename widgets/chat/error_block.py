"""An error in the chat: one readable line (401, 429, a refused connection …), never a traceback."""

from __future__ import annotations

from textual.content import Content

from memory.text.terminal import strip_terminal
from widgets.chat.text_block import TextBlock

__all__ = ["ErrorBlock"]


class ErrorBlock(TextBlock):
    """One readable error (401, 429, a refused connection …): never a traceback."""

    DEFAULT_CSS = """
    ErrorBlock {
        margin: 1 0 0 0;
        padding: 0 1;
        border-left: outer $error;
        background: $error 10%;
        color: $text-error;
    }
    """

    @staticmethod
    def render_text(text: str) -> Content:
        return Content.assemble(("✗ ", "bold"), strip_terminal(text))
