"""How the chat says a size: a tool call's arguments while they stream in, a collapsed paste.

The chat's own short form ("48 B", "2.0 KiB", "195.3 KiB": always one decimal past a KiB) rather
than ``memory.text.lines.format_bytes``: it is what the tool blocks and paste placeholders have
always shown, on screens people compare.
"""

from __future__ import annotations

from memory.text.terminal import line_count

__all__ = ["lines_label", "size_label"]


def size_label(n: int) -> str:
    """``n`` bytes in the chat's short form: "48 B", "2.0 KiB", "1.5 MiB"."""
    if n < 1024:
        return f"{n} B"
    size = n / 1024
    for unit in ("KiB", "MiB"):
        if size < 1024:
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def lines_label(text: str) -> str:
    """How long ``text`` is, as the permission dialog counts it: "1 line", "12 lines"."""
    lines = line_count(text)
    return f"{lines} line{'s' if lines != 1 else ''}"
