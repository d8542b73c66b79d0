"""How the chat says a size: a tool call's arguments while they stream in, a collapsed paste.

Sizes are ``memory.text.lines.format_bytes``'s one form ("48 B", "2.0 KiB", "195.3 KiB"), the
same in the chat, the completion notes, the tool errors and print mode.
"""

from __future__ import annotations

from memory.text.lines import format_bytes
from memory.text.terminal import line_count

__all__ = ["lines_label", "size_label"]


def size_label(n: int) -> str:
    """``n`` bytes as every face says a size: "48 B", "2.0 KiB", "1.5 MiB"."""
    return format_bytes(n)


def lines_label(text: str) -> str:
    """How long ``text`` is, as the permission dialog counts it: "1 line", "12 lines"."""
    lines = line_count(text)
    return f"{lines} line{'s' if lines != 1 else ''}"
