"""A remark from the app in the chat (a command's answer, "cancelled", "resumed session …")."""

from __future__ import annotations

from widgets.chat.text_block import TextBlock

__all__ = ["NoteBlock"]


class NoteBlock(TextBlock):
    """A one-line remark from the app (a command's answer, "cancelled", "resumed session …")."""

    DEFAULT_CSS = """
    NoteBlock {
        margin: 1 0 0 0;
        padding: 0 1;
        color: $text-muted;
    }
    """
