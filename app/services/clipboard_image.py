"""The image on the system clipboard (Ctrl+V in the app), read with the desktop's own tools.

A terminal gives a program the text it pastes (a bracketed paste), never an image: the image is
asked of the clipboard directly, with whichever of these tools is installed, in this order:

- ``wl-paste`` (Wayland, wl-clipboard): ``--list-types``, then ``--type image/png`` (or the
  first ``image/`` type it offers);
- ``xclip`` (X11): ``-selection clipboard -t TARGETS -o``, then ``-t image/png -o``;
- ``osascript`` (macOS): the clipboard as «class PNGf», written to a private temporary file.

Each tool that fails (no display, no image) hands on to the next. The whole look is bounded in
time (:data:`TIMEOUT_S`) and the image in size (the images' 50 MB limit): a tool that hangs or
pours out more is killed. Anything else is a :class:`ClipboardError` with one line saying
what was looked for. The bytes are returned as the tool gave them; ``conversation.images``
decodes and scales them.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from app.agent.conversation.images import MAX_FILE_BYTES
from memory.text.lines import format_bytes

__all__ = ["TIMEOUT_S", "TOOLS", "ClipboardError", "clipboard_image"]

TIMEOUT_S = 4.0  # for the whole look, every tool included
TOOLS = ("wl-paste", "xclip", "osascript")
_CHUNK = 1 << 16
_REAP_S = 1.0

# The clipboard as PNG, written to the file named by the first argument; fails (exit 1) when
# the clipboard holds no image.
_OSASCRIPT = """on run argv
set png to (the clipboard as «class PNGf»)
set fh to open for access (POSIX file (item 1 of argv)) with write permission
write png to fh
close access fh
end run"""


class ClipboardError(Exception):
    """No image could be read from the clipboard, said in one line."""


class _Over(Exception):
    """A tool gave more than the limit."""


def _choose(types: bytes) -> str | None:
    """The image type to ask for among the ones the clipboard offers (PNG first)."""
    offered = [t.strip() for t in types.decode("utf-8", "replace").splitlines() if t.strip()]
    if "image/png" in offered:
        return "image/png"
    return next((t for t in offered if t.startswith("image/") and t.isprintable()), None)


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


async def _read_bounded(stream: asyncio.StreamReader | None, limit: int) -> bytes:
    if stream is None:
        return b""
    out = bytearray()
    while chunk := await stream.read(_CHUNK):
        out += chunk
        if len(out) > limit:
            raise _Over
    return bytes(out)


class _Look:
    """One Ctrl+V's look at the clipboard: its deadline and its size bound."""

    def __init__(self, timeout: float, limit: int) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + timeout
        self.limit = limit

    async def run(self, *argv: str) -> bytes | None:
        """The command's output; None when it fails (cannot start, exits non-zero)."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise ClipboardError(self.late_line(argv[0]))
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
                start_new_session=True,  # its group is killed whole on a timeout
            )
        except OSError:
            return None
        try:
            data = await asyncio.wait_for(_read_bounded(proc.stdout, self.limit), remaining)
            code = await asyncio.wait_for(proc.wait(), max(0.05, self.deadline - time.monotonic()))
        except TimeoutError:
            raise ClipboardError(self.late_line(argv[0])) from None
        except _Over:
            raise ClipboardError(self.over_line(argv[0])) from None
        finally:
            _kill(proc)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(proc.wait(), _REAP_S)
        return data if code == 0 else None

    def late_line(self, tool: str) -> str:
        return f"Ctrl+V: {Path(tool).name} did not answer within {self.timeout:g} s; nothing was pasted"

    def over_line(self, tool: str) -> str:
        limit = format_bytes(self.limit)
        return f"Ctrl+V: the clipboard's image (from {Path(tool).name}) is over the {limit} image limit"


async def _wl_paste(look: _Look, exe: str) -> bytes | None:
    types = await look.run(exe, "--list-types")
    kind = _choose(types) if types is not None else None
    if kind is None:
        return None
    return await look.run(exe, "--no-newline", "--type", kind)


async def _xclip(look: _Look, exe: str) -> bytes | None:
    types = await look.run(exe, "-selection", "clipboard", "-t", "TARGETS", "-o")
    kind = _choose(types) if types is not None else None
    if kind is None:
        return None
    return await look.run(exe, "-selection", "clipboard", "-t", kind, "-o")


async def _osascript(look: _Look, exe: str) -> bytes | None:
    with tempfile.TemporaryDirectory(prefix="pseudoclaude-clip-") as folder:
        target = os.path.join(folder, "clipboard.png")
        if await look.run(exe, "-e", _OSASCRIPT, target) is None:
            return None
        try:
            size = os.path.getsize(target)
            if size > look.limit:
                raise ClipboardError(look.over_line(exe))
            return await asyncio.to_thread(Path(target).read_bytes)
        except OSError:
            return None


_READERS: dict[str, Callable[[_Look, str], Awaitable[bytes | None]]] = {
    "wl-paste": _wl_paste,
    "xclip": _xclip,
    "osascript": _osascript,
}


async def clipboard_image(
    *, path: str | None = None, timeout: float = TIMEOUT_S, limit: int = MAX_FILE_BYTES
) -> bytes:
    """The image the clipboard holds, as the first tool that has one gave it (``path``: where
    the tools are looked for, default ``$PATH``); ClipboardError (one line) when no tool is
    installed, none has an image, or the look took longer than ``timeout`` seconds."""
    found = [(tool, exe) for tool in TOOLS if (exe := shutil.which(tool, path=path)) is not None]
    if not found:
        raise ClipboardError(
            f"Ctrl+V: no clipboard tool found (looked for {', '.join(TOOLS)}): install wl-clipboard "
            "(Wayland) or xclip (X11) to paste an image"
        )
    look = _Look(timeout, limit)
    for tool, exe in found:
        data = await _READERS[tool](look, exe)
        if data:
            return data
    names = ", ".join(tool for tool, _ in found)
    raise ClipboardError(f"Ctrl+V: the clipboard holds no image (looked with {names})")
