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
    """A size in one short form everywhere: "48 B", "2.0 KiB", "195.3 KiB", "1.5 MiB" (one decimal
    past a KiB, so sizes side by side on one screen read alike)."""
    if n < 1024:
        return f"{n} B"
    size, unit = n / 1024, "KiB"
    for bigger in ("MiB", "GiB"):
        if size < 1024:
            break
        size, unit = size / 1024, bigger
    return f"{size:.1f} {unit}"
