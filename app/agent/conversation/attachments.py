"""``@path`` in a prompt: the file attached to the message (bounded, inside the workspace, text
only), for the app's prompt, a custom command's text and print mode alike. Each attached file is
a text block of its own after the person's words (``<attached-file path="...">…</attached-file>``)."""

from __future__ import annotations

import asyncio
import os
import re
import stat
from pathlib import Path

from app.agent.conversation.blocks import Prompt, TextBlock
from memory.text.lines import format_bytes, one_line
from memory.text.terminal import strip_terminal

__all__ = ["attach", "with_attachments"]

BINARY_SNIFF = 8192
_ATTACH_RE = re.compile(r"(?<!\S)@(\S+)")


def attach(workspace: Path, rel: str, max_bytes: int = 100_000) -> tuple[str, str | None]:
    """The text block that carries the file ``rel`` in a message, and a one-line note for the
    user when the file was cut or refused (refused: the block is "").

    Refused: a path outside the workspace (also through a symlink), not a regular file, not
    UTF-8 text (binary), unreadable. A longer file is cut at a line boundary before ``max_bytes``.
    """
    shown = strip_terminal(rel, keep_newlines=False)
    root = os.path.realpath(workspace)
    if not rel or "\0" in rel:
        return "", f"@{shown}: not a file name"
    target = os.path.realpath(os.path.join(root, rel))
    if os.path.commonpath([root, target]) != root:
        return "", f"@{shown}: outside the workspace, not attached"
    try:
        # O_NONBLOCK: a FIFO must not hang the worker; O_NOFOLLOW: the resolved path is final.
        fd = os.open(target, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError as e:
        return "", f"@{shown}: cannot read ({e.strerror or e})"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return "", f"@{shown}: not a regular file, not attached"
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(max_bytes + 1)
    except OSError as e:
        return "", f"@{shown}: cannot read ({e.strerror or e})"
    finally:
        os.close(fd)
    if b"\0" in data[:BINARY_SNIFF]:
        return "", f"@{shown}: a binary file, not attached"
    cut = len(data) > max_bytes
    if cut:
        data = data[:max_bytes]
        nl = data.rfind(b"\n")
        if nl > 0:
            data = data[: nl + 1]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        if not cut or e.start < len(data) - 3:
            return "", f"@{shown}: not UTF-8 text, not attached"
        text = data[: e.start].decode("utf-8")  # a character split by the cut
    # An attribute value: a quote in a file name must not end it.
    rel_posix = Path(os.path.relpath(target, root)).as_posix().replace('"', "%22")
    note = None
    head = f'<attached-file path="{rel_posix}">'
    if cut:
        size = format_bytes(st.st_size)
        note = f"@{shown}: attached the first {format_bytes(len(text.encode('utf-8')))} of {size}"
        kept = len(text.encode("utf-8"))
        head = f'<attached-file path="{rel_posix}" cut="first {kept} of {st.st_size} bytes">'
    if not text.endswith("\n"):
        text += "\n"
    return f"{head}\n{text}</attached-file>", note


async def with_attachments(text: str, workspace: Path, files: frozenset[str]) -> tuple[Prompt, list[str]]:
    """The prompt of ``text``: its words, then a block for each ``@path`` file (bounded), and notes
    for the user. ``files``: the workspace's files as listed (empty: not listed yet, every path is
    tried)."""
    wanted: list[str] = []
    for raw in _ATTACH_RE.findall(text):
        rel = raw.rstrip(".,;:!?)")
        if rel and rel not in wanted and (rel in files or not files):
            wanted.append(rel)
    blocks, notes = [TextBlock(text=text)], []
    for rel in wanted:
        try:
            block, note = await asyncio.to_thread(attach, workspace, rel)
        except Exception as e:
            notes.append(f"@{rel}: not attached ({one_line(e, 200)})")
            continue
        if block:
            blocks.append(TextBlock(text=block))
        if note:
            notes.append(note)
    return Prompt(blocks=list(blocks)), notes
