"""The file tools: read_file, list_files, write_file, edit_file (grep is in search.py).

All of them are synchronous and run in a worker thread (their tools do that), so a large tree
or file never blocks the UI's event loop. They take the inputs their tool's model validated.
Every path goes through ``paths.resolve`` / ``paths.resolve_write``; nothing here follows a
symlink out of the workspace.
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
from collections.abc import Iterator
from typing import BinaryIO

from app.agent.conversation.images import MAX_FILE_BYTES as MAX_IMAGE_FILE_BYTES
from app.agent.conversation.images import ImageError, image_label, is_image_name, prepare_image
from app.agent.tools.base import ToolContext, ToolError, ToolResult, quote
from app.agent.tools.globs import compile_glob, glob_depth, named_skip_dirs
from app.agent.tools.paths import (
    SKIP_DIRS,
    Resolved,
    check_parent_after_mkdir,
    inside,
    rel_display,
    resolve,
    resolve_write,
)
from memory.text.lines import format_bytes

MAX_FILE_BYTES = 10 * 1024 * 1024
BINARY_SNIFF_BYTES = 8192
DEFAULT_READ_LINES = 2000
MAX_LINE_CHARS = 2000
MAX_LIST_ENTRIES = 1000
MAX_WALK_ENTRIES = 200_000
MAX_COUNT_BYTES = 64 * 1024 * 1024  # read past the shown lines only this far to count the rest
NOTE_RESERVE = 300  # room kept for the final note when output is cut to ctx.max_output_chars

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _os_reason(e: OSError) -> str:
    return e.strerror or type(e).__name__


def _check_regular(path: str, display: str) -> None:
    """Refuse what is not a regular file before opening it: opening a FIFO releases a writer
    blocked on it, opening a device can act on the device."""
    try:
        st = os.stat(path)
    except OSError:
        return  # the open that follows gives the precise reason
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{quote(display)} is a folder, not a file; use list_files")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{quote(display)} is not a regular file (device, FIFO or socket); refused")


def _open_regular(r: Resolved, raw: str) -> tuple[int, os.stat_result]:
    """Open a regular file for reading without following a symlink or blocking on a FIFO."""
    _check_regular(r.real, r.display)
    try:
        fd = os.open(r.real, os.O_RDONLY | _O_NOFOLLOW | _O_NONBLOCK | _O_CLOEXEC)
    except FileNotFoundError:
        raise ToolError(f"no such file: {quote(r.display)}") from None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise ToolError(
                f"{quote(raw)} is a symlink that changed while it was being opened; refused"
            ) from None
        if e.errno == errno.EISDIR:
            raise ToolError(f"{quote(r.display)} is a folder, not a file; use list_files") from None
        raise ToolError(f"cannot open {quote(r.display)}: {_os_reason(e)}") from None
    st = os.fstat(fd)
    if stat.S_ISDIR(st.st_mode):
        os.close(fd)
        raise ToolError(f"{quote(r.display)} is a folder, not a file; use list_files")
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise ToolError(f"{quote(r.display)} is not a regular file (device, FIFO or socket); refused")
    return fd, st


def _is_binary(fd: int) -> bool:
    return b"\x00" in os.pread(fd, BINARY_SNIFF_BYTES, 0)


def _iter_lines(f: BinaryIO) -> Iterator[tuple[bytes, bool]]:
    """Lines of a binary file, each cut to what MAX_LINE_CHARS characters can take (UTF-8),
    with a flag saying it was longer. A multi-gigabyte line never sits in memory."""
    cap = MAX_LINE_CHARS * 4 + 4
    while True:
        chunk = f.readline(cap)
        if not chunk:
            return
        if chunk.endswith(b"\n") or len(chunk) < cap:
            yield chunk, False
            continue
        while True:
            more = f.readline(cap)
            if not more or more.endswith(b"\n"):
                break
        yield chunk, True


def _decode_line(raw: bytes, was_long: bool, limit: int) -> str:
    text = raw.decode("utf-8", "replace")
    if text.endswith("\n"):
        text = text[:-1]
    if text.endswith("\r"):
        text = text[:-1]
    if was_long or len(text) > limit:
        text = text[:limit] + f" … [line truncated at {limit} characters]"
    return text


def _count_rest(f: BinaryIO) -> tuple[int, bool]:
    """Lines left in ``f`` and whether that is all of them: counting stops after
    MAX_COUNT_BYTES, so a few lines of a 50 GB log do not read all of it."""
    n = 0
    read = 0
    last = b""
    while chunk := f.read(1 << 20):
        n += chunk.count(b"\n")
        last = chunk
        read += len(chunk)
        if read >= MAX_COUNT_BYTES:
            return n, False
    return n + (1 if last and not last.endswith(b"\n") else 0), True


# -- read_file ---------------------------------------------------------------------------------


def read_image(r: Resolved, raw: str) -> ToolResult:
    """An image file of the workspace (by its name's suffix) as the image itself, prepared for the
    model (``conversation.images``), with its label as the result's text; one line when it is not
    a readable image or is over the image file limit (checked before reading)."""
    fd, st = _open_regular(r, raw)
    with os.fdopen(fd, "rb") as f:
        if st.st_size > MAX_IMAGE_FILE_BYTES:
            size, most = format_bytes(st.st_size), format_bytes(MAX_IMAGE_FILE_BYTES)
            raise ToolError(f"{quote(r.display)} is {size}, over the {most} limit for an image")
        data = f.read(MAX_IMAGE_FILE_BYTES + 1)
    try:
        picture = prepare_image(data, r.display)
    except ImageError as e:
        raise ToolError(str(e)) from None
    label = image_label(1, picture.name, picture.width, picture.height)
    if picture.scaled:  # what the model sees is smaller than the file: its coordinates differ
        label += " (scaled from {}×{})".format(*picture.original)
    return ToolResult(content=label, images=[picture.block()])


def read_file(ctx: ToolContext, raw: str, offset: int | None, limit: int | None) -> ToolResult:
    r = resolve(ctx.workspace, raw)
    if is_image_name(r.real):
        return read_image(r, raw)
    fd, st = _open_regular(r, raw)
    with os.fdopen(fd, "rb") as f:
        if st.st_size > MAX_FILE_BYTES and offset is None and limit is None:
            raise ToolError(
                f"{quote(r.display)} is {format_bytes(st.st_size)}, over the "
                f"{format_bytes(MAX_FILE_BYTES)} limit; read a part of it with offset and limit"
            )
        if _is_binary(fd):
            raise ToolError(f"{quote(r.display)} is a binary file ({st.st_size} bytes); it is not shown")
        first = max(offset or 1, 1)
        want = limit or DEFAULT_READ_LINES
        budget = max(ctx.max_output_chars - NOTE_RESERVE, 1)
        out: list[str] = []
        used = 0
        n = 0
        cut_by_budget = False
        for n, (line, was_long) in enumerate(_iter_lines(f), 1):
            if n < first:
                continue
            text = f"{n:>6}\t{_decode_line(line, was_long, MAX_LINE_CHARS)}"
            if out and used + len(text) + 1 > budget:
                cut_by_budget = True
                break
            if not out and len(text) > budget:
                text = text[:budget] + " … [cut]"
            out.append(text)
            used += len(text) + 1
            if len(out) >= want:
                break
        else:
            total = n
            if total == 0:
                return ToolResult(content=f"[{r.display} is empty: 0 lines]")
            if first > total:
                raise ToolError(f"offset {first} is past the end: {quote(r.display)} has {total} lines")
            return ToolResult(content="\n".join(out))
        shown_last = first + len(out) - 1
        # Lines consumed so far: through shown_last, plus the one read but not shown (if cut).
        consumed = shown_last + (1 if cut_by_budget else 0)
        rest, counted = _count_rest(f)
        total = consumed + rest
    if counted and shown_last >= total:
        return ToolResult(content="\n".join(out))
    lead = "output truncated: showing" if cut_by_budget else "showing"
    of = f"{total}" if counted else f"more than {total}"
    note = f"[{lead} lines {first}–{shown_last} of {of}; use offset={shown_last + 1} to read on]"
    return ToolResult(content="\n".join([*out, note]))


# -- walking -----------------------------------------------------------------------------------


class _Walk:
    """A deterministic walk below ``root`` (real path): (relative path, is folder) pairs in
    sorted order, never descending into symlinked folders or the skipped folders."""

    def __init__(self, root: str, workspace: str, skip: frozenset[str], max_depth: float) -> None:
        self.root = root
        self.workspace = workspace
        self.skip = skip
        self.max_depth = max_depth
        self.visited = 0
        self.stopped = False

    def __iter__(self) -> Iterator[tuple[str, bool, os.DirEntry[str]]]:
        stack: list[tuple[str, str, int]] = [(self.root, "", 1)]
        while stack:
            folder, prefix, depth = stack.pop()
            try:
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name)
            except OSError:
                continue
            subdirs: list[tuple[str, str, int]] = []
            for e in entries:
                self.visited += 1
                if self.visited > MAX_WALK_ENTRIES:
                    self.stopped = True
                    return
                try:
                    real_dir = e.is_dir(follow_symlinks=False)
                    # A symlinked folder is shown as a folder only if it stays inside the
                    # workspace; it is never descended into (no loops, no duplicates).
                    is_dir = real_dir or (
                        e.is_symlink() and inside(os.path.realpath(e.path), self.workspace) and e.is_dir()
                    )
                except OSError:
                    continue
                if real_dir and e.name in self.skip:
                    continue
                rel = prefix + e.name
                yield rel, is_dir, e
                if real_dir and depth < self.max_depth:
                    subdirs.append((e.path, rel + "/", depth + 1))
            stack.extend(reversed(subdirs))


def _sort_key(rel: str) -> list[str]:
    return rel.rstrip("/").split("/")


def _folder(ctx: ToolContext, raw: str | None) -> Resolved:
    r = resolve(ctx.workspace, raw if raw else ".")
    if not os.path.exists(r.real):
        raise ToolError(f"no such folder: {quote(r.display)}")
    return r


# -- list_files --------------------------------------------------------------------------------


def list_files(ctx: ToolContext, raw: str | None, pattern: str | None) -> ToolResult:
    pattern = pattern.strip() if pattern and pattern.strip() else None
    r = _folder(ctx, raw)
    if not os.path.isdir(r.real):
        raise ToolError(f"{quote(r.display)} is a file, not a folder; use read_file (or give its folder)")
    try:
        rx = compile_glob(pattern) if pattern else None
        depth = glob_depth(pattern) if pattern else 1.0
    except ValueError as e:
        raise ToolError(str(e)) from None
    dirs_only = bool(pattern and pattern.endswith("/"))
    skip = SKIP_DIRS - named_skip_dirs(pattern, SKIP_DIRS)
    walk = _Walk(r.real, r.workspace, skip, depth)
    found: list[str] = []
    for rel, is_dir, entry in walk:
        if rx is not None and not rx.fullmatch(rel):
            continue
        if dirs_only and not is_dir:
            continue
        shown = rel_display(entry.path, r.workspace)
        found.append(shown + "/" if is_dir else shown)
    found.sort(key=_sort_key)
    where = "the workspace" if r.display == "." else quote(r.display)
    if not found:
        what = f"nothing matches {quote(pattern)} in {where}" if pattern else f"{where} is empty"
        return ToolResult(content=f"[{what}]")
    budget = max(ctx.max_output_chars - NOTE_RESERVE, 1)
    out: list[str] = []
    used = 0
    for line in found[:MAX_LIST_ENTRIES]:
        if used + len(line) + 1 > budget:
            break
        out.append(line)
        used += len(line) + 1
    notes = []
    if len(out) < len(found):
        notes.append(
            f"[{len(found) - len(out)} more entries not shown ({len(found)} in all); "
            "narrow the path or pattern]"
        )
    if walk.stopped:
        notes.append(f"[listing stopped after {MAX_WALK_ENTRIES} entries; narrow the path or pattern]")
    return ToolResult(content="\n".join(out + notes))


# -- writing -----------------------------------------------------------------------------------


def _existing(r: Resolved) -> os.stat_result | None:
    try:
        st = os.stat(r.real)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ToolError(f"cannot use {quote(r.display)}: {_os_reason(e)}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ToolError(f"{quote(r.display)} is a folder, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise ToolError(f"{quote(r.display)} is not a regular file (device, FIFO or socket); refused")
    return st


def _atomic_write(r: Resolved, raw: str, data: bytes, mode: int | None) -> None:
    """Write ``data`` to ``r.real`` through a temporary file in the same folder + os.replace."""
    parent = os.path.dirname(r.real)
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as e:
        raise ToolError(f"cannot create the folder of {quote(r.display)}: {_os_reason(e)}") from None
    check_parent_after_mkdir(r, raw)
    tmp = os.path.join(parent, f".{os.path.basename(r.real)[:100]}.pc-tmp-{secrets.token_hex(6)}")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _O_NOFOLLOW | _O_CLOEXEC, 0o666)
    except OSError as e:
        raise ToolError(f"cannot write {quote(r.display)}: {_os_reason(e)}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, stat.S_IMODE(mode))
        os.replace(tmp, r.real)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise ToolError(f"cannot write {quote(r.display)}: {_os_reason(e)}") from None
        raise
    try:
        dfd = os.open(parent, os.O_RDONLY | _O_CLOEXEC)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def _encode(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        raise ToolError(f"{what} is not valid UTF-8 text (it holds a lone surrogate)") from None


def check_write_file(ctx: ToolContext, raw: str, content: str) -> tuple[bytes, Resolved]:
    """What write_file would write where, or the ToolError it would end in whatever the person
    answers (a path outside the workspace or in .git/ or a memory store, symlinks resolved as the
    tool resolves them, content that is not text): checked before the permission gate asks, so no
    one is asked to allow a write that will be refused. The tool checks again when it runs."""
    data = _encode(content, "content")
    if raw.endswith(("/", os.sep)):
        raise ToolError(f"{quote(raw)} names a folder; give a file path")
    return data, resolve_write(ctx.workspace, raw)


def check_edit_file(ctx: ToolContext, raw: str, old: str, new: str) -> Resolved:
    """Where edit_file would write, or the ToolError it would end in whatever the person answers
    (as ``check_write_file``, and an edit that changes nothing)."""
    if old == "":
        raise ToolError("old_string is empty; to create a file or replace all of it use write_file")
    if old == new:
        raise ToolError("old_string and new_string are identical; nothing would change")
    _encode(new, "new_string")
    return resolve_write(ctx.workspace, raw)


def write_file(ctx: ToolContext, raw: str, content: str) -> ToolResult:
    data, r = check_write_file(ctx, raw, content)
    st = _existing(r)
    if ctx.checkpoints is not None:
        ctx.checkpoints.before_write(r.real)
    _atomic_write(r, raw, data, st.st_mode if st else None)
    if ctx.checkpoints is not None:
        ctx.checkpoints.after_write(r.real, data)
    verb = "overwrote" if st else "created"
    return ToolResult(content=f"{verb} {r.display} ({len(data)} bytes)")


def edit_file(ctx: ToolContext, raw: str, old: str, new: str, replace_all: bool = False) -> ToolResult:
    r = check_edit_file(ctx, raw, old, new)
    st = _existing(r)
    if st is None:
        raise ToolError(f"no such file: {quote(r.display)}; use write_file to create a file")
    if st.st_size > MAX_FILE_BYTES:
        raise ToolError(
            f"{quote(r.display)} is {format_bytes(st.st_size)}, over the "
            f"{format_bytes(MAX_FILE_BYTES)} limit for edit_file"
        )
    fd, st = _open_regular(r, raw)
    with os.fdopen(fd, "rb") as f:
        data = f.read()
    if b"\x00" in data[:BINARY_SNIFF_BYTES]:
        raise ToolError(f"{quote(r.display)} is a binary file; edit_file edits text files only")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(
            f"{quote(r.display)} is not valid UTF-8; edit_file edits UTF-8 text files only"
        ) from None
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r\n" not in old:
        # The model writes '\n'; a CRLF file keeps its line endings.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        raise ToolError(
            f"old_string was not found in {r.display}; read the file and copy the exact text, "
            "including whitespace and indentation"
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"old_string occurs {count} times in {r.display}; give more surrounding context to make it "
            "unique, or set replace_all to true to replace every occurrence"
        )
    updated = text.replace(old, new) if replace_all else text.replace(old, new, 1)
    out = updated.encode("utf-8")
    if ctx.checkpoints is not None:
        ctx.checkpoints.before_write(r.real)
    _atomic_write(r, raw, out, st.st_mode)
    if ctx.checkpoints is not None:
        ctx.checkpoints.after_write(r.real, out)
    n = count if replace_all else 1
    return ToolResult(content=f"edited {r.display}: {n} replacement{'s' if n != 1 else ''}")
