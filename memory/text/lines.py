"""Short texts for one line of a terminal: a value on one line, a size in bytes.

Every face (the app's widgets, print mode, the memory commands, the agent's tool messages) shows
model-, tool- or file-supplied values inside its own lines; one rule for all of them keeps a
hostile value from breaking a line or the terminal anywhere.
"""

from __future__ import annotations

from memory.text.terminal import strip_terminal

ELLIPSIS = "…"


def one_line(value: object, width: int | None = None) -> str:
    """``value`` as one line: terminal sequences and control characters removed, every run of
    whitespace (newlines included) one space, cut to ``width`` characters with "…" at the end."""
    text = " ".join(strip_terminal(str(value), keep_newlines=False).split())
    if width is not None and len(text) > width:
        return text[: max(width - 1, 0)] + ELLIPSIS
    return text


def format_bytes(n: int) -> str:
    """A size as people read it: "512 bytes", "3.4 KiB", "120 KiB", "1.5 MiB"."""
    if n < 1024:
        return f"{n} byte{'' if n == 1 else 's'}"
    size, unit = n / 1024, "KiB"
    for bigger in ("MiB", "GiB"):
        if size < 1024:
            break
        size, unit = size / 1024, bigger
    return f"{size:.1f} {unit}" if size < 10 else f"{size:,.0f} {unit}"
