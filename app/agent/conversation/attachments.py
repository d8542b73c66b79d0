"""``@path`` in a prompt: the file attached to the message (bounded, inside the workspace), for
the app's prompt, a custom command's text and print mode alike. A text file is a text block of
its own after the person's words (``<attached-file path="...">…</attached-file>``); an image
(``@shot.png``: png, jpg/jpeg, gif, webp) is its label and the image (``[Image #1: shot.png
1280×720]``), numbered in the prompt's order after the images pasted into it.

Files are read off the event loop (aiofiles; an image is then decoded and scaled in a thread).
A text file that cannot be attached is a note and the prompt goes without it; an image that
cannot be sent (not a readable image, over 50 MB) refuses the whole prompt with one line
(:class:`ImageError`): the person meant the model to see it, and a prompt without it would be
paid for and answered about nothing.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import stat
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import unquote, urlsplit

from app.agent.conversation.blocks import ImageBlock, Prompt, TextBlock
from app.agent.conversation.images import (
    MAX_FILE_BYTES,
    ImageError,
    Picture,
    is_image_name,
    labelled_blocks,
    prepare_image,
)
from memory.text.lines import format_bytes, one_line
from memory.text.terminal import strip_terminal

__all__ = [
    "attach",
    "attach_image",
    "label_number",
    "pasted_image_paths",
    "read_image",
    "with_attachments",
]

BINARY_SNIFF = 8192
_ATTACH_RE = re.compile(r"(?<!\S)@(\S+)")
_LABEL_NUMBER = re.compile(r"\[Image #(\d+): ")


class _NotRegular(OSError):
    """Opened, but not a regular file (a folder, a FIFO, a device): nothing is read from it."""


class _TooLarge(OSError):
    def __init__(self, size: int) -> None:
        super().__init__(f"{size} bytes")
        self.size = size


def _regular_opener(seen: list[os.stat_result], limit: int | None = None) -> Callable[[str, int], int]:
    """An ``opener`` for ``open`` (it runs in aiofiles' worker thread): the file is refused
    before anything is read from it unless it is a regular file of at most ``limit`` bytes; its
    stat goes to ``seen``."""

    def opener(path: str, flags: int) -> int:
        # O_NONBLOCK: a FIFO must not hang the worker; O_NOFOLLOW: the resolved path is final.
        fd = os.open(path, flags | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise _NotRegular("not a regular file")
            if limit is not None and st.st_size > limit:
                raise _TooLarge(st.st_size)
        except BaseException:
            os.close(fd)
            raise
        seen.append(st)
        return fd

    return opener


async def _read(path: str, max_bytes: int, limit: int | None = None) -> tuple[bytes, int]:
    """At most ``max_bytes`` (+1, to tell a longer file) of the regular file at ``path``, and its
    size; OSError (``_NotRegular``, ``_TooLarge``) when it cannot be read."""
    # aiofiles only when a file is attached: no part of the app's first frame.
    import aiofiles

    seen: list[os.stat_result] = []
    async with aiofiles.open(path, "rb", opener=_regular_opener(seen, limit)) as f:
        data = await f.read(max_bytes + 1)
    return data, seen[0].st_size


def _inside(workspace: Path, rel: str) -> str | None:
    """``rel`` resolved inside the workspace (symlinks followed); None when it leads outside."""
    root = os.path.realpath(workspace)
    target = os.path.realpath(os.path.join(root, rel))
    return target if os.path.commonpath([root, target]) == root else None


async def attach(workspace: Path, rel: str, max_bytes: int = 100_000) -> tuple[str, str | None]:
    """The text block that carries the file ``rel`` in a message, and a one-line note for the
    user when the file was cut or refused (refused: the block is "").

    Refused: a path outside the workspace (also through a symlink), not a regular file, not
    UTF-8 text (binary), unreadable. A longer file is cut at a line boundary before ``max_bytes``.
    """
    shown = strip_terminal(rel, keep_newlines=False)
    if not rel or "\0" in rel:
        return "", f"@{shown}: not a file name"
    target = await asyncio.to_thread(_inside, workspace, rel)
    if target is None:
        return "", f"@{shown}: outside the workspace, not attached"
    try:
        data, size = await _read(target, max_bytes)
    except _NotRegular:
        return "", f"@{shown}: not a regular file, not attached"
    except OSError as e:
        return "", f"@{shown}: cannot read ({e.strerror or e})"
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
    root = os.path.realpath(workspace)
    # An attribute value: a quote in a file name must not end it.
    rel_posix = Path(os.path.relpath(target, root)).as_posix().replace('"', "%22")
    note = None
    head = f'<attached-file path="{rel_posix}">'
    if cut:
        kept = len(text.encode("utf-8"))
        note = f"@{shown}: attached the first {format_bytes(kept)} of {format_bytes(size)}"
        head = f'<attached-file path="{rel_posix}" cut="first {kept} of {size} bytes">'
    if not text.endswith("\n"):
        text += "\n"
    return f"{head}\n{text}</attached-file>", note


async def read_image(path: str | Path, name: str) -> Picture:
    """The image file at ``path`` (a symlink on the way is followed; its last step, once
    resolved, is not), prepared for the model and shown as ``name``; ImageError with one line
    when it is not a regular file, is over 50 MB (said before it is read) or is not a readable
    image."""
    shown = strip_terminal(name, keep_newlines=False)[:200] or "image"
    real = await asyncio.to_thread(os.path.realpath, os.fspath(path))
    try:
        data, _ = await _read(real, MAX_FILE_BYTES, limit=MAX_FILE_BYTES)
    except _NotRegular:
        raise ImageError(f"{shown}: not a regular file") from None
    except _TooLarge as e:
        over = f"{format_bytes(e.size)} is over the {format_bytes(MAX_FILE_BYTES)} image limit"
        raise ImageError(f"{shown}: {over}") from None
    except OSError as e:
        raise ImageError(f"{shown}: cannot read ({e.strerror or e})") from None
    return await asyncio.to_thread(prepare_image, data, name)


async def attach_image(workspace: Path, rel: str) -> Picture:
    """The image ``@rel`` names, inside the workspace as a text attachment is; ImageError with
    one line (``@rel: …``) when it cannot be sent."""
    shown = strip_terminal(rel, keep_newlines=False)
    if not rel or "\0" in rel:
        raise ImageError(f"@{shown}: not a file name")
    target = await asyncio.to_thread(_inside, workspace, rel)
    if target is None:
        raise ImageError(f"@{shown}: outside the workspace, not attached")
    try:
        return await read_image(target, rel)
    except ImageError as e:
        raise ImageError(f"@{e}") from None


def label_number(label: str) -> int:
    """The number of an image's label (``[Image #3: …]`` is 3; 0 for any other text)."""
    m = _LABEL_NUMBER.match(label)
    return int(m.group(1)) if m else 0


def _pasted_in(text: str, pasted: Mapping[str, Picture]) -> list[tuple[str, Picture]]:
    """The pasted images whose labels are in ``text``, in the order they appear there."""
    found = [(text.find(label), label, pic) for label, pic in pasted.items() if label in text]
    return [(label, pic) for _, label, pic in sorted(found, key=lambda f: f[0])]


async def _wanted(text: str, workspace: Path, files: frozenset[str]) -> list[str]:
    """The ``@path`` words of ``text`` to attach, in order: a listed file (every path while
    nothing is listed), and an image that exists though the listing leaves it out (ignored)."""
    wanted: list[str] = []
    for raw in _ATTACH_RE.findall(text):
        rel = raw.rstrip(".,;:!?)")
        if not rel or rel in wanted:
            continue
        if rel in files or not files:
            wanted.append(rel)
        elif is_image_name(rel) and await asyncio.to_thread(os.path.lexists, workspace / rel):
            wanted.append(rel)
    return wanted


async def with_attachments(
    text: str,
    workspace: Path,
    files: frozenset[str],
    *,
    pasted: Mapping[str, Picture] | None = None,
    extra: Sequence[Picture] = (),
) -> tuple[Prompt, list[str]]:
    """The prompt of ``text``: its words, then the images pasted into it (``pasted``: label ->
    image, those whose label is in the words), then a block for each ``@path`` file (bounded),
    then ``extra`` images (print mode's ``--image``); and notes for the user (a file cut or
    refused, an image scaled). ``files``: the workspace's files as listed (empty: not listed
    yet, every path is tried). ImageError (one line): an image named that cannot be sent, and
    nothing is to be sent."""
    blocks: list[TextBlock | ImageBlock] = [TextBlock(text=text)]
    notes: list[str] = []
    shown = _pasted_in(text, pasted or {})
    number = max((label_number(label) for label, _ in shown), default=0)
    for label, pic in shown:
        blocks += [TextBlock(text=label), pic.block()]
    for rel in await _wanted(text, workspace, files):
        if is_image_name(rel):
            number += 1
            blocks += _labelled(await _attach_image_once(workspace, rel), number, notes)
            continue
        try:
            block, note = await attach(workspace, rel)
        except Exception as e:
            notes.append(f"@{rel}: not attached ({one_line(e, 200)})")
            continue
        if block:
            blocks.append(TextBlock(text=block))
        if note:
            notes.append(note)
    for pic in extra:
        number += 1
        blocks += _labelled(pic, number, notes)
    return Prompt(blocks=list(blocks)), notes


async def _attach_image_once(workspace: Path, rel: str) -> Picture:
    """``attach_image``, where a failure of any kind is one line."""
    try:
        return await attach_image(workspace, rel)
    except ImageError:
        raise
    except Exception as e:
        shown = one_line(rel, 200)
        raise ImageError(f"@{shown}: not attached ({one_line(f'{type(e).__name__}: {e}', 200)})") from None


def _labelled(pic: Picture, number: int, notes: list[str]) -> list[TextBlock | ImageBlock]:
    if (note := pic.note()) is not None:
        notes.append(note)
    return labelled_blocks(pic, number)


def _as_path(word: str) -> str | None:
    """A pasted word as an absolute path: itself, ``~/…`` expanded, or a ``file://`` URL's path
    (a file manager's drag); None for anything else."""
    if word.startswith("file://"):
        url = urlsplit(word)
        if url.netloc not in ("", "localhost"):
            return None
        word = unquote(url.path)
    elif word.startswith("~"):
        word = os.path.expanduser(word)
    return word if os.path.isabs(word) and "\0" not in word else None


def pasted_image_paths(text: str) -> list[list[str]]:
    """What a paste may be as image files a terminal gave for files dragged onto it: each
    reading of it (one path, or several separated by spaces) as absolute paths, the likelier
    first; none when it reads as no image path at all (then it is text). A path may be quoted
    (``'…'``, ``"…"``), have its spaces escaped (``My\\ Shot.png``), be a ``file://`` URL, or
    be bare with spaces in it; a trailing space or newline is the terminal's."""
    whole = text.strip()
    if not whole or len(whole) > 16_384:
        return []
    readings: list[list[str]] = []
    try:
        words = shlex.split(whole)
    except ValueError:  # an unclosed quote: no reading as words
        words = []
    paths = [_as_path(w) for w in words]
    if words and all(p is not None and is_image_name(p) for p in paths):
        readings.append([p for p in paths if p is not None])
    bare = _as_path(whole)
    if "\n" not in whole and bare is not None and is_image_name(bare) and [bare] not in readings:
        readings.append([bare])
    return readings
